// The sequence tasks of WorkbenchSession (embed, rerank, classify), apart from the QA and
// fill-mask jobs in workbench_session.cpp. Each runs its core task on the worker thread, then
// compares one of its inputs at every capture point, so that Errors, Scales, Triage and a
// sensitivity sweep (all of which read the last comparison and its input) work on these
// checkpoints too.
#include "workbench_session.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "tasks/fix_task_input.h"
#include "tasks/task_datasets.h"
#include "tasks/task_evaluation.h"

namespace scalescope::ui {
namespace {

// The part [from, to) of a job's progress bar, for a job made of several core calls.
Progress progressShare(const Progress& whole, double from, double to)
{
    Progress part;
    part.cancel = whole.cancel;
    if (whole.callback)
        part.callback = [whole, from, to](double fraction, const std::string& stage) {
            whole.report(from + (to - from) * fraction, stage);
        };
    return part;
}

std::vector<std::string> toStrings(const QStringList& list)
{
    std::vector<std::string> out;
    for (const QString& item : list)
        out.push_back(item.toStdString());
    return out;
}

// The text whose run embedding departs most from its reference (the lowest cosine).
std::size_t lowestCosine(const EmbedResult& result)
{
    std::size_t worst = 0;
    for (std::size_t i = 1; i < result.inputs.size(); ++i)
        if (!(result.inputs[i].cosine >= result.inputs[worst].cosine))
            worst = i;
    return worst;
}

// The passage whose rank moved most between the two sides (then: whose score moved most).
std::size_t mostMovedPassage(const RerankResult& result)
{
    auto rankIn = [](const std::vector<RankedPassage>& ranking, std::size_t index) {
        for (std::size_t rank = 0; rank < ranking.size(); ++rank)
            if (ranking[rank].index == index)
                return double(rank);
        return 0.0;
    };
    std::size_t chosen = result.ranking.empty() ? 0 : result.ranking.front().index;
    double bestMove = -1, bestScoreMove = -1;
    for (const RankedPassage& passage : result.ranking) {
        const double move = std::abs(rankIn(result.ranking, passage.index) - rankIn(result.referenceRanking, passage.index));
        const double scoreMove = std::abs(passage.score - passage.referenceScore);
        if (move > bestMove || (move == bestMove && scoreMove > bestScoreMove)) {
            chosen = passage.index;
            bestMove = move;
            bestScoreMove = scoreMove;
        }
    }
    return chosen;
}

// The prompt text a checkpoint names `name` ("query"), or "" when it has none by that name: a
// bi-encoder's query is compared as the rerank embedded it.
std::string namedPrompt(const SentenceEmbeddingConfig& embedding, const std::string& name)
{
    for (const auto& [key, text] : embedding.prompts)
        if (key == name)
            return text;
    return {};
}

} // namespace

void WorkbenchSession::embed(const QStringList& texts, const QString& prompt)
{
    const RunStamp stamp = currentStamp();
    submit(JobKind::Run, tr("Embed"), [this, texts, prompt, stamp](const Progress& progress) -> std::function<void()> {
        if (!run_)
            throw Error("No runnable checkpoint is open.");
        EmbedOptions options;
        options.texts = toStrings(texts);
        options.prompt = prompt.toStdString();
        options.runs = runPair(stamp);
        auto result = std::make_shared<const EmbedResult>(
            embedTexts(*run_, reference_.get(), options, progressShare(progress, 0.0, 0.7)));
        // The ids the embedding ran (prompt prepended, cut to max_seq_length): one segment, so
        // the ids alone say everything the forward needs.
        const std::size_t worst = lowestCosine(*result);
        ComparisonInput input;
        input.inputIds = {result->inputs.at(worst).inputIds};
        input.runs = options.runs;
        auto outcome = std::make_shared<EmbedOutcome>();
        outcome->stamp = stamp;
        outcome->texts = texts;
        outcome->prompt = prompt;
        outcome->result = result;
        outcome->comparison = std::make_shared<const ComparisonResult>(
            compareRuns(*run_, reference_.get(), input, progressShare(progress, 0.7, 1.0)));
        outcome->comparedInput = tr("text %1, the lowest cosine").arg(worst + 1);
        lastInput_ = input;
        lastTaskInput_ = embedTaskJson(options.texts, options.prompt);
        std::shared_ptr<const EmbedOutcome> delivered = outcome;
        return [this, delivered] { emit textsEmbedded(delivered); };
    });
}

void WorkbenchSession::rerank(const QString& query, const QStringList& passages, int comparedPassage)
{
    const RunStamp stamp = currentStamp();
    submit(JobKind::Run, tr("Rerank"), [this, query, passages, comparedPassage, stamp](const Progress& progress) -> std::function<void()> {
        if (!run_)
            throw Error("No runnable checkpoint is open.");
        RerankOptions options;
        options.query = query.toStdString();
        options.passages = toStrings(passages);
        options.runs = runPair(stamp);
        auto result = std::make_shared<const RerankResult>(
            rerankPassages(*run_, reference_.get(), options, progressShare(progress, 0.0, 0.7)));
        ComparisonInput input;
        input.runs = options.runs;
        int compared = -1;
        auto outcome = std::make_shared<RerankOutcome>();
        if (result->scorer == RerankScorer::CrossEncoder) {
            // The pair whose rank moved most (or the one asked for), in the family's pair layout as
            // the reranker ran it.
            const bool asked = comparedPassage >= 0 && comparedPassage < passages.size();
            const std::size_t moved = asked ? std::size_t(comparedPassage) : mostMovedPassage(*result);
            input.text = options.query;
            input.pair = options.passages.at(moved);
            compared = int(moved);
            outcome->comparedInput = asked ? tr("the query with passage %1, the pair the fix was measured on").arg(moved + 1)
                                           : tr("the query with passage %1, the one that moved most").arg(moved + 1);
        } else {
            input.text = namedPrompt(run_->checkpoint().config().embedding, "query") + options.query;
            outcome->comparedInput = tr("the query, as the embedder embeds it");
        }
        outcome->stamp = stamp;
        outcome->query = query;
        outcome->passages = passages;
        outcome->result = result;
        outcome->comparison = std::make_shared<const ComparisonResult>(
            compareRuns(*run_, reference_.get(), input, progressShare(progress, 0.7, 1.0)));
        lastInput_ = input;
        lastTaskInput_ = rerankTaskJson(options.query, options.passages, compared);
        std::shared_ptr<const RerankOutcome> delivered = outcome;
        return [this, delivered] { emit passagesReranked(delivered); };
    });
}

void WorkbenchSession::classify(const QString& text, const QString& pair)
{
    const RunStamp stamp = currentStamp();
    submit(JobKind::Run, tr("Classify"), [this, text, pair, stamp](const Progress& progress) -> std::function<void()> {
        if (!run_)
            throw Error("No runnable checkpoint is open.");
        SequenceInput sequence;
        sequence.text = text.toStdString();
        if (!pair.isEmpty())
            sequence.pair = pair.toStdString();
        const RunPair runs = runPair(stamp);
        auto result = std::make_shared<const ClassifyResult>(
            classifyTexts(*run_, reference_.get(), {sequence}, runs, progressShare(progress, 0.0, 0.5)));
        ComparisonInput input;
        input.text = sequence.text;
        input.pair = pair.toStdString();
        input.runs = runs;
        auto outcome = std::make_shared<ClassifyOutcome>();
        outcome->stamp = stamp;
        outcome->text = text;
        outcome->pair = pair;
        outcome->result = result;
        outcome->comparison = std::make_shared<const ComparisonResult>(
            compareRuns(*run_, reference_.get(), input, progressShare(progress, 0.5, 1.0)));
        outcome->comparedInput = pair.isEmpty() ? tr("the text") : tr("the text and its pair");
        lastInput_ = input;
        lastTaskInput_ = classifyTaskJson(input.text, input.pair);
        std::shared_ptr<const ClassifyOutcome> delivered = outcome;
        return [this, delivered] { emit textClassified(delivered); };
    });
}

// The dataset is read on the worker thread (a BEIR folder may be large), with the same readers and
// the same core evaluation as the CLI's `evaluate`; the label names of a classification file are
// the open checkpoint's id2label.
void WorkbenchSession::evaluateTask(TaskDatasetKind kind, const QString& path, int maxSamples)
{
    const RunStamp stamp = currentStamp();
    submit(JobKind::Evaluate, tr("Evaluate Tasks"),
           [this, kind, path, maxSamples, stamp](const Progress& progress) -> std::function<void()> {
               if (!run_)
                   throw Error("No runnable checkpoint is open.");
               const std::string file = path.toStdString();
               const std::size_t rows = static_cast<std::size_t>(std::max(0, maxSamples));
               const RunPair runs = runPair(stamp);
               auto outcome = std::make_shared<TaskEvaluationOutcome>();
               outcome->stamp = stamp;
               outcome->kind = kind;
               outcome->path = path;
               if (kind == TaskDatasetKind::Sts) {
                   auto dataset = std::make_shared<const StsDataset>(readStsFile(file, rows));
                   outcome->sts = std::make_shared<const StsEvaluation>(
                       evaluateSts(*run_, reference_.get(), *dataset, runs, progress));
                   outcome->stsDataset = dataset;
               } else if (kind == TaskDatasetKind::Retrieval) {
                   auto dataset = std::make_shared<const BeirDataset>(readBeirFolder(file, rows));
                   outcome->retrieval = std::make_shared<const RetrievalEvaluation>(
                       evaluateRetrieval(*run_, reference_.get(), *dataset, runs, progress));
                   outcome->beirDataset = dataset;
               } else {
                   auto dataset = std::make_shared<const ClassificationDataset>(
                       readClassificationFile(file, run_->checkpoint().config().labels, rows));
                   outcome->classification = std::make_shared<const ClassificationEvaluation>(
                       evaluateClassification(*run_, reference_.get(), *dataset, runs, progress));
                   outcome->classificationDataset = dataset;
               }
               std::shared_ptr<const TaskEvaluationOutcome> delivered = outcome;
               return [this, delivered] { emit taskEvaluated(delivered); };
           });
}

} // namespace scalescope::ui
