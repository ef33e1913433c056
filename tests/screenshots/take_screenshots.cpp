// scalescope-screenshots: drives the workbench through each panel and saves a screenshot of every
// one, for looking at what users see. Run it under Xvfb through scripts/screenshots.sh.
// Uses the bundled demo checkpoints when they are there, generated tiny ones otherwise.
#include <QApplication>
#include <QDir>
#include <QFileInfo>
#include <QProcess>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTimer>

#include <cstdio>

#include "main_window.h"
#include "panels/ask_panel.h"
#include "panels/model_panel.h"
#include "panels/scales_panel.h"
#include "panels/errors_panel.h"
#include "panels/evaluate_panel.h"
#include "panels/fill_mask_panel.h"
#include "support/fixtures.h"

using namespace scalescope;
using namespace scalescope::ui;

namespace {

bool waitFor(QSignalSpy& spy, int ms = 120000)
{
    return spy.count() > 0 || spy.wait(ms);
}

void settle(int ms = 400)
{
    QEventLoop loop;
    QTimer::singleShot(ms, &loop, &QEventLoop::quit);
    loop.exec();
}

// The whole screen through ImageMagick when it is there (what a person sees, window manager and
// all), else the window's own rendering.
void shoot(QWidget& window, const QString& path)
{
    settle();
    if (!QStandardPaths::findExecutable(QStringLiteral("import")).isEmpty() &&
        QProcess::execute(QStringLiteral("import"), {QStringLiteral("-window"), QStringLiteral("root"), path}) == 0) {
        std::printf("%s\n", qPrintable(path));
        return;
    }
    window.grab().save(path);
    std::printf("%s\n", qPrintable(path));
}

} // namespace

int main(int argc, char** argv)
{
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("ScaleScope-screenshots"));
    QApplication::setApplicationName(QStringLiteral("ScaleScope"));
    QStandardPaths::setTestModeEnabled(true);
    const QString out = argc > 1 ? QString::fromLocal8Bit(argv[1]) : QStringLiteral("screenshots");
    QDir().mkpath(out);

    const DemoCatalog demo = loadDemoCatalog(findDemoFolder(QStringLiteral(SCALESCOPE_DEMO_DIR)));
    MainWindow window;
    window.resize(1360, 900);
    window.move(20, 20);
    window.setDemoCatalog(demo);
    window.show();
    WorkbenchSession* session = window.session();
    QSignalSpy opened(&window, &MainWindow::checkpointReady);
    QSignalSpy reference(session, &WorkbenchSession::referenceChanged);

    // The bundled demo when it is there (what a first run shows), generated tiny models otherwise.
    int maskedLmDemo = -1;
    for (int i = 0; i < demo.checkpoints.size(); ++i)
        if (demo.checkpoints[i].maskedLm && maskedLmDemo < 0)
            maskedLmDemo = i;
    QString mlm, mlmReference;
    if (!demo.isEmpty()) {
        window.openDemo(0);
    } else {
        const std::string base = testing::makeTempDir("screens");
        testing::TinyModelSpec spec;
        spec.outlierChannels = {3, 17};
        spec.outlierFactor = 6.0f;
        testing::writeTinyFloatCheckpoint(base + "/qa-float", spec);
        testing::writeTinyFp8Checkpoint(base + "/qa-float", base + "/qa-fp8", {"channel", "token", "F32"});
        spec.architecture = "RobertaForMaskedLM";
        testing::writeTinyFloatCheckpoint(base + "/mlm-float", spec);
        testing::writeTinyFp8Checkpoint(base + "/mlm-float", base + "/mlm-fp8", {"channel", "token", "F32"});
        mlm = QString::fromStdString(base + "/mlm-fp8");
        mlmReference = QString::fromStdString(base + "/mlm-float");
        window.openCheckpoint(QString::fromStdString(base + "/qa-fp8"));
        window.setReference(QString::fromStdString(base + "/qa-float"));
        window.askPanel()->setInputs("what is the capital of France ?",
                                     "the cat sat on the mat . the dog sat on the mat . Paris is the capital of France .");
        window.fillMaskPanel()->setText("the cat <mask> on the mat");
    }
    if (!waitFor(opened) || !waitFor(reference))
        return 1;

    window.tabs()->setCurrentWidget(window.modelPanel());
    shoot(window, out + "/1-model.png");

    window.tabs()->setCurrentWidget(window.askPanel());
    QSignalSpy answered(session, &WorkbenchSession::answered);
    emit window.askPanel()->askRequested(window.askPanel()->question(), window.askPanel()->context(),
                                         window.askPanel()->options());
    if (!waitFor(answered))
        return 1;
    shoot(window, out + "/2-ask.png");

    window.tabs()->setCurrentWidget(window.scalesPanel());
    shoot(window, out + "/4-scales.png");

    window.tabs()->setCurrentWidget(window.errorsPanel());
    QSignalSpy captured(session, &WorkbenchSession::capturePointReady);
    emit window.errorsPanel()->capturePointRequested(QStringLiteral("roberta.encoder.layer.1.output"));
    waitFor(captured);
    shoot(window, out + "/5-errors.png");

    const QString squad = QStringLiteral(SCALESCOPE_SHARED_DATA) + "/squad/squad2-dev-sample.json";
    const QString demoQuestions = demo.folder + "/corpus/questions.json";
    const QString squadFile = QFileInfo(demoQuestions).exists() ? demoQuestions : squad;
    if (QFileInfo(squadFile).exists()) {
        window.tabs()->setCurrentWidget(window.evaluatePanel());
        window.evaluatePanel()->setSquadFile(squadFile);
        QSignalSpy evaluated(session, &WorkbenchSession::evaluated);
        session->evaluate(squadFile, 60);
        waitFor(evaluated, 600000);
        shoot(window, out + "/6-evaluate.png");
    }

    opened.clear();
    reference.clear();
    if (maskedLmDemo >= 0) {
        window.openDemo(maskedLmDemo);
    } else {
        window.openCheckpoint(mlm);
        window.setReference(mlmReference);
    }
    waitFor(opened);
    waitFor(reference);
    window.tabs()->setCurrentWidget(window.fillMaskPanel());
    QSignalSpy filled(session, &WorkbenchSession::masksFilled);
    emit window.fillMaskPanel()->fillRequested(window.fillMaskPanel()->text(), 5);
    waitFor(filled);
    shoot(window, out + "/3-fill-mask.png");
    return 0;
}
