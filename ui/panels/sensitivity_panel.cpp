#include "panels/sensitivity_panel.h"

#include <algorithm>

#include <QComboBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#include "charts/chart_view.h"
#include "linear_selection.h"
#include "models/value_text.h"
#include "report/charts.h"
#include "report/result_json.h"
#include "report_section.h"
#include "stale_banner.h"
#include "tasks/sensitivity_words.h"
#include "workbench_session.h"

namespace scalescope::ui {
namespace {

QString words(const char* text) { return QString::fromUtf8(text); }

// The entry that holds this Linear (its own, or its unit's), null when none does.
const SensitivityEntry* entryOf(const SensitivityResult& result, const std::string& linear)
{
    for (const SensitivityEntry& e : result.entries)
        if (e.module == linear || std::find(e.linears.begin(), e.linears.end(), linear) != e.linears.end())
            return &e;
    return nullptr;
}

// "All FP8: final SQNR 14.9 dB against reference qa-float, the answer agrees. Target: ..." with
// only the parts that are known (a sweep cancelled before its baseline knows none).
QString baselineText(const SensitivityResult& r)
{
    QStringList parts;
    if (!r.referenceLabel.empty())
        parts << QObject::tr("%1: final SQNR %2 dB against %3, %4.")
                     .arg(r.run.mode == RunMode::Fp16 ? QObject::tr("The FP16 twin") : QObject::tr("All FP8"),
                          decibelText(r.baseline.sqnrDb), QString::fromStdString(r.referenceLabel),
                          QString::fromStdString(r.baseline.agrees ? r.agreement.agrees : r.agreement.differs));
    if (!r.target.empty())
        parts << QObject::tr("Target: %1.").arg(QString::fromStdString(r.target));
    return parts.join(QLatin1Char(' '));
}

} // namespace

SensitivityPanel::SensitivityPanel(WorkbenchSession* session, LinearSelection* selection, QWidget* parent)
    : QWidget(parent), session_(session)
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
    summary_->setTextFormat(Qt::RichText);
    summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    validity_ = new QLabel(this);
    validity_->setWordWrap(true);
    validity_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    validity_->hide();
    chart_ = new ChartView(this);
    chart_->setPlaceholder(tr("Ranked bars appear here as the sweep runs."));
    // The two-line title, the rotated unit labels and the legend take about 190 px: below this
    // height the bars themselves got some 40 px on a 768-pixel screen.
    chart_->setMinimumHeight(260);
    table_ = new QTableWidget(0, ColumnCount, this);
    table_->setHorizontalHeaderLabels({tr("rank"), tr("module"), words(kRecoveredMeasure), words(kLostAloneMeasure),
                                       tr("tie"), tr("agrees kept float"), tr("cause")});
    table_->horizontalHeaderItem(TieColumn)->setToolTip(
        tr("=N: within the run-to-run spread of rank N, so the sweep cannot tell which of them matters more"));
    table_->horizontalHeader()->setStretchLastSection(true);
    table_->verticalHeader()->hide(); // the rank column numbers the rows; a second count would read as another rank
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
    createSavedFixRow();
    layout->addWidget(savedFixRow_);
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
    connectSessionAndSelection(selection);
}

void SensitivityPanel::connectSessionAndSelection(LinearSelection* selection)
{
    connect(this, &SensitivityPanel::sweepRequested, session_, &WorkbenchSession::sensitivity);
    connect(session_, &WorkbenchSession::sensitivityEntry, this, &SensitivityPanel::addEntry);
    connect(session_, &WorkbenchSession::failed, this, [this](const QString& operation, const QString& message) {
        if (operation == tr("Sensitivity") || operation == tr("Save fixed checkpoint"))
            showMessage(message);
    });
    connect(session_, &WorkbenchSession::keptFloat, this, &SensitivityPanel::showSavedFix);
    connect(this, &SensitivityPanel::keepFloatRequested, this, &SensitivityPanel::saveFixedCheckpoint);
    connect(this, &SensitivityPanel::linearSelected, selection, &LinearSelection::select);
    selection->follow(this, [this](const QString& module) { selectLinear(module); });
}

void SensitivityPanel::createSavedFixRow()
{
    savedFix_ = new QLabel(this);
    savedFix_->setObjectName(QStringLiteral("sensitivitySavedFix"));
    savedFix_->setWordWrap(true);
    savedFix_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    auto* open = new QPushButton(tr("Open Fixed Checkpoint"), this);
    open->setObjectName(QStringLiteral("sensitivityOpenFixed"));
    auto* compare = new QPushButton(tr("Compare with the Original"), this);
    compare->setObjectName(QStringLiteral("sensitivityCompareOriginal"));
    connect(open, &QPushButton::clicked, this, [this] { emit openFixedRequested(savedFolder_, QString()); });
    connect(compare, &QPushButton::clicked, this, [this] { emit openFixedRequested(savedFolder_, savedFrom_); });
    savedFixRow_ = new QWidget(this);
    auto* row = new QHBoxLayout(savedFixRow_);
    row->setContentsMargins(0, 0, 0, 0);
    row->addWidget(savedFix_, 1);
    row->addWidget(open, 0, Qt::AlignTop);
    row->addWidget(compare, 0, Qt::AlignTop);
    savedFixRow_->hide();
}

void SensitivityPanel::showSavedFix(const QString& folder, const QString& summary)
{
    savedFolder_ = folder;
    savedFrom_ = session_->checkpointDirectory();
    savedFix_->setText(summary);
    savedFixRow_->show();
    // The suggestion's validity was predicted from the original; the save line now holds the
    // verdict on the folder written.
    if (result_.suggestionValidity)
        validity_->setText(tr("Predicted from the original with the set float, before the save: %1")
                               .arg(QString::fromStdString(result_.suggestionValidity->sentence)));
}

QString SensitivityPanel::proposedFixFolder() const
{
    const QFileInfo checkpoint(session_->checkpointDirectory());
    const QString folder = saveFolder_.isEmpty() ? checkpoint.absolutePath() : saveFolder_;
    return QDir(folder).filePath(checkpoint.fileName() + QStringLiteral("-fixed"));
}

void SensitivityPanel::saveFixedCheckpoint(const QStringList& modules)
{
    if (modules.isEmpty()) {
        showMessage(tr("Select the rows to keep float, or run a sweep that suggests some."));
        return;
    }
    // The dialogs belong to the window, as the triage card asks for them too.
    const QString dst = QFileDialog::getSaveFileName(window(), tr("Save Fixed Checkpoint As (a new folder)"), proposedFixFolder());
    if (dst.isEmpty())
        return;
    const bool exists = QFileInfo::exists(dst);
    if (exists && QMessageBox::question(window(), tr("Replace Checkpoint"), tr("%1 exists. Replace it?").arg(dst)) != QMessageBox::Yes)
        return;
    // What the sweep verified, recorded in the fix's provenance file.
    FixMeasurement measurement;
    if (!result_.entries.empty() && result_.complete) {
        measurement.measuredBy = "sensitivity sweep";
        measurement.target = result_.target;
        measurement.before = {result_.baseline.sqnrDb, result_.baseline.agrees};
        QStringList suggested;
        for (const std::string& m : result_.suggestedFloat)
            suggested << QString::fromStdString(m);
        if (result_.suggestedMetrics && suggested == modules)
            measurement.after = {result_.suggestedMetrics->sqnrDb, result_.suggestedMetrics->agrees};
    }
    session_->keepFloat(modules, dst, exists, measurement);
}

void SensitivityPanel::addToReport(ReportSection& section, bool runResultCurrent) const
{
    if (!runResultCurrent || result_.entries.empty())
        return;
    section.addChart(chart_);
    section.addTable(QStringLiteral("sensitivity"), table_->model());
    section.summary()["sensitivity"] = sensitivityJson(result_);
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
    live_.push_back(*entry);
    // Ranked, with the spread and the ties, exactly as the finished sweep will be: the bars keep
    // their meaning and their order rule when it ends.
    if (entry->sweep) {
        result_ = partialSensitivityResult(*entry->sweep, live_);
    } else {
        result_.entries = live_;
        result_.complete = false;
    }
    summary_->setText(liveSummary());
    redraw();
}

QString SensitivityPanel::liveSummary() const
{
    return tr("%1 finished, ranked so far by %2. %3")
        .arg(countText(static_cast<long long>(result_.entries.size()), tr("entry"), tr("entries")), words(kRecoveredMeasure),
             baselineText(result_))
        .toHtmlEscaped();
}

QString SensitivityPanel::finishedSummary() const
{
    QString html = QStringLiteral("<p>%1</p>").arg(baselineText(result_).toHtmlEscaped());
    if (!result_.complete) {
        html += QStringLiteral("<p>%1</p>")
                    .arg(tr("Stopped with %1 finished (%2). No suggestion: the sweep did not finish.")
                             .arg(countText(static_cast<long long>(result_.entries.size()), tr("entry"), tr("entries")),
                                  QString::fromStdString(result_.stoppedReason))
                             .toHtmlEscaped());
        return html;
    }
    const std::string headline = keepFloatHeadline(result_);
    if (headline.empty()) {
        const QString why = result_.suggestionReached ? tr("Nothing to keep float: the FP8 run already meets the target.")
                                                      : QString::fromStdString(result_.suggestionNote);
        return html + QStringLiteral("<p>%1</p>").arg(why.toHtmlEscaped());
    }
    QString verified;
    if (result_.suggestedMetrics)
        verified = result_.suggestionReached
                       ? tr("verified: with them float the final SQNR is %1 dB, which meets the target")
                             .arg(decibelText(result_.suggestedMetrics->sqnrDb))
                       : tr("no prefix of the ranking meets the target; the best found reaches %1 dB")
                             .arg(decibelText(result_.suggestedMetrics->sqnrDb));
    html += QStringLiteral("<p><b>%1</b>%2</p><ol>")
                .arg(QString::fromStdString(headline).toHtmlEscaped(),
                     verified.isEmpty() ? QStringLiteral(":") : QStringLiteral(" (%1):").arg(verified.toHtmlEscaped()));
    for (const std::string& module : result_.suggestedFloat) {
        QString item = QString::fromStdString(module).toHtmlEscaped();
        if (const SensitivityEntry* e = entryOf(result_, module))
            item += QStringLiteral(" (%1)").arg(QString::fromStdString(sensitivityMarkedLabel(*e)).toHtmlEscaped());
        html += QStringLiteral("<li>%1</li>").arg(item);
    }
    return html + QStringLiteral("</ol>");
}

void SensitivityPanel::showResult(std::shared_ptr<const SensitivityResult> result, const RunStamp& stamp)
{
    stamp_ = stamp;
    banner_->setResultStamp(stamp);
    result_ = *result;
    live_.clear();
    summary_->setText(finishedSummary());
    // How the suggestion was found, every sentence of it, for whoever wants the whole story.
    summary_->setToolTip(QString::fromStdString(result_.suggestionNote));
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

void SensitivityPanel::showMessage(const QString& text) { summary_->setText(text.toHtmlEscaped()); }

void SensitivityPanel::setBusy(bool busy)
{
    run_->setEnabled(!busy);
    save_->setEnabled(!busy && !result_.entries.empty());
}

void SensitivityPanel::clearResults(const QString& why)
{
    result_ = {};
    live_.clear();
    summary_->setText(why.toHtmlEscaped());
    summary_->setToolTip(QString());
    savedFixRow_->setVisible(!savedFolder_.isEmpty() && savedFrom_ == session_->checkpointDirectory());
    showValidity();
    chart_->setChart({});
    table_->setRowCount(0);
    save_->setEnabled(false);
    banner_->clearResult();
}

void SensitivityPanel::redraw()
{
    // result_ is ranked already, live (partialSensitivityResult) and done alike.
    chart_->setStamp(stamp_.describe());
    const ChartData chart = sensitivityChart(result_);
    chart_->setChart(compareWith_ ? overlayOrAbsent(chart, nullptr, "A", "B") : chart);
    fillTable();
}

void SensitivityPanel::setCompareWith(std::shared_ptr<const CompareWithOutcome> b)
{
    compareWith_ = std::move(b);
    if (!result_.entries.empty())
        redraw();
}

void SensitivityPanel::fillTable()
{
    table_->setRowCount(int(result_.entries.size()));
    // What "agrees" holds the run to depends on the head: the answer, the labels, the order...
    if (!result_.agreement.agrees.empty())
        table_->horizontalHeaderItem(AgreesColumn)
            ->setToolTip(tr("With this entry kept float: yes when %1 with the reference, no when %2")
                             .arg(QString::fromStdString(result_.agreement.agrees), QString::fromStdString(result_.agreement.differs)));
    for (int row = 0; row < int(result_.entries.size()); ++row) {
        const SensitivityEntry& e = result_.entries[std::size_t(row)];
        QStringList cells;
        cells.resize(ColumnCount);
        cells[RankColumn] = QString::number(e.rank ? e.rank : row + 1);
        cells[ModuleColumn] = QString::fromStdString(e.module);
        // Within the spread of zero the numbers are noise: say so rather than show them as results.
        const bool noEffect = sensitivityNoMeasurableEffect(e, result_.spread);
        cells[RecoveredColumn] = noEffect ? tr("%1 (within +-%2 dB)").arg(words(kNoMeasurableEffect), spreadDecibelText(result_.spread.db))
                                          : decibelText(e.recoveredDb);
        cells[LostAloneColumn] = noEffect ? words(kNoMeasurableEffect) : decibelText(e.lostAloneDb);
        cells[TieColumn] = noEffect ? QString() : QString::fromStdString(sensitivityTieMark(e));
        cells[AgreesColumn] = e.floatOne.agrees ? tr("yes") : tr("no");
        cells[CauseColumn] = e.cause ? QString::fromStdString(e.cause->label) : QString();
        for (int column = 0; column < cells.size(); ++column) {
            auto* item = new QTableWidgetItem(cells[column]);
            if (column == CauseColumn && e.cause && !e.cause->explanation.empty())
                item->setToolTip(QString::fromStdString(e.cause->explanation));
            if ((column == RecoveredColumn || column == LostAloneColumn) && noEffect)
                item->setToolTip(tr("Measured %1 and %2 dB: within the run-to-run spread of +-%3 dB, so keeping it float "
                                    "has no measurable effect")
                                     .arg(decibelText(e.recoveredDb), decibelText(e.lostAloneDb), spreadDecibelText(result_.spread.db)));
            if (column == TieColumn && e.tieRank > 0 && !noEffect) {
                item->setData(Qt::UserRole + 1, double(e.tieRank)); // the CSV's cell: the rank, not "=2"
                item->setToolTip(tr("Tied with rank %1: %2 is within the run-to-run spread of +-%3 dB of it, so the "
                                    "sweep cannot tell which matters more")
                                     .arg(e.tieRank)
                                     .arg(words(kRecoveredMeasure), spreadDecibelText(result_.spread.db)));
            }
            if (column == ModuleColumn)
                item->setToolTip(QString::fromStdString(sensitivityMarkedLabel(e)));
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
