#include "settings.h"

namespace scalescope::ui {
namespace {

// Folder paths contain '/', which QSettings reads as groups: keep them as one opaque key.
QString referenceKey(const QString& checkpoint)
{
    return QStringLiteral("reference/") + QString::fromLatin1(checkpoint.toUtf8().toHex());
}

} // namespace

QByteArray Settings::windowGeometry() const { return settings_.value(QStringLiteral("window/geometry")).toByteArray(); }
void Settings::setWindowGeometry(const QByteArray& geometry) { settings_.setValue(QStringLiteral("window/geometry"), geometry); }
QByteArray Settings::windowState() const { return settings_.value(QStringLiteral("window/state")).toByteArray(); }
void Settings::setWindowState(const QByteArray& state) { settings_.setValue(QStringLiteral("window/state"), state); }
int Settings::currentTab() const { return settings_.value(QStringLiteral("window/tab"), 0).toInt(); } // Triage
void Settings::setCurrentTab(int index) { settings_.setValue(QStringLiteral("window/tab"), index); }

QByteArray Settings::splitterState(const QString& splitter) const
{
    return settings_.value(QStringLiteral("splitters/") + splitter).toByteArray();
}

void Settings::setSplitterState(const QString& splitter, const QByteArray& state)
{
    settings_.setValue(QStringLiteral("splitters/") + splitter, state);
}

int Settings::runMode() const { return settings_.value(QStringLiteral("run/mode"), 0).toInt(); }
void Settings::setRunMode(int index) { settings_.setValue(QStringLiteral("run/mode"), index); }
QString Settings::aiuRunnerCommand() const { return settings_.value(QStringLiteral("device/aiuCommand")).toString(); }
void Settings::setAiuRunnerCommand(const QString& command) { settings_.setValue(QStringLiteral("device/aiuCommand"), command); }

QString Settings::referenceFor(const QString& checkpoint) const { return settings_.value(referenceKey(checkpoint)).toString(); }
void Settings::setReferenceFor(const QString& checkpoint, const QString& reference)
{
    settings_.setValue(referenceKey(checkpoint), reference);
}

QStringList Settings::recentCheckpoints() const { return settings_.value(QStringLiteral("recent/checkpoints")).toStringList(); }
void Settings::setRecentCheckpoints(const QStringList& folders)
{
    if (folders.isEmpty())
        settings_.remove(QStringLiteral("recent/checkpoints"));
    else
        settings_.setValue(QStringLiteral("recent/checkpoints"), folders);
}

QString Settings::lastOpenFolder() const { return settings_.value(QStringLiteral("paths/lastOpen")).toString(); }
void Settings::setLastOpenFolder(const QString& folder) { settings_.setValue(QStringLiteral("paths/lastOpen"), folder); }
QString Settings::lastReportFolder() const { return settings_.value(QStringLiteral("paths/lastReport")).toString(); }
void Settings::setLastReportFolder(const QString& folder) { settings_.setValue(QStringLiteral("paths/lastReport"), folder); }
QString Settings::squadFile() const { return settings_.value(QStringLiteral("evaluate/file")).toString(); }
void Settings::setSquadFile(const QString& path) { settings_.setValue(QStringLiteral("evaluate/file"), path); }

} // namespace scalescope::ui
