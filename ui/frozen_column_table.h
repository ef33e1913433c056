#pragma once
// A table view whose first column stays in place while the others scroll sideways: the name a row
// is about (a tensor, a capture point) stays beside its numbers on a narrow screen. The frozen
// column is a second view over the same model and selection, laid over the left edge and scrolled
// vertically with the main one (the technique of Qt's "frozen column" example).
#include <QTableView>

namespace scalescope::ui {

class FrozenColumnTableView : public QTableView {
    Q_OBJECT
public:
    explicit FrozenColumnTableView(QWidget* parent = nullptr);

    void setModel(QAbstractItemModel* model) override;
    QTableView* frozenView() const { return frozen_; }

protected:
    void resizeEvent(QResizeEvent* event) override;
    QModelIndex moveCursor(CursorAction cursorAction, Qt::KeyboardModifiers modifiers) override;
    void scrollTo(const QModelIndex& index, ScrollHint hint = EnsureVisible) override;

private:
    void updateFrozenGeometry();
    void hideUnfrozenColumns();
    QTableView* frozen_ = nullptr;
};

} // namespace scalescope::ui
