#include "panels/fill_mask_panel.h"

#include <algorithm>

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QShortcut>
#include <QSpinBox>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>

#include "charts/chart_view.h"
#include "models/mask_predictions_model.h"
#include "models/probability_bar_delegate.h"
#include "report/charts.h"
#include "report_section.h"
#include "stale_banner.h"
#include "session_results.h"
#include "workbench_session.h"

namespace scalescope::ui {

FillMaskPanel::FillMaskPanel(WorkbenchSession* session, QWidget* parent) : QWidget(parent)
{
    text_ = new QLineEdit(this);
    text_->setPlaceholderText(tr("A sentence with the model's mask token where a word is missing"));
    topK_ = new QSpinBox(this);
    topK_->setRange(1, 50);
    topK_->setValue(5);
    fill_ = new QPushButton(tr("Fill"), this);
    fill_->setToolTip(tr("Predict the masked tokens with the FP8 model and its reference (Ctrl+Enter)"));
    auto* row = new QHBoxLayout;
    row->addWidget(text_, 1);
    row->addWidget(new QLabel(tr("Top"), this));
    row->addWidget(topK_);
    row->addWidget(fill_);

    result_ = new QLabel(tr("Write a sentence with the model's mask token and press Fill."), this);
    result_->setWordWrap(true);
    predictions_ = new MaskPredictionsModel(this);
    view_ = new QTableView(this);
    view_->setModel(predictions_);
    view_->verticalHeader()->hide();
    view_->setItemDelegate(new ProbabilityBarDelegate(view_));
    // No stretched last section: it would give the reference's probability column whatever width
    // is left, and its bars (drawn in proportion to the cell) would no longer compare with the run's.
    view_->horizontalHeader()->setStretchLastSection(false);
    view_->resizeColumnsToContents(); // the headers whole before the first fill
    chart_ = new ChartView(this);
    chart_->setPlaceholder(tr("The probabilities of the top tokens appear here after Fill."));

    auto* splitter = new QSplitter(Qt::Vertical, this);
    splitter->setObjectName(QStringLiteral("fillMaskSplitter"));
    splitter->addWidget(view_);
    splitter->addWidget(chart_);
    banner_ = new StaleBanner(this);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(banner_);
    layout->addLayout(row);
    layout->addWidget(result_);
    layout->addWidget(splitter, 1);

    connect(fill_, &QPushButton::clicked, this, &FillMaskPanel::requestFill);
    connect(text_, &QLineEdit::returnPressed, this, &FillMaskPanel::requestFill);
    for (const QKeySequence& keys : {QKeySequence(Qt::CTRL | Qt::Key_Return), QKeySequence(Qt::CTRL | Qt::Key_Enter)}) {
        auto* shortcut = new QShortcut(keys, this);
        shortcut->setContext(Qt::WidgetWithChildrenShortcut);
        connect(shortcut, &QShortcut::activated, this, &FillMaskPanel::requestFill);
    }
    connect(this, &FillMaskPanel::fillRequested, session, &WorkbenchSession::fillMask);
    connect(banner_, &StaleBanner::rerunRequested, this, &FillMaskPanel::rerun);
}

void FillMaskPanel::rerun()
{
    if (outcome_)
        emit fillRequested(outcome_->text, outcome_->topK);
}

void FillMaskPanel::setText(const QString& text)
{
    text_->setText(maskToken_.isEmpty() ? text
                                        : QString::fromStdString(withMaskToken(text.toStdString(), maskToken_.toStdString())));
}

void FillMaskPanel::setMaskToken(const QString& maskToken)
{
    maskToken_ = maskToken;
    if (maskToken_.isEmpty())
        return;
    text_->setPlaceholderText(tr("A sentence with %1 where a word is missing").arg(maskToken_));
    if (predictions_->rowCount() == 0)
        result_->setText(tr("Write a sentence with %1 and press Fill.").arg(maskToken_));
    setText(text_->text());
}
QString FillMaskPanel::text() const { return text_->text(); }
void FillMaskPanel::setBusy(bool busy)
{
    busy_ = busy;
    updateFillEnabled();
}

void FillMaskPanel::setRunnable(bool runnable, const QString& reason)
{
    runnable_ = runnable;
    notRunnableReason_ = reason;
    updateFillEnabled();
}

void FillMaskPanel::updateFillEnabled()
{
    fill_->setEnabled(!busy_ && runnable_);
    fill_->setToolTip(runnable_ ? tr("Predict the masked tokens with the quantized model and its reference (Ctrl+Enter)")
                                : tr("Cannot fill masks: %1").arg(notRunnableReason_));
}

void FillMaskPanel::clearResults(const QString& why)
{
    outcome_.reset();
    predictions_->clear();
    chartA_ = {};
    chartTokens_.clear();
    chartTokenIds_.clear();
    drawChart();
    result_->setText(why);
    banner_->clearResult();
}

void FillMaskPanel::requestFill()
{
    if (!fill_->isEnabled())
        return;
    if (!maskToken_.isEmpty() && !text_->text().contains(maskToken_)) {
        result_->setText(tr("The text needs at least one %1.").arg(maskToken_));
        return;
    }
    emit fillRequested(text_->text(), topK_->value());
}

void FillMaskPanel::takeResult(const PanelResult& result)
{
    if (!result.fillMask)
        return;
    outcome_ = result.fillMask;
    showOutcome(*result.fillMask, result.referenceLabel);
}

void FillMaskPanel::addToReport(ReportSection& section, bool runResultCurrent) const
{
    if (!runResultCurrent)
        return;
    section.addChart(chart_);
    section.addTable(QStringLiteral("mask_predictions"), predictions_);
    if (outcome_)
        section.summary()["text"] = outcome_->text.toStdString();
}

void FillMaskPanel::showOutcome(const FillMaskOutcome& outcome, const QString& referenceLabel)
{
    const FillMaskAgreement& agreement = *outcome.comparison->fillMask;
    const auto& run = outcome.run;
    std::vector<int> positions;
    QStringList summary;
    for (std::size_t m = 0; m < agreement.masks.size(); ++m) {
        const auto& mask = agreement.masks[m];
        positions.push_back(mask.position);
        summary << tr("mask %1: top-1 %2, top-%3 overlap %4%, KL %5 nats")
                       .arg(m + 1)
                       .arg(mask.top1Agrees ? tr("agrees") : tr("differs"))
                       .arg(mask.runTop.size())
                       .arg(100.0 * mask.topKOverlap, 0, 'f', 0)
                       .arg(mask.klDivergence, 0, 'g', 3);
    }
    const QString mode = outcome.stamp.modeName();
    predictions_->setRunLabel(mode);
    predictions_->setPredictions(outcome.run, outcome.reference, true, positions);
    view_->resizeColumnsToContents();
    // The bars fill their cell in proportion to the probability: both probability columns get one
    // width, so equal probabilities draw equal bars on both sides.
    const int probabilityWidth = std::max(view_->columnWidth(MaskPredictionsModel::RunProbabilityColumn),
                                          view_->columnWidth(MaskPredictionsModel::ReferenceProbabilityColumn));
    for (int column : {int(MaskPredictionsModel::RunProbabilityColumn), int(MaskPredictionsModel::ReferenceProbabilityColumn)})
        view_->setColumnWidth(column, probabilityWidth);
    result_->setText(tr("%1 vs %2: %3").arg(mode, referenceLabel.toHtmlEscaped(), summary.join(QStringLiteral("; "))));
    banner_->setResultStamp(outcome.stamp);

    if (!run.empty()) {
        std::vector<std::string> tokens;
        std::vector<double> runP, referenceP;
        chartTokenIds_.clear();
        for (const MaskPrediction& p : run.front()) {
            tokens.push_back(p.token);
            chartTokenIds_.push_back(p.tokenId);
            runP.push_back(p.probability);
            const auto& distribution = agreement.masks.front().referenceDistribution;
            referenceP.push_back(static_cast<std::size_t>(p.tokenId) < distribution.size()
                                     ? double(distribution[static_cast<std::size_t>(p.tokenId)])
                                     : 0.0);
        }
        ChartData chart = maskProbabilitiesChart(tokens, runP, referenceP, true);
        relabelRunSeries(chart, mode);
        chartA_ = chart;
        chartTokens_ = tokens;
        drawChart();
        chart_->setStamp(outcome.stamp.describe());
    }
}

void FillMaskPanel::setCompareWith(std::shared_ptr<const CompareWithOutcome> b)
{
    compareWith_ = std::move(b);
    drawChart();
}

void FillMaskPanel::drawChart()
{
    if (!compareWith_) {
        chart_->setChart(chartA_);
        return;
    }
    const ComparisonResult* b = compareWith_->comparison.get();
    if (!b || !b->fillMask || b->fillMask->masks.empty()) {
        chart_->setChart(overlayOrAbsent(chartA_, nullptr, "A", "B"));
        return;
    }
    // B's probabilities of A's top tokens at the first mask (B ran the same text).
    const auto& distribution = b->fillMask->masks.front().runDistribution;
    std::vector<double> probabilities;
    for (int64_t id : chartTokenIds_)
        probabilities.push_back(id >= 0 && static_cast<std::size_t>(id) < distribution.size()
                                    ? double(distribution[static_cast<std::size_t>(id)])
                                    : 0.0);
    ChartData bChart = maskProbabilitiesChart(chartTokens_, probabilities, {}, false);
    relabelRunSeries(bChart, compareWith_->stamp.modeName());
    chart_->setChart(overlayOrAbsent(chartA_, &bChart, "A", "B"));
}

} // namespace scalescope::ui
