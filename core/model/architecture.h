#pragma once
// The one place that knows encoder families and how their checkpoints are laid out.
//
// The family table (encoderFamilies()) holds every fact about a family in one entry: its model
// classes and heads, config defaults, tokenizer kind, module prefix, the per-role patterns of its
// Linears with their Hugging Face and FMS (foundation-model-stack) names, special tokens, head
// modules, the pooler and what quantize leaves float. EncoderLayout, built from a ModelConfig,
// expands an entry into the ordered Linears with shapes and roles, the ordered capture points,
// short chart labels and tensor names. Everything else (engine, runner client and server, the AIU
// runner through `scalescope-cli families --json`, diagnostics, statistics, comparison, charts,
// quantize, the GUI) asks it instead of spelling names out. Adding a family is one
// registerEncoderFamily() call with its entry (docs/ARCHITECTURE.md, "Adding a family").
// Threading: the table is filled before first use and by registerEncoderFamily() calls made
// before any model is loaded; a layout is immutable after construction. No LibTorch.
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/model_config.h"
#include "text/tokenizer.h"

namespace scalescope {

class TensorStore;
struct TensorView;

enum class LinearRole {
    Query, Key, Value, AttentionOutput, Intermediate, Output,
    QaOutputs, LmDense, LmDecoder,
    ClassifierDense,  // a classifier's hidden -> hidden Linear before its tanh (RoBERTa classifier.dense, BERT's pooler)
    ClassifierOutput, // a classifier's hidden -> num_labels Linear (RoBERTa classifier.out_proj, BERT classifier)
};

struct SpecialTokenTexts {
    std::string begin; // <s> / [CLS]
    std::string end;   // </s> / [SEP]
    std::string mask;  // <mask> / [MASK]
};

// One Linear of every encoder layer, by role: names relative to the layer module.
struct EncoderLinearPattern {
    LinearRole role = LinearRole::Query;
    std::string hfSuffix;       // attention.self.query
    std::string fmsSuffix;      // attn.in_proj.query (fms with fused_weights=False)
    std::string fmsFusedSuffix; // attn.in_proj.qkv_fused (fms's default fused_weights=True)
    std::string label;          // q: the chart label after "L<layer>."
    bool inIsIntermediate = false;
    bool outIsIntermediate = false;
};

// How wide a head Linear's output is, from the config.
enum class HeadWidth { Hidden, Vocabulary, SpanEnds /* 2: start and end */, Labels /* config num_labels */ };

// One head Linear: absolute names.
struct HeadLinearPattern {
    LinearRole role = LinearRole::QaOutputs;
    std::string hfModule;  // qa_outputs
    std::string fmsModule; // qa_head
    bool tiedToWordEmbeddings = false; // its weight may be absent: then the word embeddings serve
    HeadWidth out = HeadWidth::Hidden;
    // Where its bias may be stored, first match wins; empty: "<hfModule>.bias".
    std::vector<std::string> biasTensors;
};

// One step of a head, run in order on the last hidden state [batch, seq, hidden].
enum class HeadStepKind {
    Linear,               // the head Linear named `module`
    Gelu,
    Tanh,
    LayerNorm,            // weight and bias under the prefix `module`, the config's layer_norm_eps
    GatherLogitPositions, // keep only EncoderInputs::logitPositions: [count, width] (a masked LM's masks)
    PoolFirstToken,       // [batch, width]: the first token (<s>, [CLS])
    PoolMean,             // [batch, width]: the mean over tokens whose attention mask is 1
    PoolMax,              // [batch, width]: the max over those tokens
    PoolMeanSqrtLen,      // [batch, width]: their sum over sqrt(count)
    Normalize,            // each row divided by its L2 norm
};
struct HeadStep {
    HeadStepKind kind = HeadStepKind::Linear;
    std::string module; // Linear: its hfModule; LayerNorm: its tensor prefix
};

// How a final output is read, compared between two runs and agreed on (tasks/final_outputs.h):
// TokenScores: one score per position, [batch, seq] (a QA span end): over each row's real
// positions, agreement = the same argmax. TokenLogits: a distribution per position, [batch, seq,
// width] or gathered [count, width]: agreement = the same argmax at every real position. Vector: one
// vector per sequence, [batch, width] (a pooled embedding): agreement = a cosine of at least
// kVectorAgreementCosine for every row. SequenceLogits: one distribution per sequence, [batch, labels]
// (a single-label classifier): agreement = the same argmax. Scores: independent scores per sequence,
// [batch, labels] (a multi-label classifier's sigmoid per label, a reranker's relevance): agreement =
// the same largest score (the label classify reports), and with one score per row the same ranking
// of the rows (a reranker's order of the passages); no distribution to measure.
enum class FinalOutputKind { TokenScores, TokenLogits, Vector, SequenceLogits, Scores };
// Whether an output's rows hold probability distributions (softmax over a width): what device checks
// measure cross-entropy and probability differences on.
bool holdsDistributions(FinalOutputKind kind);
struct HeadOutput {
    std::string name;  // start_logits, logits, pooled
    FinalOutputKind kind = FinalOutputKind::TokenLogits;
    int column = -1;   // >= 0: the output is that column of the last step's last dimension
};

// A head: everything the engine, the runner client, the consumers and the tasks need to know about
// it. The engine runs `steps` (nothing else); the final outputs are `outputs`.
struct HeadDefinition {
    HeadKind kind = HeadKind::QuestionAnswering;
    std::vector<HeadLinearPattern> linears; // in execution order
    std::vector<HeadStep> steps;
    std::vector<HeadOutput> outputs;
    // The name of the final outputs as one capture point of a device check ("qa_logits", "logits").
    std::string finalPoint;
};

// The QA span head (qa_outputs: hidden -> 2, start and end logits at every position), the same in
// every BERT-style family.
HeadDefinition questionAnsweringHead();
// A masked-LM head: transform Linear, GELU, LayerNorm, decoder (tied to the word embeddings when its
// weight is absent; its bias also stored under decoderBias), at the gathered positions when given.
HeadDefinition maskedLmHead(HeadLinearPattern transform, const std::string& norm, HeadLinearPattern decoder,
                            std::vector<std::string> decoderBias);
// A pooled embedding of a bare encoder: one vector per sequence, "pooled". The family entry holds CLS
// pooling; a layout replaces it with what the checkpoint's sentence-transformers modules say
// (ModelConfig::embedding), and adds the L2 normalization they ask for.
HeadDefinition embeddingHead();
// A sequence classifier: the first token's hidden state through `dense`, tanh, `output` (hidden ->
// num_labels), "logits". Its output kind follows the config's problem type in the layout.
HeadDefinition sequenceClassificationHead(HeadLinearPattern dense, HeadLinearPattern output);

// A Hugging Face model class of a family ("architectures"[0] in config.json).
struct ModelClass {
    std::string name;            // RobertaForQuestionAnswering
    HeadKind head = HeadKind::QuestionAnswering;
    std::string fmsArchitecture; // what fms's get_model calls it; "" when fms has none
};

// Every fact about one encoder family.
struct EncoderFamily {
    std::string name;   // roberta
    std::string prefix; // module prefix of the encoder: roberta.embeddings, roberta.encoder.layer.N
    std::string layerPath = "encoder.layer"; // <prefix>.<layerPath>.N is encoder layer N
    std::vector<ModelClass> classes;
    TokenizerKind tokenizer = TokenizerKind::BytePairEncoding; // what Checkpoint::tokenizer() loads
    // config.json defaults when a key is absent (transformers' config class values).
    int64_t defaultTypeVocabSize = 1;
    double defaultLayerNormEps = 1e-5;
    int64_t defaultPadTokenId = 1;
    bool positionsAfterPad = true; // positions start at pad_token_id + 1 and skip padding (RoBERTa)
    SpecialTokenTexts specials;
    int specialTokensInPair = 4;   // <s> A </s></s> B </s>: 4; [CLS] A [SEP] B [SEP]: 3
    std::string fmsLayerPrefix = "base_model.layers"; // fms: base_model.layers.N
    std::string fmsEmbeddingsModule = "base_model.enc_norm"; // the fms module whose output is the embeddings output
    std::string fmsWordEmbeddingsModule = "base_model.embedding"; // fms's word-embedding table (a plain nn.Embedding)
    std::vector<EncoderLinearPattern> encoderLinears; // in execution order
    // One entry per head kind the classes use (each class names its kind).
    std::vector<HeadDefinition> heads;
    // The head of that kind; null when the family has none.
    const HeadDefinition* head(HeadKind kind) const;
    std::string poolerModule;                          // roberta.pooler.dense (not run)
    std::string fmsPoolerModule = "classification_head.dense"; // where fms loads the pooler's weights
    std::vector<std::string> quantizeIgnore;           // what quantize lists in `ignore`
};

// The six Linears of a BERT-style encoder layer (RoBERTa and BERT share them), for family entries.
const std::vector<EncoderLinearPattern>& bertStyleEncoderLinears();

// The family table, in registration order (RoBERTa, BERT, then registered ones).
const std::vector<const EncoderFamily*>& encoderFamilies();
// Adds a family (a plug-in or a test's made-up family); its class names must be new. Call it
// before any model is loaded. Throws scalescope::Error for a duplicate class name.
const EncoderFamily& registerEncoderFamily(EncoderFamily family);
// The family and class of a config.json class name, or nulls when no family has it.
Architecture findArchitecture(const std::string& className);
// Every supported class, for a sentence: "A, B, C or D".
std::string supportedArchitecturesText();
// "a RobertaForQuestionAnswering checkpoint or a BertForQuestionAnswering one" (or "a A, B or C
// checkpoint" for more), the classes with that head, for a "needs ..." sentence.
std::string architecturesWithHeadText(HeadKind head);
const char* tokenizerKindName(TokenizerKind kind); // "bpe", "wordpiece"
// The one sentence for a checkpoint of the wrong head: "<subjectAndVerb> a RobertaForMaskedLM
// checkpoint or a BertForMaskedLM one; <who> is RobertaForQuestionAnswering."
std::string wrongHeadSentence(const std::string& subjectAndVerb, HeadKind needed, const std::string& who,
                              Architecture is);

struct LayoutLinear {
    std::string module;        // roberta.encoder.layer.3.intermediate.dense
    LinearRole role = LinearRole::Query;
    int layer = -1;            // encoder layer index, -1 for the head
    int64_t inFeatures = 0;
    int64_t outFeatures = 0;
    // Where its bias may be stored, first match wins: "<module>.bias", and for the MaskedLM decoder
    // also the head's shared bias (lm_head.bias, cls.predictions.bias), which is the only name
    // Hugging Face keeps when it saves the two tied. Every loader looks the bias up through these.
    std::vector<std::string> biasTensors;
    std::string tiedWeight;    // tensor used when "<module>.weight" is absent ("" when never tied)
    std::string shortLabel;    // L3.ffn.in; the module name for head Linears
    std::string fmsName;       // base_model.layers.3.ff_sub_layer.w1 (fms, unfused q/k/v); qa_head
    std::string fmsFusedName;  // the same, but base_model.layers.3.attn.in_proj.qkv_fused for q, k, v
};

// The first of linear.biasTensors that the store holds; null when the Linear has no stored bias.
const TensorView* findStoredBias(const TensorStore& store, const LayoutLinear& linear);

class EncoderLayout {
public:
    explicit EncoderLayout(const ModelConfig& config);

    Architecture architecture() const { return architecture_; }
    const EncoderFamily& family() const { return *architecture_.family; }
    // The head's kind (which tasks it serves) and its definition (how it computes, what its final
    // outputs are): the one place every consumer of final outputs asks.
    HeadKind head() const { return head_.kind; }
    bool isQuestionAnswering() const { return head() == HeadKind::QuestionAnswering; }
    bool isMaskedLm() const { return head() == HeadKind::MaskedLM; }
    const HeadDefinition& headDefinition() const { return head_; }
    // The module prefix of the encoder's tensors: the family's, or "" for a bare encoder saved
    // without it (ModelConfig::modulePrefix).
    const std::string& modulePrefix() const { return prefix_; }
    // The head keeps only EncoderInputs::logitPositions (a masked LM's masks) when they are given.
    bool headGathersPositions() const;
    // A head Linear may run on the word embeddings (a tied decoder).
    bool headReadsWordEmbeddings() const;
    // The final outputs' names and shapes for a forward of `batch` rows of `seq` tokens, with
    // `gathered` logit positions (0: none given), in the head's output order.
    std::vector<std::pair<std::string, std::vector<int64_t>>> finalOutputShapes(int64_t batch, int64_t seq,
                                                                                int64_t gathered) const;

    // Linears in execution order: six per encoder layer, then the head's.
    const std::vector<LayoutLinear>& linears() const { return linears_; }
    const LayoutLinear* findLinear(const std::string& module) const;
    bool isEncoderLinear(const std::string& module) const;
    std::vector<std::string> linearModules() const;

    // Every capture point in execution order: the embeddings output, per layer its six Linears'
    // input and output and the layer output, then the head Linears' input and output.
    const std::vector<std::string>& capturePoints() const { return capturePoints_; }
    // The encoder layer a module or capture point belongs to, -1 for embeddings and head.
    int layerOf(const std::string& name) const;
    // "L3.ffn.in" for an encoder Linear, "L3.k.fp8"/"L3.v.fp8" for the K/V casts, "L3.attn.fp8" for
    // an FP8 attention unit; other names unchanged.
    std::string shortLabel(const std::string& module) const;
    // Words for a module in a sentence: "layer 7 FFN output (roberta.encoder.layer.7.output.dense)",
    // "the embeddings output (roberta.embeddings)", "layer 3 output (roberta.encoder.layer.3)"; other
    // names as given.
    std::string describeModule(const std::string& module) const;

    std::string embeddingsModule() const;     // roberta.embeddings
    std::string embeddingsOutput() const;     // roberta.embeddings.output
    std::string layerModule(int layer) const; // roberta.encoder.layer.3
    std::string layerOutput(int layer) const; // roberta.encoder.layer.3.output
    // Modules whose outputs are checked but are not capture points: the self-attention (its context,
    // after scores and probabilities) and the attention block (the LayerNorm after the residual).
    std::string attentionModule(int layer) const;      // roberta.encoder.layer.3.attention.self
    std::string attentionBlockModule(int layer) const; // roberta.encoder.layer.3.attention.output
    // AIU FP8 attention (docs/ARCHITECTURE.md "Run modes"), a run option: the casts of K and V to
    // E4M3, whose ".input" (before) and ".output" (dequantized, after) are capture points only in a
    // forward that asks for them (ForwardOptions::attention), and the layer's FP8 attention as one
    // what-if unit: a precision override and a sensitivity-sweep entry.
    std::string keyCastModule(int layer) const;    // roberta.encoder.layer.3.attention.self.key_fp8
    std::string valueCastModule(int layer) const;  // roberta.encoder.layer.3.attention.self.value_fp8
    std::string fp8AttentionUnit(int layer) const; // roberta.encoder.layer.3.attention.self.math_fp8
    // The layer of an FP8 attention unit's name, -1 for any other name.
    int fp8AttentionLayer(const std::string& name) const;

    // Every module whose output a forward checks for inf/NaN and against float16's range, in
    // execution order: the embeddings, per layer q, k, v, the self-attention, the attention output
    // Linear, the attention block, the FFN Linears and the layer, then the head Linears.
    const std::vector<std::string>& outputModules() const { return outputModules_; }
    // Its position in outputModules(), or outputModules().size() for another name.
    std::size_t outputModuleIndex(const std::string& module) const;
    // A short chart label for any of outputModules(): "emb", "L3.q", "L3.attn", "L3.attn.norm", "L3";
    // head Linears keep their name.
    std::string outputModuleLabel(const std::string& module) const;

    // Tensor names outside the Linears. The word embeddings are the one non-Linear module a config
    // group may quantize (class name "Embedding"): "<module>.weight" holds the table, F8_E4M3 codes
    // when quantized, with "<module>.weight_scale" beside it.
    std::string wordEmbeddingsModule() const;      // roberta.embeddings.word_embeddings
    std::string wordEmbeddingsTensor() const;      // <module>.weight
    std::string wordEmbeddingsScaleTensor() const; // <module>.weight_scale
    std::string positionEmbeddingsTensor() const;
    std::string tokenTypeEmbeddingsTensor() const;
    std::string embeddingNormPrefix() const;        // <prefix>.embeddings.LayerNorm
    std::string attentionNormPrefix(int layer) const;
    std::string outputNormPrefix(int layer) const;

    // The first position id: RoBERTa numbers positions after pad_token_id, BERT from 0.
    int64_t positionOffset() const { return positionOffset_; }
    // Positions count from the first non-pad token (RoBERTa) or from 0 for every token (BERT).
    bool positionsSkipPadding() const { return positionsSkipPadding_; }
    // The longest input the position table allows (512 for roberta-base).
    int64_t maxSequenceLength() const { return maxSequenceLength_; }
    const SpecialTokenTexts& specialTokens() const { return specialTokens_; }
    // Special tokens around a pair: <s> A </s></s> B </s> has 4, [CLS] A [SEP] B [SEP] has 3.
    int specialTokensInPair() const { return specialTokensInPair_; }

    // What `quantize` writes to `ignore` so that the head stays float.
    std::vector<std::string> quantizeIgnoreList() const;

    // The FMS (foundation-model-stack) name of a Linear: base_model.layers.3.ff_sub_layer.w1,
    // qa_head; with fused q/k/v (fms's default) q, k and v are base_model.layers.3.attn.in_proj.qkv_fused.
    // "" for a name that is not a Linear of this layout.
    std::string fmsName(const std::string& module, bool fusedQkv = false) const;
    // The Linear of a role in an encoder layer, or null.
    const LayoutLinear* encoderLinear(int layer, LinearRole role) const;
    // The pooler's module (RoBERTa/BERT hold one that QA and MLM heads do not run).
    std::string poolerModule() const;

private:
    Architecture architecture_;
    HeadDefinition head_; // the family table's, with the config's pooling and problem type
    std::string prefixed(const std::string& relative) const; // "<prefix>.<relative>", or relative alone
    int64_t hiddenSize_ = 0;
    std::string prefix_;
    std::string layerPrefix_; // roberta.encoder.layer.
    std::vector<LayoutLinear> linears_;
    std::unordered_map<std::string, std::size_t> linearIndex_;
    std::vector<std::string> capturePoints_;
    std::vector<std::string> outputModules_;
    int64_t positionOffset_ = 0;
    bool positionsSkipPadding_ = false;
    int64_t maxSequenceLength_ = 0;
    SpecialTokenTexts specialTokens_;
    int specialTokensInPair_ = 0;
    int numLayers_ = 0;
};

// The text with every family's mask token (<mask>, [MASK]) written as maskToken: a sentence written
// for one family fills masks on another.
std::string withMaskToken(const std::string& text, const std::string& maskToken);

} // namespace scalescope
