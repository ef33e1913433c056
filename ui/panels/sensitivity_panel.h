#pragma once
// Sensitivity panel: runs the sweep (tasks/sensitivity.h) on the last question's or mask's input
// and draws one pair of measures for every entry, live and done alike: "dB recovered when kept
// float" (the bars the ranking follows) and "dB lost when alone in FP8" beside them. Live entries
// are ranked, spread-estimated and tie-marked exactly as the finished sweep ranks them
// (partialSensitivityResult), so nothing changes meaning when the sweep ends; entries within the
// run-to-run spread carry "=N" (tied with rank N) on the axis, in the tooltip and in the table.
// Cancel keeps what finished. The suggestion is a counted list ("Keep 2 Linears float") that says
// when it holds a tie group; the cause labels and which consumers can load the suggestion follow.
// Save Fixed Checkpoint writes it with keep-float (a unit's row or suggestion gives all its
// Linears) beside the user's files (setSaveFolder), recording what the sweep verified it against;
// the line that confirms it opens the fix or compares it with the original. An entry within the
// run-to-run spread of zero reads "no measurable effect" instead of a number or a bar. Clicking a
// bar selects the Linear.
#include <QWidget>

#include <memory>

#include "panels/result_panel.h"
#include "tasks/sensitivity.h"
#include "session_results.h"

class QComboBox;
class QLabel;
class QPushButton;
class QTableWidget;

namespace scalescope::ui {

class ChartView;
class LinearSelection;
class WorkbenchSession;

class SensitivityPanel : public QWidget, public ResultPanel {
    Q_OBJECT
public:
    // Sweeps and Save Fixed Checkpoint run in `session`, whose entries, messages and failures show
    // here; the shaded entry follows `selection`, and a click on a bar or row selects there.
    SensitivityPanel(WorkbenchSession* session, LinearSelection* selection, QWidget* parent = nullptr);

    void addEntry(const RunStamp& stamp, std::shared_ptr<const SensitivityEntry> entry);
    void showResult(std::shared_ptr<const SensitivityResult> result, const RunStamp& stamp);
    void showMessage(const QString& text);
    void setBusy(bool busy) override;
    void clearResults(const QString& why) override;
    void takeResult(const PanelResult& result) override;
    // Holds the sweep's stamp, so the window clears the sweep when another checkpoint opens (its
    // modules would be the previous model's) and marks it stale when the mode, reference, device or
    // float Linears change.
    StaleBanner* banner() const override { return banner_; }
    QString reportName() const override { return QStringLiteral("sensitivity"); }
    QString notRunReason() const override { return QStringLiteral("no sensitivity sweep run yet"); }
    // The sweep chart and table, and summary["sensitivity"]: sensitivityJson, as `sensitivity --json`.
    void addToReport(ReportSection& section, bool runResultCurrent) const override;
    const SensitivityResult& result() const { return result_; }
    ChartView* chart() const { return chart_; }
    QTableWidget* table() const { return table_; }
    // The baseline, the target and the suggestion (or why there is none), as shown.
    QLabel* summaryLabel() const { return summary_; }
    enum Column { RankColumn, ModuleColumn, RecoveredColumn, LostAloneColumn, TieColumn, AgreesColumn, CauseColumn, ColumnCount };
    QPushButton* runButton() const { return run_; }
    QPushButton* saveButton() const { return save_; }
    QComboBox* granularityBox() const { return granularity_; }
    QLabel* validityLabel() const { return validity_; } // which consumers can load the suggestion
    // Shades the entry that holds this Linear (its own, or its unit's) and selects its row; emits nothing.
    void selectLinear(const QString& module);
    // File > Compare With...: B never runs a sweep, so while B is compared the chart names A's
    // series "A: ..." and its title says "B: not run" (overlayOrAbsent). Null removes B.
    void setCompareWith(std::shared_ptr<const CompareWithOutcome> b) override;
    // Asks for a new folder and has the session write the open checkpoint there with `modules`
    // float (Save Fixed Checkpoint here and on the triage card).
    void saveFixedCheckpoint(const QStringList& modules);
    // The folder Save Fixed Checkpoint proposes to write into (MainWindow: beside the user's own
    // checkpoints, never the bundled demo folder); "" proposes the open checkpoint's own folder.
    void setSaveFolder(const QString& folder) { saveFolder_ = folder; }
    QString proposedFixFolder() const;

signals:
    void sweepRequested(const QString& granularity);
    void linearSelected(const QString& module);
    // Save fixed checkpoint...: the suggested Linears (or the selected rows') to keep float.
    void keepFloatRequested(const QStringList& modules);
    // The saved-fix line's buttons, as on the triage card.
    void openFixedRequested(const QString& folder, const QString& original);

private:
    void redraw();
    QString liveSummary() const;
    QString finishedSummary() const;
    void showValidity();
    void fillTable();
    QStringList modulesToKeep() const;
    void requestSweep();
    void connectSessionAndSelection(LinearSelection* selection);
    void createSavedFixRow();
    void showSavedFix(const QString& folder, const QString& summary);

    WorkbenchSession* session_ = nullptr;

    QComboBox* granularity_ = nullptr;
    QPushButton* run_ = nullptr;
    QPushButton* save_ = nullptr;
    QLabel* summary_ = nullptr;
    QLabel* validity_ = nullptr;
    ChartView* chart_ = nullptr;
    QTableWidget* table_ = nullptr;
    StaleBanner* banner_ = nullptr;
    QWidget* savedFixRow_ = nullptr;
    QLabel* savedFix_ = nullptr;
    QString savedFolder_, savedFrom_, saveFolder_;
    SensitivityResult result_;
    std::shared_ptr<const CompareWithOutcome> compareWith_;
    std::vector<SensitivityEntry> live_; // the entries of the running sweep, in the order they finished
    RunStamp stamp_;
};

} // namespace scalescope::ui
