#include "tasks/keep_float.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "analysis/consumers.h"
#include "analysis/scale_statistics.h"
#include "common/error.h"
#include "common/option_error.h"
#include "common/text_files.h"
#include "io/checkpoint_destination.h"
#include "io/safetensors.h"
#include "model/checkpoint.h"
#include "tasks/sensitivity_cause.h"
#include "model/sentence_transformers.h"

namespace scalescope {
namespace {

namespace fs = std::filesystem;
using ordered_json = nlohmann::ordered_json;

// Tensors of a quantized Linear that only its FP8 form has.
const std::set<std::string> kQuantizationSuffixes = {".weight_scale", ".input_scale", ".weight_zero_point",
                                                     ".input_zero_point"};

// The one sentence for a name that is not a quantized Linear of the checkpoint.
void checkModule(const Checkpoint& checkpoint, const std::string& module)
{
    const std::string& dir = checkpoint.directory();
    if (!checkpoint.layout().findLinear(module)) {
        bool isModule = false;
        for (const TensorView* view : checkpoint.tensors().tensors())
            isModule = isModule || view->name.rfind(module + ".", 0) == 0;
        if (isModule)
            throw Error("'" + module + "' is a module of " + dir + " but not a Linear, so it cannot be kept float.");
        throw OptionError(TaskOption::Modules,
                          "'" + module + "' is not a module of " + dir + "; {option} takes exact Linear names.");
    }
    const LinearInfo* info = checkpoint.plan().find(module);
    if (!info || !info->quantized)
        throw Error("'" + module + "' is not quantized in " + dir + " (its weight is already float), so there is nothing to keep float.");
}

// The float weight of one Linear in the checkpoint's float dtype: the reference's values, or the
// dequantized codes, rounded to it (to nearest, ties to even). A kept weight wider than the
// model's activations is what the AIU cannot run.
TensorToWrite floatWeight(const Checkpoint& checkpoint, const Checkpoint* reference, const std::string& module,
                          const std::vector<LinearScaleStatistics>& scales, Dtype dtype)
{
    const TensorView& codes = checkpoint.tensors().require(module + ".weight");
    const std::string name = module + ".weight";
    if (reference) {
        const TensorView& w = reference->tensors().require(module + ".weight");
        if (!isFloatDtype(w.dtype) || w.shape != codes.shape)
            throw Error("Tensor '" + w.name + "' in " + w.file + " is " + dtypeName(w.dtype) + " " + shapeText(w.shape) +
                        "; keep-float needs a float weight of shape " + shapeText(codes.shape) + ".");
        if (w.dtype == dtype) {
            TensorToWrite out{name, dtype, codes.shape, {}};
            out.bytes.assign(w.data, w.data + w.byteSize);
            return out;
        }
        return makeFloatTensor(name, dtype, codes.shape, w.toFloat().values.data());
    }
    std::vector<float> values;
    for (const LinearScaleStatistics& s : scales)
        if (s.module == module)
            values = dequantizedWeight(s, codes);
    if (values.empty())
        throw OptionError(TaskOption::Reference, "keep-float cannot dequantize the weight of '" + module +
                                                     "' (its scale layout is not per channel or per tensor); give {option}.");
    return makeFloatTensor(name, dtype, codes.shape, values.data());
}

// A Linear left FP8 with a per-tensor weight scale: what --per-channel-weights expands.
bool expandsPerChannel(const LinearInfo& linear, const std::set<std::string>& kept)
{
    return linear.quantized && linear.weightStrategy == "tensor" && !kept.count(linear.module);
}

// --per-channel-weights is refused, with one sentence, where it cannot make the AIU's fused
// loading work: no per-tensor weight scale to expand, or activations fms_mo does not pair with
// per-channel weights (per tensor, static or dynamic; static input scales of q, k and v would
// concatenate to [3] on the fused loading anyway).
void checkPerChannelWeights(const Checkpoint& checkpoint, const std::set<std::string>& kept)
{
    bool perTensor = false;
    for (const LinearInfo& linear : checkpoint.plan().linears()) {
        if (!expandsPerChannel(linear, kept))
            continue;
        perTensor = true;
        if (linear.activations != ActivationQuantization::None && linear.activations != ActivationQuantization::DynamicPerToken)
            throw Error("Storing the weight scales per channel cannot make " + checkpoint.directory() +
                        " load fused on the AIU: " + linear.module +
                        " has per-tensor input activations, which fms_mo does not pair with per-channel weights; "
                        "load it unfused instead (keep-float then writes the copy for that loading).");
    }
    if (!perTensor)
        throw Error("Storing the weight scales per channel changes nothing in " + checkpoint.directory() +
                    ": no Linear left FP8 there has a per-tensor weight scale.");
}

// A per-tensor weight scale as one per output channel: the same bytes on each of `rows` rows.
TensorToWrite perChannelScale(const TensorView& scale, int64_t rows)
{
    if (scale.numel() != 1)
        throw Error("Tensor '" + scale.name + "' in " + scale.file + " is " + shapeText(scale.shape) +
                    ", not the one value of a per-tensor weight scale.");
    TensorToWrite out{scale.name, scale.dtype, {rows, 1}, {}};
    for (int64_t row = 0; row < rows; ++row)
        out.bytes.insert(out.bytes.end(), scale.data, scale.data + scale.byteSize);
    return out;
}

// The expanded weight scales of every Linear left FP8 with a per-tensor one, by tensor name.
std::map<std::string, TensorToWrite> perChannelScales(const Checkpoint& checkpoint, const std::set<std::string>& kept)
{
    std::map<std::string, TensorToWrite> scales;
    for (const LinearInfo& linear : checkpoint.plan().linears())
        if (expandsPerChannel(linear, kept)) {
            const TensorView& scale = checkpoint.tensors().require(linear.module + ".weight_scale");
            scales[scale.name] = perChannelScale(scale, linear.outFeatures);
        }
    return scales;
}

// Every config group's per-tensor float weights declared per channel, as the expanded scales are.
void declarePerChannelWeights(ordered_json& quantization)
{
    if (!quantization.contains("config_groups") || !quantization["config_groups"].is_object())
        return;
    for (auto& [name, group] : quantization["config_groups"].items()) {
        (void)name;
        if (group.is_object() && group.contains("weights") && group["weights"].is_object() &&
            group["weights"].value("strategy", "") == "tensor")
            group["weights"]["strategy"] = "channel";
    }
}

bool dropped(const std::string& name, const std::set<std::string>& modules)
{
    for (const std::string& suffix : kQuantizationSuffixes)
        if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0 &&
            modules.count(name.substr(0, name.size() - suffix.size())))
            return true;
    return false;
}

// One shard rewritten: the same tensors in the same order and the same metadata, with the float
// weights in place of the codes and the scales left out.
void rewriteShard(const std::string& from, const std::string& to, const std::set<std::string>& modules,
                  const std::map<std::string, TensorToWrite>& weights)
{
    const std::unique_ptr<SafetensorsFile> file = SafetensorsFile::open(from);
    std::vector<TensorToWrite> tensors;
    for (const TensorView& view : file->tensors()) {
        if (dropped(view.name, modules))
            continue;
        const auto replaced = weights.find(view.name);
        if (replaced != weights.end()) {
            tensors.push_back(replaced->second);
            continue;
        }
        TensorToWrite copy{view.name, view.dtype, view.shape, {}};
        copy.bytes.assign(view.data, view.data + view.byteSize);
        tensors.push_back(std::move(copy));
    }
    writeSafetensors(to, tensors, file->metadata());
}

void writeJson(const fs::path& path, const ordered_json& value)
{
    std::ofstream out(path);
    out << value.dump(2) << '\n';
    out.close();
    if (!out)
        throw Error("Cannot write " + path.string() + ".");
}

// config.json with the entries appended to the quantization config's ignore list (and the weights
// declared per channel for --per-channel-weights).
ordered_json updatedConfig(const std::string& dir, const std::vector<std::string>& entries, std::vector<std::string>& ignore,
                           bool perChannelWeights)
{
    const std::string path = (fs::path(dir) / "config.json").string();
    ordered_json config = ordered_json::parse(readFileToString(path, 64ull << 20));
    const char* key = config.contains("quantization_config") ? "quantization_config" : "compression_config";
    ordered_json& quantization = config[key];
    if (!quantization.contains("ignore") || !quantization["ignore"].is_array())
        quantization["ignore"] = ordered_json::array();
    for (const auto& entry : quantization["ignore"])
        if (entry.is_string())
            ignore.push_back(entry.get<std::string>());
    for (const std::string& m : entries)
        if (std::find(ignore.begin(), ignore.end(), m) == ignore.end()) {
            ignore.push_back(m);
            quantization["ignore"].push_back(m);
        }
    if (perChannelWeights)
        declarePerChannelWeights(quantization);
    return config;
}

// The Linears to keep plus the encoder Linears already stored float: an earlier fix that listed
// them by HF name only is repaired, so that every consumer keeps all of them float.
std::vector<std::string> everyFloatEncoderLinear(const Checkpoint& checkpoint, std::vector<std::string> modules)
{
    for (const LinearInfo& linear : checkpoint.plan().linears())
        if (!linear.quantized && checkpoint.layout().isEncoderLinear(linear.module) &&
            std::find(modules.begin(), modules.end(), linear.module) == modules.end())
            modules.push_back(linear.module);
    return modules;
}

// Who the copy was written for, in KeepFloatValidity's words.
std::vector<std::string> writtenForNames(const KeepFloatConsumers& consumers)
{
    std::vector<std::string> names;
    if (consumers.aiu && !consumers.aiuUnfused)
        names.push_back(kConsumerAiuFused);
    if (consumers.aiu)
        names.push_back(kConsumerAiuUnfused);
    if (consumers.vllm)
        names.push_back(kConsumerVllm);
    names.push_back(kConsumerCompressedTensors);
    return names;
}

FixProvenance provenanceOf(const std::string& checkpointDir, const KeepFloatOptions& options, const KeepFloatResult& result)
{
    FixProvenance provenance;
    provenance.sourceDir = checkpointDir;
    provenance.referenceDir = options.referenceDir;
    provenance.keptFloat = options.modules;
    provenance.consumers = writtenForNames(result.writtenFor);
    provenance.weightDtype = dtypeName(result.weightDtype);
    provenance.toolVersion = options.toolVersion.empty() ? std::string("unknown") : options.toolVersion;
    provenance.measurement = options.measurement;
    return provenance;
}

// The tensors the copy holds in place of the source's (the kept Linears' float weights, expanded
// weight scales), by name, and the shard files that hold one of them or a dropped scale.
struct ReplacedTensors {
    std::map<std::string, TensorToWrite> tensors;
    std::set<std::string> shards;
};

ReplacedTensors replacedTensors(const Checkpoint& checkpoint, const Checkpoint* reference, const std::set<std::string>& modules,
                                bool perChannelWeights, Dtype weightDtype)
{
    ReplacedTensors replaced;
    if (perChannelWeights)
        for (auto& [name, scale] : perChannelScales(checkpoint, modules)) {
            replaced.shards.insert(checkpoint.tensors().require(name).file);
            replaced.tensors[name] = std::move(scale);
        }
    const std::vector<LinearScaleStatistics> scales = computeScaleStatistics(checkpoint);
    for (const std::string& m : modules) {
        replaced.tensors[m + ".weight"] = floatWeight(checkpoint, reference, m, scales, weightDtype);
        for (const TensorView* view : checkpoint.tensors().tensors())
            if (view->name == m + ".weight" || dropped(view->name, modules))
                replaced.shards.insert(view->file);
    }
    return replaced;
}

} // namespace

KeepFloatResult keepFloat(const std::string& checkpointDir, const std::string& destinationDir,
                          const KeepFloatOptions& options, const Progress& progress)
{
    if (options.modules.empty())
        throw OptionError(TaskOption::Modules, "{option} names no Linear; give the exact names of the Linears to keep float.");
    std::shared_ptr<const Checkpoint> checkpoint = Checkpoint::open(checkpointDir);
    if (!checkpoint->config().quantization)
        throw Error(checkpointDir + " has no quantization config, so it is not an FP8 checkpoint to fix.");
    for (const std::string& m : options.modules)
        checkModule(*checkpoint, m);
    const std::set<std::string> modules(options.modules.begin(), options.modules.end());
    if (options.perChannelWeights)
        checkPerChannelWeights(*checkpoint, modules);
    KeepFloatResult result;
    // With per-channel weight scales the fused loading takes the copy as requested.
    result.writtenFor = options.perChannelWeights
                            ? options.consumers
                            : consumersTheSchemeAllows(*checkpoint, options.modules, options.consumers, result.loadingNote);
    if (const auto refusal = keepFloatRefusal(*checkpoint, options.modules, result.writtenFor))
        throw Error(*refusal);
    std::shared_ptr<const Checkpoint> reference;
    std::vector<std::pair<std::string, std::string>> inputs = {{checkpointDir, "the source checkpoint"}};
    if (!options.referenceDir.empty()) {
        reference = Checkpoint::open(options.referenceDir);
        inputs.emplace_back(options.referenceDir, "the reference checkpoint");
    }
    const CheckpointDestination destination =
        prepareCheckpointDestination(destinationDir, inputs, options.overwrite, "keep-float");

    result.weightSource = reference ? "reference (" + options.referenceDir + ")" : "dequantized";
    result.weightDtype = checkpointFloatDtype(*checkpoint);
    const ReplacedTensors replaced =
        replacedTensors(*checkpoint, reference.get(), modules, options.perChannelWeights, result.weightDtype);
    const std::map<std::string, TensorToWrite>& weights = replaced.tensors;
    const std::set<std::string>& shards = replaced.shards;
    const ordered_json config =
        updatedConfig(checkpointDir, keepFloatIgnoreNames(*checkpoint, everyFloatEncoderLinear(*checkpoint, options.modules)),
                      result.ignore, options.perChannelWeights);
    progress.throwIfCancelled();
    checkpoint->tensors().checkUnchanged();

    writeCheckpointFolder(destination, [&](const std::string& folder) {
        for (const fs::directory_entry& entry : fs::directory_iterator(checkpointDir)) {
            if (!entry.is_regular_file())
                continue; // only a checkpoint's own files: subfolders are not part of it
            const std::string name = entry.path().filename().string();
            const fs::path to = fs::path(folder) / name;
            if (name == kProvenanceFileName)
                continue; // a fix of a fix: its own provenance is written below
            if (name == "config.json") {
                writeJson(to, config);
            } else if (shards.count(entry.path().string()) || shards.count((fs::path(checkpointDir) / name).string())) {
                rewriteShard(entry.path().string(), to.string(), modules, weights);
            } else if (name == "model.safetensors.index.json") {
                ordered_json index = ordered_json::parse(readFileToString(entry.path().string(), 64ull << 20));
                if (index.contains("weight_map") && index["weight_map"].is_object())
                    for (auto it = index["weight_map"].begin(); it != index["weight_map"].end();)
                        it = dropped(it.key(), modules) ? index["weight_map"].erase(it) : std::next(it);
                writeJson(to, index);
            } else {
                fs::copy_file(entry.path(), to);
                continue;
            }
            result.rewrittenFiles.push_back(name);
        }
        copySentenceTransformersFiles(checkpointDir, folder); // an embedder's module folders too
        writeJson(fs::path(folder) / kProvenanceFileName, fixProvenanceJson(provenanceOf(checkpointDir, options, result)));
        result.rewrittenFiles.push_back(kProvenanceFileName);
        progress.throwIfCancelled();
    });
    result.consumers = assessConsumers(*Checkpoint::open(destination.destination));
    return result;
}

std::string llmCompressorRecipe(const std::vector<std::string>& ignore)
{
    std::string recipe = "# llm-compressor recipe: re-quantize the float model with these modules left in float\n"
                         "quant_stage:\n  quant_modifiers:\n    QuantizationModifier:\n      targets: [\"Linear\"]\n"
                         "      ignore:\n";
    for (const std::string& name : ignore) {
        // Single-quoted YAML: backslashes in re: patterns stay as they are; a quote is doubled.
        std::string quoted;
        for (char c : name)
            quoted += c == '\'' ? std::string("''") : std::string(1, c);
        recipe += "        - '" + quoted + "'\n";
    }
    return recipe;
}

} // namespace scalescope
