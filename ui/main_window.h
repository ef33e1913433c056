#pragma once
// The workbench's main window: opens a checkpoint (menu, toolbar, drag and drop, recent files),
// chooses the reference, the run mode and the device, and hosts the result panels (Triage, Model,
// Ask, Fill Mask, Scales, Errors, Evaluate, Device Check, Sensitivity, Attention, Calibration), which it holds as ResultPanels: a result, a
// checkpoint switch, a state change, busy and the report reach each of them through one loop.
// All model work goes through WorkbenchSession (off the GUI thread); the status bar shows device,
// mode, dtype, load time, and the progress and Cancel of its JobTracker. The Linear the user selects
// anywhere is one LinearSelection that every view and the Linear inspector dock follow. Report contents are
// assembled by report_assembly.h. Settings and the window layout persist through QSettings.
#include <QMainWindow>

#include <array>
#include <memory>
#include <vector>

#include "demo_catalog.h"
#include "panels/result_panel.h"
#include "workbench_session.h"

class QAction;
class QComboBox;
class QDockWidget;
class QLabel;
class QMenu;
class QProgressBar;
class QPushButton;
class QTabWidget;

namespace scalescope::ui {

class AskPanel;
class ErrorsPanel;
class LinearInspector;
class LinearSelection;
class TriagePanel;
class EvaluatePanel;
class AttentionPanel;
class CalibrationPanel;
class DeviceCheckPanel;
class SensitivityPanel;
class FillMaskPanel;
class ModelPanel;
class ScalesPanel;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(QWidget* parent = nullptr);
    ~MainWindow() override;

    void openCheckpoint(const QString& dir);
    // File > Compare With...: checkpoint B beside the open one. Its scale ranges join the Scales
    // view, its run on the last input joins the Errors charts (second colour, legend; rerun after
    // every run), and the inspector shows both schemes. Opening another checkpoint drops B.
    void compareWith(const QString& dir);
    QAction* compareWithAction() const { return compareWithAction_; }
    // File > Clear Comparison: removes B from every chart, the Compare banner and the inspector.
    void clearComparison();
    QAction* clearComparisonAction() const { return clearComparisonAction_; }
    std::shared_ptr<const CompareWithOutcome> comparedWith() const { return compareWith_; }
    // Empty: the checkpoint's dequantized weights stand in for the reference.
    void setReference(const QString& dir);
    // Fills the Demo menu; openDemo opens a demo checkpoint with its reference and fills in a
    // passage and question (or a mask sentence).
    void setDemoCatalog(const DemoCatalog& catalog);
    void openDemo(int checkpoint, int passage = 0);
    // Writes every chart, table and a JSON summary into folder; returns the files or throws Error.
    QStringList exportReport(const QString& folder);

    WorkbenchSession* session() const { return session_; }
    AskPanel* askPanel() const { return ask_; }
    FillMaskPanel* fillMaskPanel() const { return fillMask_; }
    ModelPanel* modelPanel() const { return model_; }
    ScalesPanel* scalesPanel() const { return scales_; }
    ErrorsPanel* errorsPanel() const { return errors_; }
    EvaluatePanel* evaluatePanel() const { return evaluate_; }
    DeviceCheckPanel* deviceCheckPanel() const { return deviceCheck_; }
    AttentionPanel* attentionPanel() const { return attention_; }
    // The toolbar's FP8 Attention (AIU) toggle: checkable, the session's attention for every later run.
    QAction* fp8AttentionAction() const { return fp8AttentionAction_; }
    SensitivityPanel* sensitivityPanel() const { return sensitivity_; }
    CalibrationPanel* calibrationPanel() const { return calibration_; }
    TriagePanel* triagePanel() const { return triage_; }
    LinearInspector* inspector() const { return inspector_; }
    QDockWidget* inspectorDock() const { return inspectorDock_; }
    LinearSelection* selection() const { return selection_; }
    QTabWidget* tabs() const { return tabs_; }
    QString lastError() const { return lastError_; }
    QMenu* demoMenu() const { return demoMenu_; }
    QComboBox* deviceBox() const { return device_; }
    QComboBox* modeBox() const { return mode_; }
    // "2 Linears in float: ..." in the status bar (hidden without overrides) and its Clear button.
    QLabel* floatStatus() const { return floatStatus_; }
    QPushButton* clearFloatButton() const { return clearFloat_; }
    // Asks for the AIU runner's command line (RunnerDialog) and switches to it.
    void chooseAiuRunner();
    // The size of the first window on a screen with this available area: 1280x820, or 92 % of a
    // smaller screen's width and height (the frame comes on top).
    static QSize firstWindowSize(const QSize& available);

signals:
    void checkpointReady(const QString& dir);
    void errorShown(const QString& message);

protected:
    void closeEvent(QCloseEvent* event) override;
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;

private:
    void createPanels();
    // A result of `stamp`, named with the window's reference label, to fill in and show.
    PanelResult resultOf(const RunStamp& stamp) const;
    // Every panel takes the parts of the result it shows.
    void showResult(const PanelResult& result);
    void showRunTimes(const ComparisonResult& comparison);
    void connectResults();
    void connectState();
    void connectRequests();
    void restoreSettings();
    void createActions();
    void addRunMenu();
    void addViewMenu();
    void tickReferenceChoice();
    void createToolbar(const std::array<QAction*, 4>& actions);
    void createStatusBar();
    void connectSensitivity();
    void connectDeviceCheck();
    void connectCalibration();
    // Every view that shows Linears selects through selection_ and follows it.
    void connectSelection();
    void connectTriage();
    // Runs `module` in float from now on, or in FP8 again, keeping the other overrides.
    void setLinearFloat(const QString& module, bool inFloat);
    void showLinearIn(QWidget* panel, const QString& module);
    // The first geometry: firstWindowSize, centred on the screen.
    void fitToScreen();
    void saveFixedCheckpoint(const QStringList& modules);
    void chooseCheckpoint();
    void chooseReference();
    void chooseCompareWith();
    void showCompareWith(std::shared_ptr<const CompareWithOutcome> outcome);
    // After a run of A: B runs the same input again.
    void rerunCompareWith();
    // Hands B (null: none) to every panel that draws it.
    void showCompareWithInPanels(std::shared_ptr<const CompareWithOutcome> b);
    std::shared_ptr<const CompareWithOutcome> compareWith_;
    void chooseReportFolder();
    void addRecent(const QString& dir);
    void rebuildRecentMenu();
    void showError(const QString& operation, const QString& message);
    void onCheckpointOpened(std::shared_ptr<const CheckpointInfo> info);
    // The session's checkpoint, reference, mode or device changed: results of another checkpoint
    // are cleared, results of the same checkpoint are marked stale and the last input reruns.
    void onStateChanged();
    void rerunAsk();
    // A one-line note when a demo checkpoint answered a passage it was not trained on.
    void warnIfOutsideDemoCorpus(const AskOutcome& outcome);
    void rerunFill();
    bool isDemoCheckpoint(const QString& dir) const;
    // The Evaluate tab warns when a demo checkpoint evaluates a file other than the demo corpus.
    void warnIfDemoEvaluatesOtherText(const QString& squadFile);
    // The Model tree's "run in float" toggles: the session runs these Linears in float from now on
    // (results made otherwise turn stale and the last input reruns; with no result yet, the
    // current tab's input runs).
    void setFloatLinears(const QStringList& modules);
    void updateFloatStatus();
    void onDeviceSwitchFailed(const QString& failedDevice, const QString& message);
    int deviceIndexFor(const QString& spec) const;
    void updateStatus();
    void saveSplitters();
    void restoreSplitters();

    WorkbenchSession* session_ = nullptr;
    std::shared_ptr<const CheckpointInfo> info_;
    QString referenceLabel_;
    QString deviceName_;
    QString lastRunMs_;
    QString lastError_;
    QString shownCheckpoint_; // the checkpoint the panels' results and messages are about
    int lastReportLeftOut_ = 0;
    DemoCatalog demo_;

    QTabWidget* tabs_ = nullptr;
    TriagePanel* triage_ = nullptr;
    ModelPanel* model_ = nullptr;
    AskPanel* ask_ = nullptr;
    FillMaskPanel* fillMask_ = nullptr;
    ScalesPanel* scales_ = nullptr;
    ErrorsPanel* errors_ = nullptr;
    EvaluatePanel* evaluate_ = nullptr;
    DeviceCheckPanel* deviceCheck_ = nullptr;
    AttentionPanel* attention_ = nullptr;
    SensitivityPanel* sensitivity_ = nullptr;
    CalibrationPanel* calibration_ = nullptr;
    // The panels above, in tab order.
    std::vector<ResultPanel*> resultPanels_;
    LinearSelection* selection_ = nullptr;
    LinearInspector* inspector_ = nullptr;
    QDockWidget* inspectorDock_ = nullptr;

    QMenu* recentMenu_ = nullptr;
    QMenu* demoMenu_ = nullptr;
    QAction* cancelAction_ = nullptr;
    QAction* fp8AttentionAction_ = nullptr;
    std::array<QAction*, 3> referenceChoices_{}; // a folder, dequantized weights, the CPU emulation
    QAction* exportReportAction_ = nullptr;
    QAction* compareWithAction_ = nullptr;
    QAction* clearComparisonAction_ = nullptr;
    QComboBox* mode_ = nullptr;
    QComboBox* device_ = nullptr;
    QLabel* deviceLabel_ = nullptr;
    QLabel* modeLabel_ = nullptr;
    QLabel* dtypeLabel_ = nullptr;
    QLabel* loadLabel_ = nullptr;
    QLabel* referenceStatus_ = nullptr;
    QLabel* floatStatus_ = nullptr;
    QPushButton* clearFloat_ = nullptr;
    QProgressBar* progress_ = nullptr;
    QPushButton* cancelButton_ = nullptr;
};

} // namespace scalescope::ui
