#include "panels/linear_inspector.h"

#include <QCheckBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QVBoxLayout>

#include <cmath>

#include "analysis/verdict.h"
#include "charts/chart_view.h"
#include "linear_selection.h"
#include "models/value_text.h"
#include "tasks/sensitivity_words.h"
#include "report/charts.h"

namespace scalescope::ui {
namespace {

QString percent(double share)
{
    return QString::number(100.0 * share, 'g', 3) + QStringLiteral(" %");
}

QString row(const QString& name, const QString& value)
{
    return QStringLiteral("<tr><td style='color:palette(mid); padding-right:8px'>%1</td><td>%2</td></tr>")
        .arg(name.toHtmlEscaped(), value);
}

QString section(const QString& title, const QString& rows, const QString& note = {})
{
    return QStringLiteral("<p style='margin-top:8px; margin-bottom:2px'><b>%1</b>%2</p><table>%3</table>")
        .arg(title.toHtmlEscaped(),
             note.isEmpty() ? QString() : QStringLiteral(" <span style='color:#8a5a00'>%1</span>").arg(note.toHtmlEscaped()),
             rows);
}

QString graded(double sqnrDb)
{
    return QStringLiteral("<span style='color:%1'>%2 dB (%3)</span>")
        .arg(QString::fromLatin1(gradeColor(gradeSqnr(sqnrDb))), decibelText(sqnrDb),
             QString::fromLatin1(gradeName(gradeSqnr(sqnrDb))));
}

template <typename Items, typename Pred>
auto findIf(const Items& items, Pred pred) -> decltype(&*items.begin())
{
    for (const auto& item : items)
        if (pred(item))
            return &item;
    return nullptr;
}

} // namespace

LinearInspector::LinearInspector(LinearSelection* selection, QWidget* parent) : QWidget(parent)
{
    title_ = new QLabel(tr("Select a Linear in the Model tree, a chart, a finding or the sweep."), this);
    title_->setWordWrap(true);
    title_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    details_ = new QLabel(this);
    details_->setObjectName(QStringLiteral("inspectorDetails"));
    details_->setWordWrap(true);
    details_->setTextFormat(Qt::RichText);
    details_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    details_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
    scales_ = new ChartView(this);
    scales_->setMinimumHeight(170);
    scales_->setPlaceholder(tr("No weight scales: the Linear is not quantized."));
    float_ = new QCheckBox(tr("Run in float (what-if)"), this);
    float_->setToolTip(tr("Every later run keeps this Linear in float; the checkpoint on disk is unchanged"));
    connect(float_, &QCheckBox::clicked, this, [this](bool checked) {
        if (!module_.isEmpty())
            emit floatToggled(module_, checked);
    });
    showScales_ = new QPushButton(tr("Scales"), this);
    showScales_->setToolTip(tr("Show this Linear in the Scales tab"));
    showErrors_ = new QPushButton(tr("Errors"), this);
    showErrors_->setToolTip(tr("Show this Linear in the Errors tab"));
    connect(showScales_, &QPushButton::clicked, this, [this] { emit showScalesRequested(module_); });
    connect(showErrors_, &QPushButton::clicked, this, [this] { emit showErrorsRequested(module_); });

    // Two rows: the dock is narrow on a laptop screen.
    actions_ = new QWidget(this);
    auto* buttons = new QHBoxLayout(actions_);
    buttons->setContentsMargins(0, 0, 0, 0);
    buttons->addWidget(new QLabel(tr("Show in:"), actions_));
    buttons->addWidget(showScales_);
    buttons->addWidget(showErrors_);
    buttons->addStretch(1);
    auto* content = new QWidget(this);
    auto* inner = new QVBoxLayout(content);
    inner->addWidget(title_);
    inner->addWidget(float_);
    inner->addWidget(actions_);
    inner->addWidget(details_);
    inner->addWidget(scales_);
    inner->addStretch(1);
    auto* scroll = new QScrollArea(this);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    scroll->setWidget(content);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(scroll);
    connect(selection, &LinearSelection::selected, this, &LinearInspector::showLinear);
    refresh();
}

void LinearInspector::takeResult(const PanelResult& result)
{
    if (result.checkpoint) {
        checkpoint_ = result.checkpoint;
        comparison_.reset();
        compareWith_.reset();
        sweep_.reset();
        module_.clear();
    }
    if (result.comparison) {
        comparison_ = result.comparison;
        comparisonStamp_ = result.stamp;
    }
    if (result.sensitivity) {
        sweep_ = result.sensitivity;
        sweepStamp_ = result.stamp;
    }
    refresh();
}

void LinearInspector::setCurrentStamp(const RunStamp& now)
{
    now_ = now;
    refresh();
}

void LinearInspector::showLinear(const QString& module)
{
    module_ = module;
    refresh();
}

void LinearInspector::setFloatLinears(const QStringList& modules)
{
    floatLinears_ = modules;
    float_->setChecked(floatLinears_.contains(module_));
}

QString LinearInspector::staleNote(const RunStamp& stamp) const
{
    const QString difference = stamp.differenceFrom(now_);
    return difference.isEmpty() ? QString() : tr("(stale: the %1 changed since)").arg(difference);
}

void LinearInspector::refresh()
{
    const bool shown = checkpoint_ && !module_.isEmpty();
    const std::string module = module_.toStdString();
    const LinearScaleStatistics* statistics =
        shown ? findIf(checkpoint_->statistics, [&](const LinearScaleStatistics& s) { return s.module == module; })
              : nullptr;
    for (QWidget* widget : {static_cast<QWidget*>(float_), actions_, static_cast<QWidget*>(scales_)})
        widget->setVisible(shown);
    if (!shown) {
        title_->setText(checkpoint_ ? tr("Select a Linear in the Model tree, a chart, a finding or the sweep.")
                                    : tr("No checkpoint open."));
        details_->clear();
        return;
    }
    const bool quantized = statistics && statistics->quantized;
    title_->setText(QStringLiteral("<b>%1</b><br><tt>%2</tt>")
                        .arg(QString::fromStdString(statistics ? statistics->label
                                                               : checkpoint_->checkpoint->layout().shortLabel(module))
                                 .toHtmlEscaped(),
                             module_.toHtmlEscaped()));
    float_->setEnabled(quantized);
    float_->setChecked(floatLinears_.contains(module_));
    showScales_->setEnabled(quantized);
    scales_->setChart(quantized ? (statistics->gridRows > 0 ? blockScalesChart(*statistics)
                                                            : channelScalesChart(*statistics))
                                : ChartData{});
    details_->setText(schemeSection() + compareSection() + runSection() + sweepSection() + findingsSection());
}

void LinearInspector::setCompareWith(std::shared_ptr<const CompareWithOutcome> b)
{
    compareWith_ = std::move(b);
    refresh();
}

QString LinearInspector::compareSection() const
{
    if (!compareWith_ || !checkpoint_ || !checkpoint_->checkpoint)
        return {};
    const std::string module = module_.toStdString();
    QString rows = row(tr("A"), QString::fromStdString(linearSchemeLine(*checkpoint_->checkpoint, module)).toHtmlEscaped());
    rows += row(tr("B"), QString::fromStdString(linearSchemeLine(*compareWith_->checkpoint, module)).toHtmlEscaped());
    int differing = 0;
    if (compareWith_->diff)
        for (const LinearDifference& linear : compareWith_->diff->linears)
            if (linear.module == module)
                for (const FieldDifference& d : linear.differences) {
                    rows += row(QString::fromStdString(d.field),
                                QString::fromStdString(d.a + " -> " + d.b).toHtmlEscaped());
                    ++differing;
                }
    const QString note = differing ? tr("%n field(s) differ.", nullptr, differing) : tr("Same scheme in A and B.");
    return section(tr("Compared with B (%1)").arg(compareWith_->directory), rows, note);
}

QString LinearInspector::schemeSection() const
{
    const std::string module = module_.toStdString();
    const auto* s = findIf(checkpoint_->statistics, [&](const LinearScaleStatistics& x) { return x.module == module; });
    const std::string fms = checkpoint_->checkpoint->layout().fmsName(module);
    const std::string fused = checkpoint_->checkpoint->layout().fmsName(module, true);
    QString rows;
    if (!fms.empty())
        rows += row(tr("FMS name"), QStringLiteral("<tt>%1</tt>").arg(QString::fromStdString(fused != fms ? fms + " (fused: " + fused + ")" : fms).toHtmlEscaped()));
    const EncoderLayout& layout = checkpoint_->checkpoint->layout();
    if (!s && layout.fp8AttentionLayer(module) >= 0) // a sweep entry of AIU FP8 attention
        return section(tr("Scheme"), rows + row(tr("Unit"), QString::fromStdString(layout.describeModule(module)).toHtmlEscaped()) +
                                         row(tr("Kind"), tr("a run option (FP8 Attention on the toolbar, --attention "
                                                            "fp8-aiu), not a Linear: no checkpoint keeps it float")));
    if (!s)
        return section(tr("Scheme"), rows + row(tr("Linear"), tr("not a Linear of this checkpoint")));
    rows += row(tr("Shape"), tr("%1 -> %2").arg(s->inFeatures).arg(s->outFeatures));
    rows += row(tr("Weights"), QString::fromStdString(s->weightDtype + (s->weightStrategy.empty() ? "" : ", per " + s->weightStrategy)).toHtmlEscaped());
    rows += row(tr("Activations"), QString::fromStdString(s->activationScheme).toHtmlEscaped());
    rows += row(tr("Config rule"), QString::fromStdString(s->rule.empty() ? std::string("none") : s->rule).toHtmlEscaped());
    if (s->quantized) {
        rows += row(tr("Weight scales"), tr("%1 .. %2 (median %3, ratio %4), %5")
                                               .arg(significantText(s->scaleMin), significantText(s->scaleMax), significantText(s->scaleMedian),
                                                    significantText(s->scaleRatio), QString::fromStdString(s->scaleDtype)));
        rows += row(tr("Weight codes"), tr("%1 at +-448, %2 zero or subnormal")
                                              .arg(percent(s->clippedShare), percent(s->underflowShare)));
    }
    if (s->inputScale)
        rows += row(tr("Static input scale"), significantText(*s->inputScale));
    return section(tr("Scheme"), rows);
}

QString LinearInspector::runSection() const
{
    if (!comparison_)
        return section(tr("Last run"), row(tr(""), tr("No run yet: answer a question or fill a mask.")));
    const std::string module = module_.toStdString();
    QString rows;
    for (const CapturePointMetrics& p : comparison_->points)
        if (p.module == module && (p.kind == CaptureKind::LinearInput || p.kind == CaptureKind::LinearOutput))
            rows += row(p.kind == CaptureKind::LinearInput ? tr("SQNR in") : tr("SQNR out"), graded(p.metrics.sqnrDb));
    if (const auto* a = findIf(comparison_->activations, [&](const ActivationStatistics& x) { return x.module == module; });
        a && a->elements > 0) {
        const double n = double(a->elements);
        rows += row(tr("Input amax / scale"), tr("%1 / %2 (%3 x 448)").arg(significantText(a->amax), significantText(a->inputScale),
                                                                          significantText(a->inputScale > 0 ? a->amax / (448.0 * a->inputScale) : 0.0)));
        rows += row(tr("Input clipped"), percent(double(a->clipped) / n));
        rows += row(tr("Input flushed to zero"), percent(double(a->flushedToZero) / n));
        rows += row(tr("Input subnormal"), percent(double(a->subnormal) / n));
    }
    if (const auto* r = findIf(comparison_->outputRanges, [&](const ModuleOutputRange& x) { return x.module == module; })) {
        rows += row(tr("FP16 headroom"), tr("max |out| %1 = %2 of 65504").arg(significantText(r->maxAbs), percent(r->maxAbs / 65504.0)));
        if (r->elements > 0)
            rows += row(tr("Below half's normal range"), percent(double(r->belowHalfNormal) / double(r->elements)));
    }
    if (rows.isEmpty())
        rows = row(QString(), tr("The last run has no capture point for this Linear."));
    return section(tr("Last run"), rows, staleNote(comparisonStamp_));
}

QString LinearInspector::sweepSection() const
{
    if (!sweep_)
        return section(tr("Sensitivity"), row(QString(), tr("No sweep yet (Run > Sensitivity Sweep, F8).")));
    const std::string module = module_.toStdString();
    const auto* entry = findIf(sweep_->entries, [&](const SensitivityEntry& e) {
        if (e.module == module)
            return true;
        for (const std::string& linear : e.linears)
            if (linear == module)
                return true;
        return false;
    });
    if (!entry)
        return section(tr("Sensitivity"), row(QString(), tr("Not in the sweep (not quantized).")), staleNote(sweepStamp_));
    QString rows;
    if (entry->module != module)
        rows += row(tr("Swept as"), QString::fromStdString(entry->label).toHtmlEscaped());
    rows += row(tr("Rank"), entry->rank > 0 ? tr("%1 of %2").arg(entry->rank).arg(sweep_->entries.size()) : tr("not ranked (sweep incomplete)"));
    rows += row(QString::fromUtf8(kRecoveredMeasure), decibelText(entry->recoveredDb));
    rows += row(QString::fromUtf8(kLostAloneMeasure), decibelText(entry->lostAloneDb));
    if (entry->tieRank > 0)
        rows += row(tr("Tie"), tr("%1: tied with rank %2 within the run-to-run spread of +-%3 dB")
                                   .arg(QString::fromStdString(sensitivityTieMark(*entry)))
                                   .arg(entry->tieRank)
                                   .arg(spreadDecibelText(sweep_->spread.db)));
    if (entry->cause)
        rows += row(tr("Cause"), QString::fromStdString(entry->cause->label).toHtmlEscaped());
    return section(tr("Sensitivity"), rows, staleNote(sweepStamp_));
}

QString LinearInspector::findingsSection() const
{
    QString rows;
    auto add = [&](const std::vector<Finding>& findings) {
        for (const Finding& f : findings)
            if (LinearSelection::moduleOf(QString::fromStdString(f.subject)) == module_)
                rows += row(QString::fromLatin1(severityName(f.severity)), QString::fromStdString(f.message).toHtmlEscaped());
    };
    add(checkpoint_->findings);
    if (comparison_)
        add(comparison_->findings);
    return section(tr("Findings"), rows.isEmpty() ? row(QString(), tr("none")) : rows);
}

} // namespace scalescope::ui
