#include "tasks/quantize.h"

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
#include "common/text_files.h"
#include "io/atomic_write.h"
#include "io/checkpoint_destination.h"
#include "model/checkpoint.h"
#include "model/encoder_model.h"
#include "numerics/fp8.h"
#include "numerics/half.h"

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

nlohmann::json activationArgs(const std::string& activations)
{
    if (activations == "none")
        return nullptr;
    const bool dynamic = activations == "token";
    return {{"num_bits", 8}, {"type", "float"}, {"strategy", activations}, {"symmetric", true},
            {"dynamic", dynamic}, {"group_size", nullptr}, {"block_structure", nullptr}, {"actorder", nullptr},
            {"observer", dynamic ? nlohmann::json(nullptr) : nlohmann::json("minmax")}, {"observer_kwargs", nlohmann::json::object()}};
}

nlohmann::json quantizationConfigJson(const QuantizeOptions& options, const EncoderLayout& layout)
{
    nlohmann::json weights = {{"num_bits", 8}, {"type", "float"}, {"strategy", options.weights}, {"symmetric", true},
                              {"dynamic", false}, {"group_size", nullptr}, {"block_structure", nullptr},
                              {"actorder", nullptr}, {"observer", "minmax"}, {"observer_kwargs", nlohmann::json::object()}};
    nlohmann::json group = {{"targets", {"Linear"}}, {"weights", weights},
                            {"input_activations", activationArgs(options.activations)},
                            {"output_activations", nullptr}, {"format", "float-quantized"}};
    return {{"quant_method", "compressed-tensors"}, {"format", "float-quantized"},
            {"quantization_status", "compressed"}, {"config_groups", {{"group_0", group}}},
            {"ignore", layout.quantizeIgnoreList()}, {"kv_cache_scheme", nullptr},
            {"global_compression_ratio", nullptr}, {"sparsity_config", nlohmann::json::object()},
            {"provider", "scalescope"}, {"version", "0.1.0"}};
}

std::map<std::string, float> calibrateInputAmax(const std::shared_ptr<const Checkpoint>& checkpoint,
                                                const std::vector<std::string>& texts, const Progress& progress)
{
    std::unique_ptr<EncoderModel> model = EncoderModel::load(checkpoint);
    const BpeTokenizer& tokenizer = checkpoint->tokenizer();
    const int64_t maxTokens = checkpoint->layout().maxSequenceLength();
    std::map<std::string, float> amax;
    ForwardOptions options;
    options.mode = RunMode::Dequant;
    options.linearInputAmax = true;
    for (std::size_t i = 0; i < texts.size(); ++i) {
        progress.throwIfCancelled();
        progress.report(0.5 * double(i) / double(texts.size()), "Calibrating");
        Encoding encoding = tokenizer.encode(texts[i]);
        if (static_cast<int64_t>(encoding.ids.size()) > maxTokens) {
            encoding.ids.resize(static_cast<std::size_t>(maxTokens - 1));
            encoding.ids.push_back(tokenizer.eosId());
        }
        ForwardResult result = model->forward({{encoding.ids}, {}, {}, {}}, options);
        for (const auto& [module, value] : result.linearInputAmax)
            amax[module] = std::max(amax[module], value);
    }
    return amax;
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

} // namespace

std::vector<std::string> readCalibrationTexts(const std::string& path)
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
        throw Error("The calibration file " + path + " has no text; it needs one text per line.");
    return texts;
}

void quantizeCheckpoint(const std::string& sourceDir, const std::string& destinationDir, const QuantizeOptions& options,
                        const Progress& progress)
{
    if (options.weights != "channel" && options.weights != "tensor")
        throw Error("--weights must be channel or tensor, not \"" + options.weights + "\".");
    if (options.activations != "token" && options.activations != "tensor" && options.activations != "none")
        throw Error("--activations must be token, tensor or none, not \"" + options.activations + "\".");
    if (options.scaleDtype != Dtype::F32 && options.scaleDtype != Dtype::BF16 && options.scaleDtype != Dtype::F16)
        throw Error("--scale-dtype must be float32, bfloat16 or float16.");
    if (options.activations == "tensor" && options.calibrationTexts.empty())
        throw Error("Static per-tensor activations (--activations tensor) need calibration texts (--calibration FILE).");

    std::shared_ptr<const Checkpoint> source = Checkpoint::open(sourceDir);
    if (source->config().quantization)
        throw Error(sourceDir + " is already quantized (its config.json has a quantization_config); quantize takes a float checkpoint.");

    std::vector<std::pair<std::string, std::string>> inputs = {{sourceDir, "the source checkpoint"}};
    for (const std::string& file : options.inputFiles)
        inputs.emplace_back(file, "the input file " + file);
    const CheckpointDestination destination =
        prepareCheckpointDestination(destinationDir, inputs, options.overwrite, "quantize");

    // Build the Linear list from the model structure so that every quantized weight is checked
    // against the architecture (loading validates shapes) before anything is written.
    std::map<std::string, float> inputAmax;
    if (options.activations == "tensor")
        inputAmax = calibrateInputAmax(source, options.calibrationTexts, progress);
    else
        EncoderModel::load(source); // validates the checkpoint before anything is written

    const TensorStore& store = source->tensors();
    std::vector<TensorToWrite> tensors;
    const auto all = store.tensors();
    for (const TensorView* view : all)
        refuseNonFinite(*view);
    std::size_t done = 0;
    for (const TensorView* view : all) {
        progress.throwIfCancelled();
        progress.report(0.5 + 0.45 * double(done++) / double(all.size()), "Quantizing");
        const std::string& name = view->name;
        const bool isWeight = name.size() > 7 && name.compare(name.size() - 7, 7, ".weight") == 0;
        const std::string module = isWeight ? name.substr(0, name.size() - 7) : std::string();
        if (!isWeight || !source->layout().isEncoderLinear(module)) {
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
        FloatTensor weight = view->toFloat();
        std::vector<float> scales;
        if (options.weights == "channel") {
            for (int64_t r = 0; r < rows; ++r) {
                float amax = 0;
                for (int64_t c = 0; c < columns; ++c)
                    amax = std::max(amax, std::fabs(weight.values[static_cast<std::size_t>(r * columns + c)]));
                scales.push_back(scaleForAmax(amax, options.scaleDtype));
            }
        } else {
            float amax = 0;
            for (float v : weight.values)
                amax = std::max(amax, std::fabs(v));
            scales.push_back(scaleForAmax(amax, options.scaleDtype));
        }
        TensorToWrite codes;
        codes.name = name;
        codes.dtype = Dtype::F8_E4M3;
        codes.shape = view->shape;
        codes.bytes.resize(static_cast<std::size_t>(rows * columns));
        for (int64_t r = 0; r < rows; ++r)
            fp8::quantizeE4M3(weight.values.data() + r * columns, static_cast<std::size_t>(columns),
                              scales[options.weights == "channel" ? static_cast<std::size_t>(r) : 0],
                              codes.bytes.data() + r * columns);
        tensors.push_back(std::move(codes));
        const std::vector<int64_t> scaleShape =
            options.weights == "channel" ? std::vector<int64_t>{rows, 1} : std::vector<int64_t>{1};
        tensors.push_back(makeFloatTensor(module + ".weight_scale", options.scaleDtype, scaleShape, scales.data()));
        if (options.activations == "tensor") {
            const float amax = inputAmax.count(module) ? inputAmax[module] : 0.0f;
            const float inputScale = scaleForAmax(amax, options.scaleDtype);
            tensors.push_back(makeFloatTensor(module + ".input_scale", options.scaleDtype, {1}, &inputScale));
        }
    }

    // Codes computed from a source rewritten in place meanwhile would mix two checkpoints.
    store.checkUnchanged();
    nlohmann::json config = source->config().raw;
    config["quantization_config"] = quantizationConfigJson(options, source->layout());

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
        for (const char* file : {"vocab.json", "merges.txt", "tokenizer.json", "tokenizer_config.json",
                                 "special_tokens_map.json"}) {
            const fs::path from = fs::path(sourceDir) / file;
            if (fs::exists(from))
                fs::copy_file(from, temporary / file);
        }
        progress.throwIfCancelled();
    });
    progress.report(1.0, "Quantized");
}

} // namespace scalescope
