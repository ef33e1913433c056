#include "models/probability_bar_delegate.h"

#include <QApplication>
#include <QPainter>
#include <QStyle>

#include <algorithm>
#include <cmath>

namespace scalescope::ui {

ProbabilityBarDelegate::ProbabilityBarDelegate(QObject* parent, int probabilityRole)
    : QStyledItemDelegate(parent), probabilityRole_(probabilityRole)
{
}

QRect ProbabilityBarDelegate::barRect(const QRect& cell, double probability, Qt::LayoutDirection direction)
{
    if (std::isnan(probability) || cell.isEmpty())
        return QRect();
    const double clamped = std::clamp(probability, 0.0, 1.0);
    const int width = int(std::lround(clamped * cell.width()));
    if (width <= 0)
        return QRect();
    // Right-to-left layouts grow the bar from the right edge, where their text starts.
    const int left = direction == Qt::RightToLeft ? cell.right() - width + 1 : cell.left();
    return QRect(left, cell.top(), width, cell.height());
}

void ProbabilityBarDelegate::paint(QPainter* painter, const QStyleOptionViewItem& option,
                                   const QModelIndex& index) const
{
    const QVariant probability = index.data(probabilityRole_);
    bool isNumber = false;
    const double value = probability.toDouble(&isNumber);
    if (!probability.isValid() || !isNumber) {
        QStyledItemDelegate::paint(painter, option, index);
        return;
    }

    QStyleOptionViewItem item(option);
    initStyleOption(&item, index);
    QStyle* style = item.widget ? item.widget->style() : QApplication::style();
    const bool selected = item.state & QStyle::State_Selected;

    // Background and selection first, then the bar, then the text on top with the background
    // suppressed, so that the panel is not painted a second time over the bar.
    style->drawPrimitive(QStyle::PE_PanelItemViewItem, &item, painter, item.widget);

    const QRect bar = barRect(item.rect.adjusted(1, 1, -1, -1), value, item.direction);
    if (!bar.isEmpty()) {
        QColor colour = item.palette.color(selected ? QPalette::HighlightedText : QPalette::Highlight);
        colour.setAlpha(selected ? 70 : 90);
        painter->save();
        painter->fillRect(bar, colour);
        painter->restore();
    }

    QStyleOptionViewItem text(item);
    text.backgroundBrush = Qt::NoBrush;
    if (selected) {
        text.state &= ~QStyle::State_Selected;
        text.palette.setColor(QPalette::Text, item.palette.color(QPalette::HighlightedText));
    }
    style->drawControl(QStyle::CE_ItemViewItem, &text, painter, text.widget);
}

} // namespace scalescope::ui
