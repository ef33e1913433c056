#pragma once
// The strip above a panel's results that says which state produced them. It holds the stamp of the
// result on screen and, when the window's state moves on (another reference, mode or device), turns
// into a warning naming what changed, with a Rerun button. A panel with no result hides it.
#include <QFrame>

#include "run_stamp.h"

class QLabel;
class QPushButton;

namespace scalescope::ui {

class StaleBanner : public QFrame {
    Q_OBJECT
public:
    explicit StaleBanner(QWidget* parent = nullptr);

    // A result of `stamp` is now on screen.
    void setResultStamp(const RunStamp& stamp);
    void clearResult();
    void setCurrentStamp(const RunStamp& stamp);

    bool hasResult() const { return hasResult_; }
    bool isStale() const { return hasResult_ && result_ != current_; }
    const RunStamp& resultStamp() const { return result_; }
    QLabel* label() const { return label_; }
    QPushButton* rerunButton() const { return rerun_; }

signals:
    void rerunRequested();

private:
    void refresh();
    bool hasResult_ = false;
    RunStamp result_;
    RunStamp current_;
    QLabel* label_ = nullptr;
    QPushButton* rerun_ = nullptr;
};

} // namespace scalescope::ui
