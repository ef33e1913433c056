#include "panels/calibration_panel.h"

#include <QFileDialog>
#include <QDir>
#include <QFileInfo>
#include <QGridLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSplitter>
#include <QVBoxLayout>

#include "charts/chart_view.h"
#include "report/calibration_charts.h"
#include "report/charts.h"
#include "report_section.h"
#include "workbench_session.h"

namespace scalescope::ui {
namespace {

const QString kNotRun = QObject::tr("Pick calibration and evaluation texts (one per line) and run the lab: it shows how many "
                                    "calibration samples static per-tensor scales need.");

} // namespace

CalibrationPanel::CalibrationPanel(WorkbenchSession* session, QWidget* parent) : QWidget(parent)
{
    calibration_ = new QLineEdit(this);
    calibration_->setObjectName(QStringLiteral("calibrationFile"));
    calibration_->setPlaceholderText(tr("calibration texts, one per line"));
    evaluation_ = new QLineEdit(this);
    evaluation_->setObjectName(QStringLiteral("evaluationFile"));
    evaluation_->setPlaceholderText(tr("evaluation texts, one per line (optional)"));
    auto browse = [this](QLineEdit* edit, const QString& title) {
        auto* button = new QPushButton(tr("Browse..."), this);
        connect(button, &QPushButton::clicked, this, [this, edit, title] {
            const QString path = QFileDialog::getOpenFileName(this, title, edit->text(), tr("Text files (*.txt);;All files (*)"));
            if (!path.isEmpty())
                edit->setText(path);
        });
        return button;
    };
    run_ = new QPushButton(tr("Run Calibration Lab"), this);
    connect(run_, &QPushButton::clicked, this, [this] { emit runRequested(calibration_->text(), evaluation_->text()); });
    destination_ = new QLineEdit(this);
    destination_->setObjectName(QStringLiteral("calibratedDestination"));
    destination_->setPlaceholderText(tr("folder of the checkpoint to write"));
    write_ = new QPushButton(tr("Write Checkpoint"), this);
    connect(write_, &QPushButton::clicked, this, [this] {
        if (result_)
            emit writeRequested(calibrationUsed_, result_->suggestedSize, destination_->text());
    });

    auto* form = new QGridLayout;
    form->addWidget(new QLabel(tr("Calibration:"), this), 0, 0);
    form->addWidget(calibration_, 0, 1);
    form->addWidget(browse(calibration_, tr("Calibration Texts")), 0, 2);
    form->addWidget(run_, 0, 3);
    form->addWidget(new QLabel(tr("Evaluation:"), this), 1, 0);
    form->addWidget(evaluation_, 1, 1);
    form->addWidget(browse(evaluation_, tr("Evaluation Texts")), 1, 2);
    form->addWidget(new QLabel(tr("Write to:"), this), 2, 0);
    form->addWidget(destination_, 2, 1, 1, 2);
    form->addWidget(write_, 2, 3);
    form->setColumnStretch(1, 1);

    sentence_ = new QLabel(kNotRun, this);
    sentence_->setObjectName(QStringLiteral("calibrationSentence"));
    sentence_->setWordWrap(true);
    sentence_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    convergence_ = new ChartView(this);
    clip_ = new ChartView(this);
    convergence_->setPlaceholder(tr("The calibration lab has not run yet."));
    clip_->setPlaceholder(tr("Clip shares need evaluation texts."));
    auto* charts = new QSplitter(Qt::Horizontal, this);
    charts->setObjectName(QStringLiteral("calibrationChartSplitter"));
    charts->addWidget(convergence_);
    charts->addWidget(clip_);

    auto* layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addWidget(sentence_);
    layout->addWidget(charts, 1);
    updateButtons();
    connectSession(session);
}

void CalibrationPanel::connectSession(WorkbenchSession* session)
{
    connect(this, &CalibrationPanel::runRequested, session, &WorkbenchSession::calibrationLab);
    connect(this, &CalibrationPanel::writeRequested, session, &WorkbenchSession::writeCalibrated);
    connect(session, &WorkbenchSession::calibrationLabFinished, this,
            [this, session](std::shared_ptr<const CalibrationLabResult> lab, const QString& checkpoint) {
                // A lab of a checkpoint closed meanwhile says nothing about the open one.
                if (checkpoint != session->checkpointDirectory())
                    return;
                PanelResult result;
                result.calibration = std::move(lab);
                takeResult(result);
            });
    connect(session, &WorkbenchSession::calibratedWritten, this, [this](const QString&, const QString& summary) { showMessage(summary); });
    connect(session, &WorkbenchSession::failed, this, [this](const QString& operation, const QString& message) {
        if (operation == tr("Calibration lab") || operation == tr("Write calibrated checkpoint"))
            showMessage(message);
    });
}

QString CalibrationPanel::sentence() const { return result_ ? sentence_->text() : QString(); }

void CalibrationPanel::setDefaultFiles(const QString& calibrationFile, const QString& evaluationFile)
{
    if (calibration_->text().isEmpty())
        calibration_->setText(calibrationFile);
    if (evaluation_->text().isEmpty())
        evaluation_->setText(evaluationFile);
}

void CalibrationPanel::setFiles(const QString& calibrationFile, const QString& evaluationFile)
{
    calibration_->setText(calibrationFile);
    evaluation_->setText(evaluationFile);
}

void CalibrationPanel::setRunnable(bool runnable, const QString& reason)
{
    runnable_ = runnable;
    run_->setToolTip(runnable ? tr("One float forward per text; the end-to-end part quantizes once per distinct set of scales")
                              : reason);
    if (!runnable && !result_)
        sentence_->setText(reason);
    updateButtons();
}

void CalibrationPanel::setBusy(bool busy)
{
    busy_ = busy;
    updateButtons();
}

void CalibrationPanel::updateButtons()
{
    run_->setEnabled(runnable_ && !busy_);
    write_->setEnabled(result_ != nullptr && !busy_);
    write_->setText(result_ ? tr("Write Checkpoint with n = %1").arg(result_->suggestedSize) : tr("Write Checkpoint"));
}

void CalibrationPanel::showMessage(const QString& text) { sentence_->setText(text); }

void CalibrationPanel::setCompareWith(std::shared_ptr<const CompareWithOutcome> b)
{
    compareWith_ = std::move(b);
    drawCharts();
}

void CalibrationPanel::drawCharts()
{
    convergence_->setChart(compareWith_ ? overlayOrAbsent(convergenceA_, nullptr, "A", "B") : convergenceA_);
    clip_->setChart(compareWith_ ? overlayOrAbsent(clipA_, nullptr, "A", "B") : clipA_);
}

void CalibrationPanel::clearResults(const QString& why)
{
    result_.reset();
    calibrationUsed_.clear();
    convergenceA_ = clipA_ = {};
    drawCharts();
    sentence_->setText(why.isEmpty() ? kNotRun : why);
    updateButtons();
}

QString CalibrationPanel::proposedDestination(const QString& suffix) const
{
    const QFileInfo checkpoint(checkpoint_);
    const QString folder = saveFolder_.isEmpty() ? checkpoint.absolutePath() : saveFolder_;
    return QDir(folder).filePath(checkpoint.fileName() + suffix);
}

void CalibrationPanel::takeResult(const PanelResult& result)
{
    if (result.checkpoint) {
        // Another checkpoint (or the same one reopened): the lab ran on what was open before.
        checkpoint_ = result.checkpoint->directory;
        clearResults(QString());
        destination_->setText(proposedDestination(QStringLiteral("-fp8-static")));
        const CheckpointInfo& info = *result.checkpoint;
        setRunnable(info.runnable && !info.checkpoint->config().quantization,
                    info.runnable ? tr("The calibration lab calibrates a float checkpoint; this one is already "
                                       "quantized (open its float original).")
                                  : info.loadError);
        return;
    }
    if (!result.calibration)
        return;
    result_ = result.calibration;
    calibrationUsed_ = calibration_->text();
    const CalibrationLabResult& lab = *result_;
    convergenceA_ = calibrationConvergenceChart(lab);
    clipA_ = lab.evalSamples > 0 ? calibrationClipChart(lab) : ChartData{};
    drawCharts();
    const QString name = QFileInfo(checkpoint_).fileName();
    for (ChartView* chart : {convergence_, clip_})
        chart->setStamp(tr("%1, %2 calibration and %3 evaluation texts").arg(name).arg(lab.calibrationSamples).arg(lab.evalSamples));
    sentence_->setText(QString::fromStdString(lab.sentence));
    destination_->setText(proposedDestination(QStringLiteral("-fp8-static-n%1").arg(lab.suggestedSize)));
    updateButtons();
}

void CalibrationPanel::addToReport(ReportSection& section, bool runResultCurrent) const
{
    if (!runResultCurrent || !result_)
        return;
    section.addChart(convergence_);
    if (result_->evalSamples > 0)
        section.addChart(clip_);
}

} // namespace scalescope::ui
