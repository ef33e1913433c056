#pragma once
// Classify panel (a sequence classifier, a cross-encoder's score too): a text and an optional second
// text (the pair); out: each side's label and probabilities per label as bars (a single-label
// softmax, a multi-label sigmoid per label with its 0.5 decision, a score's raw logit), whether the
// label flips (highlighted), and KL(reference || run).
#include <QWidget>

#include <memory>

#include "panels/result_panel.h"

class QLabel;
class QLineEdit;
class QPushButton;
class QStandardItemModel;
class QTableView;

namespace scalescope::ui {

class ChartView;
class RunButtonState;
class StaleBanner;
class WorkbenchSession;

class ClassifyPanel : public QWidget, public ResultPanel {
    Q_OBJECT
public:
    explicit ClassifyPanel(WorkbenchSession* session, QWidget* parent = nullptr);
    ~ClassifyPanel() override;

    enum Column { LabelColumn, RunProbabilityColumn, ReferenceProbabilityColumn, RunLogitColumn, ReferenceLogitColumn };

    void setRunnable(bool runnable, const QString& reason);
    void setInputs(const QString& text, const QString& pair);
    QString text() const;
    QString pair() const;
    void rerun();

    void takeResult(const PanelResult& result) override;
    void clearResults(const QString& why) override;
    StaleBanner* banner() const override { return banner_; }
    QString reportName() const override { return QStringLiteral("classify"); }
    QString notRunReason() const override { return QStringLiteral("no text classified yet"); }
    void addToReport(ReportSection& section, bool runResultCurrent) const override;
    void setBusy(bool busy) override;

    std::shared_ptr<const ClassifyOutcome> outcome() const { return outcome_; }
    QPushButton* classifyButton() const { return classify_; }
    QLabel* resultLabel() const { return result_; }
    // Shown only when the two sides decide differently.
    QLabel* flipLabel() const { return flip_; }
    QStandardItemModel* labelsModel() const { return labels_; }
    ChartView* probabilitiesChart() const { return chart_; }

signals:
    void classifyRequested(const QString& text, const QString& pair);

private:
    void requestClassify();
    void showOutcome(const ClassifyOutcome& outcome, const QString& referenceLabel);
    void showLabels(const ClassifyResult& result);

    std::shared_ptr<const ClassifyOutcome> outcome_;
    StaleBanner* banner_ = nullptr;
    QLineEdit* text_ = nullptr;
    QLineEdit* pair_ = nullptr;
    QPushButton* classify_ = nullptr;
    std::unique_ptr<RunButtonState> runState_;
    QLabel* flip_ = nullptr;
    QLabel* result_ = nullptr;
    QStandardItemModel* labels_ = nullptr;
    QTableView* labelsView_ = nullptr;
    ChartView* chart_ = nullptr;
};

} // namespace scalescope::ui
