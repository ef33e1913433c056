#include "panels/device_check_panel.h"

#include <QButtonGroup>
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QRadioButton>
#include <QSpinBox>
#include <QSplitter>
#include <QTabWidget>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

#include "charts/chart_view.h"
#include "models/value_text.h"
#include "report/charts.h"
#include "report/check_report.h"
#include "report_section.h"
#include "settings.h"
#include "stale_banner.h"
#include "workbench_session.h"

namespace scalescope::ui {
namespace {

// What each twin is, for the check boxes' tooltips; names the core adds later show as they are.
QString twinToolTip(const QString& name)
{
    if (name == QLatin1String("emulation"))
        return QObject::tr("The checkpoint's FP8 run (fp8 mode) on this CPU: what the device should compute");
    if (name == QLatin1String("reference"))
        return QObject::tr("The float reference in float32 (dequantized weights when no reference is loaded)");
    if (name == QLatin1String("reference-fp16"))
        return QObject::tr("The float reference in the fp16 twin (every module rounded to half)");
    if (name == QLatin1String("fp16"))
        return QObject::tr("The FP8 run in the fp16 twin: the AIU's storage of every non-FP8 tensor in float16");
    if (name == QLatin1String("dequant"))
        return QObject::tr("Dequantized weights on float activations");
    if (name == QLatin1String("dl16"))
        return QObject::tr("The FP8 run with DL16 accumulation, as the AIU accumulates");
    return QObject::tr("The %1 run on this CPU").arg(name);
}

// The twins in the order the boxes show them: the emulation first (the default and the usual
// verdict), then the core's names in its order.
QStringList twinNames()
{
    QStringList names;
    for (const std::string& name : checkRunNames())
        names << QString::fromStdString(name);
    if (names.removeAll(QStringLiteral("emulation")) > 0)
        names.prepend(QStringLiteral("emulation"));
    return names;
}

std::string signedText(double value)
{
    return (value > 0 ? "+" : "") + QString::number(value, 'f', 2).toStdString();
}

// The in-process FP8 run on this CPU held against its own CPU emulation: the same computation on
// both sides, which cannot fail and says nothing about a device.
bool checksTheSameComputation(const DeviceCheckOutcome& outcome)
{
    const RunStamp& stamp = outcome.stamp;
    return stamp.run.device == "cpu" && stamp.run.mode == RunMode::Fp8 && stamp.floatLinears.isEmpty() &&
           !outcome.request.twins.isEmpty() && outcome.request.twins.front() == QLatin1String("emulation");
}

} // namespace

DeviceCheckPanel::DeviceCheckPanel(WorkbenchSession* session, QWidget* parent) : QWidget(parent)
{
    QWidget* controls = makeControls();
    QLayout* verdictRow = makeVerdictArea();
    twinRow_ = makeTwinRow();
    QWidget* results = makeResults();

    banner_ = new StaleBanner(this);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(banner_);
    layout->addWidget(controls);
    layout->addWidget(runUnderTest_);
    layout->addLayout(verdictRow);
    layout->addWidget(twinRow_);
    layout->addWidget(results, 1);

    connect(banner_, &StaleBanner::rerunRequested, this, &DeviceCheckPanel::requestCheck);
    connect(failureChart_, &ChartView::categoryClicked, this, &DeviceCheckPanel::pointClicked);
    connect(table_, &QTableWidget::cellClicked, this, [this](int row, int) { pointClicked(row); });
    connect(table_, &QTableWidget::cellDoubleClicked, this, [this](int row, int) {
        const TwinCheck* twin = twinShown();
        if (twin && row >= 0 && std::size_t(row) < twin->points.size())
            emit showInErrorsRequested(QString::fromStdString(twin->points[std::size_t(row)].point));
    });
    connectSession(session);
    currentStampChanged(RunStamp{});
    setRunnable(false, tr("no checkpoint is open"));
}

void DeviceCheckPanel::connectSession(WorkbenchSession* session)
{
    connect(this, &DeviceCheckPanel::checkRequested, session, &WorkbenchSession::deviceCheck);
    connect(this, &DeviceCheckPanel::cancelRequested, session->jobs(), &JobTracker::cancel);
    connect(session->jobs(), &JobTracker::progress, this, &DeviceCheckPanel::showProgress);
    connect(session, &WorkbenchSession::failed, this, [this](const QString& operation, const QString& message) {
        if (operation == tr("Device check"))
            showFailure(message);
    });
}

// The run under test above the verdict, and the verdict beside its words.
QLayout* DeviceCheckPanel::makeVerdictArea()
{
    runUnderTest_ = new QLabel(this);
    runUnderTest_->setObjectName(QStringLiteral("deviceCheckRunUnderTest"));
    runUnderTest_->setWordWrap(true);
    runUnderTest_->setTextInteractionFlags(Qt::TextSelectableByMouse);

    verdict_ = new QLabel(this);
    verdict_->setObjectName(QStringLiteral("deviceCheckVerdict"));
    verdict_->setAlignment(Qt::AlignCenter);
    verdict_->setMinimumWidth(110);
    verdict_->hide();
    details_ = new QLabel(tr("Choose a SQuAD file and press Run Check: every question runs on the run under test and "
                             "on each twin, and each capture point is held against its threshold."),
                          this);
    details_->setWordWrap(true);
    details_->setTextFormat(Qt::RichText);
    details_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    // The F1 interval in words under the verdict, its chart in the second chart tab.
    f1Text_ = new QLabel(this);
    f1Text_->setWordWrap(true);
    f1Text_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    f1Text_->hide();
    auto* words = new QVBoxLayout;
    words->setSpacing(2);
    words->addWidget(details_);
    words->addWidget(f1Text_);
    auto* verdictRow = new QHBoxLayout;
    verdictRow->addWidget(verdict_, 0, Qt::AlignTop);
    verdictRow->addLayout(words, 1);
    return verdictRow;
}

QWidget* DeviceCheckPanel::makeTwinRow()
{
    twinShown_ = new QComboBox(this);
    twinShown_->setToolTip(tr("The twin whose failure rates the chart and the table show; the first decides the verdict"));
    connect(twinShown_, qOverload<int>(&QComboBox::currentIndexChanged), this, &DeviceCheckPanel::showTwin);
    auto* twinLabel = new QLabel(tr("Twin shown:"), this);
    auto* twinRow = new QHBoxLayout;
    twinRow->setContentsMargins(0, 0, 0, 0);
    twinRow->addWidget(twinLabel);
    twinRow->addWidget(twinShown_);
    twinRow->addStretch(1);
    auto* row = new QWidget(this);
    row->setLayout(twinRow);
    row->hide();
    return row;
}

// The failure chart and the F1 chart in tabs beside the per-point table.
QWidget* DeviceCheckPanel::makeResults()
{
    failureChart_ = new ChartView(this);
    failureChart_->setPlaceholder(tr("The failure rate of every capture point appears here."));
    // Title, rotated point labels and legend take some 190 px; below this the bars had none left.
    failureChart_->setMinimumHeight(250);
    failureChart_->setMinimumWidth(360);
    f1Chart_ = new ChartView(this);
    f1Chart_->setPlaceholder(tr("The F1 difference and its interval appear here."));
    chartTabs_ = new QTabWidget(this);
    chartTabs_->addTab(failureChart_, tr("Failure rate per point"));
    chartTabs_->addTab(f1Chart_, tr("F1 interval"));
    table_ = new QTableWidget(0, ColumnCount, this);
    table_->setHorizontalHeaderLabels({tr("capture point"), tr("failure rate"), tr("starts here"),
                                       tr("median SQNR"), tr("worst SQNR"), tr("best twin")});
    table_->horizontalHeaderItem(MedianSqnrColumn)->setToolTip(tr("dB, the run against the twin shown, median over the questions"));
    table_->horizontalHeaderItem(WorstSqnrColumn)->setToolTip(tr("dB, the run against the twin shown, lowest over the questions"));
    table_->horizontalHeaderItem(DeparturesColumn)->setToolTip(
        tr("Departures start here: inputs whose first failing point, in execution order, is this one"));
    table_->horizontalHeaderItem(BestTwinColumn)->setToolTip(
        tr("The twin the run tracks best here: the lowest failure rate (ties: the higher median SQNR)"));
    table_->horizontalHeader()->setStretchLastSection(true);
    table_->verticalHeader()->hide();
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->setSelectionBehavior(QAbstractItemView::SelectRows);
    table_->setSelectionMode(QAbstractItemView::SingleSelection);
    table_->setToolTip(tr("Click a point to select it in the Errors panel; double-click to show it there"));

    // The chart beside the table: the rotated point labels need the height.
    auto* results = new QSplitter(Qt::Horizontal, this);
    results->setObjectName(QStringLiteral("deviceCheckSplitter"));
    results->addWidget(chartTabs_);
    results->addWidget(table_);
    results->setStretchFactor(0, 3);
    results->setStretchFactor(1, 2);
    return results;
}

QWidget* DeviceCheckPanel::makeControls()
{
    auto* box = new QWidget(this);
    auto* grid = new QGridLayout(box);
    grid->setContentsMargins(0, 0, 0, 0);
    QLayout* file = makeFileRow(box);
    grid->addWidget(new QLabel(tr("SQuAD file:"), box), 0, 0);
    grid->addLayout(file, 0, 1);
    QLayout* thresholds = makeThresholdsRow(box);
    grid->addWidget(new QLabel(tr("Thresholds:"), box), 1, 0);
    grid->addLayout(thresholds, 1, 1);
    QLayout* against = makeTwinChecks(box);
    grid->addWidget(new QLabel(tr("Against:"), box), 2, 0);
    grid->addLayout(against, 2, 1);
    QLayout* gate = makeGateRow(box);
    grid->addWidget(new QLabel(tr("Gate:"), box), 3, 0);
    grid->addLayout(gate, 3, 1);
    grid->setColumnStretch(1, 1);
    return box;
}

QLayout* DeviceCheckPanel::makeFileRow(QWidget* box)
{
    squad_ = new QLineEdit(box);
    squad_->setPlaceholderText(tr("SQuAD v1.1 or v2.0 JSON (the Evaluate panel's file when it has one)"));
    squad_->setText(Settings().squadFile()); // the file Evaluate used last
    auto* browse = new QPushButton(tr("Browse..."), box);
    questions_ = new QSpinBox(box);
    questions_->setRange(0, 10'000'000);
    questions_->setValue(200);
    questions_->setSpecialValueText(tr("all"));
    questions_->setToolTip(tr("Check only the first N questions (0: all). Fewer than some 100 give wide intervals."));
    auto* inputs = new QHBoxLayout;
    inputs->addWidget(squad_, 1);
    inputs->addWidget(browse);
    inputs->addWidget(new QLabel(tr("Questions:"), box));
    inputs->addWidget(questions_);
    connect(browse, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Choose a SQuAD File"), squad_->text(),
                                                          tr("SQuAD JSON (*.json);;All files (*)"));
        if (!path.isEmpty())
            setSquadFile(path);
    });
    return inputs;
}

// Measure the noise floor first, or read the thresholds from a file.
QLayout* DeviceCheckPanel::makeThresholdsRow(QWidget* box)
{
    measureFloor_ = new QRadioButton(tr("Measure noise floor on these inputs"), box);
    measureFloor_->setToolTip(tr("First runs the float reference in float32 and in the fp16 twin on the same questions; "
                                 "each point's threshold is the 99th percentile of how far those two drift apart"));
    measureFloor_->setChecked(true);
    useFile_ = new QRadioButton(tr("Thresholds file:"), box);
    useFile_->setToolTip(tr("A thresholds file written by scalescope-cli noise-floor"));
    thresholdsFile_ = new QLineEdit(box);
    thresholdsFile_->setPlaceholderText(tr("thresholds.json"));
    auto* load = new QPushButton(tr("Load Thresholds File..."), box);
    auto* group = new QButtonGroup(box);
    group->addButton(measureFloor_);
    group->addButton(useFile_);
    auto* thresholds = new QHBoxLayout;
    thresholds->addWidget(measureFloor_);
    thresholds->addWidget(useFile_);
    thresholds->addWidget(thresholdsFile_, 1);
    thresholds->addWidget(load);
    connect(load, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Load Thresholds File"), thresholdsFile_->text(),
                                                          tr("Thresholds JSON (*.json);;All files (*)"));
        if (path.isEmpty())
            return;
        thresholdsFile_->setText(path);
        useFile_->setChecked(true);
    });
    connect(thresholdsFile_, &QLineEdit::textEdited, this, [this](const QString& text) {
        if (!text.isEmpty())
            useFile_->setChecked(true);
    });
    return thresholds;
}

QLayout* DeviceCheckPanel::makeTwinChecks(QWidget* box)
{
    auto* against = new QHBoxLayout;
    for (const QString& name : twinNames()) {
        auto* check = new QCheckBox(name, box);
        check->setToolTip(twinToolTip(name));
        check->setChecked(name == QLatin1String("emulation"));
        twins_[name] = check;
        against->addWidget(check);
    }
    against->addStretch(1);
    return against;
}

// The gate's two limits, Run Check, Cancel and the check's own progress bar.
QLayout* DeviceCheckPanel::makeGateRow(QWidget* box)
{
    maxFailureRate_ = new QDoubleSpinBox(box);
    maxFailureRate_->setRange(0.0, 100.0);
    maxFailureRate_->setDecimals(2);
    maxFailureRate_->setSingleStep(0.5);
    maxFailureRate_->setSuffix(tr(" %"));
    maxFailureRate_->setValue(1.0);
    maxFailureRate_->setToolTip(tr("A point fails the gate when more of the inputs than this fail there"));
    maxF1Drop_ = new QDoubleSpinBox(box);
    maxF1Drop_->setRange(0.0, 100.0);
    maxF1Drop_->setDecimals(2);
    maxF1Drop_->setSingleStep(0.5);
    maxF1Drop_->setValue(1.0);
    maxF1Drop_->setToolTip(tr("F1 points the run may lose against the twin: the 95 % interval of the drop must lie "
                              "within this"));
    run_ = new QPushButton(tr("Run Check"), box);
    cancel_ = new QPushButton(tr("Cancel"), box);
    cancel_->setEnabled(false);
    progress_ = new QProgressBar(box);
    progress_->setRange(0, 1000);
    progress_->setTextVisible(true);
    progress_->hide();
    auto* gate = new QHBoxLayout;
    gate->addWidget(new QLabel(tr("Max failure rate:"), box));
    gate->addWidget(maxFailureRate_);
    gate->addWidget(new QLabel(tr("Max F1 drop:"), box));
    gate->addWidget(maxF1Drop_);
    gate->addWidget(run_);
    gate->addWidget(cancel_);
    gate->addWidget(progress_, 1);
    gate->addStretch(0);
    connect(run_, &QPushButton::clicked, this, &DeviceCheckPanel::requestCheck);
    connect(cancel_, &QPushButton::clicked, this, &DeviceCheckPanel::cancelRequested);
    return gate;
}

QCheckBox* DeviceCheckPanel::twinBox(const QString& name) const
{
    const auto found = twins_.find(name);
    return found == twins_.end() ? nullptr : found->second;
}

void DeviceCheckPanel::setSquadFile(const QString& path) { squad_->setText(path); }

QString DeviceCheckPanel::squadFile() const { return squad_->text(); }

DeviceCheckRequest DeviceCheckPanel::request() const
{
    DeviceCheckRequest request;
    request.squadFile = squad_->text();
    request.maxQuestions = questions_->value();
    request.thresholdsFile = useFile_->isChecked() ? thresholdsFile_->text() : QString();
    for (const QString& name : twinNames())
        if (twins_.at(name)->isChecked())
            request.twins << name;
    request.maxFailureRate = maxFailureRate_->value() / 100.0;
    request.maxF1Drop = maxF1Drop_->value();
    return request;
}

void DeviceCheckPanel::requestCheck()
{
    if (!run_->isEnabled())
        return;
    const DeviceCheckRequest wanted = request();
    QString missing;
    if (wanted.squadFile.isEmpty())
        missing = tr("Choose a SQuAD file first.");
    else if (useFile_->isChecked() && wanted.thresholdsFile.isEmpty())
        missing = tr("Choose a thresholds file, or measure the noise floor on these inputs.");
    else if (wanted.twins.isEmpty())
        missing = tr("Tick at least one twin to check against.");
    if (!missing.isEmpty()) {
        details_->setText(missing.toHtmlEscaped());
        return;
    }
    Settings().setSquadFile(wanted.squadFile);
    // The previous verdict would read as this run's while it is going.
    clearResults(tr("Checking..."));
    checking_ = true;
    cancel_->setEnabled(busy_);
    emit checkRequested(wanted);
}

void DeviceCheckPanel::setRunnable(bool runnable, const QString& reason)
{
    runnable_ = runnable;
    run_->setEnabled(!busy_ && runnable_);
    run_->setToolTip(runnable ? tr("Run every question on the run under test and on each twin, and hold each capture "
                                   "point against its threshold")
                              : tr("Cannot check: %1").arg(reason));
}

void DeviceCheckPanel::setBusy(bool busy)
{
    busy_ = busy;
    run_->setEnabled(!busy_ && runnable_);
    cancel_->setEnabled(busy_ && checking_);
    if (!busy) {
        progress_->hide();
        if (checking_ && !outcome_) {
            // Finished without a result or a failure message (superseded, or stopped early).
            checking_ = false;
            details_->setText(tr("The check stopped before any result."));
        }
    }
}

void DeviceCheckPanel::showProgress(double fraction, const QString& stage)
{
    if (!checking_)
        return;
    progress_->show();
    progress_->setValue(static_cast<int>(fraction * 1000));
    progress_->setFormat(tr("%1 (%2)").arg(stage, QStringLiteral("%p%")));
}

void DeviceCheckPanel::showFailure(const QString& message)
{
    if (!checking_)
        return;
    checking_ = false;
    progress_->hide();
    cancel_->setEnabled(false);
    details_->setText(tr("<span style='color:#b00'>The check did not finish:</span> %1").arg(message.toHtmlEscaped()));
}

void DeviceCheckPanel::currentStampChanged(const RunStamp& now)
{
    if (!now.isValid()) {
        runUnderTest_->setText(tr("Open a checkpoint: the check runs it on the device selected in the toolbar."));
        return;
    }
    const QString device = QString::fromStdString(now.run.device);
    if (device == QLatin1String("cpu")) {
        runUnderTest_->setText(tr("Run under test: the in-process run in %1 mode (CPU device, Mode box). To check a "
                                  "device, choose it in the toolbar.")
                                   .arg(now.modeName()));
        runUnderTest_->setToolTip(now.run.mode == RunMode::Fp8
                                      ? tr("In FP8 mode on the CPU the emulation twin computes the same as the run")
                                      : QString());
    } else {
        runUnderTest_->setToolTip(QString());
        runUnderTest_->setText(tr("Run under test: the selected device (%1) in fp8 mode; the twins run on this CPU.")
                                   .arg(device.startsWith(QLatin1String("runner:")) ? device.mid(7).section(QLatin1Char('\n'), 0, 0)
                                                                                    : device));
    }
    if (!now.floatLinears.isEmpty())
        runUnderTest_->setText(runUnderTest_->text() + QLatin1Char(' ') + tr("The run keeps %1.").arg(now.floatText()));
}

void DeviceCheckPanel::takeResult(const PanelResult& result)
{
    if (result.checkpoint) {
        const CheckpointInfo& info = *result.checkpoint;
        setRunnable(info.runnable && !info.checkpoint->layout().isMaskedLm(),
                    info.runnable ? tr("the check runs SQuAD questions, which need a question-answering checkpoint; "
                                       "this one is a masked language model.")
                                  : info.loadError);
    }
    if (result.deviceCheck)
        showResult(result.deviceCheck);
}

void DeviceCheckPanel::showResult(std::shared_ptr<const DeviceCheckOutcome> outcome)
{
    checking_ = false;
    progress_->hide();
    cancel_->setEnabled(false);
    outcome_ = std::move(outcome);
    banner_->setResultStamp(outcome_->stamp);
    const CheckResult& r = outcome_->result;
    {
        const QSignalBlocker blocker(twinShown_);
        twinShown_->clear();
        for (const TwinCheck& twin : r.twins)
            twinShown_->addItem(QString::fromStdString(twin.twin));
        twinShown_->setCurrentIndex(r.twins.empty() ? -1 : 0);
    }
    twinRow_->setVisible(r.twins.size() > 1);
    showVerdict();
    showF1();
    showTwin(0);
}

void DeviceCheckPanel::showVerdict()
{
    const CheckResult& r = outcome_->result;
    if (checksTheSameComputation(*outcome_)) {
        verdict_->setText(tr("NO DEVICE"));
        verdict_->setToolTip(tr("The run under test and its twin are the same computation"));
        verdict_->setStyleSheet(QStringLiteral("#deviceCheckVerdict { font-size: 16pt; font-weight: bold; color: white; "
                                               "padding: 4px 14px; border-radius: 4px; background: #6b6b6b; }"));
        verdict_->show();
        details_->setToolTip(tr("Run under test: %1\nThresholds: %2\n%3")
                                 .arg(outcome_->runUnderTest, outcome_->thresholdsSource, outcome_->cacheNote));
        details_->setText(tr("<b>No device is chosen</b>: the run under test is the in-process FP8 run on this CPU, the same "
                             "computation as its CPU emulation twin, so it agrees by construction and says nothing about a "
                             "device. Choose the device in the toolbar's Device box (a runner command, e.g. an AIU host over "
                             "ssh or oc exec) and run the check again, or hold this CPU run against the reference or the "
                             "FP16 twin instead."));
        return;
    }
    verdict_->setText(r.passed ? tr("PASS") : tr("FAIL"));
    verdict_->setToolTip(r.passed ? tr("Every point's failure rate and the F1 drop are within the gate")
                                  : tr("At least one gate failed: the reasons are beside"));
    // Colours that read on light and dark palettes; the word says it without them.
    verdict_->setStyleSheet(QStringLiteral("#deviceCheckVerdict { font-size: 22pt; font-weight: bold; color: white; "
                                           "padding: 4px 14px; border-radius: 4px; background: %1; }")
                                .arg(r.passed ? QStringLiteral("#1b7837") : QStringLiteral("#b2182b")));
    verdict_->show();
    QString html = QStringLiteral("<b>%1</b>").arg(QString::fromStdString(r.verdictSentence).toHtmlEscaped());
    if (!r.reasons.empty()) {
        html += QStringLiteral("<ul style='margin:0'>");
        for (const std::string& reason : r.reasons)
            html += QStringLiteral("<li>%1</li>").arg(QString::fromStdString(reason).toHtmlEscaped());
        html += QStringLiteral("</ul>");
    }
    const RunMeasurements& m = r.measurements;
    const std::size_t skipped = m.inputs.size() - m.measuredInputs();
    // The whole story (paths included) for whoever wants it, off the narrow screen.
    details_->setToolTip(tr("Run under test: %1\nThresholds: %2\n%3")
                             .arg(outcome_->runUnderTest, outcome_->thresholdsSource, outcome_->cacheNote));
    if (skipped > 0)
        html += QLatin1Char(' ') + tr("%1 skipped (too long for the model).")
                                      .arg(countText(static_cast<long long>(skipped), tr("question was"), tr("questions were")));
    details_->setText(html);
}

void DeviceCheckPanel::setCompareWith(std::shared_ptr<const CompareWithOutcome> b)
{
    compareWith_ = std::move(b);
    drawCharts();
}

void DeviceCheckPanel::drawCharts()
{
    f1Chart_->setChart(compareWith_ ? overlayOrAbsent(f1A_, nullptr, "A", "B") : f1A_);
    failureChart_->setChart(compareWith_ ? overlayOrAbsent(failureA_, nullptr, "A", "B") : failureA_);
}

void DeviceCheckPanel::showF1()
{
    const CheckResult& r = outcome_->result;
    ChartData chart = checkF1IntervalChart(r);
    f1Chart_->setStamp(outcome_->stamp.describe());
    f1A_ = chart;
    drawCharts();
    QStringList lines;
    for (const TwinCheck& twin : r.twins) {
        if (!r.runScores || !twin.twinScores || !twin.f1Difference)
            continue;
        const BootstrapInterval& d = *twin.f1Difference;
        const double worstDrop = -d.low;
        lines << tr("F1 %1 %2, %3 %4: difference %5 (95 %: %6 to %7); worst drop %8, %9 the allowed %10.")
                     .arg(QString::fromStdString(r.measurements.runName))
                     .arg(r.runScores->f1, 0, 'f', 2)
                     .arg(QString::fromStdString(twin.twin))
                     .arg(twin.twinScores->f1, 0, 'f', 2)
                     .arg(QString::fromStdString(signedText(d.mean)), QString::fromStdString(signedText(d.low)),
                          QString::fromStdString(signedText(d.high)))
                     .arg(std::max(worstDrop, 0.0), 0, 'f', 2)
                     .arg(worstDrop <= r.gate.maxF1Drop ? tr("within") : tr("beyond"))
                     .arg(r.gate.maxF1Drop, 0, 'f', 2);
    }
    // What ran and against what, in one line with the F1: the run itself is named above.
    const RunMeasurements& m = r.measurements;
    const QString thresholds = outcome_->request.thresholdsFile.isEmpty()
                                   ? tr("noise floor measured now on the same questions")
                                   : QFileInfo(outcome_->request.thresholdsFile).fileName();
    lines.prepend(tr("%1 (%2 s); thresholds: %3.")
                      .arg(countText(static_cast<long long>(m.measuredInputs()), tr("question"), tr("questions")))
                      .arg(m.seconds, 0, 'f', 1)
                      .arg(thresholds));
    f1Text_->setText(lines.join(QLatin1Char(' ')));
    f1Text_->setVisible(true);
}

const TwinCheck* DeviceCheckPanel::twinShown() const
{
    if (!outcome_)
        return nullptr;
    const int index = twinShown_->currentIndex();
    const std::vector<TwinCheck>& twins = outcome_->result.twins;
    return index >= 0 && std::size_t(index) < twins.size() ? &twins[std::size_t(index)] : nullptr;
}

void DeviceCheckPanel::showTwin(int twin)
{
    if (!outcome_ || twin < 0)
        return;
    failureChart_->setStamp(outcome_->stamp.describe());
    const ChartData chart = checkFailureRateChart(outcome_->result, std::size_t(twin));
    const TwinCheck* shown = twinShown();
    failureA_ = chart;
    drawCharts();
    if (shown)
        fillTable(*shown);
    // Where the departures start is what the user came for: it is selected first (and so
    // followed by the Errors panel); the user's own later choice stays when another twin shows.
    const int departure = departureIndex();
    if (selectedPoint_.isEmpty() && departure >= 0)
        pointClicked(departure);
    else
        selectPoint(selectedPoint_);
}

int DeviceCheckPanel::departureIndex() const
{
    const TwinCheck* twin = twinShown();
    if (!twin || twin->departureStart.empty())
        return -1;
    for (std::size_t i = 0; i < twin->points.size(); ++i)
        if (twin->points[i].point == twin->departureStart)
            return int(i);
    return -1;
}

void DeviceCheckPanel::fillTable(const TwinCheck& twin)
{
    const CheckResult& r = outcome_->result;
    const int departure = departureIndex();
    table_->setRowCount(int(twin.points.size()));
    const QColor failing(0xD5, 0x5E, 0x00, 50);
    for (int row = 0; row < int(twin.points.size()); ++row) {
        const PointCheck& p = twin.points[std::size_t(row)];
        QStringList cells;
        cells.resize(ColumnCount);
        cells[PointColumn] = QString::fromStdString(p.label);
        cells[FailureRateColumn] = p.checked ? tr("%1 % (%2/%3)").arg(100.0 * p.failureRate, 0, 'g', 3).arg(p.failures).arg(p.inputs)
                                             : tr("not checked");
        cells[DeparturesColumn] = QString::number(p.departuresStartHere);
        cells[MedianSqnrColumn] = decibelText(p.median[std::size_t(CheckMetric::SqnrDb)]);
        cells[WorstSqnrColumn] = decibelText(p.worst[std::size_t(CheckMetric::SqnrDb)]);
        cells[BestTwinColumn] = std::size_t(row) < r.bestTwinPerPoint.size()
                                    ? QString::fromStdString(r.bestTwinPerPoint[std::size_t(row)])
                                    : QString();
        for (int column = 0; column < ColumnCount; ++column) {
            auto* item = new QTableWidgetItem(cells[column]);
            if (column == PointColumn)
                item->setToolTip(QString::fromStdString(p.point));
            if (column == FailureRateColumn && !p.checked)
                item->setToolTip(tr("The thresholds name no such point: it has no threshold to fail"));
            if (column != PointColumn && column != BestTwinColumn)
                item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
            if (p.failed)
                item->setBackground(failing);
            if (row == departure) {
                QFont font = item->font();
                font.setBold(true);
                item->setFont(font);
            }
            table_->setItem(row, column, item);
        }
    }
    table_->resizeColumnsToContents();
    table_->setColumnWidth(PointColumn, std::min(table_->columnWidth(PointColumn), 320));
}

void DeviceCheckPanel::pointClicked(int index)
{
    const TwinCheck* twin = twinShown();
    if (!twin || index < 0 || std::size_t(index) >= twin->points.size())
        return;
    const QString point = QString::fromStdString(twin->points[std::size_t(index)].point);
    selectPoint(point);
    emit capturePointSelected(point);
}

void DeviceCheckPanel::selectPoint(const QString& point)
{
    selectedPoint_ = point;
    const TwinCheck* twin = twinShown();
    if (twin)
        for (std::size_t i = 0; i < twin->points.size(); ++i)
            if (QString::fromStdString(twin->points[i].point) == point) {
                failureChart_->highlightCategory(int(i));
                const QSignalBlocker blocker(table_);
                table_->selectRow(int(i));
                table_->scrollToItem(table_->item(int(i), 0));
                return;
            }
    failureChart_->highlightCategory(-1);
    table_->clearSelection();
}

void DeviceCheckPanel::clearResults(const QString& why)
{
    outcome_.reset();
    selectedPoint_.clear();
    checking_ = false;
    verdict_->hide();
    verdict_->clear();
    details_->setText(why.toHtmlEscaped());
    details_->setToolTip(QString());
    {
        const QSignalBlocker blocker(twinShown_);
        twinShown_->clear();
    }
    twinRow_->hide();
    failureA_ = f1A_ = {};
    drawCharts();
    failureChart_->setStamp(QString());
    f1Chart_->setStamp(QString());
    f1Text_->clear();
    f1Text_->hide();
    table_->setRowCount(0);
    progress_->hide();
    banner_->clearResult();
}

void DeviceCheckPanel::addToReport(ReportSection& section, bool runResultCurrent) const
{
    if (!runResultCurrent || !outcome_)
        return;
    section.addChart(failureChart_);
    section.addChart(f1Chart_);
    section.addTable(QStringLiteral("device_check"), table_->model());
    // The CLI's check document, with what the panel adds: the run and thresholds in its words.
    nlohmann::json summary = checkResultJson(outcome_->result);
    summary["run_under_test"] = outcome_->runUnderTest.toStdString();
    summary["thresholds_source"] = outcome_->thresholdsSource.toStdString();
    summary["inputs_file"] = outcome_->request.squadFile.toStdString();
    summary["cache"] = outcome_->cacheNote.toStdString();
    section.summary()["device_check"] = summary;
}

} // namespace scalescope::ui
