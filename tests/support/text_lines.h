#pragma once
// The first lines of a text file in another: the demo's calibration split takes the lab minutes,
// its first lines draw the same charts in seconds.
#include <QFile>
#include <QString>

namespace scalescope::testing {

inline bool copyFirstLines(const QString& from, const QString& to, int count)
{
    QFile in(from), out(to);
    if (!in.open(QIODevice::ReadOnly) || !out.open(QIODevice::WriteOnly))
        return false;
    for (int i = 0; i < count && !in.atEnd(); ++i)
        out.write(in.readLine());
    return true;
}

} // namespace scalescope::testing
