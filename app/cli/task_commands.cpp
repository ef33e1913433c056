#include "task_commands.h"

#include <filesystem>
#include <iomanip>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/text_files.h"
#include "engine/encoder_model.h"
#include "engine/open_backend.h"
#include "io/safetensors.h"
#include "model/checkpoint.h"
#include "model/sentence_transformers.h"
#include "report/result_json.h"
#include "report/task_json.h"
#include "tasks/task_evaluation.h"
#include "output_files.h"
#include "tasks/task_datasets.h"
#include "text_output.h"

namespace scalescope::cli {
namespace {

using json = nlohmann::json;

// The two sides of a task: the run on --device, the float --reference in-process (or null: the
// run's model in dequant stands in).
struct TaskModels {
    std::unique_ptr<InferenceBackend> run;
    std::unique_ptr<InferenceBackend> reference;
    RunPair runs;
    std::string note;
};

TaskModels openTaskModels(const Arguments& args, std::shared_ptr<const Checkpoint> checkpoint,
                          std::shared_ptr<const Checkpoint> referenceCheckpoint)
{
    TaskModels models;
    models.runs.run = runSettingsOption(args, ModeChoices::RunSide, DeviceChoices::One);
    models.run = openBackend(parseDeviceSpec(models.runs.run.device), std::move(checkpoint), {}, cliRunnerOptions());
    if (referenceCheckpoint)
        models.reference = EncoderModel::load(std::move(referenceCheckpoint));
    else
        models.note = "No --reference was given, so dequant (dequantized weights, float activations) stands in for the reference.";
    return models;
}

// --text (repeated) or --texts FILE, one of them.
std::vector<std::string> textsOption(const Arguments& args, const char* what)
{
    const std::vector<std::string> given = args.values("text");
    if (!given.empty() == args.has("texts"))
        throw UsageError{std::string(what) + " needs --text (one or more) or --texts FILE."};
    if (!given.empty())
        return given;
    return readTextsFile(*args.value("texts")).texts;
}

void printTaskJson(json document, const TaskModels& models, const std::string& checkpointDir)
{
    document["checkpoint"] = checkpointDir;
    document["mode"] = models.runs.run.label();
    document["reference"] = models.reference ? json(models.reference->checkpoint().directory()) : json(nullptr);
    if (!models.note.empty())
        document["note"] = models.note;
    std::cout << jsonText(document) << "\n";
}

void printNotes(const std::vector<std::string>& notes, const TaskModels& models)
{
    for (const std::string& note : notes)
        std::cout << "Note: " << terminalSafe(note) << "\n";
    if (!models.note.empty())
        std::cout << "Note: " << models.note << "\n";
}

std::string fixed(double value, int digits);

// An evaluation's JSON (with the run fields) or its one-line summary and notes.
void printTaskJsonOrText(const Arguments& args, json document, const TaskModels& models, const std::string& checkpointDir,
                         const std::string& summary, const std::vector<std::string>& notes)
{
    if (args.flag("json")) {
        if (!notes.empty())
            document["notes"] = notes;
        printTaskJson(std::move(document), models, checkpointDir);
        return;
    }
    std::cout << summary << " (mode " << models.runs.run.label() << ").\n";
    printNotes(notes, models);
}

std::string fixed(double value, int digits)
{
    std::ostringstream out;
    out << std::fixed << std::setprecision(digits) << value;
    return out.str();
}

void writeEmbeddings(const std::string& path, const EmbedResult& result, const std::string& checkpointDir)
{
    const int64_t n = static_cast<int64_t>(result.inputs.size());
    FloatTensor run{{n, result.dim}, {}}, reference{{n, result.dim}, {}};
    for (const EmbeddedText& item : result.inputs) {
        run.values.insert(run.values.end(), item.embedding.begin(), item.embedding.end());
        reference.values.insert(reference.values.end(), item.referenceEmbedding.begin(), item.referenceEmbedding.end());
    }
    writeSafetensors(path, {makeF32Tensor("embeddings", run), makeF32Tensor("reference_embeddings", reference)},
                     {{"producer", "scalescope-cli"}, {"checkpoint", checkpointDir}, {"mode", result.run.label()},
                      {"pooling", poolingModeName(result.pooling)}});
}

std::optional<bool> normalizeOption(const Arguments& args)
{
    if (args.flag("normalize") && args.flag("no-normalize"))
        throw UsageError{"--normalize and --no-normalize exclude each other."};
    if (args.flag("normalize"))
        return true;
    if (args.flag("no-normalize"))
        return false;
    return std::nullopt;
}

std::optional<PoolingMode> poolingOption(const Arguments& args)
{
    const std::string word = args.value("pooling", "checkpoint");
    if (word == "checkpoint")
        return std::nullopt;
    try {
        return poolingModeFromName(word);
    } catch (const Error&) {
        throw UsageError{"--pooling must be cls, mean, max, mean_sqrt_len or checkpoint (got \"" +
                         abbreviatedText(word, 40) + "\")."};
    }
}

// The checkpoint (and reference) with the pooling the options ask for.
std::shared_ptr<const Checkpoint> withPoolingOptions(std::shared_ptr<const Checkpoint> checkpoint,
                                                     std::optional<PoolingMode> pooling, std::optional<bool> normalize)
{
    if (auto changed = embeddingCheckpoint(*checkpoint, pooling, normalize))
        return changed;
    return checkpoint;
}

} // namespace

int commandEvaluateTask(const Arguments& args)
{
    const std::string checkpointDir = args.positionals()[0];
    const std::size_t maxSamples = static_cast<std::size_t>(args.intValue("max-samples", 0, 0, 100'000'000));
    std::shared_ptr<const Checkpoint> checkpoint = Checkpoint::open(checkpointDir);
    std::shared_ptr<const Checkpoint> referenceCheckpoint;
    if (auto dir = args.value("reference"))
        referenceCheckpoint = Checkpoint::open(*dir);
    json document;
    std::string summary;
    if (args.has("sts")) {
        const StsDataset dataset = readStsFile(*args.value("sts"), maxSamples);
        TaskModels models = openTaskModels(args, checkpoint, referenceCheckpoint);
        const StsEvaluation result = evaluateSts(*models.run, models.reference.get(), dataset, models.runs);
        document = stsJson(result, dataset);
        summary = "Spearman x 100: run " + fixed(result.runSpearman, 2) + ", reference " + fixed(result.referenceSpearman, 2) +
                  " (" + std::to_string(dataset.pairs.size()) + " pairs)";
        printTaskJsonOrText(args, std::move(document), models, checkpointDir, summary, result.notes);
    } else if (args.has("retrieval")) {
        const BeirDataset dataset = readBeirFolder(*args.value("retrieval"), maxSamples);
        TaskModels models = openTaskModels(args, checkpoint, referenceCheckpoint);
        const RetrievalEvaluation result = evaluateRetrieval(*models.run, models.reference.get(), dataset, models.runs);
        summary = "nDCG@10 run " + fixed(result.run.ndcgAt10, 4) + ", reference " + fixed(result.reference.ndcgAt10, 4) +
                  "; MRR@10 run " + fixed(result.run.mrrAt10, 4) + ", reference " + fixed(result.reference.mrrAt10, 4) +
                  "; recall@100 run " + fixed(result.run.recallAt100, 4) + ", reference " +
                  fixed(result.reference.recallAt100, 4) + "; " + std::to_string(result.changedQueries.size()) + " of " +
                  std::to_string(result.run.queriesEvaluated) + " queries changed their top 10";
        printTaskJsonOrText(args, retrievalJson(result, dataset), models, checkpointDir, summary, result.notes);
    } else {
        const ClassificationDataset dataset =
            readClassificationFile(*args.value("classification"), checkpoint->config().labels, maxSamples);
        TaskModels models = openTaskModels(args, checkpoint, referenceCheckpoint);
        const ClassificationEvaluation result =
            evaluateClassification(*models.run, models.reference.get(), dataset, models.runs);
        summary = std::to_string(result.flips) + " of " + std::to_string(result.classified.inputs.size()) +
                  " labels flip" +
                  (result.runAccuracy ? "; accuracy run " + fixed(*result.runAccuracy, 4) + ", reference " +
                                            fixed(*result.referenceAccuracy, 4)
                                      : std::string()) +
                  (result.meanKl ? "; mean KL " + fixed(*result.meanKl, 5) : std::string());
        printTaskJsonOrText(args, classificationJson(result), models, checkpointDir, summary, result.classified.notes);
    }
    return 0;
}

int commandEmbed(const Arguments& args)
{
    const std::string checkpointDir = args.positionals()[0];
    EmbedOptions options;
    options.texts = textsOption(args, "embed");
    options.prompt = args.value("prompt", "");
    const std::optional<PoolingMode> pooling = poolingOption(args);
    const std::optional<bool> normalize = normalizeOption(args);
    const std::optional<std::string> output = args.value("output");
    if (output)
        checkOutputFileTarget(*output, args.flag("force"));
    std::shared_ptr<const Checkpoint> checkpoint = withPoolingOptions(Checkpoint::open(checkpointDir), pooling, normalize);
    std::shared_ptr<const Checkpoint> reference;
    if (auto dir = args.value("reference"))
        reference = withPoolingOptions(Checkpoint::open(*dir), pooling, normalize);
    TaskModels models = openTaskModels(args, checkpoint, reference);
    options.runs = models.runs;
    const EmbedResult result = embedTexts(*models.run, models.reference.get(), options);
    if (output)
        writeEmbeddings(*output, result, checkpointDir);
    if (args.flag("json")) {
        json document = embedJson(result);
        if (output)
            document["output"] = *output;
        printTaskJson(std::move(document), models, checkpointDir);
        return 0;
    }
    std::cout << "Pooling " << poolingModeName(result.pooling) << (result.normalized ? ", normalized" : "") << ", "
              << result.dim << " dimensions, mode " << result.run.label() << "\n";
    for (std::size_t i = 0; i < result.inputs.size(); ++i)
        std::cout << "  " << i << "  cosine " << fixed(result.inputs[i].cosine, 6) << "  "
                  << terminalSafe(abbreviatedText(result.inputs[i].text, 70)) << "\n";
    printNotes(result.notes, models);
    if (output)
        std::cout << "Wrote the embeddings to " << *output << ".\n";
    return 0;
}

int commandClassify(const Arguments& args)
{
    const std::string checkpointDir = args.positionals()[0];
    std::vector<SequenceInput> inputs;
    if (args.has("texts")) {
        if (args.has("text") || args.has("pair"))
            throw UsageError{"classify takes --text [--pair] or --texts FILE, not both."};
        for (const std::string& text : readTextsFile(*args.value("texts")).texts)
            inputs.push_back({text, std::nullopt});
    } else {
        if (!args.has("text") || args.values("text").size() > 1)
            throw UsageError{"classify needs one --text (with an optional --pair) or --texts FILE."};
        inputs.push_back({*args.value("text"), args.value("pair")});
    }
    std::shared_ptr<const Checkpoint> reference;
    if (auto dir = args.value("reference"))
        reference = Checkpoint::open(*dir);
    TaskModels models = openTaskModels(args, Checkpoint::open(checkpointDir), reference);
    const ClassifyResult result = classifyTexts(*models.run, models.reference.get(), inputs, models.runs);
    if (args.flag("json")) {
        printTaskJson(classifyJson(result), models, checkpointDir);
        return 0;
    }
    std::size_t flips = 0;
    for (const ClassifiedInput& item : result.inputs) {
        flips += item.flip ? 1 : 0;
        std::cout << (item.flip ? "FLIP " : "     ") << terminalSafe(item.run.label) << " ("
                  << fixed(item.run.probabilities.at(static_cast<std::size_t>(item.run.labelId)), 4) << ")  reference "
                  << terminalSafe(item.reference.label) << " ("
                  << fixed(item.reference.probabilities.at(static_cast<std::size_t>(item.reference.labelId)), 4)
                  << ")  KL " << (item.kl ? fixed(*item.kl, 5) : std::string("-")) << "  " << terminalSafe(abbreviatedText(item.input.text, 50)) << "\n";
    }
    std::cout << flips << " of " << result.inputs.size() << " inputs flip their label (mode " << result.run.label()
              << ").\n";
    printNotes(result.notes, models);
    return 0;
}

int commandRerank(const Arguments& args)
{
    const std::string checkpointDir = args.positionals()[0];
    RerankOptions options;
    options.query = args.required("query");
    const std::vector<std::string> given = args.values("passage");
    if (!given.empty() == args.has("passages"))
        throw UsageError{"rerank needs --passage (one or more) or --passages FILE."};
    options.passages = given;
    if (args.has("passages"))
        options.passages = readTextsFile(*args.value("passages")).texts;
    options.topK = args.intValue("top-k", 0, 1, 1'000'000);
    std::shared_ptr<const Checkpoint> reference;
    if (auto dir = args.value("reference"))
        reference = Checkpoint::open(*dir);
    TaskModels models = openTaskModels(args, Checkpoint::open(checkpointDir), reference);
    options.runs = models.runs;
    const RerankResult result = rerankPassages(*models.run, models.reference.get(), options);
    if (args.flag("json")) {
        printTaskJson(rerankJson(result), models, checkpointDir);
        return 0;
    }
    std::cout << rerankScorerName(result.scorer) << ", mode " << result.run.label() << ": "
              << (result.sameOrder ? "the same order as the reference" : "the order differs from the reference")
              << ", Kendall's tau " << fixed(result.kendallTau, 3) << "\n";
    for (std::size_t rank = 0; rank < result.ranking.size(); ++rank) {
        const RankedPassage& entry = result.ranking[rank];
        const RankedPassage& referenceEntry = result.referenceRanking.at(rank);
        std::cout << "  " << std::setw(3) << rank + 1 << ".  #" << entry.index << " " << fixed(entry.score, 4)
                  << (entry.index != referenceEntry.index ? "   reference: #" + std::to_string(referenceEntry.index) : "")
                  << "  " << terminalSafe(abbreviatedText(options.passages[entry.index], 60)) << "\n";
    }
    printNotes(result.notes, models);
    return 0;
}

} // namespace scalescope::cli
