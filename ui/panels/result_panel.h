#pragma once
// The one interface the main window holds every result panel by (Model, Ask, Fill Mask, Scales,
// Errors, Evaluate, Device Check, Sensitivity). It exists so the window can loop over its panels to hand out a
// result, clear another checkpoint's results, mark results stale, set busy and assemble a report,
// instead of naming each panel in each of those places: a new view implements this and joins the
// loops without the window growing a line per operation.
#include <QString>

#include <memory>

#include "session_results.h"

namespace scalescope::ui {

class ReportSection;
class StaleBanner;

// A finished job as the window hands it to every panel: whichever outcome it is, with the stamp of
// the state that produced it. Each panel shows the parts it draws and ignores the rest.
struct PanelResult {
    RunStamp stamp; // unset for an opened checkpoint, which is not a run
    QString referenceLabel; // how the window names the reference in result lines
    std::shared_ptr<const CheckpointInfo> checkpoint;
    std::shared_ptr<const AskOutcome> ask;
    std::shared_ptr<const FillMaskOutcome> fillMask;
    std::shared_ptr<const EmbedOutcome> embed;
    std::shared_ptr<const RerankOutcome> rerank;
    std::shared_ptr<const ClassifyOutcome> classify;
    std::shared_ptr<const ComparisonResult> comparison; // the ask's, the fill's or a sequence task's
    std::shared_ptr<const EvaluationResult> evaluation;
    std::shared_ptr<const TaskEvaluationOutcome> taskEvaluation; // STS, retrieval or classification file
    std::shared_ptr<const SensitivityResult> sensitivity;
    std::shared_ptr<const DeviceCheckOutcome> deviceCheck;
    std::shared_ptr<const CalibrationLabResult> calibration; // of the checkpoint open (no stamp)
};

class ResultPanel {
public:
    virtual ~ResultPanel() = default;

    virtual void takeResult(const PanelResult& result) = 0;
    // Removes the run results (inputs stay, so does what belongs to the checkpoint itself) and says
    // why where the results were.
    virtual void clearResults(const QString& why) = 0;
    // The strip that holds the stamp of the run result on screen; null for a panel whose results
    // carry no stamp (the window then neither clears them on a checkpoint switch nor leaves them
    // out of a report).
    virtual StaleBanner* banner() const = 0;
    // What summary.json's left_out calls this panel's run result ("ask", "activations").
    virtual QString reportName() const = 0;
    // Adds the panel's charts, tables and summary keys. Without a current run result only what
    // belongs to the checkpoint goes in (for a panel without a banner, its result counts as current).
    virtual void addToReport(ReportSection& section, bool runResultCurrent) const = 0;
    // Why a report holds no run result of this panel when it has none ("no question answered yet"),
    // for summary.json's not_run and the report page.
    virtual QString notRunReason() const { return QStringLiteral("nothing ran yet"); }
    // A job runs: inputs that would start another are off.
    virtual void setBusy(bool /*busy*/) { }
    // File > Compare With...: checkpoint B beside the open one (null: none). A panel that draws
    // B (an overlay, "B: not run" in its titles) takes it; the others ignore it.
    virtual void setCompareWith(std::shared_ptr<const CompareWithOutcome> /*b*/) { }

    bool hasResult() const;
    bool isStale() const;
    // The state of the window is now `now`: a result made in another one turns stale.
    void setCurrentStamp(const RunStamp& now);

protected:
    // After setCurrentStamp, for a panel that reads more than its banner's stamp (the triage card
    // holds parts of several runs).
    virtual void currentStampChanged(const RunStamp& /*now*/) { }
};

} // namespace scalescope::ui
