#include "job_tracker.h"

#include <QMetaObject>

namespace scalescope::ui {

JobTracker::Ticket JobTracker::start(Kind kind)
{
    const Ticket ticket{kind, ++nextId_};
    latest_[kind] = ticket.id;
    if (running_++ == 0)
        emit busyChanged(true);
    return ticket;
}

bool JobTracker::isCurrent(const Ticket& ticket) const
{
    const auto latest = latest_.find(ticket.kind);
    return latest != latest_.end() && latest->second == ticket.id;
}

void JobTracker::finish()
{
    if (--running_ == 0) {
        // The flag was for the jobs that ran; the next one starts uncancelled.
        cancel_ = false;
        emit busyChanged(false);
    }
}

void JobTracker::cancel()
{
    if (running_ > 0)
        cancel_ = true;
}

void JobTracker::reportProgress(double fraction, const QString& stage)
{
    // Queued even on the GUI thread: a progress callback never re-enters the window's code. With
    // the tracker as context, a report still queued when it is destroyed is dropped.
    QMetaObject::invokeMethod(
        this, [this, fraction, stage] { emit progress(fraction, stage); }, Qt::QueuedConnection);
}

} // namespace scalescope::ui
