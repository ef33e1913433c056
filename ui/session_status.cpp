#include "session_status.h"

#include <QComboBox>
#include <QFileInfo>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QStatusBar>

#include <algorithm>

#include "workbench_session.h"

namespace scalescope::ui {

namespace {

// When the bar's message and the labels do not both fit, the labels step aside until the message
// goes (their text is one hover away again then), so that the message is never cut to a few
// letters. Checked again whenever the labels change, as their text grows after a run.
void fitMessage(QStatusBar* bar, const QList<QLabel*>& labels)
{
    int labelsWidth = 0;
    for (QLabel* label : labels)
        labelsWidth += label->sizeHint().width() + 8;
    const QString message = bar->currentMessage();
    const int messageWidth = bar->fontMetrics().horizontalAdvance(message) + 24;
    const bool fits = message.isEmpty() || messageWidth + labelsWidth <= bar->width();
    for (QLabel* label : labels)
        label->setVisible(fits);
}

} // namespace

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
    progress_->setMinimumWidth(220); // room for a stage of a few words, elided beyond that
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
    // A message ("Exported 44 files to ...") shares the bar with the labels on its right.
    connect(bar, &QStatusBar::messageChanged, this,
            [this, bar] { fitMessage(bar, {deviceLabel_, modeLabel_, dtypeLabel_, loadLabel_, referenceStatus_}); });
}

void SessionStatus::connectSession()
{
    connect(session_, &WorkbenchSession::checkpointOpened, this, [this](std::shared_ptr<const CheckpointInfo> info) {
        info_ = std::move(info);
        lastRunMs_.clear(); // the times were the previous checkpoint's
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
        // %p% is the share of the job's work, which the stage's own counts need not equal. A long
        // stage is elided to the bar's width (the bar does not wrap it legibly); the tooltip has it whole.
        QString share = tr(" (%1 of the work)").arg(QStringLiteral("%p%"));
        // Just shown (the job started), the bar may not have its laid-out width yet: at least its minimum.
        const int room = std::max(progress_->width(), progress_->minimumWidth()) - 16 - progress_->fontMetrics().horizontalAdvance(tr(" (100% of the work)"));
        progress_->setFormat(progress_->fontMetrics().elidedText(stage, Qt::ElideRight, std::max(room, 24)) + share);
        progress_->setToolTip(stage + share.replace(QStringLiteral("%p"), QString::number(int(fraction * 100))));
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
    fitMessage(qobject_cast<QStatusBar*>(parent()), {deviceLabel_, modeLabel_, dtypeLabel_, loadLabel_, referenceStatus_});
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
