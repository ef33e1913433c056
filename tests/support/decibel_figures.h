#pragma once
// Reading decibel figures back out of the window's text, for tests that hold the text against
// values computed on their own.
#include <QRegularExpression>
#include <QString>

#include <cmath>

namespace scalescope::testing {

// Whether `text` shows `expectedDb` as people read it: a figure with one decimal before " dB" within
// 0.05 dB of the value (what rounding to 0.1 allows); "inf" / "-inf" for an infinite value.
inline bool showsDecibels(const QString& text, double expectedDb)
{
    static const QRegularExpression figure(QStringLiteral("(-?\\d+(?:\\.\\d+)?|-?inf) dB"));
    for (auto it = figure.globalMatch(text); it.hasNext();) {
        const QString number = it.next().captured(1);
        if (number.endsWith(QLatin1String("inf"))) {
            if (std::isinf(expectedDb) && (expectedDb < 0) == number.startsWith(QLatin1Char('-')))
                return true;
            continue;
        }
        const int point = number.indexOf(QLatin1Char('.'));
        if (point >= 0 && number.size() - point - 1 == 1 && std::fabs(number.toDouble() - expectedDb) <= 0.05)
            return true;
    }
    return false;
}

} // namespace scalescope::testing
