#pragma once
// The checkpoint's tensors as a flat table: name, dtype, shape, element count, on the
// `<module>.weight` row of every Linear the quantization_config group that picked it and the rule
// that did (or the ignore entry) and its FMS name (what the AIU stack calls it, from the family
// table), and on the rows of quantized Linears their scale statistics.
//
// Roles shared by every ScaleScope item model (same numbers in each, so a view or proxy can use any):
//   Qt::DisplayRole  formatted text; Qt::ToolTipRole the exact value (shortest round-trip text);
//   SortRole         the raw value: a double for numbers, a QString for text, invalid when the cell
//                    is empty or the number is NaN (QSortFilterProxyModel puts invalid values last);
//   SubjectRole      the full tensor or module name the row is about, for jumping between views.
// Data is replaced as a whole by setTensors(); the model never edits it.
#include <QAbstractTableModel>
#include <QHash>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/scale_statistics.h"

namespace scalescope::ui {

// One tensor as the model needs it; plain data so it can be built off the GUI thread.
struct TensorRow {
    TensorRow() = default;
    TensorRow(std::string tensor, std::string type, std::vector<int64_t> dims, std::string fms = {}, std::string fmsFused = {})
        : name(std::move(tensor)), dtype(std::move(type)), shape(std::move(dims)), fmsName(std::move(fms)),
          fmsFusedName(std::move(fmsFused))
    {
    }
    std::string name;
    std::string dtype;           // safetensors dtype name, "F8_E4M3"
    std::vector<int64_t> shape;
    std::string fmsName;      // on a Linear's weight row: base_model.layers.3.ff_sub_layer.w1
    std::string fmsFusedName; // the same under fms's fused q/k/v (qkv_fused)
};

class TensorTableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column {
        NameColumn,
        DtypeColumn,
        ShapeColumn,
        ElementsColumn,
        GroupColumn,
        FmsNameColumn,
        ScaleMinColumn,
        ScaleMedianColumn,
        ScaleMaxColumn,
        ScaleRatioColumn,
        ClippedColumn,
        UnderflowColumn,
        InputScaleColumn,
        ColumnCount
    };
    enum Role { SortRole = Qt::UserRole + 1, SubjectRole = Qt::UserRole + 2 };

    explicit TensorTableModel(QObject* parent = nullptr);

    // Every tensor of the checkpoint, sorted by name. Safe to call off the GUI thread.
    static std::vector<TensorRow> rowsFrom(const Checkpoint& checkpoint);

    // Replaces all rows. Statistics are matched to rows by "<module>.weight"; only entries with
    // `quantized` set fill the scale columns (a float Linear has no scales to show).
    void setTensors(std::vector<TensorRow> rows, std::vector<LinearScaleStatistics> statistics = {});
    void clear();

    const TensorRow* tensorAt(int row) const;                       // null when out of range
    const LinearScaleStatistics* statisticsAt(int row) const;       // null when the row has none
    int rowForName(const QString& tensorName) const;                // -1 when absent

    int rowCount(const QModelIndex& parent = QModelIndex()) const override;
    int columnCount(const QModelIndex& parent = QModelIndex()) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    QVariant display(int row, int column) const;
    QVariant exact(int row, int column) const;
    QVariant sortValue(int row, int column) const;
    std::optional<double> number(int row, int column) const;

    std::vector<TensorRow> rows_;
    std::vector<LinearScaleStatistics> statistics_;
    std::vector<int> statisticsOfRow_; // index into statistics_, -1 when none
    std::vector<int> linearOfRow_;     // index into statistics_ for every Linear's weight row, -1 otherwise
    QHash<QString, int> rowByName_;
};

} // namespace scalescope::ui
