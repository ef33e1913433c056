#pragma once
// Which long jobs (open, load reference, run, capture, evaluate, sweep, keep-float, device check,
// calibration lab, calibrated write) are running,
// and which of them still matter. Every job gets an id when it starts; starting another job of the
// same kind supersedes it, so its result, arriving later, is dropped: a slow answer never
// overwrites a newer one (the pattern of KDAB hotspot's JobTracker). The tracker also holds the
// one cancel flag the engine polls, says when the window turns busy or idle, and relays the
// running job's progress.
//
// Threading: used on the GUI thread only, except cancelFlag(), which the worker reads, and
// reportProgress(), which may be called from any thread (it queues to the GUI thread).
#include <QObject>
#include <QString>

#include <atomic>
#include <map>

namespace scalescope::ui {

class JobTracker : public QObject {
    Q_OBJECT
public:
    enum class Kind { Open, Reference, Run, Capture, Evaluate, Sensitivity, KeepFloat, DeviceCheck, CompareWith, Calibrate,
                      WriteCalibrated };
    struct Ticket {
        Kind kind;
        quint64 id;
    };

    explicit JobTracker(QObject* parent = nullptr) : QObject(parent) { }

    // A job of `kind` is submitted: it supersedes any earlier one of that kind.
    Ticket start(Kind kind);
    // No newer job of the ticket's kind started since: its result is still wanted.
    bool isCurrent(const Ticket& ticket) const;
    // The job is done (delivered, dropped or failed).
    void finish();
    // Asks the running jobs to stop at their next check; no-op when idle.
    void cancel();
    bool busy() const { return running_ > 0; }
    const std::atomic<bool>* cancelFlag() const { return &cancel_; }
    void reportProgress(double fraction, const QString& stage);

signals:
    void busyChanged(bool busy);
    void progress(double fraction, const QString& stage);

private:
    std::atomic<bool> cancel_{false};
    int running_ = 0;
    quint64 nextId_ = 0;
    std::map<Kind, quint64> latest_;
};

} // namespace scalescope::ui
