#pragma once
// The workbench's main window: opens a checkpoint (menu, toolbar, drag and drop, recent files),
// chooses the reference, checkpoint B and the demo, exports the report, and holds the parts that
// do the rest: the result tabs and the Linear inspector (ResultTabs, whose panels connect
// themselves to the session), the toolbar's run options (RunControls) and the status bar
// (SessionStatus). All model work goes through WorkbenchSession (off the GUI thread). The Linear
// the user selects anywhere is one LinearSelection that every view follows. Report contents are
// assembled by report_assembly.h. Settings and the window layout persist through QSettings.
#include <QMainWindow>

#include <array>
#include <functional>
#include <memory>

#include "demo_catalog.h"
#include "result_tabs.h"
#include "run_controls.h"
#include "session_status.h"
#include "workbench_session.h"

class QAction;
class QComboBox;
class QDockWidget;
class QLabel;
class QMenu;
class QPushButton;

namespace scalescope::ui {

class LinearSelection;
class RecentMenu;

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
    // Open Fixed Checkpoint / Compare with the Original: opens `folder` (on the reference its
    // provenance records) and runs the input it was verified on again (a question on Ask, a task
    // input in its panel, which comes to the front); with `original`, runs the
    // original beside it (File > Compare With) on that input and reference. An empty folder keeps
    // the open checkpoint.
    void openFixed(const QString& folder, const QString& original);
    // Where Save Fixed Checkpoint proposes to write: beside the last checkpoint opened that is not a
    // bundled demo, else Documents, else the home folder; never inside the demo folder.
    QString fixFolder() const;
    // The demo folder the catalog was read from ("" without a demo).
    QString demoFolder() const { return demo_.folder; }
    // Writes every chart, table and a JSON summary into folder; returns the files or throws Error.
    QStringList exportReport(const QString& folder);

    WorkbenchSession* session() const { return session_; }
    AskPanel* askPanel() const { return tabs_->ask(); }
    FillMaskPanel* fillMaskPanel() const { return tabs_->fillMask(); }
    ModelPanel* modelPanel() const { return tabs_->model(); }
    ScalesPanel* scalesPanel() const { return tabs_->scales(); }
    ErrorsPanel* errorsPanel() const { return tabs_->errors(); }
    EvaluatePanel* evaluatePanel() const { return tabs_->evaluate(); }
    DeviceCheckPanel* deviceCheckPanel() const { return tabs_->deviceCheck(); }
    EmbedPanel* embedPanel() const { return tabs_->embed(); }
    RerankPanel* rerankPanel() const { return tabs_->rerank(); }
    ClassifyPanel* classifyPanel() const { return tabs_->classify(); }
    TaskEvaluatePanel* taskEvaluatePanel() const { return tabs_->taskEvaluate(); }
    AttentionPanel* attentionPanel() const { return tabs_->attention(); }
    // The toolbar's FP8 Attention (AIU) toggle: checkable, the session's attention for every later run.
    QAction* fp8AttentionAction() const { return runControls_->fp8AttentionAction(); }
    SensitivityPanel* sensitivityPanel() const { return tabs_->sensitivity(); }
    CalibrationPanel* calibrationPanel() const { return tabs_->calibration(); }
    TriagePanel* triagePanel() const { return tabs_->triage(); }
    LinearInspector* inspector() const { return tabs_->inspector(); }
    QDockWidget* inspectorDock() const { return inspectorDock_; }
    LinearSelection* selection() const { return selection_; }
    ResultTabs* tabs() const { return tabs_; }
    QString lastError() const { return lastError_; }
    QMenu* demoMenu() const { return demoMenu_; }
    QComboBox* deviceBox() const { return runControls_->deviceBox(); }
    QComboBox* modeBox() const { return runControls_->modeBox(); }
    // "2 Linears in float: ..." in the status bar (hidden without overrides) and its Clear button.
    QLabel* floatStatus() const { return status_->floatStatus(); }
    QPushButton* clearFloatButton() const { return status_->clearFloatButton(); }
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
    void createInspectorDock();
    void runFixedInput();
    // The task input a fix's provenance records, run again in its panel (Embed, Rerank, Classify);
    // the panel, or null when the fix records no task input.
    QWidget* rerunRecordedTask(const nlohmann::json& provenance);
    bool insideDemoFolder(const QString& dir) const;
    void connectSession();
    void restoreSettings();
    void createActions();
    void addRunMenu();
    void addViewMenu();
    void tickReferenceChoice();
    void createToolbar(const std::array<QAction*, 4>& actions);
    void createStatusBar();
    // The first geometry: firstWindowSize, centred on the screen.
    void fitToScreen();
    void chooseCheckpoint();
    void chooseReference();
    void chooseCompareWith();
    void showCompareWith(std::shared_ptr<const CompareWithOutcome> outcome);
    // After a run of A: B runs the same input again.
    void rerunCompareWith();
    // Hands B (null: none) to every panel that draws it.
    void showCompareWithInPanels(std::shared_ptr<const CompareWithOutcome> b);
    void chooseReportFolder();
    void showError(const QString& operation, const QString& message);
    // Its reference, the title, the recent list and the tabs; Triage comes to the front.
    void onCheckpointOpened(std::shared_ptr<const CheckpointInfo> info);
    void onDeviceSwitchFailed(const QString& failedDevice, const QString& message);
    // Calls `run` once, when the checkpoint being opened is ready.
    void runOnceReady(const std::function<void()>& run);
    void openTaskDemo(const DemoCheckpoint& demo);
    void saveSplitters();
    void restoreSplitters();

    WorkbenchSession* session_ = nullptr;
    LinearSelection* selection_ = nullptr;
    ResultTabs* tabs_ = nullptr;
    RunControls* runControls_ = nullptr;
    SessionStatus* status_ = nullptr;
    RecentMenu* recent_ = nullptr;
    std::shared_ptr<const CheckpointInfo> info_;
    std::shared_ptr<const CompareWithOutcome> compareWith_;
    QString referenceLabel_;
    QString lastError_;
    bool fixPending_ = false;   // openFixed: answer the recorded input once the fix is open
    QString pendingOriginal_;   // openFixed: then compare with this original
    int lastReportLeftOut_ = 0;
    DemoCatalog demo_;

    QDockWidget* inspectorDock_ = nullptr;
    QMenu* demoMenu_ = nullptr;
    QAction* cancelAction_ = nullptr;
    std::array<QAction*, 3> referenceChoices_{}; // a folder, dequantized weights, the CPU emulation
    QAction* exportReportAction_ = nullptr;
    QAction* compareWithAction_ = nullptr;
    QAction* clearComparisonAction_ = nullptr;
};

} // namespace scalescope::ui
