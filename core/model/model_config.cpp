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

// A sequence classifier's labels as transformers reads them: id2label (keys are strings of integers)
// decides num_labels when present; a num_labels that disagrees with it is refused rather than
// warned about, because every label shown would then be wrong. Neither: transformers' 2 labels.
void parseClassifierLabels(const nlohmann::json& json, const std::string& source, ModelConfig& config)
{
    const auto names = json.find("id2label");
    const auto count = json.find("num_labels");
    if (count != json.end() && !count->is_null())
        config.numLabels = checkedJsonInteger(*count, source + ": \"num_labels\"", 1, 1'000'000);
    if (names != json.end() && !names->is_null()) {
        if (!names->is_object() || names->empty())
            throw Error(source + ": \"id2label\" must be an object mapping label ids to names.");
        const int64_t size = static_cast<int64_t>(names->size());
        if (config.numLabels > 0 && config.numLabels != size)
            throw Error(source + ": \"num_labels\" is " + std::to_string(config.numLabels) + " but \"id2label\" names " +
                        std::to_string(size) + " labels; they must agree.");
        config.numLabels = size;
        config.labels.assign(static_cast<std::size_t>(size), std::string());
        for (const auto& [key, value] : names->items()) {
            int64_t id = -1;
            try {
                std::size_t used = 0;
                id = std::stoll(key, &used);
                if (used != key.size())
                    id = -1;
            } catch (const std::exception&) {
            }
            if (id < 0 || id >= size || !value.is_string())
                throw Error(source + ": \"id2label\" must map each id 0 to " + std::to_string(size - 1) +
                            " to a name; \"" + abbreviatedText(key, 20) + "\" is not one of them.");
            config.labels[static_cast<std::size_t>(id)] = value.get<std::string>();
        }
    }
    if (config.numLabels == 0)
        config.numLabels = 2;
    config.labels.resize(static_cast<std::size_t>(config.numLabels));
    for (std::size_t i = 0; i < config.labels.size(); ++i)
        if (config.labels[i].empty())
            config.labels[i] = "LABEL_" + std::to_string(i);

    config.problem = config.numLabels == 1 ? ClassificationProblem::Score : ClassificationProblem::SingleLabel;
    if (const auto problem = json.find("problem_type"); problem != json.end() && !problem->is_null()) {
        const std::string word = problem->is_string() ? problem->get<std::string>() : std::string();
        if (word == "single_label_classification")
            config.problem = ClassificationProblem::SingleLabel;
        else if (word == "multi_label_classification")
            config.problem = ClassificationProblem::MultiLabel;
        else if (word == "regression")
            config.problem = ClassificationProblem::Score;
        else
            throw Error(source + ": \"problem_type\" must be \"single_label_classification\", "
                        "\"multi_label_classification\" or \"regression\".");
    }
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
    case HeadKind::SequenceClassification: return "sequence-classification";
    }
    return "?";
}

const char* classificationProblemName(ClassificationProblem problem)
{
    switch (problem) {
    case ClassificationProblem::SingleLabel: return "single_label_classification";
    case ClassificationProblem::MultiLabel: return "multi_label_classification";
    case ClassificationProblem::Score: return "regression";
    }
    return "?";
}

const char* poolingModeName(PoolingMode mode)
{
    switch (mode) {
    case PoolingMode::FirstToken: return "cls";
    case PoolingMode::Mean: return "mean";
    case PoolingMode::Max: return "max";
    case PoolingMode::MeanSqrtLen: return "mean_sqrt_len";
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

    if (config.architecture.modelClass->head == HeadKind::SequenceClassification)
        parseClassifierLabels(json, source, config);

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
