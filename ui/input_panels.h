#pragma once
// The Ask and Fill Mask panels, seen from the window: the open checkpoint's head takes its input
// from one of them (a question and a passage, or a text with masks), and Errors, Scales and
// Attention show the run of that input. This is the one place that knows which of the two is in
// use, runs its input, and reruns the last one when the window's state moved on.
#include <QObject>

class QTabWidget;
class QWidget;

namespace scalescope::ui {

class AskPanel;
class FillMaskPanel;
struct CheckpointInfo;

class InputPanels : public QObject {
    Q_OBJECT
public:
    // Both panels are tabs of `tabs`.
    InputPanels(QTabWidget* tabs, AskPanel* ask, FillMaskPanel* fillMask, QObject* parent = nullptr);

    // A checkpoint opened: only the panel its head takes input from is on (and comes to the front
    // if the other was), and when it cannot run, both say why on their run buttons.
    void showCheckpoint(const CheckpointInfo& info);
    // Either panel holds a result (current or stale).
    bool hasResult() const;
    // Runs the last input again, whichever panel holds it: Errors and Scales show its run.
    void rerunLast();
    // After the state changed: the panel whose result turned stale reruns it.
    void rerunStale();
    // Runs the input the open checkpoint's panel holds, as its run button would.
    void runCurrent();
    // Runs the current input when it can run; otherwise shows its panel for the user to type one.
    void runOrShow();

private:
    bool asksQuestions() const;

    QTabWidget* tabs_;
    AskPanel* ask_;
    FillMaskPanel* fillMask_;
};

} // namespace scalescope::ui
