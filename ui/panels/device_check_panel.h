#pragma once
// Device check panel (DESIGN "Device checks and gates", issue 28 item 4): holds the run under test
// (the selected runner device in fp8 mode, or on the in-process CPU the Mode box's mode) against
// the chosen twins on a SQuAD file's questions, with thresholds from a noise floor measured on
// the same questions or from a thresholds file. Shows the verdict (PASS/FAIL with the core's
// sentence and reasons), the failure rate per capture point in execution order against the
// allowed rate (bars above it in a warning colour, the point where departures start marked), the
// F1 difference with its 95 % interval against the allowed drop, and a table per point. Clicking
// a bar or a row selects that capture point in the Errors panel; double-clicking a row shows it
// there. The check itself runs in WorkbenchSession::deviceCheck, off the GUI thread.
#include <QWidget>

#include <map>
#include <memory>

#include "panels/result_panel.h"
#include "report/chart_data.h"
#include "session_results.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLayout;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QRadioButton;
class QSpinBox;
class QTabWidget;
class QTableWidget;

namespace scalescope::ui {

class ChartView;
class StaleBanner;
class WorkbenchSession;

class DeviceCheckPanel : public QWidget, public ResultPanel {
    Q_OBJECT
public:
    // Checks run in `session` (checkRequested, cancelRequested); its progress and failures show here.
    explicit DeviceCheckPanel(WorkbenchSession* session, QWidget* parent = nullptr);

    void setSquadFile(const QString& path);
    QString squadFile() const;
    // Whether the open checkpoint can be checked; reason becomes the Run button's tooltip.
    void setRunnable(bool runnable, const QString& reason);
    void showProgress(double fraction, const QString& stage);
    void showResult(std::shared_ptr<const DeviceCheckOutcome> outcome);
    // The check stopped with an error (or a cancel): the verdict area says so.
    void showFailure(const QString& message);
    void setBusy(bool busy) override;
    void clearResults(const QString& why) override;
    void takeResult(const PanelResult& result) override;
    StaleBanner* banner() const override { return banner_; }
    QString reportName() const override { return QStringLiteral("device_check"); }
    QString notRunReason() const override { return QStringLiteral("no device check run yet"); }
    // The failure-rate and F1 charts, the per-point table and summary["device_check"].
    void addToReport(ReportSection& section, bool runResultCurrent) const override;
    // Asks for a check with the inputs shown, as the Run button does.
    void requestCheck();
    // The request the controls describe now.
    DeviceCheckRequest request() const;

    // Shades the point's bar and selects its row; emits nothing. Unknown names clear the shade.
    void selectPoint(const QString& point);
    QString selectedPoint() const { return selectedPoint_; }
    // The row (and bar) of the point where most departures start in the twin shown; -1 when none.
    int departureIndex() const;

    std::shared_ptr<const DeviceCheckOutcome> outcome() const { return outcome_; }
    QLabel* verdictLabel() const { return verdict_; }
    QLabel* verdictDetails() const { return details_; }
    QLabel* runUnderTestLabel() const { return runUnderTest_; }
    QLabel* f1Label() const { return f1Text_; }
    ChartView* failureChart() const { return failureChart_; }
    ChartView* f1Chart() const { return f1Chart_; }
    // File > Compare With...: B never runs a device check, so while B is compared the charts name
    // A's series "A: ..." and their titles say "B: not run" (overlayOrAbsent). Null removes B.
    void setCompareWith(std::shared_ptr<const CompareWithOutcome> b) override;
    QTabWidget* chartTabs() const { return chartTabs_; }
    QTableWidget* table() const { return table_; }
    QPushButton* runButton() const { return run_; }
    QPushButton* cancelButton() const { return cancel_; }
    QSpinBox* questionsBox() const { return questions_; }
    QRadioButton* measureFloorButton() const { return measureFloor_; }
    QRadioButton* thresholdsFileButton() const { return useFile_; }
    QLineEdit* thresholdsFileEdit() const { return thresholdsFile_; }
    QCheckBox* twinBox(const QString& name) const;
    QDoubleSpinBox* maxFailureRateBox() const { return maxFailureRate_; } // percent
    QDoubleSpinBox* maxF1DropBox() const { return maxF1Drop_; }
    QComboBox* twinShownBox() const { return twinShown_; }
    enum Column { PointColumn, FailureRateColumn, DeparturesColumn, MedianSqnrColumn, WorstSqnrColumn, BestTwinColumn, ColumnCount };

signals:
    void checkRequested(const scalescope::ui::DeviceCheckRequest& request);
    void cancelRequested();
    // The user clicked a bar or a row: the Errors panel selects this capture point.
    void capturePointSelected(const QString& point);
    // The user double-clicked a row: show the point in the Errors panel.
    void showInErrorsRequested(const QString& point);

protected:
    void currentStampChanged(const RunStamp& now) override;

private:
    void drawCharts();
    ChartData f1A_, failureA_; // A's charts, before any overlay
    std::shared_ptr<const CompareWithOutcome> compareWith_;
    QWidget* makeControls();
    QLayout* makeFileRow(QWidget* box);
    QLayout* makeThresholdsRow(QWidget* box);
    QLayout* makeTwinChecks(QWidget* box);
    QLayout* makeGateRow(QWidget* box);
    QLayout* makeVerdictArea();
    QWidget* makeTwinRow();
    QWidget* makeResults();
    void connectSession(WorkbenchSession* session);
    void showTwin(int twin);
    void fillTable(const TwinCheck& twin);
    void showVerdict();
    void showF1();
    void pointClicked(int index);
    const TwinCheck* twinShown() const;

    QLineEdit* squad_ = nullptr;
    QSpinBox* questions_ = nullptr;
    QRadioButton* measureFloor_ = nullptr;
    QRadioButton* useFile_ = nullptr;
    QLineEdit* thresholdsFile_ = nullptr;
    std::map<QString, QCheckBox*> twins_;
    QDoubleSpinBox* maxFailureRate_ = nullptr;
    QDoubleSpinBox* maxF1Drop_ = nullptr;
    QPushButton* run_ = nullptr;
    QPushButton* cancel_ = nullptr;
    QProgressBar* progress_ = nullptr;
    QLabel* runUnderTest_ = nullptr;
    QLabel* verdict_ = nullptr;
    QLabel* details_ = nullptr;
    QComboBox* twinShown_ = nullptr;
    QWidget* twinRow_ = nullptr; // "Twin shown:", with more than one twin
    QTabWidget* chartTabs_ = nullptr;
    ChartView* failureChart_ = nullptr;
    ChartView* f1Chart_ = nullptr;
    QLabel* f1Text_ = nullptr;
    QTableWidget* table_ = nullptr;
    StaleBanner* banner_ = nullptr;
    std::shared_ptr<const DeviceCheckOutcome> outcome_;
    QString selectedPoint_;
    bool busy_ = false;
    bool runnable_ = false;
    bool checking_ = false;
};

} // namespace scalescope::ui
