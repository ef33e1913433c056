#include "model/architecture.h"

#include <algorithm>
#include <deque>

#include "common/error.h"
#include "common/text_files.h"
#include "io/safetensors.h"

namespace scalescope {

const std::vector<EncoderLinearPattern>& bertStyleEncoderLinears()
{
    // In execution order. fms keeps q, k and v as one Linear by default (fused_weights=True).
    static const std::vector<EncoderLinearPattern> linears{
        {LinearRole::Query, "attention.self.query", "attn.in_proj.query", "attn.in_proj.qkv_fused", "q", false, false},
        {LinearRole::Key, "attention.self.key", "attn.in_proj.key", "attn.in_proj.qkv_fused", "k", false, false},
        {LinearRole::Value, "attention.self.value", "attn.in_proj.value", "attn.in_proj.qkv_fused", "v", false, false},
        {LinearRole::AttentionOutput, "attention.output.dense", "attn.dense", "attn.dense", "attn.out", false, false},
        {LinearRole::Intermediate, "intermediate.dense", "ff_sub_layer.w1", "ff_sub_layer.w1", "ffn.in", false, true},
        {LinearRole::Output, "output.dense", "ff_sub_layer.w2", "ff_sub_layer.w2", "ffn.out", true, false},
    };
    return linears;
}

HeadDefinition questionAnsweringHead()
{
    HeadDefinition head;
    head.kind = HeadKind::QuestionAnswering;
    head.linears = {{LinearRole::QaOutputs, "qa_outputs", "qa_head", false, HeadWidth::SpanEnds, {}}};
    head.steps = {{HeadStepKind::Linear, "qa_outputs"}};
    head.outputs = {{"start_logits", FinalOutputKind::TokenScores, 0}, {"end_logits", FinalOutputKind::TokenScores, 1}};
    head.finalPoint = "qa_logits"; // device_check.h kQaLogitsPoint
    return head;
}

HeadDefinition maskedLmHead(HeadLinearPattern transform, const std::string& norm, HeadLinearPattern decoder,
                            std::vector<std::string> decoderBias)
{
    HeadDefinition head;
    head.kind = HeadKind::MaskedLM;
    transform.out = HeadWidth::Hidden;
    decoder.out = HeadWidth::Vocabulary;
    decoder.tiedToWordEmbeddings = true;
    decoder.biasTensors = std::move(decoderBias);
    head.steps = {{HeadStepKind::GatherLogitPositions, ""}, {HeadStepKind::Linear, transform.hfModule},
                  {HeadStepKind::Gelu, ""},                 {HeadStepKind::LayerNorm, norm},
                  {HeadStepKind::Linear, decoder.hfModule}};
    head.linears = {std::move(transform), std::move(decoder)};
    head.outputs = {{"logits", FinalOutputKind::TokenLogits, -1}};
    head.finalPoint = "logits"; // device_check.h kMaskedLmLogitsPoint
    return head;
}

HeadDefinition embeddingHead()
{
    HeadDefinition head;
    head.kind = HeadKind::Embedding;
    head.steps = {{HeadStepKind::PoolFirstToken, ""}};
    head.outputs = {{"pooled", FinalOutputKind::Vector, -1}};
    head.finalPoint = "pooled";
    return head;
}

HeadDefinition sequenceClassificationHead(HeadLinearPattern dense, HeadLinearPattern output)
{
    HeadDefinition head;
    head.kind = HeadKind::SequenceClassification;
    dense.role = LinearRole::ClassifierDense;
    dense.out = HeadWidth::Hidden;
    output.role = LinearRole::ClassifierOutput;
    output.out = HeadWidth::Labels;
    head.steps = {{HeadStepKind::PoolFirstToken, ""}, {HeadStepKind::Linear, dense.hfModule},
                  {HeadStepKind::Tanh, ""},           {HeadStepKind::Linear, output.hfModule}};
    head.linears = {std::move(dense), std::move(output)};
    head.outputs = {{"logits", FinalOutputKind::SequenceLogits, -1}};
    head.finalPoint = "logits";
    return head;
}

bool holdsDistributions(FinalOutputKind kind)
{
    return kind == FinalOutputKind::TokenScores || kind == FinalOutputKind::TokenLogits ||
           kind == FinalOutputKind::SequenceLogits;
}

const HeadDefinition* EncoderFamily::head(HeadKind kind) const
{
    for (const HeadDefinition& definition : heads)
        if (definition.kind == kind)
            return &definition;
    return nullptr;
}

namespace {

// RoBERTa: positions after pad_token_id, byte-level BPE, <s> A </s></s> B </s>, the MLM head under
// lm_head (its decoder tied to the word embeddings when absent, its bias also stored as lm_head.bias).
EncoderFamily robertaFamily()
{
    EncoderFamily family;
    family.name = "roberta";
    family.prefix = "roberta";
    family.classes = {{"RobertaForQuestionAnswering", HeadKind::QuestionAnswering, "roberta_question_answering"},
                      {"RobertaForMaskedLM", HeadKind::MaskedLM, "roberta"},
                      {"RobertaForSequenceClassification", HeadKind::SequenceClassification, "roberta_classification"},
                      {"RobertaModel", HeadKind::Embedding, ""}};
    family.tokenizer = TokenizerKind::BytePairEncoding;
    family.defaultTypeVocabSize = 1;
    family.defaultLayerNormEps = 1e-5;
    family.defaultPadTokenId = 1;
    family.positionsAfterPad = true;
    family.specials = {"<s>", "</s>", "<mask>"};
    family.specialTokensInPair = 4;
    family.encoderLinears = bertStyleEncoderLinears();
    family.heads = {questionAnsweringHead(),
                    maskedLmHead({LinearRole::LmDense, "lm_head.dense", "classification_head.dense", false, HeadWidth::Hidden, {}},
                                 "lm_head.layer_norm",
                                 {LinearRole::LmDecoder, "lm_head.decoder", "classification_head.head", true, HeadWidth::Vocabulary, {}},
                                 {"lm_head.decoder.bias", "lm_head.bias"}),
                    // fms roberta_classification: classifier.dense and .out_proj become classification_head.dense and .head.
                    sequenceClassificationHead({LinearRole::ClassifierDense, "classifier.dense", "classification_head.dense", false, HeadWidth::Hidden, {}},
                                               {LinearRole::ClassifierOutput, "classifier.out_proj", "classification_head.head", false, HeadWidth::Labels, {}}),
                    embeddingHead()};
    family.poolerModule = "roberta.pooler.dense";
    family.quantizeIgnore = {"lm_head", "re:lm_head\\..*", "qa_outputs", "re:classifier\\..*"};
    return family;
}

// XLM-RoBERTa: RoBERTa's graph, prefix and head names (positions after pad_token_id, the roberta.
// prefix, lm_head, classifier.dense/out_proj), with a Unigram SentencePiece tokenizer in fairseq's
// id order. fms has no model of its own for it; its RoBERTa classes build the same graph.
EncoderFamily xlmRobertaFamily()
{
    EncoderFamily family = robertaFamily();
    family.name = "xlm-roberta";
    family.classes = {{"XLMRobertaForQuestionAnswering", HeadKind::QuestionAnswering, "roberta_question_answering"},
                      {"XLMRobertaForMaskedLM", HeadKind::MaskedLM, "roberta"},
                      {"XLMRobertaForSequenceClassification", HeadKind::SequenceClassification, "roberta_classification"},
                      {"XLMRobertaModel", HeadKind::Embedding, ""}};
    family.tokenizer = TokenizerKind::Unigram;
    return family;
}

// BERT: positions from 0, two token types, WordPiece, [CLS] A [SEP] B [SEP], the MLM head under
// cls.predictions (its decoder tied to the word embeddings when absent, its bias shared as
// cls.predictions.bias). fms has no BERT question-answering model.
EncoderFamily bertFamily()
{
    EncoderFamily family;
    family.name = "bert";
    family.prefix = "bert";
    family.classes = {{"BertForQuestionAnswering", HeadKind::QuestionAnswering, ""},
                      {"BertForMaskedLM", HeadKind::MaskedLM, "bert"},
                      {"BertForSequenceClassification", HeadKind::SequenceClassification, "bert_classification"},
                      {"BertModel", HeadKind::Embedding, ""}};
    family.tokenizer = TokenizerKind::WordPiece;
    family.defaultTypeVocabSize = 2;
    family.defaultLayerNormEps = 1e-12;
    family.defaultPadTokenId = 0;
    family.positionsAfterPad = false;
    family.specials = {"[CLS]", "[SEP]", "[MASK]"};
    family.specialTokensInPair = 3;
    family.encoderLinears = bertStyleEncoderLinears();
    family.heads = {questionAnsweringHead(),
                    maskedLmHead({LinearRole::LmDense, "cls.predictions.transform.dense", "classification_head.dense", false,
                                  HeadWidth::Hidden, {}},
                                 "cls.predictions.transform.LayerNorm",
                                 {LinearRole::LmDecoder, "cls.predictions.decoder", "classification_head.head", true,
                                  HeadWidth::Vocabulary, {}},
                                 {"cls.predictions.decoder.bias", "cls.predictions.bias"}),
                    // BERT's classifier runs the pooler (on [CLS], tanh) before its classifier Linear;
                    // fms bert_classification loads them as classification_head.dense and .head.
                    sequenceClassificationHead({LinearRole::ClassifierDense, "bert.pooler.dense", "classification_head.dense", false, HeadWidth::Hidden, {}},
                                               {LinearRole::ClassifierOutput, "classifier", "classification_head.head", false, HeadWidth::Labels, {}}),
                    embeddingHead()};
    family.poolerModule = "bert.pooler.dense";
    family.quantizeIgnore = {"re:cls\\..*", "qa_outputs", "classifier", "bert.pooler.dense"};
    return family;
}

// Entries live in a deque so that registering one never moves the others (layouts and configs
// hold pointers into it).
struct FamilyRegistry {
    std::deque<EncoderFamily> entries;
    std::vector<const EncoderFamily*> order;

    FamilyRegistry()
    {
        add(robertaFamily());
        add(bertFamily());
        add(xlmRobertaFamily());
    }

    const EncoderFamily& add(EncoderFamily family)
    {
        for (const ModelClass& added : family.classes) {
            if (findArchitectureIn(added.name).modelClass)
                throw Error("The encoder family table already has a model class named " + added.name + ".");
            if (!family.head(added.head))
                throw Error("The encoder family " + family.name + " has no " + headKindName(added.head) +
                            " head for its class " + added.name + ".");
        }
        entries.push_back(std::move(family));
        order.push_back(&entries.back());
        return entries.back();
    }

    Architecture findArchitectureIn(const std::string& className) const
    {
        for (const EncoderFamily* family : order)
            for (const ModelClass& modelClass : family->classes)
                if (modelClass.name == className)
                    return {family, &modelClass};
        return {};
    }
};

FamilyRegistry& registry()
{
    static FamilyRegistry instance;
    return instance;
}

} // namespace

const std::vector<const EncoderFamily*>& encoderFamilies() { return registry().order; }

const EncoderFamily& registerEncoderFamily(EncoderFamily family) { return registry().add(std::move(family)); }

Architecture findArchitecture(const std::string& className) { return registry().findArchitectureIn(className); }

std::string supportedArchitecturesText()
{
    std::vector<std::string> names;
    for (const EncoderFamily* family : encoderFamilies())
        for (const ModelClass& modelClass : family->classes)
            names.push_back(modelClass.name);
    return joinedWords(names, " or ");
}

std::string architecturesWithHeadText(HeadKind head)
{
    std::vector<std::string> names;
    for (const EncoderFamily* family : encoderFamilies())
        for (const ModelClass& modelClass : family->classes)
            if (modelClass.head == head)
                names.push_back(modelClass.name);
    if (names.size() == 2)
        return "a " + names[0] + " checkpoint or a " + names[1] + " one";
    return "a " + joinedWords(names, " or ") + " checkpoint";
}

std::string wrongHeadSentence(const std::string& subjectAndVerb, HeadKind needed, const std::string& who,
                              Architecture is)
{
    return subjectAndVerb + " " + architecturesWithHeadText(needed) + "; " + who + " is " + architectureName(is) + ".";
}

const char* tokenizerKindName(TokenizerKind kind)
{
    switch (kind) {
    case TokenizerKind::WordPiece: return "wordpiece";
    case TokenizerKind::BytePairEncoding: return "bpe";
    case TokenizerKind::Unigram: return "unigram";
    }
    return "?";
}

namespace {

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

bool isPoolingStep(HeadStepKind kind)
{
    return kind == HeadStepKind::PoolFirstToken || kind == HeadStepKind::PoolMean || kind == HeadStepKind::PoolMax ||
           kind == HeadStepKind::PoolMeanSqrtLen;
}

// The family's head as this checkpoint computes it: an embedder pools and normalizes as its
// sentence-transformers modules say; a classifier's logits are one distribution (single-label) or
// independent scores (multi-label, regression, a reranker's one label).
HeadDefinition headForConfig(HeadDefinition head, const ModelConfig& config)
{
    if (head.kind == HeadKind::Embedding) {
        const SentenceEmbeddingConfig& embedding = config.embedding;
        const HeadStepKind pool = embedding.pooling == PoolingMode::Mean  ? HeadStepKind::PoolMean
                                  : embedding.pooling == PoolingMode::Max ? HeadStepKind::PoolMax
                                  : embedding.pooling == PoolingMode::MeanSqrtLen ? HeadStepKind::PoolMeanSqrtLen
                                                                                   : HeadStepKind::PoolFirstToken;
        // The family's own pooling stays when nothing chose one (a bare encoder: CLS).
        const bool chosen = embedding.fromModules || embedding.pooling != PoolingMode::FirstToken;
        for (HeadStep& step : head.steps)
            if (chosen && isPoolingStep(step.kind))
                step.kind = pool;
        if (embedding.normalize)
            head.steps.push_back({HeadStepKind::Normalize, ""});
    }
    if (head.kind == HeadKind::SequenceClassification && config.problem != ClassificationProblem::SingleLabel)
        for (HeadOutput& output : head.outputs)
            output.kind = FinalOutputKind::Scores;
    return head;
}

} // namespace

EncoderLayout::EncoderLayout(const ModelConfig& config)
{
    if (!config.architecture)
        throw Error("The model config names no architecture of the encoder family table.");
    const EncoderFamily& family = *config.architecture.family;
    architecture_ = config.architecture;
    head_ = headForConfig(*family.head(config.architecture.modelClass->head), config);
    hiddenSize_ = config.hiddenSize;
    prefix_ = config.modulePrefix.value_or(family.prefix);
    layerPrefix_ = prefixed(family.layerPath) + ".";
    numLayers_ = static_cast<int>(config.numLayers);
    specialTokens_ = family.specials;
    specialTokensInPair_ = family.specialTokensInPair;
    positionsSkipPadding_ = family.positionsAfterPad;
    positionOffset_ = family.positionsAfterPad ? config.padTokenId + 1 : 0;
    maxSequenceLength_ = config.maxPositionEmbeddings - positionOffset_;

    const int64_t hidden = config.hiddenSize;
    auto add = [&](LayoutLinear linear) {
        if (linear.biasTensors.empty())
            linear.biasTensors = {linear.module + ".bias"};
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
        for (const EncoderLinearPattern& pattern : family.encoderLinears) {
            LayoutLinear linear;
            linear.module = layerModule(layer) + "." + pattern.hfSuffix;
            linear.role = pattern.role;
            linear.layer = layer;
            linear.inFeatures = pattern.inIsIntermediate ? config.intermediateSize : hidden;
            linear.outFeatures = pattern.outIsIntermediate ? config.intermediateSize : hidden;
            linear.shortLabel = "L" + std::to_string(layer) + "." + pattern.label;
            linear.fmsName = family.fmsLayerPrefix + "." + std::to_string(layer) + "." + pattern.fmsSuffix;
            linear.fmsFusedName = family.fmsLayerPrefix + "." + std::to_string(layer) + "." + pattern.fmsFusedSuffix;
            addLinearPoints(linear.module);
            add(std::move(linear));
            if (pattern.role == LinearRole::Value)
                outputModules_.push_back(attentionModule(layer));
            else if (pattern.role == LinearRole::AttentionOutput)
                outputModules_.push_back(attentionBlockModule(layer));
        }
        capturePoints_.push_back(layerOutput(layer));
        outputModules_.push_back(layerModule(layer));
    }
    for (const HeadLinearPattern& pattern : head_.linears) {
        LayoutLinear linear;
        linear.module = pattern.hfModule;
        linear.role = pattern.role;
        linear.inFeatures = hidden;
        linear.outFeatures = pattern.out == HeadWidth::SpanEnds     ? 2
                             : pattern.out == HeadWidth::Vocabulary ? config.vocabSize
                             : pattern.out == HeadWidth::Labels     ? config.numLabels
                                                                    : hidden;
        linear.shortLabel = pattern.hfModule;
        linear.fmsName = pattern.fmsModule;
        linear.fmsFusedName = pattern.fmsModule;
        linear.biasTensors = pattern.biasTensors;
        if (pattern.tiedToWordEmbeddings)
            linear.tiedWeight = wordEmbeddingsTensor();
        addLinearPoints(linear.module);
        add(std::move(linear));
    }
}

bool EncoderLayout::headGathersPositions() const
{
    for (const HeadStep& step : head_.steps)
        if (step.kind == HeadStepKind::GatherLogitPositions)
            return true;
    return false;
}

bool EncoderLayout::headReadsWordEmbeddings() const
{
    for (const HeadLinearPattern& linear : head_.linears)
        if (linear.tiedToWordEmbeddings)
            return true;
    return false;
}

std::vector<std::pair<std::string, std::vector<int64_t>>> EncoderLayout::finalOutputShapes(int64_t batch, int64_t seq,
                                                                                           int64_t gathered) const
{
    // The leading dimensions as the steps leave them, then the last step's width.
    std::vector<int64_t> rows{batch, seq};
    int64_t width = hiddenSize_;
    for (const HeadStep& step : head_.steps) {
        switch (step.kind) {
        case HeadStepKind::Linear:
            width = findLinear(step.module)->outFeatures;
            break;
        case HeadStepKind::GatherLogitPositions:
            if (gathered > 0)
                rows = {gathered};
            break;
        case HeadStepKind::PoolFirstToken:
        case HeadStepKind::PoolMean:
        case HeadStepKind::PoolMax:
        case HeadStepKind::PoolMeanSqrtLen:
            rows = {batch};
            break;
        default:
            break;
        }
    }
    std::vector<std::pair<std::string, std::vector<int64_t>>> shapes;
    for (const HeadOutput& output : head_.outputs) {
        std::vector<int64_t> shape = rows;
        if (output.column < 0)
            shape.push_back(width);
        shapes.emplace_back(output.name, std::move(shape));
    }
    return shapes;
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
    return indexAfter(name, layerPrefix_);
}

std::string EncoderLayout::shortLabel(const std::string& module) const
{
    if (const LayoutLinear* linear = findLinear(module))
        return linear->shortLabel;
    const int layer = layerOf(module);
    if (layer < 0 || layer >= numLayers_)
        return module;
    const std::string label = "L" + std::to_string(layer);
    if (module == keyCastModule(layer))
        return label + ".k.fp8";
    if (module == valueCastModule(layer))
        return label + ".v.fp8";
    if (module == fp8AttentionUnit(layer))
        return label + ".attn.fp8";
    return module;
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
    case LinearRole::ClassifierDense: return "classifier dense";
    case LinearRole::ClassifierOutput: return "classifier output";
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
        else if (module == keyCastModule(layer))
            words = "layer " + number + " K cast to FP8 (AIU attention)";
        else if (module == valueCastModule(layer))
            words = "layer " + number + " V cast to FP8 (AIU attention)";
        else if (module == fp8AttentionUnit(layer))
            words = "the attention of layer " + number + " in FP8";
    }
    return words.empty() ? module : words + " (" + module + ")";
}

std::string EncoderLayout::prefixed(const std::string& relative) const
{
    return prefix_.empty() ? relative : prefix_ + "." + relative;
}

std::string EncoderLayout::embeddingsModule() const { return prefixed("embeddings"); }
std::string EncoderLayout::embeddingsOutput() const { return embeddingsModule() + ".output"; }
std::string EncoderLayout::layerModule(int layer) const { return layerPrefix_ + std::to_string(layer); }
std::string EncoderLayout::layerOutput(int layer) const { return layerModule(layer) + ".output"; }
std::string EncoderLayout::attentionModule(int layer) const { return layerModule(layer) + ".attention.self"; }
std::string EncoderLayout::attentionBlockModule(int layer) const { return layerModule(layer) + ".attention.output"; }
std::string EncoderLayout::keyCastModule(int layer) const { return attentionModule(layer) + ".key_fp8"; }
std::string EncoderLayout::valueCastModule(int layer) const { return attentionModule(layer) + ".value_fp8"; }
std::string EncoderLayout::fp8AttentionUnit(int layer) const { return attentionModule(layer) + ".math_fp8"; }

int EncoderLayout::fp8AttentionLayer(const std::string& name) const
{
    const int layer = layerOf(name);
    return layer >= 0 && layer < numLayers_ && name == fp8AttentionUnit(layer) ? layer : -1;
}

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

std::string EncoderLayout::wordEmbeddingsModule() const { return embeddingsModule() + ".word_embeddings"; }
std::string EncoderLayout::wordEmbeddingsTensor() const { return wordEmbeddingsModule() + ".weight"; }
std::string EncoderLayout::wordEmbeddingsScaleTensor() const { return wordEmbeddingsModule() + ".weight_scale"; }
std::string EncoderLayout::positionEmbeddingsTensor() const { return embeddingsModule() + ".position_embeddings.weight"; }
std::string EncoderLayout::tokenTypeEmbeddingsTensor() const { return embeddingsModule() + ".token_type_embeddings.weight"; }
std::string EncoderLayout::embeddingNormPrefix() const { return embeddingsModule() + ".LayerNorm"; }
std::string EncoderLayout::attentionNormPrefix(int layer) const { return layerModule(layer) + ".attention.output.LayerNorm"; }
std::string EncoderLayout::outputNormPrefix(int layer) const { return layerModule(layer) + ".output.LayerNorm"; }
const TensorView* findStoredBias(const TensorStore& store, const LayoutLinear& linear)
{
    for (const std::string& name : linear.biasTensors)
        if (const TensorView* bias = store.find(name))
            return bias;
    return nullptr;
}

std::string withMaskToken(const std::string& text, const std::string& maskToken)
{
    std::string out = text;
    for (const EncoderFamily* family : encoderFamilies()) {
        const std::string& from = family->specials.mask;
        if (from.empty() || from == maskToken)
            continue;
        for (std::size_t at = out.find(from); at != std::string::npos; at = out.find(from, at + maskToken.size()))
            out.replace(at, from.size(), maskToken);
    }
    return out;
}

std::vector<std::string> EncoderLayout::quantizeIgnoreList() const { return family().quantizeIgnore; }

std::string EncoderLayout::fmsName(const std::string& module, bool fusedQkv) const
{
    const LayoutLinear* linear = findLinear(module);
    if (!linear)
        return "";
    return fusedQkv ? linear->fmsFusedName : linear->fmsName;
}

const LayoutLinear* EncoderLayout::encoderLinear(int layer, LinearRole role) const
{
    for (const LayoutLinear& linear : linears_)
        if (linear.layer == layer && linear.role == role)
            return &linear;
    return nullptr;
}

std::string EncoderLayout::poolerModule() const
{
    // The family names it under its own prefix; a bare encoder saved without the prefix holds it
    // without (pooler.dense).
    const std::string& name = family().poolerModule;
    const std::string& familyPrefix = family().prefix;
    if (prefix_ == familyPrefix || name.compare(0, familyPrefix.size() + 1, familyPrefix + ".") != 0)
        return name;
    return prefixed(name.substr(familyPrefix.size() + 1));
}

} // namespace scalescope
