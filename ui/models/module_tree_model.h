#pragma once
// The checkpoint's tensors as a tree of modules, split at the dots of their names
// (roberta > encoder > layer > 0 > attention > self > query > weight). Siblings are ordered with
// digit runs compared as numbers, so layer 2 comes before layer 10.
// Columns: the path segment, the dtypes of the tensors below (the dtype holding most elements
// first), how many tensors lie below, and how many elements they hold. A leaf is a tensor; a name
// that is both a tensor and a prefix of other tensors is a tensor node with children.
// Roles as in tensor_table_model.h: SortRole (natural-order key for names, doubles for counts) and
// SubjectRole (the full dotted name: the tensor's for a tensor, the module path for a module).
// The last column is the what-if toggle: a quantized Linear's node is checkable there ("run in
// float", docs/ARCHITECTURE.md "Precision overrides"); checking or unchecking it emits floatLinearsEdited with
// the whole set, which the window hands to the session and echoes back with setFloatLinears.
#include <QAbstractItemModel>
#include <QSet>
#include <QStringList>

#include <memory>
#include <vector>

#include "models/tensor_table_model.h"

namespace scalescope::ui {

class ModuleTreeModel : public QAbstractItemModel {
    Q_OBJECT
public:
    enum Column { NameColumn, DtypeColumn, TensorCountColumn, ElementsColumn, FloatColumn, ColumnCount };
    enum Role { SortRole = Qt::UserRole + 1, SubjectRole = Qt::UserRole + 2 };

    explicit ModuleTreeModel(QObject* parent = nullptr);
    ~ModuleTreeModel() override;

    // Replaces the whole tree.
    void setTensors(const std::vector<TensorRow>& tensors);
    void clear();

    // The Linears that may be toggled (the quantized ones), and those shown as running in float.
    void setQuantizedLinears(const QStringList& modules);
    void setFloatLinears(const QStringList& modules);
    QStringList floatLinears() const;
    bool isQuantizedLinear(const QString& module) const { return quantizedLinears_.contains(module); }

    // Column-0 index of the tensor or module with this full dotted name; invalid when absent.
    QModelIndex indexForName(const QString& fullName) const;
    bool isTensor(const QModelIndex& index) const;

    QModelIndex index(int row, int column, const QModelIndex& parent = QModelIndex()) const override;
    QModelIndex parent(const QModelIndex& child) const override;
    int rowCount(const QModelIndex& parent = QModelIndex()) const override;
    int columnCount(const QModelIndex& parent = QModelIndex()) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
    Qt::ItemFlags flags(const QModelIndex& index) const override;
    bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;

signals:
    // The user checked or unchecked a Linear: every Linear now meant to run in float.
    void floatLinearsEdited(const QStringList& modules);

private:
    struct Node;
    const Node* nodeOf(const QModelIndex& index) const;

    std::unique_ptr<Node> root_;
    QSet<QString> quantizedLinears_;
    QSet<QString> floatLinears_;
};

} // namespace scalescope::ui
