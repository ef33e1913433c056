#pragma once
// Evaluate panel: a SQuAD v1.1/v2.0 file, progress (the window's bar and Cancel), the summary of the
// run and the reference, the sortable table of questions they answer differently (click one to
// open it in the Ask panel), and charts of the scores and of logits SQNR for agreeing vs
// disagreeing questions. A cancelled evaluation shows what finished.
#include <QWidget>

#include <memory>

#include "tasks/evaluate.h"

class QLabel;
class QLineEdit;
class QPushButton;
class QSortFilterProxyModel;
class QSpinBox;
class QTableView;

namespace scalescope::ui {

class ChartView;
class DisagreementsModel;

class EvaluatePanel : public QWidget {
    Q_OBJECT
public:
    explicit EvaluatePanel(QWidget* parent = nullptr);

    void setSquadFile(const QString& path);
    void showProgress(int done, int total, double questionsPerSecond);
    void showResult(std::shared_ptr<const EvaluationResult> result);
    void setBusy(bool busy);

    DisagreementsModel* disagreementsModel() const { return disagreements_; }
    QTableView* disagreementsView() const { return view_; }
    QPushButton* evaluateButton() const { return evaluate_; }
    QLabel* summaryLabel() const { return summary_; }
    std::vector<ChartView*> charts() const;

signals:
    void evaluateRequested(const QString& squadFile, int maxSamples);
    void openInAsk(const QString& question, const QString& context);

private:
    QLineEdit* file_ = nullptr;
    QSpinBox* maxSamples_ = nullptr;
    QPushButton* evaluate_ = nullptr;
    QLabel* summary_ = nullptr;
    DisagreementsModel* disagreements_ = nullptr;
    QSortFilterProxyModel* proxy_ = nullptr;
    QTableView* view_ = nullptr;
    ChartView* scores_ = nullptr;
    ChartView* sqnr_ = nullptr;
    std::shared_ptr<const EvaluationResult> result_;
};

} // namespace scalescope::ui
