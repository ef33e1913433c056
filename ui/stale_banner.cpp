#include "stale_banner.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>

namespace scalescope::ui {

StaleBanner::StaleBanner(QWidget* parent) : QFrame(parent)
{
    setObjectName(QStringLiteral("staleBanner"));
    label_ = new QLabel(this);
    label_->setWordWrap(true);
    label_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    rerun_ = new QPushButton(tr("Rerun"), this);
    rerun_->setToolTip(tr("Run the same input again with the checkpoint, reference, mode and device now selected"));
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(6, 2, 6, 2);
    layout->addWidget(label_, 1);
    layout->addWidget(rerun_);
    connect(rerun_, &QPushButton::clicked, this, &StaleBanner::rerunRequested);
    refresh();
}

void StaleBanner::setResultStamp(const RunStamp& stamp)
{
    hasResult_ = true;
    result_ = stamp;
    refresh();
}

void StaleBanner::clearResult()
{
    hasResult_ = false;
    result_ = {};
    refresh();
}

void StaleBanner::setCurrentStamp(const RunStamp& stamp)
{
    current_ = stamp;
    refresh();
}

void StaleBanner::refresh()
{
    setVisible(hasResult_);
    if (!hasResult_) {
        label_->clear(); // no stamp of a result that is gone may come back into view
        return;
    }
    if (isStale()) {
        // Colours chosen to read as a warning on light and dark palettes alike.
        setStyleSheet(QStringLiteral("#staleBanner { background: #fff3cd; border: 1px solid #e0b252; } "
                                     "#staleBanner QLabel { color: #5c4400; }"));
        label_->setText(tr("<b>Stale:</b> these results are from %1; the %2 changed since.")
                            .arg(result_.describe().toHtmlEscaped(), result_.differenceFrom(current_)));
        rerun_->show();
    } else {
        setStyleSheet(QString());
        label_->setText(tr("Results of %1").arg(result_.describe().toHtmlEscaped()));
        rerun_->hide();
    }
}

} // namespace scalescope::ui
