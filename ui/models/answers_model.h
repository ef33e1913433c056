#pragma once
// The n-best answers of a QA run next to those of its reference, rank by rank: Rank, Answer, Score
// and Span of the run, the same three of the reference, and Agree ("yes" when the two answers of a
// rank are equal after SQuAD normalisation, both null counting as equal, "no" when they differ,
// blank when one side has no answer at that rank). Rows are as many as the
// longer list. The null answer reads "(no answer)" and has no span. Without a reference the
// reference columns and Agree stay empty (the view may hide them; see hasReference()).
// Roles as in tensor_table_model.h; ProbabilityRole (Qt::UserRole + 3) gives the score in [0, 1] on
// the two score columns, for ProbabilityBarDelegate.
#include <QAbstractTableModel>

#include <vector>

#include "tasks/question_answering.h"

namespace scalescope::ui {

class AnswersModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column {
        RankColumn,
        RunAnswerColumn,
        RunScoreColumn,
        RunSpanColumn,
        ReferenceAnswerColumn,
        ReferenceScoreColumn,
        ReferenceSpanColumn,
        AgreeColumn,
        ColumnCount
    };
    enum Role { SortRole = Qt::UserRole + 1, SubjectRole = Qt::UserRole + 2, ProbabilityRole = Qt::UserRole + 3 };

    explicit AnswersModel(QObject* parent = nullptr);

    void setAnswers(std::vector<QaAnswer> run, std::vector<QaAnswer> reference, bool hasReference);
    void clear();
    // How the run side is labelled in the headers: the mode that produced it ("FP8", "Dequant").
    void setRunLabel(const QString& label);

    bool hasReference() const { return hasReference_; }
    const QaAnswer* runAnswerAt(int row) const;       // null when the run has no answer of that rank
    const QaAnswer* referenceAnswerAt(int row) const; // null likewise, and always without a reference
    bool agreesAt(int row) const;

    int rowCount(const QModelIndex& parent = QModelIndex()) const override;
    int columnCount(const QModelIndex& parent = QModelIndex()) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    std::vector<QaAnswer> run_;
    std::vector<QaAnswer> reference_;
    bool hasReference_ = false;
    QString runLabel_ = QStringLiteral("FP8");
};

} // namespace scalescope::ui
