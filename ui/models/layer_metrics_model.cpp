#include "models/layer_metrics_model.h"
#include "models/value_text.h"

#include <charconv>
#include <cmath>

namespace scalescope::ui {

namespace {

bool isNumericColumn(int column)
{
    return column >= LayerMetricsModel::LayerColumn;
}

double metricValue(const ErrorMetrics& metrics, int column)
{
    switch (column) {
    case LayerMetricsModel::SqnrColumn: return metrics.sqnrDb;
    case LayerMetricsModel::CosineColumn: return metrics.cosine;
    case LayerMetricsModel::RelativeL2Column: return metrics.relativeL2;
    case LayerMetricsModel::MaxAbsErrorColumn: return metrics.maxAbsError;
    case LayerMetricsModel::MseColumn: return metrics.mse;
    default: return std::nan("");
    }
}

QString metricText(double value, int column)
{
    switch (column) {
    case LayerMetricsModel::SqnrColumn: return fixedText(value, 2);
    case LayerMetricsModel::CosineColumn: return fixedText(value, 6);
    default: return scientificText(value);
    }
}

} // namespace

LayerMetricsModel::LayerMetricsModel(QObject* parent) : QAbstractTableModel(parent) {}

void LayerMetricsModel::setPoints(std::vector<CapturePointMetrics> points)
{
    beginResetModel();
    points_ = std::move(points);
    rebuildRows();
    endResetModel();
}

void LayerMetricsModel::clear()
{
    setPoints({});
}

void LayerMetricsModel::setOutputsOnly(bool outputsOnly)
{
    if (outputsOnly == outputsOnly_)
        return;
    beginResetModel();
    outputsOnly_ = outputsOnly;
    rebuildRows();
    endResetModel();
}

void LayerMetricsModel::rebuildRows()
{
    rows_.clear();
    for (int i = 0; i < int(points_.size()); ++i) {
        const CaptureKind kind = points_[i].kind;
        if (!outputsOnly_ || kind == CaptureKind::LayerOutput || kind == CaptureKind::LinearOutput)
            rows_.push_back(i);
    }
}

const CapturePointMetrics* LayerMetricsModel::pointAt(int row) const
{
    return row >= 0 && row < int(rows_.size()) ? &points_[rows_[row]] : nullptr;
}

int LayerMetricsModel::rowForCapturePoint(const QString& name) const
{
    const std::string wanted = name.toStdString();
    for (int row = 0; row < int(rows_.size()); ++row)
        if (points_[rows_[row]].name == wanted)
            return row;
    return -1;
}

int LayerMetricsModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : int(rows_.size());
}

int LayerMetricsModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant LayerMetricsModel::data(const QModelIndex& index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return QVariant();
    const CapturePointMetrics& point = points_[rows_[index.row()]];
    const int column = index.column();
    switch (role) {
    case Qt::TextAlignmentRole:
        return int((isNumericColumn(column) ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignVCenter);
    case SubjectRole:
        return QString::fromStdString(point.module);
    default:
        break;
    }

    if (column == CapturePointColumn || column == KindColumn) {
        if (role != Qt::DisplayRole && role != Qt::ToolTipRole && role != SortRole)
            return QVariant();
        if (column == KindColumn)
            return QString::fromUtf8(captureKindName(point.kind));
        if (role == Qt::ToolTipRole)
            return tr("%1\nmodule %2, %3 elements compared")
                .arg(QString::fromStdString(point.name), QString::fromStdString(point.module))
                .arg(point.metrics.count);
        return QString::fromStdString(point.name);
    }
    if (column == LayerColumn) {
        switch (role) {
        case Qt::DisplayRole: return point.layer >= 0 ? QString::number(point.layer) : QString();
        case Qt::ToolTipRole:
            return point.layer >= 0 ? tr("encoder layer %1").arg(point.layer) : tr("outside the encoder layers");
        case SortRole: return double(point.layer);
        default: return QVariant();
        }
    }

    const double value = metricValue(point.metrics, column);
    switch (role) {
    case Qt::DisplayRole: return metricText(value, column);
    case Qt::ToolTipRole: return exactText(value);
    case SortRole: return std::isnan(value) ? QVariant() : QVariant(value);
    default: return QVariant();
    }
}

QVariant LayerMetricsModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation == Qt::Horizontal && role == Qt::DisplayRole) {
        switch (section) {
        case CapturePointColumn: return tr("Capture point");
        case KindColumn: return tr("Kind");
        case LayerColumn: return tr("Layer");
        case SqnrColumn: return tr("SQNR (dB)");
        case CosineColumn: return tr("Cosine");
        case RelativeL2Column: return tr("Relative L2");
        case MaxAbsErrorColumn: return tr("Max abs error");
        case MseColumn: return tr("MSE");
        default: break;
        }
    }
    if (orientation == Qt::Horizontal && role == Qt::ToolTipRole) {
        switch (section) {
        case SqnrColumn: return tr("10 log10(sum ref^2 / sum (ref - x)^2); inf when identical");
        case CosineColumn: return tr("Cosine similarity between run and reference");
        case RelativeL2Column: return tr("||ref - x|| / ||ref||");
        case MaxAbsErrorColumn: return tr("Largest |ref - x|");
        case MseColumn: return tr("Mean squared error");
        default: break;
        }
    }
    if (orientation == Qt::Horizontal && role == Qt::TextAlignmentRole && section >= 0 && section < ColumnCount)
        return int((isNumericColumn(section) ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignVCenter);
    return QAbstractTableModel::headerData(section, orientation, role);
}

} // namespace scalescope::ui
