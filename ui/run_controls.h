#pragma once
// The toolbar's run options: the Mode box (FP8, Dequant, the FP16 twin, with DL16 accumulation),
// the FP8 Attention (AIU) toggle and the Device box (in-process CPU, runner processes, an AIU
// runner command asked for in RunnerDialog). Each sets the session for every later run; earlier
// results turn stale through the session's stateChanged.
#include <QObject>

class QAction;
class QComboBox;
class QToolBar;
class QWidget;

namespace scalescope::ui {

class WorkbenchSession;

class RunControls : public QObject {
    Q_OBJECT
public:
    // Adds the controls to `toolbar`; the runner dialog opens over `window`.
    RunControls(WorkbenchSession* session, QToolBar* toolbar, QWidget* window);

    QComboBox* modeBox() const { return mode_; }
    QComboBox* deviceBox() const { return device_; }
    // Checkable: the session's attention for every later run.
    QAction* fp8AttentionAction() const { return fp8Attention_; }
    // Asks for the AIU runner's command line (RunnerDialog) and switches to it.
    void chooseAiuRunner();
    // The Device box back on the device the session runs on (a switch failed or was cancelled).
    void showSessionDevice();

signals:
    // A control changed the session's mode, attention or device.
    void changed();

private:
    void addModeBox(QToolBar* toolbar);
    void addDeviceBox(QToolBar* toolbar);
    int deviceIndexFor(const QString& spec) const;

    WorkbenchSession* session_;
    QWidget* window_;
    QComboBox* mode_ = nullptr;
    QAction* fp8Attention_ = nullptr;
    QComboBox* device_ = nullptr;
};

} // namespace scalescope::ui
