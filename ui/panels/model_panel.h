#pragma once
// Model panel: the module tree, the tensor table with scale statistics (both sortable and
// filterable), the diagnostics list and what each runtime (AIU, vLLM, compressed-tensors) will do
// with the checkpoint; clicking a finding selects its tensor or Linear in both views.
// The tree's Float column (and its context menu) toggles "run in float" per quantized Linear: the
// what-if of docs/ARCHITECTURE.md "Precision overrides", applied by the window to every later run.
#include <QWidget>

#include <memory>
#include <string>

#include "panels/result_panel.h"

class QLineEdit;
class QPoint;
class QSortFilterProxyModel;
class QTableView;
class QTreeView;
class QLabel;
class QTabWidget;

namespace scalescope::ui {

class ConsumersModel;
class LinearSelection;
class DiagnosticsModel;
class ModuleTreeModel;
class TensorTableModel;

class ModelPanel : public QWidget, public ResultPanel {
    Q_OBJECT
public:
    // The subject shown follows `selection`, and a Linear picked here is selected there.
    explicit ModelPanel(LinearSelection* selection, QWidget* parent = nullptr);

    void showCheckpoint(const CheckpointInfo& info);
    // What it shows is the open checkpoint: no run result, no stamp, nothing to clear.
    void takeResult(const PanelResult& result) override;
    void clearResults(const QString& /*why*/) override { }
    StaleBanner* banner() const override { return nullptr; }
    QString reportName() const override { return QStringLiteral("model"); }
    // The tensor and diagnostics tables, the architecture and the diagnostics counts.
    void addToReport(ReportSection& section, bool runResultCurrent) const override;
    // Selects a tensor (or a module's weight) in the tree and the table.
    void selectSubject(const QString& subject);
    // The tensor table shows this module's tensors only (the tree's selection); empty: all.
    void filterTensorsTo(const QString& module);
    QLineEdit* tensorFilter() const { return tensorFilter_; }
    // The Linears the tree shows as running in float (the session's set, echoed back).
    void setFloatLinears(const QStringList& modules);

    TensorTableModel* tensorModel() const { return tensors_; }
    DiagnosticsModel* diagnosticsModel() const { return diagnostics_; }
    ConsumersModel* consumersModel() const { return consumers_; }
    QTableView* consumersView() const { return consumersView_; }
    QTableView* tensorView() const { return tensorView_; }
    QTableView* diagnosticsView() const { return diagnosticsView_; }
    QTreeView* treeView() const { return treeView_; }
    ModuleTreeModel* treeModel() const { return tree_; }

signals:
    void linearSelected(const QString& module);
    // The user toggled a Linear: every Linear now meant to run in float.
    void floatLinearsEdited(const QStringList& modules);

private:
    QWidget* createTree();
    QWidget* createTensorTable();
    QWidget* createDiagnostics();
    QWidget* createConsumers();
    void connectSelection();
    void showTreeMenu(const QPoint& position);

    TensorTableModel* tensors_ = nullptr;
    ModuleTreeModel* tree_ = nullptr;
    DiagnosticsModel* diagnostics_ = nullptr;
    ConsumersModel* consumers_ = nullptr;
    QSortFilterProxyModel* tensorProxy_ = nullptr;
    QSortFilterProxyModel* treeProxy_ = nullptr;
    QSortFilterProxyModel* diagnosticsProxy_ = nullptr;
    QTableView* tensorView_ = nullptr;
    QTreeView* treeView_ = nullptr;
    QTableView* diagnosticsView_ = nullptr;
    QTableView* consumersView_ = nullptr;
    QTabWidget* findingsTabs_ = nullptr;
    QLabel* summary_ = nullptr;
    QLabel* diagnosticsSummary_ = nullptr;
    QLabel* consumersSummary_ = nullptr;
    QLineEdit* tensorFilter_ = nullptr;
    QStringList linears_; // every Linear of the checkpoint shown (quantized or not)
    std::string architecture_; // of the checkpoint shown; empty before the first
};

} // namespace scalescope::ui
