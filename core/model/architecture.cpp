#include "model/architecture.h"

#include <algorithm>

#include "common/error.h"

namespace scalescope {
namespace {

// What differs between encoder families. Everything else (six Linears per layer, their shapes,
// LayerNorm placement) is shared by RoBERTa and BERT.
struct FamilyTable {
    const char* prefix;               // module prefix of the encoder: "roberta"
    bool positionsAfterPad;           // positions start at pad_token_id + 1 and skip padding
    SpecialTokenTexts specials;
    int specialTokensInPair;
    const char* lmDense;              // MaskedLM head
    const char* lmNorm;
    const char* lmDecoder;
    std::vector<std::string> decoderBiases;
    std::vector<std::string> quantizeIgnore;
};

const FamilyTable& robertaFamily()
{
    static const FamilyTable table{
        "roberta", true, {"<s>", "</s>", "<mask>"}, 4,
        "lm_head.dense", "lm_head.layer_norm", "lm_head.decoder",
        {"lm_head.decoder.bias", "lm_head.bias"},
        {"lm_head", "re:lm_head\\..*", "qa_outputs"},
    };
    return table;
}

// BERT: positions from 0, two token types, [CLS] A [SEP] B [SEP], the MLM head under cls.predictions
// (its decoder tied to the word embeddings when absent, its bias shared as cls.predictions.bias).
const FamilyTable& bertFamily()
{
    static const FamilyTable table{
        "bert", false, {"[CLS]", "[SEP]", "[MASK]"}, 3,
        "cls.predictions.transform.dense", "cls.predictions.transform.LayerNorm", "cls.predictions.decoder",
        {"cls.predictions.decoder.bias", "cls.predictions.bias"},
        {"re:cls\\..*", "qa_outputs"},
    };
    return table;
}

std::vector<const FamilyTable*> allFamilies()
{
    return {&robertaFamily(), &bertFamily()};
}

struct ArchitectureEntry {
    Architecture architecture;
    const FamilyTable& family;
    HeadKind head;
};

ArchitectureEntry entryOf(Architecture architecture)
{
    switch (architecture) {
    case Architecture::RobertaForQuestionAnswering:
        return {architecture, robertaFamily(), HeadKind::QuestionAnswering};
    case Architecture::RobertaForMaskedLM:
        return {architecture, robertaFamily(), HeadKind::MaskedLM};
    case Architecture::BertForQuestionAnswering:
        return {architecture, bertFamily(), HeadKind::QuestionAnswering};
    case Architecture::BertForMaskedLM:
        return {architecture, bertFamily(), HeadKind::MaskedLM};
    }
    throw Error("Unknown architecture.");
}

struct EncoderLinearSpec {
    const char* suffix;
    LinearRole role;
    const char* label;
    bool inIsIntermediate;
    bool outIsIntermediate;
};

// The six Linears of an encoder layer in execution order.
const EncoderLinearSpec kEncoderLinears[] = {
    {"attention.self.query", LinearRole::Query, "q", false, false},
    {"attention.self.key", LinearRole::Key, "k", false, false},
    {"attention.self.value", LinearRole::Value, "v", false, false},
    {"attention.output.dense", LinearRole::AttentionOutput, "attn.out", false, false},
    {"intermediate.dense", LinearRole::Intermediate, "ffn.in", false, true},
    {"output.dense", LinearRole::Output, "ffn.out", true, false},
};

// The digits after `prefix` at the start of `name`, or -1.
int indexAfter(const std::string& name, const std::string& prefix)
{
    if (name.compare(0, prefix.size(), prefix) != 0)
        return -1;
    std::size_t end = prefix.size();
    long index = 0;
    bool digits = false;
    while (end < name.size() && name[end] >= '0' && name[end] <= '9' && index < 1'000'000) {
        index = index * 10 + (name[end] - '0');
        digits = true;
        ++end;
    }
    if (!digits || (end < name.size() && name[end] != '.'))
        return -1;
    return static_cast<int>(index);
}

} // namespace

EncoderLayout::EncoderLayout(const ModelConfig& config)
{
    const ArchitectureEntry entry = entryOf(config.architecture);
    const FamilyTable& family = entry.family;
    architecture_ = config.architecture;
    head_ = entry.head;
    prefix_ = family.prefix;
    numLayers_ = static_cast<int>(config.numLayers);
    specialTokens_ = family.specials;
    specialTokensInPair_ = family.specialTokensInPair;
    positionsSkipPadding_ = family.positionsAfterPad;
    positionOffset_ = family.positionsAfterPad ? config.padTokenId + 1 : 0;
    maxSequenceLength_ = config.maxPositionEmbeddings - positionOffset_;

    const int64_t hidden = config.hiddenSize;
    auto add = [&](LayoutLinear linear) {
        linearIndex_[linear.module] = linears_.size();
        linears_.push_back(std::move(linear));
    };
    capturePoints_.push_back(embeddingsOutput());
    outputModules_.push_back(embeddingsModule());
    auto addLinearPoints = [&](const std::string& module) {
        capturePoints_.push_back(module + ".input");
        capturePoints_.push_back(module + ".output");
        outputModules_.push_back(module);
    };
    for (int layer = 0; layer < numLayers_; ++layer) {
        for (const EncoderLinearSpec& spec : kEncoderLinears) {
            LayoutLinear linear;
            linear.module = layerModule(layer) + "." + spec.suffix;
            linear.role = spec.role;
            linear.layer = layer;
            linear.inFeatures = spec.inIsIntermediate ? config.intermediateSize : hidden;
            linear.outFeatures = spec.outIsIntermediate ? config.intermediateSize : hidden;
            linear.shortLabel = "L" + std::to_string(layer) + "." + spec.label;
            addLinearPoints(linear.module);
            add(std::move(linear));
            if (spec.role == LinearRole::Value)
                outputModules_.push_back(attentionModule(layer));
            else if (spec.role == LinearRole::AttentionOutput)
                outputModules_.push_back(attentionBlockModule(layer));
        }
        capturePoints_.push_back(layerOutput(layer));
        outputModules_.push_back(layerModule(layer));
    }
    auto addHead = [&](const std::string& module, LinearRole role, int64_t out, int64_t in) {
        LayoutLinear linear;
        linear.module = module;
        linear.role = role;
        linear.inFeatures = in;
        linear.outFeatures = out;
        linear.shortLabel = module;
        addLinearPoints(module);
        add(std::move(linear));
    };
    if (head_ == HeadKind::QuestionAnswering) {
        addHead("qa_outputs", LinearRole::QaOutputs, 2, hidden);
    } else {
        addHead(family.lmDense, LinearRole::LmDense, hidden, hidden);
        addHead(family.lmDecoder, LinearRole::LmDecoder, config.vocabSize, hidden);
        linears_.back().hasBias = false;
        linears_.back().tiedWeight = wordEmbeddingsTensor();
    }
}

const LayoutLinear* EncoderLayout::findLinear(const std::string& module) const
{
    const auto it = linearIndex_.find(module);
    return it == linearIndex_.end() ? nullptr : &linears_[it->second];
}

bool EncoderLayout::isEncoderLinear(const std::string& module) const
{
    const LayoutLinear* linear = findLinear(module);
    return linear && linear->layer >= 0;
}

std::vector<std::string> EncoderLayout::linearModules() const
{
    std::vector<std::string> modules;
    modules.reserve(linears_.size());
    for (const LayoutLinear& linear : linears_)
        modules.push_back(linear.module);
    return modules;
}

int EncoderLayout::layerOf(const std::string& name) const
{
    return indexAfter(name, prefix_ + ".encoder.layer.");
}

std::string EncoderLayout::shortLabel(const std::string& module) const
{
    const LayoutLinear* linear = findLinear(module);
    return linear ? linear->shortLabel : module;
}

namespace {

const char* roleWords(LinearRole role)
{
    switch (role) {
    case LinearRole::Query: return "attention query";
    case LinearRole::Key: return "attention key";
    case LinearRole::Value: return "attention value";
    case LinearRole::AttentionOutput: return "attention output";
    case LinearRole::Intermediate: return "FFN up-projection";
    case LinearRole::Output: return "FFN output";
    case LinearRole::QaOutputs: return "QA head";
    case LinearRole::LmDense: return "MLM head transform";
    case LinearRole::LmDecoder: return "MLM head decoder";
    }
    return "Linear";
}

} // namespace

std::string EncoderLayout::describeModule(const std::string& module) const
{
    std::string words;
    if (const LayoutLinear* linear = findLinear(module))
        words = linear->layer >= 0 ? "layer " + std::to_string(linear->layer) + " " + roleWords(linear->role)
                                   : std::string("the ") + roleWords(linear->role);
    else if (module == embeddingsModule())
        words = "the embeddings output";
    for (int layer = 0; words.empty() && layer < numLayers_; ++layer) {
        const std::string number = std::to_string(layer);
        if (module == layerModule(layer))
            words = "layer " + number + " output";
        else if (module == attentionModule(layer))
            words = "layer " + number + " self-attention (scores, probabilities, context)";
        else if (module == attentionBlockModule(layer))
            words = "layer " + number + " attention block output (after its LayerNorm)";
    }
    return words.empty() ? module : words + " (" + module + ")";
}

std::string EncoderLayout::embeddingsModule() const { return prefix_ + ".embeddings"; }
std::string EncoderLayout::embeddingsOutput() const { return embeddingsModule() + ".output"; }
std::string EncoderLayout::layerModule(int layer) const { return prefix_ + ".encoder.layer." + std::to_string(layer); }
std::string EncoderLayout::layerOutput(int layer) const { return layerModule(layer) + ".output"; }
std::string EncoderLayout::attentionModule(int layer) const { return layerModule(layer) + ".attention.self"; }
std::string EncoderLayout::attentionBlockModule(int layer) const { return layerModule(layer) + ".attention.output"; }

std::string EncoderLayout::outputModuleLabel(const std::string& module) const
{
    if (findLinear(module))
        return shortLabel(module);
    if (module == embeddingsModule())
        return "emb";
    for (int layer = 0; layer < numLayers_; ++layer) {
        const std::string label = "L" + std::to_string(layer);
        if (module == layerModule(layer))
            return label;
        if (module == attentionModule(layer))
            return label + ".attn";
        if (module == attentionBlockModule(layer))
            return label + ".attn.norm";
    }
    return module;
}

std::size_t EncoderLayout::outputModuleIndex(const std::string& module) const
{
    return static_cast<std::size_t>(std::find(outputModules_.begin(), outputModules_.end(), module) -
                                    outputModules_.begin());
}

std::string EncoderLayout::wordEmbeddingsTensor() const { return embeddingsModule() + ".word_embeddings.weight"; }
std::string EncoderLayout::positionEmbeddingsTensor() const { return embeddingsModule() + ".position_embeddings.weight"; }
std::string EncoderLayout::tokenTypeEmbeddingsTensor() const { return embeddingsModule() + ".token_type_embeddings.weight"; }
std::string EncoderLayout::embeddingNormPrefix() const { return embeddingsModule() + ".LayerNorm"; }
std::string EncoderLayout::attentionNormPrefix(int layer) const { return layerModule(layer) + ".attention.output.LayerNorm"; }
std::string EncoderLayout::outputNormPrefix(int layer) const { return layerModule(layer) + ".output.LayerNorm"; }
std::string EncoderLayout::lmHeadNormPrefix() const { return entryOf(architecture_).family.lmNorm; }

std::vector<std::string> EncoderLayout::decoderBiasTensors() const
{
    return entryOf(architecture_).family.decoderBiases;
}

std::string withMaskToken(const std::string& text, const std::string& maskToken)
{
    std::string out = text;
    for (const FamilyTable* family : allFamilies()) {
        const std::string& from = family->specials.mask;
        if (from.empty() || from == maskToken)
            continue;
        for (std::size_t at = out.find(from); at != std::string::npos; at = out.find(from, at + maskToken.size()))
            out.replace(at, from.size(), maskToken);
    }
    return out;
}

std::vector<std::string> EncoderLayout::quantizeIgnoreList() const
{
    return entryOf(architecture_).family.quantizeIgnore;
}

} // namespace scalescope
