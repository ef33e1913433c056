// LibTorch: builds the engine's weight tensors from the checkpoint's mapped tensors.
#include "engine/encoder_weights.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>

#include "common/error.h"
#include "numerics/dl16.h"
#include "numerics/fp8.h"
#include "numerics/half.h"
#include "numerics/mx.h"

namespace scalescope {
namespace {

// A float32 tensor with the expected shape. F32 data is used in place (the mapping lives as long
// as the checkpoint); other dtypes are converted once. Half precision rounds a copy.
at::Tensor loadFloat(const TensorView& view, const std::vector<int64_t>& expectedShape, StoredPrecision precision)
{
    if (view.shape != expectedShape)
        throw Error("Tensor '" + view.name + "' in " + view.file + " has shape " + shapeText(view.shape) +
                    "; the config implies " + shapeText(expectedShape) + ".");
    if (!isFloatDtype(view.dtype))
        throw Error("Tensor '" + view.name + "' in " + view.file + " has dtype " + dtypeName(view.dtype) +
                    "; a float dtype (F32, F16, BF16) is expected.");
    const bool inPlace = view.dtype == Dtype::F32 && reinterpret_cast<std::uintptr_t>(view.data) % alignof(float) == 0;
    if (inPlace && precision == StoredPrecision::AsStored)
        return at::from_blob(const_cast<uint8_t*>(view.data), expectedShape, at::TensorOptions().dtype(at::kFloat));
    at::Tensor out = at::empty(expectedShape, at::kFloat);
    view.toFloat(out.data_ptr<float>());
    if (precision == StoredPrecision::Half)
        half::roundToHalfInPlace(out.data_ptr<float>(), static_cast<std::size_t>(out.numel()));
    return out;
}

// Scales and input scales: any float dtype, returned as float values, each finite and positive (as
// stored: a scale that half rounds to 0 or inf is what a float16 device would use).
std::vector<float> loadScale(const TensorView& view, StoredPrecision precision)
{
    if (!isFloatDtype(view.dtype))
        throw Error("Tensor '" + view.name + "' in " + view.file + " has dtype " + dtypeName(view.dtype) +
                    "; scales must be F32, BF16 or F16.");
    FloatTensor values = view.toFloat();
    for (float v : values.values)
        if (!(v > 0) || !std::isfinite(v))
            throw Error("Tensor '" + view.name + "' in " + view.file +
                        " holds a scale that is zero, negative, NaN or infinite.");
    if (precision == StoredPrecision::Half)
        half::roundToHalfInPlace(values.values.data(), values.values.size());
    return values.values;
}

// W[o, i] = decode(q[o, i]) * scales[(o / bo) * gridColumns + i / bi], the scale grid
// [ceil(out / bo), ceil(in / bi)] (a partial last block has its own scale like any other).
at::Tensor dequantizeGridWeight(const TensorView& weight, const std::vector<float>& scales, int64_t bo, int64_t bi)
{
    const int64_t out = weight.shape[0], in = weight.shape[1];
    const int64_t gridColumns = (in + bi - 1) / bi;
    at::Tensor result = at::empty({out, in}, at::kFloat);
    float* dst = result.data_ptr<float>();
    const uint8_t* codes = weight.data;
    at::parallel_for(0, out, 16, [&](int64_t begin, int64_t end) {
        for (int64_t row = begin; row < end; ++row)
            for (int64_t block = 0; block < gridColumns; ++block) {
                const int64_t first = block * bi;
                fp8::dequantizeE4M3(codes + row * in + first, static_cast<std::size_t>(std::min(bi, in - first)),
                                    scales[static_cast<std::size_t>((row / bo) * gridColumns + block)],
                                    dst + row * in + first);
            }
    });
    return result;
}

// Block-wise weights: weight_scale is the block grid of block_structure [bo, bi], in a float dtype.
at::Tensor dequantizeBlockWeight(const TensorView& weight, const TensorView& scaleView, const LinearInfo& info,
                                 StoredPrecision precision)
{
    const int64_t out = weight.shape[0], in = weight.shape[1];
    const int64_t bo = info.weightBlockRows, bi = info.weightBlockColumns;
    const int64_t gridRows = (out + bo - 1) / bo, gridColumns = (in + bi - 1) / bi;
    if (scaleView.shape != std::vector<int64_t>{gridRows, gridColumns})
        throw Error("Tensor '" + scaleView.name + "' in " + scaleView.file + " has shape " + shapeText(scaleView.shape) +
                    ", but block_structure [" + std::to_string(bo) + ", " + std::to_string(bi) + "] over a weight " +
                    shapeText({out, in}) + " needs the block grid " + shapeText({gridRows, gridColumns}) + ".");
    return dequantizeGridWeight(weight, loadScale(scaleView, precision), bo, bi);
}

// MXFP8 weights (numerics/mx.h): weight_scale is U8 [out, ceil(in / 32)] of E8M0 exponents e,
// W[o, i] = decode(q[o, i]) * 2^(e[o, i / 32] - 127). e = 255 (NaN in the OCP MX format, 2^128 = inf
// as compressed-tensors decodes it) is refused. fp16 mode rounds 2^(e - 127) to half like any stored
// scale: exact from 2^-24 to 2^15, 0 below and inf above.
at::Tensor dequantizeMxfp8Weight(const TensorView& weight, const TensorView& scaleView, StoredPrecision precision)
{
    const int64_t out = weight.shape[0], in = weight.shape[1];
    const int64_t gridColumns = (in + mx::kBlock - 1) / mx::kBlock;
    if (scaleView.dtype != Dtype::U8)
        throw Error("Tensor '" + scaleView.name + "' in " + scaleView.file + " has dtype " + dtypeName(scaleView.dtype) +
                    "; MXFP8 scales are U8 E8M0 exponents.");
    if (scaleView.shape != std::vector<int64_t>{out, gridColumns})
        throw Error("Tensor '" + scaleView.name + "' in " + scaleView.file + " has shape " + shapeText(scaleView.shape) +
                    ", but MXFP8 over a weight " + shapeText({out, in}) + " needs one scale per 32 input channels: " +
                    shapeText({out, gridColumns}) + ".");
    std::vector<float> scales(static_cast<std::size_t>(out * gridColumns));
    for (std::size_t k = 0; k < scales.size(); ++k) {
        const uint8_t e = scaleView.data[k];
        if (e == mx::kE8M0NaN)
            throw Error("Tensor '" + scaleView.name + "' in " + scaleView.file + " holds the E8M0 code 255 (NaN) at row " +
                        std::to_string(static_cast<int64_t>(k) / gridColumns) + ", column " +
                        std::to_string(static_cast<int64_t>(k) % gridColumns) + "; quantize the module again.");
        scales[k] = mx::scaleFromExponent(e);
    }
    if (precision == StoredPrecision::Half)
        half::roundToHalfInPlace(scales.data(), scales.size());
    return dequantizeGridWeight(weight, scales, 1, mx::kBlock);
}

// Tensor- or channel-scaled weights: checks the scale's shape and returns the decoder of
// W[o, i] = decode(q[o, i]) * s[o] (or * s), run at load or on first use (LinearWeights::weight).
std::function<at::Tensor()> scaledWeightDecoder(const TensorView& weight, const TensorView& scaleView,
                                                const LinearInfo& info, StoredPrecision precision)
{
    const int64_t out = weight.shape[0], in = weight.shape[1];
    const std::string& strategy = info.weightStrategy;
    const bool perChannel = strategy == "channel";
    const bool shapeOk = perChannel
        ? (scaleView.shape == std::vector<int64_t>{out, 1} || scaleView.shape == std::vector<int64_t>{out})
        : scaleView.numel() == 1 && scaleView.shape.size() <= 2;
    if (!shapeOk)
        throw Error("Tensor '" + scaleView.name + "' in " + scaleView.file + " has shape " +
                    shapeText(scaleView.shape) + ", but weight strategy \"" + strategy + "\" needs " +
                    (perChannel ? shapeText({out, 1}) : std::string("[1]")) + ".");
    const std::vector<float> scales = loadScale(scaleView, precision);
    const uint8_t* codes = weight.data; // the mapping lives as long as the checkpoint and the engine
    return [codes, scales, perChannel, out, in] {
        at::Tensor decoded = at::empty({out, in}, at::kFloat);
        float* dst = decoded.data_ptr<float>();
        at::parallel_for(0, out, 16, [&](int64_t begin, int64_t end) {
            for (int64_t row = begin; row < end; ++row)
                fp8::dequantizeE4M3(codes + row * in, static_cast<std::size_t>(in), scales[perChannel ? row : 0],
                                    dst + row * in);
        });
        return decoded;
    };
}

// The maker of a tensor- or channel-scaled Linear's dl16 operands (LinearWeights::makeDl16): the
// codes' values flushed and transposed, the scales one per output channel.
std::function<Dl16Weight()> dl16WeightMaker(const TensorView& weight, const TensorView& scaleView,
                                            const LinearInfo& info, StoredPrecision precision)
{
    const int64_t out = weight.shape[0], in = weight.shape[1];
    const std::vector<float> stored = loadScale(scaleView, precision);
    const uint8_t* codes = weight.data; // the mapping lives as long as the checkpoint and the engine
    return [codes, stored, out, in] {
        Dl16Weight dl16;
        dl16.in = in;
        dl16.out = out;
        for (int64_t o = 0; o < out; ++o)
            dl16.scales.push_back(stored.size() == 1 ? stored[0] : stored[static_cast<std::size_t>(o)]);
        std::vector<float> values(static_cast<std::size_t>(out * in));
        fp8::dequantizeE4M3(codes, values.size(), 1.0f, values.data());
        dl16.valuesT.resize(values.size());
        dl16::prepareWeight(values.data(), out, in, dl16.valuesT.data());
        return dl16;
    };
}

// The factored GEMMs of loaded weights by the name they were made under.
std::map<std::string, std::shared_ptr<const Fp8FactoredGemm>> factoredGemmsOf(const EncoderWeights* weights)
{
    std::map<std::string, std::shared_ptr<const Fp8FactoredGemm>> gemms;
    if (!weights)
        return gemms;
    auto add = [&](const std::shared_ptr<const Fp8FactoredGemm>& gemm) {
        if (gemm)
            gemms[gemm->module()] = gemm;
    };
    for (const LayerWeights& layer : weights->layers) {
        add(layer.qkvFactoredGemm);
        for (const LinearWeights* linear : {&layer.query, &layer.key, &layer.value, &layer.attentionOutput,
                                            &layer.intermediate, &layer.output})
            add(linear->factoredGemm);
    }
    for (const auto& [module, linear] : weights->headLinears)
        add(linear.factoredGemm);
    return gemms;
}

class WeightLoader {
public:
    WeightLoader(const Checkpoint& checkpoint, StoredPrecision precision, const EncoderWeights* codesFrom)
        : checkpoint_(checkpoint), store_(checkpoint.tensors()), layout_(checkpoint.layout()), precision_(precision),
          lendingGemms_(factoredGemmsOf(codesFrom))
    {
    }

    at::Tensor tensor(const std::string& name, const std::vector<int64_t>& shape) const
    {
        return loadFloat(store_.require(name), shape, precision_);
    }
    at::Tensor tensor(const TensorView& view, const std::vector<int64_t>& shape) const
    {
        return loadFloat(view, shape, precision_);
    }

    // withFactored: also build the factored GEMM when this Linear runs on it (q, k and v wait for
    // fusion).
    LinearWeights linear(const std::string& module, bool withFactored = true) const
    {
        const LayoutLinear& shape = *layout_.findLinear(module);
        LinearWeights linear;
        linear.info = *checkpoint_.plan().find(module);
        const TensorView& weight = store_.require(module + ".weight");
        const std::string& problem = checkpoint_.plan().problem(module);
        if (!problem.empty())
            throw Error(problem);
        if (linear.info.quantized)
            loadFp8Weight(weight, shape, linear);
        else
            linear.weight = tensor(weight, {shape.outFeatures, shape.inFeatures});
        linear.bias = storedBias(shape);
        if (withFactored && runsFactored(linear.info))
            linear.factoredGemm = factoredGemm(module, {&linear});
        return linear;
    }

    // The factored GEMM over the stacked weights of `members` (one Linear, or q, k and v), which all
    // run on it: codes from the file, scales one per output channel, the float bias.
    std::shared_ptr<const Fp8FactoredGemm> factoredGemm(const std::string& name, const std::vector<const LinearWeights*>& members) const
    {
        const int64_t in = members.front()->info.inFeatures;
        std::vector<Fp8FactoredGemm::CodeRows> codes; // read in place from the mapping
        std::vector<float> scales, bias;
        for (const LinearWeights* member : members) {
            const TensorView& weight = store_.require(member->info.module + ".weight");
            codes.push_back({weight.data, member->info.outFeatures});
            const std::vector<float> stored = loadScale(store_.require(member->info.module + ".weight_scale"), precision_);
            for (int64_t o = 0; o < member->info.outFeatures; ++o)
                scales.push_back(stored.size() == 1 ? stored[0] : stored[static_cast<std::size_t>(o)]);
            if (member->bias.defined())
                bias.insert(bias.end(), member->bias.data_ptr<float>(), member->bias.data_ptr<float>() + member->info.outFeatures);
            else
                bias.insert(bias.end(), static_cast<std::size_t>(member->info.outFeatures), 0.0f);
        }
        const int64_t out = static_cast<int64_t>(scales.size());
        const auto lending = lendingGemms_.find(name);
        if (lending != lendingGemms_.end() && lending->second->inFeatures() == in &&
            lending->second->outFeatures() == out && lending->second->readsBf16() == (fp8GemmPath() == Fp8GemmPath::Bf16))
            return std::make_shared<const Fp8FactoredGemm>(*lending->second, std::move(scales), std::move(bias));
        auto gemm = std::make_shared<const Fp8FactoredGemm>(name, codes, in, std::move(scales), std::move(bias),
                                                            fp8GemmPath());
        // The codes are read again only by dequant mode, the fp16 twin and DL16 (each on first use).
        for (const LinearWeights* member : members)
            releaseResidentPages(store_.require(member->info.module + ".weight"));
        return gemm;
    }

    // The word-embedding table [vocab, hidden] in float32: as stored, or decoded from FP8 codes as
    // row = decode(q[row]) * scale (per row or per tensor). In fp16 mode the scale is rounded to
    // half like every stored scale and the decoded rows are not rounded again (as an FP8 Linear's
    // weight, docs/ARCHITECTURE.md "Run modes"). A tied MaskedLM decoder runs on these rows.
    at::Tensor wordEmbeddings(int64_t vocab, int64_t hidden) const
    {
        const EmbeddingInfo& info = checkpoint_.plan().wordEmbeddings();
        if (const std::string& problem = checkpoint_.plan().wordEmbeddingsProblem(); !problem.empty())
            throw Error(problem);
        const TensorView& table = store_.require(layout_.wordEmbeddingsTensor());
        if (!info.quantized)
            return tensor(table, {vocab, hidden});
        if (table.shape != std::vector<int64_t>{vocab, hidden})
            throw Error("Tensor '" + table.name + "' in " + table.file + " has shape " + shapeText(table.shape) +
                        "; the config implies " + shapeText({vocab, hidden}) + ".");
        const TensorView* scale = store_.find(layout_.wordEmbeddingsScaleTensor());
        if (!scale)
            throw Error("Tensor '" + layout_.wordEmbeddingsScaleTensor() + "' is missing from " + checkpoint_.directory() +
                        "; the F8_E4M3 word embeddings need it.");
        LinearInfo scaling; // the decoder reads only the strategy
        scaling.weightStrategy = info.weightStrategy;
        return scaledWeightDecoder(table, *scale, scaling, precision_)();
    }

    // A Linear whose weight may be absent because it is tied to `tiedTo` (the MaskedLM decoder to
    // the word embeddings, as Hugging Face saves it): then it shares that tensor.
    LinearWeights tiedLinear(const std::string& module, const at::Tensor& tiedTo) const
    {
        const LayoutLinear& shape = *layout_.findLinear(module);
        if (store_.find(module + ".weight") || shape.tiedWeight.empty())
            return linear(module);
        LinearWeights linear;
        linear.info = *checkpoint_.plan().find(module);
        linear.weight = tiedTo;
        linear.bias = storedBias(shape);
        return linear;
    }

    // The Linear's stored bias under any name its layout allows (undefined when it has none). It
    // must be known before the factored GEMM is built, which adds it in its epilogue.
    at::Tensor storedBias(const LayoutLinear& shape) const
    {
        const TensorView* stored = findStoredBias(store_, shape);
        return stored ? tensor(*stored, {shape.outFeatures}) : at::Tensor();
    }

private:
    void loadFp8Weight(const TensorView& weight, const LayoutLinear& shape, LinearWeights& linear) const
    {
        const int64_t out = shape.outFeatures, in = shape.inFeatures;
        if (weight.shape != std::vector<int64_t>{out, in})
            throw Error("Tensor '" + weight.name + "' in " + weight.file + " has shape " + shapeText(weight.shape) +
                        "; the config implies " + shapeText({out, in}) + ".");
        const TensorView& scaleView = store_.require(shape.module + ".weight_scale");
        if (linear.info.mxfp8Weights) {
            linear.weight = dequantizeMxfp8Weight(weight, scaleView, precision_); // never factored, as block
        } else if (linear.info.weightStrategy == "block") {
            // Block scales never factor out (runsFactored): the float32 path needs the weight now.
            linear.weight = dequantizeBlockWeight(weight, scaleView, linear.info, precision_);
        } else {
            linear.decodeWeight = scaledWeightDecoder(weight, scaleView, linear.info, precision_);
            if (!runsFactored(linear.info))
                linear.weight = linear.decodeWeight();
            if (accumulatesInDl16(linear.info))
                linear.makeDl16 = dl16WeightMaker(weight, scaleView, linear.info, precision_);
        }
        if (linear.info.activations == ActivationQuantization::StaticPerTensor)
            linear.info.inputScale = staticInputScale(shape.module);
    }

    float staticInputScale(const std::string& module) const
    {
        const TensorView* inputScale = store_.find(module + ".input_scale");
        if (!inputScale)
            throw Error("Tensor '" + module + ".input_scale' is missing from " + checkpoint_.directory() +
                        "; static activations need it.");
        if (inputScale->numel() != 1)
            throw Error("Tensor '" + inputScale->name + "' in " + inputScale->file + " has shape " +
                        shapeText(inputScale->shape) + "; a static per-tensor input scale needs [1].");
        return loadScale(*inputScale, precision_)[0];
    }

    const Checkpoint& checkpoint_;
    const TensorStore& store_;
    const EncoderLayout& layout_;
    StoredPrecision precision_;
    std::map<std::string, std::shared_ptr<const Fp8FactoredGemm>> lendingGemms_; // see loadEncoderWeights
};

void fuseQkv(LayerWeights& layer)
{
    auto sameInputTreatment = [](const LinearInfo& a, const LinearInfo& b) {
        return a.quantized == b.quantized && a.activations == b.activations && a.inputScale == b.inputScale &&
               a.activationGroupSize == b.activationGroupSize && a.mxfp8Activations == b.mxfp8Activations;
    };
    const LinearInfo& q = layer.query.info;
    if (!sameInputTreatment(q, layer.key.info) || !sameInputTreatment(q, layer.value.info) ||
        !layer.query.bias.defined() || !layer.key.bias.defined() || !layer.value.bias.defined())
        return;
    layer.qkvBias = at::cat({layer.query.bias, layer.key.bias, layer.value.bias}, 0);
    layer.fusedQkv = true;
    if (layer.query.weight.defined() && layer.key.weight.defined() && layer.value.weight.defined())
        fusedQkvWeight(layer);
}

LayerWeights loadLayer(const WeightLoader& loader, const EncoderLayout& layout, int index, int64_t hidden)
{
    const std::vector<LayoutLinear>& linears = layout.linears();
    const std::size_t first = static_cast<std::size_t>(index) * 6;
    auto module = [&](std::size_t k) { return linears[first + k].module; };
    LayerWeights layer;
    layer.query = loader.linear(module(0), false);
    layer.key = loader.linear(module(1), false);
    layer.value = loader.linear(module(2), false);
    fuseQkv(layer);
    // Fused, only the fused GEMM is built: a forward whose overrides split q, k and v runs them on
    // the float32 path.
    LinearWeights* members[3] = {&layer.query, &layer.key, &layer.value};
    if (layer.fusedQkv && runsFactored(layer.query.info) && runsFactored(layer.key.info) && runsFactored(layer.value.info))
        layer.qkvFactoredGemm = loader.factoredGemm(layout.layerModule(index) + ".qkv", {members[0], members[1], members[2]});
    for (LinearWeights* member : members)
        if (!layer.fusedQkv && runsFactored(member->info))
            member->factoredGemm = loader.factoredGemm(member->info.module, {member});
    layer.attentionOutput = loader.linear(module(3));
    layer.attentionNormWeight = loader.tensor(layout.attentionNormPrefix(index) + ".weight", {hidden});
    layer.attentionNormBias = loader.tensor(layout.attentionNormPrefix(index) + ".bias", {hidden});
    layer.intermediate = loader.linear(module(4));
    layer.output = loader.linear(module(5));
    layer.outputNormWeight = loader.tensor(layout.outputNormPrefix(index) + ".weight", {hidden});
    layer.outputNormBias = loader.tensor(layout.outputNormPrefix(index) + ".bias", {hidden});
    return layer;
}

// The head's parameters in the order its steps use them (HeadDefinition::steps).
void loadHead(const WeightLoader& loader, const Checkpoint& checkpoint, EncoderWeights& weights)
{
    const EncoderLayout& layout = checkpoint.layout();
    const int64_t hidden = checkpoint.config().hiddenSize;
    for (const HeadStep& step : layout.headDefinition().steps) {
        if (step.kind == HeadStepKind::Linear)
            weights.headLinears[step.module] = layout.findLinear(step.module)->tiedWeight.empty()
                                                   ? loader.linear(step.module)
                                                   : loader.tiedLinear(step.module, weights.wordEmbeddings);
        else if (step.kind == HeadStepKind::LayerNorm)
            weights.headNorms[step.module] = {loader.tensor(step.module + ".weight", {hidden}),
                                              loader.tensor(step.module + ".bias", {hidden})};
    }
}

} // namespace

ReferenceLinear loadReferenceLinear(const Checkpoint& reference, const LayoutLinear& shape, StoredPrecision precision)
{
    const TensorStore& store = reference.tensors();
    const TensorView* weight = store.find(shape.module + ".weight");
    if (!weight && !shape.tiedWeight.empty())
        weight = store.find(shape.tiedWeight);
    if (!weight)
        throw Error("The reference " + reference.directory() + " has no tensor '" + shape.module +
                    ".weight' to run that Linear in float.");
    if (weight->dtype == Dtype::F8_E4M3)
        throw Error("Tensor '" + weight->name + "' in " + weight->file +
                    " is FP8: a reference must hold float weights to run a Linear in float.");
    ReferenceLinear linear;
    linear.weight = loadFloat(*weight, {shape.outFeatures, shape.inFeatures}, precision);
    if (const TensorView* bias = findStoredBias(store, shape))
        linear.bias = loadFloat(*bias, {shape.outFeatures}, precision);
    return linear;
}

const at::Tensor& floatWeight(const LinearWeights& linear)
{
    if (!linear.weight.defined())
        linear.weight = linear.decodeWeight();
    return linear.weight;
}

const Dl16Weight& dl16Weight(const LinearWeights& linear)
{
    if (!linear.dl16) {
        if (!linear.makeDl16)
            throw Error("Linear " + linear.info.module + " has no FP8 x FP8 products to accumulate in dl16.");
        linear.dl16 = std::make_shared<const Dl16Weight>(linear.makeDl16());
    }
    return *linear.dl16;
}

const at::Tensor& fusedQkvWeight(const LayerWeights& layer)
{
    if (!layer.qkvWeight.defined()) {
        const int64_t width = layer.query.info.outFeatures;
        layer.qkvWeight = at::cat({floatWeight(layer.query), floatWeight(layer.key), floatWeight(layer.value)}, 0);
        layer.query.weight = layer.qkvWeight.narrow(0, 0, width);
        layer.key.weight = layer.qkvWeight.narrow(0, width, width);
        layer.value.weight = layer.qkvWeight.narrow(0, 2 * width, width);
    }
    return layer.qkvWeight;
}

bool runsFactored(const LinearInfo& info)
{
    // Weight-only FP8 keeps float activations, which bf16 would round; block and group scales do not
    // factor out of the whole sum: both stay on the float32 path.
    const bool factors = info.weightStrategy == "channel" || info.weightStrategy == "tensor";
    return info.quantized && factors && info.activations != ActivationQuantization::None &&
           info.activations != ActivationQuantization::DynamicPerGroup && fp8GemmPath() != Fp8GemmPath::Float32;
}

EncoderWeights loadEncoderWeights(const Checkpoint& checkpoint, const Progress& progress, StoredPrecision precision,
                                  const EncoderWeights* codesFrom)
{
    const ModelConfig& c = checkpoint.config();
    const EncoderLayout& layout = checkpoint.layout();
    const WeightLoader loader(checkpoint, precision, codesFrom);
    const int64_t h = c.hiddenSize;
    EncoderWeights weights;
    progress.report(0.0, "Loading embeddings");
    const bool shareWordEmbeddings = precision == StoredPrecision::Half && codesFrom &&
                                     !checkpoint.plan().wordEmbeddings().quantized && !layout.headReadsWordEmbeddings() &&
                                     codesFrom->wordEmbeddings.defined() && !codesFrom->roundWordEmbeddingsOnLookup;
    if (shareWordEmbeddings) {
        weights.wordEmbeddings = codesFrom->wordEmbeddings;
        weights.roundWordEmbeddingsOnLookup = true;
    } else {
        weights.wordEmbeddings = loader.wordEmbeddings(c.vocabSize, h);
    }
    weights.positionEmbeddings = loader.tensor(layout.positionEmbeddingsTensor(), {c.maxPositionEmbeddings, h});
    weights.tokenTypeEmbeddings = loader.tensor(layout.tokenTypeEmbeddingsTensor(), {c.typeVocabSize, h});
    weights.embeddingNormWeight = loader.tensor(layout.embeddingNormPrefix() + ".weight", {h});
    weights.embeddingNormBias = loader.tensor(layout.embeddingNormPrefix() + ".bias", {h});

    for (int i = 0; i < static_cast<int>(c.numLayers); ++i) {
        progress.throwIfCancelled();
        progress.report(double(i) / double(c.numLayers + 1), "Loading layer " + std::to_string(i));
        weights.layers.push_back(loadLayer(loader, layout, i, h));
    }
    progress.report(double(c.numLayers) / double(c.numLayers + 1), "Loading head");
    loadHead(loader, checkpoint, weights);
    progress.report(1.0, "Loaded");
    return weights;
}

} // namespace scalescope
