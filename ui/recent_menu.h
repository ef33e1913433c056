#pragma once
// File > Open Recent: the last checkpoints opened, newest first, kept in Settings.
#include <QObject>
#include <QString>

class QMenu;

namespace scalescope::ui {

class RecentMenu : public QObject {
    Q_OBJECT
public:
    // Fills `menu` from Settings.
    explicit RecentMenu(QMenu* menu);

    // dir opened: it moves to the top (the list keeps the last 8).
    void add(const QString& dir);

signals:
    void openRequested(const QString& dir);

private:
    void rebuild();

    QMenu* menu_;
};

} // namespace scalescope::ui
