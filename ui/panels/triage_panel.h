#pragma once
// Triage, the first tab: from "accuracy dropped" to "this Linear" on one screen. A verdict card
// (the final SQNR, whether the answers agree, the EM/F1 change when evaluated, each graded by the
// stated thresholds of analysis/verdict.h, with the state it holds for), the ranked suspects (the
// sweep's ranking when there is one, else the Linears with the worst SQNR and the findings that
// name them), each with Run in Float, Show Scales and Show Errors, what each runtime will do with
// the checkpoint, and what to do next in one sentence with its button. A checkpoint with nothing
// quantized gets no verdict (it can be a reference; Quantize is offered), and a good verdict no
// suspect list, only the Linear closest to the line.
//
// A fix saved from here (or from Sensitivity) is confirmed on the card with Open Fixed Checkpoint
// and Compare with the Original; a fix opened says what it was made from and verified against
// (its scalescope_provenance.json), and beside the original (File > Compare With) it shows the
// before/after on the same reference and input.
//
// It holds parts of several runs (the last answer or mask, the evaluation, the sweep), each with
// its own stamp: a part made in another state says so; another checkpoint clears them all.
#include <QWidget>

#include <memory>

#include "panels/result_panel.h"

class QLabel;
class QPushButton;
class QTableWidget;

namespace scalescope::ui {

class LinearSelection;

class TriagePanel : public QWidget, public ResultPanel {
    Q_OBJECT
public:
    // The suspect shaded follows `selection`, and a suspect clicked is selected there.
    explicit TriagePanel(LinearSelection* selection, QWidget* parent = nullptr);

    void takeResult(const PanelResult& result) override;
    void clearResults(const QString& why) override;
    StaleBanner* banner() const override { return nullptr; }
    QString reportName() const override { return QStringLiteral("triage"); }
    // summary["verdict"] (the current parts only) and the suspects table.
    void addToReport(ReportSection& section, bool runResultCurrent) const override;
    void setBusy(bool busy) override;
    // The original's run on the same input and reference, for the before/after line.
    void setCompareWith(std::shared_ptr<const CompareWithOutcome> b) override;
    // keep-float wrote `folder` from the open checkpoint: the line that confirms it, with its actions.
    void showSavedFix(const QString& folder, const QString& summary);
    // Highlights the suspect row of this Linear (none when it is not a suspect); emits nothing.
    void selectLinear(const QString& module);

    QLabel* verdictLabel() const { return verdict_; }
    QLabel* consumersLabel() const { return consumers_; }
    QLabel* nextStepLabel() const { return next_; }
    QPushButton* nextStepButton() const { return nextButton_; }
    QTableWidget* suspectsTable() const { return suspects_; }
    QLabel* suspectsTitle() const { return suspectsTitle_; }
    // The overall grade word ("good", "fair", "poor") of the current parts, "" without any.
    QString overallGrade() const;
    // The suspects' module names, in the order shown.
    QStringList suspects() const;

    enum class NextStep { None, Answer, Sweep, SaveFixed, Evaluate, Quantize };
    NextStep nextStep() const { return nextStep_; }

signals:
    void linearSelected(const QString& module);
    void runInFloatRequested(const QString& module);
    void showScalesRequested(const QString& module);
    void showErrorsRequested(const QString& module);
    // The next-step button: answer (or fill) the input on its tab, run the sweep, save the fixed
    // checkpoint with these Linears float, or evaluate the SQuAD file.
    void answerRequested();
    void sweepRequested();
    void saveFixedRequested(const QStringList& modules);
    void evaluateRequested();
    void quantizeRequested();
    // Open the fix written from this checkpoint; with `original`, also run it beside the fix.
    void openFixedRequested(const QString& folder, const QString& original);

protected:
    void currentStampChanged(const RunStamp& now) override;

private:
    struct Suspect {
        QString module, label, why;
    };
    void refresh();
    void createFixLines();
    void readProvenance();
    void showFixLines();
    bool anythingQuantized() const;
    QString closestToTheLine() const;
    QString beforeAfterText() const;
    QString verdictText() const;
    QString consumersText() const;
    std::vector<Suspect> rankSuspects() const;
    void fillSuspects(const std::vector<Suspect>& suspects);
    void chooseNextStep();
    bool isCurrent(const RunStamp& stamp) const { return stamp == now_; }
    double finalSqnr() const;

    std::shared_ptr<const CheckpointInfo> checkpoint_;
    std::shared_ptr<const ComparisonResult> comparison_;
    RunStamp comparisonStamp_;
    std::shared_ptr<const EvaluationResult> evaluation_;
    RunStamp evaluationStamp_;
    std::shared_ptr<const SensitivityResult> sweep_;
    RunStamp sweepStamp_;
    // The comparison that was shown when the sweep arrived: the sweep measured that input, so it
    // speaks for the verdict only while that comparison is the one shown (sweepOfThisInput).
    std::shared_ptr<const ComparisonResult> sweepComparison_;
    bool sweepOfThisInput() const { return sweep_ && sweepComparison_ == comparison_; }
    RunStamp now_;
    bool busy_ = false;
    NextStep nextStep_ = NextStep::None;
    QStringList fixModules_;
    QString nextSentence_; // plain text, for the report
    std::vector<Suspect> shown_;
    QString closest_; // a good verdict's Linear closest to the line, "" when none
    QString savedFix_, savedFixFrom_, savedFixSummary_; // the last fix written, from which checkpoint
    QString provenanceText_, provenanceSource_;         // the open checkpoint's provenance, if it is a fix
    std::shared_ptr<const CompareWithOutcome> compareWith_;

    QLabel* verdict_ = nullptr;
    QLabel* consumers_ = nullptr;
    QLabel* next_ = nullptr;
    QLabel* suspectsTitle_ = nullptr;
    QPushButton* nextButton_ = nullptr;
    QTableWidget* suspects_ = nullptr;
    QWidget* savedFixRow_ = nullptr;
    QLabel* savedFixLabel_ = nullptr;
    QWidget* provenanceRow_ = nullptr;
    QLabel* provenanceLabel_ = nullptr;
    QPushButton* provenanceCompare_ = nullptr;
    QLabel* beforeAfter_ = nullptr;
};

} // namespace scalescope::ui
