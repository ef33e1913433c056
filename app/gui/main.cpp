// scalescope: the ScaleScope workbench.
#include <QApplication>
#include <QCommandLineParser>
#include <QStatusBar>

#include "main_window.h"
#include "device/runner_process.h"
#include "engine/compute_threads.h"
#include "engine/encoder_model.h"
#include "io/interrupt_cleanup.h"

int main(int argc, char** argv)
{
    // SIGINT, SIGTERM or SIGHUP (a closed terminal, a logout) stops the runners and removes the
    // temporaries of outputs being written and the runners' exchange folders, as in the CLI.
    scalescope::installInterruptCleanup(scalescope::stopAllRunnerProcessesFromSignalHandler);
    QApplication app(argc, argv);
    QApplication::setApplicationName(QStringLiteral("ScaleScope"));
    QApplication::setOrganizationName(QStringLiteral("ScaleScope"));
    QApplication::setApplicationVersion(QStringLiteral(SCALESCOPE_VERSION));
    scalescope::setComputeThreads(0);

    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral("Workbench for FP8-quantized encoder models."));
    parser.addHelpOption();
    parser.addVersionOption();
    parser.addPositionalArgument(QStringLiteral("checkpoint"), QStringLiteral("Checkpoint folder to open."));
    parser.process(app);

    scalescope::ui::MainWindow window;
    const scalescope::ui::DemoCatalog demo =
        scalescope::ui::loadDemoCatalog(scalescope::ui::findDemoFolder(QStringLiteral(SCALESCOPE_DEMO_DIR)));
    window.setDemoCatalog(demo);
    window.show();
    if (!parser.positionalArguments().isEmpty())
        window.openCheckpoint(parser.positionalArguments().first());
    else if (!demo.isEmpty())
        window.openDemo(0); // first run: the QA demo with a passage, a question and its reference
    else
        window.statusBar()->showMessage(QObject::tr("Open a checkpoint folder to begin (File > Open Checkpoint)."));
    return app.exec();
}
