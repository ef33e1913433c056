#include "engine/quantize.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <fcntl.h>
#include <unistd.h>

#include "common/error.h"
#include "common/option_error.h"
#include "common/text_files.h"
#include "io/atomic_write.h"
#include "io/checkpoint_destination.h"
#include "model/checkpoint.h"
#include "engine/encoder_model.h"
#include "numerics/fp8.h"
#include "numerics/half.h"
#include "model/sentence_transformers.h"

namespace scalescope {
namespace {

namespace fs = std::filesystem;

// The scale as it will be stored: narrowed to the scale dtype and widened back, so that codes are
// computed with exactly the value a reader decodes.
float storedScale(float scale, Dtype dtype)
{
    switch (dtype) {
    case Dtype::BF16:
        return half::bf16ToFloat(half::floatToBf16(scale));
    case Dtype::F16:
        return half::f16ToFloat(half::floatToF16(scale));
    default:
        return scale;
    }
}

nlohmann::json activationArgs(const QuantizeOptions& options)
{
    const ActivationScheme activations = options.activations;
    if (activations == ActivationScheme::None)
        return nullptr;
    const bool dynamic = activations == ActivationScheme::Token || activations == ActivationScheme::Group;
    const nlohmann::json groupSize =
        activations == ActivationScheme::Group ? nlohmann::json(options.groupSize) : nlohmann::json(nullptr);
    return {{"num_bits", 8}, {"type", "float"}, {"strategy", strategyName(activations)}, {"symmetric", true},
            {"dynamic", dynamic}, {"group_size", groupSize}, {"block_structure", nullptr}, {"actorder", nullptr},
            {"observer", dynamic ? nlohmann::json(nullptr) : nlohmann::json("minmax")}, {"observer_kwargs", nlohmann::json::object()}};
}

nlohmann::json quantizationConfigJson(const QuantizeOptions& options, const EncoderLayout& layout)
{
    const nlohmann::json block = options.weights == WeightStrategy::Block
                                     ? nlohmann::json::array({options.blockRows, options.blockColumns})
                                     : nlohmann::json(nullptr);
    nlohmann::json weights = {{"num_bits", 8}, {"type", "float"}, {"strategy", strategyName(options.weights)}, {"symmetric", true},
                              {"dynamic", false}, {"group_size", nullptr}, {"block_structure", block},
                              {"actorder", nullptr}, {"observer", "minmax"}, {"observer_kwargs", nlohmann::json::object()}};
    nlohmann::json group = {{"targets", {"Linear"}}, {"weights", weights},
                            {"input_activations", activationArgs(options)},
                            {"output_activations", nullptr}, {"format", "float-quantized"}};
    nlohmann::json groups = {{"group_0", group}};
    if (options.embeddings == EmbeddingQuantization::Fp8PerRow) {
        nlohmann::json rows = weights;
        rows["strategy"] = strategyName(WeightStrategy::Channel);
        rows["block_structure"] = nullptr;
        // group_1: fms_mo reads only group_0, which keeps the Linears' scheme where it looks.
        groups["group_1"] = {{"targets", {kEmbeddingClassName}}, {"weights", rows}, {"input_activations", nullptr},
                             {"output_activations", nullptr}, {"format", "float-quantized"}};
    }
    return {{"quant_method", "compressed-tensors"}, {"format", "float-quantized"},
            {"quantization_status", "compressed"}, {"config_groups", groups},
            {"ignore", layout.quantizeIgnoreList()}, {"kv_cache_scheme", nullptr},
            {"global_compression_ratio", nullptr}, {"sparsity_config", nlohmann::json::object()},
            {"provider", "scalescope"}, {"version", "0.1.0"}};
}

std::map<std::string, float> calibrateInputAmax(const std::shared_ptr<const Checkpoint>& checkpoint,
                                                const std::vector<std::string>& texts, const Progress& progress)
{
    std::map<std::string, float> amax;
    for (const std::map<std::string, float>& text : calibrationAmaxPerText(checkpoint, texts, progress))
        for (const auto& [module, value] : text)
            amax[module] = std::max(amax[module], value);
    return amax;
}

struct QuantizedWeight {
    std::vector<uint8_t> codes;
    std::vector<float> scales;
    std::vector<int64_t> scaleShape;
};

// The amax scale of the rows [r0, r1) by columns [c0, c1) of a row-major weight.
float regionScale(const std::vector<float>& w, int64_t columns, int64_t r0, int64_t r1, int64_t c0, int64_t c1, Dtype dtype)
{
    float amax = 0;
    for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c)
            amax = std::max(amax, std::fabs(w[static_cast<std::size_t>(r * columns + c)]));
    return scaleForAmax(amax, dtype);
}

// One scale per tensor, per output row, or per block (a partial last block takes the max of its
// own elements, as compressed-tensors' zero padding gives); codes against the stored scales.
QuantizedWeight quantizeWeight(const std::vector<float>& w, int64_t rows, int64_t columns, const QuantizeOptions& options)
{
    const bool block = options.weights == WeightStrategy::Block;
    const int64_t bo = block ? options.blockRows : options.weights == WeightStrategy::Channel ? 1 : rows;
    const int64_t bi = block ? options.blockColumns : columns;
    const int64_t gridRows = (rows + bo - 1) / bo, gridColumns = (columns + bi - 1) / bi;
    QuantizedWeight out;
    for (int64_t br = 0; br < gridRows; ++br)
        for (int64_t bc = 0; bc < gridColumns; ++bc)
            out.scales.push_back(regionScale(w, columns, br * bo, std::min(rows, (br + 1) * bo), bc * bi,
                                             std::min(columns, (bc + 1) * bi), options.scaleDtype));
    out.codes.resize(static_cast<std::size_t>(rows * columns));
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t bc = 0; bc < gridColumns; ++bc) {
            const int64_t first = bc * bi;
            fp8::quantizeE4M3(w.data() + r * columns + first, static_cast<std::size_t>(std::min(bi, columns - first)),
                              out.scales[static_cast<std::size_t>((r / bo) * gridColumns + bc)],
                              out.codes.data() + r * columns + first);
        }
    out.scaleShape = block ? std::vector<int64_t>{gridRows, gridColumns}
                           : options.weights == WeightStrategy::Channel ? std::vector<int64_t>{rows, 1}
                                                                         : std::vector<int64_t>{1};
    return out;
}

// Quantizing NaN or inf gives NaN codes and scales that nothing downstream can recover from.
void refuseNonFinite(const TensorView& view)
{
    if (view.dtype != Dtype::F32 && view.dtype != Dtype::F16 && view.dtype != Dtype::BF16 && view.dtype != Dtype::F64)
        return;
    const FloatTensor values = view.toFloat();
    for (std::size_t i = 0; i < values.values.size(); ++i)
        if (!std::isfinite(values.values[i]))
            throw Error("Tensor '" + view.name + "' in " + view.file + " holds " +
                        (std::isnan(values.values[i]) ? "NaN" : "an infinite value") + " at element " +
                        std::to_string(i) + "; quantize needs finite source weights.");
}

// Checks what the options can say by themselves; the checkpoint's widths are checked after it opens.
void validateQuantizeOptions(const QuantizeOptions& options)
{
    if (options.weights == WeightStrategy::Block && (options.blockRows <= 0 || options.blockColumns <= 0))
        throw OptionError(TaskOption::BlockSize, "{option} must be two positive sizes ROWSxCOLUMNS, not " +
                                                     std::to_string(options.blockRows) + "x" +
                                                     std::to_string(options.blockColumns) + ".");
    if (options.activations == ActivationScheme::Group && options.groupSize <= 0)
        throw OptionError(TaskOption::GroupSize, "{option} must be a positive number of channels, not " +
                                                     std::to_string(options.groupSize) + ".");
    if (options.scaleDtype != Dtype::F32 && options.scaleDtype != Dtype::BF16 && options.scaleDtype != Dtype::F16)
        throw OptionError(TaskOption::ScaleDtype, "{option} must be float32, bfloat16 or float16.");
    if (options.activations == ActivationScheme::Tensor && options.calibrationTexts.empty() &&
        options.calibratedInputAmax.empty())
        throw OptionError(TaskOption::Calibration,
                          "Static per-tensor activations need calibration texts ({option}): the input scales come "
                          "from the largest values the Linears see on them.");
}

} // namespace

float scaleForAmax(float amax, Dtype dtype)
{
    // An all-zero row would give a zero scale; 1 keeps its codes zero and its scale valid.
    float scale = amax > 0 ? amax / fp8::kE4M3Max : 1.0f;
    float stored = storedScale(scale, dtype);
    if (!(stored > 0) || !std::isfinite(stored))
        throw Error("A weight with amax " + std::to_string(amax) + " has no representable scale in " +
                    dtypeName(dtype) + ".");
    return stored;
}

Encoding calibrationEncoding(const Checkpoint& checkpoint, const std::string& text)
{
    const Tokenizer& tokenizer = checkpoint.tokenizer();
    const int64_t maxTokens = checkpoint.layout().maxSequenceLength();
    Encoding encoding = tokenizer.encode(text);
    if (static_cast<int64_t>(encoding.ids.size()) > maxTokens) {
        encoding.ids.resize(static_cast<std::size_t>(maxTokens - 1));
        encoding.ids.push_back(tokenizer.sepId());
        encoding.typeIds.resize(encoding.ids.size(), 0);
    }
    return encoding;
}

std::vector<std::map<std::string, float>> calibrationAmaxPerText(const std::shared_ptr<const Checkpoint>& checkpoint,
                                                                 const std::vector<std::string>& texts,
                                                                 const Progress& progress)
{
    std::unique_ptr<EncoderModel> model = EncoderModel::load(checkpoint);
    ForwardOptions options;
    options.mode = RunMode::Dequant;
    options.linearInputAmax = true;
    std::vector<std::map<std::string, float>> amax;
    amax.reserve(texts.size());
    for (std::size_t i = 0; i < texts.size(); ++i) {
        progress.throwIfCancelled();
        progress.report(0.5 * double(i) / double(texts.size()), "Calibrating");
        EncoderInputs inputs;
        inputs.addSequence(calibrationEncoding(*checkpoint, texts[i]));
        ForwardResult result = model->forward(inputs, options);
        std::map<std::string, float>& text = amax.emplace_back();
        for (const auto& [module, value] : result.linearInputAmax)
            text[module] = std::max(text[module], value);
    }
    return amax;
}

std::vector<std::string> readCalibrationTexts(const std::string& path, const char* role)
{
    const std::string content = readFileToString(path, 64ull << 20);
    std::vector<std::string> texts;
    std::size_t begin = 0;
    while (begin <= content.size()) {
        std::size_t end = content.find('\n', begin);
        if (end == std::string::npos)
            end = content.size();
        std::string line = content.substr(begin, end - begin);
        if (!line.empty() && line.back() == '\r')
            line.pop_back();
        if (line.find_first_not_of(" \t") != std::string::npos)
            texts.push_back(line);
        begin = end + 1;
    }
    if (texts.empty())
        throw Error(std::string("The ") + role + " " + path + " has no text; it needs one text per line.");
    return texts;
}

namespace {

// Every tensor of the source, the encoder Linears' weights as FP8 codes with their scales (and
// static input scales), everything else copied as it is.
std::vector<TensorToWrite> quantizedTensors(const Checkpoint& source, const QuantizeOptions& options,
                                            std::map<std::string, float>& inputAmax, const Progress& progress)
{
    const TensorStore& store = source.tensors();
    std::vector<TensorToWrite> tensors;
    const auto all = store.tensors();
    for (const TensorView* view : all)
        refuseNonFinite(*view);
    QuantizeOptions perRow; // the word embeddings: one scale per row, in the scale dtype asked for
    perRow.weights = WeightStrategy::Channel;
    perRow.scaleDtype = options.scaleDtype;
    std::size_t done = 0;
    for (const TensorView* view : all) {
        progress.throwIfCancelled();
        progress.report(0.5 + 0.45 * double(done++) / double(all.size()), "Quantizing");
        const std::string& name = view->name;
        const bool isWeight = name.size() > 7 && name.compare(name.size() - 7, 7, ".weight") == 0;
        const std::string module = isWeight ? name.substr(0, name.size() - 7) : std::string();
        const bool embedding = options.embeddings == EmbeddingQuantization::Fp8PerRow &&
                               name == source.layout().wordEmbeddingsTensor();
        if (!embedding && (!isWeight || !source.layout().isEncoderLinear(module))) {
            TensorToWrite copy;
            copy.name = name;
            copy.dtype = view->dtype;
            copy.shape = view->shape;
            copy.bytes.assign(view->data, view->data + view->byteSize);
            tensors.push_back(std::move(copy));
            continue;
        }
        if (view->shape.size() != 2)
            throw Error("Tensor '" + name + "' in " + view->file + " is not a matrix.");
        const int64_t rows = view->shape[0];
        const int64_t columns = view->shape[1];
        QuantizedWeight quantized = quantizeWeight(view->toFloat().values, rows, columns, embedding ? perRow : options);
        TensorToWrite codes;
        codes.name = name;
        codes.dtype = Dtype::F8_E4M3;
        codes.shape = view->shape;
        codes.bytes = std::move(quantized.codes);
        tensors.push_back(std::move(codes));
        const std::vector<float>& scales = quantized.scales;
        const std::vector<int64_t>& scaleShape = quantized.scaleShape;
        tensors.push_back(makeFloatTensor(module + ".weight_scale", options.scaleDtype, scaleShape, scales.data()));
        if (options.activations == ActivationScheme::Tensor && !embedding) {
            const float amax = inputAmax.count(module) ? inputAmax[module] : 0.0f;
            const float inputScale = scaleForAmax(amax, options.scaleDtype);
            tensors.push_back(makeFloatTensor(module + ".input_scale", options.scaleDtype, {1}, &inputScale));
        }
    }

    return tensors;
}

} // namespace

const char* strategyName(WeightStrategy strategy)
{
    switch (strategy) {
    case WeightStrategy::Channel: return "channel";
    case WeightStrategy::Tensor: return "tensor";
    case WeightStrategy::Block: return "block";
    }
    return "channel";
}

const char* strategyName(ActivationScheme scheme)
{
    switch (scheme) {
    case ActivationScheme::Token: return "token";
    case ActivationScheme::Tensor: return "tensor";
    case ActivationScheme::Group: return "group";
    case ActivationScheme::None: return "none";
    }
    return "token";
}

void quantizeCheckpoint(const std::string& sourceDir, const std::string& destinationDir, const QuantizeOptions& options,
                        const Progress& progress)
{
    validateQuantizeOptions(options);

    std::shared_ptr<const Checkpoint> source = Checkpoint::open(sourceDir);
    if (source->config().quantization)
        throw Error(sourceDir + " is already quantized (its config.json has a quantization_config); quantize takes a float checkpoint.");

    std::vector<std::pair<std::string, std::string>> inputs = {{sourceDir, "the source checkpoint"}};
    for (const std::string& file : options.inputFiles)
        inputs.emplace_back(file, "the input file " + file);
    const CheckpointDestination destination =
        prepareCheckpointDestination(destinationDir, inputs, options.overwrite, "quantize");

    // compressed-tensors and llm-compressor refuse runs that do not tile a row, and no kernel runs them.
    if (options.activations == ActivationScheme::Group)
        for (const LayoutLinear& linear : source->layout().linears())
            if (source->layout().isEncoderLinear(linear.module) && linear.inFeatures % options.groupSize != 0)
                throw OptionError(TaskOption::GroupSize, "{option} " + std::to_string(options.groupSize) + " does not divide the " +
                            std::to_string(linear.inFeatures) + " input features of module '" + linear.module +
                            "'; compressed-tensors refuses such groups, so choose a size that divides every width.");

    // Build the Linear list from the model structure so that every quantized weight is checked
    // against the architecture (loading validates shapes) before anything is written.
    std::map<std::string, float> inputAmax;
    if (options.activations == ActivationScheme::Tensor && !options.calibratedInputAmax.empty())
        inputAmax = options.calibratedInputAmax;
    else if (options.activations == ActivationScheme::Tensor)
        inputAmax = calibrateInputAmax(source, options.calibrationTexts, progress);
    else
        EncoderModel::load(source); // validates the checkpoint before anything is written

    const TensorStore& store = source->tensors();
    const std::vector<TensorToWrite> tensors = quantizedTensors(*source, options, inputAmax, progress);

    // Codes computed from a source rewritten in place meanwhile would mix two checkpoints.
    store.checkUnchanged();
    nlohmann::json config = source->config().raw;
    config["quantization_config"] = quantizationConfigJson(options, source->layout());
    config.erase("compression_config"); // a 2024 source's own block would contradict the new one

    writeCheckpointFolder(destination, [&](const std::string& folder) {
        const fs::path temporary = folder;
        writeSafetensors((temporary / "model.safetensors").string(), tensors, {{"format", "pt"}});
        {
            std::ofstream out(temporary / "config.json");
            out << config.dump(2) << '\n';
            out.close(); // a write error can surface only when the buffer is flushed
            if (!out)
                throw Error("Cannot write " + (temporary / "config.json").string() + ".");
        }
        for (const std::string& file : tokenizerFileNames()) {
            const fs::path from = fs::path(sourceDir) / file;
            if (fs::exists(from))
                fs::copy_file(from, temporary / file);
        }
        copySentenceTransformersFiles(sourceDir, folder); // an embedder keeps its pooling
        progress.throwIfCancelled();
    });
    progress.report(1.0, "Quantized");
}

} // namespace scalescope
