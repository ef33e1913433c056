#include "demo_catalog.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

namespace scalescope::ui {
namespace {

bool hasCheckpoint(const QString& dir)
{
    return QFileInfo::exists(dir + QStringLiteral("/config.json"));
}

QJsonDocument readJson(const QString& path)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return {};
    return QJsonDocument::fromJson(file.readAll());
}

// The lines of a text file, blank ones left out; empty when it cannot be read.
QStringList readLines(const QString& path)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly | QIODevice::Text))
        return {};
    QStringList lines;
    for (const QString& line : QString::fromUtf8(file.readAll()).split(QLatin1Char('\n')))
        if (!line.trimmed().isEmpty())
            lines.push_back(line.trimmed());
    return lines;
}

// tasks/<example>_query.txt (its first line) and tasks/<example>_passages.txt (one passage a line).
void readRerankExample(const QString& folder, const char* example, DemoCheckpoint& demo)
{
    if (!*example)
        return;
    const QString stem = folder + QStringLiteral("/tasks/") + QLatin1String(example);
    const QStringList query = readLines(stem + QStringLiteral("_query.txt"));
    const QStringList passages = readLines(stem + QStringLiteral("_passages.txt"));
    if (query.isEmpty() || passages.isEmpty())
        return;
    demo.rerankQuery = query.first();
    demo.rerankPassages = passages;
}

} // namespace

bool DemoCatalog::holdsCheckpoint(const QString& dir) const
{
    for (const DemoCheckpoint& demo : checkpoints)
        if (QFileInfo(demo.directory) == QFileInfo(dir))
            return true;
    return false;
}

bool DemoCatalog::holdsPassage(const QString& context) const
{
    for (const DemoPassage& passage : passages)
        if (passage.context.trimmed() == context.trimmed())
            return true;
    return false;
}

QString findDemoFolder(const QString& compiledInFolder)
{
    const QStringList candidates = {
        qEnvironmentVariable("SCALESCOPE_DEMO_DIR"),
        QCoreApplication::applicationDirPath() + QStringLiteral("/../share/scalescope/demo"),
        compiledInFolder,
    };
    for (const QString& candidate : candidates)
        if (!candidate.isEmpty() && hasCheckpoint(candidate + QStringLiteral("/qa-fp8")))
            return QDir(candidate).canonicalPath();
    return {};
}

DemoCatalog loadDemoCatalog(const QString& folder)
{
    DemoCatalog catalog;
    catalog.folder = folder;
    if (folder.isEmpty())
        return catalog;
    struct Known {
        const char* name;
        const char* reference;
        const char* label;
        DemoTask task;
        const char* example = ""; // a reranker's own example in tasks/ (readRerankExample)
    };
    constexpr DemoTask qa = DemoTask::QuestionAnswering;
    const Known known[] = {
        {"qa-fp8", "qa-float",
            QT_TRANSLATE_NOOP("Demo", "Question answering, FP8 per channel, dynamic per-token activations"), qa},
        {"qa-fp8-static", "qa-float",
            QT_TRANSLATE_NOOP("Demo", "Question answering, FP8 per tensor, static activations"), qa},
        // qa-fp8-static with one input scale calibrated 64x too small (make_demo.sh --defect): a
        // broken checkpoint to triage, with the cause left for the user to find.
        {"qa-fp8-defect", "qa-float",
            QT_TRANSLATE_NOOP("Demo", "Question answering, FP8 static, with a planted defect to find"), qa},
        {"qa-float", "", QT_TRANSLATE_NOOP("Demo", "Question answering, float original"), qa},
        {"bert-qa-fp8", "bert-qa-float",
            QT_TRANSLATE_NOOP("Demo", "BERT question answering, FP8 per channel, dynamic per-token activations"),
            qa},
        {"bert-qa-float", "", QT_TRANSLATE_NOOP("Demo", "BERT question answering, float original"), qa},
        {"mlm-fp8", "mlm-float", QT_TRANSLATE_NOOP("Demo", "Fill mask, FP8 per channel, dynamic per-token activations"),
            DemoTask::FillMask},
        {"mlm-float", "", QT_TRANSLATE_NOOP("Demo", "Fill mask, float original"), DemoTask::FillMask},
        // The sequence tasks' demos: listed only once their folders are installed.
        {"embed-fp8", "embed-float", QT_TRANSLATE_NOOP("Demo", "Sentence embedder, FP8"), DemoTask::Embed},
        {"embed-float", "", QT_TRANSLATE_NOOP("Demo", "Sentence embedder, float original"), DemoTask::Embed},
        {"rerank-fp8", "rerank-float", QT_TRANSLATE_NOOP("Demo", "Cross-encoder reranker, FP8"), DemoTask::Rerank},
        // A reranker whose FP8 version has a defect planted that changes a ranking.
        {"rerank-fp8-defect", "rerank-float",
            QT_TRANSLATE_NOOP("Demo", "Cross-encoder reranker, FP8, with a planted defect to find"), DemoTask::Rerank},
        {"rerank-float", "", QT_TRANSLATE_NOOP("Demo", "Cross-encoder reranker, float original"), DemoTask::Rerank},
        // XLM-RoBERTa (issue 50): a multilingual reranker with a Unigram SentencePiece tokenizer,
        // opened on its own Spanish query over passages in five languages.
        {"xlmr-rerank-fp8", "xlmr-rerank-float",
            QT_TRANSLATE_NOOP("Demo", "Multilingual XLM-R reranker, FP8 per channel, dynamic per-token activations"),
            DemoTask::Rerank, "xlmr_rerank"},
        {"xlmr-rerank-float", "", QT_TRANSLATE_NOOP("Demo", "Multilingual XLM-R reranker, float original"),
            DemoTask::Rerank, "xlmr_rerank"},
        {"classify-fp8", "classify-float", QT_TRANSLATE_NOOP("Demo", "Text classifier, FP8"), DemoTask::Classify},
        {"classify-float", "", QT_TRANSLATE_NOOP("Demo", "Text classifier, float original"), DemoTask::Classify},
    };
    for (const Known& k : known) {
        const QString dir = folder + "/" + QLatin1String(k.name);
        if (!hasCheckpoint(dir))
            continue;
        DemoCheckpoint demo;
        demo.label = QCoreApplication::translate("Demo", k.label);
        demo.directory = dir;
        demo.reference = *k.reference ? folder + "/" + QLatin1String(k.reference) : QString();
        demo.task = k.task;
        readRerankExample(folder, k.example, demo);
        catalog.checkpoints.push_back(demo);
    }
    const QJsonArray articles = readJson(folder + "/corpus/questions.json").object().value("data").toArray();
    for (const QJsonValue& article : articles) {
        const QString title = article.toObject().value("title").toString();
        for (const QJsonValue& paragraph : article.toObject().value("paragraphs").toArray()) {
            const QJsonArray qas = paragraph.toObject().value("qas").toArray();
            if (qas.isEmpty())
                continue;
            catalog.passages.push_back({title, qas.first().toObject().value("question").toString(),
                                        paragraph.toObject().value("context").toString()});
        }
    }
    for (const QJsonValue& sentence : readJson(folder + "/corpus/mask_sentences.json").array())
        catalog.maskSentences.push_back(sentence.toObject().value("text").toString());
    return catalog;
}

DemoTaskInputs demoTaskInputs()
{
    DemoTaskInputs inputs;
    inputs.texts = {QStringLiteral("the cat sat on the mat"), QStringLiteral("a cat is sitting on a mat"),
                    QStringLiteral("the dog sat on the mat"), QStringLiteral("Paris is the capital of France"),
                    QStringLiteral("what is the capital of France ?")};
    inputs.query = QStringLiteral("what is the capital of France ?");
    inputs.passages = {QStringLiteral("the cat sat on the mat"), QStringLiteral("Paris is the capital of France"),
                       QStringLiteral("the dog sat on the mat"), QStringLiteral("France is a country and Paris is its capital")};
    inputs.classifyText = QStringLiteral("the cat sat on the mat");
    return inputs;
}

} // namespace scalescope::ui
