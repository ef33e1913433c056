#include "panels/task_panel_parts.h"

#include <QFrame>
#include <QHeaderView>
#include <QKeySequence>
#include <QPushButton>
#include <QScrollArea>
#include <QShortcut>
#include <QStandardItem>
#include <QTableView>
#include <QVBoxLayout>

namespace scalescope::ui {

static_assert(kNumberRole == Qt::UserRole + 1, "tableCsv reads Qt::UserRole + 1");

void setScrollingPage(QWidget* owner, QWidget* content)
{
    auto* scroll = new QScrollArea(owner);
    scroll->setObjectName(QStringLiteral("pageScrollArea")); // as result_tabs names its pages' scroll areas
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    scroll->setWidget(content);
    auto* layout = new QVBoxLayout(owner);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(scroll);
}

void addRunShortcut(QWidget* owner, const std::function<void()>& run)
{
    for (const QKeySequence& keys : {QKeySequence(Qt::CTRL | Qt::Key_Return), QKeySequence(Qt::CTRL | Qt::Key_Enter)}) {
        auto* shortcut = new QShortcut(keys, owner);
        shortcut->setContext(Qt::WidgetWithChildrenShortcut);
        QObject::connect(shortcut, &QShortcut::activated, owner, run);
    }
}

QStringList inputLines(const QString& text)
{
    QStringList lines;
    for (const QString& line : text.split(QLatin1Char('\n'))) {
        const QString trimmed = line.trimmed();
        if (!trimmed.isEmpty())
            lines << trimmed;
    }
    return lines;
}

QStandardItem* numberItem(double value, int decimals)
{
    auto* item = new QStandardItem(QString::number(value, 'f', decimals));
    item->setData(value, kNumberRole);
    item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    item->setEditable(false);
    return item;
}

QStandardItem* textItem(const QString& text)
{
    auto* item = new QStandardItem(text);
    item->setEditable(false);
    return item;
}

QStandardItem* longTextItem(const QString& text)
{
    QStandardItem* item = textItem(text);
    item->setToolTip(text);
    return item;
}

void fitColumns(QTableView* view, const QList<int>& textColumns)
{
    view->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    view->setTextElideMode(Qt::ElideRight);
    view->setWordWrap(false);
    QHeaderView* header = view->horizontalHeader();
    header->setStretchLastSection(false);
    header->setMinimumSectionSize(24);
    const int columns = view->model() ? view->model()->columnCount() : 0;
    for (int column = 0; column < columns; ++column)
        header->setSectionResizeMode(column, textColumns.contains(column) ? QHeaderView::Stretch
                                                                           : QHeaderView::ResizeToContents);
}

void RunButtonState::setBusy(bool busy)
{
    busy_ = busy;
    apply();
}

void RunButtonState::setRunnable(bool runnable, const QString& reason)
{
    runnable_ = runnable;
    reason_ = reason;
    apply();
}

void RunButtonState::apply()
{
    button_->setEnabled(!busy_ && runnable_);
    button_->setToolTip(runnable_ ? whatItDoes_ + QObject::tr(" (Ctrl+Enter)")
                                  : QObject::tr("Cannot run: %1").arg(reason_));
}

} // namespace scalescope::ui
