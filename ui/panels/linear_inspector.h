#pragma once
// The Linear inspector: everything known about the one Linear the user selected (LinearSelection),
// in a dockable side panel. Its scheme and the config rule that chose it, its weight scales (range
// and the per-channel plot), the last run's input clipping and flush shares, its SQNR in and out,
// its float16 headroom, its sweep rank with both sweep measures, its findings, and the what-if
// Float toggle. It reads the results the window hands every panel (PanelResult); a part made in
// another state than the current one says so instead of passing for current.
#include <QWidget>

#include <memory>

#include "panels/result_panel.h"

class QCheckBox;
class QLabel;
class QPushButton;

namespace scalescope::ui {

class ChartView;
class LinearSelection;

class LinearInspector : public QWidget {
    Q_OBJECT
public:
    // Shows the Linear `selection` holds (nothing when it is cleared).
    explicit LinearInspector(LinearSelection* selection, QWidget* parent = nullptr);

    // An opened checkpoint resets everything; a comparison or a sweep replaces that part.
    void takeResult(const PanelResult& result);
    void setCurrentStamp(const RunStamp& now);
    // The Linear to show (empty: none); the Float toggle follows `floatLinears`.
    void showLinear(const QString& module);
    void setFloatLinears(const QStringList& modules);

    // File > Compare With...: checkpoint B beside the open one (A); the inspector then shows A's
    // and B's scheme and scale lines for the selected Linear and the fields that differ. Null
    // removes it; opening a checkpoint removes it too.
    void setCompareWith(std::shared_ptr<const CompareWithOutcome> b);
    QString linear() const { return module_; }
    QLabel* details() const { return details_; }
    QCheckBox* floatToggle() const { return float_; }
    ChartView* scalesChart() const { return scales_; }

signals:
    // The user ticked or cleared "Run in float" for this Linear.
    void floatToggled(const QString& module, bool inFloat);
    void showScalesRequested(const QString& module);
    void showErrorsRequested(const QString& module);

private:
    void refresh();
    QString schemeSection() const;
    QString runSection() const;
    QString sweepSection() const;
    QString findingsSection() const;
    QString compareSection() const;
    // "" when `stamp` is the current state; else a note naming what changed since.
    QString staleNote(const RunStamp& stamp) const;

    std::shared_ptr<const CheckpointInfo> checkpoint_;
    std::shared_ptr<const ComparisonResult> comparison_;
    std::shared_ptr<const CompareWithOutcome> compareWith_;
    RunStamp comparisonStamp_;
    std::shared_ptr<const SensitivityResult> sweep_;
    RunStamp sweepStamp_;
    RunStamp now_;
    QString module_;
    QStringList floatLinears_;

    QLabel* title_ = nullptr;
    QLabel* details_ = nullptr;
    ChartView* scales_ = nullptr;
    QCheckBox* float_ = nullptr;
    QWidget* actions_ = nullptr; // the Show in: buttons
    QPushButton* showScales_ = nullptr;
    QPushButton* showErrors_ = nullptr;
};

} // namespace scalescope::ui
