#pragma once
// Every value the workbench keeps between sessions, behind typed accessors: a key is spelled once,
// here, so a key that is written but never read (or read under another spelling) cannot happen.
// Backed by QSettings (the application's organisation and name); cheap enough to construct per use.
#include <QByteArray>
#include <QSettings>
#include <QString>
#include <QStringList>

namespace scalescope::ui {

class Settings {
public:
    QByteArray windowGeometry() const;
    void setWindowGeometry(const QByteArray& geometry);
    QByteArray windowState() const;
    void setWindowState(const QByteArray& state);
    // The tab shown at start-up; the Ask tab for a first run.
    int currentTab() const;
    void setCurrentTab(int index);
    // A splitter's sizes, by the splitter's object name.
    QByteArray splitterState(const QString& splitter) const;
    void setSplitterState(const QString& splitter, const QByteArray& state);

    // Index into the Mode box.
    int runMode() const;
    void setRunMode(int index);
    // The last command line given for an AIU runner; empty until one was entered.
    QString aiuRunnerCommand() const;
    void setAiuRunnerCommand(const QString& command);

    // Each checkpoint folder remembers its reference folder (empty: the dequantized stand-in).
    QString referenceFor(const QString& checkpoint) const;
    void setReferenceFor(const QString& checkpoint, const QString& reference);

    QStringList recentCheckpoints() const;
    void setRecentCheckpoints(const QStringList& folders);
    // Where the Open and Reference dialogs start; the last folder opened.
    QString lastOpenFolder() const;
    void setLastOpenFolder(const QString& folder);
    QString lastReportFolder() const;
    void setLastReportFolder(const QString& folder);
    QString squadFile() const;
    void setSquadFile(const QString& path);

private:
    QSettings settings_;
};

} // namespace scalescope::ui
