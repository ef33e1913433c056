#pragma once
// The workbench's main window. For now: open a checkpoint folder (menu, toolbar, command line) and
// see its architecture, quantization scheme and tensors. Loading runs off the GUI thread.
#include <QMainWindow>

class QLabel;
class QTableWidget;

namespace scalescope::ui {

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(QWidget* parent = nullptr);

    // Opens the checkpoint in the background; the result arrives through checkpointOpened/openFailed.
    void openCheckpoint(const QString& dir);

signals:
    void checkpointOpened(const QString& dir);
    void openFailed(const QString& message);

private:
    void chooseCheckpoint();
    QLabel* summary_ = nullptr;
    QTableWidget* tensors_ = nullptr;
};

} // namespace scalescope::ui
