#include "frozen_column_table.h"

#include <QHeaderView>
#include <QScrollBar>

namespace scalescope::ui {

FrozenColumnTableView::FrozenColumnTableView(QWidget* parent) : QTableView(parent)
{
    frozen_ = new QTableView(this);
    frozen_->setObjectName(QStringLiteral("frozenColumn"));
    frozen_->setFocusPolicy(Qt::NoFocus);
    frozen_->setWordWrap(false); // rows keep the main view's heights; long names are elided
    frozen_->setTextElideMode(Qt::ElideMiddle);
    frozen_->verticalHeader()->hide();
    frozen_->horizontalHeader()->setSectionResizeMode(QHeaderView::Fixed);
    frozen_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    frozen_->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    frozen_->setHorizontalScrollMode(ScrollPerPixel);
    frozen_->setVerticalScrollMode(ScrollPerPixel);
    frozen_->setStyleSheet(QStringLiteral("QTableView#frozenColumn { border: none; border-right: 1px solid palette(mid); }"));
    setHorizontalScrollMode(ScrollPerPixel);
    setVerticalScrollMode(ScrollPerPixel);
    viewport()->stackUnder(frozen_);
    connect(horizontalHeader(), &QHeaderView::sectionResized, this, [this](int index, int, int size) {
        if (index == 0) {
            frozen_->setColumnWidth(0, size);
            updateFrozenGeometry();
        }
    });
    connect(verticalHeader(), &QHeaderView::sectionResized, frozen_,
            [this](int index, int, int size) { frozen_->setRowHeight(index, size); });
    connect(frozen_->verticalScrollBar(), &QAbstractSlider::valueChanged, verticalScrollBar(), &QAbstractSlider::setValue);
    connect(verticalScrollBar(), &QAbstractSlider::valueChanged, frozen_->verticalScrollBar(), &QAbstractSlider::setValue);
    // A click on a frozen cell is a click on the table (panels listen to the table's signals).
    connect(frozen_, &QAbstractItemView::clicked, this, &QAbstractItemView::clicked);
    connect(frozen_, &QAbstractItemView::doubleClicked, this, &QAbstractItemView::doubleClicked);
    connect(frozen_, &QAbstractItemView::activated, this, &QAbstractItemView::activated);
    // A click on the header's frozen copy sorts like the real one.
    connect(frozen_->horizontalHeader(), &QHeaderView::sectionClicked, this, [this](int section) {
        if (isSortingEnabled())
            sortByColumn(section, horizontalHeader()->sortIndicatorSection() == section &&
                                          horizontalHeader()->sortIndicatorOrder() == Qt::AscendingOrder
                                      ? Qt::DescendingOrder
                                      : Qt::AscendingOrder);
    });
}

void FrozenColumnTableView::setModel(QAbstractItemModel* model)
{
    QTableView::setModel(model);
    frozen_->setModel(model);
    frozen_->setSelectionModel(selectionModel());
    // The frozen cell is one column of a row: it selects the row, as every table here does.
    frozen_->setSelectionBehavior(SelectRows);
    frozen_->setSelectionMode(SingleSelection);
    if (model) {
        connect(model, &QAbstractItemModel::columnsInserted, this, &FrozenColumnTableView::hideUnfrozenColumns);
        connect(model, &QAbstractItemModel::modelReset, this, &FrozenColumnTableView::hideUnfrozenColumns);
        connect(model, &QAbstractItemModel::layoutChanged, this, &FrozenColumnTableView::hideUnfrozenColumns);
    }
    hideUnfrozenColumns();
}

void FrozenColumnTableView::hideUnfrozenColumns()
{
    if (!model())
        return;
    for (int column = 1; column < model()->columnCount(); ++column)
        frozen_->setColumnHidden(column, true);
    frozen_->setColumnWidth(0, columnWidth(0));
    frozen_->horizontalHeader()->setSortIndicatorShown(horizontalHeader()->isSortIndicatorShown());
    updateFrozenGeometry();
}

void FrozenColumnTableView::resizeEvent(QResizeEvent* event)
{
    QTableView::resizeEvent(event);
    updateFrozenGeometry();
}

QModelIndex FrozenColumnTableView::moveCursor(CursorAction cursorAction, Qt::KeyboardModifiers modifiers)
{
    const QModelIndex current = QTableView::moveCursor(cursorAction, modifiers);
    // Keyboard moves to the right keep the cell beside the frozen column in view.
    if (cursorAction == MoveLeft && current.column() > 0 &&
        visualRect(current).topLeft().x() < frozen_->columnWidth(0)) {
        const int shift = visualRect(current).topLeft().x() - frozen_->columnWidth(0);
        horizontalScrollBar()->setValue(horizontalScrollBar()->value() + shift);
    }
    return current;
}

void FrozenColumnTableView::scrollTo(const QModelIndex& index, ScrollHint hint)
{
    // The frozen column is always in view: a cell of it scrolls the rows only.
    const int sideways = horizontalScrollBar()->value();
    QTableView::scrollTo(index, hint);
    if (index.column() == 0)
        horizontalScrollBar()->setValue(sideways);
}

void FrozenColumnTableView::updateFrozenGeometry()
{
    const int left = verticalHeader()->isVisible() ? verticalHeader()->width() : 0;
    frozen_->setGeometry(left + frameWidth(), frameWidth(), columnWidth(0),
                         viewport()->height() + horizontalHeader()->height());
}

} // namespace scalescope::ui
