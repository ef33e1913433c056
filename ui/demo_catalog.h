#pragma once
// The bundled demo: checkpoints (trained float models, their FP8 versions) and texts (passages with
// questions, sentences with a masked word) found in the demo folder. The folder is looked up at run
// time: $SCALESCOPE_DEMO_DIR, the installed share/scalescope/demo next to the executable, or the
// source tree's resources/demo.
#include <QString>
#include <QStringList>
#include <QVector>

namespace scalescope::ui {

// The panel a demo opens in, with an example input filled in.
enum class DemoTask { QuestionAnswering, FillMask, Embed, Rerank, Classify };

struct DemoCheckpoint {
    QString label;      // "QA, FP8 per channel (dynamic per-token activations)"
    QString directory;
    QString reference;  // the float original
    DemoTask task = DemoTask::QuestionAnswering;
    // A reranker demo's own example (tasks/<name>_query.txt and <name>_passages.txt), in the
    // languages it was trained on; empty: the generic demoTaskInputs().
    QString rerankQuery;
    QStringList rerankPassages;
};

// Example inputs for the sequence-task demos (an embedder's texts, a reranker's query and
// passages, a classifier's text), in the language the demo models were trained on.
struct DemoTaskInputs {
    QStringList texts;
    QString query;
    QStringList passages;
    QString classifyText;
};
DemoTaskInputs demoTaskInputs();

struct DemoPassage {
    QString title, question, context;
};

struct DemoCatalog {
    QString folder;
    QVector<DemoCheckpoint> checkpoints;
    QVector<DemoPassage> passages;     // the first question of each passage
    QVector<QString> maskSentences;

    bool isEmpty() const { return checkpoints.isEmpty(); }
    // Whether dir is one of the demo checkpoints, which know only the demo corpus.
    bool holdsCheckpoint(const QString& dir) const;
    // Whether context is one of the passages (surrounding white space aside).
    bool holdsPassage(const QString& context) const;
    // The demo corpus as a SQuAD file (folder/corpus/questions.json), whether or not it exists.
    QString questionsFile() const { return folder + QStringLiteral("/corpus/questions.json"); }
};

// compiledInFolder: the source tree's demo folder known at build time (may not exist).
QString findDemoFolder(const QString& compiledInFolder);
DemoCatalog loadDemoCatalog(const QString& folder);

} // namespace scalescope::ui
