#pragma once
// The one place that knows how an encoder checkpoint is laid out: module and tensor names, the
// ordered Linears with their shapes and roles, the ordered capture points, short chart labels,
// special tokens, the first position id and the longest sequence. Built once from a ModelConfig;
// everything else (engine, runner client, diagnostics, statistics, comparison, charts, quantize,
// the GUI) asks it instead of spelling names out. A second family is a second FamilyTable entry
// in architecture.cpp. Threading: immutable after construction. No LibTorch.
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/model_config.h"

namespace scalescope {

enum class HeadKind { QuestionAnswering, MaskedLM };

enum class LinearRole { Query, Key, Value, AttentionOutput, Intermediate, Output, QaOutputs, LmDense, LmDecoder };

struct LayoutLinear {
    std::string module;        // roberta.encoder.layer.3.intermediate.dense
    LinearRole role = LinearRole::Query;
    int layer = -1;            // encoder layer index, -1 for the head
    int64_t inFeatures = 0;
    int64_t outFeatures = 0;
    bool hasBias = true;       // false: the bias is stored elsewhere (see decoderBiasTensors)
    std::string tiedWeight;    // tensor used when "<module>.weight" is absent ("" when never tied)
    std::string shortLabel;    // L3.ffn.in; the module name for head Linears
};

struct SpecialTokenTexts {
    std::string begin; // <s> / [CLS]
    std::string end;   // </s> / [SEP]
    std::string mask;  // <mask> / [MASK]
};

class EncoderLayout {
public:
    explicit EncoderLayout(const ModelConfig& config);

    Architecture architecture() const { return architecture_; }
    HeadKind head() const { return head_; }
    bool isQuestionAnswering() const { return head_ == HeadKind::QuestionAnswering; }
    bool isMaskedLm() const { return head_ == HeadKind::MaskedLM; }

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
    // "L3.ffn.in" for an encoder Linear; other names unchanged.
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

    // Every module whose output a forward checks for inf/NaN and against float16's range, in
    // execution order: the embeddings, per layer q, k, v, the self-attention, the attention output
    // Linear, the attention block, the FFN Linears and the layer, then the head Linears.
    const std::vector<std::string>& outputModules() const { return outputModules_; }
    // Its position in outputModules(), or outputModules().size() for another name.
    std::size_t outputModuleIndex(const std::string& module) const;
    // A short chart label for any of outputModules(): "emb", "L3.q", "L3.attn", "L3.attn.norm", "L3";
    // head Linears keep their name.
    std::string outputModuleLabel(const std::string& module) const;

    // Tensor names outside the Linears.
    std::string wordEmbeddingsTensor() const;
    std::string positionEmbeddingsTensor() const;
    std::string tokenTypeEmbeddingsTensor() const;
    std::string embeddingNormPrefix() const;        // <prefix>.embeddings.LayerNorm
    std::string attentionNormPrefix(int layer) const;
    std::string outputNormPrefix(int layer) const;
    std::string lmHeadNormPrefix() const;           // lm_head.layer_norm (MaskedLM)
    // The MaskedLM decoder's bias, first match wins (the decoder's own, then the head's shared one).
    std::vector<std::string> decoderBiasTensors() const;

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

private:
    Architecture architecture_;
    HeadKind head_;
    std::string prefix_;
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
