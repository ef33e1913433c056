#include "support/fixtures.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>

#include <QDir>
#include <QString>
#include <QTemporaryDir>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/text_files.h"
#include "io/safetensors.h"
#include "numerics/half.h"
#include "support/reference_forward.h"

namespace scalescope::testing {
namespace {

// Box-Muller over mt19937 rather than std::normal_distribution, so that the same seed gives the
// same weights with every standard library.
class NormalSampler {
public:
    explicit NormalSampler(uint32_t seed) : engine_(seed) {}

    float next(double standardDeviation)
    {
        const double u1 = uniformOpenInterval();
        const double u2 = uniformOpenInterval();
        const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * kPi * u2);
        return static_cast<float>(z * standardDeviation);
    }

private:
    static constexpr double kPi = 3.14159265358979323846;

    double uniformOpenInterval() { return (static_cast<double>(engine_()) + 0.5) / 4294967296.0; }

    std::mt19937 engine_;
};

// Standard deviations chosen so that activations stay of order one through the tiny encoder and the
// heads' logits spread enough to rank answers and tokens distinctly.
constexpr double kEmbeddingStd = 0.2;
constexpr double kLinearStd = 0.1;
constexpr double kQaOutputsStd = 0.3;
constexpr double kBiasStd = 0.02;
constexpr double kLayerNormNoiseStd = 0.05;

constexpr float kE4M3Largest = 448.0f;

std::string utf8FromCodePoint(uint32_t codePoint)
{
    std::string out;
    if (codePoint < 0x80) {
        out += static_cast<char>(codePoint);
    } else if (codePoint < 0x800) {
        out += static_cast<char>(0xC0 | (codePoint >> 6));
        out += static_cast<char>(0x80 | (codePoint & 0x3F));
    } else {
        out += static_cast<char>(0xE0 | (codePoint >> 12));
        out += static_cast<char>(0x80 | ((codePoint >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (codePoint & 0x3F));
    }
    return out;
}

// GPT-2's bytes-to-unicode table: printable Latin-1 bytes stand for themselves, the others are
// moved to 256, 257, ... in byte order so that every byte has a visible symbol.
std::vector<std::string> byteSymbols()
{
    std::vector<std::string> symbols(256);
    uint32_t nextShifted = 256;
    for (uint32_t byte = 0; byte < 256; ++byte) {
        const bool printable = (byte >= 33 && byte <= 126) || (byte >= 161 && byte <= 172) || (byte >= 174);
        symbols[byte] = utf8FromCodePoint(printable ? byte : nextShifted++);
    }
    return symbols;
}

void ensureDirectory(const std::string& dir)
{
    if (!QDir().mkpath(QString::fromStdString(dir)))
        throw Error("Cannot create the folder " + dir + ".");
}

void writeTextFile(const std::string& path, const std::string& content)
{
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    out.close();
    if (!out)
        throw Error("Cannot write " + path + ".");
}

// Writes vocab.json and merges.txt and returns the vocabulary size.
int writeTokenizerFiles(const std::string& dir, const std::vector<std::string>& words, int vocabularySize = 0)
{
    const std::vector<std::string> symbols = byteSymbols();
    nlohmann::ordered_json vocab = nlohmann::ordered_json::object();
    int nextId = 0;
    auto addToken = [&](const std::string& token) {
        if (!vocab.contains(token))
            vocab[token] = nextId++;
    };
    for (const char* special : {"<s>", "<pad>", "</s>", "<unk>"})
        addToken(special);
    for (const std::string& symbol : symbols)
        addToken(symbol);

    std::string merges = "#version: 0.2\n";
    std::set<std::string> seenMerges;
    auto addMergesBuilding = [&](const std::vector<std::string>& pieces) {
        if (pieces.size() < 2)
            return;
        std::string built = pieces[0];
        for (std::size_t k = 1; k < pieces.size(); ++k) {
            const std::string merge = built + " " + pieces[k];
            if (seenMerges.insert(merge).second) {
                merges += merge + "\n";
                addToken(built + pieces[k]);
            }
            built += pieces[k];
        }
    };
    const std::string spaceSymbol = symbols[static_cast<unsigned char>(' ')];
    auto piecesOf = [&](const std::string& word, bool leadingSpace) {
        std::vector<std::string> pieces;
        if (leadingSpace)
            pieces.push_back(spaceSymbol);
        for (unsigned char byte : word)
            pieces.push_back(symbols[byte]);
        return pieces;
    };
    // BPE applies the lowest-ranked pair first. Ranking every "Ġ" chain before every bare chain
    // keeps a bare merge ("t h") from splitting a spaced word ("Ġ t h e" -> "Ġ th e").
    for (const std::string& word : words)
        if (!word.empty())
            addMergesBuilding(piecesOf(word, true));
    for (const std::string& word : words)
        if (!word.empty())
            addMergesBuilding(piecesOf(word, false));
    for (int unused = 0; nextId < vocabularySize - 1; ++unused)
        addToken("<unused_" + std::to_string(unused) + ">");
    addToken("<mask>");

    writeTextFile(joinPath(dir, "vocab.json"), vocab.dump(2) + "\n");
    writeTextFile(joinPath(dir, "merges.txt"), merges);
    return nextId;
}

// Writes vocab.txt and tokenizer_config.json and returns the vocabulary size.
int writeWordPieceFiles(const std::string& dir, const std::vector<std::string>& words, int vocabularySize = 0)
{
    std::vector<std::string> vocab = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
    std::set<std::string> seen(vocab.begin(), vocab.end());
    auto addToken = [&](const std::string& token) {
        if (seen.insert(token).second)
            vocab.push_back(token);
    };
    std::vector<std::string> characters;
    for (char c = 33; c < 127; ++c)
        if (!(c >= 'A' && c <= 'Z')) // lower-cased away
            characters.emplace_back(1, c);
    for (const std::string& c : characters)
        addToken(c);
    for (const std::string& c : characters)
        addToken("##" + c);
    for (std::string word : words) {
        std::transform(word.begin(), word.end(), word.begin(), [](unsigned char c) { return char(std::tolower(c)); });
        if (!word.empty())
            addToken(word);
    }
    for (int unused = 0; static_cast<int>(vocab.size()) < vocabularySize; ++unused)
        addToken("[unused" + std::to_string(unused) + "]");
    std::string text;
    for (const std::string& token : vocab)
        text += token + "\n";
    writeTextFile(joinPath(dir, "vocab.txt"), text);
    writeTextFile(joinPath(dir, "tokenizer_config.json"), "{\"do_lower_case\": true}\n");
    return static_cast<int>(vocab.size());
}

bool isBert(const std::string& architecture)
{
    return architecture.rfind("Bert", 0) == 0;
}

// Collects tensors in Hugging Face naming, drawing their values in a fixed order from one sampler.
class TinyWeightsBuilder {
public:
    explicit TinyWeightsBuilder(const TinyModelSpec& spec) : spec_(spec), sampler_(spec.seed) {}

    void normal(const std::string& name, const std::vector<int64_t>& shape, double standardDeviation)
    {
        FloatTensor tensor{shape, {}};
        tensor.values.resize(static_cast<std::size_t>(tensor.numel()));
        for (float& value : tensor.values)
            value = sampler_.next(standardDeviation);
        tensors_.push_back({name, std::move(tensor)});
    }

    void layerNorm(const std::string& module, int64_t features)
    {
        normal(module + ".weight", {features}, kLayerNormNoiseStd);
        for (float& value : tensors_.back().tensor.values)
            value += 1.0f;
        normal(module + ".bias", {features}, kBiasStd);
    }

    void linear(const std::string& module, int64_t outFeatures, int64_t inFeatures, double standardDeviation,
                bool withOutliers)
    {
        normal(module + ".weight", {outFeatures, inFeatures}, standardDeviation);
        if (withOutliers)
            scaleColumns(tensors_.back().tensor);
        normal(module + ".bias", {outFeatures}, kBiasStd);
    }

    void scaleColumns(FloatTensor& tensor) const
    {
        const int64_t rows = tensor.shape[0];
        const int64_t columns = tensor.shape[1];
        for (int channel : spec_.outlierChannels) {
            if (channel < 0 || channel >= columns)
                continue;
            for (int64_t r = 0; r < rows; ++r)
                tensor.values[static_cast<std::size_t>(r * columns + channel)] *= spec_.outlierFactor;
        }
    }

    std::vector<TensorToWrite> toWrite() const
    {
        std::vector<TensorToWrite> out;
        for (const NamedTensor& named : tensors_)
            out.push_back(makeF32Tensor(named.name, named.tensor));
        return out;
    }

    FloatTensor& last() { return tensors_.back().tensor; }

private:
    const TinyModelSpec& spec_;
    NormalSampler sampler_;
    std::vector<NamedTensor> tensors_;
};

bool endsWith(const std::string& text, const std::string& suffix)
{
    return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool isClassifier(const std::string& architecture) { return endsWith(architecture, "ForSequenceClassification"); }
bool isBareModel(const std::string& architecture)
{
    return architecture == "RobertaModel" || architecture == "BertModel" || architecture == "XLMRobertaModel";
}
bool isXlmRoberta(const std::string& architecture) { return architecture.rfind("XLMRoberta", 0) == 0; }

// The Unigram test tokenizer's tokenizer.json copied into dir; returns its vocabulary size.
int writeUnigramTokenizer(const std::string& dir)
{
    const std::string text = readFileToString(SCALESCOPE_UNIGRAM_TOKENIZER);
    writeTextFile(joinPath(dir, "tokenizer.json"), text);
    const nlohmann::json tokenizer = nlohmann::json::parse(text);
    return static_cast<int>(tokenizer["model"]["vocab"].size());
}

void validateSpec(const TinyModelSpec& spec)
{
    static const std::set<std::string> known = {
        "RobertaForQuestionAnswering",    "RobertaForMaskedLM",    "RobertaForSequenceClassification",    "RobertaModel",
        "BertForQuestionAnswering",       "BertForMaskedLM",       "BertForSequenceClassification",       "BertModel",
        "XLMRobertaForQuestionAnswering", "XLMRobertaForMaskedLM", "XLMRobertaForSequenceClassification", "XLMRobertaModel"};
    if (!known.count(spec.architecture))
        throw Error("The tiny checkpoint writer knows the Roberta and Bert QA, MaskedLM, SequenceClassification and "
                    "bare Model classes, not '" + spec.architecture + "'.");
    if (spec.hiddenSize <= 0 || spec.numLayers < 0 || spec.numHeads <= 0 || spec.intermediateSize <= 0 ||
        spec.hiddenSize % spec.numHeads != 0 || spec.maxPositionEmbeddings < 3)
        throw Error("The tiny model spec has inconsistent sizes (hidden " + std::to_string(spec.hiddenSize) +
                    ", heads " + std::to_string(spec.numHeads) + ").");
}

const char* const kEncoderLinears[] = {"attention.self.query", "attention.self.key", "attention.self.value",
                                       "attention.output.dense", "intermediate.dense", "output.dense"};

constexpr int64_t kMxfp8Block = 32; // input channels per MXFP8 scale

const char* const kRobertaMaskedLmHead[] = {"lm_head.dense", "lm_head.decoder"};
const char* const kRobertaClassifierHead[] = {"classifier.dense", "classifier.out_proj"};
const char* const kBertClassifierHead[] = {"bert.pooler.dense", "classifier"};
const char* const kBertMaskedLmHead[] = {"cls.predictions.transform.dense", "cls.predictions.decoder"};

Dtype scaleDtypeOf(const std::string& name)
{
    if (name == "F32")
        return Dtype::F32;
    if (name == "BF16")
        return Dtype::BF16;
    if (name == "F16")
        return Dtype::F16;
    throw Error("The FP8 fixture's scale dtype must be F32, BF16 or F16, not '" + name + "'.");
}

// The scale as it will read back from the checkpoint, so the codes are computed against it.
float narrowTo(Dtype dtype, float value)
{
    switch (dtype) {
    case Dtype::BF16:
        return half::bf16ToFloat(half::floatToBf16(value));
    case Dtype::F16:
        return half::f16ToFloat(half::floatToF16(value));
    default:
        return value;
    }
}

float scaleFromAmax(float amax)
{
    return amax > 0.0f ? amax / kE4M3Largest : 1.0f;
}

// Value -> code for the values referenceRoundToE4M3 returns (keyed by bit pattern so -0 and +0 differ).
uint8_t encodeE4M3Value(float value)
{
    static const std::map<uint32_t, uint8_t> codes = [] {
        std::map<uint32_t, uint8_t> table;
        for (int code = 0; code < 256; ++code) {
            const float decoded = referenceDecodeE4M3(static_cast<uint8_t>(code));
            if (std::isnan(decoded))
                continue;
            uint32_t bits = 0;
            std::memcpy(&bits, &decoded, sizeof bits);
            table.emplace(bits, static_cast<uint8_t>(code));
        }
        return table;
    }();
    uint32_t bits = 0;
    std::memcpy(&bits, &value, sizeof bits);
    const auto found = codes.find(bits);
    if (found == codes.end())
        throw Error("The value " + std::to_string(value) + " is not an E4M3 value.");
    return found->second;
}

// compressed-tensors' MXFP8 args (quant_scheme.py's MXFP8 preset) as QuantizationArgs serialises them.
nlohmann::ordered_json mxfp8Args(bool dynamic)
{
    return {{"num_bits", 8},
            {"type", "float"},
            {"symmetric", true},
            {"group_size", kMxfp8Block},
            {"strategy", "group"},
            {"block_structure", nullptr},
            {"dynamic", dynamic},
            {"actorder", nullptr},
            {"scale_dtype", "torch.uint8"},
            {"zp_dtype", "torch.uint8"},
            {"observer", dynamic ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json("memoryless_minmax")},
            {"observer_kwargs", nlohmann::ordered_json::object()}};
}

// The quantization_config of an MXFP8 (activations "mxfp8") or MXFP8A16 (activations "none") model,
// as llm-compressor writes one with compressed-tensors 0.18: format mxfp8-quantized, top level and
// per group.
nlohmann::ordered_json mxfp8QuantizationConfig(const Fp8Scheme& scheme, const nlohmann::ordered_json& ignore)
{
    if (scheme.activations != "mxfp8" && scheme.activations != "none")
        throw Error("The MXFP8 fixture takes activations mxfp8 or none, not '" + scheme.activations + "'.");
    nlohmann::ordered_json group = {
        {"targets", {"Linear"}},
        {"weights", mxfp8Args(false)},
        {"input_activations", scheme.activations == "mxfp8" ? mxfp8Args(true) : nlohmann::ordered_json(nullptr)},
        {"output_activations", nullptr},
        {"format", "mxfp8-quantized"}};
    return {{"config_groups", {{"group_0", group}}},
            {"format", "mxfp8-quantized"},
            {"global_compression_ratio", nullptr},
            {"ignore", ignore},
            {"kv_cache_scheme", nullptr},
            {"quant_method", "compressed-tensors"},
            {"quantization_status", "compressed"},
            {"sparsity_config", nlohmann::ordered_json::object()},
            {"transform_config", nlohmann::ordered_json::object()},
            {"version", "0.18.0"}};
}

nlohmann::ordered_json quantizationConfig(const Fp8Scheme& scheme, bool bert, const Fp8Edits& edits)
{
    const char* head = edits.quantizeMaskedLmHead ? (bert ? "cls" : "lm_head") : (bert ? "re:cls\\..*" : "re:lm_head.*");
    nlohmann::ordered_json ignore = {"qa_outputs", head};
    for (const std::string& module : edits.keepFloat)
        ignore.push_back(module);
    if (scheme.weights == "mxfp8")
        return mxfp8QuantizationConfig(scheme, ignore);
    nlohmann::ordered_json weights = {{"num_bits", 8},   {"type", "float"},   {"strategy", scheme.weights},
                                      {"symmetric", true}, {"dynamic", false}};
    if (scheme.weights == "block")
        weights["block_structure"] = {scheme.blockRows, scheme.blockColumns};
    nlohmann::ordered_json activations = nullptr;
    if (scheme.activations == "token")
        activations = {{"num_bits", 8}, {"type", "float"}, {"strategy", "token"}, {"symmetric", true},
                       {"dynamic", true}};
    else if (scheme.activations == "tensor")
        activations = {{"num_bits", 8}, {"type", "float"}, {"strategy", "tensor"}, {"symmetric", true},
                       {"dynamic", false}};
    else if (scheme.activations == "group")
        activations = {{"num_bits", 8}, {"type", "float"}, {"strategy", "group"}, {"group_size", scheme.groupSize},
                       {"symmetric", true}, {"dynamic", true}};
    nlohmann::ordered_json group = {{"targets", {"Linear"}},
                                    {"weights", weights},
                                    {"input_activations", activations},
                                    {"output_activations", nullptr}};
    nlohmann::ordered_json groups = {{"group_0", group}};
    if (!edits.embeddingWeights.empty())
        groups["group_1"] = {{"targets", {"Embedding"}},
                             {"weights", {{"num_bits", 8}, {"type", "float"}, {"strategy", edits.embeddingWeights},
                                          {"symmetric", true}, {"dynamic", false}}},
                             {"input_activations", nullptr},
                             {"output_activations", nullptr}};
    return {{"quant_method", "compressed-tensors"},
            {"format", "float-quantized"},
            {"quantization_status", "compressed"},
            {"config_groups", groups},
            {"ignore", ignore},
            {"kv_cache_scheme", nullptr}};
}

// config.json as transformers writes it for BertFor*.
nlohmann::ordered_json bertConfig(const TinyModelSpec& spec, int vocabSize)
{
    return {{"architectures", {spec.architecture}},
            {"model_type", "bert"},
            {"vocab_size", vocabSize},
            {"hidden_size", spec.hiddenSize},
            {"num_hidden_layers", spec.numLayers},
            {"num_attention_heads", spec.numHeads},
            {"intermediate_size", spec.intermediateSize},
            {"max_position_embeddings", spec.maxPositionEmbeddings},
            {"type_vocab_size", 2},
            {"layer_norm_eps", 1e-12},
            {"pad_token_id", 0},
            {"hidden_act", "gelu"},
            {"hidden_dropout_prob", 0.1},
            {"attention_probs_dropout_prob", 0.1},
            {"position_embedding_type", "absolute"},
            {"initializer_range", 0.02},
            {"torch_dtype", "float32"}};
}

// A classifier's id2label / label2id (string keys, as transformers writes them) and problem_type.
nlohmann::ordered_json withClassifierLabels(nlohmann::ordered_json config, const TinyModelSpec& spec)
{
    if (!isClassifier(spec.architecture))
        return config;
    nlohmann::ordered_json id2label = nlohmann::ordered_json::object(), label2id = nlohmann::ordered_json::object();
    for (int i = 0; i < spec.numLabels; ++i) {
        const std::string name = i < static_cast<int>(spec.labelNames.size()) ? spec.labelNames[static_cast<std::size_t>(i)]
                                                                              : "LABEL_" + std::to_string(i);
        id2label[std::to_string(i)] = name;
        label2id[name] = i;
    }
    config["id2label"] = id2label;
    config["label2id"] = label2id;
    if (!spec.problemType.empty())
        config["problem_type"] = spec.problemType;
    return config;
}

// modules.json and the module folders of a sentence-transformers embedder, when spec.pooling names one.
void writeSentenceTransformersFiles(const std::string& dir, const TinyModelSpec& spec)
{
    if (spec.pooling.empty())
        return;
    nlohmann::ordered_json modules = nlohmann::ordered_json::array();
    modules.push_back({{"idx", 0}, {"name", "0"}, {"path", ""}, {"type", "sentence_transformers.models.Transformer"}});
    modules.push_back({{"idx", 1}, {"name", "1"}, {"path", "1_Pooling"}, {"type", "sentence_transformers.models.Pooling"}});
    if (spec.normalize)
        modules.push_back({{"idx", 2}, {"name", "2"}, {"path", "2_Normalize"}, {"type", "sentence_transformers.models.Normalize"}});
    writeTextFile(joinPath(dir, "modules.json"), modules.dump(2) + "\n");
    ensureDirectory(joinPath(dir, "1_Pooling"));
    const nlohmann::ordered_json pooling = {{"word_embedding_dimension", spec.hiddenSize},
                                            {"pooling_mode_cls_token", spec.pooling == "cls"},
                                            {"pooling_mode_mean_tokens", spec.pooling == "mean"},
                                            {"pooling_mode_max_tokens", spec.pooling == "max"},
                                            {"pooling_mode_mean_sqrt_len_tokens", spec.pooling == "mean_sqrt_len"},
                                            {"pooling_mode_weightedmean_tokens", false},
                                            {"pooling_mode_lasttoken", false},
                                            {"include_prompt", true}};
    writeTextFile(joinPath(dir, "1_Pooling/config.json"), pooling.dump(2) + "\n");
    if (spec.normalize)
        ensureDirectory(joinPath(dir, "2_Normalize"));
    if (spec.maxSeqLength > 0)
        writeTextFile(joinPath(dir, "sentence_bert_config.json"),
                      nlohmann::ordered_json{{"max_seq_length", spec.maxSeqLength}, {"do_lower_case", false}}.dump(2) + "\n");
    nlohmann::ordered_json prompts = nlohmann::ordered_json::object();
    for (const auto& [name, text] : spec.prompts)
        prompts[name] = text;
    writeTextFile(joinPath(dir, "config_sentence_transformers.json"),
                  nlohmann::ordered_json{{"prompts", prompts}, {"default_prompt_name", nullptr}}.dump(2) + "\n");
}

void copyFile(const std::string& from, const std::string& to)
{
    writeTextFile(to, readFileToString(from));
}

} // namespace

void writeTinyTokenizer(const std::string& dir, const std::vector<std::string>& words)
{
    ensureDirectory(dir);
    writeTokenizerFiles(dir, words);
}

void writeTinyWordPieceTokenizer(const std::string& dir, const std::vector<std::string>& words)
{
    ensureDirectory(dir);
    writeWordPieceFiles(dir, words);
}

void writeTinyFloatCheckpoint(const std::string& dir, const TinyModelSpec& spec)
{
    validateSpec(spec);
    ensureDirectory(dir);
    const bool bert = isBert(spec.architecture);
    const int vocabSize = bert                               ? writeWordPieceFiles(dir, spec.words, spec.vocabularySize)
                          : isXlmRoberta(spec.architecture) ? writeUnigramTokenizer(dir)
                                                             : writeTokenizerFiles(dir, spec.words, spec.vocabularySize);
    const int64_t hidden = spec.hiddenSize;
    const int64_t intermediate = spec.intermediateSize;
    const std::string familyName = bert ? "bert" : "roberta";
    // Module names below start with `family` + "."; a bare model saved without its prefix has none.
    const bool bare = isBareModel(spec.architecture) && spec.bareTensorNames;
    const std::string family = bare ? std::string() : familyName;
    auto named = [&](const std::string& name) { return bare ? name.substr(1) : name; }; // drops the leading "."
    const int typeVocabSize = bert ? 2 : 1;

    TinyWeightsBuilder builder(spec);
    builder.normal(named(family + ".embeddings.word_embeddings.weight"), {vocabSize, hidden}, kEmbeddingStd);
    builder.scaleColumns(builder.last());
    builder.normal(named(family + ".embeddings.position_embeddings.weight"), {spec.maxPositionEmbeddings, hidden},
                   kEmbeddingStd);
    builder.normal(named(family + ".embeddings.token_type_embeddings.weight"), {typeVocabSize, hidden}, kEmbeddingStd);
    builder.layerNorm(named(family + ".embeddings.LayerNorm"), hidden);
    for (int layer = 0; layer < spec.numLayers; ++layer) {
        const std::string prefix = named(family + ".encoder.layer." + std::to_string(layer) + ".");
        builder.linear(prefix + "attention.self.query", hidden, hidden, kLinearStd, true);
        builder.linear(prefix + "attention.self.key", hidden, hidden, kLinearStd, true);
        builder.linear(prefix + "attention.self.value", hidden, hidden, kLinearStd, true);
        builder.linear(prefix + "attention.output.dense", hidden, hidden, kLinearStd, true);
        builder.layerNorm(prefix + "attention.output.LayerNorm", hidden);
        builder.linear(prefix + "intermediate.dense", intermediate, hidden, kLinearStd, true);
        builder.linear(prefix + "output.dense", hidden, intermediate, kLinearStd, true);
        builder.layerNorm(prefix + "output.LayerNorm", hidden);
    }
    if (endsWith(spec.architecture, "ForQuestionAnswering")) {
        builder.linear("qa_outputs", 2, hidden, kQaOutputsStd, false);
    } else if (isBareModel(spec.architecture)) {
        builder.linear(named(family + ".pooler.dense"), hidden, hidden, kLinearStd, false); // saved, never run
    } else if (isClassifier(spec.architecture) && bert) {
        builder.linear("bert.pooler.dense", hidden, hidden, kLinearStd, false);
        builder.linear("classifier", spec.numLabels, hidden, kQaOutputsStd, false);
    } else if (isClassifier(spec.architecture)) {
        builder.linear("classifier.dense", hidden, hidden, kLinearStd, false);
        builder.linear("classifier.out_proj", spec.numLabels, hidden, kQaOutputsStd, false);
    } else if (bert) {
        // The decoder weight is tied to the word embeddings and left out, as Hugging Face saves it;
        // its bias is the head's shared cls.predictions.bias.
        builder.linear("cls.predictions.transform.dense", hidden, hidden, kLinearStd, false);
        builder.layerNorm("cls.predictions.transform.LayerNorm", hidden);
        if (spec.untiedDecoder)
            builder.normal("cls.predictions.decoder.weight", {vocabSize, hidden}, kLinearStd);
        builder.normal("cls.predictions.bias", {vocabSize}, spec.decoderBiasStd);
    } else {
        // The decoder weight is tied to the word embeddings and left out, as Hugging Face saves it.
        builder.linear("lm_head.dense", hidden, hidden, kLinearStd, false);
        builder.layerNorm("lm_head.layer_norm", hidden);
        if (spec.untiedDecoder)
            builder.normal("lm_head.decoder.weight", {vocabSize, hidden}, kLinearStd);
        builder.normal("lm_head.bias", {vocabSize}, spec.decoderBiasStd);
    }
    writeSafetensors(joinPath(dir, "model.safetensors"), builder.toWrite(), {{"format", "pt"}});
    writeSentenceTransformersFiles(dir, spec);
    if (bert) {
        writeTextFile(joinPath(dir, "config.json"), withClassifierLabels(bertConfig(spec, vocabSize), spec).dump(2) + "\n");
        return;
    }

    nlohmann::ordered_json config = {
        {"architectures", {spec.architecture}},
        {"model_type", isXlmRoberta(spec.architecture) ? "xlm-roberta" : "roberta"},
        {"vocab_size", vocabSize},
        {"hidden_size", spec.hiddenSize},
        {"num_hidden_layers", spec.numLayers},
        {"num_attention_heads", spec.numHeads},
        {"intermediate_size", spec.intermediateSize},
        {"max_position_embeddings", spec.maxPositionEmbeddings},
        {"type_vocab_size", 1},
        {"layer_norm_eps", 1e-5},
        {"pad_token_id", 1},
        {"bos_token_id", 0},
        {"eos_token_id", 2},
        {"hidden_act", "gelu"},
        {"hidden_dropout_prob", 0.1},
        {"attention_probs_dropout_prob", 0.1},
        {"position_embedding_type", "absolute"},
        {"initializer_range", 0.02},
        {"torch_dtype", "float32"}};
    writeTextFile(joinPath(dir, "config.json"), withClassifierLabels(config, spec).dump(2) + "\n");
}

void writeTinyFp8Checkpoint(const std::string& floatDir, const std::string& fp8Dir, const Fp8Scheme& scheme,
                            const std::vector<int64_t>& calibrationIds, const Fp8Edits& edits)
{
    if (scheme.weights != "channel" && scheme.weights != "tensor" && scheme.weights != "block" &&
        scheme.weights != "mxfp8")
        throw Error("The FP8 fixture's weight strategy must be channel, tensor, block or mxfp8, not '" + scheme.weights +
                    "'.");
    if (scheme.activations != "token" && scheme.activations != "tensor" && scheme.activations != "group" &&
        scheme.activations != "mxfp8" && scheme.activations != "none")
        throw Error("The FP8 fixture's activation strategy must be token, tensor, group, mxfp8 or none, not '" +
                    scheme.activations + "'.");
    const bool mxfp8 = scheme.weights == "mxfp8";
    const Dtype scaleDtype = scaleDtypeOf(scheme.scaleDtype);

    const std::string configPath = joinPath(floatDir, "config.json");
    nlohmann::ordered_json config = nlohmann::ordered_json::parse(readFileToString(configPath));
    const int numLayers = config.value("num_hidden_layers", 0);
    const std::string architecture = config["architectures"][0].get<std::string>();
    const bool bert = isBert(architecture);
    const std::unique_ptr<TensorStore> store = TensorStore::openDirectory(floatDir);
    // A bare model saved without its prefix names its modules without it, and so does its config.
    const bool bare = isBareModel(architecture) && store->find("embeddings.word_embeddings.weight") != nullptr;
    const std::string prefix = bare ? std::string() : std::string(bert ? "bert." : "roberta.");
    std::set<std::string> quantizedModules;
    for (int layer = 0; layer < numLayers; ++layer)
        for (const char* linear : kEncoderLinears)
            quantizedModules.insert(prefix + "encoder.layer." + std::to_string(layer) + "." + linear);
    if (edits.quantizeClassifierHead && isClassifier(architecture))
        for (const char* module : bert ? kBertClassifierHead : kRobertaClassifierHead)
            quantizedModules.insert(module);
    if (edits.quantizeMaskedLmHead)
        for (const char* module : bert ? kBertMaskedLmHead : kRobertaMaskedLmHead)
            quantizedModules.insert(module); // a tied decoder has no stored weight and stays float
    for (const std::string& module : edits.keepFloat)
        quantizedModules.erase(module);
    const std::string embeddingModule = prefix + "embeddings.word_embeddings";
    if (!edits.embeddingWeights.empty()) {
        if (edits.embeddingWeights != "channel" && edits.embeddingWeights != "tensor")
            throw Error("The FP8 fixture's embedding strategy must be channel or tensor, not '" + edits.embeddingWeights + "'.");
        quantizedModules.insert(embeddingModule);
    }

    std::map<std::string, ReferenceTensor> calibration;
    if (scheme.activations == "tensor")
        calibration = referenceForward(floatDir, calibrationIds, "dequant");

    std::vector<TensorToWrite> out;
    for (const TensorView* view : store->tensors()) {
        const FloatTensor values = view->toFloat();
        const std::string suffix = ".weight";
        const bool isWeight = view->name.size() > suffix.size() &&
                              view->name.compare(view->name.size() - suffix.size(), suffix.size(), suffix) == 0;
        const std::string module = isWeight ? view->name.substr(0, view->name.size() - suffix.size()) : "";
        if (!isWeight || quantizedModules.count(module) == 0) {
            out.push_back(makeF32Tensor(view->name, values));
            continue;
        }
        if (view->shape.size() != 2)
            throw Error("Tensor '" + view->name + "' in " + floatDir + " is not a matrix.");
        const int64_t rows = view->shape[0];
        const int64_t columns = view->shape[1];
        const bool embedding = module == embeddingModule;
        const std::string& strategy = embedding ? edits.embeddingWeights : scheme.weights;

        // The scale of each weight element's scale group: its row (channel), the tensor, or its
        // block (row / blockRows, column / blockColumns).
        // MXFP8: each run of 32 input channels of a row (the embedding table keeps its own strategy).
        const bool mxfp8Weight = mxfp8 && !embedding;
        const int64_t groupRows = strategy == "block" ? scheme.blockRows : strategy == "channel" || mxfp8Weight ? 1 : rows;
        const int64_t groupColumns = strategy == "block" ? scheme.blockColumns : mxfp8Weight ? kMxfp8Block : columns;
        const int64_t gridColumns = (columns + groupColumns - 1) / groupColumns;
        const int64_t gridRows = (rows + groupRows - 1) / groupRows;
        std::vector<float> amax(static_cast<std::size_t>(gridRows * gridColumns), 0.0f);
        auto groupOf = [&](int64_t r, int64_t c) {
            return static_cast<std::size_t>((r / groupRows) * gridColumns + c / groupColumns);
        };
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t c = 0; c < columns; ++c)
                amax[groupOf(r, c)] =
                    std::max(amax[groupOf(r, c)], std::fabs(values.values[static_cast<std::size_t>(r * columns + c)]));
        std::vector<float> scales;
        std::vector<uint8_t> exponents; // MXFP8: the E8M0 bytes written for the scales
        for (float m : amax) {
            if (mxfp8Weight) {
                exponents.push_back(referenceMxfp8Exponent(m));
                scales.push_back(std::ldexp(1.0f, int(exponents.back()) - 127));
            } else {
                scales.push_back(narrowTo(scaleDtype, scaleFromAmax(m)));
            }
        }

        TensorToWrite weight{view->name, Dtype::F8_E4M3, view->shape, {}};
        weight.bytes.resize(values.values.size());
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t c = 0; c < columns; ++c) {
                const std::size_t index = static_cast<std::size_t>(r * columns + c);
                weight.bytes[index] = encodeE4M3Value(referenceRoundToE4M3(values.values[index] / scales[groupOf(r, c)]));
            }
        out.push_back(std::move(weight));
        const std::vector<int64_t> scaleShape = strategy == "block" || mxfp8Weight ? std::vector<int64_t>{gridRows, gridColumns}
                                                : strategy == "channel" ? std::vector<int64_t>{rows, 1}
                                                : embedding && edits.embeddingScalarScale ? std::vector<int64_t>{}
                                                                        : std::vector<int64_t>{1};
        if (mxfp8Weight) // U8 [out, in / 32], as compressed-tensors' MXFP8 compressor writes it
            out.push_back(TensorToWrite{module + ".weight_scale", Dtype::U8, scaleShape, exponents});
        else
            out.push_back(makeFloatTensor(module + ".weight_scale", scaleDtype, scaleShape, scales.data()));

        if (scheme.activations == "tensor" && !embedding) { // an embedding lookup has no input to calibrate
            const auto input = calibration.find(module + ".input");
            if (input == calibration.end())
                throw Error("The calibration forward over " + floatDir + " did not capture the input of " + module +
                            ".");
            float amax = 0.0f;
            for (float v : input->second.values)
                amax = std::max(amax, std::fabs(v));
            const auto factor = edits.inputScaleFactors.find(module);
            const float inputScale = narrowTo(scaleDtype, scaleFromAmax(amax) *
                                                              (factor == edits.inputScaleFactors.end() ? 1.0f : factor->second));
            out.push_back(makeFloatTensor(module + ".input_scale", scaleDtype, {1}, &inputScale));
        }
    }

    ensureDirectory(fp8Dir);
    config["quantization_config"] = quantizationConfig(scheme, bert, edits);
    if (isClassifier(architecture) && !edits.quantizeClassifierHead) // the head stays float, by name
        for (const char* module : bert ? kBertClassifierHead : kRobertaClassifierHead)
            config["quantization_config"]["ignore"].push_back(module);
    writeSafetensors(joinPath(fp8Dir, "model.safetensors"), out, {{"format", "pt"}});
    writeTextFile(joinPath(fp8Dir, "config.json"), config.dump(2) + "\n");
    for (const char* file : {"vocab.json", "merges.txt", "vocab.txt", "tokenizer.json", "tokenizer_config.json", "modules.json",
                             "sentence_bert_config.json", "config_sentence_transformers.json"})
        if (fileExists(joinPath(floatDir, file)))
            copyFile(joinPath(floatDir, file), joinPath(fp8Dir, file));
    for (const char* folder : {"1_Pooling", "2_Normalize"})
        if (directoryExists(joinPath(floatDir, folder)))
            std::filesystem::copy(joinPath(floatDir, folder), joinPath(fp8Dir, folder),
                                  std::filesystem::copy_options::recursive);
}

void storeFloatTensorsAs(const std::string& dir, const std::string& dtype)
{
    const Dtype target = scaleDtypeOf(dtype);
    std::vector<TensorToWrite> tensors;
    {
        const std::unique_ptr<TensorStore> store = TensorStore::openDirectory(dir);
        for (const TensorView* view : store->tensors()) {
            if (view->dtype == Dtype::F32) {
                tensors.push_back(makeFloatTensor(view->name, target, view->shape, view->toFloat().values.data()));
                continue;
            }
            TensorToWrite copy{view->name, view->dtype, view->shape, {}};
            copy.bytes.assign(view->data, view->data + view->byteSize);
            tensors.push_back(std::move(copy));
        }
    }
    writeSafetensors(joinPath(dir, "model.safetensors"), tensors, {{"format", "pt"}});
    const std::string configPath = joinPath(dir, "config.json");
    nlohmann::ordered_json config = nlohmann::ordered_json::parse(readFileToString(configPath));
    config["torch_dtype"] = target == Dtype::BF16 ? "bfloat16" : target == Dtype::F16 ? "float16" : "float32";
    writeTextFile(configPath, config.dump(2) + "\n");
}

void copyCheckpoint(const std::string& sourceDir, const std::string& destinationDir)
{
    std::filesystem::copy(sourceDir, destinationDir, std::filesystem::copy_options::recursive);
}

void editTensorBytes(const std::string& dir, const std::string& tensorName,
                     const std::function<void(std::vector<uint8_t>& bytes)>& edit)
{
    std::vector<TensorToWrite> tensors;
    bool found = false;
    {
        const std::unique_ptr<TensorStore> store = TensorStore::openDirectory(dir);
        for (const TensorView* view : store->tensors()) {
            TensorToWrite copy{view->name, view->dtype, view->shape, {}};
            copy.bytes.assign(view->data, view->data + view->byteSize);
            if (view->name == tensorName) {
                edit(copy.bytes);
                found = true;
            }
            tensors.push_back(std::move(copy));
        }
    }
    if (!found)
        throw Error("Tensor '" + tensorName + "' is missing from " + dir + ".");
    writeSafetensors(joinPath(dir, "model.safetensors"), tensors, {{"format", "pt"}});
}

namespace {

// The folders makeTempDir made, removed when the test process ends: a full ctest run made about
// a thousand (1.5 GB) and left every one in /tmp. Only by the process that made them: a forked
// child that returned through exit() would otherwise remove its parent's folders under it.
class TempDirsOfThisProcess {
public:
    void add(const std::string& path)
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        paths_.push_back(path);
    }
    ~TempDirsOfThisProcess()
    {
        if (::getpid() != owner_)
            return;
        for (const std::string& path : paths_) {
            std::error_code ignored; // a folder a test made unremovable stays; the run goes on
            std::filesystem::remove_all(path, ignored); // links are removed, never followed
        }
    }

private:
    const pid_t owner_ = ::getpid();
    std::mutex mutex_;
    std::vector<std::string> paths_;
};

TempDirsOfThisProcess& tempDirsOfThisProcess()
{
    static TempDirsOfThisProcess dirs;
    return dirs;
}

} // namespace

std::string makeTempDir(const std::string& prefix)
{
    QTemporaryDir dir(QDir::tempPath() + "/" + QString::fromStdString(prefix) + "-XXXXXX");
    if (!dir.isValid())
        throw Error("Cannot create a temporary folder under " + QDir::tempPath().toStdString() + ": " +
                    dir.errorString().toStdString() + ".");
    dir.setAutoRemove(false); // the whole test may use it; removed at the process's end
    tempDirsOfThisProcess().add(dir.path().toStdString());
    return dir.path().toStdString();
}

namespace {

nlohmann::json argsAsWritten018(const nlohmann::json& args, bool inputActivations, const std::string& scaleDtype,
                                bool blockStructureAsText)
{
    if (args.is_null())
        return nullptr;
    const bool dynamic = args.value("dynamic", false);
    nlohmann::json blockStructure = args.contains("block_structure") ? args["block_structure"] : nlohmann::json(nullptr);
    if (blockStructureAsText && blockStructure.is_array())
        blockStructure = std::to_string(blockStructure[0].get<int>()) + "x" + std::to_string(blockStructure[1].get<int>());
    return {{"num_bits", args.value("num_bits", 8)},
            {"type", args.value("type", "int")},
            {"symmetric", args.value("symmetric", true)},
            {"group_size", args.contains("group_size") ? args["group_size"] : nlohmann::json(nullptr)},
            {"strategy", args["strategy"]},
            {"block_structure", blockStructure},
            {"dynamic", dynamic},
            {"actorder", nullptr},
            {"scale_dtype", scaleDtype.empty() ? nlohmann::json(nullptr) : nlohmann::json(scaleDtype)},
            {"zp_dtype", nullptr},
            {"observer", dynamic ? nlohmann::json(nullptr)
                                 : nlohmann::json(inputActivations ? "static_minmax" : "memoryless_minmax")},
            {"observer_kwargs", nlohmann::json::object()}};
}

} // namespace

void rewriteConfigAsCompressedTensors018(const std::string& fp8Dir, const CompressedTensors018& options)
{
    const std::string path = fp8Dir + "/config.json";
    nlohmann::json config = nlohmann::json::parse(readFileToString(path)); // sorted keys, as json.dump(sort_keys=True)
    const nlohmann::json old = config.at("quantization_config");
    nlohmann::json groups = nlohmann::json::object();
    for (auto it = old.at("config_groups").begin(); it != old.at("config_groups").end(); ++it) {
        const nlohmann::json& group = it.value();
        groups[it.key()] = {
            {"targets", group.at("targets")},
            {"weights", argsAsWritten018(group.value("weights", nlohmann::json()), false, options.weightScaleDtype,
                                         options.blockStructureAsText)},
            {"input_activations", argsAsWritten018(group.value("input_activations", nlohmann::json()), true,
                                                   options.activationScaleDtype, false)},
            {"output_activations", nullptr},
            {"format", group.value("format", old.value("format", std::string("float-quantized")))}};
    }
    nlohmann::json written = {{"version", options.version},
                              {"quant_method", "compressed-tensors"},
                              {"sparsity_config", nlohmann::json::object()},
                              {"transform_config", nlohmann::json::parse(options.transformConfigJson)},
                              {"config_groups", groups},
                              {"format", old.value("format", std::string("float-quantized"))},
                              {"global_compression_ratio", nullptr},
                              {"ignore", old.at("ignore")},
                              {"kv_cache_scheme", nullptr}};
    if (!options.status.empty())
        written["quantization_status"] = options.status;
    config["quantization_config"] = written;
    if (config.contains("torch_dtype")) {
        config["dtype"] = config["torch_dtype"];
        config.erase("torch_dtype");
    }
    writeTextFile(path, config.dump(2) + "\n");
}

void scaleLinearRow(const std::string& floatDir, const std::string& module, int64_t row, float factor)
{
    std::vector<TensorToWrite> tensors;
    {
        const std::unique_ptr<TensorStore> store = TensorStore::openDirectory(floatDir);
        for (const TensorView* view : store->tensors()) {
            FloatTensor values = view->toFloat();
            const int64_t width = view->shape.size() == 2 ? view->shape[1] : 1;
            if (view->name == module + ".weight" || view->name == module + ".bias")
                for (int64_t i = 0; i < width; ++i)
                    values.values[static_cast<std::size_t>(row * width + i)] *= factor;
            tensors.push_back(makeF32Tensor(view->name, values));
        }
    }
    writeSafetensors(joinPath(floatDir, "model.safetensors"), tensors);
}

void plantOutputPeak(const std::string& floatDir, const std::string& module, const std::vector<int64_t>& ids,
                     float peak)
{
    const auto forward = referenceForward(floatDir, ids, "dequant");
    const ReferenceTensor& y = forward.at(module + ".output");
    float largest = 0;
    for (int64_t t = 0; t < y.shape[1]; ++t)
        largest = std::max(largest, std::fabs(y.values[static_cast<std::size_t>(t * y.shape[2])]));
    scaleLinearRow(floatDir, module, 0, peak / largest);
}

} // namespace scalescope::testing
