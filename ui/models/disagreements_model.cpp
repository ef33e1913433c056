#include "models/disagreements_model.h"
#include "models/value_text.h"

#include <cmath>

namespace scalescope::ui {
namespace {

QString answerText(const QaAnswer& answer)
{
    return answer.isNull || answer.text.empty() ? QObject::tr("(no answer)") : QString::fromStdString(answer.text);
}

} // namespace

DisagreementsModel::DisagreementsModel(QObject* parent) : QAbstractTableModel(parent) {}

void DisagreementsModel::setResult(std::shared_ptr<const EvaluationResult> result, const QString& runName)
{
    beginResetModel();
    result_ = std::move(result);
    runName_ = runName;
    rows_.clear();
    if (result_)
        for (std::size_t i = 0; i < result_->examples.size(); ++i)
            if (!result_->examples[i].agree)
                rows_.push_back(i);
    endResetModel();
}

const EvaluatedExample* DisagreementsModel::exampleAt(int row) const
{
    if (!result_ || row < 0 || row >= static_cast<int>(rows_.size()))
        return nullptr;
    return &result_->examples[rows_[static_cast<std::size_t>(row)]];
}

int DisagreementsModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int DisagreementsModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant DisagreementsModel::data(const QModelIndex& index, int role) const
{
    const EvaluatedExample* e = index.isValid() ? exampleAt(index.row()) : nullptr;
    if (!e)
        return {};
    const int column = index.column();
    if (role == SubjectRole)
        return static_cast<qulonglong>(rows_[static_cast<std::size_t>(index.row())]);
    const bool numeric = column == RunF1Column || column == ReferenceF1Column || column == LogitsSqnrColumn
        || column == RunNullMarginColumn || column == ReferenceNullMarginColumn;
    if (role == Qt::TextAlignmentRole)
        return alignmentFor(numeric);
    double number = 0;
    switch (column) {
    case RunF1Column:
        number = 100 * e->run.f1;
        break;
    case ReferenceF1Column:
        number = 100 * e->reference.f1;
        break;
    case LogitsSqnrColumn:
        number = e->logits.sqnrDb;
        break;
    case RunNullMarginColumn:
        number = e->runAnswer.nullMargin;
        break;
    case ReferenceNullMarginColumn:
        number = e->referenceAnswer.nullMargin;
        break;
    default:
        break;
    }
    if (role == Qt::DisplayRole || role == Qt::ToolTipRole || role == SortRole) {
        if (numeric) {
            if (role == SortRole)
                return std::isnan(number) ? QVariant() : QVariant(number);
            if (std::isnan(number))
                return QString(); // a null margin where the null answer did not compete
            return role == Qt::ToolTipRole ? exactText(number) : fixedText(number, column == LogitsSqnrColumn ? 2 : 1);
        }
        switch (column) {
        case IdColumn:
            return QString::fromStdString(e->example.id);
        case QuestionColumn:
            return QString::fromStdString(e->example.question);
        case GoldColumn: {
            QStringList golds;
            for (const std::string& g : e->example.golds)
                golds << QString::fromStdString(g);
            return golds.isEmpty() ? tr("(no answer)") : golds.join(QStringLiteral(" | "));
        }
        case RunAnswerColumn:
            return answerText(e->runAnswer);
        case ReferenceAnswerColumn:
            return answerText(e->referenceAnswer);
        default:
            return {};
        }
    }
    return {};
}

QVariant DisagreementsModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal)
        return {};
    if (role == Qt::ToolTipRole && (section == RunNullMarginColumn || section == ReferenceNullMarginColumn)) {
        const QString threshold
            = result_ && result_->qa.nullThreshold ? QString::number(*result_->qa.nullThreshold) : tr("the threshold");
        return tr("SQuAD 2.0: the null answer's score (start + end logit of the first token) minus the best "
                  "span's; the answer is \"no answer\" when this exceeds %1 (inf: no span fits)")
            .arg(threshold);
    }
    if (role != Qt::DisplayRole)
        return {};
    switch (section) {
    case IdColumn: return tr("ID");
    case QuestionColumn: return tr("Question");
    case GoldColumn: return tr("Gold answers");
    case RunAnswerColumn: return tr("%1 answer").arg(runName_);
    case ReferenceAnswerColumn: return tr("Reference answer");
    case RunF1Column: return tr("%1 F1 (%)").arg(runName_);
    case ReferenceF1Column: return tr("Reference F1 (%)");
    case LogitsSqnrColumn: return tr("Logits SQNR (dB)");
    case RunNullMarginColumn:
        return tr("%1 null - span").arg(runName_);
    case ReferenceNullMarginColumn:
        return tr("Ref. null - span");
    default: return {};
    }
}

} // namespace scalescope::ui
