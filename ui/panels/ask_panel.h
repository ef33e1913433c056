#pragma once
// Ask panel: question and context editors, run on Ctrl+Enter; the best answers of the run and the
// reference highlighted in the context; both n-best lists side by side; start/end logits over the
// tokens of the window that holds the answer.
#include <QWidget>

#include <memory>

#include "demo_catalog.h"
#include "panels/result_panel.h"
#include "report/chart_data.h"
#include "tasks/question_answering.h"

class QCheckBox;
class QDoubleSpinBox;
class QLabel;
class QLayout;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;
class QSpinBox;
class QTableView;

namespace scalescope::ui {

struct AskOutcome;
class AnswersModel;
class ChartView;
class StaleBanner;
class WorkbenchSession;

class AskPanel : public QWidget, public ResultPanel {
    Q_OBJECT
public:
    // Questions go to `session` (askRequested); the stale banner's Rerun asks the answered one again.
    explicit AskPanel(WorkbenchSession* session, QWidget* parent = nullptr);

    void setInputs(const QString& question, const QString& context);
    QString question() const;
    QString context() const;
    QaOptions options() const;
    // Shows these inputs and asks them at once, without the checks of the Answer button (Evaluate's
    // "open in Ask", a demo's first question).
    void askAbout(const QString& question, const QString& context);
    // Asks the answered question again with its options (another mode, reference or what-if now
    // holds); nothing when no question was answered.
    void rerun();
    // The demo's checkpoints and passages: a demo checkpoint's answer about other text gets a
    // note that it means nothing.
    void setDemoCatalog(const DemoCatalog& demo) { demo_ = demo; }
    void showOutcome(const AskOutcome& outcome, const QString& referenceLabel);
    // The answered question on screen (its inputs, for a rerun and the report); null when none.
    std::shared_ptr<const AskOutcome> outcome() const { return outcome_; }
    void setBusy(bool busy) override;
    // Removes every result (answers, highlights, logits) and says why in the result line.
    void clearResults(const QString& why) override;
    void takeResult(const PanelResult& result) override;
    QString reportName() const override { return QStringLiteral("ask"); }
    QString notRunReason() const override { return QStringLiteral("no question answered yet"); }
    void addToReport(ReportSection& section, bool runResultCurrent) const override;
    // Whether the open checkpoint can answer; reason becomes the Answer button's tooltip.
    void setRunnable(bool runnable, const QString& reason);

    AnswersModel* answersModel() const { return answers_; }
    ChartView* logitsChart() const { return logits_; }
    QPlainTextEdit* contextEdit() const { return context_; }
    QLineEdit* questionEdit() const { return question_; }
    QPushButton* askButton() const { return ask_; }
    QLabel* resultLabel() const { return result_; }
    QTableView* answersView() const { return answersView_; }
    StaleBanner* banner() const override { return banner_; }
    // File > Compare With...: B's start/end logits on the same window beside A's (overlayOrAbsent:
    // "B: not run" until B has answered A's question). Null removes B.
    void setCompareWith(std::shared_ptr<const CompareWithOutcome> b) override;

signals:
    void askRequested(const QString& question, const QString& context, const scalescope::QaOptions& options);

private:
    void createInputs();
    QLayout* optionsRow();
    void createResults();
    void layOut();
    void connectKeys();
    void highlightAnswers(const AskOutcome& outcome);
    void warnIfOutsideDemoCorpus(const AskOutcome& outcome);
    DemoCatalog demo_;
    void showLogits(const AskOutcome& outcome);
    void drawLogits();
    ChartData logitsA_; // A's chart, before any overlay
    std::vector<std::string> logitTokens_;
    std::size_t logitWindow_ = 0;
    std::shared_ptr<const CompareWithOutcome> compareWith_;
    void requestAsk();
    void updateAskEnabled();
    bool busy_ = false;
    bool runnable_ = true;
    QString notRunnableReason_;
    bool showingResult_ = false;
    std::shared_ptr<const AskOutcome> outcome_;
    StaleBanner* banner_ = nullptr;
    QLineEdit* question_ = nullptr;
    QPlainTextEdit* context_ = nullptr;
    QPushButton* ask_ = nullptr;
    QSpinBox* topK_ = nullptr;
    QSpinBox* maxAnswerLength_ = nullptr;
    QCheckBox* allowNoAnswer_ = nullptr;
    QDoubleSpinBox* nullThreshold_ = nullptr;
    QLabel* result_ = nullptr;
    AnswersModel* answers_ = nullptr;
    QTableView* answersView_ = nullptr;
    ChartView* logits_ = nullptr;
};

// The QString (UTF-16) position of a code-point offset, as the engine's offsets count characters.
int stringPositionOfCodePoint(const QString& text, int codePoint);

} // namespace scalescope::ui
