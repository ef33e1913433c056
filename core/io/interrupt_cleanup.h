#pragma once
// What an output being written leaves when SIGINT, SIGTERM or SIGHUP ends the process: its
// temporary (a file, or a folder of files such as a checkpoint being built or a runner client's
// exchange folder) is removed before the process dies, instead of lying there (hundreds of MB for a
// checkpoint) until the next writer into that folder sweeps it.
//
// Writers register a temporary before they create it and unregister it once it is renamed into
// place or removed; the handler that installInterruptCleanup() sets removes what is registered.
#include <string>

namespace scalescope {

enum class TemporaryKind {
    File,
    Folder, // a folder of files (no subfolders): its files are removed, then the folder
};

// Registers path while the object lives. Best effort: with every slot taken (64), or a path longer
// than PATH_MAX, nothing is registered and the temporary is left to the next writer's sweep.
class InterruptCleanup {
public:
    InterruptCleanup(const std::string& path, TemporaryKind kind);
    ~InterruptCleanup();
    InterruptCleanup(const InterruptCleanup&) = delete;
    InterruptCleanup& operator=(const InterruptCleanup&) = delete;

private:
    int slot_ = -1;
};

// Installs one handler for SIGINT, SIGTERM and SIGHUP: it calls firstStep (when not null; it must
// be async-signal-safe, e.g. stopping runner processes, so that nothing writes into an exchange
// folder any more), removes every registered temporary, then ends the process by the same signal
// with its default action, as if no handler had been installed. For a program's main.
void installInterruptCleanup(void (*firstStep)());

// What the handler does with the registered temporaries. Async-signal-safe.
void removeRegisteredTemporariesFromSignalHandler();

} // namespace scalescope
