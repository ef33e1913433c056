#pragma once
// The parts of a Hugging Face config.json that the encoder needs, validated.
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "model/quantization_config.h"

namespace scalescope {

// What a model class's head is for, which decides the tasks it serves: question answering, fill-mask,
// or a pooled embedding (one vector per sequence). How each is computed and compared is its entry's
// HeadDefinition in the family table (model/architecture.h).
enum class HeadKind { QuestionAnswering, MaskedLM, Embedding };
// "question-answering", "masked-lm", "embedding": the head's key in the family table's JSON.
const char* headKindName(HeadKind head);

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
};

// Parses and validates; `source` (the file path) is named in errors.
ModelConfig parseModelConfig(const nlohmann::json& json, const std::string& source);
ModelConfig loadModelConfig(const std::string& configJsonPath);

} // namespace scalescope
