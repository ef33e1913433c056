#pragma once
// Who made a temporary that sits beside an output while it is written (".NAME.tmp-OWNER-N",
// ".NAME.partial-OWNER", ".NAME.old-OWNER", a runner client's "scalescope-runner-OWNER-XXXXXX", a
// runner's upload folder "HASH.partial-OWNER-XXXXXX"),
// and when one that was left behind may be removed.
//
// OWNER is "HOST-PID". HOST is 16 hex digits of the SHA-256 of this machine's boot id
// (/proc/sys/kernel/random/boot_id) and this process's PID namespace (/proc/self/ns/pid); PID is
// the writer's pid. A pid names a process only on the boot and in the namespace that issued it: a
// second container writing into a shared folder has pids this one cannot see, so "no such process"
// here says nothing about that writer. So a leftover is removed only when
//   - it carries this HOST and its PID no longer runs (a writer here that was killed), or
//   - it carries another HOST and nothing in it was modified for kAbandonedTemporaryAge (a writer
//     elsewhere that died; a live writer keeps modifying what it writes). This applies only to
//     what is written continuously (a file's temporary, a checkpoint folder being built): a runner
//     client's exchange folder and a runner's upload folder may sit idle for days, and a parked
//     destination is the user's previous checkpoint, so those are left to their own host.
// A name without a well-formed OWNER was not made by this program and is never removed (a user's
// ".notes.tmp-424243-1" or ".photos.partial-424242").
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace scalescope {

struct TemporaryOwner {
    std::string host; // 16 lower-case hex digits
    long pid = 0;
};

constexpr std::chrono::hours kAbandonedTemporaryAge{24};

// This process's HOST. When the boot id or the PID namespace cannot be read it is random, so that
// no other process's temporaries pass for this host's (only their age removes them then).
const std::string& thisHostTag();
// "HOST-PID" of this process.
std::string temporaryOwnerTag();
// Exactly "HOST-PID" with a 16-digit lower-case hex HOST and a positive decimal PID, or nullopt.
std::optional<TemporaryOwner> parseTemporaryOwner(std::string_view text);

// The OWNER of a folder mkdtemp made from PREFIX + "HOST-PID" + "-XXXXXX", or nullopt when name is
// not exactly that form.
std::optional<TemporaryOwner> ownerOfMkdtempName(std::string_view name, std::string_view prefix);

// Whether owner is a process of this host and PID namespace, other than this one, that no longer
// runs: the first rule above, the only one for exchange folders and parked destinations.
bool ownerIsGoneHere(const TemporaryOwner& owner);
// Whether the temporary at path (a file's, or a checkpoint folder being built), named with owner,
// was left behind and may be removed: both rules above. For a folder, its age is that of the
// newest of the folder and what it holds.
bool temporaryIsAbandoned(const TemporaryOwner& owner, const std::string& path);

// Removes each folder directly in `parent` (a folder, not a link to one) whose name ownerOf reads
// an owner from that is gone here (ownerIsGoneHere); no other entry is touched. For what may sit
// idle for long (exchange and upload folders), so never by age.
void removeFoldersOfGoneOwners(const std::string& parent,
                               const std::function<std::optional<TemporaryOwner>(std::string_view name)>& ownerOf);

// True when no process with this pid exists in this PID namespace.
bool processIsGone(long pid);

} // namespace scalescope
