#include "models/mask_predictions_model.h"
#include "models/value_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace scalescope::ui {

namespace {

// The raw token in double quotes with C-style escapes for control characters.
QString quotedToken(const std::string& token)
{
    QString quoted = QStringLiteral("\"");
    for (const QChar c : QString::fromStdString(token)) {
        if (c == QLatin1Char('"') || c == QLatin1Char('\\'))
            quoted += QLatin1Char('\\') + c;
        else if (c == QLatin1Char('\n'))
            quoted += QStringLiteral("\\n");
        else if (c == QLatin1Char('\t'))
            quoted += QStringLiteral("\\t");
        else if (c == QLatin1Char('\r'))
            quoted += QStringLiteral("\\r");
        else
            quoted += c;
    }
    return quoted + QLatin1Char('"');
}

bool isNumericColumn(int column)
{
    return column == MaskPredictionsModel::MaskColumn || column == MaskPredictionsModel::RankColumn ||
           column == MaskPredictionsModel::RunProbabilityColumn ||
           column == MaskPredictionsModel::ReferenceProbabilityColumn;
}

} // namespace

MaskPredictionsModel::MaskPredictionsModel(QObject* parent) : QAbstractTableModel(parent) {}

QString MaskPredictionsModel::visibleToken(const std::string& token)
{
    if (token.empty())
        return tr("(empty)");
    QString visible = QString::fromStdString(token);
    visible.replace(QLatin1Char(' '), QChar(0x2423));  // OPEN BOX
    visible.replace(QLatin1Char('\n'), QChar(0x21B5)); // DOWNWARDS ARROW WITH CORNER LEFTWARDS
    visible.replace(QLatin1Char('\t'), QChar(0x21E5)); // RIGHTWARDS ARROW TO BAR
    visible.replace(QLatin1Char('\r'), QChar(0x240D)); // SYMBOL FOR CARRIAGE RETURN
    return visible;
}

void MaskPredictionsModel::setPredictions(std::vector<std::vector<MaskPrediction>> run,
                                          std::vector<std::vector<MaskPrediction>> reference,
                                          bool hasReference, std::vector<int> maskPositions)
{
    beginResetModel();
    run_ = std::move(run);
    reference_ = hasReference ? std::move(reference) : std::vector<std::vector<MaskPrediction>>{};
    hasReference_ = hasReference;
    maskPositions_ = std::move(maskPositions);
    rows_.clear();
    const std::size_t masks = std::max(run_.size(), reference_.size());
    for (std::size_t mask = 0; mask < masks; ++mask) {
        const std::size_t runCount = mask < run_.size() ? run_[mask].size() : 0;
        const std::size_t referenceCount = mask < reference_.size() ? reference_[mask].size() : 0;
        for (std::size_t rank = 0; rank < std::max(runCount, referenceCount); ++rank)
            rows_.push_back({int(mask), int(rank)});
    }
    endResetModel();
}

void MaskPredictionsModel::setRunLabel(const QString& label)
{
    if (label == runLabel_)
        return;
    runLabel_ = label;
    emit headerDataChanged(Qt::Horizontal, RunTokenColumn, RunProbabilityColumn);
}

void MaskPredictionsModel::clear()
{
    setPredictions({}, {}, false);
}

const MaskPrediction* MaskPredictionsModel::prediction(const RowRef& ref, bool runSide) const
{
    const auto& lists = runSide ? run_ : reference_;
    if (ref.mask >= int(lists.size()) || ref.rank >= int(lists[ref.mask].size()))
        return nullptr;
    return &lists[ref.mask][ref.rank];
}

int MaskPredictionsModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : int(rows_.size());
}

int MaskPredictionsModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant MaskPredictionsModel::data(const QModelIndex& index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return QVariant();
    const RowRef& ref = rows_[index.row()];
    const int column = index.column();
    if (role == Qt::TextAlignmentRole)
        return int((isNumericColumn(column) ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignVCenter);

    if (column == MaskColumn || column == RankColumn) {
        const int number = (column == MaskColumn ? ref.mask : ref.rank) + 1;
        switch (role) {
        case Qt::DisplayRole: return QString::number(number);
        case Qt::ToolTipRole:
            if (column == MaskColumn && ref.mask < int(maskPositions_.size()))
                return tr("Mask %1 at token position %2").arg(number).arg(maskPositions_[ref.mask]);
            return QString::number(number);
        case SortRole: return double(number);
        default: return QVariant();
        }
    }

    const bool runSide = column == RunTokenColumn || column == RunProbabilityColumn;
    const bool tokenColumn = column == RunTokenColumn || column == ReferenceTokenColumn;
    const MaskPrediction* predicted = prediction(ref, runSide);
    if (!predicted)
        return QVariant();
    switch (role) {
    case Qt::DisplayRole:
        return tokenColumn ? visibleToken(predicted->token) : probabilityText(predicted->probability);
    case Qt::ToolTipRole:
        if (tokenColumn)
            return tr("%1 (token id %2)").arg(quotedToken(predicted->token)).arg(predicted->tokenId);
        return exactText(predicted->probability);
    case SortRole:
        if (tokenColumn)
            return QString::fromStdString(predicted->token);
        return std::isnan(predicted->probability) ? QVariant() : QVariant(double(predicted->probability));
    case ProbabilityRole:
        if (!tokenColumn && std::isfinite(predicted->probability))
            return double(predicted->probability);
        return QVariant();
    default:
        return QVariant();
    }
}

QVariant MaskPredictionsModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation == Qt::Horizontal && role == Qt::DisplayRole) {
        switch (section) {
        case MaskColumn: return tr("Mask");
        case RankColumn: return tr("Rank");
        case RunTokenColumn: return tr("%1 token").arg(runLabel_);
        case RunProbabilityColumn: return tr("%1 probability").arg(runLabel_);
        case ReferenceTokenColumn: return tr("Reference token");
        case ReferenceProbabilityColumn: return tr("Reference probability");
        default: break;
        }
    }
    if (orientation == Qt::Horizontal && role == Qt::ToolTipRole) {
        switch (section) {
        case RunTokenColumn:
        case ReferenceTokenColumn: return tr("Token text; \u2423 marks a space");
        case RunProbabilityColumn:
        case ReferenceProbabilityColumn: return tr("Softmax probability over the vocabulary (0 to 1)");
        default: break;
        }
    }
    if (orientation == Qt::Horizontal && role == Qt::TextAlignmentRole && section >= 0 && section < ColumnCount)
        return int((isNumericColumn(section) ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignVCenter);
    return QAbstractTableModel::headerData(section, orientation, role);
}

} // namespace scalescope::ui
