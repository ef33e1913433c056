#pragma once
// The panels that take an input, seen from the window: Ask (a question and a passage), Fill Mask (a
// text with masks), Embed (texts), Rerank (a query and passages) and Classify (a text and a pair).
// The open checkpoint's head decides which are on (an embedder has two: Embed, and Rerank by
// cosine); Errors, Scales and Attention show the run of the last input any of them ran. This is
// the one place that knows which panels are in use, runs their input, and reruns the last one when
// the window's state moved on. (An evaluation of STS, retrieval or classification files would be a
// panel of Evaluate's kind, not one of these: it takes files, not an input.)
#include <QObject>

#include <functional>
#include <vector>

class QPushButton;
class QTabWidget;
class QWidget;

namespace scalescope::ui {

class AskPanel;
class ClassifyPanel;
class EmbedPanel;
class FillMaskPanel;
class RerankPanel;
class ResultPanel;
struct CheckpointInfo;

struct InputPanelSet {
    AskPanel* ask = nullptr;
    FillMaskPanel* fillMask = nullptr;
    EmbedPanel* embed = nullptr;
    RerankPanel* rerank = nullptr;
    ClassifyPanel* classify = nullptr;
};

class InputPanels : public QObject {
    Q_OBJECT
public:
    // Every panel is a tab of `tabs`.
    InputPanels(QTabWidget* tabs, const InputPanelSet& panels, QObject* parent = nullptr);

    // A checkpoint opened: only the panels its head takes input from are on (the first of them
    // comes to the front if another input panel was), and when it cannot run, they say why on
    // their run buttons.
    void showCheckpoint(const CheckpointInfo& info);
    // A result of the panel `widget` arrived: its input is the one Errors, Scales and the sweep show.
    // (A result cleared with its checkpoint leaves nothing to rerun: no panel holds an input then.)
    void ranIn(QWidget* widget);
    // Any panel holds a result (current or stale).
    bool hasResult() const;
    // Runs the last input again: Errors and Scales show its run.
    void rerunLast();
    // After the state changed: the panel of the last input reruns it when its result turned stale
    // (one job at a time: the others keep their stale banner and Rerun button).
    void rerunStale();
    // Runs the input of the panel in use, as its run button would.
    void runCurrent();
    // Runs the current input when it can run; otherwise shows its panel for the user to type one.
    void runOrShow();

private:
    struct Entry {
        QWidget* widget;
        const ResultPanel* results;
        QPushButton* button;
        std::function<bool()> holdsInput; // an input ran here (a rerun has something to run)
        std::function<void()> rerun;
    };
    bool isOn(const Entry& entry) const;
    // The panel in use: the current tab when it is an input panel that is on, else the first that is on.
    const Entry* current() const;
    const Entry* lastRan() const;

    QTabWidget* tabs_;
    InputPanelSet panels_;
    std::vector<Entry> entries_;
    QWidget* lastRan_ = nullptr;
};

} // namespace scalescope::ui
