#include "input_panels.h"

#include <QPushButton>
#include <QTabWidget>

#include "panels/ask_panel.h"
#include "panels/classify_panel.h"
#include "panels/embed_panel.h"
#include "panels/fill_mask_panel.h"
#include "panels/rerank_panel.h"
#include "stale_banner.h"

namespace scalescope::ui {
namespace {

// The tasks a checkpoint's head serves: a cross-encoder (one score) reranks as well as it
// classifies, and an embedder reranks by cosine.
struct HeadTasks {
    bool ask = false, fillMask = false, embed = false, rerank = false, classify = false;
};

HeadTasks tasksOf(const Checkpoint& checkpoint)
{
    HeadTasks tasks;
    switch (checkpoint.layout().head()) {
    case HeadKind::QuestionAnswering: tasks.ask = true; break;
    case HeadKind::MaskedLM: tasks.fillMask = true; break;
    case HeadKind::Embedding: tasks.embed = tasks.rerank = true; break;
    case HeadKind::SequenceClassification:
        tasks.classify = true;
        tasks.rerank = checkpoint.config().problem == ClassificationProblem::Score;
        break;
    }
    return tasks;
}

} // namespace

InputPanels::InputPanels(QTabWidget* tabs, const InputPanelSet& panels, QObject* parent)
    : QObject(parent), tabs_(tabs), panels_(panels)
{
    entries_ = {
        {panels.ask, panels.ask, panels.ask->askButton(), [a = panels.ask] { return a->outcome() != nullptr; },
         [a = panels.ask] { a->rerun(); }},
        {panels.fillMask, panels.fillMask, panels.fillMask->fillButton(),
         [f = panels.fillMask] { return f->outcome() != nullptr; }, [f = panels.fillMask] { f->rerun(); }},
        {panels.embed, panels.embed, panels.embed->embedButton(), [e = panels.embed] { return e->outcome() != nullptr; },
         [e = panels.embed] { e->rerun(); }},
        {panels.rerank, panels.rerank, panels.rerank->rerankButton(),
         [r = panels.rerank] { return r->outcome() != nullptr; }, [r = panels.rerank] { r->rerun(); }},
        {panels.classify, panels.classify, panels.classify->classifyButton(),
         [c = panels.classify] { return c->outcome() != nullptr; }, [c = panels.classify] { c->rerun(); }},
    };
}

bool InputPanels::isOn(const Entry& entry) const
{
    return tabs_->isTabEnabled(tabs_->indexOf(entry.widget));
}

const InputPanels::Entry* InputPanels::current() const
{
    for (const Entry& entry : entries_)
        if (entry.widget == tabs_->currentWidget() && isOn(entry))
            return &entry;
    for (const Entry& entry : entries_)
        if (isOn(entry))
            return &entry;
    return nullptr;
}

const InputPanels::Entry* InputPanels::lastRan() const
{
    for (const Entry& entry : entries_)
        if (entry.widget == lastRan_)
            return &entry;
    return nullptr;
}

void InputPanels::showCheckpoint(const CheckpointInfo& info)
{
    const HeadTasks tasks = tasksOf(*info.checkpoint);
    const bool on[] = {tasks.ask, tasks.fillMask, tasks.embed, tasks.rerank, tasks.classify};
    bool showingAnInputPanel = false;
    for (std::size_t i = 0; i < entries_.size(); ++i) {
        tabs_->setTabEnabled(tabs_->indexOf(entries_[i].widget), on[i]);
        showingAnInputPanel = showingAnInputPanel || tabs_->currentWidget() == entries_[i].widget;
    }
    if (showingAnInputPanel && !tabs_->isTabEnabled(tabs_->currentIndex()))
        if (const Entry* first = current())
            tabs_->setCurrentWidget(first->widget);
    const QString reason = info.runnable ? QString() : info.loadError;
    panels_.ask->setRunnable(info.runnable, reason);
    panels_.fillMask->setRunnable(info.runnable, reason);
    panels_.embed->setRunnable(info.runnable, reason);
    panels_.rerank->setRunnable(info.runnable, reason);
    panels_.classify->setRunnable(info.runnable, reason);
    if (info.checkpoint->hasTokenizer())
        panels_.fillMask->setMaskToken(QString::fromStdString(info.checkpoint->tokenizer().maskToken()));
    QStringList prompts;
    for (const auto& [name, text] : info.checkpoint->config().embedding.prompts)
        prompts << QString::fromStdString(name);
    panels_.embed->setPromptNames(prompts);
}

void InputPanels::ranIn(QWidget* widget) { lastRan_ = widget; }

bool InputPanels::hasResult() const
{
    for (const Entry& entry : entries_)
        if (entry.results->hasResult())
            return true;
    return false;
}

void InputPanels::rerunLast()
{
    if (const Entry* entry = lastRan(); entry && entry->holdsInput())
        entry->rerun();
}

void InputPanels::rerunStale()
{
    if (const Entry* entry = lastRan(); entry && entry->results->isStale())
        entry->rerun();
}

void InputPanels::runCurrent()
{
    if (const Entry* entry = current())
        entry->button->click();
}

void InputPanels::runOrShow()
{
    const Entry* entry = current();
    if (!entry)
        return;
    if (entry->button->isEnabled())
        entry->button->click();
    else // nothing to run yet: the input is the user's to type
        tabs_->setCurrentWidget(entry->widget);
}

} // namespace scalescope::ui
