#pragma once
// The questions of a SQuAD evaluation where the run and the reference answer differently: ID,
// question, gold answers, both answers, both F1 scores, the logits SQNR of that question and, on
// SQuAD 2.0, both null margins.
// Roles as in tensor_table_model.h; SubjectRole is the example's index in EvaluationResult::examples.
#include <QAbstractTableModel>

#include <memory>

#include "tasks/evaluate.h"

namespace scalescope::ui {

class DisagreementsModel : public QAbstractTableModel {
    Q_OBJECT
public:
    // The null margins (SQuAD 2.0: null score minus best span score, QaAnswer::nullMargin) are
    // blank when the null answer did not compete (SQuAD 1.1).
    enum Column {
        IdColumn,
        QuestionColumn,
        GoldColumn,
        RunAnswerColumn,
        ReferenceAnswerColumn,
        RunF1Column,
        ReferenceF1Column,
        LogitsSqnrColumn,
        RunNullMarginColumn,
        ReferenceNullMarginColumn,
        ColumnCount
    };
    enum Role { SortRole = Qt::UserRole + 1, SubjectRole = Qt::UserRole + 2 };

    explicit DisagreementsModel(QObject* parent = nullptr);

    // runName names the run side in the column titles ("FP8", "FP16 twin", "Dequant").
    void setResult(std::shared_ptr<const EvaluationResult> result, const QString& runName = QStringLiteral("FP8"));
    const EvaluatedExample* exampleAt(int row) const;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    std::shared_ptr<const EvaluationResult> result_;
    std::vector<std::size_t> rows_; // indices into result_->examples that disagree
    QString runName_ = QStringLiteral("FP8");
};

} // namespace scalescope::ui
