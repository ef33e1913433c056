#include "panels/attention_panel.h"

#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QStandardItemModel>
#include <QTableView>
#include <QVBoxLayout>

#include <cmath>

#include "charts/chart_view.h"
#include "report/charts.h"
#include "report_section.h"
#include "stale_banner.h"

namespace scalescope::ui {
namespace {

const QString kOffText = QObject::tr("FP8 attention is off. Turn on FP8 Attention (AIU) on the toolbar and answer a question or "
                                     "fill a mask to see how much of E4M3 each head gets.");

QStandardItem* number(double value, int decimals)
{
    auto* item = new QStandardItem(std::isfinite(value) ? QString::number(value, 'f', decimals) : QStringLiteral("-"));
    item->setData(value, Qt::UserRole); // sorts by value, not by text
    item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    return item;
}

} // namespace

AttentionPanel::AttentionPanel(QWidget* parent) : QWidget(parent)
{
    banner_ = new StaleBanner(this);
    summary_ = new QLabel(kOffText, this);
    summary_->setWordWrap(true);
    summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    key_ = new ChartView(this);
    value_ = new ChartView(this);
    small_ = new ChartView(this);
    for (ChartView* chart : {key_, value_, small_})
        chart->setPlaceholder(tr("No run with FP8 attention yet."));
    table_ = new QStandardItemModel(0, 8, this);
    table_->setHorizontalHeaderLabels({tr("Layer"), tr("Tensor"), tr("Head"), tr("Top (median)"), tr("Top (min)"),
                                       tr("Unused binades"), tr("Zero %"), tr("Subnormal %")});
    table_->setSortRole(Qt::UserRole);
    tableView_ = new QTableView(this);
    tableView_->setObjectName(QStringLiteral("attentionHeadTable"));
    tableView_->setModel(table_);
    tableView_->setSortingEnabled(true);
    tableView_->setSelectionBehavior(QAbstractItemView::SelectRows);
    tableView_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    tableView_->verticalHeader()->hide();
    tableView_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);

    auto* heatMaps = new QSplitter(Qt::Horizontal, this);
    heatMaps->setObjectName(QStringLiteral("attentionHeatMapSplitter"));
    heatMaps->addWidget(key_);
    heatMaps->addWidget(value_);
    auto* lower = new QSplitter(Qt::Horizontal, this);
    lower->setObjectName(QStringLiteral("attentionLowerSplitter"));
    lower->addWidget(small_);
    lower->addWidget(tableView_);
    auto* vertical = new QSplitter(Qt::Vertical, this);
    vertical->addWidget(heatMaps);
    vertical->addWidget(lower);
    vertical->setStretchFactor(0, 3);
    vertical->setStretchFactor(1, 2);

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(banner_);
    layout->addWidget(summary_);
    layout->addWidget(vertical, 1);
}

QString AttentionPanel::notRunReason() const
{
    return QStringLiteral("no run with FP8 attention (toolbar: FP8 Attention) yet");
}

void AttentionPanel::setCompareWith(std::shared_ptr<const CompareWithOutcome> b)
{
    compareWith_ = std::move(b);
    drawCharts();
}

void AttentionPanel::drawCharts()
{
    if (!compareWith_) {
        key_->setChart(keyA_);
        value_->setChart(valueA_);
        small_->setChart(smallA_);
        return;
    }
    const ComparisonResult* b = compareWith_->comparison.get();
    auto draw = [&](ChartView* view, const ChartData& a, ComparisonChart which) {
        const ChartData bChart = b ? comparisonChart(which, *b) : ChartData{};
        view->setChart(overlayOrAbsent(a, b ? &bChart : nullptr, "A", "B"));
    };
    draw(key_, keyA_, ComparisonChart::AttentionKeys);
    draw(value_, valueA_, ComparisonChart::AttentionValues);
    draw(small_, smallA_, ComparisonChart::AttentionSmallValues);
}

QString AttentionPanel::summary() const { return summary_->text(); }

void AttentionPanel::clearResults(const QString& why)
{
    summary_->setText(why.isEmpty() ? kOffText : why);
    keyA_ = valueA_ = smallA_ = {};
    drawCharts();
    table_->removeRows(0, table_->rowCount());
    banner_->clearResult();
}

void AttentionPanel::takeResult(const PanelResult& result)
{
    if (result.comparison)
        showComparison(*result.comparison, result.stamp);
}

void AttentionPanel::showComparison(const ComparisonResult& comparison, const RunStamp& stamp)
{
    if (comparison.attentionHeadroom.empty()) {
        // A run without FP8 attention leaves nothing of an earlier one on screen.
        clearResults(kOffText);
        return;
    }
    banner_->setResultStamp(stamp);
    keyA_ = comparisonChart(ComparisonChart::AttentionKeys, comparison);
    valueA_ = comparisonChart(ComparisonChart::AttentionValues, comparison);
    smallA_ = comparisonChart(ComparisonChart::AttentionSmallValues, comparison);
    drawCharts();
    for (ChartView* chart : {key_, value_, small_})
        chart->setStamp(stamp.describe());

    table_->removeRows(0, table_->rowCount());
    const CastHeadroom* tightestCast = nullptr;
    const HeadHeadroom* tightest = nullptr;
    for (const CastHeadroom& cast : comparison.attentionHeadroom)
        for (const HeadHeadroom& head : cast.heads) {
            auto* layer = new QStandardItem(QString::number(cast.layer));
            layer->setData(cast.layer, Qt::UserRole);
            auto* tensor = new QStandardItem(cast.key ? QStringLiteral("K") : QStringLiteral("V"));
            tensor->setData(cast.key ? 0 : 1, Qt::UserRole);
            auto* index = new QStandardItem(QString::number(head.head));
            index->setData(head.head, Qt::UserRole);
            table_->appendRow({layer, tensor, index, number(head.topMedian, 1), number(head.topMin, 1),
                               number(head.unusedBinades, 1), number(100.0 * head.zeroShare(), 2),
                               number(100.0 * head.subnormalShare(), 2)});
            if (!tightest || head.topMedian < tightest->topMedian) {
                tightest = &head;
                tightestCast = &cast;
            }
        }
    // "Least range: layer 2 V, head 3 reaches 75.4 of E4M3's 448 where the head that sets the scale
    // reaches 100: 2.6 binades unused (median over 1 sequence). ..."
    const QString sequences = tightestCast->sequences == 1 ? tr("1 sequence")
                                                           : tr("%1 sequences").arg(tightestCast->sequences);
    summary_->setText(tr("Least range: layer %1 %2, head %3 reaches %4 of E4M3's 448 where the head that sets the "
                         "scale reaches %5: %6 binades unused (median over %9). In that layer's %2, %7 % of values "
                         "round to zero and %8 % to subnormals. The sweep's \"attention of layer N in FP8\" entries "
                         "say what it costs.")
                          .arg(tightestCast->layer)
                          .arg(tightestCast->key ? QStringLiteral("K") : QStringLiteral("V"))
                          .arg(tightest->head)
                          .arg(tightest->topMedian, 0, 'f', 1)
                          .arg(tightestCast->range, 0, 'f', 0)
                          .arg(tightest->unusedBinades, 0, 'f', 1)
                          .arg(100.0 * tightestCast->zeroShare(), 0, 'f', 2)
                          .arg(100.0 * tightestCast->subnormalShare(), 0, 'f', 2)
                          .arg(sequences));
}

void AttentionPanel::addToReport(ReportSection& section, bool runResultCurrent) const
{
    if (!runResultCurrent || table_->rowCount() == 0)
        return;
    for (const ChartView* chart : {key_, value_, small_})
        section.addChart(chart);
    section.addTable(QStringLiteral("attention_headroom"), table_);
}

} // namespace scalescope::ui
