#include "json_output.h"

#include <cmath>

#include "common/text_files.h"
#include "model/quantization_config.h"
#include "numerics/half.h"

namespace scalescope::cli {

using json = nlohmann::json;

std::string jsonText(const json& document, int indent)
{
    try {
        return document.dump(indent);
    } catch (const json::type_error&) {
        return withValidUtf8(document).dump(indent);
    }
}

json finiteOrNull(double value)
{
    return std::isfinite(value) ? json(value) : json(nullptr);
}

json metricsJson(const ErrorMetrics& m)
{
    return {{"mse", finiteOrNull(m.mse)},           {"sqnr_db", finiteOrNull(m.sqnrDb)},
            {"cosine", finiteOrNull(m.cosine)},     {"max_abs_error", finiteOrNull(m.maxAbsError)},
            {"relative_l2", finiteOrNull(m.relativeL2)}, {"count", m.count}};
}

json findingsJson(const std::vector<Finding>& findings)
{
    json out = json::array();
    for (const Finding& f : findings)
        out.push_back({{"severity", severityName(f.severity)}, {"code", f.code}, {"subject", f.subject}, {"message", f.message}});
    return out;
}

json scaleStatisticsJson(const LinearScaleStatistics& s)
{
    json out = {{"module", s.module},
                {"layer", s.layer},
                {"group", s.group},
                {"rule", s.rule},
                {"quantized", s.quantized},
                {"weight_dtype", s.weightDtype},
                {"scale_dtype", s.scaleDtype},
                {"weight_strategy", s.weightStrategy},
                {"activation_scheme", s.activationScheme},
                {"out_features", s.outFeatures},
                {"in_features", s.inFeatures}};
    if (s.quantized) {
        out["scale_min"] = finiteOrNull(s.scaleMin);
        out["scale_median"] = finiteOrNull(s.scaleMedian);
        out["scale_max"] = finiteOrNull(s.scaleMax);
        out["scale_ratio"] = finiteOrNull(s.scaleRatio);
        out["clipped_share"] = s.clippedShare;
        out["underflow_share"] = s.underflowShare;
        out["exponent_histogram"] = s.exponentHistogram;
        json scales = json::array();
        for (float v : s.channelScales)
            scales.push_back(finiteOrNull(v));
        out["channel_scales"] = scales;
        if (s.gridRows > 0) { // block-wise: channel_scales is the block grid, row by row
            out["block_structure"] = {s.blockRows, s.blockColumns};
            out["block_grid"] = {s.gridRows, s.gridColumns};
            out["zero_blocks"] = s.zeroBlocks;
        }
    }
    out["input_scale"] = s.inputScale ? finiteOrNull(*s.inputScale) : json(nullptr);
    return out;
}

json inspectJson(const Checkpoint& checkpoint, const std::vector<LinearScaleStatistics>& statistics,
                 const std::vector<Finding>& findings)
{
    const ModelConfig& c = checkpoint.config();
    json out;
    out["checkpoint"] = checkpoint.directory();
    out["architecture"] = architectureName(c.architecture);
    out["config"] = {{"vocab_size", c.vocabSize},           {"hidden_size", c.hiddenSize},
                     {"num_hidden_layers", c.numLayers},     {"num_attention_heads", c.numHeads},
                     {"intermediate_size", c.intermediateSize}, {"max_position_embeddings", c.maxPositionEmbeddings},
                     {"layer_norm_eps", c.layerNormEps},     {"pad_token_id", c.padTokenId},
                     {"torch_dtype", c.torchDtype}};
    out["tokenizer"] = checkpoint.hasTokenizer();
    if (c.quantization) {
        out["quantization_config"] = c.quantization->raw;
        json schemes = json::array();
        for (const ConfigGroup& g : c.quantization->groups) {
            const auto reason = unsupportedSchemeReason(*c.quantization, g);
            schemes.push_back({{"group", g.name},
                               {"targets", g.targets},
                               {"format", g.format},
                               {"description", describeScheme(g)},
                               {"supported", !reason},
                               {"unsupported_reason", reason ? json(*reason) : json(nullptr)}});
        }
        out["schemes"] = schemes;
        out["ignore"] = c.quantization->ignore;
    } else {
        out["quantization_config"] = nullptr;
        out["schemes"] = json::array();
    }
    json tensors = json::array();
    for (const TensorView* view : checkpoint.tensors().tensors())
        tensors.push_back({{"name", view->name}, {"dtype", dtypeName(view->dtype)}, {"shape", view->shape}});
    out["tensors"] = tensors;
    json linears = json::array();
    for (const LinearScaleStatistics& s : statistics)
        linears.push_back(scaleStatisticsJson(s));
    out["linears"] = linears;
    out["diagnostics"] = findingsJson(findings);
    int errors = 0, warnings = 0, infos = 0;
    for (const Finding& f : findings)
        (f.severity == Severity::Error ? errors : f.severity == Severity::Warning ? warnings : infos)++;
    out["summary"] = {{"errors", errors}, {"warnings", warnings}, {"infos", infos}};
    return out;
}

json headroomJson(const std::vector<ModuleOutputRange>& ranges)
{
    json out = json::array();
    for (const ModuleOutputRange& range : ranges) {
        const double n = range.elements > 0 ? double(range.elements) : 1.0;
        out.push_back({{"module", range.module},
                       {"max_abs", std::isinf(range.maxAbs) ? json("inf") : json(range.maxAbs)},
                       {"overflows_fp16", range.maxAbs > half::kHalfMax},
                       {"below_half_normal_share", double(range.belowHalfNormal) / n}});
    }
    return out;
}

json comparisonJson(const ComparisonResult& c)
{
    json out;
    out["run"] = c.runLabel;
    out["reference"] = c.referenceLabel;
    out["reference_is_stand_in"] = c.referenceIsStandIn;
    if (c.referenceIsStandIn)
        out["note"] = "No --reference was given, so dequant (dequantized weights, float activations) stands in for the reference.";
    json points = json::array();
    for (const CapturePointMetrics& p : c.points) {
        json point = metricsJson(p.metrics);
        point["name"] = p.name;
        point["module"] = p.module;
        point["kind"] = captureKindName(p.kind);
        point["layer"] = p.layer;
        points.push_back(point);
    }
    out["points"] = points;
    json activations = json::array();
    for (const ActivationStatistics& a : c.activations) {
        const double n = a.elements > 0 ? double(a.elements) : 1.0;
        activations.push_back({{"module", a.module},
                               {"amax", a.amax},
                               {"input_scale", a.inputScale},
                               {"elements", a.elements},
                               {"clipped_share", double(a.clipped) / n},
                               {"flushed_share", double(a.flushedToZero) / n},
                               {"subnormal_share", double(a.subnormal) / n}});
    }
    out["activations"] = activations;
    json final = {{"logits", metricsJson(c.finalLogits)}};
    if (c.qa) {
        auto answer = [](const QaAnswer& a) {
            return json{{"text", a.text}, {"score", a.score}, {"start", a.start}, {"end", a.end}, {"null", a.isNull}};
        };
        final["qa"] = {{"same_best_answer", c.qa->sameBestAnswer},
                       {"run_answer", answer(c.qa->runAnswer)},
                       {"reference_answer", answer(c.qa->referenceAnswer)},
                       {"answer_f1", c.qa->answerF1},
                       {"start_logits", metricsJson(c.qa->startLogits)},
                       {"end_logits", metricsJson(c.qa->endLogits)}};
    }
    if (c.fillMask) {
        json masks = json::array();
        for (const auto& m : c.fillMask->masks) {
            auto top = [](const std::vector<std::pair<int64_t, float>>& list) {
                json out = json::array();
                for (const auto& [id, p] : list)
                    out.push_back({{"token_id", id}, {"probability", p}});
                return out;
            };
            masks.push_back({{"position", m.position},
                             {"top1_agrees", m.top1Agrees},
                             {"top_k_overlap", m.topKOverlap},
                             {"kl_divergence", finiteOrNull(m.klDivergence)},
                             {"run_top", top(m.runTop)},
                             {"reference_top", top(m.referenceTop)}});
        }
        final["fill_mask"] = {{"masks", masks}};
    }
    if (!c.nonFiniteNote.empty()) {
        final["nonfinite"] = {{"run_first", c.runFirstNonFinite.empty() ? json(nullptr) : json(c.runFirstNonFinite)},
                              {"reference_first", c.referenceFirstNonFinite.empty() ? json(nullptr) : json(c.referenceFirstNonFinite)},
                              {"run_outputs", c.runOutputsNonFinite},
                              {"reference_outputs", c.referenceOutputsNonFinite},
                              {"note", c.nonFiniteNote}};
    }
    out["final"] = final;
    out["headroom"] = headroomJson(c.outputRanges);
    json nonFinite = json::array();
    for (const ModuleNonFinite& module : c.runNonFinite)
        nonFinite.push_back({{"module", module.module}, {"count", module.count}});
    out["nonfinite"] = nonFinite;
    out["first_nonfinite"] = c.runNonFinite.empty() ? json(nullptr) : json(c.runNonFinite.front().module);
    out["findings"] = findingsJson(c.findings);
    out["timing"] = {{"run_ms", c.runMs}, {"reference_ms", c.referenceMs}};
    return out;
}

} // namespace scalescope::cli
