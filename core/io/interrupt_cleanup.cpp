// A signal handler may run between any two instructions of any thread, including one that holds
// malloc's lock or is halfway through a registration. So the handler may make only
// async-signal-safe calls (signal-safety(7)): no allocation, no locks, no std::filesystem, no
// opendir/readdir (they allocate). Registrations are therefore kept in a fixed table of slots
// whose paths are copied into fixed buffers, each slot guarded by an atomic state. The handler
// claims a slot by a compare-exchange from "registered" to "claimed" before it reads the path, so
// a registration ending at that moment neither frees the slot under the handler nor lets it be
// reused with another path. It removes with unlink, open, getdents64, unlinkat and rmdir only.
#include "io/interrupt_cleanup.h"

#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace scalescope {
namespace {

enum SlotState : int { Free = 0, Filling, RegisteredFile, RegisteredFolder, Claimed };

struct Slot {
    std::atomic<int> state{Free};
    char path[PATH_MAX];
};

std::array<Slot, 64> slots;
void (*interruptFirstStep)() = nullptr;

// The files of one folder, then the folder. getdents64 is called through syscall(): it is the
// kernel call itself, with no allocation (readdir allocates its DIR). A pass that removed entries
// is followed by another, because entries removed while reading can make the kernel skip others.
void removeFolderOfFiles(const char* path)
{
    for (int pass = 0; pass < 8; ++pass) {
        const int fd = ::open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
            return;
        alignas(8) char buffer[4096];
        bool removedAny = false;
        while (true) {
            const long n = ::syscall(SYS_getdents64, fd, buffer, sizeof buffer);
            if (n <= 0)
                break;
            // struct linux_dirent64: u64 d_ino, s64 d_off, u16 d_reclen, u8 d_type, char d_name[].
            for (long offset = 0; offset < n;) {
                uint16_t length = 0;
                std::memcpy(&length, buffer + offset + 16, sizeof length);
                const char* name = buffer + offset + 19;
                if (length == 0)
                    break;
                if (std::strcmp(name, ".") != 0 && std::strcmp(name, "..") != 0 && ::unlinkat(fd, name, 0) == 0)
                    removedAny = true;
                offset += length;
            }
        }
        ::close(fd);
        if (::rmdir(path) == 0 || errno == ENOENT || !removedAny)
            return;
    }
}

void onInterrupt(int signal)
{
    const int savedErrno = errno;
    if (interruptFirstStep)
        interruptFirstStep();
    removeRegisteredTemporariesFromSignalHandler();
    // The default action ends the process as the signal would have without a handler (exit status
    // "killed by SIGTERM"); it is delivered when this handler returns and unblocks the signal.
    ::signal(signal, SIG_DFL);
    ::raise(signal);
    errno = savedErrno;
}

} // namespace

InterruptCleanup::InterruptCleanup(const std::string& path, TemporaryKind kind)
{
    if (path.empty() || path.size() >= PATH_MAX)
        return;
    for (std::size_t i = 0; i < slots.size(); ++i) {
        int expected = Free;
        if (!slots[i].state.compare_exchange_strong(expected, Filling))
            continue;
        std::memcpy(slots[i].path, path.c_str(), path.size() + 1);
        slots[i].state.store(kind == TemporaryKind::File ? RegisteredFile : RegisteredFolder);
        slot_ = static_cast<int>(i);
        return;
    }
}

InterruptCleanup::~InterruptCleanup()
{
    if (slot_ < 0)
        return;
    Slot& slot = slots[static_cast<std::size_t>(slot_)];
    int registered = slot.state.load();
    // Fails only when the handler claimed the slot: the process is ending, the slot stays claimed.
    if (registered != Claimed)
        slot.state.compare_exchange_strong(registered, Free);
}

void removeRegisteredTemporariesFromSignalHandler()
{
    // Files first: a registered file may sit inside a registered folder.
    for (const int kind : {RegisteredFile, RegisteredFolder})
        for (Slot& slot : slots) {
            int expected = kind;
            if (!slot.state.compare_exchange_strong(expected, Claimed))
                continue;
            if (kind == RegisteredFile)
                ::unlink(slot.path);
            else
                removeFolderOfFiles(slot.path);
        }
}

void installInterruptCleanup(void (*firstStep)())
{
    interruptFirstStep = firstStep;
    struct sigaction action {};
    action.sa_handler = onInterrupt;
    // While one of the three is handled the others wait, so two handlers never interleave.
    sigemptyset(&action.sa_mask);
    for (int signal : {SIGINT, SIGTERM, SIGHUP})
        sigaddset(&action.sa_mask, signal);
    action.sa_flags = SA_RESTART;
    for (int signal : {SIGINT, SIGTERM, SIGHUP})
        ::sigaction(signal, &action, nullptr);
}

} // namespace scalescope
