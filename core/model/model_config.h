#pragma once
// The parts of a Hugging Face config.json that the encoder needs, validated.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/quantization_config.h"

namespace scalescope {

// What a model class's head is for, which decides the tasks it serves: question answering, fill-mask,
// a pooled embedding (one vector per sequence: a bare encoder, a sentence embedder), or a sequence
// classification (labels per sequence; a cross-encoder reranker is one with a single label). How each
// is computed and compared is its entry's HeadDefinition in the family table (model/architecture.h).
enum class HeadKind { QuestionAnswering, MaskedLM, Embedding, SequenceClassification };
// "question-answering", "masked-lm", "embedding", "sequence-classification": the head's key in the
// family table's JSON.
const char* headKindName(HeadKind head);

// How a sequence classifier's logits become a result (config.json "problem_type"): one softmax over
// the labels (single_label_classification, or absent with num_labels > 1), a sigmoid per label
// (multi_label_classification), or the raw logit as a score (regression, or num_labels == 1: a
// cross-encoder's relevance).
enum class ClassificationProblem { SingleLabel, MultiLabel, Score };
const char* classificationProblemName(ClassificationProblem problem); // the config.json words

// How a sentence embedder pools the last hidden state into one vector (sentence-transformers'
// 1_Pooling/config.json pooling_mode_*): the first token, the mean or the max over the tokens whose
// attention mask is 1 (special tokens included), or their sum over the square root of their count.
enum class PoolingMode { FirstToken, Mean, Max, MeanSqrtLen };
const char* poolingModeName(PoolingMode mode); // "cls", "mean", "max", "mean_sqrt_len"

// What a sentence-transformers folder (modules.json and the files it names) says about the
// embedding, model/sentence_transformers.h. A bare encoder without modules.json gets the defaults:
// CLS pooling, no normalization, and `fromModules` false so that the tasks can say so.
struct SentenceEmbeddingConfig {
    PoolingMode pooling = PoolingMode::FirstToken;
    bool normalize = false;
    int64_t maxSeqLength = 0;                            // sentence_bert_config.json; 0: the model's limit
    std::vector<std::pair<std::string, std::string>> prompts; // config_sentence_transformers.json, in order
    std::string defaultPromptName;                       // its "default_prompt_name" ("" when none)
    bool fromModules = false;                            // read from modules.json (else defaults)
};

struct EncoderFamily; // model/architecture.h: the family table
struct ModelClass;

// A model class of a family in the family table (model/architecture.h): RobertaForMaskedLM is the
// RoBERTa family with a masked-LM head. Null members only for a config that was never parsed.
struct Architecture {
    const EncoderFamily* family = nullptr;
    const ModelClass* modelClass = nullptr;

    explicit operator bool() const { return modelClass != nullptr; }
    bool operator==(const Architecture& other) const { return modelClass == other.modelClass; }
    bool operator!=(const Architecture& other) const { return !(*this == other); }
};

// The config.json class name ("RobertaForQuestionAnswering"); "?" for an unparsed config.
const char* architectureName(Architecture architecture);
HeadKind headOf(Architecture architecture);

struct ModelConfig {
    Architecture architecture;
    int64_t vocabSize = 0;
    int64_t hiddenSize = 0;
    int64_t numLayers = 0;
    int64_t numHeads = 0;
    int64_t intermediateSize = 0;
    int64_t maxPositionEmbeddings = 0;
    // Defaults when config.json leaves them out: the family's (transformers' config class values).
    int64_t typeVocabSize = 1;  // BERT 2
    double layerNormEps = 1e-5; // BERT 1e-12
    int64_t padTokenId = 1;     // BERT 0
    std::string hiddenAct = "gelu";
    std::string torchDtype = "float32"; // the model dtype the checkpoint declares
    std::optional<QuantizationConfig> quantization;
    nlohmann::json raw;                  // the whole config.json, for writers that copy it

    // The module prefix of the encoder's tensors: the family's ("roberta"), or "" for a bare encoder
    // saved without it (sentence-transformers writes embeddings.*, encoder.layer.N.*). Set when the
    // checkpoint is opened (Checkpoint::open looks at the tensor names); the family's by default.
    std::optional<std::string> modulePrefix;

    // Sequence classification (HeadKind::SequenceClassification): num_labels (or the size of
    // id2label), the label names by id (LABEL_<i> where id2label has none), the problem type.
    int64_t numLabels = 0;
    std::vector<std::string> labels;
    ClassificationProblem problem = ClassificationProblem::SingleLabel;

    // Embedding (HeadKind::Embedding): the pooling and normalization a sentence-transformers folder
    // sets, or the defaults for a bare encoder.
    SentenceEmbeddingConfig embedding;
};

// Parses and validates; `source` (the file path) is named in errors.
ModelConfig parseModelConfig(const nlohmann::json& json, const std::string& source);
ModelConfig loadModelConfig(const std::string& configJsonPath);

} // namespace scalescope
