#pragma once
// Paints a horizontal bar behind a cell's text whose length is the cell's probability (in [0, 1],
// read from a role, Qt::UserRole + 3 by default as in MaskPredictionsModel/AnswersModel), in the
// palette's highlight colour made translucent so the text stays legible; on a selected row the bar
// uses the highlighted-text colour instead so it remains visible on the selection. Cells without a
// valid probability are painted as QStyledItemDelegate paints them, so the delegate can be set on a
// whole view or on single columns alike.
#include <QStyledItemDelegate>

namespace scalescope::ui {

class ProbabilityBarDelegate : public QStyledItemDelegate {
    Q_OBJECT
public:
    static constexpr int DefaultProbabilityRole = Qt::UserRole + 3;

    explicit ProbabilityBarDelegate(QObject* parent = nullptr, int probabilityRole = DefaultProbabilityRole);

    int probabilityRole() const { return probabilityRole_; }

    void paint(QPainter* painter, const QStyleOptionViewItem& option, const QModelIndex& index) const override;

    // The part of `cell` the bar covers for this probability (clamped to [0, 1]; empty for NaN).
    static QRect barRect(const QRect& cell, double probability, Qt::LayoutDirection direction = Qt::LeftToRight);

private:
    int probabilityRole_;
};

} // namespace scalescope::ui
