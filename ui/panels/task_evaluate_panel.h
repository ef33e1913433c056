#pragma once
// Evaluate Tasks panel: a sequence task's dataset (STS pairs, a BEIR retrieval folder, classification
// rows) evaluated on both sides as `evaluate --sts | --retrieval | --classification` does
// (tasks/task_evaluation.h), as a cancellable job with the window's progress bar. Out: the metrics of
// the run and the reference side by side (Spearman x 100; nDCG@10, MRR@10, recall@100 and the queries
// whose top 10 changed; accuracy, macro F1, flips, mean KL), a chart of them, and the inputs whose
// result changed; each of those opens in its task panel (an STS pair in Embed, or in Classify for a
// cross-encoder; a query in Rerank with its top documents; a row in Classify).
//
// A panel of its own rather than a mode of the SQuAD Evaluate panel: every part of that one is a
// question's (EM/F1, the null threshold, the answers table, the link to Ask), while these take other
// files, other metrics and open in other panels. The window enables the one the open head can run.
#include <QWidget>

#include <memory>

#include "demo_catalog.h"
#include "panels/result_panel.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;
class QStandardItemModel;
class QTableView;

namespace scalescope::ui {

class ChartView;
class RunButtonState;
class StaleBanner;
class WorkbenchSession;

class TaskEvaluatePanel : public QWidget, public ResultPanel {
    Q_OBJECT
public:
    explicit TaskEvaluatePanel(WorkbenchSession* session, QWidget* parent = nullptr);
    ~TaskEvaluatePanel() override;

    // The metrics table: one row per metric.
    enum MetricColumn { MetricNameColumn, RunColumn, ReferenceColumn, ChangeColumn };
    // The role of the changed table's first cell that holds the input's index in the dataset.
    static constexpr int kInputIndexRole = 0x0100 + 2; // Qt::UserRole + 2

    // The demo's datasets are offered while one of its task checkpoints is open.
    void setDemoCatalog(const DemoCatalog& demo) { demo_ = demo; }
    void setKind(TaskDatasetKind kind);
    TaskDatasetKind kind() const;
    // Whether the open checkpoint can evaluate `kind` (the kind box greys out the others).
    bool kindAvailable(TaskDatasetKind kind) const;
    void setDatasetPath(const QString& path);
    QString datasetPath() const;
    // The demo's dataset of this kind (folder/tasks/...), whether or not it exists.
    QString demoDataset(TaskDatasetKind kind) const;
    void setMaxSamples(int rows);
    // Asks for an evaluation of the dataset shown, as the Evaluate button does.
    void requestEvaluation();
    // Opens the changed table's row (in its current order) in its task panel.
    void openChangedRow(int row);

    void takeResult(const PanelResult& result) override;
    void clearResults(const QString& why) override;
    StaleBanner* banner() const override { return banner_; }
    QString reportName() const override { return QStringLiteral("task_evaluation"); }
    QString notRunReason() const override { return QStringLiteral("no task dataset evaluated yet"); }
    void addToReport(ReportSection& section, bool runResultCurrent) const override;
    void setBusy(bool busy) override;

    std::shared_ptr<const TaskEvaluationOutcome> outcome() const { return outcome_; }
    QPushButton* evaluateButton() const { return evaluate_; }
    QPushButton* openButton() const { return open_; }
    QLabel* summaryLabel() const { return summary_; }
    QStandardItemModel* metricsModel() const { return metrics_; }
    QStandardItemModel* changedModel() const { return changed_; }
    QTableView* changedView() const { return changedView_; }
    QList<ChartView*> charts() const { return {metricsChart_, detailChart_}; }

signals:
    void evaluateRequested(scalescope::ui::TaskDatasetKind kind, const QString& path, int maxSamples);
    void openInEmbed(const QStringList& texts);
    void openInRerank(const QString& query, const QStringList& passages);
    void openInClassify(const QString& text, const QString& pair);

private:
    QWidget* makeInputRow(QWidget* parent);
    void browse();
    void showCheckpoint(const CheckpointInfo& info);
    void showOutcome(const TaskEvaluationOutcome& outcome, const QString& referenceLabel);
    void showSts(const TaskEvaluationOutcome& outcome);
    void showRetrieval(const TaskEvaluationOutcome& outcome);
    void showClassification(const TaskEvaluationOutcome& outcome);
    void addMetric(const QString& name, double run, double reference, int decimals);
    void addBetweenSides(const QString& name, double value, const QString& text, int decimals);
    void sizeChangedColumns(const QList<int>& textColumns);
    void fitMetricsHeight();

    DemoCatalog demo_;
    bool demoOpen_ = false;
    std::shared_ptr<const TaskEvaluationOutcome> outcome_;
    StaleBanner* banner_ = nullptr;
    QComboBox* kind_ = nullptr;
    QLineEdit* path_ = nullptr;
    QSpinBox* maxSamples_ = nullptr;
    QPushButton* evaluate_ = nullptr;
    std::unique_ptr<RunButtonState> runState_;
    QLabel* summary_ = nullptr;
    QStandardItemModel* metrics_ = nullptr;
    QTableView* metricsView_ = nullptr;
    QStandardItemModel* changed_ = nullptr;
    QTableView* changedView_ = nullptr;
    QPushButton* open_ = nullptr;
    ChartView* metricsChart_ = nullptr;
    ChartView* detailChart_ = nullptr;
    bool evaluating_ = false;
};

} // namespace scalescope::ui
