#include "analysis/consumers.h"

#include <algorithm>
#include <functional>
#include <set>

#include "common/error.h"
#include "common/json_values.h"
#include "common/text_files.h"
#include "model/linear_plan.h"
#include "model/quantization_config.h"
#include "model/runtime_units.h"
#include "tasks/fix_provenance.h"

// Finding codes (stable; tests and filters rely on them). Severity error = the consumer fails,
// warning = it runs differently, info = a note that changes nothing.
//
// aiu (fms + fms_mo), each tagged fused, unfused or both:
//   aiu-no-fms-model            fms builds no model of this class (a bare encoder): nothing loads
//   aiu-not-compressed-tensors  FP8 weights, but no compressed-tensors config: every Linear plain
//   aiu-status-not-compressed   FP8 weights, quantization_status not exactly "compressed": every Linear plain
//   aiu-group0-missing          no config_groups.group_0 (fms_mo reads only it, KeyError)
//   aiu-group-ignored           a group other than group_0 picks Linears: they run group_0's scheme or plain
//   aiu-missing-keys            keys fms_mo indexes directly are absent (KeyError)
//   aiu-weights-unsupported     group_0 weights not 8-bit float, tensor or channel, symmetric and static
//   aiu-weights-strategy-missing  no weights strategy: fms_mo assumes channel, compressed-tensors infers
//   aiu-activations-unsupported input activations other than dynamic per token or static per tensor
//   aiu-channel-weights-tensor-activations  fails at the first forward
//   aiu-tensor-weights-token-activations    accepted, untested upstream (info)
//   aiu-kv-cache-dropped        kv_cache_scheme is not null: fms_mo drops it (runs differently)
//   aiu-transform-dropped       a non-empty transform_config: fms_mo runs without the rotations
//   aiu-qkv-kept-alone          (fused) some of q/k/v stored float, the others FP8: one fused Linear
//   aiu-qkv-per-tensor-scales   (fused) per-tensor weight or static input scales concatenate to [3]
//   aiu-fp8-loads-plain         an FP8-stored Linear built plain: it computes with the codes
//   aiu-float-built-fp8         a float-stored encoder Linear whose FMS name no ignore entry contains:
//                               built FP8 with an uninitialised weight_scale
//   aiu-kept-float32            a Linear kept float in float32 next to 16-bit activations
//   aiu-head-fp8                a head stored FP8: fms builds heads plain
//   aiu-embedding-fp8           word embeddings stored FP8: fms builds a plain nn.Embedding, so the
//                               codes load without their scale
//   aiu-pooler-collision        an MLM holding the pooler: it and lm_head.dense load into one module
//   aiu-bf16-cast               bf16 tensors need the cast to fp16 (info)
//   aiu-tensor-parallel-ignore  a non-empty ignore list crashes under tensor parallelism (info)
// every consumer:
//   aiu-run-refused / vllm-run-refused / ct-run-refused  ScaleScope's own loader refuses the
//                               checkpoint (LinearPlan::refusals, the run's sentence): no rule here
//                               can vouch for a scheme or layout this version does not read
// vllm:
//   vllm-float-built-fp8 / vllm-fp8-loads-float  stored dtype against what vLLM's matching builds
//   vllm-qkv-schemes-differ     q, k, v of a layer in different schemes: refused
//   vllm-attention-group-dropped  a group that targets attention modules is dropped
//   vllm-ignore-unmatched       ignore entries that match no module (harmless, info)
//   vllm-status-ignored         FP8 weights labelled other than "compressed": vLLM never reads the label (info)
//   vllm-transform-applied      a non-empty transform_config is applied (info)
// compressed-tensors (transformers):
//   ct-status-not-compressed    FP8 weights labelled other than "compressed": not decompressed
//   ct-float-built-fp8 / ct-fp8-loads-float     stored dtype against what its matching builds
//   ct-group-conflict           two groups pick a Linear at the same specificity with different schemes
//   ct-transform-applied        a non-empty transform_config is applied (info)
//   ct-ignore-unmatched         ignore entries that match no module (harmless, info)

namespace scalescope {
namespace {

using json = nlohmann::json;

bool isFp8(Dtype dtype)
{
    return dtype == Dtype::F8_E4M3 || dtype == Dtype::F8_E5M2;
}

// A Linear that fms fuses with others (q, k, v: they share one fused FMS name in the family table).
bool isFused(const LayoutLinear& linear)
{
    return linear.fmsFusedName != linear.fmsName;
}

// Each fused unit (q, k, v) with its Linears float after keeping `modules`: kept, or stored float.
std::vector<FusedUnitFloat> fusedUnitsAfterKeeping(const Checkpoint& checkpoint, const std::vector<std::string>& modules)
{
    std::set<std::string> floatAfter(modules.begin(), modules.end());
    for (const LayoutLinear& linear : checkpoint.layout().linears()) {
        const TensorView* weight = checkpoint.tensors().find(linear.module + ".weight");
        if (weight && !isFp8(weight->dtype))
            floatAfter.insert(linear.module);
    }
    return fusedUnitsFloat(checkpoint.layout(), floatAfter);
}

// "a", "a and b", "a, b and 3 more": module lists inside one sentence.
std::string listed(const std::vector<std::string>& names)
{
    if (names.empty())
        return "none";
    if (names.size() == 1)
        return names[0];
    if (names.size() == 2)
        return names[0] + " and " + names[1];
    return names[0] + ", " + names[1] + " and " + std::to_string(names.size() - 2) + " more";
}

// Every module path the tensors imply (each dot prefix of a tensor name), for "matches nothing".
std::set<std::string> modulePaths(const Checkpoint& checkpoint)
{
    std::set<std::string> paths;
    for (const TensorView* view : checkpoint.tensors().tensors())
        for (std::size_t dot = view->name.find('.'); dot != std::string::npos; dot = view->name.find('.', dot + 1))
            paths.insert(view->name.substr(0, dot));
    return paths;
}

// Ignore entries that match no module: by exact or re: name only (vLLM), or also by class name.
std::vector<std::string> unmatchedIgnoreEntries(const Checkpoint& checkpoint, bool classNames)
{
    const std::set<std::string> paths = modulePaths(checkpoint);
    std::vector<std::string> unmatched;
    for (const std::string& entry : checkpoint.config().quantization->ignore) {
        bool matched = false;
        for (const std::string& path : paths) {
            const bool linear = checkpoint.layout().findLinear(path) != nullptr;
            matched = matched || matchesTarget(entry, path, classNames && linear ? "Linear" : "");
        }
        if (!matched)
            unmatched.push_back(entry);
    }
    return unmatched;
}

class FindingList {
public:
    explicit FindingList(Consumer consumer) : consumer_(consumer) {}

    void add(const std::string& loading, const std::string& code, Severity severity, std::vector<std::string> modules,
             std::string message, std::string fix)
    {
        findings_.push_back({consumer_, loading, code, severity, std::move(modules), std::move(message), std::move(fix)});
    }
    std::vector<ConsumerFinding>& findings() { return findings_; }

private:
    Consumer consumer_;
    std::vector<ConsumerFinding> findings_;
};

// What ScaleScope's loader refuses is refused here too, with the sentence a run throws: the rules
// below know the consumers only through the schemes and layouts this version reads, so a verdict
// on anything else would vouch for what nothing checked.
void addRunRefusals(FindingList& list, const std::string& loading, const std::string& code,
                    const Checkpoint& checkpoint)
{
    for (PlanRefusal& refusal : checkpoint.plan().refusals())
        list.add(loading, code, Severity::Error, std::move(refusal.modules), std::move(refusal.sentence),
                 "ScaleScope judges how a consumer loads only a checkpoint it can run itself, so fix this first.");
}

// What a consumer builds for each Linear, against what is stored: an FP8 Linear for a float weight
// (no weight_scale to load, or an uninitialised one) and a float Linear for FP8 codes both fail.
struct StoredAgainstBuilt {
    std::vector<std::string> floatBuiltFp8;
    std::vector<std::string> fp8BuiltFloat;
};

StoredAgainstBuilt compareStoredAndBuilt(const Checkpoint& checkpoint,
                                         const std::function<bool(const LayoutLinear&)>& buildsFp8)
{
    StoredAgainstBuilt out;
    for (const LayoutLinear& linear : checkpoint.layout().linears()) {
        const TensorView* weight = checkpoint.tensors().find(linear.module + ".weight");
        if (!weight)
            continue; // a tied decoder: the float word embeddings serve, whatever the config says
        const bool built = buildsFp8(linear);
        if (built && !isFp8(weight->dtype))
            out.floatBuiltFp8.push_back(linear.module);
        if (!built && isFp8(weight->dtype))
            out.fp8BuiltFloat.push_back(linear.module);
    }
    return out;
}

std::vector<std::string> fp8StoredLinears(const Checkpoint& checkpoint, bool encoderOnly)
{
    std::vector<std::string> out;
    for (const LayoutLinear& linear : checkpoint.layout().linears()) {
        const TensorView* weight = checkpoint.tensors().find(linear.module + ".weight");
        if (weight && isFp8(weight->dtype) && (!encoderOnly || linear.layer >= 0))
            out.push_back(linear.module);
    }
    return out;
}

bool hasTransforms(const QuantizationConfig& quantization)
{
    return !quantization.transforms.empty();
}

// quantization_status as the consumers that read it compare it: exactly the string "compressed".
bool labelledCompressed(const QuantizationConfig& quantization)
{
    const auto status = quantization.raw.find("quantization_status");
    return status != quantization.raw.end() && status->is_string() && status->get<std::string>() == "compressed";
}

std::string statusLabel(const QuantizationConfig& quantization)
{
    const auto status = quantization.raw.find("quantization_status");
    return status == quantization.raw.end() ? std::string("missing") : quotedJsonValue(*status);
}

// FP8 weights on disk under a label other than "compressed" (frozen, calibration, initialized,
// decompressed, missing): checkpoints like this are on the model hub (transformers #47152/#48072).
bool statusMisreadable(const Checkpoint& checkpoint)
{
    const auto& quantization = checkpoint.config().quantization;
    return quantization && !labelledCompressed(*quantization) &&
           !fp8StoredLinears(checkpoint, false).empty();
}

// ---------------------------------------------------------------------------------------------
// fms's get_model has a model only for the classes the family table names an fms architecture for
// (the AIU runner reads the same table, packaging/runners/encoder_families.json, and refuses the
// rest): not for a bare encoder, a sentence embedder. Only the embedding head is judged by it here:
// the table names no fms model for BertForQuestionAnswering either, while DESIGN's consumer rules
// describe the AIU loading a BERT QA head, so that case is left to be settled, not changed here.
bool fmsBuildsTheModel(const Checkpoint& checkpoint)
{
    if (checkpoint.layout().head() != HeadKind::Embedding)
        return true;
    const std::string architecture = architectureName(checkpoint.config().architecture);
    for (const ModelClass& modelClass : checkpoint.layout().family().classes)
        if (modelClass.name == architecture)
            return !modelClass.fmsArchitecture.empty();
    return false;
}

// AIU: fms + fms_mo (aiu_addons/__init__.py _infer_quantization_config, fp8/fp8_linear.py).

class AiuAssessment {
public:
    explicit AiuAssessment(const Checkpoint& checkpoint)
        : checkpoint_(checkpoint), layout_(checkpoint.layout()), list_(Consumer::Aiu)
    {
    }

    ConsumerReport run()
    {
        addRunRefusals(list_, "both", "aiu-run-refused", checkpoint_);
        if (!checkFmsBuildsTheModel())
            return report();
        if (readsConfig())
            checkLinears();
        checkWordEmbeddings();
        checkHeadsAndPooler();
        checkDtypes();
        return report();
    }

private:
    // fms's get_model has a model only for the classes the family table names an fms architecture
    // for (the AIU runner reads the same table and refuses the rest): a bare encoder (a sentence
    // embedder) has none, so the AIU cannot load it at all and no other rule applies.
    bool checkFmsBuildsTheModel()
    {
        if (fmsBuildsTheModel(checkpoint_))
            return true;
        const std::string architecture = architectureName(checkpoint_.config().architecture);
        list_.add("both", "aiu-no-fms-model", Severity::Error, {},
                  checkpoint_.directory() + " is " + architecture + ", which fms does not build (it has no such "
                  "model), so the AIU stack (fms + fms_mo) cannot load it and the AIU runner refuses it.",
                  "Serve it on the AIU through vLLM (vllm-spyre serves embedders through the Hugging Face model; "
                  "see the vllm consumer), or run it with the CPU runner.");
        return false;
    }

    // The config rules; false when fms_mo builds every Linear plain (or fails before building).
    bool readsConfig()
    {
        const std::vector<std::string> fp8 = fp8StoredLinears(checkpoint_, false);
        const auto& quantization = checkpoint_.config().quantization;
        if (!quantization || quantization->quantMethod != "compressed-tensors") {
            if (!fp8.empty())
                list_.add("both", "aiu-not-compressed-tensors", Severity::Error, fp8,
                          "fms_mo builds FP8 Linears only for quant_method compressed-tensors, so every Linear loads "
                          "plain and the FP8 codes are used as weights (garbage out).",
                          "Write a compressed-tensors quantization_config for the FP8 weights.");
            return false;
        }
        if (!labelledCompressed(*quantization)) {
            if (statusMisreadable(checkpoint_))
                list_.add("both", "aiu-status-not-compressed", Severity::Error, fp8,
                          "quantization_status is " + statusLabel(*quantization) + " although the weights are FP8 on disk, and fms_mo builds "
                          "FP8 Linears only for exactly \"compressed\", so every Linear loads plain with the FP8 codes "
                          "as weights (garbage out).",
                          "Set quantization_status to \"compressed\" in config.json (the tensors already are).");
            return false;
        }
        if (hasTransforms(*quantization))
            list_.add("both", "aiu-transform-dropped", Severity::Error, fp8,
                      "fms_mo does not read transform_config, so the AIU runs the model without its rotations.",
                      "Serve this checkpoint elsewhere or re-quantize it without transforms.");
        return readsGroup0(*quantization);
    }

    bool readsGroup0(const QuantizationConfig& quantization)
    {
        const json& raw = quantization.raw;
        const auto groups = raw.find("config_groups");
        if (groups == raw.end() || !groups->is_object() || !groups->contains("group_0") ||
            !(*groups)["group_0"].is_object()) {
            list_.add("both", "aiu-group0-missing", Severity::Error, fp8StoredLinears(checkpoint_, false),
                      "fms_mo reads only config_groups.group_0, which this config lacks, so loading fails with a KeyError.",
                      "Rename the group that quantizes the Linears to group_0.");
            return false;
        }
        const json& group0 = (*groups)["group_0"];
        std::vector<std::string> missing;
        for (const char* key : {"targets", "weights", "input_activations", "output_activations"})
            if (!group0.contains(key))
                missing.push_back(std::string("config_groups.group_0.") + key);
        if (!raw.contains("ignore"))
            missing.push_back("ignore");
        if (!missing.empty())
            list_.add("both", "aiu-missing-keys", Severity::Error, {},
                      listed(missing) + (missing.size() == 1 ? " is" : " are") +
                          " absent, and fms_mo indexes them directly, so loading fails with a KeyError.",
                      "Write those keys, null or empty where unused.");
        for (const ConfigGroup& g : quantization.groups)
            if (g.name == "group_0")
                group0_ = &g;
        if (group0_) {
            for (const std::string& t : group0_->targets)
                targetsLinear_ = targetsLinear_ || t == "Linear";
            checkIgnoredGroups(quantization);
            checkWeights(group0);
            checkActivations(group0);
        }
        const auto kv = raw.find("kv_cache_scheme");
        if (kv != raw.end() && !kv->is_null()) {
            std::vector<std::string> attention;
            for (int layer = 0; layer < checkpoint_.config().numLayers; ++layer)
                attention.push_back(layout_.attentionModule(layer));
            list_.add("both", "aiu-kv-cache-dropped", Severity::Warning, attention,
                      "kv_cache_scheme is set, but fms_mo drops it, so the AIU runs attention without the "
                      "checkpoint's KV-cache quantization.",
                      "Set kv_cache_scheme to null, or compare the AIU against a run without KV-cache quantization.");
        }
        return true;
    }

    void checkIgnoredGroups(const QuantizationConfig& quantization)
    {
        for (const ConfigGroup& g : quantization.groups) {
            if (&g == group0_)
                continue;
            std::vector<std::string> picked;
            bool weightsDiffer = false;
            for (const LayoutLinear& linear : layout_.linears())
                if (linear.layer >= 0 && checkpoint_.plan().targetGroup(linear.module) == &g) {
                    picked.push_back(linear.module);
                    weightsDiffer = weightsDiffer || !g.weights || !group0_->weights ||
                                    g.weights->strategy != group0_->weights->strategy;
                }
            if (picked.empty())
                continue;
            if (sameScheme(g, *group0_)) {
                list_.add("both", "aiu-group-ignored", Severity::Info, picked,
                          "fms_mo reads only group_0 and ignores " + g.name + ", which quantizes " + listed(picked) +
                              " exactly as group_0 does.",
                          "");
                continue;
            }
            const std::string fate = targetsLinear_ ? "are built with group_0's scheme (" + describeScheme(*group0_) + ")"
                                                    : "are built as plain Linears";
            list_.add("both", "aiu-group-ignored", weightsDiffer || !targetsLinear_ ? Severity::Error : Severity::Warning,
                      picked,
                      "fms_mo reads only group_0 and ignores " + g.name + ", so " + listed(picked) + " " + fate +
                          " instead of " + g.name + "'s (" + describeScheme(g) + ")" +
                          (weightsDiffer ? ", which their stored scales do not fit." : "."),
                      "Quantize every encoder Linear with one scheme in group_0 for the AIU.");
        }
    }

    void checkWeights(const json& group0)
    {
        const std::vector<std::string> fp8 = fp8StoredLinears(checkpoint_, true);
        const json weights = group0.value("weights", json(nullptr));
        if (!weights.is_object() || weights.value("type", json(nullptr)) != "float" || weights.value("num_bits", json(nullptr)) != 8) {
            list_.add("both", "aiu-weights-unsupported", Severity::Error, fp8,
                      "group_0 does not declare 8-bit float weights, which is all fms_mo's FP8 Linear takes.",
                      "Quantize the weights to FP8 E4M3 per channel or per tensor.");
            return;
        }
        if (weights.value("symmetric", json(nullptr)) != true || weights.value("dynamic", json(nullptr)) != false)
            list_.add("both", "aiu-weights-unsupported", Severity::Error, fp8,
                      "group_0's weights have symmetric " + quotedJsonValue(weights.value("symmetric", json(nullptr))) +
                          " and dynamic " + quotedJsonValue(weights.value("dynamic", json(nullptr))) +
                          ", but fms_mo's FP8 Linear takes symmetric, static weights only.",
                      "Quantize the weights symmetric with dynamic false.");
        weightStrategy_ = group0_->weights ? group0_->weights->strategy : "";
        const auto strategy = weights.find("strategy");
        if (strategy == weights.end() || strategy->is_null()) {
            const bool tensor = weightStrategy_ != "channel";
            list_.add("both", "aiu-weights-strategy-missing", tensor ? Severity::Error : Severity::Info, fp8,
                      "group_0 gives no weights strategy, so compressed-tensors infers " + weightStrategy_ +
                          " while fms_mo assumes channel" + (tensor ? ", and the [1] weight scales do not load." : "."),
                      "Write the weights strategy explicitly.");
            weightStrategy_ = "channel";
        } else if (weightStrategy_ != "tensor" && weightStrategy_ != "channel") {
            list_.add("both", "aiu-weights-unsupported", Severity::Error, fp8,
                      "group_0 has " +
                          (group0_->format == "mxfp8-quantized" ? std::string("MXFP8 weights (U8 E8M0 scales per 32 input channels)")
                                                                : weightStrategy_ + " weights") +
                          ", but fms_mo's FP8 Linear takes tensor or channel weights only, so their scales fail to load.",
                      "Re-quantize with per-channel weights and per-token activations for the AIU.");
        }
    }

    void checkActivations(const json& group0)
    {
        const json activations = group0.value("input_activations", json(nullptr));
        if (activations.is_null())
            return;
        const std::vector<std::string> fp8 = fp8StoredLinears(checkpoint_, true);
        const json dynamic = activations.is_object() ? activations.value("dynamic", json(nullptr)) : json(nullptr);
        const std::string strategy = group0_->inputActivations ? group0_->inputActivations->strategy : "";
        const bool fp8Activations = activations.is_object() && activations.value("type", json(nullptr)) == "float" &&
                                    activations.value("num_bits", json(nullptr)) == 8;
        if (!fp8Activations || !dynamic.is_boolean() || (dynamic == true && strategy != "token") ||
            (dynamic == false && strategy != "tensor")) {
            list_.add("both", "aiu-activations-unsupported", Severity::Error, fp8,
                      "group_0 has " + std::string(dynamic.is_boolean() ? (dynamic == true ? "dynamic " : "static ") : "dynamic " + quotedJsonValue(dynamic) + " ") +
                          strategy + " input activations, but fms_mo takes 8-bit float activations dynamic per token "
                          "or static per tensor only.",
                      "Re-quantize with dynamic per-token (or static per-tensor) FP8 activations.");
            return;
        }
        staticActivations_ = dynamic == false;
        if (weightStrategy_ == "channel" && strategy == "tensor")
            list_.add("both", "aiu-channel-weights-tensor-activations", Severity::Error, fp8,
                      "Channel weights with per-tensor activations fail at the first forward in fms_mo, whose "
                      "row-wise weights need per-token activations.",
                      "Re-quantize with per-token activations, or with per-tensor weights.");
        if (weightStrategy_ == "tensor" && strategy == "token")
            list_.add("both", "aiu-tensor-weights-token-activations", Severity::Info, fp8,
                      "fms_mo accepts tensor weights with per-token activations but has no test of them.", "");
    }

    // fms builds the word embeddings as a plain nn.Embedding (models/roberta.py; fms_mo's FP8
    // selector only sees Linears built through get_linear), so whatever the config says an FP8
    // table loads as its codes: loading keeps the stored dtype, and the scale, renamed
    // base_model.embedding.weight_scale by the name adapter, matches no parameter and is dropped
    // as a key "not copied into model" (utils/serialization.py). The forward then looks up
    // unscaled F8_E4M3 values and adds them to the 16-bit position embeddings, which torch refuses
    // (no type promotion for float8) [derived, not run].
    void checkWordEmbeddings()
    {
        const TensorView* table = checkpoint_.tensors().find(layout_.wordEmbeddingsTensor());
        if (!table || !isFp8(table->dtype))
            return;
        const std::string fmsTable = layout_.family().fmsWordEmbeddingsModule + ".weight";
        list_.add("both", "aiu-embedding-fp8", Severity::Error, {layout_.wordEmbeddingsModule()},
                  "fms builds " + layout_.wordEmbeddingsModule() + " as a plain embedding (" + fmsTable +
                      "), which fms_mo does not quantize, so its F8_E4M3 codes load as the table without their "
                      "weight_scale (dropped as a key not copied into the model) and the first forward fails or "
                      "computes with unscaled codes.",
                  "Store the word embeddings float in the model's 16-bit dtype for the AIU (quantize without "
                  "--embeddings fp8).");
    }

    // The FMS name of a Linear under a loading: fms asks fms_mo with it.
    static std::string fmsNameOf(const LayoutLinear& linear, AiuLoading loading)
    {
        return loading == AiuLoading::Fused ? linear.fmsFusedName : linear.fmsName;
    }

    // fms_mo's ignore rule: a Linear stays plain when its FMS name is a SUBSTRING of an entry; only
    // "lm_head" is translated (to "head"), "re:" entries are plain strings. The entry that keeps it, or "".
    std::string keepingEntry(const std::string& fmsName) const
    {
        for (const std::string& entry : checkpoint_.config().quantization->ignore) {
            const std::string compared = entry == "lm_head" ? "head" : entry;
            if (!fmsName.empty() && compared.find(fmsName) != std::string::npos)
                return entry;
        }
        return "";
    }

    bool storedFp8(const std::string& module) const
    {
        const TensorView* weight = checkpoint_.tensors().find(module + ".weight");
        return weight && isFp8(weight->dtype);
    }

    // Layers whose fused q, k and v are stored partly float, partly FP8, and those float ones.
    std::vector<std::string> qkvKeptAlone(std::vector<int>& layers) const
    {
        std::vector<std::string> alone;
        for (const FusedUnitFloat& fused : fusedUnitsAfterKeeping(checkpoint_, {}))
            if (fused.split()) {
                layers.push_back(layout_.findLinear(fused.unit.linears.front())->layer);
                alone.insert(alone.end(), fused.floatLinears.begin(), fused.floatLinears.end());
            }
        return alone;
    }

    void checkFusedQkv()
    {
        std::vector<int> mixedLayers;
        const std::vector<std::string> alone = qkvKeptAlone(mixedLayers);
        mixedLayers_ = std::set<int>(mixedLayers.begin(), mixedLayers.end());
        if (!alone.empty())
            list_.add("fused", "aiu-qkv-kept-alone", Severity::Error, alone,
                      "With fused q/k/v (fms's default) q, k and v of a layer are one Linear (" +
                          layout_.fmsName(alone.front(), true) + "), but only " +
                          listed(alone) + " is stored float, so the fused Linear cannot load.",
                      "Keep q, k and v of the layer float together, or load unfused (fused_weights=False, "
                      "aiu-fms-testing-utils --unfuse_weights).");
        if (weightStrategy_ != "tensor" && !staticActivations_)
            return;
        std::vector<std::string> perTensor;
        for (const LayoutLinear& linear : layout_.linears())
            if (isFused(linear) && storedFp8(linear.module))
                perTensor.push_back(linear.module);
        if (!perTensor.empty())
            list_.add("fused", "aiu-qkv-per-tensor-scales", Severity::Error, perTensor,
                      std::string("With fused q/k/v (fms's default) the per-tensor ") +
                          (weightStrategy_ != "tensor" ? "static input"
                           : staticActivations_        ? "weight and static input"
                                                       : "weight") +
                          " scales of q, k and v concatenate to shape [3] and fail to load into the fused FP8 Linear's [1].",
                      staticActivations_
                          ? "Load unfused (fused_weights=False, aiu-fms-testing-utils --unfuse_weights), or re-quantize "
                            "with per-channel weights and dynamic per-token activations."
                          : "Load unfused (fused_weights=False, aiu-fms-testing-utils --unfuse_weights), or store the "
                            "weight scales per channel, the same numbers (keep-float --per-channel-weights).");
    }

    // Per loading, what fms_mo builds for each encoder Linear against what is stored.
    void checkLinears()
    {
        checkFusedQkv();
        const Dtype activations = runtimeDtype(checkpointFloatDtype(checkpoint_));
        for (AiuLoading loading : {AiuLoading::Fused, AiuLoading::Unfused}) {
            std::vector<std::string> plainFp8, builtFp8, float32Kept;
            std::string plainEntry;
            for (const LayoutLinear& linear : layout_.linears()) {
                if (linear.layer < 0)
                    continue; // heads: checkHeadsAndPooler
                if (loading == AiuLoading::Fused && isFused(linear) && mixedLayers_.count(linear.layer))
                    continue; // aiu-qkv-kept-alone
                const TensorView* weight = checkpoint_.tensors().find(linear.module + ".weight");
                if (!weight)
                    continue;
                const std::string entry = keepingEntry(fmsNameOf(linear, loading));
                const bool plain = !entry.empty() || !targetsLinear_;
                if (isFp8(weight->dtype) && plain) {
                    plainFp8.push_back(linear.module);
                    plainEntry = entry;
                } else if (!isFp8(weight->dtype) && !plain) {
                    builtFp8.push_back(linear.module);
                } else if (!isFp8(weight->dtype) && runtimeDtype(weight->dtype) != activations) {
                    float32Kept.push_back(linear.module);
                }
            }
            reportLinears(loading, plainFp8, plainEntry, builtFp8, float32Kept, activations);
        }
    }

    void reportLinears(AiuLoading loading, const std::vector<std::string>& plainFp8, const std::string& plainEntry,
                       const std::vector<std::string>& builtFp8, const std::vector<std::string>& keptWide,
                       Dtype activations)
    {
        const std::string tag = aiuLoadingName(loading);
        if (!plainFp8.empty())
            list_.add(tag, "aiu-fp8-loads-plain", Severity::Error, plainFp8,
                      (plainEntry.empty() ? "group_0 does not target \"Linear\", so fms_mo builds " + listed(plainFp8)
                                          : "ignore entry \"" + plainEntry + "\" contains the FMS name of " + listed(plainFp8) +
                                                ", so fms_mo builds it") +
                          " as a plain Linear, which computes with the stored FP8 codes as weights (garbage out).",
                      "Store those weights float, or take their FMS names out of ignore.");
        if (!builtFp8.empty()) {
            const LayoutLinear* first = layout_.findLinear(builtFp8[0]);
            list_.add(tag, "aiu-float-built-fp8", Severity::Error, builtFp8,
                      listed(builtFp8) + " is stored float, but no ignore entry contains its FMS name " +
                          fmsNameOf(*first, loading) + " (fms_mo matches ignore entries by that substring; HF names "
                          "and re: patterns do not count), so fms_mo builds it as FP8 with an uninitialised "
                          "weight_scale (garbage out).",
                      "Add the FMS name of each float Linear to ignore (keep-float writes both names).");
        }
        if (!keptWide.empty())
            list_.add(tag, "aiu-kept-float32", Severity::Error, keptWide,
                      listed(keptWide) + " is kept float in " +
                          dtypeName(checkpoint_.tensors().find(keptWide[0] + ".weight")->dtype) + " next to " +
                          dtypeName(activations) + " activations, which fms cannot multiply together.",
                      "Store a kept weight in the checkpoint's 16-bit dtype (keep-float does).");
    }

    void checkHeadsAndPooler()
    {
        std::vector<std::string> heads;
        for (const LayoutLinear& linear : layout_.linears())
            if (linear.layer < 0 && storedFp8(linear.module))
                heads.push_back(linear.module);
        if (!heads.empty())
            list_.add("both", "aiu-head-fp8", Severity::Error, heads,
                      listed(heads) + " is stored FP8, but fms builds the heads as plain Linears, which compute with "
                      "the codes as weights (garbage out).",
                      "Store the head float (list it in ignore when quantizing).");
        // fms loads the pooler into the module named like a head Linear of some heads (a masked LM's
        // transform, RoBERTa's classifier.dense): with both stored, that head may get the pooler's weights.
        const std::string pooler = layout_.poolerModule();
        const LayoutLinear* dense = nullptr;
        for (const LayoutLinear& linear : layout_.linears())
            if (linear.layer < 0 && linear.fmsName == layout_.family().fmsPoolerModule)
                dense = &linear;
        // BERT's classifier runs the pooler as its own dense Linear: nothing else competes for it.
        if (!dense || pooler.empty() || dense->module == pooler)
            return;
        std::vector<std::string> poolerTensors;
        for (const TensorView* view : checkpoint_.tensors().tensors())
            if (view->name.rfind(pooler + ".", 0) == 0)
                poolerTensors.push_back(view->name);
        if (!poolerTensors.empty()) {
            const std::string denseName = dense->module;
            const std::string fms = dense->fmsName;
            list_.add("both", "aiu-pooler-collision", Severity::Error, poolerTensors,
                      std::string("The ") + architectureName(checkpoint_.config().architecture) + " checkpoint still holds " +
                          pooler + ", which fms loads into " + fms + " like " +
                          denseName + ", so the head may get the pooler's weights.",
                      "Remove the " + pooler + " tensors from the checkpoint.");
        }
    }

    void checkDtypes()
    {
        bool bf16 = false;
        for (const TensorView* view : checkpoint_.tensors().tensors())
            bf16 = bf16 || view->dtype == Dtype::BF16;
        if (bf16)
            list_.add("both", "aiu-bf16-cast", Severity::Info, {},
                      "The checkpoint holds bf16 tensors, which the AIU runs only cast to fp16.",
                      "Load with aiu-fms-testing-utils --cast_bf16_to_fp16.");
        const auto& quantization = checkpoint_.config().quantization;
        if (quantization && !quantization->ignore.empty())
            list_.add("both", "aiu-tensor-parallel-ignore", Severity::Info, {},
                      "Under tensor parallelism fms asks fms_mo for the feed-forward Linears' type without a name, "
                      "which crashes on a non-empty ignore list.",
                      "Run this checkpoint on one card.");
    }

    // The AIU casts bf16 to fp16 (--cast_bf16_to_fp16); every other dtype stays as stored.
    static Dtype runtimeDtype(Dtype stored) { return stored == Dtype::BF16 ? Dtype::F16 : stored; }

    ConsumerReport report()
    {
        ConsumerReport out;
        out.consumer = Consumer::Aiu;
        mergeLoadings(list_.findings());
        out.findings = list_.findings();
        ConsumerVerdict worst = ConsumerVerdict::AsIntended;
        for (AiuLoading loading : {AiuLoading::Fused, AiuLoading::Unfused}) {
            std::vector<ConsumerFinding> holding;
            for (const ConsumerFinding& f : out.findings)
                if (f.loading == "both" || f.loading == aiuLoadingName(loading))
                    holding.push_back(f);
            const ConsumerVerdict verdict = verdictOf(holding);
            out.loadings.emplace_back(loading, verdict);
            worst = std::max(worst, verdict);
            if (writtenFor_ == loading)
                out.writtenFor = loading;
        }
        out.verdict = worst;
        for (const auto& [loading, verdict] : out.loadings)
            if (out.writtenFor == loading)
                out.verdict = verdict;
        return out;
    }

    // The one AIU loading keep-float wrote this copy for, from its provenance: "aiu unfused"
    // without "aiu fused". A provenance file that cannot be read changes no verdict (inspect
    // reports it on its own).
    static std::optional<AiuLoading> recordedLoading(const Checkpoint& checkpoint)
    {
        try {
            const std::optional<nlohmann::json> provenance = readFixProvenance(checkpoint.directory());
            if (!provenance || !provenance->contains("written_for") || !(*provenance)["written_for"].is_array())
                return std::nullopt;
            const nlohmann::json& names = (*provenance)["written_for"];
            const bool fused = std::find(names.begin(), names.end(), kConsumerAiuFused) != names.end();
            const bool unfused = std::find(names.begin(), names.end(), kConsumerAiuUnfused) != names.end();
            if (unfused && !fused)
                return AiuLoading::Unfused;
        } catch (const Error&) {
        }
        return std::nullopt;
    }

    // A finding that reads the same under both loadings is reported once, as "both".
    static void mergeLoadings(std::vector<ConsumerFinding>& findings)
    {
        for (ConsumerFinding& fused : findings) {
            if (fused.loading != "fused")
                continue;
            const auto twin = std::find_if(findings.begin(), findings.end(), [&](const ConsumerFinding& f) {
                return f.loading == "unfused" && f.code == fused.code && f.modules == fused.modules &&
                       f.message == fused.message;
            });
            if (twin != findings.end()) {
                fused.loading = "both";
                twin->loading = "merged";
            }
        }
        findings.erase(std::remove_if(findings.begin(), findings.end(),
                                      [](const ConsumerFinding& f) { return f.loading == "merged"; }),
                       findings.end());
    }

    const Checkpoint& checkpoint_;
    const EncoderLayout& layout_;
    FindingList list_;
    const ConfigGroup* group0_ = nullptr;
    bool targetsLinear_ = false;
    std::string weightStrategy_;
    bool staticActivations_ = false;
    std::set<int> mixedLayers_;
    std::optional<AiuLoading> writtenFor_ = recordedLoading(checkpoint_);
};

// ---------------------------------------------------------------------------------------------
// The findings vLLM and compressed-tensors share: what their matching builds against what is stored.

void addStoredAgainstBuilt(FindingList& list, const std::string& prefix, const std::string& who,
                           const StoredAgainstBuilt& compared)
{
    if (!compared.floatBuiltFp8.empty())
        list.add("", prefix + "-float-built-fp8", Severity::Error, compared.floatBuiltFp8,
                 who + " builds " + listed(compared.floatBuiltFp8) + " as FP8 (a group targets it and no ignore entry " +
                     "matches it as " + who + " matches), but its weight is stored float without scales, so loading fails.",
                 "List the float Linear in ignore by its exact Hugging Face name.");
    if (!compared.fp8BuiltFloat.empty())
        list.add("", prefix + "-fp8-loads-float", Severity::Error, compared.fp8BuiltFloat,
                 who + " builds " + listed(compared.fp8BuiltFloat) + " as a float Linear (ignored or untargeted as " +
                     who + " matches), but its weight is stored FP8, so the codes load as weights (garbage out).",
                 "Target the FP8 Linears with a group, or store them float.");
}

ConsumerReport reportOf(Consumer consumer, std::vector<ConsumerFinding> findings)
{
    ConsumerReport out;
    out.consumer = consumer;
    out.verdict = verdictOf(findings);
    out.findings = std::move(findings);
    return out;
}

// vLLM (compressed_tensors/utils.py, models/bert.py): exact names or re: for targets and ignore,
// q/k/v packed into qkv_proj, groups that target attention modules dropped.
ConsumerReport assessVllm(const Checkpoint& checkpoint)
{
    FindingList list(Consumer::Vllm);
    addRunRefusals(list, "", "vllm-run-refused", checkpoint);
    const auto& quantization = checkpoint.config().quantization;
    const EncoderLayout& layout = checkpoint.layout();
    if (!quantization) {
        addStoredAgainstBuilt(list, "vllm", "vLLM", compareStoredAndBuilt(checkpoint, [](const LayoutLinear&) { return false; }));
        return reportOf(Consumer::Vllm, std::move(list.findings()));
    }
    // Groups that target an attention module are dropped before matching.
    QuantizationConfig matched = *quantization;
    matched.ignore.clear(); // vLLM's own ignore rule below: names only, no class names
    std::vector<ConfigGroup> kept;
    for (const ConfigGroup& g : quantization->groups) {
        std::vector<std::string> attention;
        for (int layer = 0; layer < checkpoint.config().numLayers; ++layer)
            for (const std::string& t : g.targets)
                if (matchesTarget(t, layout.attentionModule(layer), "") &&
                    std::find(attention.begin(), attention.end(), layout.attentionModule(layer)) == attention.end())
                    attention.push_back(layout.attentionModule(layer));
        if (attention.empty()) {
            kept.push_back(g);
            continue;
        }
        list.add("", "vllm-attention-group-dropped", Severity::Warning, attention,
                 "vLLM drops " + g.name + " because it targets attention modules (" + listed(attention) +
                     "), so nothing it quantizes is quantized there.",
                 "Target the Linears by name or class instead of the attention modules.");
    }
    matched.groups = kept;
    auto vllmGroup = [&](const std::string& module) -> const ConfigGroup* {
        for (const std::string& entry : quantization->ignore)
            if (matchesTarget(entry, module, ""))
                return nullptr;
        return findGroupFor(matched, module, "Linear");
    };
    addStoredAgainstBuilt(list, "vllm", "vLLM",
                          compareStoredAndBuilt(checkpoint, [&](const LayoutLinear& l) { return vllmGroup(l.module) != nullptr; }));

    std::vector<std::string> differ;
    for (const RuntimeUnit& unit : runtimeUnits(layout)) {
        if (!unit.fused())
            continue;
        const ConfigGroup* first = vllmGroup(unit.linears.front());
        bool same = true;
        for (const std::string& module : unit.linears) {
            const ConfigGroup* g = vllmGroup(module);
            same = same && ((g == nullptr) == (first == nullptr)) && (!g || sameScheme(*g, *first));
        }
        if (!same)
            differ.insert(differ.end(), unit.linears.begin(), unit.linears.end());
    }
    if (!differ.empty())
        list.add("", "vllm-qkv-schemes-differ", Severity::Error, differ,
                 "vLLM packs q, k and v of a layer into one qkv_proj and refuses " + listed(differ) +
                     " because they do not share one scheme (\"vLLM requires all to use the same scheme\").",
                 "Quantize q, k and v of each layer alike, or keep all three float.");
    if (statusMisreadable(checkpoint))
        list.add("", "vllm-status-ignored", Severity::Info, fp8StoredLinears(checkpoint, false),
                 "vLLM does not read quantization_status (" + statusLabel(*quantization) +
                     "), so it builds the FP8 Linears from config_groups and the stored tensors as intended.",
                 "");
    if (hasTransforms(*quantization))
        list.add("", "vllm-transform-applied", Severity::Info, {},
                 "vLLM applies the checkpoint's transform_config (its rotations) to the Linears it targets.", "");
    const std::vector<std::string> unmatched = unmatchedIgnoreEntries(checkpoint, false);
    if (!unmatched.empty())
        list.add("", "vllm-ignore-unmatched", Severity::Info, unmatched,
                 "The ignore entries " + listed(unmatched) + " match no module by vLLM's rules, which is harmless.", "");
    return reportOf(Consumer::Vllm, std::move(list.findings()));
}

// compressed-tensors / transformers (utils/match.py): exact names, re: and class names, the most
// specific group, transforms applied.
ConsumerReport assessCompressedTensors(const Checkpoint& checkpoint)
{
    FindingList list(Consumer::CompressedTensors);
    addRunRefusals(list, "", "ct-run-refused", checkpoint);
    const auto& quantization = checkpoint.config().quantization;
    const LinearPlan& plan = checkpoint.plan();
    const std::vector<std::string> fp8 = fp8StoredLinears(checkpoint, false);
    if (quantization) {
        if (statusMisreadable(checkpoint))
            list.add("", "ct-status-not-compressed", Severity::Error, fp8,
                     "quantization_status is " + statusLabel(*quantization) +
                         " although the weights are FP8 on disk, so transformers does not decompress them and takes "
                         "the codes without their scales.",
                     "Set quantization_status to \"compressed\" in config.json (the tensors already are).");
        if (hasTransforms(*quantization))
            list.add("", "ct-transform-applied", Severity::Info, {},
                     "compressed-tensors applies the checkpoint's transform_config (its rotations) when loading.", "");
    }
    StoredAgainstBuilt compared = compareStoredAndBuilt(checkpoint, [&](const LayoutLinear& l) {
        return quantization && plan.targetGroup(l.module) != nullptr;
    });
    // An Embedding is matched and decompressed like a Linear there (the word embeddings run as
    // stored here, which inspect's diagnostics say).
    if (plan.wordEmbeddingsFloatButTargeted())
        compared.floatBuiltFp8.push_back(plan.wordEmbeddings().module);
    addStoredAgainstBuilt(list, "ct", "compressed-tensors", compared);
    std::vector<std::string> conflicted;
    for (const LayoutLinear& linear : checkpoint.layout().linears()) {
        const GroupMatch* match = plan.groupMatch(linear.module);
        if (!match || !match->group)
            continue;
        for (const GroupCandidate& other : match->conflicts)
            if (other.group && other.group != match->group && !sameScheme(*other.group, *match->group)) {
                conflicted.push_back(linear.module);
                break;
            }
    }
    if (!conflicted.empty())
        list.add("", "ct-group-conflict", Severity::Error, conflicted,
                 "Two groups pick " + listed(conflicted) + " with equally specific targets and different schemes, so "
                 "compressed-tensors has no rule to choose between them.",
                 "Make one group's target more specific (an exact name beats a re: pattern beats a class name).");
    if (quantization) {
        const std::vector<std::string> unmatched = unmatchedIgnoreEntries(checkpoint, true);
        if (!unmatched.empty())
            list.add("", "ct-ignore-unmatched", Severity::Info, unmatched,
                     "The ignore entries " + listed(unmatched) + " match no module, which compressed-tensors accepts "
                     "without a warning.", "");
    }
    return reportOf(Consumer::CompressedTensors, std::move(list.findings()));
}

// Per layer, the q/k/v Linears that end up float once `modules` are kept float.

} // namespace

const char* consumerName(Consumer consumer)
{
    switch (consumer) {
    case Consumer::Aiu: return "aiu";
    case Consumer::Vllm: return "vllm";
    case Consumer::CompressedTensors: return "compressed-tensors";
    }
    return "?";
}

const char* verdictName(ConsumerVerdict verdict)
{
    switch (verdict) {
    case ConsumerVerdict::AsIntended: return "as intended";
    case ConsumerVerdict::RunsDifferently: return "runs differently";
    case ConsumerVerdict::Fails: return "fails";
    }
    return "?";
}

const char* aiuLoadingName(AiuLoading loading)
{
    return loading == AiuLoading::Fused ? "fused" : "unfused";
}

ConsumerVerdict verdictOf(const std::vector<ConsumerFinding>& findings)
{
    ConsumerVerdict verdict = ConsumerVerdict::AsIntended;
    for (const ConsumerFinding& f : findings)
        verdict = std::max(verdict, f.severity == Severity::Error     ? ConsumerVerdict::Fails
                                    : f.severity == Severity::Warning ? ConsumerVerdict::RunsDifferently
                                                                      : ConsumerVerdict::AsIntended);
    return verdict;
}

std::vector<StatusMisreading> statusMisreadings(const Checkpoint& checkpoint)
{
    if (!statusMisreadable(checkpoint))
        return {};
    return {{Consumer::Aiu, "the AIU (fms_mo) builds FP8 Linears only for exactly \"compressed\", so it loads every "
                            "Linear plain with the FP8 codes as weights"},
            {Consumer::CompressedTensors, "compressed-tensors under transformers decompresses only a checkpoint "
                                          "labelled \"compressed\", so it takes the codes without their scales"}};
}

std::vector<ConsumerReport> assessConsumers(const Checkpoint& checkpoint)
{
    return {AiuAssessment(checkpoint).run(), assessVllm(checkpoint), assessCompressedTensors(checkpoint)};
}

Dtype checkpointFloatDtype(const Checkpoint& checkpoint)
{
    const TensorView* embeddings = checkpoint.tensors().find(checkpoint.layout().wordEmbeddingsTensor());
    if (embeddings && isFloatDtype(embeddings->dtype) && !isFp8(embeddings->dtype))
        return embeddings->dtype;
    const std::string& declared = checkpoint.config().torchDtype;
    if (declared == "bfloat16")
        return Dtype::BF16;
    if (declared == "float16")
        return Dtype::F16;
    return Dtype::F32;
}

std::optional<std::string> keepFloatRefusal(const Checkpoint& checkpoint, const std::vector<std::string>& modules,
                                            const KeepFloatConsumers& consumers)
{
    const bool aiuFused = consumers.aiu && !consumers.aiuUnfused;
    if (!consumers.vllm && !aiuFused)
        return std::nullopt;
    for (const FusedUnitFloat& fused : fusedUnitsAfterKeeping(checkpoint, modules)) {
        if (!fused.split())
            continue;
        const std::string who = consumers.vllm && aiuFused ? "vLLM and the AIU's fused loading pack"
                                : consumers.vllm           ? "vLLM packs"
                                                           : "the AIU's fused loading packs";
        return "Keeping " + joinedWords(fused.floatLinears, " and ") + " of " + checkpoint.directory() + " float leaves it without the rest of " +
               fused.unit.label + " (" + joinedWords(fused.unit.linears, " and ") + "), which " + who + " into one Linear: keep all " +
               (fused.unit.linears.size() == 3 ? std::string("three") : std::to_string(fused.unit.linears.size())) +
               (consumers.aiu && !consumers.vllm ? ", or load unfused on the AIU." : ".");
    }
    return std::nullopt;
}

std::vector<std::string> keepFloatIgnoreNames(const Checkpoint& checkpoint, const std::vector<std::string>& modules)
{
    const EncoderLayout& layout = checkpoint.layout();
    std::vector<std::string> names;
    auto add = [&](const std::string& name) {
        if (!name.empty() && std::find(names.begin(), names.end(), name) == names.end())
            names.push_back(name);
    };
    for (const std::string& module : modules) {
        add(module);
        add(layout.fmsName(module, false));
    }
    for (const FusedUnitFloat& fused : fusedUnitsAfterKeeping(checkpoint, modules)) {
        const bool anyKeptHere = std::any_of(fused.floatLinears.begin(), fused.floatLinears.end(), [&](const std::string& m) {
            return std::find(modules.begin(), modules.end(), m) != modules.end();
        });
        if (fused.whole() && anyKeptHere)
            add(layout.fmsName(fused.unit.linears.front(), true));
    }
    return names;
}

namespace {

// The consumer names of KeepFloatValidity a finding concerns.
std::vector<std::string> validityNames(const ConsumerFinding& finding)
{
    switch (finding.consumer) {
    case Consumer::Aiu:
        if (finding.loading == "fused")
            return {kConsumerAiuFused};
        if (finding.loading == "unfused")
            return {kConsumerAiuUnfused};
        return {kConsumerAiuFused, kConsumerAiuUnfused};
    case Consumer::Vllm: return {kConsumerVllm};
    case Consumer::CompressedTensors: return {kConsumerCompressedTensors};
    }
    return {};
}

// The checkpoint's own failures that keeping `keptFloat` float leaves in place (an error finding
// about Linears not all kept float): the scheme fails there before anything is kept float.
std::vector<const ConsumerFinding*> schemeFailures(const std::vector<ConsumerReport>& reports,
                                                   const std::vector<std::string>& keptFloat)
{
    std::vector<const ConsumerFinding*> failures;
    for (const ConsumerReport& report : reports)
        for (const ConsumerFinding& finding : report.findings) {
            const bool resolved = !finding.modules.empty() &&
                                  std::all_of(finding.modules.begin(), finding.modules.end(), [&](const std::string& m) {
                                      return std::find(keptFloat.begin(), keptFloat.end(), m) != keptFloat.end();
                                  });
            if (finding.severity == Severity::Error && !resolved)
                failures.push_back(&finding);
        }
    return failures;
}

std::string consumerWords(const std::string& name)
{
    if (name == kConsumerAiuFused)
        return "the AIU with fused q/k/v (fms's default)";
    if (name == kConsumerAiuUnfused)
        return "the AIU with unfused q/k/v (fused_weights=False, --unfuse_weights)";
    if (name == kConsumerVllm)
        return "vLLM";
    return "compressed-tensors/transformers";
}

} // namespace

KeepFloatConsumers consumersTheSchemeAllows(const Checkpoint& checkpoint, const std::vector<std::string>& modules,
                                            KeepFloatConsumers requested, std::string& why)
{
    why.clear();
    if (!requested.aiu || requested.aiuUnfused)
        return requested;
    const std::vector<ConsumerReport> reports = assessConsumers(checkpoint); // the failures point into it
    const ConsumerFinding* fusedFailure = nullptr;
    for (const ConsumerFinding* failure : schemeFailures(reports, modules)) {
        if (failure->consumer != Consumer::Aiu)
            continue;
        if (failure->loading != "fused")
            return requested; // the unfused loading fails too: nothing to choose
        fusedFailure = failure;
    }
    if (!fusedFailure)
        return requested;
    requested.aiuUnfused = true;
    why = "Written for the AIU's unfused loading (fused_weights=False, aiu-fms-testing-utils --unfuse_weights), "
          "the one this checkpoint's scheme allows. " + fusedFailure->message;
    return requested;
}

std::string aiuLoadingsText(const ConsumerReport& report)
{
    std::string text;
    for (const auto& [loading, verdict] : report.loadings)
        text += std::string(text.empty() ? "" : ", ") + aiuLoadingName(loading) + ": " + verdictName(verdict);
    if (report.writtenFor && !text.empty())
        text = std::string("written for the ") + aiuLoadingName(*report.writtenFor) + " loading; " + text;
    return text;
}

KeepFloatValidity keepFloatValidity(const Checkpoint& checkpoint, const std::vector<std::string>& keptFloat)
{
    const EncoderLayout& layout = checkpoint.layout();
    KeepFloatValidity validity;
    std::vector<std::string> splits;
    for (const FusedUnitFloat& fused : fusedUnitsAfterKeeping(checkpoint, keptFloat))
        if (fused.split()) {
            validity.splitUnits.push_back(fused.unit.label);
            splits.push_back(splitUnitText(layout, fused));
        }
    validity.consumers = splits.empty() ? std::vector<std::string>{kConsumerAiuFused, kConsumerAiuUnfused, kConsumerVllm, kConsumerCompressedTensors}
                                        : std::vector<std::string>{kConsumerAiuUnfused, kConsumerCompressedTensors};
    std::string schemeSentence;
    const std::vector<ConsumerReport> reports = assessConsumers(checkpoint); // the failures point into it
    for (const ConsumerFinding* failure : schemeFailures(reports, keptFloat)) {
        for (const std::string& name : validityNames(*failure))
            validity.consumers.erase(std::remove(validity.consumers.begin(), validity.consumers.end(), name), validity.consumers.end());
        std::vector<std::string> who;
        for (const std::string& name : validityNames(*failure))
            who.push_back(consumerWords(name));
        schemeSentence += " The original scheme itself fails on " + joinedWords(who) +
                          ", whatever is kept float: " + failure->message + (failure->fix.empty() ? "" : " Remedy: " + failure->fix);
        if (failure->consumer == Consumer::Aiu && failure->loading == "fused")
            schemeSentence += " (keep-float writes the fix for the unfused loading and records that in its provenance.)";
    }
    if (splits.empty() && schemeSentence.empty()) {
        validity.sentence = "Valid for every consumer (AIU with fused or unfused q/k/v, vLLM, compressed-tensors): "
                            "no Linear that a runtime fuses is kept float without its partners.";
        return validity;
    }
    std::vector<std::string> valid;
    for (const std::string& name : validity.consumers)
        valid.push_back(consumerWords(name));
    validity.sentence = valid.empty() ? "Valid for no consumer." : "Valid only for " + joinedWords(valid, " and ") + ".";
    if (!splits.empty())
        validity.sentence += " It splits " + joinedWords(splits, " and ") +
                             ", which fms's fused q/k/v Linear cannot hold and vLLM refuses (q, k, v in different "
                             "schemes); a sweep per unit keeps q, k and v together.";
    validity.sentence += schemeSentence;
    return validity;
}

} // namespace scalescope
