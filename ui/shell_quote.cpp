#include "shell_quote.h"

namespace scalescope::ui {

QString shellQuote(const QString& text)
{
    QString quoted = QStringLiteral("'");
    for (const QChar c : text) {
        if (c == QLatin1Char('\''))
            quoted += QStringLiteral("'\\''");
        else
            quoted += c;
    }
    quoted += QLatin1Char('\'');
    return quoted;
}

QString localRunnerDevice(const QString& applicationDir)
{
    return QStringLiteral("runner:") + shellQuote(applicationDir + QStringLiteral("/scalescope-cli")) +
           QStringLiteral(" runner");
}

} // namespace scalescope::ui
