#pragma once
// The status bar's permanent part, following the session: the progress of the running job with
// its Cancel, the float what-if ("2 Linears in float: ...") with its Clear, then device (with the
// last forward's times), mode, dtype, reference and load time. Transient messages stay the
// window's.
#include <QObject>
#include <QString>

#include <memory>

class QComboBox;
class QLabel;
class QProgressBar;
class QPushButton;
class QStatusBar;

namespace scalescope {
struct ComparisonResult;
}

namespace scalescope::ui {

class WorkbenchSession;
struct CheckpointInfo;

class SessionStatus : public QObject {
    Q_OBJECT
public:
    // Fills `bar`; before the backend names the device, the label shows `deviceBox`'s choice.
    SessionStatus(WorkbenchSession* session, QComboBox* deviceBox, QStatusBar* bar);

    // Reads the session's state again (a toolbar control changed it).
    void update();
    QLabel* floatStatus() const { return floatStatus_; }
    QPushButton* clearFloatButton() const { return clearFloat_; }

signals:
    // Clear beside the what-if: every Linear runs as the checkpoint declares again.
    void clearFloatRequested();

private:
    void createWidgets(QStatusBar* bar);
    void connectSession();
    void showRunTimes(const ComparisonResult& comparison);
    void updateFloatStatus();

    WorkbenchSession* session_;
    QComboBox* deviceBox_;
    std::shared_ptr<const CheckpointInfo> info_;
    QString deviceName_;
    QString referenceLabel_;
    QString lastRunMs_;
    QLabel* deviceLabel_ = nullptr;
    QLabel* modeLabel_ = nullptr;
    QLabel* dtypeLabel_ = nullptr;
    QLabel* loadLabel_ = nullptr;
    QLabel* referenceStatus_ = nullptr;
    QLabel* floatStatus_ = nullptr;
    QPushButton* clearFloat_ = nullptr;
    QProgressBar* progress_ = nullptr;
    QPushButton* cancelButton_ = nullptr;
};

} // namespace scalescope::ui
