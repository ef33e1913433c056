#pragma once
// The scalescope-cli a suite was built with (or another program), run to its end: every suite's
// one way to run a process. SCALESCOPE_CLI is the suite's own compile definition
// (tests/CMakeLists.txt scalescope_add_test), so this is header-only.
#include <QByteArray>
#include <QProcess>
#include <QString>
#include <QStringList>

namespace scalescope::testing {

struct CliResult {
    int exitCode = -1; // -1 when it crashed or ran past its time limit (then it is killed)
    bool crashed = false; // ended by a signal, or killed at the time limit
    QString out, err; // read as UTF-8
    QByteArray rawOut; // standard output as written
};

inline CliResult runProgram(const QString& program, const QStringList& args, int timeLimitMs = 300000)
{
    QProcess process;
    process.start(program, args);
    CliResult result;
    if (!process.waitForFinished(timeLimitMs)) {
        process.kill();
        process.waitForFinished();
        result.crashed = true;
        return result;
    }
    result.crashed = process.exitStatus() != QProcess::NormalExit;
    result.exitCode = result.crashed ? -1 : process.exitCode();
    result.rawOut = process.readAllStandardOutput();
    result.out = QString::fromUtf8(result.rawOut);
    result.err = QString::fromUtf8(process.readAllStandardError());
    return result;
}

inline CliResult runCli(const QStringList& args, int timeLimitMs = 300000)
{
    return runProgram(QStringLiteral(SCALESCOPE_CLI), args, timeLimitMs);
}

} // namespace scalescope::testing
