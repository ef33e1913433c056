#pragma once
// Scales panel: weight-scale ranges of every quantized Linear and of FP8 word embeddings (click one
// to select it), the
// per-channel scales and FP8 exponent histogram of the selected Linear with its clipping and
// underflow shares, and, after a run, observed activation amax against each input scale's range.
#include <QWidget>

#include <vector>

#include "analysis/scale_statistics.h"
#include "panels/result_panel.h"
#include "report/chart_data.h"
#include "tasks/compare_runs.h"

class QComboBox;
class QLabel;

namespace scalescope::ui {

class ChartView;
class LinearSelection;
class StaleBanner;

class ScalesPanel : public QWidget, public ResultPanel {
    Q_OBJECT
public:
    // Follows `selection` (and selects through it) for the Linear its per-Linear charts show.
    explicit ScalesPanel(LinearSelection* selection, QWidget* parent = nullptr);

    void setStatistics(std::vector<LinearScaleStatistics> statistics);
    void setComparison(const ComparisonResult& comparison, const RunStamp& stamp);
    // Removes the activation statistics of the last run (the weight statistics stay).
    void clearResults(const QString& why) override;
    // An opened checkpoint's weight statistics, a run's activation statistics.
    void takeResult(const PanelResult& result) override;
    StaleBanner* banner() const override { return banner_; }
    QString reportName() const override { return QStringLiteral("activations"); }
    QString notRunReason() const override { return QStringLiteral("no run yet: activation statistics come from answering a question or filling a mask"); }
    // The weight charts always (they are the checkpoint's), the activation charts of a current run.
    void addToReport(ReportSection& section, bool runResultCurrent) const override;
    // File > Compare With...: checkpoint B's weight-scale ranges, the selected Linear's channel
    // scales and exponent histogram, and (with B's run on A's input) its activation charts beside
    // A's (second colour, legend); a chart B has nothing for says "B: not run" (overlayOrAbsent).
    // Empty statistics remove B, as does the next checkpoint's statistics.
    void setOverlay(std::vector<LinearScaleStatistics> b, std::shared_ptr<const ComparisonResult> run = nullptr);
    bool hasOverlay() const { return !overlay_.empty(); }
    // B's statistics and run as the overlay (setOverlay).
    void setCompareWith(std::shared_ptr<const CompareWithOutcome> b) override;
    void selectLinear(const QString& module);
    QString selectedLinear() const;
    // The line above the per-Linear charts: dtype, scale granularity, scale range, code shares.
    QString selectedSummary() const;

    std::vector<ChartView*> charts() const;
    ChartView* rangesView() const { return ranges_; }

signals:
    // The user picked a Linear (the box or a bar of the range chart).
    void linearSelected(const QString& module);

private:
    void showLinear(int index);
    std::string selectedLabel() const; // the chart label of the Linear shown ("L3.ffn.in"), "" when none
    void drawRanges();
    void drawActivations();
    // B's statistics of the Linear A's `s` is (by module name), null when B has none.
    const LinearScaleStatistics* overlayOf(const LinearScaleStatistics& s) const;
    ChartData activationRangeA_, activationSharesA_; // A's activation charts, before any overlay
    std::shared_ptr<const ComparisonResult> overlayRun_;
    std::vector<LinearScaleStatistics> statistics_;
    std::vector<LinearScaleStatistics> overlay_;
    std::vector<int> comboToStatistics_;
    QComboBox* linear_ = nullptr;
    QLabel* shares_ = nullptr;
    QLabel* activationNote_ = nullptr;
    ChartView* ranges_ = nullptr;
    ChartView* channels_ = nullptr;
    ChartView* exponents_ = nullptr;
    ChartView* activationRange_ = nullptr;
    ChartView* activationShares_ = nullptr;
    StaleBanner* banner_ = nullptr;
};

} // namespace scalescope::ui
