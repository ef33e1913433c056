#include "report/result_json.h"

#include <cmath>

#include "analysis/consumers.h"
#include "common/error.h"
#include "common/text_files.h"
#include "model/quantization_config.h"
#include "numerics/fp8.h"
#include "numerics/half.h"
#include "tasks/fix_provenance.h"
#include "tasks/sensitivity_words.h"

namespace scalescope {

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

json consumersJson(const std::vector<ConsumerReport>& reports)
{
    json out = json::array();
    for (const ConsumerReport& report : reports) {
        json findings = json::array();
        for (const ConsumerFinding& f : report.findings) {
            json finding = {{"consumer", consumerName(f.consumer)}, {"code", f.code},
                            {"severity", severityName(f.severity)}, {"modules", f.modules},
                            {"message", f.message}, {"fix", f.fix}};
            if (!f.loading.empty())
                finding["loading"] = f.loading;
            findings.push_back(finding);
        }
        json entry = {{"name", consumerName(report.consumer)}, {"verdict", verdictName(report.verdict)}};
        if (!report.loadings.empty()) {
            entry["loadings"] = json::object();
            for (const auto& [loading, verdict] : report.loadings)
                entry["loadings"][aiuLoadingName(loading)] = verdictName(verdict);
        }
        if (report.writtenFor)
            entry["written_for"] = aiuLoadingName(*report.writtenFor);
        entry["findings"] = findings;
        out.push_back(entry);
    }
    return out;
}

namespace {

// The FMS (fms) names of a Linear, or of a tensor of one ("<fms>.weight_scale"): nulls otherwise.
void addFmsNames(json& entry, const EncoderLayout& layout, const std::string& module, const std::string& suffix = "")
{
    const std::string fms = layout.fmsName(module, false);
    if (fms.empty())
        return;
    entry["fms_name"] = fms + suffix;
    entry["fms_fused_name"] = layout.fmsName(module, true) + suffix;
}

json schemesJson(const QuantizationConfig& quantization)
{
    json schemes = json::array();
    for (const ConfigGroup& g : quantization.groups) {
        const auto reason = unsupportedSchemeReason(quantization, g);
        auto args = [](const std::optional<QuantizationArgs>& a) { return a ? argsSummaryJson(*a) : json(nullptr); };
        schemes.push_back(
            {{"group", g.name}, {"targets", g.targets}, {"format", g.format}, {"description", describeScheme(g)},
                {"weights", args(g.weights)}, {"input_activations", args(g.inputActivations)},
                {"output_activations", args(g.outputActivations)}, {"supported", !reason},
                {"unsupported_reason", reason ? json(*reason) : json(nullptr)}, {"runs_on_aiu", runsOnAiu(g)}});
    }
    return schemes;
}

json transformsJson(const std::vector<TransformScheme>& transforms)
{
    json out = json::array();
    for (const TransformScheme& t : transforms)
        out.push_back({{"name", t.name}, {"type", t.type}, {"locations", t.locations}, {"targets", t.targets},
            {"head_dim", t.headDim ? json(*t.headDim) : json(nullptr)}, {"randomize", t.randomize}});
    return out;
}

// The quantization config as read and what it means (schemes, transforms, status); nulls and
// empty lists for a float checkpoint.
void addQuantizationJson(json& out, const Checkpoint& checkpoint)
{
    const ModelConfig& c = checkpoint.config();
    if (!c.quantization) {
        out["quantization_config"] = nullptr;
        out["schemes"] = json::array();
        out["transforms"] = json::array();
        out["transform_refusal"] = nullptr;
        out["quantization_status"] = nullptr;
        return;
    }
    out["quantization_config"] = c.quantization->raw;
    out["schemes"] = schemesJson(*c.quantization);
    out["ignore"] = c.quantization->ignore;
    out["transforms"] = transformsJson(c.quantization->transforms);
    const auto refusal = transformRefusal(*c.quantization);
    out["transform_refusal"] = refusal ? json(*refusal) : json(nullptr);
    json misreadBy = json::array();
    for (const StatusMisreading& m : statusMisreadings(checkpoint))
        misreadBy.push_back(consumerName(m.consumer));
    out["quantization_status"]
        = {{"label", c.quantization->status.empty() ? json(nullptr) : json(c.quantization->status)},
            {"runs_as_compressed", checkpoint.plan().anyQuantized()}, {"misread_by", misreadBy}};
}

json tensorsJson(const Checkpoint& checkpoint)
{
    json tensors = json::array();
    for (const TensorView* view : checkpoint.tensors().tensors()) {
        json tensor = {{"name", view->name}, {"dtype", dtypeName(view->dtype)}, {"shape", view->shape}};
        const std::size_t dot = view->name.rfind('.');
        if (dot != std::string::npos)
            addFmsNames(tensor, checkpoint.layout(), view->name.substr(0, dot), view->name.substr(dot));
        tensors.push_back(tensor);
    }
    return tensors;
}

// The word embeddings, quantized or not: how the plan reads them (a group may quantize the
// table, docs/ARCHITECTURE.md "Configs written since 2025"); inspectJson adds their scale
// statistics when they have an entry.
json wordEmbeddingsJson(const Checkpoint& checkpoint)
{
    const EmbeddingInfo& embedding = checkpoint.plan().wordEmbeddings();
    const TensorView* table = checkpoint.tensors().find(checkpoint.layout().wordEmbeddingsTensor());
    json embeddings = {{"module", embedding.module},
                       {"tensor", checkpoint.layout().wordEmbeddingsTensor()},
                       {"dtype", table ? json(dtypeName(table->dtype)) : json(nullptr)},
                       {"quantized", embedding.quantized},
                       {"weight_strategy", embedding.weightStrategy},
                       {"scale_strategy", embedding.quantized ? json(embeddingScaleText(embedding.weightStrategy)) : json(nullptr)},
                       {"group", embedding.group},
                       {"rule", embedding.rule}};
    if (const std::string& problem = checkpoint.plan().wordEmbeddingsProblem(); !problem.empty())
        embeddings["problem"] = problem;
    return embeddings;
}

json capturePointsJson(const std::vector<CapturePointMetrics>& capturePoints)
{
    json points = json::array();
    for (const CapturePointMetrics& p : capturePoints) {
        json point = metricsJson(p.metrics);
        point["name"] = p.name;
        point["module"] = p.module;
        point["kind"] = captureKindName(p.kind);
        point["layer"] = p.layer;
        points.push_back(point);
    }
    return points;
}

json activationsJson(const std::vector<ActivationStatistics>& statistics)
{
    json activations = json::array();
    for (const ActivationStatistics& a : statistics) {
        const double n = a.elements > 0 ? double(a.elements) : 1.0;
        activations.push_back({{"module", a.module}, {"amax", a.amax}, {"input_scale", a.inputScale},
            {"elements", a.elements}, {"clipped_share", double(a.clipped) / n},
            {"flushed_share", double(a.flushedToZero) / n}, {"subnormal_share", double(a.subnormal) / n}});
    }
    return activations;
}

json comparedQaJson(const QaAgreement& qa)
{
    auto answer = [](const QaAnswer& a) {
        return json{{"text", a.text}, {"score", a.score}, {"start", a.start}, {"end", a.end}, {"null", a.isNull}};
    };
    return {{"same_best_answer", qa.sameBestAnswer}, {"run_answer", answer(qa.runAnswer)},
        {"reference_answer", answer(qa.referenceAnswer)}, {"answer_f1", qa.answerF1},
        {"start_logits", metricsJson(qa.startLogits)}, {"end_logits", metricsJson(qa.endLogits)}};
}

json comparedFillMaskJson(const FillMaskAgreement& fillMask)
{
    auto top = [](const std::vector<std::pair<int64_t, float>>& list) {
        json out = json::array();
        for (const auto& [id, p] : list)
            out.push_back({{"token_id", id}, {"probability", p}});
        return out;
    };
    json masks = json::array();
    for (const auto& m : fillMask.masks)
        masks.push_back({{"position", m.position}, {"top1_agrees", m.top1Agrees}, {"top_k_overlap", m.topKOverlap},
            {"kl_divergence", finiteOrNull(m.klDivergence)}, {"run_top", top(m.runTop)},
            {"reference_top", top(m.referenceTop)}});
    return {{"masks", masks}};
}

// The final outputs compared: the logits, the head's answer or masks, and where values stopped
// being finite.
json finalOutputsJson(const ComparisonResult& c)
{
    json final = {{"logits", metricsJson(c.finalLogits)}};
    if (c.sequence) { // an embedder's, a classifier's or a reranker's rows
        json sequence = {{"rows", c.sequence->rows}};
        if (c.sequence->labelFlips)
            sequence["label_flips"] = *c.sequence->labelFlips;
        if (c.sequence->meanCosine && c.sequence->minCosine) {
            sequence["mean_cosine"] = finiteOrNull(*c.sequence->meanCosine);
            sequence["min_cosine"] = finiteOrNull(*c.sequence->minCosine);
        }
        if (c.sequence->kendallTau) {
            sequence["kendall_tau"] = finiteOrNull(*c.sequence->kendallTau);
            sequence["same_order"] = c.sequence->sameOrder;
        }
        final["sequence"] = sequence;
    }
    if (c.qa)
        final["qa"] = comparedQaJson(*c.qa);
    if (c.fillMask)
        final["fill_mask"] = comparedFillMaskJson(*c.fillMask);
    if (!c.nonFiniteNote.empty()) {
        final["nonfinite"] = {{"run_first", c.runFirstNonFinite.empty() ? json(nullptr) : json(c.runFirstNonFinite)},
            {"reference_first", c.referenceFirstNonFinite.empty() ? json(nullptr) : json(c.referenceFirstNonFinite)},
            {"run_outputs", c.runOutputsNonFinite}, {"reference_outputs", c.referenceOutputsNonFinite},
            {"note", c.nonFiniteNote}};
    }
    return final;
}

} // namespace

json inspectJson(const Checkpoint& checkpoint, const std::vector<LinearScaleStatistics>& statistics,
    const std::vector<Finding>& findings)
{
    const ModelConfig& c = checkpoint.config();
    json out;
    out["checkpoint"] = checkpoint.directory();
    out["architecture"] = architectureName(c.architecture);
    out["config"] = {{"vocab_size", c.vocabSize}, {"hidden_size", c.hiddenSize}, {"num_hidden_layers", c.numLayers},
        {"num_attention_heads", c.numHeads}, {"intermediate_size", c.intermediateSize},
        {"max_position_embeddings", c.maxPositionEmbeddings}, {"layer_norm_eps", c.layerNormEps},
        {"pad_token_id", c.padTokenId}, {"torch_dtype", c.torchDtype}};
    out["tokenizer"] = checkpoint.hasTokenizer();
    addQuantizationJson(out, checkpoint);
    out["tensors"] = tensorsJson(checkpoint);
    json embeddings = wordEmbeddingsJson(checkpoint);
    json linears = json::array();
    for (const LinearScaleStatistics& s : statistics) {
        if (s.embedding) {
            embeddings["statistics"] = scaleStatisticsJson(s);
            continue;
        }
        json linear = scaleStatisticsJson(s);
        addFmsNames(linear, checkpoint.layout(), s.module);
        linears.push_back(linear);
    }
    out["linears"] = linears;
    out["word_embeddings"] = embeddings;
    out["diagnostics"] = findingsJson(findings);
    out["consumers"] = consumersJson(assessConsumers(checkpoint));
    // A fix written by keep-float says what it was made from and verified against; null otherwise.
    try {
        const std::optional<json> provenance = readFixProvenance(checkpoint.directory());
        out["provenance"] = provenance ? *provenance : json(nullptr);
    } catch (const Error& e) {
        out["provenance"] = {{"error", e.what()}}; // the checkpoint itself is still worth inspecting
    }
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

// Per cast (layer, K or V) and head: how much of E4M3 the shared per-sequence scale leaves each head.
json attentionHeadroomJson(const std::vector<CastHeadroom>& casts)
{
    json out = json::array();
    for (const CastHeadroom& cast : casts) {
        json heads = json::array();
        for (const HeadHeadroom& head : cast.heads)
            heads.push_back({{"head", head.head},
                             {"top_median", head.topMedian},
                             {"top_min", head.topMin},
                             {"range_used_median", head.topMedian / double(fp8::kE4M3Max)},
                             {"unused_binades", finiteOrNull(head.unusedBinades)},
                             {"sets_scale", head.setsScale},
                             {"values", head.values},
                             {"zero_share", head.zeroShare()},
                             {"subnormal_share", head.subnormalShare()}});
        out.push_back({{"module", cast.module},
                       {"layer", cast.layer},
                       {"tensor", cast.key ? "key" : "value"},
                       {"range", cast.range},
                       {"sequences", cast.sequences},
                       {"scale_median", cast.scaleMedian},
                       {"tightest_head", cast.tightestHead()},
                       {"heads", heads}});
    }
    return out;
}

json comparisonJson(const ComparisonResult& c)
{
    json out;
    out["run"] = c.runLabel;
    out["accumulation"] = accumulationName(c.run.accumulation);
    out["attention"] = attentionPrecisionName(c.run.attention);
    if (!c.attentionHeadroom.empty())
        out["attention_headroom"] = attentionHeadroomJson(c.attentionHeadroom);
    out["reference"] = c.referenceLabel;
    out["reference_is_stand_in"] = c.referenceIsStandIn;
    if (c.referenceIsStandIn)
        out["note"] = "No --reference was given, so dequant (dequantized weights, float activations) stands in for the reference.";
    out["points"] = capturePointsJson(c.points);
    out["activations"] = activationsJson(c.activations);
    out["final"] = finalOutputsJson(c);
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

namespace {

std::string answerText(const QaAnswer& answer)
{
    return answer.isNull ? std::string() : answer.text;
}

json disagreementJson(const EvaluationResult& result, const Disagreement& d)
{
    const EvaluatedExample& e = result.examples[d.example];
    json out = {{"id", e.example.id},
                {"question", e.example.question},
                {"golds", e.example.golds},
                {"run_answer", answerText(e.runAnswer)},
                {"run_no_answer", e.runAnswer.isNull},
                {"reference_answer", answerText(e.referenceAnswer)},
                {"reference_no_answer", e.referenceAnswer.isNull},
                {"run_exact", e.run.exact},
                {"run_f1", e.run.f1},
                {"reference_exact", e.reference.exact},
                {"reference_f1", e.reference.f1}};
    // SQuAD 2.0: null score minus best span score, what --null-threshold is compared with.
    if (result.qa.nullThreshold) {
        out["run_null_margin"] = finiteOrNull(e.runAnswer.nullMargin);
        out["reference_null_margin"] = finiteOrNull(e.referenceAnswer.nullMargin);
    }
    if (d.detailed) {
        json layers = json::array();
        for (const CapturePointMetrics& p : d.layers)
            layers.push_back({{"point", p.name}, {"layer", p.layer}, {"sqnr_db", finiteOrNull(p.metrics.sqnrDb)},
                              {"cosine", finiteOrNull(p.metrics.cosine)}});
        out["layer_sqnr_db"] = layers;
        out["logits_sqnr_db"] = finiteOrNull(d.finalLogits.sqnrDb);
    }
    if (!d.detailError.empty())
        out["detail_error"] = d.detailError;
    return out;
}

} // namespace

json squadScoresJson(const SquadScores& s)
{
    // Key names of the official SQuAD 2.0 evaluation script; HasAns/NoAns only where such questions exist.
    json out = {{"exact", s.exact}, {"f1", s.f1}, {"total", s.total}};
    if (s.hasAnsTotal > 0) {
        out["HasAns_exact"] = s.hasAnsExact;
        out["HasAns_f1"] = s.hasAnsF1;
        out["HasAns_total"] = s.hasAnsTotal;
    }
    if (s.noAnsTotal > 0) {
        out["NoAns_exact"] = s.noAnsExact;
        out["NoAns_f1"] = s.noAnsF1;
        out["NoAns_total"] = s.noAnsTotal;
    }
    return out;
}

json evaluationNonFiniteJson(const EvaluationResult& r)
{
    // Per question (evaluated, then skipped) where the run's inf/NaN starts, and the summary.
    json perQuestion = json::array();
    for (const EvaluatedExample& e : r.examples)
        if (!e.firstNonFinite.empty())
            perQuestion.push_back({{"id", e.example.id}, {"first_nonfinite", e.firstNonFinite}, {"skipped", false}});
    for (const SkippedExample& s : r.skipped)
        if (!s.firstNonFinite.empty())
            perQuestion.push_back({{"id", s.id}, {"first_nonfinite", s.firstNonFinite}, {"skipped", true}});
    json starts = json::array();
    for (const NonFiniteStart& start : r.nonFiniteStarts)
        starts.push_back({{"module", start.module}, {"questions", start.questions}});
    return {{"questions", r.nonFiniteQuestions}, {"starts", starts}, {"per_question", perQuestion}};
}

json evaluationJson(const EvaluationResult& r, const std::string& checkpointDir, const std::string& referenceDir)
{
    json run = squadScoresJson(r.runScores);
    run["label"] = r.runLabel;
    run["accumulation"] = accumulationName(r.run.accumulation);
    run["attention"] = attentionPrecisionName(r.run.attention);
    run["checkpoint"] = checkpointDir;
    json reference = squadScoresJson(r.referenceScores);
    reference["label"] = r.referenceLabel;
    reference["checkpoint"] = referenceDir.empty() ? json(nullptr) : json(referenceDir);
    reference["stand_in"] = r.referenceIsStandIn;

    json skipped = json::array();
    for (const SkippedExample& s : r.skipped)
        skipped.push_back({{"id", s.id}, {"reason", s.reason}});
    json disagreements = json::array();
    for (const Disagreement& d : r.disagreements)
        disagreements.push_back(disagreementJson(r, d));

    json out = {
        {"checkpoint", checkpointDir},
        {"squad", r.datasetPath},
        {"squad_version", r.datasetVersion},
        {"squad_v2", r.squadV2},
        {"run", run},
        {"reference", reference},
        {"options",
         {{"max_seq_len", r.qa.maxSeqLen},
          {"doc_stride", r.qa.docStride},
          {"max_answer_len", r.qa.maxAnswerLen},
          {"null_threshold", r.qa.nullThreshold ? json(*r.qa.nullThreshold) : json(nullptr)},
          {"batch_size", r.batchSize}}},
        {"questions",
         {{"in_file", r.questionsInFile},
          {"selected", r.questionsSelected},
          {"evaluated", r.examples.size()},
          {"skipped", r.skipped.size()}}},
        {"skipped", skipped},
        {"nonfinite", evaluationNonFiniteJson(r)},
        {"agreement", r.agreement},
        {"agreeing", r.agreeing},
        {"disagreement_count", r.disagreements.size()},
        {"disagreements", disagreements},
        {"per_layer_detail",
         {{"limit", r.detailLimit},
          {"computed", r.detailed},
          {"note", "Per-layer SQNR is measured for the first " + std::to_string(r.detailLimit) +
                       " disagreements only, to bound the cost."}}},
        {"throughput",
         {{"seconds", r.seconds},
          {"questions_per_second", r.questionsPerSecond},
          {"run_forward_ms", r.runForwardMs},
          {"reference_forward_ms", r.referenceForwardMs},
          {"detail_seconds", r.detailSeconds}}},
        {"complete", r.complete},
        {"stopped_reason", r.complete ? json(nullptr) : json(r.stoppedReason)},
    };
    if (!r.note.empty())
        out["note"] = r.note;
    return out;
}

namespace {

nlohmann::json fieldDifferencesJson(const std::vector<FieldDifference>& differences)
{
    nlohmann::json list = nlohmann::json::array();
    for (const FieldDifference& d : differences)
        list.push_back({{"field", d.field}, {"a", d.a}, {"b", d.b}});
    return list;
}

nlohmann::json tensorDifferenceJson(const TensorDifference& t)
{
    nlohmann::json histogram = nlohmann::json::object();
    for (const auto& [steps, count] : t.codeStepHistogram)
        histogram[std::to_string(steps)] = count;
    nlohmann::json ulps = nlohmann::json::object();
    for (const auto& [distance, count] : t.ulpHistogram)
        ulps[std::to_string(distance)] = count;
    return {{"name", t.name},
            {"verdict", t.verdict},
            {"dtype_a", t.dtypeA},
            {"dtype_b", t.dtypeB},
            {"shape_a", t.shapeA},
            {"shape_b", t.shapeB},
            {"elements", t.elements},
            {"fp8_codes", t.fp8Codes},
            {"codes_differing", t.codesDiffering},
            {"code_step_histogram", histogram},
            {"nan_mismatches", t.nanMismatches},
            {"signed_zero_swaps", t.signedZeroSwaps},
            {"values_differing", t.valuesDiffering},
            {"values_one_ulp_apart", t.valuesOneUlpApart},
            {"max_ulps", t.maxUlps},
            {"ulp_histogram", ulps},
            {"ulp_unit", t.ulpUnit.empty() ? nlohmann::json(nullptr) : nlohmann::json(t.ulpUnit)},
            {"scale_ratio_min", t.hasRatio ? finiteOrNull(t.ratioMin) : nlohmann::json(nullptr)},
            {"scale_ratio_max", t.hasRatio ? finiteOrNull(t.ratioMax) : nlohmann::json(nullptr)}};
}

} // namespace

nlohmann::json diffJson(const CheckpointDiff& diff, const DiffMetrics* metrics)
{
    nlohmann::json linears = nlohmann::json::array();
    for (const LinearDifference& l : diff.linears)
        linears.push_back({{"module", l.module}, {"differences", fieldDifferencesJson(l.differences)}});
    nlohmann::json tensors = nlohmann::json::array();
    nlohmann::json counts = {{kDiffIdentical, 0}, {kDiffWithinOneStep, 0}, {kDiffDifferent, 0}};
    for (const TensorDifference& t : diff.tensors) {
        tensors.push_back(tensorDifferenceJson(t));
        counts[t.verdict] = counts[t.verdict].get<int64_t>() + 1;
    }
    nlohmann::json document = {{"a", diff.a},
                               {"b", diff.b},
                               {"identical", diff.identical()},
                               {"config", fieldDifferencesJson(diff.config)},
                               {"linears", linears},
                               {"tensors", tensors},
                               {"verdict_counts", counts},
                               {"only_in_a", diff.onlyInA},
                               {"only_in_b", diff.onlyInB}};
    if (metrics) {
        nlohmann::json points = nlohmann::json::array();
        for (const PointDifference& p : metrics->points)
            points.push_back({{"name", p.name},
                              {"label", p.label},
                              {"kind", captureKindName(p.kind)},
                              {"a", metricsJson(p.a)},
                              {"b", metricsJson(p.b)},
                              {"sqnr_difference_db", finiteOrNull(p.sqnrDifferenceDb)}});
        nlohmann::json ranked = nlohmann::json::array();
        for (std::size_t r = 0; r < metrics->ranked.size(); ++r) {
            const PointDifference& p = metrics->points[metrics->ranked[r]];
            ranked.push_back({{"rank", r + 1},
                              {"name", p.name},
                              {"sqnr_a_db", finiteOrNull(p.a.sqnrDb)},
                              {"sqnr_b_db", finiteOrNull(p.b.sqnrDb)},
                              {"sqnr_difference_db", finiteOrNull(p.sqnrDifferenceDb)}});
        }
        document["metrics"] = {{"reference", metrics->referenceLabel},
                               {"reference_is_stand_in", metrics->referenceIsStandIn},
                               {"input", metrics->inputKind},
                               {"samples", metrics->samples},
                               {"final_logits_a", metricsJson(metrics->runA.finalLogits)},
                               {"final_logits_b", metricsJson(metrics->runB.finalLogits)},
                               {"points", points},
                               {"ranked", ranked}};
    }
    return document;
}

namespace {

json sensitivityMetricsJson(const SensitivityMetrics& m, const std::string& kind)
{
    json out = {{"sqnr_db", finiteOrNull(m.sqnrDb)}, {"agrees", m.agrees}, {"finite", m.finite}};
    if (kind == "qa") {
        out["answer"] = m.answer;
        out["answer_f1"] = m.answerF1;
    } else if (kind == "fill-mask") {
        out["top1_agreement"] = m.top1Agreement;
        out["kl_divergence"] = finiteOrNull(m.klDivergence);
    } else if (kind == "squad") {
        out["exact"] = m.exact;
        out["f1"] = m.f1;
        out["agreement"] = m.agreement;
    }
    // An embedder, a classifier or a reranker: what its user looks at.
    if (m.labelFlips)
        out["label_flips"] = *m.labelFlips;
    if (m.meanCosine)
        out["mean_cosine"] = finiteOrNull(*m.meanCosine);
    if (m.minCosine)
        out["min_cosine"] = finiteOrNull(*m.minCosine);
    if (m.kendallTau)
        out["kendall_tau"] = finiteOrNull(*m.kendallTau);
    if (m.sameOrder)
        out["same_order"] = *m.sameOrder;
    return out;
}

json causeJson(const SensitivityCause& c)
{
    return {{"module", c.module},
            {"label", c.label},
            {"explanation", c.explanation},
            {"input_quantized", c.inputQuantized},
            {"input_clipped_share", c.inputClippedShare},
            {"input_flushed_share", c.inputFlushedShare},
            {"input_subnormal_share", c.inputSubnormalShare},
            {"weight_clipped_share", c.weightClippedShare},
            {"weight_underflow_share", c.weightUnderflowShare},
            {"fp8_floor_sqnr_db", finiteOrNull(c.floorSqnrDb)},
            {"isolated_sqnr_db", finiteOrNull(c.isolatedSqnrDb)},
            {"beyond_fp8_rounding", c.beyondFloor},
            {"kind", c.kind},
            {"weight_only_sqnr_db", finiteOrNull(c.weightOnlySqnrDb)},
            {"input_only_sqnr_db", finiteOrNull(c.inputOnlySqnrDb)},
            {"input_per_token_sqnr_db", finiteOrNull(c.inputPerTokenSqnrDb)}};
}

} // namespace

json sensitivityJson(const SensitivityResult& r)
{
    json entries = json::array();
    for (const SensitivityEntry& e : r.entries) {
        json entry = {{"module", e.module},
                      {"label", e.label},
                      {"rank", e.rank},
                      {"linears", e.linears},
                      {"fp8_attention", e.fp8Attention},
                      {"float_one", sensitivityMetricsJson(e.floatOne, r.inputKind)},
                      {"fp8_one", sensitivityMetricsJson(e.fp8One, r.inputKind)},
                      {"sqnr_gain_db", finiteOrNull(e.floatOne.sqnrDb - r.baseline.sqnrDb)},
                      {"sqnr_loss_db", finiteOrNull(r.allFloat.sqnrDb - e.fp8One.sqnrDb)},
                      // The two measures the chart draws (sensitivity.h); null when infinite or
                      // not measurable, with the infinite case said by the flag beside it.
                      {"recovered_db", finiteOrNull(e.recoveredDb)},
                      {"recovered_infinite", std::isinf(e.recoveredDb)},
                      {"lost_alone_db", finiteOrNull(e.lostAloneDb)},
                      {"lost_alone_infinite", std::isinf(e.lostAloneDb)},
                      {"tie_rank", e.tieRank ? json(e.tieRank) : json(nullptr)},
                      // Within the run-to-run spread of zero (tasks/sensitivity_words.h).
                      {"no_measurable_effect", sensitivityNoMeasurableEffect(e, r.spread)}};
        if (e.cause)
            entry["cause"] = causeJson(*e.cause);
        entries.push_back(entry);
    }
    json causes = json::array();
    for (const SensitivityCause& c : r.causes)
        causes.push_back(causeJson(c));
    json verified = json::array();
    for (const SensitivityResult::VerifiedPrefix& v : r.verifiedPrefixes) {
        json prefix = sensitivityMetricsJson(v.metrics, r.inputKind);
        prefix["float_linears"] = v.floatLinears;
        verified.push_back(prefix);
    }
    json document = {{"input", r.inputKind},
                     {"granularity", r.granularity},
                     {"reference_label", r.referenceLabel},
                     {"samples", r.samples},
                     {"baseline", sensitivityMetricsJson(r.baseline, r.inputKind)},
                     {"all_float", sensitivityMetricsJson(r.allFloat, r.inputKind)},
                     {"entries", entries},
                     {"causes", causes},
                     {"target", r.target},
                     {"suggested_float", r.suggestedFloat},
                     {"suggested_float_count", r.suggestedFloat.size()},
                     {"suggested_tied", r.suggestedTied},
                     {"mode", runModeName(r.run.mode)},
                     {"accumulation", accumulationName(r.run.accumulation)},
                     {"attention", attentionPrecisionName(r.run.attention)},
                     {"spread", {{"estimated", r.spread.estimated},
                                 {"db", r.spread.estimated ? json(r.spread.db) : json(nullptr)},
                                 {"f1_points", r.inputKind == "squad" ? json(r.spread.f1Points) : json(nullptr)},
                                 {"basis", r.spread.basis},
                                 {"method", r.spread.method}}},
                     {"target_reached", r.suggestionReached},
                     {"suggestion_note", r.suggestionNote},
                     {"verified_prefixes", verified},
                     {"forwards", r.forwards},
                     {"complete", r.complete}};
    if (r.suggestedMetrics)
        document["suggested_float_metrics"] = sensitivityMetricsJson(*r.suggestedMetrics, r.inputKind);
    if (r.suggestionValidity) {
        document["suggestion_valid_for"] = r.suggestionValidity->consumers;
        document["suggestion_split_units"] = r.suggestionValidity->splitUnits;
        document["suggestion_validity"] = r.suggestionValidity->sentence;
    }
    if (r.inputKind == "squad")
        document["reference_scores"] = sensitivityMetricsJson(r.reference, r.inputKind);
    if (!r.complete)
        document["stopped_reason"] = r.stoppedReason;
    return document;
}

} // namespace scalescope
