#pragma once
// Per capture point error metrics of a comparison (ComparisonResult::points), in execution order:
// Capture point, Kind, Layer, SQNR (dB), Cosine, Relative L2, Max abs error, MSE. An SQNR of
// +infinity (identical tensors) reads "inf" and sorts above every finite value.
// The model filters itself: setOutputsOnly(true) keeps only encoder layer outputs and Linear
// outputs (the points worth charting; Linear inputs and the embeddings repeat what precedes them),
// so a view needs no proxy for that and pointAt(row) always maps a row back to its point.
// Roles as in tensor_table_model.h; SubjectRole is the module name.
#include <QAbstractTableModel>

#include <vector>

#include "tasks/compare_runs.h"

namespace scalescope::ui {

class LayerMetricsModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column {
        CapturePointColumn,
        KindColumn,
        LayerColumn,
        SqnrColumn,
        CosineColumn,
        RelativeL2Column,
        MaxAbsErrorColumn,
        MseColumn,
        ColumnCount
    };
    enum Role { SortRole = Qt::UserRole + 1, SubjectRole = Qt::UserRole + 2 };

    explicit LayerMetricsModel(QObject* parent = nullptr);

    void setPoints(std::vector<CapturePointMetrics> points);
    void clear();

    void setOutputsOnly(bool outputsOnly);
    bool outputsOnly() const { return outputsOnly_; }

    const CapturePointMetrics* pointAt(int row) const; // null when out of range
    int rowForCapturePoint(const QString& name) const; // -1 when absent or filtered out

    int rowCount(const QModelIndex& parent = QModelIndex()) const override;
    int columnCount(const QModelIndex& parent = QModelIndex()) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    void rebuildRows();

    std::vector<CapturePointMetrics> points_;
    std::vector<int> rows_; // indices into points_ after the filter
    bool outputsOnly_ = false;
};

} // namespace scalescope::ui
