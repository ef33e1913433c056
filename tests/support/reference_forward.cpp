#include "support/reference_forward.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <memory>
#include <utility>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/text_files.h"
#include "io/safetensors.h"

namespace scalescope::testing {
namespace {

constexpr float kE4M3Largest = 448.0f;

struct E4M3Entry {
    float value;
    uint8_t code;
};

// Every finite E4M3 value with its code, ascending; +0 and -0 both appear.
const std::vector<E4M3Entry>& sortedE4M3Table()
{
    static const std::vector<E4M3Entry> table = [] {
        std::vector<E4M3Entry> entries;
        for (int code = 0; code < 256; ++code) {
            const float value = referenceDecodeE4M3(static_cast<uint8_t>(code));
            if (!std::isnan(value))
                entries.push_back({value, static_cast<uint8_t>(code)});
        }
        std::stable_sort(entries.begin(), entries.end(),
                         [](const E4M3Entry& a, const E4M3Entry& b) { return a.value < b.value; });
        return entries;
    }();
    return table;
}

enum class ActivationScheme { None, DynamicToken, StaticTensor, DynamicGroup, DynamicMxfp8 };

// compressed-tensors' MXFP8 args: scale_dtype torch.uint8 (scales are E8M0 exponents).
bool hasUint8Scales(const nlohmann::json& args)
{
    return args.value("scale_dtype", nlohmann::json(nullptr)) == "torch.uint8";
}

// The reference handles the checkpoints the fixtures write: one group for the Linears, and
// optionally a second whose only target is "Embedding" (the word embeddings, decoded on their own).
const nlohmann::json* onlyGroup(const nlohmann::json& config)
{
    const auto quantization = config.find("quantization_config");
    if (quantization == config.end() || !quantization->is_object())
        return nullptr;
    const auto groups = quantization->find("config_groups");
    if (groups == quantization->end() || !groups->is_object() || groups->empty())
        return nullptr;
    for (auto group = groups->begin(); group != groups->end(); ++group)
        if (group->value("targets", nlohmann::json::array()) != nlohmann::json::array({"Embedding"}))
            return &group.value();
    return nullptr;
}

// Block-wise weights: block_structure [rows, columns]; {0, 0} for other strategies.
std::pair<int64_t, int64_t> weightBlockOf(const nlohmann::json& config)
{
    const nlohmann::json* group = onlyGroup(config);
    if (!group || !group->contains("weights") || !(*group)["weights"].is_object())
        return {0, 0};
    const nlohmann::json& weights = (*group)["weights"];
    if (weights.value("strategy", std::string()) == "group" && hasUint8Scales(weights))
        return {1, weights.at("group_size").get<int64_t>()}; // MXFP8: one scale per run of a row
    if (weights.value("strategy", std::string()) != "block")
        return {0, 0};
    return {weights.at("block_structure").at(0).get<int64_t>(), weights.at("block_structure").at(1).get<int64_t>()};
}

ActivationScheme activationSchemeOf(const nlohmann::json& config, const std::string& configPath, int64_t* groupSize)
{
    const nlohmann::json* group = onlyGroup(config);
    if (!group)
        return ActivationScheme::None;
    const auto activations = group->find("input_activations");
    if (activations == group->end() || activations->is_null())
        return ActivationScheme::None;
    const std::string strategy = activations->value("strategy", std::string());
    const bool dynamic = activations->value("dynamic", false);
    if (strategy == "token" && dynamic)
        return ActivationScheme::DynamicToken;
    if (strategy == "tensor" && !dynamic)
        return ActivationScheme::StaticTensor;
    if (strategy == "group" && dynamic) {
        *groupSize = activations->at("group_size").get<int64_t>();
        return hasUint8Scales(*activations) ? ActivationScheme::DynamicMxfp8 : ActivationScheme::DynamicGroup;
    }
    throw Error(configPath + " asks for input activations with strategy '" + strategy + "' and dynamic " +
                (dynamic ? "true" : "false") + ", which the reference forward does not emulate.");
}

// Row-major [rows, cols] activations of one sequence.
struct Activations {
    int64_t rows = 0;
    int64_t cols = 0;
    std::vector<float> values;

    float& at(int64_t row, int64_t col) { return values[static_cast<std::size_t>(row * cols + col)]; }
    float at(int64_t row, int64_t col) const { return values[static_cast<std::size_t>(row * cols + col)]; }
};

Activations makeActivations(int64_t rows, int64_t cols)
{
    Activations result;
    result.rows = rows;
    result.cols = cols;
    result.values.assign(static_cast<std::size_t>(rows * cols), 0.0f);
    return result;
}

float quantDequant(float x, float scale)
{
    return referenceRoundToE4M3(x / scale) * scale;
}

float geluExact(float x)
{
    return static_cast<float>(0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))));
}

class ReferenceModel {
public:
    ReferenceModel(const std::string& checkpointDir, const std::string& mode, const std::string& attention = "float")
        : mode_(mode), fp8Attention_(attention == "fp8-aiu")
    {
        if (attention != "float" && attention != "fp8-aiu")
            throw Error("The reference forward knows the attention 'float' and 'fp8-aiu', not '" + attention + "'.");
        if (mode != "fp8" && mode != "dequant" && mode != "fp16")
            throw Error("The reference forward knows the modes 'fp8', 'dequant' and 'fp16', not '" + mode + "'.");
        half_ = mode == "fp16";
        directory_ = checkpointDir;
        configPath_ = joinPath(checkpointDir, "config.json");
        config_ = readJsonFile(configPath_);
        store_ = TensorStore::openDirectory(checkpointDir);
        hiddenSize_ = requireInt("hidden_size");
        numLayers_ = requireInt("num_hidden_layers");
        numHeads_ = requireInt("num_attention_heads");
        if (hiddenSize_ <= 0 || numHeads_ <= 0 || hiddenSize_ % numHeads_ != 0)
            throw Error(configPath_ + " has hidden_size " + std::to_string(hiddenSize_) +
                        " that num_attention_heads " + std::to_string(numHeads_) + " does not divide.");
        layerNormEps_ = config_.value("layer_norm_eps", 1e-12);
        padTokenId_ = config_.value("pad_token_id", int64_t{1});
        const auto architectures = config_.find("architectures");
        if (architectures == config_.end() || !architectures->is_array() || architectures->empty() ||
            !architectures->front().is_string())
            throw Error(configPath_ + " names no architecture.");
        architecture_ = architectures->front().get<std::string>();
        static const std::set<std::string> heads = {"ForQuestionAnswering", "ForMaskedLM", "ForSequenceClassification",
                                                    "Model"};
        // XLM-RoBERTa is RoBERTa's graph under the same prefix; only its tokenizer differs.
        for (const char* family : {"Roberta", "Bert", "XLMRoberta"})
            for (const std::string& head : heads)
                if (architecture_ == family + head) {
                    family_ = family == std::string("Bert") ? "bert" : "roberta";
                    head_ = head;
                }
        if (family_.empty())
            throw Error(configPath_ + " names the architecture '" + architecture_ +
                        "', which the reference forward does not run.");
        // A bare model saved by sentence-transformers names its tensors without the prefix.
        prefix_ = head_ == "Model" && !store_->find(family_ + ".embeddings.word_embeddings.weight") ? "" : family_ + ".";
        activationScheme_ = activationSchemeOf(config_, configPath_, &groupSize_);
        weightBlock_ = weightBlockOf(config_);
    }

    std::map<std::string, ReferenceTensor> run(const std::vector<int64_t>& inputIds,
                                               const std::vector<int64_t>& tokenTypeIds)
    {
        captures_.clear();
        if (inputIds.empty())
            throw Error("The reference forward needs at least one token id.");
        if (!tokenTypeIds.empty() && tokenTypeIds.size() != inputIds.size())
            throw Error("The reference forward got " + std::to_string(tokenTypeIds.size()) + " token type ids for " +
                        std::to_string(inputIds.size()) + " tokens.");
        Activations hidden = embeddings(inputIds, tokenTypeIds);
        capture(prefix_ + "embeddings.output", hidden);
        for (int layer = 0; layer < numLayers_; ++layer) {
            const std::string prefix = prefix_ + "encoder.layer." + std::to_string(layer) + ".";
            hidden = encoderLayer(prefix, hidden);
            capture(prefix + "output", hidden);
        }
        if (head_ == "ForQuestionAnswering")
            questionAnsweringHead(hidden);
        else if (head_ == "ForMaskedLM")
            maskedLanguageModelHead(hidden);
        else if (head_ == "ForSequenceClassification")
            classifierHead(hidden);
        else
            embeddingHead(hidden);
        return std::move(captures_);
    }

private:
    int requireInt(const std::string& key) const
    {
        const auto found = config_.find(key);
        if (found == config_.end() || !found->is_number_integer())
            throw Error(configPath_ + " lacks the integer '" + key + "'.");
        return found->get<int>();
    }

    std::vector<float> readValues(const TensorView& view) const
    {
        std::vector<float> values(static_cast<std::size_t>(view.numel()));
        if (view.dtype == Dtype::F8_E4M3) {
            // Decoded here rather than by the core, which is what is under test.
            for (std::size_t i = 0; i < values.size(); ++i)
                values[i] = referenceDecodeE4M3(view.data[i]);
        } else {
            view.toFloat(values.data());
            if (half_) // fp16: every stored parameter that is not an FP8 code, scales included
                for (float& value : values)
                    value = toHalf(value);
        }
        return values;
    }

    // The compiler's own float -> _Float16 -> float conversion (libgcc), not the core's codec.
    static float toHalf(float value) { return static_cast<float>(static_cast<_Float16>(value)); }
    // fp16 mode: a module's output as a float16 device stores it.
    void stored(Activations& activations) const
    {
        if (half_)
            for (float& value : activations.values)
                value = toHalf(value);
    }
    float stored(float value) const { return half_ ? toHalf(value) : value; }

    std::vector<float> readVector(const std::string& name, int64_t expectedSize) const
    {
        const TensorView& view = store_->require(name);
        if (view.numel() != expectedSize)
            throw Error("Tensor '" + name + "' in " + store_->location() + " has " + std::to_string(view.numel()) +
                        " elements where " + std::to_string(expectedSize) + " were expected.");
        return readValues(view);
    }

    void capture(const std::string& name, const Activations& activations)
    {
        captures_[name] = ReferenceTensor{{1, activations.rows, activations.cols}, activations.values};
    }

    Activations embeddings(const std::vector<int64_t>& inputIds, const std::vector<int64_t>& tokenTypeIds)
    {
        const TensorView& wordView = store_->require(prefix_ + "embeddings.word_embeddings.weight");
        const TensorView& positionView = store_->require(prefix_ + "embeddings.position_embeddings.weight");
        const TensorView& typeView = store_->require(prefix_ + "embeddings.token_type_embeddings.weight");
        for (const TensorView* view : {&wordView, &positionView, &typeView})
            if (view->shape.size() != 2 || view->shape[1] != hiddenSize_)
                throw Error("Tensor '" + view->name + "' in " + store_->location() + " is not [rows, " +
                            std::to_string(hiddenSize_) + "].");
        const int64_t vocabSize = wordView.shape[0];
        const int64_t maxPositions = positionView.shape[0];
        const int64_t typeCount = typeView.shape[0];
        const std::vector<float> words = wordEmbeddingRows(wordView);
        const std::vector<float> positions = readValues(positionView);
        const std::vector<float> types = readValues(typeView);

        const int64_t seq = static_cast<int64_t>(inputIds.size());
        Activations sum = makeActivations(seq, hiddenSize_);
        int64_t nonPadSeen = 0;
        for (int64_t t = 0; t < seq; ++t) {
            const int64_t id = inputIds[static_cast<std::size_t>(t)];
            if (id < 0 || id >= vocabSize)
                throw Error("Token id " + std::to_string(id) + " is outside the vocabulary of " +
                            std::to_string(vocabSize) + " in " + store_->location() + ".");
            // RoBERTa numbers positions from padding_idx + 1 and pad tokens sit at padding_idx;
            // BERT numbers every token from 0.
            int64_t position = t;
            if (family_ == "roberta") {
                position = padTokenId_;
                if (id != padTokenId_)
                    position = padTokenId_ + (++nonPadSeen);
            }
            const int64_t type = tokenTypeIds.empty() ? 0 : tokenTypeIds[static_cast<std::size_t>(t)];
            if (type < 0 || type >= typeCount)
                throw Error("Token type " + std::to_string(type) + " exceeds the " + std::to_string(typeCount) +
                            " token types in " + store_->location() + ".");
            if (position < 0 || position >= maxPositions)
                throw Error("Position " + std::to_string(position) + " exceeds the " + std::to_string(maxPositions) +
                            " position embeddings in " + store_->location() + ".");
            for (int64_t c = 0; c < hiddenSize_; ++c) {
                const float word = words[static_cast<std::size_t>(id * hiddenSize_ + c)];
                const float typeValue = types[static_cast<std::size_t>(type * hiddenSize_ + c)];
                const float pos = positions[static_cast<std::size_t>(position * hiddenSize_ + c)];
                sum.at(t, c) = (word + typeValue) + pos;
            }
        }
        stored(sum);
        return layerNorm(prefix_ + "embeddings.LayerNorm", sum);
    }

    std::string wordEmbeddingsName() const { return prefix_ + "embeddings.word_embeddings.weight"; }

    // docs/ARCHITECTURE.md "Configs written since 2025": an F8_E4M3 table's row id is
    // decode(q[id]) * scale, with one scale for the table or one per row (told apart by the scale's
    // element count). The scale is a stored parameter (half-rounded in fp16 mode by readValues), the
    // product is not rounded again. A tied MaskedLM decoder uses these rows as float weights.
    std::vector<float> wordEmbeddingRows(const TensorView& view) const
    {
        std::vector<float> rows = readValues(view);
        if (view.dtype != Dtype::F8_E4M3)
            return rows;
        const std::string scaleName = prefix_ + "embeddings.word_embeddings.weight_scale";
        const std::vector<float> scale = readValues(store_->require(scaleName));
        const int64_t vocab = view.shape[0];
        if (scale.size() != 1 && static_cast<int64_t>(scale.size()) != vocab)
            throw Error("Tensor '" + scaleName + "' in " + store_->location() + " has " + std::to_string(scale.size()) +
                        " elements, neither 1 nor the " + std::to_string(vocab) + " rows.");
        for (int64_t r = 0; r < vocab; ++r)
            for (int64_t c = 0; c < hiddenSize_; ++c)
                rows[static_cast<std::size_t>(r * hiddenSize_ + c)] *= scale.size() == 1 ? scale[0] : scale[static_cast<std::size_t>(r)];
        return rows;
    }

    Activations layerNorm(const std::string& module, const Activations& x) const
    {
        const std::vector<float> weight = readVector(module + ".weight", x.cols);
        const std::vector<float> bias = readVector(module + ".bias", x.cols);
        Activations y = makeActivations(x.rows, x.cols);
        for (int64_t r = 0; r < x.rows; ++r) {
            double sum = 0.0;
            for (int64_t c = 0; c < x.cols; ++c)
                sum += x.at(r, c);
            const double mean = sum / static_cast<double>(x.cols);
            double squares = 0.0;
            for (int64_t c = 0; c < x.cols; ++c)
                squares += (x.at(r, c) - mean) * (x.at(r, c) - mean);
            const double variance = squares / static_cast<double>(x.cols); // biased, as torch's LayerNorm
            const double invStd = 1.0 / std::sqrt(variance + layerNormEps_);
            for (int64_t c = 0; c < x.cols; ++c) {
                const float normalized = static_cast<float>((x.at(r, c) - mean) * invStd);
                y.at(r, c) = normalized * weight[static_cast<std::size_t>(c)] + bias[static_cast<std::size_t>(c)];
            }
        }
        stored(y);
        return y;
    }

    // y = x W^T + b. `module` names the captures and the FP8 companions (weight_scale, input_scale);
    // the weight and bias names differ from it only for the tied MLM decoder.
    Activations linear(const std::string& module, const Activations& x, const std::string& weightName,
                       const std::string& biasName)
    {
        const TensorView& weightView = store_->require(weightName);
        if (weightView.shape.size() != 2 || weightView.shape[1] != x.cols)
            throw Error("Tensor '" + weightName + "' in " + store_->location() + " is not [out, " +
                        std::to_string(x.cols) + "] as the input of " + module + " requires.");
        const int64_t outFeatures = weightView.shape[0];
        // A decoder tied to FP8 word embeddings runs on their decoded rows, in float.
        const bool tiedToEmbeddings = weightName == wordEmbeddingsName();
        std::vector<float> weight = tiedToEmbeddings ? wordEmbeddingRows(weightView) : readValues(weightView);
        const bool quantized = !tiedToEmbeddings && weightView.dtype == Dtype::F8_E4M3;
        if (quantized) {
            const std::string scaleName = module + ".weight_scale";
            const TensorView& scaleView = store_->require(scaleName);
            std::vector<float> scale = readValues(scaleView);
            if (scaleView.dtype == Dtype::U8) // MXFP8: E8M0 exponents e worth 2^(e - 127), stored like any scale
                for (std::size_t k = 0; k < scale.size(); ++k)
                    scale[k] = stored(std::ldexp(1.0f, int(scaleView.data[k]) - 127));
            if (weightBlock_.first > 0) {
                applyBlockScales(scaleName, scale, outFeatures, x.cols, weight);
            } else {
                if (scale.size() != 1 && static_cast<int64_t>(scale.size()) != outFeatures)
                    throw Error("Tensor '" + scaleName + "' in " + store_->location() + " has " +
                                std::to_string(scale.size()) + " elements, neither 1 nor the " +
                                std::to_string(outFeatures) + " output rows.");
                for (int64_t o = 0; o < outFeatures; ++o) {
                    const float rowScale = scale.size() == 1 ? scale[0] : scale[static_cast<std::size_t>(o)];
                    for (int64_t i = 0; i < x.cols; ++i)
                        weight[static_cast<std::size_t>(o * x.cols + i)] *= rowScale;
                }
            }
        }
        std::vector<float> bias;
        if (!biasName.empty() && store_->find(biasName))
            bias = readVector(biasName, outFeatures);

        capture(module + ".input", x);
        Activations input = x;
        if (quantized && mode_ != "dequant")
            quantizeInput(module, input);

        Activations y = makeActivations(x.rows, outFeatures);
        for (int64_t r = 0; r < x.rows; ++r) {
            for (int64_t o = 0; o < outFeatures; ++o) {
                double accumulator = 0.0;
                for (int64_t i = 0; i < x.cols; ++i)
                    accumulator += static_cast<double>(input.at(r, i)) *
                                   static_cast<double>(weight[static_cast<std::size_t>(o * x.cols + i)]);
                float value = static_cast<float>(accumulator);
                if (!bias.empty())
                    value += bias[static_cast<std::size_t>(o)];
                y.at(r, o) = value;
            }
        }
        stored(y);
        capture(module + ".output", y);
        return y;
    }

    Activations linear(const std::string& module, const Activations& x)
    {
        return linear(module, x, module + ".weight", module + ".bias");
    }

    // W[o, i] *= scale[o / bo][i / bi] over the grid [ceil(out / bo), ceil(in / bi)].
    void applyBlockScales(const std::string& scaleName, const std::vector<float>& scale, int64_t outFeatures,
                          int64_t inFeatures, std::vector<float>& weight) const
    {
        const int64_t gridColumns = (inFeatures + weightBlock_.second - 1) / weightBlock_.second;
        const int64_t gridRows = (outFeatures + weightBlock_.first - 1) / weightBlock_.first;
        if (static_cast<int64_t>(scale.size()) != gridRows * gridColumns)
            throw Error("Tensor '" + scaleName + "' in " + store_->location() + " is not the block grid.");
        for (int64_t o = 0; o < outFeatures; ++o)
            for (int64_t i = 0; i < inFeatures; ++i)
                weight[static_cast<std::size_t>(o * inFeatures + i)] *=
                    scale[static_cast<std::size_t>((o / weightBlock_.first) * gridColumns + i / weightBlock_.second)];
    }

    // Each run of groupSize_ channels of a row (the last one possibly shorter) by its own amax.
    void quantizeGroups(Activations& x) const
    {
        for (int64_t r = 0; r < x.rows; ++r) {
            std::vector<float> amax(static_cast<std::size_t>((x.cols + groupSize_ - 1) / groupSize_), 0.0f);
            for (int64_t c = 0; c < x.cols; ++c) {
                float& m = amax[static_cast<std::size_t>(c / groupSize_)];
                m = std::max(m, std::fabs(x.at(r, c)));
            }
            for (int64_t c = 0; c < x.cols; ++c)
                x.at(r, c) = quantDequant(x.at(r, c),
                                          std::max(amax[static_cast<std::size_t>(c / groupSize_)] / kE4M3Largest, FLT_MIN));
        }
    }

    // MXFP8: each run of groupSize_ channels of a row by the power of two referenceMxfp8Exponent gives.
    void quantizeMxfp8Runs(Activations& x) const
    {
        for (int64_t r = 0; r < x.rows; ++r)
            for (int64_t begin = 0; begin < x.cols; begin += groupSize_) {
                const int64_t end = std::min(x.cols, begin + groupSize_);
                float amax = 0.0f;
                for (int64_t c = begin; c < end; ++c)
                    amax = std::max(amax, std::fabs(x.at(r, c)));
                const float scale = std::ldexp(1.0f, int(referenceMxfp8Exponent(amax)) - 127);
                for (int64_t c = begin; c < end; ++c)
                    x.at(r, c) = quantDequant(x.at(r, c), scale);
            }
    }

    void quantizeInput(const std::string& module, Activations& x) const
    {
        switch (activationScheme_) {
        case ActivationScheme::None:
            return;
        case ActivationScheme::DynamicMxfp8:
            quantizeMxfp8Runs(x);
            return;
        case ActivationScheme::DynamicGroup:
            quantizeGroups(x);
            return;
        case ActivationScheme::DynamicToken:
            for (int64_t r = 0; r < x.rows; ++r) {
                float amax = 0.0f;
                for (int64_t c = 0; c < x.cols; ++c)
                    amax = std::max(amax, std::fabs(x.at(r, c)));
                const float scale = std::max(amax / kE4M3Largest, FLT_MIN);
                for (int64_t c = 0; c < x.cols; ++c)
                    x.at(r, c) = quantDequant(x.at(r, c), scale);
            }
            return;
        case ActivationScheme::StaticTensor: {
            const float scale = readVector(module + ".input_scale", 1)[0];
            if (!(scale > 0.0f) || !std::isfinite(scale))
                throw Error("Tensor '" + module + ".input_scale' in " + store_->location() +
                            " is not a positive finite scale.");
            for (float& value : x.values)
                value = quantDequant(value, scale);
            return;
        }
        }
    }

    // AIU FP8 attention as docs/ARCHITECTURE.md states it: one scale for the whole sequence (every
    // head), max(amax(|x|) / range, 1e-5), and x' = E4M3(x / scale) * scale, kept in the run's dtype.
    void castToFp8(const std::string& module, Activations& x, float range)
    {
        capture(module + ".input", x);
        float amax = 0.0f;
        for (float value : x.values)
            amax = std::max(amax, std::fabs(value));
        const float scale = std::max(amax / range, 1e-5f);
        for (float& value : x.values)
            value = stored(referenceRoundToE4M3(value / scale) * scale);
        capture(module + ".output", x);
    }

    Activations encoderLayer(const std::string& prefix, const Activations& input)
    {
        const Activations query = linear(prefix + "attention.self.query", input);
        Activations key = linear(prefix + "attention.self.key", input);
        Activations value = linear(prefix + "attention.self.value", input);
        if (query.cols != hiddenSize_ || key.cols != hiddenSize_ || value.cols != hiddenSize_)
            throw Error("The attention projections of " + prefix + "attention.self in " + store_->location() +
                        " do not produce hidden_size features.");
        const int64_t seq = input.rows;
        const int64_t headDim = hiddenSize_ / numHeads_;
        if (fp8Attention_) {
            castToFp8(prefix + "attention.self.key_fp8", key, 200.0f);
            castToFp8(prefix + "attention.self.value_fp8", value, 100.0f);
        }
        const double scoreScale = 1.0 / std::sqrt(static_cast<double>(headDim));

        Activations context = makeActivations(seq, hiddenSize_);
        std::vector<double> probabilities(static_cast<std::size_t>(seq));
        for (int64_t head = 0; head < numHeads_; ++head) {
            const int64_t offset = head * headDim;
            for (int64_t q = 0; q < seq; ++q) {
                double largest = -std::numeric_limits<double>::infinity();
                for (int64_t k = 0; k < seq; ++k) {
                    double dot = 0.0;
                    for (int64_t d = 0; d < headDim; ++d)
                        dot += static_cast<double>(query.at(q, offset + d)) * key.at(k, offset + d);
                    const double score = stored(static_cast<float>(dot * scoreScale));
                    probabilities[static_cast<std::size_t>(k)] = score;
                    largest = std::max(largest, score);
                }
                double total = 0.0;
                for (double& p : probabilities) {
                    p = std::exp(p - largest);
                    total += p;
                }
                for (double& p : probabilities)
                    p = stored(static_cast<float>(p / total));
                for (int64_t d = 0; d < headDim; ++d) {
                    double sum = 0.0;
                    for (int64_t k = 0; k < seq; ++k)
                        sum += probabilities[static_cast<std::size_t>(k)] * value.at(k, offset + d);
                    context.at(q, offset + d) = stored(static_cast<float>(sum));
                }
            }
        }

        Activations attentionDense = linear(prefix + "attention.output.dense", context);
        addInPlace(attentionDense, input, prefix + "attention.output.dense");
        const Activations attentionOutput = layerNorm(prefix + "attention.output.LayerNorm", attentionDense);

        Activations intermediate = linear(prefix + "intermediate.dense", attentionOutput);
        for (float& v : intermediate.values)
            v = stored(geluExact(v));
        Activations outputDense = linear(prefix + "output.dense", intermediate);
        addInPlace(outputDense, attentionOutput, prefix + "output.dense");
        return layerNorm(prefix + "output.LayerNorm", outputDense);
    }

    void addInPlace(Activations& target, const Activations& residual, const std::string& module) const
    {
        if (target.rows != residual.rows || target.cols != residual.cols)
            throw Error("The output of " + module + " in " + store_->location() +
                        " does not match the residual's shape.");
        for (std::size_t i = 0; i < target.values.size(); ++i)
            target.values[i] = stored(target.values[i] + residual.values[i]);
    }

    void questionAnsweringHead(const Activations& hidden)
    {
        const Activations logits = linear("qa_outputs", hidden);
        if (logits.cols != 2)
            throw Error("Tensor 'qa_outputs.weight' in " + store_->location() + " does not have 2 output rows.");
        ReferenceTensor start{{1, hidden.rows}, {}};
        ReferenceTensor end{{1, hidden.rows}, {}};
        for (int64_t t = 0; t < hidden.rows; ++t) {
            start.values.push_back(logits.at(t, 0));
            end.values.push_back(logits.at(t, 1));
        }
        captures_["start_logits"] = std::move(start);
        captures_["end_logits"] = std::move(end);
    }

    // The first token's hidden state through dense, tanh, out: RoBERTa classifier.dense/out_proj,
    // BERT's pooler then its classifier. The tanh in double, rounded as the device stores it.
    void classifierHead(const Activations& hidden)
    {
        Activations first{1, hidden.cols, {hidden.values.begin(), hidden.values.begin() + hidden.cols}};
        const bool bert = family_ == "bert";
        Activations dense = linear(bert ? "bert.pooler.dense" : "classifier.dense", first);
        for (float& v : dense.values)
            v = stored(static_cast<float>(std::tanh(double(v))));
        const Activations logits = linear(bert ? "classifier" : "classifier.out_proj", dense);
        captures_["logits"] = ReferenceTensor{{1, logits.cols}, logits.values};
    }

    // sentence-transformers' pooling as DESIGN states it, read here from the folder's own files:
    // 1_Pooling/config.json's mode over every token (one unpadded sequence: all have mask 1), then
    // L2 normalization when modules.json lists Normalize; CLS pooling without modules.json.
    void embeddingHead(const Activations& hidden)
    {
        std::string mode = "cls";
        bool normalize = false;
        const std::string modulesPath = joinPath(directory_, "modules.json");
        if (fileExists(modulesPath)) {
            for (const auto& module : readJsonFile(modulesPath))
                normalize = normalize || module.value("type", "") == "sentence_transformers.models.Normalize";
            const nlohmann::json pooling = readJsonFile(joinPath(directory_, "1_Pooling/config.json"));
            for (const auto& [key, name] : std::map<std::string, std::string>{
                     {"pooling_mode_cls_token", "cls"}, {"pooling_mode_mean_tokens", "mean"},
                     {"pooling_mode_max_tokens", "max"}, {"pooling_mode_mean_sqrt_len_tokens", "mean_sqrt_len"}})
                if (pooling.value(key, false))
                    mode = name;
        }
        std::vector<double> pooled(static_cast<std::size_t>(hidden.cols), mode == "max" ? -1e300 : 0.0);
        for (int64_t t = 0; t < (mode == "cls" ? 1 : hidden.rows); ++t)
            for (int64_t c = 0; c < hidden.cols; ++c) {
                double& into = pooled[static_cast<std::size_t>(c)];
                into = mode == "max" ? std::max(into, double(hidden.at(t, c))) : into + double(hidden.at(t, c));
            }
        const double count = double(hidden.rows);
        for (double& v : pooled)
            v = mode == "mean" ? v / count : mode == "mean_sqrt_len" ? v / std::sqrt(count) : v;
        double norm = 0;
        for (double v : pooled)
            norm += v * v;
        norm = std::max(std::sqrt(norm), 1e-12);
        ReferenceTensor out{{1, hidden.cols}, {}};
        for (double v : pooled)
            out.values.push_back(static_cast<float>(normalize ? v / norm : v));
        captures_["pooled"] = std::move(out);
    }

    void maskedLanguageModelHead(const Activations& hidden)
    {
        if (family_ == "bert") {
            bertMaskedLanguageModelHead(hidden);
            return;
        }
        Activations transformed = linear("lm_head.dense", hidden);
        for (float& v : transformed.values)
            v = stored(geluExact(v));
        const Activations normalized = layerNorm("lm_head.layer_norm", transformed);
        const std::string weightName = store_->find("lm_head.decoder.weight")
                                           ? "lm_head.decoder.weight"
                                           : "roberta.embeddings.word_embeddings.weight";
        const std::string biasName = store_->find("lm_head.decoder.bias") ? "lm_head.decoder.bias" : "lm_head.bias";
        const Activations logits = linear("lm_head.decoder", normalized, weightName, biasName);
        capture("logits", logits);
    }

    // BERT's cls.predictions: transform (dense, GELU, LayerNorm), then the decoder, whose weight is
    // the word embeddings when the file has none and whose bias is the head's shared one.
    void bertMaskedLanguageModelHead(const Activations& hidden)
    {
        Activations transformed = linear("cls.predictions.transform.dense", hidden);
        for (float& v : transformed.values)
            v = stored(geluExact(v));
        const Activations normalized = layerNorm("cls.predictions.transform.LayerNorm", transformed);
        const std::string weightName = store_->find("cls.predictions.decoder.weight")
                                           ? "cls.predictions.decoder.weight"
                                           : "bert.embeddings.word_embeddings.weight";
        const std::string biasName =
            store_->find("cls.predictions.decoder.bias") ? "cls.predictions.decoder.bias" : "cls.predictions.bias";
        const Activations logits = linear("cls.predictions.decoder", normalized, weightName, biasName);
        capture("logits", logits);
    }

    std::string mode_;
    bool fp8Attention_ = false; // AIU FP8 attention (docs/ARCHITECTURE.md "Run modes")
    bool half_ = false; // fp16 mode (docs/ARCHITECTURE.md "Run modes")
    std::string family_;
    std::string head_;   // ForQuestionAnswering, ForMaskedLM, ForSequenceClassification, Model
    std::string prefix_; // "roberta.", "bert.", or "" for a bare model saved without it
    std::string directory_;
    std::string configPath_;
    nlohmann::json config_;
    std::unique_ptr<TensorStore> store_;
    int hiddenSize_ = 0;
    int numLayers_ = 0;
    int numHeads_ = 0;
    double layerNormEps_ = 1e-12;
    int64_t padTokenId_ = 1;
    std::string architecture_;
    ActivationScheme activationScheme_ = ActivationScheme::None;
    int64_t groupSize_ = 0;
    std::pair<int64_t, int64_t> weightBlock_{0, 0};
    std::map<std::string, ReferenceTensor> captures_;
};

} // namespace

float referenceDecodeE4M3(uint8_t code)
{
    const bool negative = (code & 0x80) != 0;
    const int exponent = (code >> 3) & 0x0F;
    const int mantissa = code & 0x07;
    if (exponent == 0x0F && mantissa == 0x07)
        return std::numeric_limits<float>::quiet_NaN();
    const float magnitude = exponent == 0
                                ? std::ldexp(static_cast<float>(mantissa) / 8.0f, 1 - 7)
                                : std::ldexp(1.0f + static_cast<float>(mantissa) / 8.0f, exponent - 7);
    return negative ? -magnitude : magnitude;
}

uint8_t referenceMxfp8Exponent(float amax)
{
    const double magnitude = std::fabs(static_cast<double>(amax));
    if (magnitude == 0.0)
        return 0; // log2(0) = -inf clamps to 0
    if (std::isinf(magnitude))
        return 255;
    int p = 0;
    const double m = 2.0 * std::frexp(magnitude, &p); // magnitude = m * 2^(p - 1), 1 <= m < 2
    int exponent = p - 1;
    if (m >= 1.75)
        ++exponent;
    if (exponent > 127) // float32 has no 2^128: the rounded amax is inf
        return 255;
    return static_cast<uint8_t>(std::min(255, std::max(0, 127 + exponent - 8)));
}

float referenceRoundToE4M3(float x)
{
    if (std::isnan(x))
        return x;
    const float clamped = std::min(std::max(x, -kE4M3Largest), kE4M3Largest);
    const std::vector<E4M3Entry>& table = sortedE4M3Table();
    // The nearest code is one of the two table neighbours of x; since the table holds every code,
    // this is the exhaustive search done by bisection.
    const auto above = std::lower_bound(table.begin(), table.end(), clamped,
                                        [](const E4M3Entry& entry, float value) { return entry.value < value; });
    float result = above->value;
    if (above->value != clamped) {
        const auto below = above - 1;
        const double distanceAbove = static_cast<double>(above->value) - clamped;
        const double distanceBelow = static_cast<double>(clamped) - below->value;
        if (distanceBelow < distanceAbove)
            result = below->value;
        else if (distanceBelow == distanceAbove && (below->code & 1) == 0)
            result = below->value;
    }
    return result == 0.0f ? std::copysign(0.0f, x) : result;
}

std::map<std::string, ReferenceTensor> referenceForward(const std::string& checkpointDir,
                                                        const std::vector<int64_t>& inputIds,
                                                        const std::string& mode,
                                                        const std::vector<int64_t>& tokenTypeIds,
                                                        const std::string& attention)
{
    ReferenceModel model(checkpointDir, mode, attention);
    return model.run(inputIds, tokenTypeIds);
}

} // namespace scalescope::testing
