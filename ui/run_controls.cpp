#include "run_controls.h"

#include <QAction>
#include <QComboBox>
#include <QCoreApplication>
#include <QLabel>
#include <QToolBar>

#include "runner_dialog.h"
#include "settings.h"
#include "shell_quote.h"
#include "workbench_session.h"

namespace scalescope::ui {

RunControls::RunControls(WorkbenchSession* session, QToolBar* toolbar, QWidget* window)
    : QObject(window), session_(session), window_(window)
{
    addModeBox(toolbar);
    // AIU FP8 attention is a run option like the Mode box, so a toggle beside it: every later run
    // uses it, earlier results turn stale.
    fp8Attention_ = new QAction(tr("FP8 Attention (AIU)"), window);
    fp8Attention_->setObjectName(QStringLiteral("fp8AttentionAction"));
    fp8Attention_->setCheckable(true);
    fp8Attention_->setToolTip(tr("Run attention as fms_mo's math_fp8 does on the AIU: K and V cast to FP8 E4M3 "
                                 "with one scale per sequence from fixed ranges (K 200, V 100), Q float. The "
                                 "Attention view shows how much of E4M3 each head gets"));
    connect(fp8Attention_, &QAction::toggled, this, [this](bool on) {
        session_->setAttention(on ? AttentionPrecision::Fp8Aiu : AttentionPrecision::Float);
        emit changed();
    });
    toolbar->addAction(fp8Attention_);
    addDeviceBox(toolbar);
}

void RunControls::addModeBox(QToolBar* toolbar)
{
    toolbar->addWidget(new QLabel(tr(" Mode "), toolbar));
    mode_ = new QComboBox(toolbar);
    mode_->addItem(tr("FP8 (weights and activations)"), QStringLiteral("fp8"));
    mode_->addItem(tr("Dequant (weights only)"), QStringLiteral("dequant"));
    mode_->addItem(tr("FP16 twin (AIU)"), QStringLiteral("fp16"));
    mode_->setItemData(2, tr("The FP8 run as the AIU stores it: every non-FP8 tensor and every module output in "
                             "float16, so overflows past 65,504 show up as inf before the device is booked"),
                       Qt::ToolTipRole);
    mode_->addItem(tr("FP8, DL16 accumulation"), QString::fromStdString(runLabel(RunMode::Fp8, Accumulation::Dl16)));
    mode_->addItem(tr("FP16 twin, DL16 accumulation"), QString::fromStdString(runLabel(RunMode::Fp16, Accumulation::Dl16)));
    const QString dl16Tip = tr("FP8 x FP8 products summed as the AIU simulator of fms-model-optimizer does: FP8 values "
                               "below 0.0088 flushed (DL8), chunks of 32 rounded to DL16, then summed in float32. "
                               "A model of the device's arithmetic to hold it against, not the truth");
    mode_->setItemData(3, dl16Tip, Qt::ToolTipRole);
    mode_->setItemData(4, dl16Tip, Qt::ToolTipRole);
    mode_->setToolTip(tr("How the quantized model runs against its reference"));
    connect(mode_, qOverload<int>(&QComboBox::currentIndexChanged), this, [this](int index) {
        RunMode mode = RunMode::Fp8;
        Accumulation accumulation = Accumulation::Float32;
        parseRunLabel(mode_->itemData(index).toString().toStdString(), mode, accumulation);
        session_->setRunMode(mode, accumulation);
        Settings().setRunMode(index);
        emit changed();
    });
    toolbar->addWidget(mode_);
}

void RunControls::addDeviceBox(QToolBar* toolbar)
{
    toolbar->addWidget(new QLabel(tr(" Device "), toolbar));
    device_ = new QComboBox(toolbar);
    device_->setToolTip(tr("Where the quantized model runs: in this process, or in a runner process (see the "
                           "runner protocol), e.g. on an AIU host through ssh"));
    device_->addItem(tr("CPU (in-process)"), QStringLiteral("cpu"));
    // Quoted as one shell word: the install path may hold spaces, quotes, $ or backticks.
    const QString runner = localRunnerDevice(QCoreApplication::applicationDirPath());
    device_->addItem(tr("CPU runner process"), runner);
    // A pool: evaluation batches are split over both processes (see core/device/backend_pool.h).
    device_->addItem(tr("Two CPU runner processes (pool)"), runner + QLatin1Char('\n') + runner);
    device_->addItem(tr("AIU runner..."), QStringLiteral("aiu"));
    connect(device_, qOverload<int>(&QComboBox::activated), this, [this](int index) {
        const QString spec = device_->itemData(index).toString();
        if (spec == QLatin1String("aiu")) {
            chooseAiuRunner();
            return;
        }
        session_->setDevice(spec);
        emit changed();
    });
    toolbar->addWidget(device_);
}

void RunControls::chooseAiuRunner()
{
    auto* dialog = new RunnerDialog(Settings().aiuRunnerCommand(), session_->checkpointDirectory(), window_);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    connect(dialog, &QDialog::finished, this, [this, dialog](int result) {
        const QString command = dialog->command();
        if (result != QDialog::Accepted || command.isEmpty()) {
            showSessionDevice();
            return;
        }
        Settings().setAiuRunnerCommand(command);
        session_->setDevice(QStringLiteral("runner:") + command);
        emit changed();
    });
    dialog->open();
}

void RunControls::showSessionDevice()
{
    device_->setCurrentIndex(deviceIndexFor(session_->device()));
}

int RunControls::deviceIndexFor(const QString& spec) const
{
    const int exact = device_->findData(spec);
    if (exact >= 0)
        return exact;
    // Any other runner command is one the user typed for the AIU entry.
    return spec.startsWith(QLatin1String("runner:")) ? device_->findData(QStringLiteral("aiu")) : 0;
}

} // namespace scalescope::ui
