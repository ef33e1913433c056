#pragma once
// The questions of a SQuAD evaluation where the run and the reference answer differently: ID,
// question, gold answers, both answers, both F1 scores and the logits SQNR of that question.
// Roles as in tensor_table_model.h; SubjectRole is the example's index in EvaluationResult::examples.
#include <QAbstractTableModel>

#include <memory>

#include "tasks/evaluate.h"

namespace scalescope::ui {

class DisagreementsModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { IdColumn, QuestionColumn, GoldColumn, RunAnswerColumn, ReferenceAnswerColumn, RunF1Column,
                  ReferenceF1Column, LogitsSqnrColumn, ColumnCount };
    enum Role { SortRole = Qt::UserRole + 1, SubjectRole = Qt::UserRole + 2 };

    explicit DisagreementsModel(QObject* parent = nullptr);

    void setResult(std::shared_ptr<const EvaluationResult> result);
    const EvaluatedExample* exampleAt(int row) const;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    std::shared_ptr<const EvaluationResult> result_;
    std::vector<std::size_t> rows_; // indices into result_->examples that disagree
};

} // namespace scalescope::ui
