#include "main_window.h"

#include <QAction>
#include <QFileDialog>
#include <QFutureWatcher>
#include <QHeaderView>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QStatusBar>
#include <QTableWidget>
#include <QToolBar>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include <memory>

#include "common/error.h"
#include "model/checkpoint.h"

namespace scalescope::ui {

namespace {

// What the GUI shows of a checkpoint, computed off the GUI thread as plain data.
struct CheckpointSummary {
    QString error;
    QString architecture;
    QString quantization;
    struct Row {
        QString name, dtype, shape;
    };
    QVector<Row> rows;
};

CheckpointSummary summarize(const QString& dir)
{
    CheckpointSummary summary;
    try {
        auto checkpoint = Checkpoint::open(dir.toStdString());
        const ModelConfig& config = checkpoint->config();
        summary.architecture = QString::fromUtf8(architectureName(config.architecture)) +
                               QStringLiteral(", %1 layers, hidden %2").arg(config.numLayers).arg(config.hiddenSize);
        if (config.quantization && !config.quantization->groups.empty())
            summary.quantization = QString::fromStdString(describeScheme(config.quantization->groups.front()));
        else
            summary.quantization = QStringLiteral("not quantized (float)");
        for (const TensorView* view : checkpoint->tensors().tensors()) {
            QStringList dims;
            for (int64_t d : view->shape)
                dims << QString::number(d);
            summary.rows.push_back({QString::fromStdString(view->name), QString::fromUtf8(dtypeName(view->dtype)),
                                    QStringLiteral("[%1]").arg(dims.join(QStringLiteral(", ")))});
        }
    } catch (const Error& e) {
        summary.error = QString::fromUtf8(e.what());
    }
    return summary;
}

} // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent)
{
    setWindowTitle(tr("ScaleScope"));
    auto* central = new QWidget(this);
    auto* layout = new QVBoxLayout(central);
    summary_ = new QLabel(tr("Open a checkpoint folder (File > Open Checkpoint...)."), central);
    summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    tensors_ = new QTableWidget(0, 3, central);
    tensors_->setHorizontalHeaderLabels({tr("Tensor"), tr("Dtype"), tr("Shape")});
    tensors_->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
    tensors_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    tensors_->setSortingEnabled(true);
    layout->addWidget(summary_);
    layout->addWidget(tensors_);
    setCentralWidget(central);

    auto* open = new QAction(tr("&Open Checkpoint..."), this);
    open->setShortcut(QKeySequence::Open);
    connect(open, &QAction::triggered, this, &MainWindow::chooseCheckpoint);
    auto* quit = new QAction(tr("&Quit"), this);
    quit->setShortcut(QKeySequence::Quit);
    connect(quit, &QAction::triggered, this, &QWidget::close);
    QMenu* file = menuBar()->addMenu(tr("&File"));
    file->addAction(open);
    file->addSeparator();
    file->addAction(quit);
    addToolBar(tr("Main"))->addAction(open);
    statusBar()->showMessage(tr("No checkpoint"));
    resize(1000, 700);
}

void MainWindow::chooseCheckpoint()
{
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Open Checkpoint Folder"));
    if (!dir.isEmpty())
        openCheckpoint(dir);
}

void MainWindow::openCheckpoint(const QString& dir)
{
    statusBar()->showMessage(tr("Opening %1...").arg(dir));
    auto* watcher = new QFutureWatcher<CheckpointSummary>(this);
    connect(watcher, &QFutureWatcher<CheckpointSummary>::finished, this, [this, watcher, dir] {
        const CheckpointSummary summary = watcher->result();
        watcher->deleteLater();
        if (!summary.error.isEmpty()) {
            statusBar()->showMessage(tr("Could not open %1").arg(dir));
            QMessageBox::warning(this, tr("Cannot open checkpoint"), summary.error);
            emit openFailed(summary.error);
            return;
        }
        summary_->setText(tr("<b>%1</b><br>%2<br>Quantization: %3").arg(dir.toHtmlEscaped(), summary.architecture,
                                                                         summary.quantization));
        tensors_->setSortingEnabled(false);
        tensors_->setRowCount(summary.rows.size());
        for (int i = 0; i < summary.rows.size(); ++i) {
            tensors_->setItem(i, 0, new QTableWidgetItem(summary.rows[i].name));
            tensors_->setItem(i, 1, new QTableWidgetItem(summary.rows[i].dtype));
            tensors_->setItem(i, 2, new QTableWidgetItem(summary.rows[i].shape));
        }
        tensors_->setSortingEnabled(true);
        statusBar()->showMessage(tr("%1 tensors").arg(summary.rows.size()));
        setWindowTitle(tr("ScaleScope - %1").arg(dir));
        emit checkpointOpened(dir);
    });
    watcher->setFuture(QtConcurrent::run(summarize, dir));
}

} // namespace scalescope::ui
