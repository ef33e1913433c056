#pragma once
// Quoting for the POSIX shell that starts runner commands (/bin/sh -c).
#include <QString>

namespace scalescope::ui {

// `text` as one shell word that the shell takes literally: inside single quotes nothing expands
// ($(...), backticks, $VAR, \, "), and a single quote itself is closed, escaped and reopened ('\'').
QString shellQuote(const QString& text);

// The device spec of the CPU runner that ships next to this program: runner:'<dir>/scalescope-cli' runner.
QString localRunnerDevice(const QString& applicationDir);

} // namespace scalescope::ui
