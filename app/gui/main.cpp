// scalescope: the ScaleScope workbench.
#include <QApplication>
#include <QCommandLineParser>

#include "main_window.h"

int main(int argc, char** argv)
{
    QApplication app(argc, argv);
    QApplication::setApplicationName(QStringLiteral("ScaleScope"));
    QApplication::setOrganizationName(QStringLiteral("ScaleScope"));
    QApplication::setApplicationVersion(QStringLiteral(SCALESCOPE_VERSION));

    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral("Workbench for FP8-quantized encoder models."));
    parser.addHelpOption();
    parser.addVersionOption();
    parser.addPositionalArgument(QStringLiteral("checkpoint"), QStringLiteral("Checkpoint folder to open."));
    parser.process(app);

    scalescope::ui::MainWindow window;
    window.show();
    if (!parser.positionalArguments().isEmpty())
        window.openCheckpoint(parser.positionalArguments().first());
    return app.exec();
}
