#include "consumer_words.h"

#include <QStringList>

#include "analysis/verdict.h"

namespace scalescope::ui {
namespace {

Grade consumerGrade(ConsumerVerdict verdict)
{
    return verdict == ConsumerVerdict::AsIntended ? Grade::Good
           : verdict == ConsumerVerdict::RunsDifferently ? Grade::Fair
                                                         : Grade::Poor;
}

QString verdictWords(ConsumerVerdict verdict, bool html)
{
    const QString words = QString::fromLatin1(verdictName(verdict));
    if (!html)
        return words;
    return QStringLiteral("<span style='color:%1; font-weight:bold'>%2</span>")
        .arg(QString::fromLatin1(gradeColor(consumerGrade(verdict))), words);
}

} // namespace

QString consumerTitle(Consumer consumer)
{
    switch (consumer) {
    case Consumer::Aiu: return QStringLiteral("AIU");
    case Consumer::Vllm: return QStringLiteral("vLLM");
    case Consumer::CompressedTensors: return QStringLiteral("transformers");
    }
    return {};
}

QString consumerVerdictText(const ConsumerReport& report, bool html)
{
    QString text = QStringLiteral("%1: %2").arg(consumerTitle(report.consumer), verdictWords(report.verdict, html));
    const std::string loadings = aiuLoadingsText(report);
    if (!loadings.empty())
        text += QStringLiteral(" (%1)").arg(html ? QString::fromStdString(loadings).toHtmlEscaped() : QString::fromStdString(loadings));
    return text;
}

QString consumerVerdictsText(const std::vector<ConsumerReport>& reports, bool html)
{
    QStringList parts;
    for (const ConsumerReport& report : reports)
        parts << consumerVerdictText(report, html);
    return parts.join(QStringLiteral("; "));
}

QString validityForConsumersText(const std::vector<ConsumerReport>& reports, bool html)
{
    QStringList notValid;
    for (const ConsumerReport& report : reports)
        if (report.verdict != ConsumerVerdict::AsIntended)
            notValid << consumerTitle(report.consumer);
    const QString verdicts = consumerVerdictsText(reports, html);
    return notValid.isEmpty() ? QStringLiteral("valid for every consumer (%1)").arg(verdicts)
                              : QStringLiteral("not valid for %1 (%2)").arg(notValid.join(QStringLiteral(", ")), verdicts);
}

} // namespace scalescope::ui
