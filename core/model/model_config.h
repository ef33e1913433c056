#pragma once
// The parts of a Hugging Face config.json that the encoder needs, validated.
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "model/quantization_config.h"

namespace scalescope {

enum class Architecture { RobertaForQuestionAnswering, RobertaForMaskedLM, BertForQuestionAnswering, BertForMaskedLM };

const char* architectureName(Architecture architecture);

struct ModelConfig {
    Architecture architecture = Architecture::RobertaForQuestionAnswering;
    int64_t vocabSize = 0;
    int64_t hiddenSize = 0;
    int64_t numLayers = 0;
    int64_t numHeads = 0;
    int64_t intermediateSize = 0;
    int64_t maxPositionEmbeddings = 0;
    // Defaults when config.json leaves them out: transformers' RobertaConfig / BertConfig values.
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
