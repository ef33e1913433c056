#include "report/family_table_json.h"

#include "model/architecture.h"

namespace scalescope {
namespace {

const char* roleKey(LinearRole role)
{
    switch (role) {
    case LinearRole::Query: return "query";
    case LinearRole::Key: return "key";
    case LinearRole::Value: return "value";
    case LinearRole::AttentionOutput: return "attention_output";
    case LinearRole::Intermediate: return "intermediate";
    case LinearRole::Output: return "output";
    case LinearRole::QaOutputs: return "qa_outputs";
    case LinearRole::LmDense: return "lm_dense";
    case LinearRole::LmDecoder: return "lm_decoder";
    case LinearRole::ClassifierDense: return "classifier_dense";
    case LinearRole::ClassifierOutput: return "classifier_output";
    }
    return "?";
}

nlohmann::json headJson(const EncoderFamily& family, const HeadDefinition& head)
{
    nlohmann::json linears = nlohmann::json::array();
    for (const HeadLinearPattern& pattern : head.linears) {
        nlohmann::json linear{{"role", roleKey(pattern.role)}, {"hf", pattern.hfModule}, {"fms", pattern.fmsModule}};
        if (pattern.tiedToWordEmbeddings)
            linear["tied_weight"] = family.prefix + ".embeddings.word_embeddings.weight";
        linears.push_back(std::move(linear));
    }
    return linears;
}

nlohmann::json familyJson(const EncoderFamily& family)
{
    nlohmann::json classes = nlohmann::json::array();
    for (const ModelClass& modelClass : family.classes)
        classes.push_back({{"name", modelClass.name},
                           {"head", headKindName(modelClass.head)},
                           {"fms_architecture", modelClass.fmsArchitecture.empty()
                                                    ? nlohmann::json(nullptr)
                                                    : nlohmann::json(modelClass.fmsArchitecture)}});
    nlohmann::json heads = nlohmann::json::object();
    std::vector<std::string> decoderBiasTensors; // the tied decoder's (what the AIU runner reads)
    for (const HeadDefinition& head : family.heads) {
        heads[headKindName(head.kind)] = headJson(family, head);
        for (const HeadLinearPattern& linear : head.linears)
            if (linear.tiedToWordEmbeddings)
                decoderBiasTensors = linear.biasTensors;
    }
    nlohmann::json linears = nlohmann::json::array();
    for (const EncoderLinearPattern& pattern : family.encoderLinears)
        linears.push_back({{"role", roleKey(pattern.role)},
                           {"hf", pattern.hfSuffix},
                           {"fms", pattern.fmsSuffix},
                           {"fms_fused", pattern.fmsFusedSuffix},
                           {"label", pattern.label}});
    return {
        {"family", family.name},
        {"prefix", family.prefix},
        {"tokenizer", tokenizerKindName(family.tokenizer)},
        {"positions_after_pad", family.positionsAfterPad},
        {"config_defaults",
         {{"type_vocab_size", family.defaultTypeVocabSize},
          {"layer_norm_eps", family.defaultLayerNormEps},
          {"pad_token_id", family.defaultPadTokenId}}},
        {"special_tokens",
         {{"begin", family.specials.begin}, {"end", family.specials.end}, {"mask", family.specials.mask}}},
        {"classes", classes},
        {"embeddings_module", family.prefix + ".embeddings"},
        {"fms_embeddings_module", family.fmsEmbeddingsModule},
        {"layer_module", family.prefix + "." + family.layerPath + ".{layer}"},
        {"fms_layer_module", family.fmsLayerPrefix + ".{layer}"},
        {"encoder_linears", linears},
        {"heads", heads},
        {"decoder_bias_tensors", decoderBiasTensors},
        {"pooler_module", family.poolerModule},
        {"quantize_ignore", family.quantizeIgnore},
    };
}

} // namespace

nlohmann::json familyTableJson()
{
    nlohmann::json families = nlohmann::json::array();
    for (const EncoderFamily* family : encoderFamilies())
        families.push_back(familyJson(*family));
    return {{"generated_by", "scalescope-cli families --json"}, {"families", families}};
}

} // namespace scalescope
