#pragma once
// Calibration panel: the calibration lab (engine/calibration_lab.h) of an open float checkpoint.
// The user picks calibration and evaluation text files (one text per line; the demo corpus split
// when a demo checkpoint is open), runs the lab in the background (a session job with the
// window's progress and Cancel), and sees how the static per-tensor input scales converge with the
// number of samples, which evaluation tokens clip under them, and the one sentence saying how many
// samples are enough; "Write checkpoint with n = N" quantizes the checkpoint with that many
// (quantize's channel weights and static per-tensor activations). The result belongs to the
// checkpoint, not to a run mode: it carries no stale banner, and opening another checkpoint clears it.
#include <QWidget>

#include <memory>

#include "panels/result_panel.h"
#include "report/chart_data.h"
#include "tasks/calibration_lab_result.h"

class QLabel;
class QLineEdit;
class QPushButton;

namespace scalescope::ui {

class ChartView;
class WorkbenchSession;

class CalibrationPanel : public QWidget, public ResultPanel {
    Q_OBJECT
public:
    // The folder the destination is proposed in (MainWindow::fixFolder: beside the user's own
    // files, never inside the bundled demo folder); empty: beside the checkpoint.
    void setSaveFolder(const QString& folder) { saveFolder_ = folder; }
    // The lab and the calibrated writes run in `session`; their results, messages and failures
    // show here.
    explicit CalibrationPanel(WorkbenchSession* session, QWidget* parent = nullptr);

    void takeResult(const PanelResult& result) override;
    void clearResults(const QString& why) override;
    StaleBanner* banner() const override { return nullptr; }
    QString reportName() const override { return QStringLiteral("calibration"); }
    QString notRunReason() const override { return QStringLiteral("the calibration lab has not run on this checkpoint"); }
    void addToReport(ReportSection& section, bool runResultCurrent) const override;
    void setBusy(bool busy) override;

    // The files the fields start with (the demo split); fields the user already filled keep theirs.
    void setDefaultFiles(const QString& calibrationFile, const QString& evaluationFile);
    void setFiles(const QString& calibrationFile, const QString& evaluationFile);
    // A float checkpoint is open (the lab calibrates float models); otherwise reason says why not.
    void setRunnable(bool runnable, const QString& reason);
    void showMessage(const QString& text);

    QPushButton* runButton() const { return run_; }
    QPushButton* writeButton() const { return write_; }
    QLineEdit* destinationEdit() const { return destination_; }
    ChartView* convergenceChart() const { return convergence_; }
    ChartView* clipChart() const { return clip_; }
    // File > Compare With...: the lab runs on A only, so while B is compared the charts name A's
    // series "A: ..." and their titles say "B: not run" (overlayOrAbsent). Null removes B.
    void setCompareWith(std::shared_ptr<const CompareWithOutcome> b) override;
    QString sentence() const;
    const CalibrationLabResult* result() const { return result_.get(); }

signals:
    void runRequested(const QString& calibrationFile, const QString& evaluationFile);
    void writeRequested(const QString& calibrationFile, qint64 samples, const QString& destination);

private:
    QString proposedDestination(const QString& suffix) const; // "<folder>/<checkpoint name><suffix>"
    void drawCharts();
    ChartData convergenceA_, clipA_; // A's charts, before any overlay
    std::shared_ptr<const CompareWithOutcome> compareWith_;
    void updateButtons();
    void connectSession(WorkbenchSession* session);
    std::shared_ptr<const CalibrationLabResult> result_;
    QString checkpoint_;
    QString saveFolder_; // where the written checkpoint is proposed: beside the user's own files
    QString calibrationUsed_; // the calibration file of the result on screen
    bool runnable_ = false;
    bool busy_ = false;
    QLineEdit* calibration_ = nullptr;
    QLineEdit* evaluation_ = nullptr;
    QLineEdit* destination_ = nullptr;
    QPushButton* run_ = nullptr;
    QPushButton* write_ = nullptr;
    QLabel* sentence_ = nullptr;
    ChartView* convergence_ = nullptr;
    ChartView* clip_ = nullptr;
};

} // namespace scalescope::ui
