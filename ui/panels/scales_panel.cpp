#include "panels/scales_panel.h"

#include <optional>

#include <QComboBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QScrollArea>
#include <QSplitter>
#include <QVBoxLayout>

#include "charts/chart_view.h"
#include "linear_selection.h"
#include "report/charts.h"
#include "report_section.h"
#include "stale_banner.h"

namespace scalescope::ui {

ScalesPanel::ScalesPanel(LinearSelection* selection, QWidget* parent) : QWidget(parent)
{
    ranges_ = new ChartView(this);
    linear_ = new QComboBox(this);
    linear_->setMinimumContentsLength(40);
    linear_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    shares_ = new QLabel(this);
    // Wraps rather than holding the window wider than a laptop screen.
    shares_->setWordWrap(true);
    channels_ = new ChartView(this);
    exponents_ = new ChartView(this);
    activationNote_ = new QLabel(tr("Run a question or a mask to see how each Linear's inputs fit their FP8 scales."), this);
    activationNote_->setWordWrap(true);
    activationRange_ = new ChartView(this);
    activationShares_ = new ChartView(this);
    for (ChartView* chart : {activationRange_, activationShares_})
        chart->setPlaceholder(tr("Run a question or a mask to see the activation statistics."));
    for (ChartView* chart : {ranges_, channels_, exponents_})
        chart->setPlaceholder(tr("This checkpoint has no FP8 weights."));

    auto* linearRow = new QHBoxLayout;
    linearRow->addWidget(new QLabel(tr("Linear:"), this));
    linearRow->addWidget(linear_);
    linearRow->addWidget(shares_, 1);

    auto* perLinear = new QSplitter(Qt::Horizontal, this);
    perLinear->setObjectName(QStringLiteral("scalesLinearSplitter"));
    perLinear->addWidget(channels_);
    perLinear->addWidget(exponents_);
    auto* activations = new QSplitter(Qt::Horizontal, this);
    activations->setObjectName(QStringLiteral("scalesActivationSplitter"));
    activations->addWidget(activationRange_);
    activations->addWidget(activationShares_);

    auto* linearBox = new QWidget(this);
    auto* linearLayout = new QVBoxLayout(linearBox);
    linearLayout->setContentsMargins(0, 0, 0, 0);
    linearLayout->addLayout(linearRow);
    linearLayout->addWidget(perLinear, 1);
    auto* activationBox = new QWidget(this);
    auto* activationLayout = new QVBoxLayout(activationBox);
    activationLayout->setContentsMargins(0, 0, 0, 0);
    banner_ = new StaleBanner(this);
    activationLayout->addWidget(banner_);
    activationLayout->addWidget(activationNote_);
    activationLayout->addWidget(activations, 1);

    auto* splitter = new QSplitter(Qt::Vertical, this);
    splitter->setObjectName(QStringLiteral("scalesSplitter"));
    splitter->addWidget(ranges_);
    splitter->addWidget(linearBox);
    splitter->addWidget(activationBox);
    // Three rows of charts, two of them over every Linear (72 in a base-sized model): each keeps
    // the height ChartView gives its data area, and the panel scrolls below that.
    auto* scroll = new QScrollArea(this);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    scroll->setWidget(splitter);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(scroll);

    connect(linear_, qOverload<int>(&QComboBox::currentIndexChanged), this, &ScalesPanel::showLinear);
    connect(ranges_, &ChartView::categoryClicked, this, [this](int category) {
        if (category >= 0 && category < linear_->count()) {
            linear_->setCurrentIndex(category);
            emit linearSelected(selectedLinear());
        }
    });
    connect(linear_, qOverload<int>(&QComboBox::activated), this, [this] { emit linearSelected(selectedLinear()); });
    connect(this, &ScalesPanel::linearSelected, selection, &LinearSelection::select);
    selection->follow(this, [this](const QString& module) { selectLinear(module); });
}

void ScalesPanel::setCompareWith(std::shared_ptr<const CompareWithOutcome> b)
{
    setOverlay(b ? b->statistics : std::vector<LinearScaleStatistics>{}, b ? b->comparison : nullptr);
}

void ScalesPanel::setStatistics(std::vector<LinearScaleStatistics> statistics)
{
    statistics_ = std::move(statistics);
    comboToStatistics_.clear();
    const QSignalBlocker blocker(linear_);
    linear_->clear();
    for (std::size_t i = 0; i < statistics_.size(); ++i) {
        if (!statistics_[i].quantized || statistics_[i].channelScales.empty())
            continue;
        comboToStatistics_.push_back(static_cast<int>(i));
        linear_->addItem(QString::fromStdString(statistics_[i].label + "  (" +
                                                statistics_[i].module + ")"),
                         QString::fromStdString(statistics_[i].module));
    }
    // The range chart's categories are the quantized Linears in the same order as the combo box.
    overlay_.clear();
    overlayRun_.reset();
    drawRanges();
    drawActivations();
    const int widest = widestScaleSpread(statistics_);
    int comboIndex = 0;
    for (std::size_t c = 0; c < comboToStatistics_.size(); ++c)
        if (comboToStatistics_[c] == widest)
            comboIndex = static_cast<int>(c);
    if (linear_->count() > 0) {
        linear_->setCurrentIndex(comboIndex);
        showLinear(comboIndex);
    } else {
        shares_->setText(tr("This checkpoint has no FP8 Linears."));
        channels_->setChart({});
        exponents_->setChart({});
    }
}

void ScalesPanel::showLinear(int index)
{
    if (index < 0 || index >= static_cast<int>(comboToStatistics_.size()))
        return;
    const LinearScaleStatistics& s = statistics_[static_cast<std::size_t>(comboToStatistics_[static_cast<std::size_t>(index)])];
    // The range chart's categories follow the combo box: the Linear shown below is shaded there,
    // and in the activation charts (whose categories are labelled alike) when a run filled them.
    ranges_->highlightCategory(index);
    for (ChartView* chart : {activationRange_, activationShares_})
        chart->highlightCategory(s.label);
    // Block-wise weights: the scale grid as a heat map (output blocks by input blocks).
    channels_->setChart(s.gridRows > 0 ? blockScalesChart(s) : channelScalesChart(s));
    exponents_->setChart(exponentHistogramChart(s));
    if (!overlay_.empty()) {
        const LinearScaleStatistics* b = overlayOf(s);
        const ChartData bChannels = b ? (b->gridRows > 0 ? blockScalesChart(*b) : channelScalesChart(*b)) : ChartData{};
        channels_->setChart(overlayOrAbsent(channels_->chart(), b ? &bChannels : nullptr, "A", "B"));
        const ChartData bExponents = b ? exponentHistogramChart(*b) : ChartData{};
        exponents_->setChart(overlayOrAbsent(exponents_->chart(), b ? &bExponents : nullptr, "A", "B"));
    }
    // The word embeddings are a table of rows, not a Linear's weight: say so and name their scales by row.
    const std::string per = s.gridRows > 0 ? s.weightStrategy + " (" + std::to_string(s.blockRows) + "x" +
                                                 std::to_string(s.blockColumns) + ")"
                            : s.embedding && s.weightStrategy == "channel" ? std::string("row")
                                                                           : s.weightStrategy;
    const QString what = (s.embedding ? tr("%1 word embeddings, scales per %2") : tr("%1 weights per %2"))
                             .arg(QString::fromStdString(s.weightDtype), QString::fromStdString(per));
    shares_->setText(tr("%1, scales %2 .. %3 (ratio %4), clipped %5%, underflow %6%%7")
                         .arg(what)
                         .arg(s.scaleMin, 0, 'e', 3)
                         .arg(s.scaleMax, 0, 'e', 3)
                         .arg(s.scaleRatio, 0, 'f', 1)
                         .arg(100 * s.clippedShare, 0, 'f', 2)
                         .arg(100 * s.underflowShare, 0, 'f', 2)
                         .arg(s.inputScale ? tr(", static input scale %1").arg(*s.inputScale, 0, 'e', 3) : QString()));
}

void ScalesPanel::selectLinear(const QString& module)
{
    const int index = linear_->findData(module);
    if (index >= 0)
        linear_->setCurrentIndex(index);
}

QString ScalesPanel::selectedLinear() const
{
    return linear_->currentData().toString();
}

QString ScalesPanel::selectedSummary() const
{
    return shares_->text();
}

void ScalesPanel::drawRanges()
{
    ChartData chart = weightScaleRangesChart(statistics_);
    if (!overlay_.empty())
        chart = overlayCharts(chart, weightScaleRangesChart(overlay_), "A", "B");
    ranges_->setChart(chart);
    const std::string label = selectedLabel();
    if (!label.empty())
        ranges_->highlightCategory(label);
}

void ScalesPanel::setOverlay(std::vector<LinearScaleStatistics> b, std::shared_ptr<const ComparisonResult> run)
{
    overlay_ = std::move(b);
    overlayRun_ = overlay_.empty() ? nullptr : std::move(run);
    drawRanges();
    showLinear(linear_->currentIndex());
    drawActivations();
}

const LinearScaleStatistics* ScalesPanel::overlayOf(const LinearScaleStatistics& s) const
{
    for (const LinearScaleStatistics& b : overlay_)
        if (b.module == s.module)
            return &b;
    return nullptr;
}

void ScalesPanel::drawActivations()
{
    if (overlay_.empty()) {
        activationRange_->setChart(activationRangeA_);
        activationShares_->setChart(activationSharesA_);
    } else {
        std::optional<ChartData> bRange, bShares;
        if (overlayRun_ && !overlayRun_->activations.empty()) {
            bool anyStatic = false;
            for (const LinearScaleStatistics& s : overlay_)
                anyStatic = anyStatic || s.inputScale.has_value();
            bRange = comparisonChart(ComparisonChart::ActivationRange, *overlayRun_, !anyStatic);
            bShares = comparisonChart(ComparisonChart::ActivationShares, *overlayRun_);
        } else if (overlayRun_) {
            bRange = bShares = ChartData{}; // B ran but quantized no activations
        }
        activationRange_->setChart(overlayOrAbsent(activationRangeA_, bRange ? &*bRange : nullptr, "A", "B"));
        activationShares_->setChart(overlayOrAbsent(activationSharesA_, bShares ? &*bShares : nullptr, "A", "B"));
    }
    for (ChartView* chart : {activationRange_, activationShares_})
        chart->highlightCategory(selectedLabel());
}

void ScalesPanel::clearResults(const QString& why)
{
    activationNote_->setText(why);
    activationRangeA_ = {};
    activationSharesA_ = {};
    activationRange_->setChart({});
    activationShares_->setChart({});
    banner_->clearResult();
}

void ScalesPanel::takeResult(const PanelResult& result)
{
    if (result.checkpoint)
        setStatistics(result.checkpoint->statistics);
    if (result.comparison)
        setComparison(*result.comparison, result.stamp);
}

void ScalesPanel::addToReport(ReportSection& section, bool runResultCurrent) const
{
    for (const ChartView* weights : {ranges_, channels_, exponents_})
        section.addChart(weights);
    if (runResultCurrent)
        for (const ChartView* activations : {activationRange_, activationShares_})
            section.addChart(activations);
}

void ScalesPanel::setComparison(const ComparisonResult& comparison, const RunStamp& stamp)
{
    banner_->setResultStamp(stamp);
    for (ChartView* chart : {activationRange_, activationShares_})
        chart->setStamp(stamp.describe());
    if (comparison.activations.empty()) {
        activationNote_->setText(tr("No activation statistics for the last run: its activations were not quantized "
                                    "(weight-only FP8, dequant mode, a float checkpoint), or it ran on a runner "
                                    "device, which reports outputs only."));
        activationRangeA_ = {};
        activationSharesA_ = {};
        drawActivations();
        return;
    }
    activationNote_->setText(tr("Activations of the last run: observed amax of each Linear's input against the "
                                "largest value its FP8 scale can represent (448 x scale), and the shares clipped, "
                                "flushed to zero or subnormal."));
    bool anyStatic = false;
    for (const LinearScaleStatistics& s : statistics_)
        anyStatic = anyStatic || s.inputScale.has_value();
    activationRangeA_ = comparisonChart(ComparisonChart::ActivationRange, comparison, !anyStatic);
    activationSharesA_ = comparisonChart(ComparisonChart::ActivationShares, comparison);
    drawActivations();
}

std::string ScalesPanel::selectedLabel() const
{
    const int index = linear_->currentIndex();
    if (index < 0 || index >= static_cast<int>(comboToStatistics_.size()))
        return {};
    return statistics_[static_cast<std::size_t>(comboToStatistics_[static_cast<std::size_t>(index)])].label;
}

std::vector<ChartView*> ScalesPanel::charts() const
{
    return {ranges_, channels_, exponents_, activationRange_, activationShares_};
}

} // namespace scalescope::ui
