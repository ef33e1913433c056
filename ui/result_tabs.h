#pragma once
// The window's tabs of result panels (Triage, Model, Ask, Fill Mask, Scales, Errors, Evaluate,
// Device Check, Embed, Rerank, Classify, Sensitivity, Attention, Calibration) and the Linear inspector, as hotspot's results
// page holds its pages: it makes each panel with the session and the Linear selection, and each
// panel connects its own requests, progress and messages. What concerns every panel at once goes
// through the ResultPanel loop here: the session's results, an opened checkpoint, a new state
// (results of another checkpoint cleared, the others marked stale), busy and checkpoint B. So do
// the requests one panel makes of another (the triage card's buttons, "show in Errors").
#include <QTabWidget>

#include <memory>
#include <vector>

#include "panels/result_panel.h"

namespace scalescope::ui {

class AskPanel;
class AttentionPanel;
class CalibrationPanel;
class ClassifyPanel;
class DeviceCheckPanel;
class EmbedPanel;
class ErrorsPanel;
class EvaluatePanel;
class FillMaskPanel;
class InputPanels;
class LinearInspector;
class LinearSelection;
class ModelPanel;
class RerankPanel;
class TaskEvaluatePanel;
class ScalesPanel;
class SensitivityPanel;
class TriagePanel;
class WorkbenchSession;

class ResultTabs : public QTabWidget {
    Q_OBJECT
public:
    // The inspector is made with `parent` too, for the window to dock it.
    ResultTabs(WorkbenchSession* session, LinearSelection* selection, QWidget* parent);

    // In tab order, which is also the order of their charts and tables in a report.
    const std::vector<ResultPanel*>& panels() const { return panels_; }
    // A checkpoint opened: every panel takes it, and only the input panel its head uses is on.
    void showCheckpoint(std::shared_ptr<const CheckpointInfo> info);
    // Checkpoint B beside the open one (null: none) in every panel that draws it.
    void setCompareWith(std::shared_ptr<const CompareWithOutcome> b);
    // The Model tree's "run in float" toggles: the session runs these Linears in float from now
    // on (results made otherwise turn stale and the last input reruns; with no result yet, the
    // current input panel's input runs).
    void setFloatLinears(const QStringList& modules);

    TriagePanel* triage() const { return triage_; }
    ModelPanel* model() const { return model_; }
    AskPanel* ask() const { return ask_; }
    FillMaskPanel* fillMask() const { return fillMask_; }
    ScalesPanel* scales() const { return scales_; }
    ErrorsPanel* errors() const { return errors_; }
    EvaluatePanel* evaluate() const { return evaluate_; }
    DeviceCheckPanel* deviceCheck() const { return deviceCheck_; }
    EmbedPanel* embed() const { return embed_; }
    RerankPanel* rerank() const { return rerank_; }
    ClassifyPanel* classify() const { return classify_; }
    TaskEvaluatePanel* taskEvaluate() const { return taskEvaluate_; }
    SensitivityPanel* sensitivity() const { return sensitivity_; }
    AttentionPanel* attention() const { return attention_; }
    CalibrationPanel* calibration() const { return calibration_; }
    LinearInspector* inspector() const { return inspector_; }

signals:
    // A question, a mask or a sequence task ran on the open checkpoint (B then runs the same input).
    void inputRan();
    // Open Fixed Checkpoint / Compare with the Original (Triage or Sensitivity): open `folder` (""
    // keeps the open checkpoint) and, with `original`, run the original beside it.
    void openFixedRequested(const QString& folder, const QString& original);

private:
    void createPanels(QWidget* parent);
    void connectResults();
    void connectTaskResults();
    // Evaluate Tasks: its results, and its changed inputs opened in Embed, Rerank or Classify.
    void connectTaskEvaluation();
    // After the session's stateChanged: results of another checkpoint are cleared, results of the
    // same checkpoint are marked stale and the last input reruns.
    void showState();
    void connectPanels();
    void connectDeviceCheck();
    void connectTriage();
    // A result of `stamp`, named with the session's reference label, to fill in and show.
    PanelResult resultOf(const RunStamp& stamp) const;
    void showResult(const PanelResult& result);
    // Runs `module` in float from now on, or in FP8 again, keeping the other overrides.
    void setLinearFloat(const QString& module, bool inFloat);
    void showLinearIn(QWidget* panel, const QString& module);

    WorkbenchSession* session_;
    LinearSelection* selection_;
    std::shared_ptr<const CheckpointInfo> info_;
    QString referenceLabel_;
    QString shownCheckpoint_; // the checkpoint the panels' results and messages are about
    TriagePanel* triage_ = nullptr;
    ModelPanel* model_ = nullptr;
    AskPanel* ask_ = nullptr;
    FillMaskPanel* fillMask_ = nullptr;
    ScalesPanel* scales_ = nullptr;
    ErrorsPanel* errors_ = nullptr;
    EvaluatePanel* evaluate_ = nullptr;
    DeviceCheckPanel* deviceCheck_ = nullptr;
    EmbedPanel* embed_ = nullptr;
    RerankPanel* rerank_ = nullptr;
    ClassifyPanel* classify_ = nullptr;
    TaskEvaluatePanel* taskEvaluate_ = nullptr;
    SensitivityPanel* sensitivity_ = nullptr;
    AttentionPanel* attention_ = nullptr;
    CalibrationPanel* calibration_ = nullptr;
    std::vector<ResultPanel*> panels_;
    InputPanels* inputs_ = nullptr;
    LinearInspector* inspector_ = nullptr;
};

} // namespace scalescope::ui
