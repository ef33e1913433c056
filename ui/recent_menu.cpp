#include "recent_menu.h"

#include <QDir>
#include <QMenu>

#include "settings.h"

namespace scalescope::ui {
namespace {

constexpr int kMaxRecent = 8;

} // namespace

RecentMenu::RecentMenu(QMenu* menu) : QObject(menu), menu_(menu)
{
    rebuild();
}

void RecentMenu::add(const QString& dir)
{
    Settings settings;
    QStringList recent = settings.recentCheckpoints();
    recent.removeAll(dir);
    recent.prepend(dir);
    while (recent.size() > kMaxRecent)
        recent.removeLast();
    settings.setRecentCheckpoints(recent);
    rebuild();
}

void RecentMenu::rebuild()
{
    menu_->clear();
    const QStringList recent = Settings().recentCheckpoints();
    for (const QString& dir : recent)
        menu_->addAction(QDir::toNativeSeparators(dir), this, [this, dir] { emit openRequested(dir); });
    if (recent.isEmpty())
        menu_->addAction(tr("(none)"))->setEnabled(false);
    else {
        menu_->addSeparator();
        menu_->addAction(tr("Clear List"), this, [this] {
            Settings().setRecentCheckpoints({});
            rebuild();
        });
    }
}

} // namespace scalescope::ui
