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
#include "output_files.h"
#include "text_output.h"

namespace scalescope::cli {
namespace {

using json = nlohmann::json;

// One text a line (empty lines skipped) or JSONL {"text", "pair"?}. (Stand-in until
// tasks/task_datasets.h lands.)
std::vector<SequenceInput> readTextsFile(const std::string& path)
{
    const std::string content = readFileToString(path);
    std::vector<SequenceInput> inputs;
    std::size_t start = 0;
    int lineNumber = 0;
    while (start <= content.size()) {
        std::size_t end = content.find('\n', start);
        if (end == std::string::npos)
            end = content.size();
        std::string line = content.substr(start, end - start);
        ++lineNumber;
        start = end + 1;
        if (!line.empty() && line.back() == '\r')
            line.pop_back();
        if (line.find_first_not_of(" \t") == std::string::npos)
            continue;
        if (line.front() == '{') {
            const json row = json::parse(line, nullptr, false);
            if (!row.is_object() || !row.contains("text") || !row["text"].is_string())
                throw Error(path + ": line " + std::to_string(lineNumber) + " is not a JSON object with a \"text\".");
            SequenceInput input{row["text"].get<std::string>(), std::nullopt};
            if (row.contains("pair") && row["pair"].is_string())
                input.pair = row["pair"].get<std::string>();
            inputs.push_back(std::move(input));
        } else {
            inputs.push_back({line, std::nullopt});
        }
    }
    if (inputs.empty())
        throw Error(path + " holds no text.");
    return inputs;
}

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
    std::vector<std::string> texts;
    for (const SequenceInput& input : readTextsFile(*args.value("texts")))
        texts.push_back(input.text);
    return texts;
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
        inputs = readTextsFile(*args.value("texts"));
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
                  << ")  KL " << fixed(item.kl, 5) << "  " << terminalSafe(abbreviatedText(item.input.text, 50)) << "\n";
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
        for (const SequenceInput& input : readTextsFile(*args.value("passages")))
            options.passages.push_back(input.text);
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
