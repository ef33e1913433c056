#include "model/model_config.h"

#include "common/error.h"
#include "common/json_values.h"
#include "common/text_files.h"
#include "model/architecture.h"

namespace scalescope {
namespace {

int64_t requirePositive(const nlohmann::json& json, const char* key, const std::string& source, int64_t limit)
{
    auto it = json.find(key);
    if (it == json.end())
        throw Error(source + " has no \"" + key + "\".");
    return checkedJsonInteger(*it, source + ": \"" + key + "\"", 1, limit);
}

} // namespace

const char* architectureName(Architecture architecture)
{
    return architecture.modelClass ? architecture.modelClass->name.c_str() : "?";
}

const char* headKindName(HeadKind head)
{
    switch (head) {
    case HeadKind::QuestionAnswering: return "question-answering";
    case HeadKind::MaskedLM: return "masked-lm";
    case HeadKind::Embedding: return "embedding";
    }
    return "?";
}

HeadKind headOf(Architecture architecture)
{
    return architecture.modelClass ? architecture.modelClass->head : HeadKind::QuestionAnswering;
}

ModelConfig parseModelConfig(const nlohmann::json& json, const std::string& source)
{
    if (!json.is_object())
        throw Error(source + " must hold a JSON object.");
    ModelConfig config;
    config.raw = json;

    auto architectures = json.find("architectures");
    if (architectures == json.end() || !architectures->is_array() || architectures->empty() ||
        !(*architectures)[0].is_string())
        throw Error(source + " has no \"architectures\" list naming the model class.");
    const std::string name = (*architectures)[0].get<std::string>();
    config.architecture = findArchitecture(name);
    if (!config.architecture)
        throw Error(source + ": architecture \"" + abbreviatedText(name, 60) + "\" is not supported; expected " +
                    supportedArchitecturesText() + ".");
    const EncoderFamily& family = *config.architecture.family;
    config.typeVocabSize = family.defaultTypeVocabSize;
    config.layerNormEps = family.defaultLayerNormEps;
    config.padTokenId = family.defaultPadTokenId;

    // Generous limits: they exist to refuse hostile sizes before anything is allocated.
    config.vocabSize = requirePositive(json, "vocab_size", source, 10'000'000);
    config.hiddenSize = requirePositive(json, "hidden_size", source, 65'536);
    config.numLayers = requirePositive(json, "num_hidden_layers", source, 1'000);
    config.numHeads = requirePositive(json, "num_attention_heads", source, 1'024);
    config.intermediateSize = requirePositive(json, "intermediate_size", source, 1'000'000);
    config.maxPositionEmbeddings = requirePositive(json, "max_position_embeddings", source, 1'000'000);
    if (json.contains("type_vocab_size"))
        config.typeVocabSize = requirePositive(json, "type_vocab_size", source, 1'000);
    if (config.hiddenSize % config.numHeads != 0)
        throw Error(source + ": hidden_size " + std::to_string(config.hiddenSize) +
                    " is not a multiple of num_attention_heads " + std::to_string(config.numHeads) + ".");

    if (auto eps = json.find("layer_norm_eps"); eps != json.end()) {
        if (!eps->is_number() || eps->get<double>() < 0)
            throw Error(source + ": \"layer_norm_eps\" must be a non-negative number.");
        config.layerNormEps = eps->get<double>();
    }
    if (auto pad = json.find("pad_token_id"); pad != json.end() && !pad->is_null()) {
        config.padTokenId = checkedJsonInteger(*pad, source + ": \"pad_token_id\" (a token id below vocab_size)", 0,
                                               config.vocabSize - 1);
    }
    // RoBERTa's positions start at pad_token_id + 1: a pad id that high leaves no position for a
    // token, which is a config problem to name here, not a negative token limit at the first run.
    if (family.positionsAfterPad && config.padTokenId + 1 >= config.maxPositionEmbeddings)
        throw Error(source + ": pad_token_id " + std::to_string(config.padTokenId) +
                    " leaves no token positions: " + name + "'s positions start at pad_token_id + 1 = " +
                    std::to_string(config.padTokenId + 1) + ", and max_position_embeddings is " +
                    std::to_string(config.maxPositionEmbeddings) + ".");
    if (auto act = json.find("hidden_act"); act != json.end() && act->is_string())
        config.hiddenAct = act->get<std::string>();
    if (config.hiddenAct != "gelu")
        throw Error(source + ": hidden_act \"" + abbreviatedText(config.hiddenAct, 60) +
                    "\" is not supported; only \"gelu\" runs.");
    // transformers >= 4.56 writes "dtype"; older versions "torch_dtype".
    for (const char* key : {"dtype", "torch_dtype"})
        if (auto dtype = json.find(key); dtype != json.end() && dtype->is_string()) {
            config.torchDtype = dtype->get<std::string>();
            break;
        }

    // Checkpoints written May-Sept 2024 carry "compression_config" (vLLM still reads it).
    if (auto q = json.find("quantization_config"); q != json.end() && !q->is_null())
        config.quantization = parseQuantizationConfig(*q, source);
    else if (auto c = json.find("compression_config"); c != json.end() && !c->is_null())
        config.quantization = parseQuantizationConfig(*c, source, "compression_config");
    return config;
}

ModelConfig loadModelConfig(const std::string& configJsonPath)
{
    return readingUserFile(configJsonPath,
                           [&] { return parseModelConfig(readJsonFile(configJsonPath, 16ull << 20), configJsonPath); });
}

} // namespace scalescope
