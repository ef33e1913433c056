// LibTorch lives here and only here in the engine (see DESIGN.md: one translation unit keeps the
// ~40 s include cost and the Qt macro clash out of everything else).
#include "model/encoder_model.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <sstream>
#include <thread>

#include "common/error.h"
#include "numerics/fp8.h"

namespace scalescope {
namespace {

struct LinearWeights {
    LinearInfo info;
    at::Tensor weight; // [out, in] float32
    at::Tensor bias;   // [out] float32, or undefined
};

struct LayerWeights {
    LinearWeights query, key, value, attentionOutput, intermediate, output;
    at::Tensor attentionNormWeight, attentionNormBias, outputNormWeight, outputNormBias;
    // q, k and v read the same input. When they also treat it the same way (same quantization),
    // one quantization and one GEMM over the stacked weights [3h, h] serve all three: a wider GEMM
    // runs closer to the BLAS peak. query/key/value.weight are then views into qkvWeight.
    bool fusedQkv = false;
    at::Tensor qkvWeight, qkvBias;
};

FloatTensor toFloatTensor(const at::Tensor& tensor)
{
    at::Tensor contiguous = tensor.contiguous();
    FloatTensor out;
    out.shape.assign(contiguous.sizes().begin(), contiguous.sizes().end());
    out.values.resize(static_cast<std::size_t>(contiguous.numel()));
    if (!out.values.empty())
        std::memcpy(out.values.data(), contiguous.data_ptr<float>(), out.values.size() * sizeof(float));
    return out;
}

} // namespace

const char* runModeName(RunMode mode)
{
    return mode == RunMode::Fp8 ? "fp8" : "dequant";
}

namespace {
int configuredThreads = 0;
}

void setComputeThreads(int threads)
{
    if (threads <= 0)
        threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    configuredThreads = threads;
    // LibTorch's intra-op pool is OpenMP here, and idle OpenMP threads spin; next to OpenBLAS's own
    // GEMM threads that oversubscribes a 2-core machine (a roberta-base forward took 2.4 s with two
    // of each, 0.9 s with one intra-op thread). The GEMMs are nearly all of the work, so they get
    // the threads and LibTorch's elementwise ops run on one. Without OpenBLAS (reference BLAS),
    // LibTorch keeps them.
    using SetBlasThreads = void (*)(int);
    const auto setBlasThreads = reinterpret_cast<SetBlasThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
    if (setBlasThreads) {
        setBlasThreads(threads);
        at::set_num_threads(1);
    } else {
        at::set_num_threads(threads);
    }
}

int computeThreads()
{
    return configuredThreads > 0 ? configuredThreads : at::get_num_threads();
}

struct EncoderModel::Impl {
    std::shared_ptr<const Checkpoint> checkpoint;
    at::Tensor wordEmbeddings, positionEmbeddings, tokenTypeEmbeddings;
    at::Tensor embeddingNormWeight, embeddingNormBias;
    std::vector<LayerWeights> layers;
    LinearWeights qaOutputs;                       // QA head
    LinearWeights lmDense, lmDecoder;              // MaskedLM head
    at::Tensor lmNormWeight, lmNormBias;
    std::vector<LinearInfo> linearInfos;
    bool quantized = false;

    const ModelConfig& config() const { return checkpoint->config(); }
    const std::string& dir() const { return checkpoint->directory(); }

    // A float32 tensor with the expected shape. F32 data is used in place (the mapping lives as
    // long as the checkpoint); other dtypes are converted once.
    at::Tensor loadFloat(const std::string& name, const std::vector<int64_t>& expectedShape) const
    {
        const TensorView& view = checkpoint->tensors().require(name);
        return loadFloat(view, expectedShape);
    }

    at::Tensor loadFloat(const TensorView& view, const std::vector<int64_t>& expectedShape) const
    {
        if (view.shape != expectedShape)
            throw Error("Tensor '" + view.name + "' in " + view.file + " has shape " + shapeText(view.shape) +
                        "; the config implies " + shapeText(expectedShape) + ".");
        switch (view.dtype) {
        case Dtype::F32:
        case Dtype::F16:
        case Dtype::BF16:
        case Dtype::F64:
            break;
        default:
            throw Error("Tensor '" + view.name + "' in " + view.file + " has dtype " + dtypeName(view.dtype) +
                        "; a float dtype (F32, F16, BF16) is expected.");
        }
        if (view.dtype == Dtype::F32 && reinterpret_cast<std::uintptr_t>(view.data) % alignof(float) == 0) {
            return at::from_blob(const_cast<uint8_t*>(view.data), expectedShape,
                                 at::TensorOptions().dtype(at::kFloat));
        }
        at::Tensor out = at::empty(expectedShape, at::kFloat);
        view.toFloat(out.data_ptr<float>());
        return out;
    }

    // Scales and input scales: any float dtype, numel as expected, returned as float values.
    std::vector<float> loadScale(const TensorView& view) const
    {
        if (view.dtype != Dtype::F32 && view.dtype != Dtype::F16 && view.dtype != Dtype::BF16 && view.dtype != Dtype::F64)
            throw Error("Tensor '" + view.name + "' in " + view.file + " has dtype " + dtypeName(view.dtype) +
                        "; scales must be F32, BF16 or F16.");
        FloatTensor values = view.toFloat();
        for (float v : values.values)
            if (!(v > 0) || !std::isfinite(v))
                throw Error("Tensor '" + view.name + "' in " + view.file +
                            " holds a scale that is zero, negative, NaN or infinite.");
        return values.values;
    }

    LinearWeights loadLinear(const std::string& module, int64_t out, int64_t in, bool withBias = true)
    {
        LinearWeights linear;
        linear.info.module = module;
        linear.info.inFeatures = in;
        linear.info.outFeatures = out;
        const TensorStore& store = checkpoint->tensors();
        const TensorView& weight = store.require(module + ".weight");
        const ConfigGroup* group = nullptr;
        const auto& quantization = config().quantization;
        if (quantization)
            group = findGroupFor(*quantization, module, "Linear");

        if (weight.dtype == Dtype::F8_E4M3) {
            if (!group)
                throw Error("Tensor '" + weight.name + "' in " + weight.file +
                            " is F8_E4M3, but quantization_config does not quantize module '" + module +
                            "' (it is ignored or matches no group).");
            if (auto reason = unsupportedSchemeReason(*quantization, *group))
                throw Error("Module '" + module + "' uses " + *reason + ".");
            if (weight.shape != std::vector<int64_t>{out, in})
                throw Error("Tensor '" + weight.name + "' in " + weight.file + " has shape " + shapeText(weight.shape) +
                            "; the config implies " + shapeText({out, in}) + ".");
            const TensorView& scaleView = store.require(module + ".weight_scale");
            const std::string& strategy = group->weights->strategy;
            const bool perChannel = strategy == "channel";
            const int64_t scaleCount = scaleView.numel();
            const bool shapeOk = perChannel
                ? (scaleView.shape == std::vector<int64_t>{out, 1} || scaleView.shape == std::vector<int64_t>{out})
                : scaleCount == 1 && scaleView.shape.size() <= 2;
            if (!shapeOk)
                throw Error("Tensor '" + scaleView.name + "' in " + scaleView.file + " has shape " +
                            shapeText(scaleView.shape) + ", but weight strategy \"" + strategy + "\" needs " +
                            (perChannel ? shapeText({out, 1}) : std::string("[1]")) + ".");
            const std::vector<float> scales = loadScale(scaleView);
            linear.weight = at::empty({out, in}, at::kFloat);
            float* dst = linear.weight.data_ptr<float>();
            const uint8_t* codes = weight.data;
            at::parallel_for(0, out, 16, [&](int64_t begin, int64_t end) {
                for (int64_t row = begin; row < end; ++row)
                    fp8::dequantizeE4M3(codes + row * in, static_cast<std::size_t>(in),
                                        scales[perChannel ? row : 0], dst + row * in);
            });
            linear.info.quantized = true;
            linear.info.weightStrategy = strategy;
            linear.info.group = group->name;
            if (group->inputActivations) {
                const QuantizationArgs& a = *group->inputActivations;
                if (a.dynamic && a.strategy == "token") {
                    linear.info.activations = ActivationQuantization::DynamicPerToken;
                } else if (a.dynamic) {
                    linear.info.activations = ActivationQuantization::DynamicPerTensor;
                } else {
                    linear.info.activations = ActivationQuantization::StaticPerTensor;
                    const TensorView* inputScale = store.find(module + ".input_scale");
                    if (!inputScale)
                        throw Error("Tensor '" + module + ".input_scale' is missing from " + dir() +
                                    "; static activations need it.");
                    if (inputScale->numel() != 1)
                        throw Error("Tensor '" + inputScale->name + "' in " + inputScale->file + " has shape " +
                                    shapeText(inputScale->shape) + "; a static per-tensor input scale needs [1].");
                    linear.info.inputScale = loadScale(*inputScale)[0];
                }
            }
            quantized = true;
        } else {
            if (group && config().quantization->status == "compressed")
                throw Error("Tensor '" + weight.name + "' in " + weight.file + " has dtype " + dtypeName(weight.dtype) +
                            ", but quantization_config group " + group->name + " targets module '" + module +
                            "', so it should be F8_E4M3.");
            linear.weight = loadFloat(weight, {out, in});
        }
        if (withBias) {
            if (const TensorView* bias = store.find(module + ".bias"))
                linear.bias = loadFloat(*bias, {out});
        }
        linearInfos.push_back(linear.info);
        return linear;
    }

    static void fuseQkv(LayerWeights& layer, int64_t hidden)
    {
        auto sameInputTreatment = [](const LinearInfo& a, const LinearInfo& b) {
            return a.quantized == b.quantized && a.activations == b.activations && a.inputScale == b.inputScale;
        };
        const LinearInfo& q = layer.query.info;
        if (!sameInputTreatment(q, layer.key.info) || !sameInputTreatment(q, layer.value.info) ||
            !layer.query.bias.defined() || !layer.key.bias.defined() || !layer.value.bias.defined())
            return;
        layer.qkvWeight = at::cat({layer.query.weight, layer.key.weight, layer.value.weight}, 0);
        layer.qkvBias = at::cat({layer.query.bias, layer.key.bias, layer.value.bias}, 0);
        layer.query.weight = layer.qkvWeight.narrow(0, 0, hidden);
        layer.key.weight = layer.qkvWeight.narrow(0, hidden, hidden);
        layer.value.weight = layer.qkvWeight.narrow(0, 2 * hidden, hidden);
        layer.fusedQkv = true;
    }

    void load(const Progress& progress)
    {
        const ModelConfig& c = config();
        const int64_t h = c.hiddenSize;
        progress.report(0.0, "Loading embeddings");
        wordEmbeddings = loadFloat("roberta.embeddings.word_embeddings.weight", {c.vocabSize, h});
        positionEmbeddings = loadFloat("roberta.embeddings.position_embeddings.weight", {c.maxPositionEmbeddings, h});
        tokenTypeEmbeddings = loadFloat("roberta.embeddings.token_type_embeddings.weight", {c.typeVocabSize, h});
        embeddingNormWeight = loadFloat("roberta.embeddings.LayerNorm.weight", {h});
        embeddingNormBias = loadFloat("roberta.embeddings.LayerNorm.bias", {h});

        for (int64_t i = 0; i < c.numLayers; ++i) {
            progress.throwIfCancelled();
            progress.report(double(i) / double(c.numLayers + 1), "Loading layer " + std::to_string(i));
            const std::string p = "roberta.encoder.layer." + std::to_string(i) + ".";
            LayerWeights layer;
            layer.query = loadLinear(p + "attention.self.query", h, h);
            layer.key = loadLinear(p + "attention.self.key", h, h);
            layer.value = loadLinear(p + "attention.self.value", h, h);
            fuseQkv(layer, h);
            layer.attentionOutput = loadLinear(p + "attention.output.dense", h, h);
            layer.attentionNormWeight = loadFloat(p + "attention.output.LayerNorm.weight", {h});
            layer.attentionNormBias = loadFloat(p + "attention.output.LayerNorm.bias", {h});
            layer.intermediate = loadLinear(p + "intermediate.dense", c.intermediateSize, h);
            layer.output = loadLinear(p + "output.dense", h, c.intermediateSize);
            layer.outputNormWeight = loadFloat(p + "output.LayerNorm.weight", {h});
            layer.outputNormBias = loadFloat(p + "output.LayerNorm.bias", {h});
            layers.push_back(std::move(layer));
        }

        progress.report(double(c.numLayers) / double(c.numLayers + 1), "Loading head");
        if (c.architecture == Architecture::RobertaForQuestionAnswering) {
            qaOutputs = loadLinear("qa_outputs", 2, h);
        } else {
            lmDense = loadLinear("lm_head.dense", h, h);
            lmNormWeight = loadFloat("lm_head.layer_norm.weight", {h});
            lmNormBias = loadFloat("lm_head.layer_norm.bias", {h});
            const TensorStore& store = checkpoint->tensors();
            if (store.find("lm_head.decoder.weight")) {
                lmDecoder = loadLinear("lm_head.decoder", c.vocabSize, h, false);
            } else {
                // Tied to the word embeddings, as Hugging Face saves RobertaForMaskedLM.
                lmDecoder.info.module = "lm_head.decoder";
                lmDecoder.info.inFeatures = h;
                lmDecoder.info.outFeatures = c.vocabSize;
                lmDecoder.weight = wordEmbeddings;
                linearInfos.push_back(lmDecoder.info);
            }
            if (const TensorView* bias = store.find("lm_head.decoder.bias"))
                lmDecoder.bias = loadFloat(*bias, {c.vocabSize});
            else if (const TensorView* sharedBias = store.find("lm_head.bias"))
                lmDecoder.bias = loadFloat(*sharedBias, {c.vocabSize});
        }
        progress.report(1.0, "Loaded");
    }
};

namespace {

// State of one forward call: options, the real-token row mask for statistics, and the outputs.
struct ForwardContext {
    const ForwardOptions& options;
    std::set<std::string> requested;
    std::vector<uint8_t> realRows; // per flattened token row: 1 real, 0 padding
    ForwardResult result;

    bool wants(const std::string& point, const std::string& module) const
    {
        if (options.capture.all)
            return true;
        return requested.count(point) || requested.count(module);
    }
    // Rows of a [tokens, features] view; gathered head inputs (logitPositions) are all real.
    bool isRealRow(int64_t row, int64_t rows) const
    {
        return rows != static_cast<int64_t>(realRows.size()) || realRows[static_cast<std::size_t>(row)];
    }
    void capture(const std::string& point, const std::string& module, const at::Tensor& tensor)
    {
        if (!wants(point, module))
            return;
        if (options.onCapture) {
            const at::Tensor contiguous = tensor.contiguous();
            const std::vector<int64_t> shape(contiguous.sizes().begin(), contiguous.sizes().end());
            options.onCapture(point, shape, contiguous.data_ptr<float>());
            return;
        }
        result.captures.push_back({point, toFloatTensor(tensor)});
    }
};

// Quantize-dequantize a Linear's input as `fp8` mode does: per token row, or per tensor.
at::Tensor quantizeActivations(const at::Tensor& x, const LinearInfo& info, ForwardContext& context)
{
    const int64_t features = x.size(-1);
    at::Tensor input = x.contiguous().view({-1, features});
    const int64_t rows = input.size(0);
    at::Tensor output = input.clone();
    const float* src = input.data_ptr<float>();
    float* dst = output.data_ptr<float>();
    std::vector<float> rowScales(static_cast<std::size_t>(rows));

    auto rowAmax = [&](int64_t row) {
        float amax = 0;
        const float* r = src + row * features;
        for (int64_t i = 0; i < features; ++i)
            amax = std::max(amax, std::fabs(r[i]));
        return amax;
    };

    if (info.activations == ActivationQuantization::DynamicPerToken) {
        at::parallel_for(0, rows, 8, [&](int64_t begin, int64_t end) {
            for (int64_t row = begin; row < end; ++row) {
                const float scale = std::max(rowAmax(row) / fp8::kE4M3Max, FLT_MIN);
                rowScales[static_cast<std::size_t>(row)] = scale;
                fp8::quantDequantE4M3(dst + row * features, static_cast<std::size_t>(features), scale);
            }
        });
    } else {
        float scale = info.inputScale;
        if (info.activations == ActivationQuantization::DynamicPerTensor) {
            float amax = 0;
            for (int64_t row = 0; row < rows; ++row)
                amax = std::max(amax, rowAmax(row));
            scale = std::max(amax / fp8::kE4M3Max, FLT_MIN);
        }
        std::fill(rowScales.begin(), rowScales.end(), scale);
        at::parallel_for(0, rows, 8, [&](int64_t begin, int64_t end) {
            for (int64_t row = begin; row < end; ++row)
                fp8::quantDequantE4M3(dst + row * features, static_cast<std::size_t>(features), scale);
        });
    }

    if (context.options.activationStatistics) {
        // Read the codes back from the dequantized output d = q * s instead of rounding again:
        // q == 0 exactly when d == 0, and 0 < |q| < 2^-6 exactly when 0 < |d| < 2^-6 * s (s is a
        // normal float, so neither product underflows to zero or crosses the boundary). Counting
        // in plain int64 lanes lets the loop vectorise; it runs over every element of a compare.
        ActivationStatistics stats;
        stats.module = info.module;
        const float smallestNormal = 0.015625f; // 2^-6, E4M3's smallest normal
        for (int64_t row = 0; row < rows; ++row) {
            if (!context.isRealRow(row, rows))
                continue;
            const float scale = rowScales[static_cast<std::size_t>(row)];
            const float subnormalBound = smallestNormal * scale;
            const float* in = src + row * features;
            const float* quantized = dst + row * features;
            float amax = 0;
            int64_t clipped = 0, flushed = 0, subnormal = 0;
            for (int64_t i = 0; i < features; ++i) {
                const float v = in[i];
                const float d = std::fabs(quantized[i]);
                amax = std::max(amax, std::fabs(v));
                clipped += std::fabs(v / scale) > fp8::kE4M3Max;
                flushed += (v != 0.0f) & (d == 0.0f);
                subnormal += (d != 0.0f) & (d < subnormalBound);
            }
            stats.inputScale = std::max(stats.inputScale, scale);
            stats.amax = std::max(stats.amax, amax);
            stats.elements += features;
            stats.clipped += clipped;
            stats.flushedToZero += flushed;
            stats.subnormal += subnormal;
        }
        context.result.activationStatistics.push_back(stats);
    }
    return output.view(x.sizes());
}

// Records what calibration needs of a Linear's input (its capture is the caller's).
void recordLinearInputAmax(const LinearInfo& info, const at::Tensor& x, ForwardContext& context)
{
    if (context.options.linearInputAmax) {
        at::Tensor flat = x.contiguous().view({-1, x.size(-1)});
        float amax = 0;
        const float* data = flat.data_ptr<float>();
        for (int64_t row = 0; row < flat.size(0); ++row) {
            if (!context.isRealRow(row, flat.size(0)))
                continue;
            for (int64_t i = 0; i < flat.size(1); ++i)
                amax = std::max(amax, std::fabs(data[row * flat.size(1) + i]));
        }
        context.result.linearInputAmax.emplace_back(info.module, amax);
    }
}

// The input the GEMM sees: quantized-dequantized in fp8 mode when the Linear quantizes activations.
at::Tensor linearInput(const LinearInfo& info, const at::Tensor& x, ForwardContext& context)
{
    if (context.options.mode == RunMode::Fp8 && info.quantized && info.activations != ActivationQuantization::None)
        return quantizeActivations(x, info, context);
    return x;
}

at::Tensor runLinear(const LinearWeights& linear, const at::Tensor& x, ForwardContext& context)
{
    const LinearInfo& info = linear.info;
    context.capture(info.module + ".input", info.module, x);
    recordLinearInputAmax(info, x, context);
    const at::Tensor input = linearInput(info, x, context);
    at::Tensor y = linear.bias.defined() ? at::linear(input, linear.weight, linear.bias) : at::linear(input, linear.weight);
    context.capture(info.module + ".output", info.module, y);
    return y;
}

// q, k, v of one layer in one GEMM (see LayerWeights::fusedQkv); outputs are views of its result.
std::array<at::Tensor, 3> runQkv(const LayerWeights& layer, const at::Tensor& x, ForwardContext& context)
{
    const LinearWeights* members[3] = {&layer.query, &layer.key, &layer.value};
    if (!layer.fusedQkv)
        return {runLinear(layer.query, x, context), runLinear(layer.key, x, context), runLinear(layer.value, x, context)};
    for (const LinearWeights* member : members)
        recordLinearInputAmax(member->info, x, context);
    const std::size_t statisticsBefore = context.result.activationStatistics.size();
    const at::Tensor input = linearInput(layer.query.info, x, context);
    // The three share one quantized input, so they share its statistics too.
    if (context.result.activationStatistics.size() == statisticsBefore + 1) {
        for (const LinearWeights* member : {&layer.key, &layer.value}) {
            ActivationStatistics copy = context.result.activationStatistics.back();
            copy.module = member->info.module;
            context.result.activationStatistics.push_back(copy);
        }
    }
    const at::Tensor y = at::linear(input, layer.qkvWeight, layer.qkvBias);
    const int64_t width = layer.query.info.outFeatures;
    std::array<at::Tensor, 3> outputs;
    for (int i = 0; i < 3; ++i) {
        // Captured in the order of separate Linears: q input, q output, k input, ...
        const std::string& module = members[i]->info.module;
        outputs[static_cast<std::size_t>(i)] = y.narrow(-1, i * width, width);
        context.capture(module + ".input", module, x);
        context.capture(module + ".output", module, outputs[static_cast<std::size_t>(i)]);
    }
    return outputs;
}

} // namespace

EncoderModel::EncoderModel() : impl_(std::make_unique<Impl>()) {}
EncoderModel::~EncoderModel() = default;

std::unique_ptr<EncoderModel> EncoderModel::load(const std::string& dir, const Progress& progress)
{
    return load(Checkpoint::open(dir), progress);
}

std::unique_ptr<EncoderModel> EncoderModel::load(std::shared_ptr<const Checkpoint> checkpoint, const Progress& progress)
{
    std::unique_ptr<EncoderModel> model(new EncoderModel());
    model->impl_->checkpoint = std::move(checkpoint);
    at::NoGradGuard noGrad;
    model->impl_->load(progress);
    return model;
}

const Checkpoint& EncoderModel::checkpoint() const { return *impl_->checkpoint; }
bool EncoderModel::isQuantized() const { return impl_->quantized; }
const std::vector<LinearInfo>& EncoderModel::linears() const { return impl_->linearInfos; }

std::vector<std::string> EncoderModel::capturePoints() const
{
    std::vector<std::string> points = {"roberta.embeddings.output"};
    std::size_t next = 0;
    auto addLinear = [&](const std::string& module) {
        points.push_back(module + ".input");
        points.push_back(module + ".output");
    };
    const auto& infos = impl_->linearInfos;
    for (int64_t i = 0; i < config().numLayers; ++i) {
        for (int k = 0; k < 6; ++k)
            addLinear(infos[next++].module);
        points.push_back("roberta.encoder.layer." + std::to_string(i) + ".output");
    }
    while (next < infos.size())
        addLinear(infos[next++].module);
    return points;
}

ForwardResult EncoderModel::forward(const EncoderInputs& inputs, const ForwardOptions& options, const Progress& progress)
{
    const auto started = std::chrono::steady_clock::now();
    at::NoGradGuard noGrad;
    const Impl& m = *impl_;
    const ModelConfig& c = m.config();

    const int64_t batch = static_cast<int64_t>(inputs.inputIds.size());
    if (batch == 0)
        throw Error("The forward pass got no input sequence.");
    int64_t seq = 0;
    for (const auto& row : inputs.inputIds)
        seq = std::max<int64_t>(seq, static_cast<int64_t>(row.size()));
    if (seq == 0)
        throw Error("The forward pass got an empty input sequence.");
    // Positions start after pad_token_id, so the longest usable sequence is max_position_embeddings
    // - pad_token_id - 1 (512 for roberta-base).
    const int64_t maxTokens = c.maxPositionEmbeddings - c.padTokenId - 1;
    if (seq > maxTokens)
        throw Error("The input has " + std::to_string(seq) + " tokens; this model takes at most " +
                    std::to_string(maxTokens) + ".");
    if (!inputs.attentionMask.empty() && inputs.attentionMask.size() != inputs.inputIds.size())
        throw Error("The attention mask has " + std::to_string(inputs.attentionMask.size()) +
                    " rows but there are " + std::to_string(batch) + " input sequences.");

    at::Tensor ids = at::full({batch, seq}, c.padTokenId, at::kLong);
    at::Tensor mask = at::zeros({batch, seq}, at::kFloat);
    ForwardContext context{options, {}, {}, {}};
    context.requested.insert(options.capture.names.begin(), options.capture.names.end());
    context.realRows.assign(static_cast<std::size_t>(batch * seq), 0);
    auto idsAccessor = ids.accessor<int64_t, 2>();
    auto maskAccessor = mask.accessor<float, 2>();
    for (int64_t b = 0; b < batch; ++b) {
        const auto& row = inputs.inputIds[static_cast<std::size_t>(b)];
        const std::vector<int64_t>* maskRow = inputs.attentionMask.empty() ? nullptr : &inputs.attentionMask[static_cast<std::size_t>(b)];
        if (maskRow && maskRow->size() != row.size())
            throw Error("Attention mask row " + std::to_string(b) + " has " + std::to_string(maskRow->size()) +
                        " entries but its input has " + std::to_string(row.size()) + " ids.");
        for (std::size_t t = 0; t < row.size(); ++t) {
            if (row[t] < 0 || row[t] >= c.vocabSize)
                throw Error("Token id " + std::to_string(row[t]) + " is outside the vocabulary (size " +
                            std::to_string(c.vocabSize) + ").");
            idsAccessor[b][static_cast<int64_t>(t)] = row[t];
            const bool real = maskRow ? (*maskRow)[t] != 0 : true;
            maskAccessor[b][static_cast<int64_t>(t)] = real ? 1.0f : 0.0f;
            context.realRows[static_cast<std::size_t>(b * seq + static_cast<int64_t>(t))] = real;
        }
    }

    // Hugging Face's RoBERTa numbers positions from the non-pad tokens: pad + cumulative count.
    at::Tensor nonPad = ids.ne(c.padTokenId).to(at::kLong);
    at::Tensor positions = at::cumsum(nonPad, 1) * nonPad + c.padTokenId;
    const int64_t hidden = c.hiddenSize;
    at::Tensor embeddings = at::embedding(m.wordEmbeddings, ids) + at::embedding(m.positionEmbeddings, positions) +
                            m.tokenTypeEmbeddings[0];
    at::Tensor h = at::layer_norm(embeddings, {hidden}, m.embeddingNormWeight, m.embeddingNormBias, c.layerNormEps);
    context.capture("roberta.embeddings.output", "roberta.embeddings", h);

    const int64_t heads = c.numHeads;
    const int64_t headDim = hidden / heads;
    const double invSqrtHeadDim = 1.0 / std::sqrt(double(headDim));
    // Additive mask over keys: 0 for real tokens, the lowest float for padding.
    at::Tensor keyMask = ((1.0f - mask) * std::numeric_limits<float>::lowest()).view({batch, 1, 1, seq});

    for (std::size_t i = 0; i < m.layers.size(); ++i) {
        progress.throwIfCancelled();
        progress.report(double(i) / double(m.layers.size() + 1), "Layer " + std::to_string(i));
        const LayerWeights& layer = m.layers[i];
        auto splitHeads = [&](const at::Tensor& t) { return t.view({batch, seq, heads, headDim}).transpose(1, 2); };
        const auto qkv = runQkv(layer, h, context);
        at::Tensor q = splitHeads(qkv[0]);
        at::Tensor k = splitHeads(qkv[1]);
        at::Tensor v = splitHeads(qkv[2]);
        at::Tensor scores = at::matmul(q, k.transpose(-1, -2)) * invSqrtHeadDim + keyMask;
        at::Tensor probabilities = at::softmax(scores, -1);
        at::Tensor attended = at::matmul(probabilities, v).transpose(1, 2).reshape({batch, seq, hidden});
        at::Tensor attentionOut = runLinear(layer.attentionOutput, attended, context);
        at::Tensor afterAttention = at::layer_norm(attentionOut + h, {hidden}, layer.attentionNormWeight,
                                                   layer.attentionNormBias, c.layerNormEps);
        at::Tensor intermediate = at::gelu(runLinear(layer.intermediate, afterAttention, context));
        at::Tensor outputDense = runLinear(layer.output, intermediate, context);
        h = at::layer_norm(outputDense + afterAttention, {hidden}, layer.outputNormWeight, layer.outputNormBias,
                           c.layerNormEps);
        const std::string name = "roberta.encoder.layer." + std::to_string(i);
        context.capture(name + ".output", name, h);
    }
    progress.throwIfCancelled();

    if (c.architecture == Architecture::RobertaForQuestionAnswering) {
        at::Tensor logits = runLinear(m.qaOutputs, h, context);
        context.result.outputs.push_back({"start_logits", toFloatTensor(logits.select(-1, 0))});
        context.result.outputs.push_back({"end_logits", toFloatTensor(logits.select(-1, 1))});
    } else {
        at::Tensor states = h;
        if (!inputs.logitPositions.empty()) {
            std::vector<int64_t> flat;
            for (const auto& [row, position] : inputs.logitPositions) {
                if (row < 0 || row >= batch || position < 0 || position >= seq)
                    throw Error("Logit position (" + std::to_string(row) + ", " + std::to_string(position) +
                                ") is outside the input.");
                flat.push_back(int64_t(row) * seq + position);
            }
            states = h.reshape({batch * seq, hidden}).index_select(0, at::tensor(flat, at::kLong));
        }
        at::Tensor dense = at::gelu(runLinear(m.lmDense, states, context));
        at::Tensor normed = at::layer_norm(dense, {hidden}, m.lmNormWeight, m.lmNormBias, c.layerNormEps);
        at::Tensor logits = runLinear(m.lmDecoder, normed, context);
        context.result.outputs.push_back({"logits", toFloatTensor(logits)});
    }
    progress.report(1.0, "Done");
    context.result.elapsedMs =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
    return std::move(context.result);
}

} // namespace scalescope

namespace scalescope {

double measureMatmulGflops(int64_t m, int64_t n, int64_t k, int repeats)
{
    at::NoGradGuard noGrad;
    at::Tensor a = at::rand({m, k}, at::kFloat);
    at::Tensor b = at::rand({n, k}, at::kFloat); // [out, in] like a Linear weight
    at::Tensor warm = at::linear(a, b);
    double best = 0;
    for (int i = 0; i < std::max(1, repeats); ++i) {
        const auto start = std::chrono::steady_clock::now();
        at::Tensor c = at::linear(a, b);
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        best = std::max(best, 2.0 * double(m) * double(n) * double(k) / seconds / 1e9);
    }
    return best;
}

} // namespace scalescope
