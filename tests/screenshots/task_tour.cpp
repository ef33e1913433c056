#include "task_tour.h"

#include <QDir>
#include <QFileInfo>
#include <QProcess>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSignalSpy>
#include <QStandardItemModel>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTimer>

#include <cstdio>

#include "main_window.h"
#include "panels/classify_panel.h"
#include "panels/embed_panel.h"
#include "panels/errors_panel.h"
#include "panels/rerank_panel.h"
#include "panels/sensitivity_panel.h"
#include "panels/task_evaluate_panel.h"
#include "panels/triage_panel.h"
#include "stale_banner.h"
#include "support/fixtures.h"

using namespace scalescope;
using namespace scalescope::ui;

namespace {

void settle(int ms = 400)
{
    QEventLoop loop;
    QTimer::singleShot(ms, &loop, &QEventLoop::quit);
    loop.exec();
}

void waitIdle(WorkbenchSession* session)
{
    for (int i = 0; i < 600 && session->busy(); ++i)
        settle(100);
    settle(200);
}

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

void printTaskStamps(MainWindow& window, const char* step)
{
    auto line = [](const char* panel, const StaleBanner* banner) {
        std::printf("  %-9s %s%s\n", panel, banner->hasResult() ? qPrintable(banner->resultStamp().describe()) : "-",
                    banner->isStale() ? "  [STALE]" : "");
    };
    std::printf("after %s (current: %s)\n", step, qPrintable(window.session()->currentStamp().describe()));
    line("Embed", window.embedPanel()->banner());
    line("Rerank", window.rerankPanel()->banner());
    line("Classify", window.classifyPanel()->banner());
    line("Errors", window.errorsPanel()->banner());
}

struct TaskCheckpoints {
    QString embed, embedReference, rerank, rerankReference, classify, classifyReference;
};

// The demo's folders when installed (they come with the demo helper's branch), else tiny ones.
TaskCheckpoints taskCheckpoints(const MainWindow& window)
{
    const QString demo = window.demoFolder();
    auto installed = [&](const char* name) { return !demo.isEmpty() && QFileInfo::exists(demo + "/" + name + "/config.json"); };
    if (installed("embed-fp8") && installed("rerank-fp8-defect") && installed("classify-fp8"))
        return {demo + "/embed-fp8", demo + "/embed-float", demo + "/rerank-fp8-defect", demo + "/rerank-float",
                demo + "/classify-fp8", demo + "/classify-float"};
    const std::string base = testing::makeTempDir("task-screens");
    testing::TinyModelSpec embedder;
    embedder.architecture = "RobertaModel";
    embedder.bareTensorNames = true;
    embedder.pooling = "mean";
    embedder.normalize = true;
    embedder.prompts = {{"query", "what "}, {"passage", "the "}};
    embedder.outlierChannels = {3, 17};
    embedder.outlierFactor = 6.0f;
    testing::writeTinyFloatCheckpoint(base + "/embed-float", embedder);
    testing::writeTinyFp8Checkpoint(base + "/embed-float", base + "/embed-fp8", {"tensor", "tensor", "F32"});
    testing::TinyModelSpec reranker;
    reranker.architecture = "RobertaForSequenceClassification";
    reranker.numLabels = 1;
    reranker.outlierChannels = {3, 17};
    reranker.outlierFactor = 6.0f;
    testing::writeTinyFloatCheckpoint(base + "/rerank-float", reranker);
    testing::writeTinyFp8Checkpoint(base + "/rerank-float", base + "/rerank-fp8", {"tensor", "tensor", "F32"});
    testing::TinyModelSpec classifier;
    classifier.architecture = "RobertaForSequenceClassification";
    classifier.labelNames = {"negative", "neutral", "positive"};
    testing::writeTinyFloatCheckpoint(base + "/classify-float", classifier);
    testing::writeTinyFp8Checkpoint(base + "/classify-float", base + "/classify-fp8", {"tensor", "tensor", "F32"});
    const QString b = QString::fromStdString(base);
    return {b + "/embed-fp8", b + "/embed-float", b + "/rerank-fp8", b + "/rerank-float", b + "/classify-fp8",
            b + "/classify-float"};
}

bool openWithReference(MainWindow& window, const QString& dir, const QString& reference)
{
    QSignalSpy opened(&window, &MainWindow::checkpointReady);
    window.openCheckpoint(dir);
    if (!opened.wait(120000))
        return false;
    QSignalSpy changed(window.session(), &WorkbenchSession::referenceChanged);
    window.setReference(reference);
    const bool ok = changed.wait(120000);
    waitIdle(window.session());
    return ok;
}

template <typename Signal>
bool clickAndWait(MainWindow& window, QPushButton* button, Signal signal)
{
    QSignalSpy done(window.session(), signal);
    button->click();
    const bool ok = done.wait(300000);
    waitIdle(window.session());
    return ok;
}

} // namespace

bool playTaskTour(MainWindow& window, const QString& out)
{
    const TaskCheckpoints checkpoints = taskCheckpoints(window);
    const DemoTaskInputs inputs = demoTaskInputs();
    if (!openWithReference(window, checkpoints.embed, checkpoints.embedReference))
        return false;
    window.embedPanel()->setTexts(inputs.texts);
    window.embedPanel()->setPrompt(QStringLiteral("query"));
    window.tabs()->setCurrentWidget(window.embedPanel());
    if (!clickAndWait(window, window.embedPanel()->embedButton(), &WorkbenchSession::textsEmbedded))
        return false;
    shoot(window, out + "/20-embed.png");
    // The page below the fold: the heat maps and the per-text cosine chart.
    for (auto* scroll : window.tabs()->currentWidget()->findChildren<QScrollArea*>(QStringLiteral("pageScrollArea")))
        if (scroll->verticalScrollBar()->maximum() > 0) {
            scroll->verticalScrollBar()->setValue(scroll->verticalScrollBar()->maximum());
            shoot(window, out + "/20b-embed-end.png");
            scroll->verticalScrollBar()->setValue(0);
        }
    window.tabs()->setCurrentWidget(window.errorsPanel());
    shoot(window, out + "/21-embed-errors.png");
    printTaskStamps(window, "open the embedder and embed");
    // The embedder's datasets in Evaluate Tasks (the demo's STS pairs, then its BEIR folder).
    TaskEvaluatePanel* evaluateEmbedder = window.taskEvaluatePanel();
    window.tabs()->setCurrentWidget(evaluateEmbedder);
    if (!evaluateEmbedder->datasetPath().isEmpty()) {
        if (!clickAndWait(window, evaluateEmbedder->evaluateButton(), &WorkbenchSession::taskEvaluated))
            return false;
        shoot(window, out + "/21b-embed-evaluate-sts.png");
        evaluateEmbedder->setKind(TaskDatasetKind::Retrieval);
        if (!clickAndWait(window, evaluateEmbedder->evaluateButton(), &WorkbenchSession::taskEvaluated))
            return false;
        shoot(window, out + "/21c-embed-evaluate-retrieval.png");
    }

    if (!openWithReference(window, checkpoints.rerank, checkpoints.rerankReference))
        return false;
    window.rerankPanel()->setInputs(inputs.query, inputs.passages);
    window.tabs()->setCurrentWidget(window.rerankPanel());
    if (!clickAndWait(window, window.rerankPanel()->rerankButton(), &WorkbenchSession::passagesReranked))
        return false;
    shoot(window, out + "/22-rerank.png");
    window.tabs()->setCurrentWidget(window.embedPanel());
    shoot(window, out + "/23-embed-after-switch.png");
    printTaskStamps(window, "open the reranker and rerank");

    if (!openWithReference(window, checkpoints.classify, checkpoints.classifyReference))
        return false;
    window.classifyPanel()->setInputs(inputs.classifyText, QString());
    window.tabs()->setCurrentWidget(window.classifyPanel());
    if (!clickAndWait(window, window.classifyPanel()->classifyButton(), &WorkbenchSession::textClassified))
        return false;
    shoot(window, out + "/24-classify.png");
    window.tabs()->setCurrentWidget(window.triagePanel());
    shoot(window, out + "/25-classify-triage.png");
    window.tabs()->setCurrentWidget(window.sensitivityPanel());
    if (!clickAndWait(window, window.sensitivityPanel()->runButton(), &WorkbenchSession::sensitivityFinished))
        return false;
    shoot(window, out + "/26-classify-sensitivity.png");
    printTaskStamps(window, "open the classifier, classify and sweep");

    // Evaluate Tasks on the classification file the panel offers (the demo's, with the demo), then
    // the first flipped row opened in Classify.
    TaskEvaluatePanel* evaluate = window.taskEvaluatePanel();
    window.tabs()->setCurrentWidget(evaluate);
    if (evaluate->datasetPath().isEmpty())
        std::printf("Evaluate Tasks: no classification file offered (not the demo); skipped\n");
    else {
        if (!clickAndWait(window, evaluate->evaluateButton(), &WorkbenchSession::taskEvaluated))
            return false;
        shoot(window, out + "/27-classify-evaluate.png");
        std::printf("Evaluate Tasks: %d metrics, %d changed rows\n", evaluate->metricsModel()->rowCount(),
                    evaluate->changedModel()->rowCount());
        if (evaluate->changedModel()->rowCount() > 0) {
            QSignalSpy classified(window.session(), &WorkbenchSession::textClassified);
            evaluate->openChangedRow(0);
            classified.wait(120000);
            waitIdle(window.session());
            shoot(window, out + "/28-evaluate-row-in-classify.png");
        }
    }

    const QString report = out + "/tasks-report";
    QDir(report).removeRecursively();
    const QStringList files = window.exportReport(report);
    std::printf("task report: %lld files in %s\n", static_cast<long long>(files.size()), qPrintable(report));
    return true;
}
