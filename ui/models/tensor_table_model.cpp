#include "models/tensor_table_model.h"
#include "models/value_text.h"

#include <QStringList>

#include <charconv>
#include <cmath>

#include "model/checkpoint.h"

namespace scalescope::ui {

namespace {

QString ratioText(double ratio)
{
    if (!std::isfinite(ratio))
        return exactText(ratio);
    return QString::number(ratio, 'g', 4);
}

int64_t elementCount(const std::vector<int64_t>& shape)
{
    int64_t count = 1;
    for (int64_t d : shape)
        count *= d;
    return count;
}

bool isNumericColumn(int column)
{
    return column >= TensorTableModel::ElementsColumn && column != TensorTableModel::GroupColumn &&
           column != TensorTableModel::FmsNameColumn;
}

// An int, not Qt::Alignment: Qt 6.4's delegates read the role with toInt().
QVariant alignment(bool numeric)
{
    return int((numeric ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignVCenter);
}

} // namespace

TensorTableModel::TensorTableModel(QObject* parent) : QAbstractTableModel(parent) {}

std::vector<TensorRow> TensorTableModel::rowsFrom(const Checkpoint& checkpoint)
{
    const EncoderLayout& layout = checkpoint.layout();
    const std::string weightSuffix = ".weight";
    std::vector<TensorRow> rows;
    for (const TensorView* view : checkpoint.tensors().tensors()) {
        TensorRow row{view->name, dtypeName(view->dtype), view->shape, {}, {}};
        const std::size_t size = view->name.size();
        if (size > weightSuffix.size() && view->name.compare(size - weightSuffix.size(), weightSuffix.size(), weightSuffix) == 0) {
            const std::string module = view->name.substr(0, size - weightSuffix.size());
            row.fmsName = layout.fmsName(module);
            row.fmsFusedName = layout.fmsName(module, true);
        }
        rows.push_back(std::move(row));
    }
    return rows;
}

void TensorTableModel::setTensors(std::vector<TensorRow> rows, std::vector<LinearScaleStatistics> statistics)
{
    beginResetModel();
    rows_ = std::move(rows);
    statistics_ = std::move(statistics);
    rowByName_.clear();
    statisticsOfRow_.assign(rows_.size(), -1);
    linearOfRow_.assign(rows_.size(), -1);
    for (int row = 0; row < int(rows_.size()); ++row)
        rowByName_.insert(QString::fromStdString(rows_[row].name), row);
    for (int i = 0; i < int(statistics_.size()); ++i) {
        const auto found = rowByName_.constFind(QString::fromStdString(statistics_[i].module + ".weight"));
        if (found == rowByName_.constEnd())
            continue;
        linearOfRow_[*found] = i;
        if (statistics_[i].quantized)
            statisticsOfRow_[*found] = i;
    }
    endResetModel();
}

void TensorTableModel::clear()
{
    setTensors({}, {});
}

const TensorRow* TensorTableModel::tensorAt(int row) const
{
    return row >= 0 && row < int(rows_.size()) ? &rows_[row] : nullptr;
}

const LinearScaleStatistics* TensorTableModel::statisticsAt(int row) const
{
    if (row < 0 || row >= int(rows_.size()) || statisticsOfRow_[row] < 0)
        return nullptr;
    return &statistics_[statisticsOfRow_[row]];
}

int TensorTableModel::rowForName(const QString& tensorName) const
{
    return rowByName_.value(tensorName, -1);
}

int TensorTableModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : int(rows_.size());
}

int TensorTableModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

std::optional<double> TensorTableModel::number(int row, int column) const
{
    if (column == ElementsColumn)
        return double(elementCount(rows_[row].shape));
    const LinearScaleStatistics* statistics = statisticsAt(row);
    if (!statistics)
        return std::nullopt;
    switch (column) {
    case ScaleMinColumn:
        return statistics->scaleMin;
    case ScaleMedianColumn:
        return statistics->scaleMedian;
    case ScaleMaxColumn:
        return statistics->scaleMax;
    case ScaleRatioColumn:
        return statistics->scaleRatio;
    case ClippedColumn:
        return statistics->clippedShare;
    case UnderflowColumn:
        return statistics->underflowShare;
    case InputScaleColumn:
        if (statistics->inputScale)
            return *statistics->inputScale;
        return std::nullopt;
    default:
        return std::nullopt;
    }
}

QVariant TensorTableModel::display(int row, int column) const
{
    const TensorRow& tensor = rows_[row];
    switch (column) {
    case NameColumn:
        return QString::fromStdString(tensor.name);
    case DtypeColumn:
        return QString::fromStdString(tensor.dtype);
    case ShapeColumn:
        return shapeText(tensor.shape);
    case ElementsColumn:
        return QString::number(elementCount(tensor.shape));
    case GroupColumn:
        return linearOfRow_[row] < 0 ? QVariant() : QString::fromStdString(statistics_[linearOfRow_[row]].rule);
    case FmsNameColumn:
        return tensor.fmsName.empty() ? QVariant() : QString::fromStdString(tensor.fmsName);
    default:
        break;
    }
    const std::optional<double> value = number(row, column);
    if (!value)
        return QVariant();
    switch (column) {
    case ScaleRatioColumn:
        return ratioText(*value);
    case ClippedColumn:
    case UnderflowColumn:
        return percentText(*value);
    default:
        return scientificText(*value);
    }
}

QVariant TensorTableModel::exact(int row, int column) const
{
    const LinearScaleStatistics* statistics = statisticsAt(row);
    switch (column) {
    case NameColumn:
    case DtypeColumn:
        return display(row, column);
    case GroupColumn:
        if (linearOfRow_[row] < 0)
            return QVariant();
        return (statistics_[linearOfRow_[row]].embedding ? tr("Word embeddings %1: %2") : tr("Linear %1: %2"))
            .arg(QString::fromStdString(statistics_[linearOfRow_[row]].module),
                 QString::fromStdString(statistics_[linearOfRow_[row]].rule));
    case FmsNameColumn:
        if (rows_[row].fmsName.empty())
            return QVariant();
        return rows_[row].fmsFusedName == rows_[row].fmsName
                   ? tr("%1 in fms (fused or unfused q/k/v)").arg(QString::fromStdString(rows_[row].fmsName))
                   : tr("%1 in fms with unfused q/k/v; %2 with fms's default fused q/k/v")
                         .arg(QString::fromStdString(rows_[row].fmsName), QString::fromStdString(rows_[row].fmsFusedName));
    case ShapeColumn:
        return tr("%1 elements").arg(elementCount(rows_[row].shape));
    case ElementsColumn:
        return display(row, column);
    case ScaleMinColumn:
    case ScaleMedianColumn:
    case ScaleMaxColumn:
        if (!statistics)
            return QVariant();
        return exactText(float(*number(row, column)));
    case InputScaleColumn:
        if (!statistics || !statistics->inputScale)
            return QVariant();
        return tr("static input scale %1").arg(exactText(*statistics->inputScale));
    case ScaleRatioColumn:
        if (!statistics)
            return QVariant();
        return exactText(statistics->scaleRatio);
    case ClippedColumn:
    case UnderflowColumn: {
        if (!statistics)
            return QVariant();
        const double share = *number(row, column);
        return tr("%1 % (share %2)").arg(exactText(share * 100.0), exactText(share));
    }
    default:
        return QVariant();
    }
}

QVariant TensorTableModel::sortValue(int row, int column) const
{
    if (column == NameColumn)
        return naturalSortKey(display(row, column).toString());
    if (!isNumericColumn(column))
        return display(row, column);
    const std::optional<double> value = number(row, column);
    if (!value || std::isnan(*value))
        return QVariant();
    return *value;
}

QVariant TensorTableModel::data(const QModelIndex& index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return QVariant();
    const int row = index.row();
    const int column = index.column();
    switch (role) {
    case Qt::DisplayRole:
        return display(row, column);
    case Qt::ToolTipRole:
        return exact(row, column);
    case Qt::TextAlignmentRole:
        return alignment(isNumericColumn(column));
    case SortRole:
        return sortValue(row, column);
    case SubjectRole:
        return QString::fromStdString(rows_[row].name);
    default:
        return QVariant();
    }
}

QVariant TensorTableModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || section < 0 || section >= ColumnCount)
        return QAbstractTableModel::headerData(section, orientation, role);
    if (role == Qt::DisplayRole) {
        switch (section) {
        case NameColumn: return tr("Tensor");
        case DtypeColumn: return tr("Dtype");
        case ShapeColumn: return tr("Shape");
        case ElementsColumn: return tr("Elements");
        case GroupColumn: return tr("Config group (rule)");
        case FmsNameColumn: return tr("FMS name");
        case ScaleMinColumn: return tr("Scale min");
        case ScaleMedianColumn: return tr("Scale median");
        case ScaleMaxColumn: return tr("Scale max");
        case ScaleRatioColumn: return tr("Max/min ratio");
        case ClippedColumn: return tr("Clipped (%)");
        case UnderflowColumn: return tr("Underflow (%)");
        case InputScaleColumn: return tr("Input scale");
        default: break;
        }
    }
    if (role == Qt::ToolTipRole) {
        switch (section) {
        case ScaleMinColumn:
        case ScaleMedianColumn:
        case ScaleMaxColumn:
            return tr("weight_scale over the output channels of a quantized Linear");
        case ScaleRatioColumn:
            return tr("Largest over smallest weight scale; 1 for a per-tensor scale");
        case GroupColumn:
            return tr("The quantization_config group that picked this Linear and the target that did (an exact "
                      "name beats a re: pattern, which beats a class name), or the ignore entry that dropped it");
        case ClippedColumn:
            return tr("Share of FP8 weight codes at +-448, in percent");
        case UnderflowColumn:
            return tr("Share of FP8 weight codes that are zero or subnormal, in percent");
        case InputScaleColumn:
            return tr("Static activation scale (input_scale); empty for dynamic activations");
        default: break;
        }
    }
    if (role == Qt::TextAlignmentRole)
        return alignment(isNumericColumn(section));
    return QAbstractTableModel::headerData(section, orientation, role);
}

} // namespace scalescope::ui
