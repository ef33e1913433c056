#pragma once
// What the sequence-task panels (Embed, Rerank, Classify) share: a page that scrolls rather than
// squeezing its charts on a laptop screen, the run button's enabled state and tooltip, Ctrl+Enter,
// one input per line, and table cells that sort by their number.
#include <QString>
#include <QList>
#include <QStringList>

#include <functional>

class QPushButton;
class QStandardItem;
class QTableView;
class QWidget;

namespace scalescope::ui {

// The height below which a task chart's title and tick labels crowd its plot: the page scrolls
// instead (every chart of the Embed, Rerank, Classify and Evaluate Tasks panels).
constexpr int kTaskChartMinimumHeight = 280;

// Lays `content` out in a vertical scroll area that fills `owner`; below the content's minimum
// height the page scrolls.
void setScrollingPage(QWidget* owner, QWidget* content);

// Ctrl+Enter (either Enter key) anywhere in `owner` calls `run`.
void addRunShortcut(QWidget* owner, const std::function<void()>& run);

// The non-empty lines of a text box, trimmed: one input each.
QStringList inputLines(const QString& text);

// The role a number cell sorts by and a report's CSV reads its full value from (tableCsv's default).
constexpr int kNumberRole = 0x0100 + 1; // Qt::UserRole + 1

// A cell showing `value` with `decimals` decimals, sorting by the number (kNumberRole).
QStandardItem* numberItem(double value, int decimals);
// A read-only cell.
QStandardItem* textItem(const QString& text);
// A read-only cell for a text that may be long: elided in a fitted table, whole in its tooltip.
QStandardItem* longTextItem(const QString& text);

// A table that never scrolls sideways at a laptop's width: the `textColumns` share the room the
// others (sized to their contents) leave, their texts elided at the right (the whole text in the
// cell's tooltip, longTextItem). Call after the model's columns exist.
void fitColumns(QTableView* view, const QList<int>& textColumns);

// The run button of a task panel: on when no job runs and the open checkpoint can run this task;
// its tooltip says what it does, or why it is off.
class RunButtonState {
public:
    RunButtonState(QPushButton* button, QString whatItDoes) : button_(button), whatItDoes_(std::move(whatItDoes)) { }
    void setBusy(bool busy);
    void setRunnable(bool runnable, const QString& reason);

private:
    void apply();
    QPushButton* button_;
    QString whatItDoes_;
    bool busy_ = false;
    bool runnable_ = true;
    QString reason_;
};

} // namespace scalescope::ui
