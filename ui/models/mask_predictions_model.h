#pragma once
// Fill-mask predictions of a run next to its reference: one row per (mask, rank) with columns
// Mask (1-based, in text order), Rank, Token and Probability of the run, Token and Probability of
// the reference. Tokens are shown with their whitespace made visible (" Paris" reads "␣Paris",
// a newline "↵"), so that tokens differing only in a leading space are told apart; the tooltip
// quotes the raw token and gives its id. ProbabilityRole (Qt::UserRole + 3) gives the probability
// in [0, 1] on the probability columns, for ProbabilityBarDelegate. Other roles as in
// tensor_table_model.h.
#include <QAbstractTableModel>

#include <vector>

#include "tasks/fill_mask.h"

namespace scalescope::ui {

class MaskPredictionsModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column {
        MaskColumn,
        RankColumn,
        RunTokenColumn,
        RunProbabilityColumn,
        ReferenceTokenColumn,
        ReferenceProbabilityColumn,
        ColumnCount
    };
    enum Role { SortRole = Qt::UserRole + 1, SubjectRole = Qt::UserRole + 2, ProbabilityRole = Qt::UserRole + 3 };

    explicit MaskPredictionsModel(QObject* parent = nullptr);

    // run[m] / reference[m]: predictions at mask m, best first. A mask has as many rows as its
    // longer list. maskPositions (token positions, optional) only feed the tooltips.
    void setPredictions(std::vector<std::vector<MaskPrediction>> run,
                        std::vector<std::vector<MaskPrediction>> reference, bool hasReference,
                        std::vector<int> maskPositions = {});
    void clear();
    // How the run side is labelled in the headers: the mode that produced it ("FP8", "Dequant").
    void setRunLabel(const QString& label);

    bool hasReference() const { return hasReference_; }

    // " Paris" -> "␣Paris"; "" -> "(empty)".
    static QString visibleToken(const std::string& token);

    int rowCount(const QModelIndex& parent = QModelIndex()) const override;
    int columnCount(const QModelIndex& parent = QModelIndex()) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    struct RowRef {
        int mask;
        int rank;
    };
    const MaskPrediction* prediction(const RowRef& ref, bool runSide) const;

    std::vector<std::vector<MaskPrediction>> run_;
    std::vector<std::vector<MaskPrediction>> reference_;
    std::vector<int> maskPositions_;
    std::vector<RowRef> rows_;
    bool hasReference_ = false;
    QString runLabel_ = QStringLiteral("FP8");
};

} // namespace scalescope::ui
