#pragma once
// Fill-mask panel: a text with the checkpoint's mask token, the top-k tokens of the run and the reference side by side
// with probability bars, agreement per mask, and a bar chart of the first mask's probabilities.
#include <QWidget>

#include <memory>

#include "panels/result_panel.h"
#include "report/chart_data.h"

class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;
class QTableView;

namespace scalescope::ui {

class ChartView;
class MaskPredictionsModel;
class StaleBanner;
class WorkbenchSession;

class FillMaskPanel : public QWidget, public ResultPanel {
    Q_OBJECT
public:
    // Texts go to `session` (fillRequested); the stale banner's Rerun fills the filled text again.
    explicit FillMaskPanel(WorkbenchSession* session, QWidget* parent = nullptr);

    // A text written with any family's mask token shows the open checkpoint's.
    void setText(const QString& text);
    // The open checkpoint's mask token ([MASK] for BERT); the current text is rewritten to use it.
    void setMaskToken(const QString& maskToken);
    QString maskToken() const { return maskToken_; }
    QString text() const;
    void showOutcome(const FillMaskOutcome& outcome, const QString& referenceLabel);
    // The filled text on screen (its inputs, for a rerun and the report); null when none.
    std::shared_ptr<const FillMaskOutcome> outcome() const { return outcome_; }
    // Fills the filled text again with its top-k (another mode, reference or what-if now holds);
    // nothing when no text was filled.
    void rerun();
    void setBusy(bool busy) override;
    void clearResults(const QString& why) override;
    void takeResult(const PanelResult& result) override;
    QString reportName() const override { return QStringLiteral("fill_mask"); }
    QString notRunReason() const override { return QStringLiteral("no mask filled yet"); }
    void addToReport(ReportSection& section, bool runResultCurrent) const override;
    // Whether the open checkpoint can fill masks; reason becomes the Fill button's tooltip.
    void setRunnable(bool runnable, const QString& reason);
    StaleBanner* banner() const override { return banner_; }

    MaskPredictionsModel* predictionsModel() const { return predictions_; }
    ChartView* chart() const { return chart_; }
    // File > Compare With...: B's probabilities of A's top tokens (first mask) beside A's
    // (overlayOrAbsent: "B: not run" until B has filled A's text). Null removes B.
    void setCompareWith(std::shared_ptr<const CompareWithOutcome> b) override;
    QPushButton* fillButton() const { return fill_; }
    QLabel* resultLabel() const { return result_; }

signals:
    void fillRequested(const QString& text, int topK);

private:
    void drawChart();
    ChartData chartA_; // A's chart, before any overlay
    std::vector<std::string> chartTokens_;
    std::vector<int64_t> chartTokenIds_;
    std::shared_ptr<const CompareWithOutcome> compareWith_;
    void requestFill();
    void updateFillEnabled();
    bool busy_ = false;
    bool runnable_ = true;
    QString notRunnableReason_;
    QString maskToken_;
    std::shared_ptr<const FillMaskOutcome> outcome_;
    StaleBanner* banner_ = nullptr;
    QLineEdit* text_ = nullptr;
    QSpinBox* topK_ = nullptr;
    QPushButton* fill_ = nullptr;
    QLabel* result_ = nullptr;
    MaskPredictionsModel* predictions_ = nullptr;
    QTableView* view_ = nullptr;
    ChartView* chart_ = nullptr;
};

} // namespace scalescope::ui
