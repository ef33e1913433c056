#pragma once
// Evaluate panel: a SQuAD v1.1/v2.0 file, progress (the window's bar and Cancel), the summary of the
// run and the reference, the sortable table of questions they answer differently (click one to
// open it in the Ask panel), and charts of the scores and of logits SQNR for agreeing vs
// disagreeing questions. A cancelled evaluation shows what finished.
#include <QWidget>

#include <memory>

#include "demo_catalog.h"
#include "panels/result_panel.h"
#include "report/chart_data.h"
#include "tasks/evaluate.h"
#include "session_results.h"

class QDoubleSpinBox;
class QHBoxLayout;
class QLabel;
class QLineEdit;
class QPushButton;
class QSortFilterProxyModel;
class QSpinBox;
class QTableView;

namespace scalescope::ui {

class ChartView;
class DisagreementsModel;
class StaleBanner;
class WorkbenchSession;

class EvaluatePanel : public QWidget, public ResultPanel {
    Q_OBJECT
public:
    // Evaluations run in `session` (evaluateRequested); its progress and failures show here.
    explicit EvaluatePanel(WorkbenchSession* session, QWidget* parent = nullptr);

    void setSquadFile(const QString& path);
    void showProgress(int done, int total, double questionsPerSecond, int windowsDone);
    void showResult(std::shared_ptr<const EvaluationResult> result, const RunStamp& stamp);
    // A warning above the results (the demo models know only their own corpus); empty hides it.
    void setWarning(const QString& text);
    // The demo: a demo checkpoint evaluated on another file than the demo corpus gets the warning.
    void setDemoCatalog(const DemoCatalog& demo) { demo_ = demo; }
    QLabel* warningLabel() const { return warning_; }
    // The evaluation stopped with an error: the summary says so instead of "Evaluating...".
    void showFailure(const QString& message);
    void setBusy(bool busy) override;
    void clearResults(const QString& why) override;
    void takeResult(const PanelResult& result) override;
    QString reportName() const override { return QStringLiteral("evaluation"); }
    QString notRunReason() const override { return QStringLiteral("no SQuAD file evaluated yet"); }
    // The charts and disagreements table, and where inf/NaN starts over the dataset in the summary.
    void addToReport(ReportSection& section, bool runResultCurrent) const override;
    // Whether the open checkpoint can be evaluated; reason becomes the button's tooltip.
    void setRunnable(bool runnable, const QString& reason);
    StaleBanner* banner() const override { return banner_; }
    // Asks for an evaluation of the file shown, as the Evaluate button does.
    void requestEvaluation();

    DisagreementsModel* disagreementsModel() const { return disagreements_; }
    QTableView* disagreementsView() const { return view_; }
    QPushButton* evaluateButton() const { return evaluate_; }
    QDoubleSpinBox* nullThresholdBox() const { return nullThreshold_; }
    QLabel* summaryLabel() const { return summary_; }
    std::vector<ChartView*> charts() const;
    // The result shown, null when none.
    std::shared_ptr<const EvaluationResult> result() const { return result_; }
    // File > Compare With...: B is never evaluated here, so while B is compared the charts name A's
    // series "A: ..." and their titles say "B: not run" (overlayOrAbsent). Null removes B.
    void setCompareWith(std::shared_ptr<const CompareWithOutcome> b) override;

signals:
    void evaluateRequested(const QString& squadFile, int maxSamples, double nullThreshold);
    void openInAsk(const QString& question, const QString& context);

private:
    QHBoxLayout* makeInputRow();
    void connectSession();
    void warnIfDemoEvaluatesOtherText(const QString& squadFile);
    WorkbenchSession* session_ = nullptr;
    DemoCatalog demo_;
    void sizeColumns();
    static QString nonFiniteText(const EvaluationResult& result, const RunStamp& stamp);
    QLineEdit* file_ = nullptr;
    QSpinBox* maxSamples_ = nullptr;
    QDoubleSpinBox* nullThreshold_ = nullptr;
    QPushButton* evaluate_ = nullptr;
    QLabel* summary_ = nullptr;
    DisagreementsModel* disagreements_ = nullptr;
    QSortFilterProxyModel* proxy_ = nullptr;
    QTableView* view_ = nullptr;
    ChartView* scores_ = nullptr;
    ChartView* sqnr_ = nullptr;
    std::shared_ptr<const EvaluationResult> result_;
    void drawCharts();
    ChartData scoresA_, sqnrA_; // A's charts, before any overlay
    std::shared_ptr<const CompareWithOutcome> compareWith_;
    QLabel* emptyNote_ = nullptr;
    QLabel* warning_ = nullptr;
    StaleBanner* banner_ = nullptr;
    bool busy_ = false;
    bool runnable_ = true;
    bool evaluating_ = false;
    QString notRunnableReason_;
};

} // namespace scalescope::ui
