#include "models/answers_model.h"
#include "models/value_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "analysis/squad_metric.h"

namespace scalescope::ui {

namespace {

QString answerText(const QaAnswer& answer)
{
    return answer.isNull ? AnswersModel::tr("(no answer)") : QString::fromStdString(answer.text);
}

bool isNumericColumn(int column)
{
    return column == AnswersModel::RankColumn || column == AnswersModel::RunScoreColumn ||
           column == AnswersModel::RunSpanColumn || column == AnswersModel::ReferenceScoreColumn ||
           column == AnswersModel::ReferenceSpanColumn;
}

} // namespace

AnswersModel::AnswersModel(QObject* parent) : QAbstractTableModel(parent) {}

void AnswersModel::setAnswers(std::vector<QaAnswer> run, std::vector<QaAnswer> reference, bool hasReference)
{
    beginResetModel();
    run_ = std::move(run);
    reference_ = hasReference ? std::move(reference) : std::vector<QaAnswer>{};
    hasReference_ = hasReference;
    endResetModel();
}

void AnswersModel::setRunLabel(const QString& label)
{
    if (label == runLabel_)
        return;
    runLabel_ = label;
    emit headerDataChanged(Qt::Horizontal, RunAnswerColumn, RunSpanColumn);
}

void AnswersModel::clear()
{
    setAnswers({}, {}, false);
}

const QaAnswer* AnswersModel::runAnswerAt(int row) const
{
    return row >= 0 && row < int(run_.size()) ? &run_[row] : nullptr;
}

const QaAnswer* AnswersModel::referenceAnswerAt(int row) const
{
    return row >= 0 && row < int(reference_.size()) ? &reference_[row] : nullptr;
}

bool AnswersModel::agreesAt(int row) const
{
    const QaAnswer* run = runAnswerAt(row);
    const QaAnswer* reference = referenceAnswerAt(row);
    if (!run || !reference)
        return false;
    if (run->isNull || reference->isNull)
        return run->isNull && reference->isNull;
    return normalizeAnswer(run->text) == normalizeAnswer(reference->text);
}

int AnswersModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : int(std::max(run_.size(), reference_.size()));
}

int AnswersModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant AnswersModel::data(const QModelIndex& index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return QVariant();
    const int row = index.row();
    const int column = index.column();
    if (role == Qt::TextAlignmentRole)
        return int((isNumericColumn(column) ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignVCenter);

    if (column == RankColumn) {
        switch (role) {
        case Qt::DisplayRole:
        case Qt::ToolTipRole: return QString::number(row + 1);
        case SortRole: return double(row + 1);
        default: return QVariant();
        }
    }
    if (column == AgreeColumn) {
        if (role != Qt::DisplayRole && role != Qt::ToolTipRole && role != SortRole)
            return QVariant();
        // Blank where one side has no answer at this rank: there is nothing to agree on.
        if (!hasReference_ || !runAnswerAt(row) || !referenceAnswerAt(row))
            return QVariant();
        const bool agrees = agreesAt(row);
        if (role == Qt::ToolTipRole)
            return agrees ? tr("Run and reference give the same answer (after SQuAD normalisation)")
                          : tr("Run and reference differ at this rank");
        return agrees ? tr("yes") : tr("no");
    }

    const bool runSide = column == RunAnswerColumn || column == RunScoreColumn || column == RunSpanColumn;
    const QaAnswer* answer = runSide ? runAnswerAt(row) : referenceAnswerAt(row);
    if (!answer)
        return QVariant();
    const int field = runSide ? column - RunAnswerColumn : column - ReferenceAnswerColumn; // 0 answer, 1 score, 2 span

    switch (role) {
    case Qt::DisplayRole:
        if (field == 0)
            return answerText(*answer);
        if (field == 1)
            return probabilityText(answer->score);
        if (answer->isNull)
            return QVariant();
        return QStringLiteral("%1-%2").arg(answer->start).arg(answer->end);
    case Qt::ToolTipRole:
        if (field == 0)
            return answerText(*answer);
        if (field == 1)
            return tr("probability %1 (start logit %2, end logit %3)")
                .arg(exactText(answer->score), exactText(answer->startLogit), exactText(answer->endLogit));
        if (answer->isNull)
            return QVariant();
        return tr("characters %1 to %2 of the context (end exclusive)").arg(answer->start).arg(answer->end);
    case SortRole:
        if (field == 0)
            return answerText(*answer);
        if (field == 1)
            return std::isnan(answer->score) ? QVariant() : QVariant(double(answer->score));
        if (answer->isNull)
            return QVariant();
        return double(answer->start);
    case ProbabilityRole:
        if (field == 1 && std::isfinite(answer->score))
            return double(answer->score);
        return QVariant();
    default:
        return QVariant();
    }
}

QVariant AnswersModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation == Qt::Horizontal && role == Qt::DisplayRole) {
        switch (section) {
        case RankColumn: return tr("Rank");
        case RunAnswerColumn: return tr("%1 answer").arg(runLabel_);
        case RunScoreColumn: return tr("%1 score").arg(runLabel_);
        case RunSpanColumn: return tr("%1 span").arg(runLabel_);
        case ReferenceAnswerColumn: return tr("Reference answer");
        case ReferenceScoreColumn: return tr("Reference score");
        case ReferenceSpanColumn: return tr("Reference span");
        case AgreeColumn: return tr("Agree");
        default: break;
        }
    }
    if (orientation == Qt::Horizontal && role == Qt::ToolTipRole) {
        switch (section) {
        case RunScoreColumn:
        case ReferenceScoreColumn: return tr("Probability of the answer among the candidate spans (0 to 1)");
        case RunSpanColumn:
        case ReferenceSpanColumn: return tr("Character offsets into the context, start-end (end exclusive)");
        default: break;
        }
    }
    if (orientation == Qt::Horizontal && role == Qt::TextAlignmentRole && section >= 0 && section < ColumnCount)
        return int((isNumericColumn(section) ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignVCenter);
    return QAbstractTableModel::headerData(section, orientation, role);
}

} // namespace scalescope::ui
