#include "session_status.h"

#include <QComboBox>
#include <QFileInfo>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QStatusBar>

#include "workbench_session.h"

namespace scalescope::ui {

SessionStatus::SessionStatus(WorkbenchSession* session, QComboBox* deviceBox, QStatusBar* bar)
    : QObject(bar), session_(session), deviceBox_(deviceBox)
{
    createWidgets(bar);
    connectSession();
}

void SessionStatus::createWidgets(QStatusBar* bar)
{
    deviceLabel_ = new QLabel(bar);
    modeLabel_ = new QLabel(bar);
    dtypeLabel_ = new QLabel(bar);
    loadLabel_ = new QLabel(bar);
    referenceStatus_ = new QLabel(bar);
    progress_ = new QProgressBar(bar);
    progress_->setRange(0, 1000);
    progress_->setMaximumWidth(420);
    progress_->setTextVisible(true);
    progress_->hide();
    cancelButton_ = new QPushButton(tr("Cancel"), bar);
    cancelButton_->hide();
    connect(cancelButton_, &QPushButton::clicked, session_->jobs(), &JobTracker::cancel);
    bar->addPermanentWidget(progress_);
    bar->addPermanentWidget(cancelButton_);
    floatStatus_ = new QLabel(bar);
    floatStatus_->setObjectName(QStringLiteral("floatStatus"));
    floatStatus_->setStyleSheet(QStringLiteral("#floatStatus { color: #8a5a00; font-weight: bold; }"));
    clearFloat_ = new QPushButton(tr("Clear"), bar);
    clearFloat_->setToolTip(tr("Run every Linear as the checkpoint declares again"));
    connect(clearFloat_, &QPushButton::clicked, this, &SessionStatus::clearFloatRequested);
    floatStatus_->hide();
    clearFloat_->hide();
    // The permanent labels may shrink (their full text is in the tooltip), so the status bar never
    // holds the window wider than a laptop screen.
    for (QLabel* label : {floatStatus_, deviceLabel_, modeLabel_, dtypeLabel_, referenceStatus_, loadLabel_}) {
        label->setMinimumWidth(24);
        bar->addPermanentWidget(label);
        if (label == floatStatus_)
            bar->addPermanentWidget(clearFloat_);
    }
}

void SessionStatus::connectSession()
{
    connect(session_, &WorkbenchSession::checkpointOpened, this, [this](std::shared_ptr<const CheckpointInfo> info) {
        info_ = std::move(info);
        update();
    });
    connect(session_, &WorkbenchSession::deviceChanged, this, [this](const QString& name) {
        deviceName_ = name;
        update();
    });
    connect(session_, &WorkbenchSession::referenceChanged, this, [this](const QString& label) {
        referenceLabel_ = label;
        update();
    });
    connect(session_, &WorkbenchSession::stateChanged, this, [this] {
        updateFloatStatus();
        update();
    });
    connect(session_, &WorkbenchSession::answered, this,
            [this](std::shared_ptr<const AskOutcome> outcome) { showRunTimes(*outcome->comparison); });
    connect(session_, &WorkbenchSession::masksFilled, this,
            [this](std::shared_ptr<const FillMaskOutcome> outcome) { showRunTimes(*outcome->comparison); });
    connect(session_->jobs(), &JobTracker::progress, this, [this](double fraction, const QString& stage) {
        progress_->setValue(static_cast<int>(fraction * 1000));
        // %p% is the share of the job's work, which the stage's own counts need not equal.
        progress_->setFormat(tr("%1 (%2 of the work)").arg(stage, QStringLiteral("%p%")));
    });
    connect(session_->jobs(), &JobTracker::busyChanged, this, [this](bool busy) {
        progress_->setVisible(busy);
        cancelButton_->setVisible(busy);
        if (busy)
            progress_->setValue(0);
    });
}

void SessionStatus::showRunTimes(const ComparisonResult& comparison)
{
    lastRunMs_ = tr("last forward %1 ms, reference %2 ms")
                     .arg(comparison.runMs, 0, 'f', 1)
                     .arg(comparison.referenceMs, 0, 'f', 1);
    update();
}

void SessionStatus::update()
{
    deviceLabel_->setText(tr("Device: %1%2")
                              .arg(deviceName_.isEmpty() ? deviceBox_->currentText() : deviceName_,
                                   lastRunMs_.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(lastRunMs_)));
    modeLabel_->setText(tr("Mode: %1").arg(session_->currentStamp().modeName()));
    dtypeLabel_->setText(info_ ? tr("Dtype: %1").arg(QString::fromStdString(info_->checkpoint->config().torchDtype))
                               : tr("Dtype: -"));
    loadLabel_->setText(info_ ? tr("Loaded in %L1 ms").arg(info_->loadMs, 0, 'f', 0) : QString());
    referenceStatus_->setText(tr("Reference: %1").arg(referenceLabel_.isEmpty() ? tr("-") : QFileInfo(referenceLabel_).fileName().isEmpty() ? referenceLabel_ : QFileInfo(referenceLabel_).fileName()));
    referenceStatus_->setToolTip(referenceLabel_);
    // A small explicit minimum lets the labels give way on a narrow window (the text is clipped,
    // the tooltip has all of it); with room they take their text's width.
    for (QLabel* label : {deviceLabel_, modeLabel_, dtypeLabel_, loadLabel_})
        label->setToolTip(label->text());
}

void SessionStatus::updateFloatStatus()
{
    const RunStamp now = session_->currentStamp();
    floatStatus_->setText(now.floatText());
    floatStatus_->setToolTip(now.floatLinears.isEmpty()
                                 ? QString()
                                 : tr("Running in float (what-if; the checkpoint on disk is unchanged):\n%1")
                                       .arg(now.floatLinears.join(QLatin1Char('\n'))));
    floatStatus_->setVisible(!now.floatLinears.isEmpty());
    clearFloat_->setVisible(!now.floatLinears.isEmpty());
}

} // namespace scalescope::ui
