#pragma once
// The dialog that asks for the command line of a runner on an AIU host (through ssh or oc exec).
// "Test connection" starts the runner with the open checkpoint on a pool thread (the GUI keeps
// running), says whether hello and load worked, and stops it again.
#include <QDialog>
#include <QFutureWatcher>

class QDialogButtonBox;
class QLabel;
class QLineEdit;
class QPushButton;

namespace scalescope::ui {

class RunnerDialog : public QDialog {
    Q_OBJECT
public:
    // checkpoint: the folder the test loads (empty: the test is disabled and says why).
    RunnerDialog(const QString& command, const QString& checkpoint, QWidget* parent = nullptr);
    ~RunnerDialog() override;

    QString command() const;
    QLineEdit* commandEdit() const { return command_; }
    QPushButton* testButton() const { return test_; }
    QLabel* testResult() const { return result_; }
    // Starts the test as the button does; testFinished reports the outcome.
    void testConnection();

signals:
    void testFinished(bool ok, const QString& message);

private:
    QString checkpoint_;
    QLineEdit* command_ = nullptr;
    QPushButton* test_ = nullptr;
    QLabel* result_ = nullptr;
    QDialogButtonBox* buttons_ = nullptr;
    QFutureWatcher<QString>* watcher_ = nullptr;
};

} // namespace scalescope::ui
