#include "runner_dialog.h"

#include <QDialogButtonBox>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include "common/error.h"
#include "device/runner_backend.h"

namespace scalescope::ui {

RunnerDialog::RunnerDialog(const QString& command, const QString& checkpoint, QWidget* parent)
    : QDialog(parent), checkpoint_(checkpoint)
{
    setWindowTitle(tr("AIU Runner"));
    command_ = new QLineEdit(command, this);
    // An example, not a value: an unedited example must not be started as if the user meant it.
    command_->setPlaceholderText(tr("e.g. ssh aiu-host torchrun --nproc-per-node 1 aiu_runner.py"));
    command_->setMinimumWidth(420);
    test_ = new QPushButton(tr("Test Connection"), this);
    result_ = new QLabel(this);
    result_->setWordWrap(true);
    result_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    if (checkpoint_.isEmpty()) {
        test_->setEnabled(false);
        test_->setToolTip(tr("Open a checkpoint first: the test loads it on the runner."));
    }
    buttons_ = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(new QLabel(tr("Command line that starts the AIU runner (it may go through ssh or oc exec):"), this));
    layout->addWidget(command_);
    auto* testRow = new QHBoxLayout;
    testRow->addWidget(test_);
    testRow->addWidget(result_, 1);
    layout->addLayout(testRow);
    layout->addWidget(buttons_);

    auto updateOk = [this] { buttons_->button(QDialogButtonBox::Ok)->setEnabled(!command_->text().trimmed().isEmpty()); };
    connect(command_, &QLineEdit::textChanged, this, updateOk);
    updateOk();
    connect(buttons_, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons_, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(test_, &QPushButton::clicked, this, &RunnerDialog::testConnection);

    watcher_ = new QFutureWatcher<QString>(this);
    connect(watcher_, &QFutureWatcher<QString>::finished, this, [this] {
        const QString error = watcher_->result();
        test_->setEnabled(true);
        result_->setText(error.isEmpty() ? tr("<span style='color:#1a7f37'>Connected: the runner answered and loaded "
                                              "the checkpoint.</span>")
                                         : tr("<span style='color:#b00'>Failed:</span> %1").arg(error.toHtmlEscaped()));
        emit testFinished(error.isEmpty(), error);
    });
}

RunnerDialog::~RunnerDialog()
{
    // The test holds a child process; wait for it rather than leave it running behind a dead dialog.
    watcher_->waitForFinished();
}

QString RunnerDialog::command() const
{
    return command_->text().trimmed();
}

void RunnerDialog::testConnection()
{
    const QString command = this->command();
    if (command.isEmpty() || checkpoint_.isEmpty() || watcher_->isRunning())
        return;
    test_->setEnabled(false);
    result_->setText(tr("Starting the runner..."));
    const std::string checkpoint = checkpoint_.toStdString();
    watcher_->setFuture(QtConcurrent::run([command = command.toStdString(), checkpoint]() -> QString {
        try {
            RunnerOptions options;
            // A test should answer quickly; a real switch keeps the longer default timeouts.
            options.helloTimeout = std::chrono::seconds(20);
            options.loadTimeout = std::chrono::seconds(60);
            RunnerBackend::start(command, checkpoint, options);
            return QString();
        } catch (const std::exception& e) {
            return QString::fromUtf8(e.what());
        }
    }));
}

} // namespace scalescope::ui
