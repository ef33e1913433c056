#include "panels/errors_panel.h"

#include <QCheckBox>
#include <QHeaderView>
#include <QLabel>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

#include "charts/chart_view.h"
#include "common/error.h"
#include "models/layer_metrics_model.h"
#include "models/value_text.h"
#include "report/charts.h"
#include "report/result_json.h"
#include "report_section.h"
#include "frozen_column_table.h"
#include "stale_banner.h"
#include "linear_selection.h"
#include "session_results.h"
#include "workbench_session.h"

namespace scalescope::ui {

ErrorsPanel::ErrorsPanel(WorkbenchSession* session, LinearSelection* selection, QWidget* parent) : QWidget(parent)
{
    summary_ = new QLabel(tr("Run a question or a mask: the error of every layer against the reference appears here."), this);
    summary_->setWordWrap(true);
    compare_ = new QLabel(this);
    compare_->setObjectName(QStringLiteral("compareBanner"));
    compare_->setWordWrap(true);
    compare_->setTextFormat(Qt::RichText);
    // B's colour down the banner's edge ties it to B's series in the charts.
    compare_->setStyleSheet(QStringLiteral("QLabel#compareBanner { background: #FBEFE6; border-left: 4px solid %1; padding: 4px; }")
                                .arg(QString::fromLatin1(kOverlayColorB)));
    compare_->hide();
    createTable();
    createCharts();
    layOut();
    connectClicks();
    connectSessionAndSelection(session, selection);
}

void ErrorsPanel::connectSessionAndSelection(WorkbenchSession* session, LinearSelection* selection)
{
    connect(this, &ErrorsPanel::capturePointRequested, session, &WorkbenchSession::capturePoint);
    connect(session, &WorkbenchSession::capturePointReady, this,
            [this](std::shared_ptr<const CapturePointValues> values) { showCapturePoint(*values); });
    connect(this, &ErrorsPanel::linearSelected, selection, &LinearSelection::select);
    selection->follow(this, [this](const QString& module) { selectLinear(module); });
}

void ErrorsPanel::createTable()
{
    outputsOnly_ = new QCheckBox(tr("Layer and Linear outputs only"), this);
    outputsOnly_->setChecked(true);
    metrics_ = new LayerMetricsModel(this);
    metrics_->setOutputsOnly(true);
    proxy_ = new QSortFilterProxyModel(this);
    proxy_->setSourceModel(metrics_);
    proxy_->setSortRole(LayerMetricsModel::SortRole);
    view_ = new FrozenColumnTableView(this); // the capture point stays beside its metrics
    view_->setModel(proxy_);
    // SQNR, the number a row is read for, comes right after the frozen name.
    view_->horizontalHeader()->moveSection(view_->horizontalHeader()->visualIndex(LayerMetricsModel::SqnrColumn), 1);
    view_->setSortingEnabled(true);
    view_->setSelectionBehavior(QAbstractItemView::SelectRows);
    view_->setSelectionMode(QAbstractItemView::SingleSelection);
    view_->verticalHeader()->hide();
    view_->horizontalHeader()->setStretchLastSection(true);
    view_->horizontalHeader()->setSortIndicator(-1, Qt::AscendingOrder); // execution order until sorted
}

void ErrorsPanel::createCharts()
{
    layerSqnr_ = new ChartView(this);
    layerCosine_ = new ChartView(this);
    growth_ = new ChartView(this);
    linearSqnr_ = new ChartView(this);
    headroom_ = new ChartView(this);
    chartTabs_ = new QTabWidget(this);
    chartTabs_->addTab(layerSqnr_, tr("SQNR per layer"));
    chartTabs_->addTab(layerCosine_, tr("Cosine per layer"));
    chartTabs_->addTab(growth_, tr("Error growth"));
    chartTabs_->addTab(linearSqnr_, tr("SQNR per Linear"));
    chartTabs_->addTab(headroom_, tr("FP16 headroom"));
    chartTabs_->setTabToolTip(chartTabs_->count() - 1,
                              tr("Largest |output| of every module against float16's limit 65,504 (the AIU path)"));

    drillTitle_ = new QLabel(tr("Click a layer or a row to see its error distribution."), this);
    histogram_ = new ChartView(this);
    scatter_ = new ChartView(this);
    for (ChartView* chart : {layerSqnr_, layerCosine_, growth_, linearSqnr_, headroom_})
        chart->setPlaceholder(tr("Run a question or a mask to compare the FP8 model with its reference."));
    histogram_->setPlaceholder(tr("Click a layer or a row to see its error histogram."));
    scatter_->setPlaceholder(tr("Click a layer or a row to see reference against FP8 values."));
}

// Table and charts side by side on top, the drill-down (histogram, scatter) below.
void ErrorsPanel::layOut()
{
    auto* tableBox = new QWidget(this);
    auto* tableLayout = new QVBoxLayout(tableBox);
    tableLayout->setContentsMargins(0, 0, 0, 0);
    tableLayout->addWidget(outputsOnly_);
    tableLayout->addWidget(view_);
    auto* top = new QSplitter(Qt::Horizontal, this);
    top->setObjectName(QStringLiteral("errorsTopSplitter"));
    top->addWidget(tableBox);
    top->addWidget(chartTabs_);
    top->setStretchFactor(0, 1);
    top->setStretchFactor(1, 1);
    auto* drill = new QSplitter(Qt::Horizontal, this);
    drill->setObjectName(QStringLiteral("errorsDrillSplitter"));
    drill->addWidget(histogram_);
    drill->addWidget(scatter_);
    auto* drillBox = new QWidget(this);
    auto* drillLayout = new QVBoxLayout(drillBox);
    drillLayout->setContentsMargins(0, 0, 0, 0);
    drillLayout->addWidget(drillTitle_);
    drillLayout->addWidget(drill, 1);
    auto* vertical = new QSplitter(Qt::Vertical, this);
    vertical->setObjectName(QStringLiteral("errorsSplitter"));
    vertical->addWidget(top);
    vertical->addWidget(drillBox);
    banner_ = new StaleBanner(this);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(banner_);
    layout->addWidget(compare_);
    layout->addWidget(summary_);
    layout->addWidget(vertical, 1);

}

void ErrorsPanel::connectClicks()
{
    connect(outputsOnly_, &QCheckBox::toggled, metrics_, &LayerMetricsModel::setOutputsOnly);
    connect(view_, &QTableView::clicked, this, [this](const QModelIndex& index) {
        const QString name = index.siblingAtColumn(0).data(Qt::DisplayRole).toString();
        selectedPoint_.clear(); // the user's own click; a Linear it selects comes back through selectLinear
        if (comparison_)
            for (const CapturePointMetrics& p : comparison_->points)
                if (p.name == name.toStdString() &&
                    (p.kind == CaptureKind::LinearInput || p.kind == CaptureKind::LinearOutput))
                    emit linearSelected(QString::fromStdString(p.module));
        emit capturePointRequested(name);
    });
    // Layer charts: category i is the i-th layer-output point (embeddings first).
    auto layerPoint = [this](int category) -> QString {
        if (!comparison_)
            return {};
        int seen = 0;
        for (const CapturePointMetrics& p : comparison_->points)
            if (p.kind == CaptureKind::Embeddings || p.kind == CaptureKind::LayerOutput)
                if (seen++ == category)
                    return QString::fromStdString(p.name);
        return {};
    };
    for (ChartView* chart : {layerSqnr_, layerCosine_, growth_})
        connect(chart, &ChartView::categoryClicked, this, [this, layerPoint](int category) {
            const QString name = layerPoint(category);
            if (!name.isEmpty())
                emit capturePointRequested(name);
        });
    // Headroom bars: category i is the i-th module output of the run.
    connect(headroom_, &ChartView::categoryClicked, this, [this](int category) {
        if (comparison_ && category >= 0 && category < static_cast<int>(comparison_->outputRanges.size()))
            emit capturePointRequested(
                QString::fromStdString(comparison_->outputRanges[static_cast<std::size_t>(category)].module + ".output"));
    });
    connect(linearSqnr_, &ChartView::categoryClicked, this, [this](int category) {
        if (!comparison_)
            return;
        int seen = 0;
        for (const CapturePointMetrics& p : comparison_->points)
            if (p.kind == CaptureKind::LinearOutput && seen++ == category) {
                emit linearSelected(QString::fromStdString(p.module));
                emit capturePointRequested(QString::fromStdString(p.name));
            }
    });
}

void ErrorsPanel::selectLinear(const QString& module)
{
    selectedPoint_.clear(); // the latest selection wins, here and in the next run's results
    selectedLinear_ = module;
    showSelectedLinear();
    if (comparison_)
        chartTabs_->setCurrentWidget(linearSqnr_);
}

void ErrorsPanel::showSelectedLinear()
{
    if (!comparison_ || selectedLinear_.isEmpty())
        return;
    const std::string wanted = selectedLinear_.toStdString();
    int linearCategory = 0, layerCategory = -1, seenLayers = 0;
    const CapturePointMetrics* output = nullptr;
    for (const CapturePointMetrics& p : comparison_->points) {
        if (p.kind == CaptureKind::LinearOutput) {
            if (p.module == wanted) {
                output = &p;
                break;
            }
            ++linearCategory;
        }
    }
    if (!output)
        return;
    // Layer charts: the embeddings first, then each layer's output; a head Linear has no layer.
    for (const CapturePointMetrics& p : comparison_->points)
        if (p.kind == CaptureKind::Embeddings || p.kind == CaptureKind::LayerOutput) {
            if (p.kind == CaptureKind::LayerOutput && output->layer >= 0 && p.layer == output->layer)
                layerCategory = seenLayers;
            ++seenLayers;
        }
    linearSqnr_->highlightCategory(linearCategory);
    for (ChartView* chart : {layerSqnr_, layerCosine_, growth_})
        chart->highlightCategory(layerCategory);
    const int row = metrics_->rowForCapturePoint(QString::fromStdString(output->name));
    if (row < 0)
        return;
    const QModelIndex index = proxy_->mapFromSource(metrics_->index(row, 0));
    view_->setCurrentIndex(index);
    view_->selectRow(index.row());
    view_->scrollTo(index);
}

bool ErrorsPanel::selectCapturePoint(const QString& name)
{
    selectedLinear_.clear();
    selectedPoint_ = name;
    return showSelectedPoint();
}

QString ErrorsPanel::selectedCapturePoint() const
{
    if (!selectedPoint_.isEmpty())
        return selectedPoint_;
    const QModelIndex current = view_->currentIndex();
    return current.isValid() ? current.siblingAtColumn(0).data(Qt::DisplayRole).toString() : QString();
}

bool ErrorsPanel::showSelectedPoint()
{
    if (!comparison_ || selectedPoint_.isEmpty())
        return false;
    const std::string wanted = selectedPoint_.toStdString();
    const auto point = std::find_if(comparison_->points.begin(), comparison_->points.end(),
                                    [&](const CapturePointMetrics& p) { return p.name == wanted; });
    if (point == comparison_->points.end())
        return false;
    if (metrics_->rowForCapturePoint(selectedPoint_) < 0)
        outputsOnly_->setChecked(false); // an input row is hidden among the outputs only
    highlightPoint(*point);
    const int row = metrics_->rowForCapturePoint(selectedPoint_);
    if (row < 0)
        return false;
    const QModelIndex index = proxy_->mapFromSource(metrics_->index(row, 0));
    view_->setCurrentIndex(index);
    view_->selectRow(index.row());
    view_->scrollTo(index);
    return true;
}

// The point's Linear in the per-Linear chart and its layer in the layer charts; none where it has none.
void ErrorsPanel::highlightPoint(const CapturePointMetrics& point)
{
    const bool linear = point.kind == CaptureKind::LinearInput || point.kind == CaptureKind::LinearOutput;
    int linearCategory = -1, seenLinears = 0, layerCategory = -1, seenLayers = 0;
    for (const CapturePointMetrics& p : comparison_->points) {
        if (p.kind == CaptureKind::LinearOutput) {
            if (linear && p.module == point.module)
                linearCategory = seenLinears;
            ++seenLinears;
        }
        if (p.kind == CaptureKind::Embeddings || p.kind == CaptureKind::LayerOutput) {
            if (p.name == point.name || (p.kind == CaptureKind::LayerOutput && point.layer >= 0 && p.layer == point.layer))
                layerCategory = seenLayers;
            ++seenLayers;
        }
    }
    linearSqnr_->highlightCategory(linearCategory);
    for (ChartView* chart : {layerSqnr_, layerCosine_, growth_})
        chart->highlightCategory(layerCategory);
}

QString ErrorsPanel::summaryText() const
{
    return summary_->text();
}

void ErrorsPanel::clearResults(const QString& why)
{
    comparison_.reset();
    overlay_.reset();
    histogramA_ = {};
    scatterA_ = {};
    metrics_->setPoints({});
    for (ChartView* chart : charts()) {
        chart->setChart({});
        chart->setStamp(QString());
    }
    drillTitle_->setText(tr("Click a layer or a row to see its error distribution."));
    summary_->setText(why);
    banner_->clearResult();
    drawCompareBanner();
}

void ErrorsPanel::takeResult(const PanelResult& result)
{
    if (result.comparison)
        setComparison(result.comparison, result.stamp);
}

void ErrorsPanel::addToReport(ReportSection& section, bool runResultCurrent) const
{
    if (!runResultCurrent)
        return;
    for (const ChartView* chart : charts())
        section.addChart(chart);
    section.addTable(QStringLiteral("layer_metrics"), metrics_);
    if (!comparison_)
        return;
    nlohmann::json& summary = section.summary();
    summary["final_logits"] = {{"sqnr_db", finiteOrNull(comparison_->finalLogits.sqnrDb)},
                               {"cosine", finiteOrNull(comparison_->finalLogits.cosine)},
                               {"relative_l2", finiteOrNull(comparison_->finalLogits.relativeL2)}};
    if (comparison_->qa)
        summary["same_best_answer"] = comparison_->qa->sameBestAnswer;
    summary["first_nonfinite"] = comparison_->runNonFinite.empty()
        ? nlohmann::json(nullptr)
        : nlohmann::json(comparison_->runNonFinite.front().module);
}

void ErrorsPanel::setComparison(std::shared_ptr<const ComparisonResult> comparison, const RunStamp& stamp)
{
    comparison_ = std::move(comparison);
    const ComparisonResult& c = *comparison_;
    banner_->setResultStamp(stamp);
    // The drill-down showed a capture point of the previous run: it does not belong to this one.
    histogramA_ = {};
    scatterA_ = {};
    drillTitle_->setText(tr("Click a layer or a row to see its error distribution."));
    metrics_->setPoints(c.points);
    view_->resizeColumnsToContents();
    view_->setColumnWidth(0, std::min(view_->columnWidth(0), 320));
    overlay_.reset();
    drawRunCharts();
    drawCompareBanner(); // B's run was of the previous input: pending until B reruns
    for (ChartView* chart : charts())
        chart->setStamp(stamp.describe());
    QString agreement;
    if (c.qa)
        agreement = c.qa->sameBestAnswer ? tr("same best answer") : tr("different best answers (F1 %1)").arg(c.qa->answerF1, 0, 'f', 2);
    else if (c.fillMask && !c.fillMask->masks.empty())
        agreement = c.fillMask->masks.front().top1Agrees ? tr("same top-1 token") : tr("different top-1 token");
    else
        agreement = c.outputsAgree ? tr("the final outputs decide the same") : tr("the final outputs decide differently");
    summary_->setText(tr("%1 vs %2: final logits SQNR %3 dB, cosine %4; %5. Forward %6 ms (run) / %7 ms (reference).")
                          .arg(QString::fromStdString(c.runLabel).toUpper(), QString::fromStdString(c.referenceLabel).toHtmlEscaped(),
                               decibelText(c.finalLogits.sqnrDb))
                          .arg(c.finalLogits.cosine, 0, 'f', 5)
                          .arg(agreement)
                          .arg(c.runMs, 0, 'f', 1)
                          .arg(c.referenceMs, 0, 'f', 1) +
                      headroomSentence(c));
}

void ErrorsPanel::drawRunCharts()
{
    if (!comparison_)
        return;
    const ComparisonResult& c = *comparison_;
    const std::pair<ChartView*, ComparisonChart> views[] = {{layerSqnr_, ComparisonChart::LayerSqnr},
        {layerCosine_, ComparisonChart::LayerCosine}, {growth_, ComparisonChart::ErrorGrowth},
        {linearSqnr_, ComparisonChart::LinearSqnr}, {headroom_, ComparisonChart::Fp16Headroom}};
    for (const auto& [view, which] : views) {
        if (!overlay_) {
            view->setChart(comparisonChart(which, c));
            continue;
        }
        const ChartData b = comparisonChart(which, *overlay_);
        view->setChart(overlayOrAbsent(comparisonChart(which, c), &b, "A", "B"));
    }
    drawDrillDown();
    showSelectedLinear();
    showSelectedPoint();
}

void ErrorsPanel::setOverlay(std::shared_ptr<const ComparisonResult> b)
{
    overlay_ = std::move(b);
    if (!comparison_) {
        overlay_.reset(); // nothing of A to draw B beside
        drawDrillDown();
        return;
    }
    drawRunCharts();
}

void ErrorsPanel::setCompareWith(std::shared_ptr<const CompareWithOutcome> b)
{
    compareWith_ = std::move(b);
    setOverlay(compareWith_ ? compareWith_->comparison : nullptr);
    drawCompareBanner();
}

void ErrorsPanel::drawCompareBanner()
{
    if (!compareWith_ || !compareWith_->diff) {
        compare_->clear();
        compare_->hide();
        return;
    }
    const CheckpointDiff& diff = *compareWith_->diff;
    int identical = 0, withinOneStep = 0, different = 0;
    for (const TensorDifference& t : diff.tensors) {
        identical += t.verdict == kDiffIdentical;
        withinOneStep += t.verdict == kDiffWithinOneStep;
        different += t.verdict == kDiffDifferent;
    }
    QStringList linears;
    for (const LinearDifference& linear : diff.linears)
        linears << QString::fromStdString(linear.module).toHtmlEscaped();
    const int shown = 3;
    QString linearText = linears.isEmpty() ? tr("none") : QStringList(linears.mid(0, shown)).join(QStringLiteral(", "));
    if (linears.size() > shown)
        linearText += tr(" and %1 more").arg(linears.size() - shown);
    QString text = tr("<b>Compared with B</b> %1 (B's series in the second colour on every chart): "
                      "%2 config field(s) differ; %3 Linear(s) with another scheme: %4.<br>"
                      "Tensors: %5 identical, %6 same up to one E4M3 step, %7 different, %8 only in A, %9 only in B.")
                       .arg(compareWith_->directory.toHtmlEscaped())
                       .arg(diff.config.size())
                       .arg(diff.linears.size())
                       .arg(linearText)
                       .arg(identical)
                       .arg(withinOneStep)
                       .arg(different)
                       .arg(diff.onlyInA.size())
                       .arg(diff.onlyInB.size());
    if (comparison_ && overlay_) {
        DiffMetrics sides;
        sides.runA = *comparison_;
        sides.runB = *overlay_;
        try {
            rankPointDifferences(sides);
            QStringList top;
                    for (std::size_t r = 0; r < std::min<std::size_t>(3, sides.ranked.size()); ++r) {
                const PointDifference& p = sides.points[sides.ranked[r]];
                top << tr("%1 (A %2 dB, B %3 dB)")
                           .arg(QString::fromStdString(p.name).toHtmlEscaped(), decibelText(p.a.sqnrDb), decibelText(p.b.sqnrDb));
            }
            text += tr("<br>Where A and B differ most (SQNR): %1.").arg(top.join(QStringLiteral("; ")));
        } catch (const Error& e) {
            text += tr("<br>%1").arg(QString::fromUtf8(e.what()).toHtmlEscaped());
        }
    } else if (comparison_) {
        text += tr("<br>B has not run A's last input yet.");
    } else {
        text += tr("<br>Run a question or a mask to compare both runs point by point.");
    }
    compare_->setText(text);
    compare_->show();
}

// The first fp16 overflow finding of the run, as a second line of the summary ("" when none).
QString ErrorsPanel::headroomSentence(const ComparisonResult& c)
{
    for (const Finding& finding : c.findings)
        if (finding.code == "fp16-activation-overflow")
            return QStringLiteral("<br><b>%1</b>").arg(QString::fromStdString(finding.message).toHtmlEscaped());
    return {};
}

void ErrorsPanel::showCapturePoint(const CapturePointValues& values)
{
    // A capture asked for before the last run changed belongs to another state.
    if (!comparison_ || values.stamp != banner_->resultStamp()) {
        drillTitle_->setText(tr("The metrics above are stale: rerun before looking at one point's errors."));
        return;
    }
    drillTitle_->setText(tr("Error distribution at %1 (%2 values)").arg(values.name).arg(values.run.size()));
    histogramA_ = errorHistogramChart(values.name.toStdString(), values.run, values.reference);
    scatterA_ = referenceScatterChart(values.name.toStdString(), values.run, values.reference);
    drawDrillDown();
}

// One point's values are captured from A only: while B is compared, the drill-down says so.
void ErrorsPanel::drawDrillDown()
{
    histogram_->setChart(overlay_ ? overlayOrAbsent(histogramA_, nullptr, "A", "B") : histogramA_);
    scatter_->setChart(overlay_ ? overlayOrAbsent(scatterA_, nullptr, "A", "B") : scatterA_);
}

std::vector<ChartView*> ErrorsPanel::charts() const
{
    return {layerSqnr_, layerCosine_, growth_, linearSqnr_, histogram_, scatter_, headroom_};
}

} // namespace scalescope::ui
