#include "run_stamp.h"

#include <QCoreApplication>
#include <QFileInfo>

namespace scalescope::ui {
namespace {

// The stamp's words kept the session's translation context when they moved here with it.
QString tr(const char* text)
{
    return QCoreApplication::translate("scalescope::ui::WorkbenchSession", text);
}

} // namespace

QString RunStamp::modeName() const
{
    QString name;
    switch (run.mode) {
    case RunMode::Dequant: name = tr("Dequant"); break;
    case RunMode::Fp16:
        name = run.accumulation == Accumulation::Dl16 ? tr("FP16 twin + DL16") : tr("FP16 twin");
        break;
    case RunMode::Fp8:
        name = run.accumulation == Accumulation::Dl16 ? tr("FP8 + DL16") : tr("FP8");
        break;
    }
    return run.attention == AttentionPrecision::Fp8Aiu ? tr("%1, FP8 attention").arg(name) : name;
}

QString RunStamp::referenceText() const
{
    switch (referenceKind) {
    case Reference::Folder:
        return QFileInfo(referenceFolder).fileName().isEmpty() ? referenceFolder : QFileInfo(referenceFolder).fileName();
    case Reference::CpuEmulation:
        return tr("CPU FP8 emulation");
    case Reference::Dequant:
        break;
    }
    return tr("dequantized weights");
}

QString RunStamp::deviceText() const
{
    if (run.device == "cpu")
        return tr("CPU");
    return tr("runner");
}

QString RunStamp::describe() const
{
    if (!isValid())
        return tr("no checkpoint");
    const QString text = tr("%1, %2 vs %3, %4")
                             .arg(QFileInfo(checkpoint).fileName(), modeName(), referenceText(), deviceText());
    return floatLinears.isEmpty() ? text : text + QStringLiteral("; ") + floatText();
}

QString RunStamp::floatText(int shown) const
{
    if (floatLinears.isEmpty())
        return QString();
    QStringList labels = floatLabels.size() == floatLinears.size() ? floatLabels : floatLinears;
    if (labels.size() > shown) {
        labels = labels.mid(0, shown);
        labels << QStringLiteral("...");
    }
    const QString list = labels.join(QStringLiteral(", "));
    return floatLinears.size() == 1 ? tr("1 Linear in float: %1").arg(list)
                                    : tr("%1 Linears in float: %2").arg(floatLinears.size()).arg(list);
}

QString RunStamp::differenceFrom(const RunStamp& other) const
{
    QStringList parts;
    if (checkpoint != other.checkpoint)
        parts << tr("checkpoint");
    if (referenceKind != other.referenceKind || referenceFolder != other.referenceFolder)
        parts << tr("reference");
    if (run.mode != other.run.mode || run.accumulation != other.run.accumulation)
        parts << tr("mode");
    if (run.attention != other.run.attention)
        parts << tr("attention");
    if (run.device != other.run.device)
        parts << tr("device");
    if (floatLinears != other.floatLinears)
        parts << tr("Linears run in float");
    if (parts.size() > 1) {
        const QString last = parts.takeLast();
        return parts.join(QStringLiteral(", ")) + tr(" and ") + last;
    }
    return parts.isEmpty() ? QString() : parts.front();
}

} // namespace scalescope::ui
