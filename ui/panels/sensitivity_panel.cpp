#include "panels/sensitivity_panel.h"

#include <algorithm>

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#include <cmath>

#include "charts/chart_view.h"
#include "report/charts.h"
#include "report_section.h"
#include "stale_banner.h"

namespace scalescope::ui {
namespace {

QString db(double value)
{
    if (std::isnan(value))
        return QStringLiteral("n/a");
    if (std::isinf(value))
        return value > 0 ? QStringLiteral("inf") : QStringLiteral("-inf");
    return QString::number(value, 'f', 2);
}

} // namespace

SensitivityPanel::SensitivityPanel(QWidget* parent) : QWidget(parent)
{
    granularity_ = new QComboBox(this);
    granularity_->addItem(tr("per Linear"), QStringLiteral("linear"));
    granularity_->addItem(tr("per unit (q/k/v together)"), QStringLiteral("unit"));
    granularity_->addItem(tr("per layer"), QStringLiteral("layer"));
    // Save Fixed Checkpoint writes what the sweep suggests: per unit, that loads on every runtime
    // (fms's fused q/k/v and vLLM cannot keep one of q, k, v float alone).
    granularity_->setCurrentIndex(granularity_->findData(QStringLiteral("unit")));
    granularity_->setToolTip(tr("Per unit keeps q, k and v of a layer together, as fms's fused Linear and vLLM need"));
    run_ = new QPushButton(tr("Run Sweep"), this);
    run_->setToolTip(tr("Runs the last question or mask with each Linear (or layer) kept float alone and alone in FP8"));
    save_ = new QPushButton(tr("Save Fixed Checkpoint..."), this);
    save_->setToolTip(tr("keep-float: a copy of the checkpoint with the suggested Linears (or the selected rows) float"));
    save_->setEnabled(false);
    auto* bar = new QHBoxLayout;
    bar->addWidget(new QLabel(tr("Granularity:"), this));
    bar->addWidget(granularity_);
    bar->addWidget(run_);
    bar->addStretch(1);
    bar->addWidget(save_);
    summary_ = new QLabel(tr("Ask a question or fill a mask, then run the sweep to see which Linear breaks the answer."), this);
    summary_->setWordWrap(true);
    summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    validity_ = new QLabel(this);
    validity_->setWordWrap(true);
    validity_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    validity_->hide();
    chart_ = new ChartView(this);
    chart_->setPlaceholder(tr("Ranked bars appear here as the sweep runs."));
    table_ = new QTableWidget(0, 6, this);
    table_->setHorizontalHeaderLabels({tr("rank"), tr("module"), tr("float_one SQNR dB"), tr("fp8_one SQNR dB"),
                                       tr("agrees kept float"), tr("cause")});
    table_->horizontalHeader()->setStretchLastSection(true);
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->setSelectionBehavior(QAbstractItemView::SelectRows);
    auto* splitter = new QSplitter(Qt::Vertical, this);
    splitter->addWidget(chart_);
    splitter->addWidget(table_);
    splitter->setStretchFactor(0, 3); // the bars are the point; the table scrolls
    splitter->setStretchFactor(1, 2);
    banner_ = new StaleBanner(this);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(banner_);
    layout->addLayout(bar);
    layout->addWidget(summary_);
    layout->addWidget(validity_);
    layout->addWidget(splitter, 1);

    connect(run_, &QPushButton::clicked, this, &SensitivityPanel::requestSweep);
    connect(banner_, &StaleBanner::rerunRequested, this, &SensitivityPanel::requestSweep);
    connect(save_, &QPushButton::clicked, this, [this] { emit keepFloatRequested(modulesToKeep()); });
    connect(chart_, &ChartView::categoryClicked, this, [this](int index) {
        if (index >= 0 && std::size_t(index) < result_.entries.size()) {
            chart_->highlightCategory(index);
            emit linearSelected(QString::fromStdString(result_.entries[std::size_t(index)].linears.front()));
        }
    });
    connect(table_, &QTableWidget::cellClicked, this, [this](int row, int) {
        if (row >= 0 && std::size_t(row) < result_.entries.size())
            emit linearSelected(QString::fromStdString(result_.entries[std::size_t(row)].linears.front()));
    });
}

void SensitivityPanel::addToReport(ReportSection& section, bool runResultCurrent) const
{
    if (!runResultCurrent || result_.entries.empty())
        return;
    section.addChart(chart_);
    section.addTable(QStringLiteral("sensitivity"), table_->model());
    nlohmann::json suggested = nlohmann::json::array();
    for (const std::string& module : result_.suggestedFloat)
        suggested.push_back(module);
    section.summary()["sensitivity"] = {{"granularity", result_.granularity},
                                        {"entries", result_.entries.size()},
                                        {"complete", result_.complete},
                                        {"target", result_.target},
                                        {"suggested_float", suggested},
                                        {"suggestion_reached", result_.suggestionReached},
                                        {"suggestion_note", result_.suggestionNote}};
}

void SensitivityPanel::selectLinear(const QString& module)
{
    const std::string name = module.toStdString();
    for (std::size_t i = 0; i < result_.entries.size(); ++i) {
        const SensitivityEntry& entry = result_.entries[i];
        if (entry.module == name || std::find(entry.linears.begin(), entry.linears.end(), name) != entry.linears.end()) {
            chart_->highlightCategory(int(i));
            const QSignalBlocker blocker(table_);
            table_->selectRow(int(i));
            return;
        }
    }
    chart_->highlightCategory(-1);
}

void SensitivityPanel::requestSweep()
{
    if (!run_->isEnabled())
        return;
    clearResults(tr("Sweeping..."));
    emit sweepRequested(granularity_->currentData().toString());
}

void SensitivityPanel::addEntry(const RunStamp& stamp, std::shared_ptr<const SensitivityEntry> entry)
{
    stamp_ = stamp;
    banner_->setResultStamp(stamp); // a cancelled sweep keeps what finished, so it is a result too
    result_.entries.push_back(*entry);
    summary_->setText(tr("%1 entries finished...").arg(result_.entries.size()));
    redraw();
}

void SensitivityPanel::showResult(std::shared_ptr<const SensitivityResult> result, const RunStamp& stamp)
{
    stamp_ = stamp;
    banner_->setResultStamp(stamp);
    result_ = *result;
    QString text = tr("Baseline final SQNR %1 dB (%2) vs %3. Target: %4. ")
                       .arg(db(result_.baseline.sqnrDb))
                       .arg(result_.baseline.agrees ? tr("answer agrees") : tr("answer differs"))
                       .arg(QString::fromStdString(result_.referenceLabel))
                       .arg(QString::fromStdString(result_.target));
    text += result_.complete ? QString::fromStdString(result_.suggestionNote) : QString::fromStdString(result_.stoppedReason);
    if (!result_.suggestedFloat.empty()) {
        QStringList names;
        for (const std::string& m : result_.suggestedFloat)
            names << QString::fromStdString(m);
        text += tr(" Suggested float: %1.").arg(names.join(QStringLiteral(", ")));
    }
    summary_->setText(text);
    showValidity();
    redraw();
}

void SensitivityPanel::takeResult(const PanelResult& result)
{
    if (result.sensitivity)
        showResult(result.sensitivity, result.stamp);
}

void SensitivityPanel::showValidity()
{
    const std::optional<KeepFloatValidity>& validity = result_.suggestionValidity;
    validity_->setVisible(validity.has_value());
    if (validity)
        validity_->setText(QString::fromStdString(validity->sentence));
}

void SensitivityPanel::showMessage(const QString& text) { summary_->setText(text); }

void SensitivityPanel::setBusy(bool busy)
{
    run_->setEnabled(!busy);
    save_->setEnabled(!busy && !result_.entries.empty());
}

void SensitivityPanel::clearResults(const QString& why)
{
    result_ = {};
    summary_->setText(why);
    showValidity();
    chart_->setChart({});
    table_->setRowCount(0);
    save_->setEnabled(false);
    banner_->clearResult();
}

void SensitivityPanel::redraw()
{
    SensitivityResult ranked = result_;
    // Live entries arrive in model order: rank what finished so far the way the task will.
    std::stable_sort(ranked.entries.begin(), ranked.entries.end(), [](const SensitivityEntry& a, const SensitivityEntry& b) {
        const double sa = std::isnan(a.floatOne.sqnrDb) ? -INFINITY : a.floatOne.sqnrDb;
        const double sb = std::isnan(b.floatOne.sqnrDb) ? -INFINITY : b.floatOne.sqnrDb;
        return sa > sb;
    });
    result_.entries = ranked.entries;
    chart_->setStamp(stamp_.describe());
    chart_->setChart(sensitivityChart(result_));
    fillTable();
}

void SensitivityPanel::fillTable()
{
    table_->setRowCount(int(result_.entries.size()));
    for (int row = 0; row < int(result_.entries.size()); ++row) {
        const SensitivityEntry& e = result_.entries[std::size_t(row)];
        const QStringList cells = {QString::number(e.rank ? e.rank : row + 1), QString::fromStdString(e.module),
                                   db(e.floatOne.sqnrDb), db(e.fp8One.sqnrDb),
                                   e.floatOne.agrees ? tr("yes") : tr("no"),
                                   e.cause ? QString::fromStdString(e.cause->label) : QString()};
        for (int column = 0; column < cells.size(); ++column) {
            auto* item = new QTableWidgetItem(cells[column]);
            if (column == 5 && e.cause && !e.cause->explanation.empty())
                item->setToolTip(QString::fromStdString(e.cause->explanation));
            table_->setItem(row, column, item);
        }
    }
    table_->resizeColumnsToContents();
}

QStringList SensitivityPanel::modulesToKeep() const
{
    QStringList modules;
    for (const QModelIndex& index : table_->selectionModel()->selectedRows())
        for (const std::string& m : result_.entries[std::size_t(index.row())].linears)
            modules << QString::fromStdString(m);
    if (modules.isEmpty())
        for (const std::string& m : result_.suggestedFloat)
            modules << QString::fromStdString(m);
    return modules;
}

} // namespace scalescope::ui
