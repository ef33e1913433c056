#pragma once
// Triage, the first tab: from "accuracy dropped" to "this Linear" on one screen. A verdict card
// (the final SQNR, whether the answers agree, the EM/F1 change when evaluated, each graded by the
// stated thresholds of analysis/verdict.h, with the state it holds for), the ranked suspects (the
// sweep's ranking when there is one, else the Linears with the worst SQNR and the findings that
// name them), each with Run in Float, Show Scales and Show Errors, what each runtime will do with
// the checkpoint, and what to do next in one sentence with its button.
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
    // Highlights the suspect row of this Linear (none when it is not a suspect); emits nothing.
    void selectLinear(const QString& module);

    QLabel* verdictLabel() const { return verdict_; }
    QLabel* consumersLabel() const { return consumers_; }
    QLabel* nextStepLabel() const { return next_; }
    QPushButton* nextStepButton() const { return nextButton_; }
    QTableWidget* suspectsTable() const { return suspects_; }
    // The overall grade word ("good", "fair", "poor") of the current parts, "" without any.
    QString overallGrade() const;
    // The suspects' module names, in the order shown.
    QStringList suspects() const;

    enum class NextStep { None, Answer, Sweep, SaveFixed, Evaluate };
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

protected:
    void currentStampChanged(const RunStamp& now) override;

private:
    struct Suspect {
        QString module, label, why;
    };
    void refresh();
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
    RunStamp now_;
    bool busy_ = false;
    NextStep nextStep_ = NextStep::None;
    QStringList fixModules_;
    QString nextSentence_; // plain text, for the report
    std::vector<Suspect> shown_;

    QLabel* verdict_ = nullptr;
    QLabel* consumers_ = nullptr;
    QLabel* next_ = nullptr;
    QLabel* suspectsTitle_ = nullptr;
    QPushButton* nextButton_ = nullptr;
    QTableWidget* suspects_ = nullptr;
};

} // namespace scalescope::ui
