#pragma once
// The scalescope-cli a suite was built with, run to its end. SCALESCOPE_CLI is the suite's own
// compile definition (tests/CMakeLists.txt scalescope_add_test), so this is header-only.
#include <QProcess>
#include <QString>
#include <QStringList>

namespace scalescope::testing {

struct CliResult {
    int exitCode = -1; // -1 when it crashed or ran past 5 minutes (then it is killed)
    QString out, err;
};

inline CliResult runCli(const QStringList& args)
{
    QProcess process;
    process.start(QStringLiteral(SCALESCOPE_CLI), args);
    CliResult result;
    if (!process.waitForFinished(300000)) {
        process.kill();
        process.waitForFinished();
        return result;
    }
    result.exitCode = process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -1;
    result.out = QString::fromUtf8(process.readAllStandardOutput());
    result.err = QString::fromUtf8(process.readAllStandardError());
    return result;
}

} // namespace scalescope::testing
