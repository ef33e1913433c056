#include "input_panels.h"

#include <QPushButton>
#include <QTabWidget>

#include "panels/ask_panel.h"
#include "panels/fill_mask_panel.h"
#include "stale_banner.h"

namespace scalescope::ui {

InputPanels::InputPanels(QTabWidget* tabs, AskPanel* ask, FillMaskPanel* fillMask, QObject* parent)
    : QObject(parent), tabs_(tabs), ask_(ask), fillMask_(fillMask)
{
}

bool InputPanels::asksQuestions() const
{
    return tabs_->isTabEnabled(tabs_->indexOf(ask_));
}

void InputPanels::showCheckpoint(const CheckpointInfo& info)
{
    const bool isMaskedLm = info.checkpoint->layout().isMaskedLm();
    tabs_->setTabEnabled(tabs_->indexOf(ask_), !isMaskedLm);
    tabs_->setTabEnabled(tabs_->indexOf(fillMask_), isMaskedLm);
    if (tabs_->currentWidget() == ask_ && isMaskedLm)
        tabs_->setCurrentWidget(fillMask_);
    if (tabs_->currentWidget() == fillMask_ && !isMaskedLm)
        tabs_->setCurrentWidget(ask_);
    const QString reason = info.runnable ? QString() : info.loadError;
    ask_->setRunnable(info.runnable, reason);
    fillMask_->setRunnable(info.runnable, reason);
    if (info.checkpoint->hasTokenizer())
        fillMask_->setMaskToken(QString::fromStdString(info.checkpoint->tokenizer().maskToken()));
}

bool InputPanels::hasResult() const
{
    return ask_->banner()->hasResult() || fillMask_->banner()->hasResult();
}

void InputPanels::rerunLast()
{
    if (ask_->outcome())
        ask_->rerun();
    else if (fillMask_->outcome())
        fillMask_->rerun();
}

void InputPanels::rerunStale()
{
    if (ask_->banner()->isStale())
        ask_->rerun();
    else if (fillMask_->banner()->isStale())
        fillMask_->rerun();
}

void InputPanels::runCurrent()
{
    if (asksQuestions())
        ask_->askButton()->click();
    else if (tabs_->isTabEnabled(tabs_->indexOf(fillMask_)))
        fillMask_->fillButton()->click();
}

void InputPanels::runOrShow()
{
    QPushButton* button = asksQuestions() ? ask_->askButton() : fillMask_->fillButton();
    if (button->isEnabled())
        button->click();
    else // nothing to run yet: the input is the user's to type
        tabs_->setCurrentWidget(asksQuestions() ? static_cast<QWidget*>(ask_) : fillMask_);
}

} // namespace scalescope::ui
