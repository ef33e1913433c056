#include "tasks/sensitivity.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>

#include "analysis/diagnostics.h"
#include "analysis/scale_statistics.h"
#include "common/error.h"
#include "common/option_error.h"
#include "common/text_files.h"
#include "tasks/evaluate.h"
#include "tasks/sensitivity_cause.h"

namespace scalescope {
namespace {

constexpr int64_t kCauseRows = 32;

struct Case {
    ComparisonInput input;
    PreparedComparisonInput prepared;
    ForwardResult reference;
    const SquadExample* example = nullptr;
    // Every layer's input in the baseline run and in the all-float run (ForwardOptions::
    // recordLayerInputs): a run that departs from one of them only from layer L on starts there.
    std::vector<FloatTensor> baselineLayerInputs, allFloatLayerInputs;
    // The suggestion's last verified prefix (every layer; see Sweep::measureNextPrefix).
    std::vector<FloatTensor> prefixLayerInputs;
};

std::string formatNumber(double value)
{
    char text[32];
    std::snprintf(text, sizeof text, "%.2f", value);
    return text;
}

// Index of the largest value among n, NaN never wins.
std::size_t argmax(const float* values, std::size_t n)
{
    std::size_t best = 0;
    for (std::size_t i = 1; i < n; ++i)
        if (values[i] > values[best] || std::isnan(values[best]))
            best = i;
    return best;
}

// The argmax at every real position agrees (MaskedLM logits over the vocabulary; QA logits over
// each window's real tokens).
bool argmaxAgrees(const FloatTensor& run, const FloatTensor& reference, const std::vector<std::size_t>& lengths)
{
    if (run.shape.size() == 3) {
        const std::size_t seq = std::size_t(run.shape[1]), vocab = std::size_t(run.shape[2]);
        for (std::size_t b = 0; b < lengths.size(); ++b)
            for (std::size_t t = 0; t < lengths[b] && t < seq; ++t) {
                const std::size_t at = (b * seq + t) * vocab;
                if (argmax(run.values.data() + at, vocab) != argmax(reference.values.data() + at, vocab))
                    return false;
            }
        return true;
    }
    const std::size_t seq = std::size_t(run.shape.at(1));
    for (std::size_t b = 0; b < lengths.size(); ++b) {
        const std::size_t n = std::min(lengths[b], seq);
        if (argmax(run.values.data() + b * seq, n) != argmax(reference.values.data() + b * seq, n))
            return false;
    }
    return true;
}

bool forwardAgrees(const ForwardResult& run, const ForwardResult& reference, const std::vector<std::size_t>& lengths)
{
    for (const NamedTensor& output : run.outputs)
        if (!argmaxAgrees(output.tensor, reference.output(output.name), lengths))
            return false;
    return true;
}

// Sums over the cases of one configuration.
struct Tally {
    ErrorAccumulator logits;
    double sqnrDb = 0;
    std::size_t agreeing = 0, cases = 0;
    double exact = 0, f1 = 0;
    bool finite = true;
};

class Sweep {
public:
    // reference: the float checkpoint's model, or `run` itself standing in (dequant).
    Sweep(InferenceBackend& run, InferenceBackend& reference, RunMode mode, const Progress& progress,
          SensitivityResult& result)
        : run_(run), reference_(reference), mode_(mode), progress_(progress), result_(result),
          floatWeights_(&reference == &run ? nullptr : floatWeightSource(&reference))
    {
    }

    std::vector<Case> cases;
    std::size_t plannedRuns = 1;
    std::map<std::string, LinearInputSample> samples; // baseline inputs of the quantized Linears
    std::vector<ActivationStatistics> activations;

    void runReferences()
    {
        ForwardOptions options;
        options.mode = RunMode::Dequant;
        for (Case& c : cases) {
            progress_.throwIfCancelled();
            c.reference = reference_.forward(c.prepared.inputs, options, cancelOnly());
        }
        if (result_.inputKind != "squad")
            return;
        Tally tally;
        for (const Case& c : cases) {
            const FinalOutputComparison self = compareFinalOutputs(run_, c.reference, c.reference, c.prepared, c.input);
            const ExampleScore score = scorePrediction(*c.example, self.qa->runAnswer.text);
            tally.exact += score.exact;
            tally.f1 += score.f1;
        }
        result_.reference.exact = 100.0 * tally.exact / double(cases.size());
        result_.reference.f1 = 100.0 * tally.f1 / double(cases.size());
        result_.reference.agrees = true;
        result_.reference.agreement = 1;
        result_.reference.sqnrDb = std::numeric_limits<double>::infinity();
    }

    SensitivityMetrics measure(const PrecisionOverrides& overrides, const std::string& stage, bool baseline = false)
    {
        return measureRuns(overrides, stage, baseline ? Departure::IsBaseline : Departure::FromRecords);
    }

    // The suggestion's prefixes, each the previous one plus `added`: a prefix departs from the
    // previous one only at the first layer of `added`, so it resumes there from the previous
    // prefix's layer inputs. The first departs from the baseline. After the sweep: the all-float
    // records are dropped and the baseline's become the first prefix's start.
    SensitivityMetrics measureNextPrefix(const PrecisionOverrides& prefix, const PrecisionOverrides& added,
                                         const std::string& stage)
    {
        if (!prefixStarted_) {
            for (Case& c : cases) {
                c.prefixLayerInputs = std::move(c.baselineLayerInputs);
                c.allFloatLayerInputs.clear();
            }
            prefixStarted_ = true;
        }
        prefixResumeLayer_ = firstLayerOf(added);
        return measureRuns(prefix, stage, Departure::FromPreviousPrefix);
    }

private:
    // Where a run's unchanged layers come from (reuseLayers).
    enum class Departure { IsBaseline, FromRecords, FromPreviousPrefix };

    SensitivityMetrics measureRuns(const PrecisionOverrides& overrides, const std::string& stage, Departure departure)
    {
        const bool baseline = departure == Departure::IsBaseline;
        Tally tally;
        SensitivityMetrics metrics;
        for (std::size_t i = 0; i < cases.size(); ++i) {
            progress_.throwIfCancelled();
            progress_.report(std::min(1.0, double(done_) / double(plannedRuns)), stage);
            ForwardOptions options;
            options.mode = mode_;
            options.overrides = overrides;
            options.floatWeightsFrom = floatWeights_; // kept float means the reference's weights
            if (baseline && i == 0)
                recordCauseInputs(options);
            std::vector<FloatTensor>* record = departure == Departure::FromPreviousPrefix
                                                   ? resumePrefix(cases[i], options)
                                                   : reuseLayers(overrides, baseline, cases[i], options);
            ForwardResult runResult = run_.forward(cases[i].prepared.inputs, options, cancelOnly());
            ++result_.forwards;
            if (record)
                keepRecord(*record, std::move(runResult.layerInputs));
            if (baseline && i == 0)
                activations = std::move(runResult.activationStatistics);
            add(tally, metrics, cases[i], runResult);
        }
        ++done_;
        finish(tally, metrics);
        return metrics;
    }

    InferenceBackend& run_;
    InferenceBackend& reference_;
    RunMode mode_;
    const Progress& progress_;
    SensitivityResult& result_;
    const Checkpoint* floatWeights_;
    std::size_t done_ = 0;
    bool prefixStarted_ = false;
    int prefixResumeLayer_ = 0;

    Progress cancelOnly() const
    {
        Progress p;
        p.cancel = progress_.cancel;
        return p;
    }

    // Reuse what does not change: the baseline and the all-float run record every layer's input;
    // a run whose overrides start at layer L (float_one departs from the baseline there, fp8_one
    // from the all-float run) resumes at L from that record, bit for bit the full run's numbers.
    // Returns where to store this run's record, or null.
    std::vector<FloatTensor>* reuseLayers(const PrecisionOverrides& overrides, bool baseline, Case& c,
                                          ForwardOptions& options) const
    {
        if (!run_.resumesFromLayer())
            return nullptr;
        const bool allFloat = overrides.othersFloat && overrides.modules.empty();
        if (baseline || allFloat) {
            options.recordLayerInputs = true;
            return baseline ? &c.baselineLayerInputs : &c.allFloatLayerInputs;
        }
        const std::vector<FloatTensor>& from = overrides.othersFloat ? c.allFloatLayerInputs : c.baselineLayerInputs;
        resumeAt(firstLayerOf(overrides), from, options);
        return nullptr;
    }

    // Starts the run at `layer` from that layer's recorded input (nothing to skip at layer 0, and
    // a record too short to hold it means a full run).
    static void resumeAt(int layer, const std::vector<FloatTensor>& record, ForwardOptions& options)
    {
        if (layer > 0 && static_cast<std::size_t>(layer) < record.size()) {
            options.startLayer = layer;
            options.startHidden = &record[static_cast<std::size_t>(layer)];
        }
    }

    // A prefix resumes from the previous prefix's record (measureNextPrefix) and records its own.
    std::vector<FloatTensor>* resumePrefix(Case& c, ForwardOptions& options) const
    {
        if (!run_.resumesFromLayer() || c.prefixLayerInputs.empty())
            return nullptr;
        options.recordLayerInputs = true;
        resumeAt(prefixResumeLayer_, c.prefixLayerInputs, options);
        return &c.prefixLayerInputs;
    }

    // A resumed run records only the layers it ran; those before are the record it resumed from.
    static void keepRecord(std::vector<FloatTensor>& record, std::vector<FloatTensor> layerInputs)
    {
        if (record.size() != layerInputs.size()) {
            record = std::move(layerInputs);
            return;
        }
        for (std::size_t layer = 0; layer < layerInputs.size(); ++layer)
            if (!layerInputs[layer].values.empty())
                record[layer] = std::move(layerInputs[layer]);
    }

    // The first encoder layer an override names (the head counts as the layer after the last).
    int firstLayerOf(const PrecisionOverrides& overrides) const
    {
        const EncoderLayout& layout = run_.checkpoint().layout();
        const int layers = static_cast<int>(run_.config().numLayers);
        int first = layers;
        for (const auto& [module, precision] : overrides.modules) {
            const int layer = layout.layerOf(module);
            first = std::min(first, layer < 0 ? layers : layer);
        }
        return first;
    }

    void recordCauseInputs(ForwardOptions& options)
    {
        options.activationStatistics = true;
        for (const LinearInfo& l : run_.linears())
            if (l.quantized)
                options.capture.names.push_back(l.module + ".input");
        const std::vector<std::size_t>& lengths = cases.front().prepared.lengths;
        // Every call carries its data, so a point that is the same tensor as another (sameAs) needs nothing more.
        options.onCapture = [this, &lengths](const std::string& name, const std::vector<int64_t>& shape, const float* data,
                                             const std::string& /*sameAs*/) {
            const std::string module = name.substr(0, name.size() - std::string(".input").size());
            samples[module] = sampleRealRows(shape, data, lengths, kCauseRows);
        };
    }

    void add(Tally& tally, SensitivityMetrics& metrics, const Case& c, const ForwardResult& runResult) const
    {
        const FinalOutputComparison f = compareFinalOutputs(run_, runResult, c.reference, c.prepared, c.input);
        const bool finite = !f.runOutputsNonFinite && !f.referenceOutputsNonFinite;
        tally.finite = tally.finite && finite;
        ++tally.cases;
        tally.sqnrDb = f.finalLogits.sqnrDb;
        if (c.example) {
            const QaAgreement& qa = *f.qa;
            for (std::size_t w = 0; w < qa.runStartLogits.size(); ++w) {
                tally.logits.add(qa.runStartLogits[w].data(), qa.referenceStartLogits[w].data(), qa.runStartLogits[w].size());
                tally.logits.add(qa.runEndLogits[w].data(), qa.referenceEndLogits[w].data(), qa.runEndLogits[w].size());
            }
            const ExampleScore score = scorePrediction(*c.example, finite ? qa.runAnswer.text : std::string());
            tally.exact += score.exact;
            tally.f1 += score.f1;
            tally.agreeing += qa.sameBestAnswer ? 1 : 0;
        } else if (f.qa && !c.prepared.windows.empty()) {
            metrics.agrees = f.qa->sameBestAnswer;
            metrics.answer = f.qa->runAnswer.text;
            metrics.answerF1 = f.qa->answerF1;
        } else if (f.fillMask) {
            std::size_t agreeing = 0;
            double kl = 0;
            for (const auto& m : f.fillMask->masks) {
                agreeing += m.top1Agrees ? 1 : 0;
                kl += m.klDivergence;
            }
            const double n = double(std::max<std::size_t>(1, f.fillMask->masks.size()));
            metrics.top1Agreement = double(agreeing) / n;
            metrics.klDivergence = kl / n;
            metrics.agrees = finite && agreeing == f.fillMask->masks.size();
        } else {
            metrics.agrees = finite && forwardAgrees(runResult, c.reference, c.prepared.lengths);
        }
    }

    void finish(const Tally& tally, SensitivityMetrics& metrics) const
    {
        metrics.finite = tally.finite;
        if (result_.inputKind != "squad") {
            metrics.sqnrDb = tally.sqnrDb;
            metrics.agrees = metrics.agrees && tally.finite;
            return;
        }
        const double n = double(std::max<std::size_t>(1, tally.cases));
        metrics.sqnrDb = tally.finite ? tally.logits.result().sqnrDb : std::numeric_limits<double>::quiet_NaN();
        metrics.exact = 100.0 * tally.exact / n;
        metrics.f1 = 100.0 * tally.f1 / n;
        metrics.agreement = double(tally.agreeing) / n;
        metrics.agrees = tally.agreeing == tally.cases && tally.finite;
    }
};

// Every quantized Linear, or every encoder layer's quantized Linears (a quantized head Linear
// stays its own unit).
std::vector<SensitivityEntry> linearOrLayerUnits(const InferenceBackend& run, bool perLayer)
{
    const EncoderLayout& layout = run.checkpoint().layout();
    std::vector<SensitivityEntry> units;
    for (const LinearInfo& l : run.linears()) {
        if (!l.quantized)
            continue;
        const int layer = layout.layerOf(l.module);
        const std::string name = perLayer && layer >= 0 ? layout.layerModule(layer) : l.module;
        if (units.empty() || units.back().module != name)
            units.push_back({name, name == l.module ? layout.shortLabel(name) : "L" + std::to_string(layer), {}, 0, {}, {},
                             std::nullopt});
        units.back().linears.push_back(l.module);
    }
    return units;
}

// The runtime units (q/k/v together) holding a quantized Linear, with only their quantized Linears.
std::vector<SensitivityEntry> runtimeUnitEntries(const InferenceBackend& run)
{
    std::set<std::string> quantized;
    for (const LinearInfo& l : run.linears())
        if (l.quantized)
            quantized.insert(l.module);
    std::vector<SensitivityEntry> units;
    for (const RuntimeUnit& unit : runtimeUnits(run.checkpoint().layout())) {
        SensitivityEntry entry{unit.module, unit.label, {}, 0, {}, {}, std::nullopt};
        for (const std::string& module : unit.linears)
            if (quantized.count(module))
                entry.linears.push_back(module);
        if (!entry.linears.empty())
            units.push_back(std::move(entry));
    }
    return units;
}

std::vector<SensitivityEntry> sweepUnits(const InferenceBackend& run, const std::string& granularity)
{
    std::vector<SensitivityEntry> units =
        granularity == "unit" ? runtimeUnitEntries(run) : linearOrLayerUnits(run, granularity == "layer");
    if (units.empty())
        throw Error(run.checkpoint().directory() + " has no quantized Linear, so there is nothing to sweep.");
    return units;
}

PrecisionOverrides overridesFor(const std::vector<std::string>& modules, Precision precision, bool othersFloat)
{
    PrecisionOverrides overrides;
    overrides.othersFloat = othersFloat;
    for (const std::string& m : modules)
        overrides.modules[m] = precision;
    return overrides;
}

std::string inputKindOf(const PreparedComparisonInput& prepared)
{
    if (!prepared.windows.empty())
        return "qa";
    return prepared.isFillMask ? "fill-mask" : "forward";
}

void buildCases(Sweep& sweep, const InferenceBackend& run, const SensitivityInput& input, SensitivityResult& result)
{
    if (!input.squad) {
        Case c;
        c.input = input.single;
        c.prepared = prepareComparisonInput(run, c.input);
        result.inputKind = inputKindOf(c.prepared);
        sweep.cases.push_back(std::move(c));
        return;
    }
    if (!run.checkpoint().layout().isQuestionAnswering())
        throw OptionError(TaskOption::Squad, "{option} needs a question-answering checkpoint; " +
                                                 run.checkpoint().directory() + " is " +
                                                 architectureName(run.config().architecture) + ".");
    result.inputKind = "squad";
    const std::vector<SquadExample>& examples = input.squad->examples;
    const std::size_t count = input.maxSamples ? std::min(input.maxSamples, examples.size()) : examples.size();
    for (std::size_t i = 0; i < count; ++i) {
        Case c;
        c.example = &examples[i];
        c.input = input.single;
        c.input.question = examples[i].question;
        c.input.context = examples[i].context;
        c.input.qaOptions.topK = 1;
        if (input.squad->isV2 && !c.input.qaOptions.nullThreshold)
            c.input.qaOptions.nullThreshold = 0.0f; // as evaluate does on SQuAD 2.0
        try {
            c.prepared = prepareComparisonInput(run, c.input);
        } catch (const Cancelled&) {
            throw;
        } catch (const Error&) {
            continue; // a question that cannot be windowed is left out, as evaluate skips it
        }
        sweep.cases.push_back(std::move(c));
    }
    if (sweep.cases.empty())
        throw Error("No question of " + input.squad->path + " can be run (the file has none, or none fits the model).");
    result.samples = sweep.cases.size();
}

double orLowest(double value)
{
    return std::isnan(value) ? -std::numeric_limits<double>::infinity() : value;
}

// Most helpful to keep float first: SQuAD by F1 kept float, otherwise by final SQNR kept float;
// ties go to the unit whose FP8 alone hurts most.
void rankEntries(std::vector<SensitivityEntry>& entries, bool squad)
{
    std::stable_sort(entries.begin(), entries.end(), [squad](const SensitivityEntry& a, const SensitivityEntry& b) {
        if (squad && a.floatOne.f1 != b.floatOne.f1)
            return a.floatOne.f1 > b.floatOne.f1;
        const double sa = orLowest(a.floatOne.sqnrDb), sb = orLowest(b.floatOne.sqnrDb);
        if (sa != sb)
            return sa > sb;
        return orLowest(a.fp8One.sqnrDb) < orLowest(b.fp8One.sqnrDb);
    });
    for (std::size_t i = 0; i < entries.size(); ++i)
        entries[i].rank = int(i + 1);
}

struct Target {
    std::optional<double> sqnrDb, f1Drop;
    bool squad = false;
    double referenceF1 = 100;

    double drop(const SensitivityMetrics& m) const
    {
        return squad ? referenceF1 - m.f1 : 100.0 * (1.0 - m.answerF1);
    }
    bool met(const SensitivityMetrics& m) const
    {
        if (!m.finite)
            return false;
        if (sqnrDb && !(m.sqnrDb >= *sqnrDb))
            return false;
        if (f1Drop && !(drop(m) <= *f1Drop + 1e-9))
            return false;
        return sqnrDb || f1Drop || m.agrees;
    }
    // Closer to the target is better; used for the best found when it is unreachable.
    bool better(const SensitivityMetrics& a, const SensitivityMetrics& b) const
    {
        if (a.finite != b.finite)
            return a.finite;
        if (f1Drop && drop(a) != drop(b))
            return drop(a) < drop(b);
        if (!sqnrDb && !f1Drop && a.agrees != b.agrees)
            return a.agrees;
        return orLowest(a.sqnrDb) > orLowest(b.sqnrDb);
    }
    std::string text() const
    {
        std::string t;
        if (sqnrDb)
            t = "final SQNR >= " + formatNumber(*sqnrDb) + " dB";
        if (f1Drop)
            t += (t.empty() ? "" : " and ") + std::string("F1 within ") + formatNumber(*f1Drop) + " points of the reference";
        return t.empty() ? (squad ? "every answer agrees with the reference" : "the answer agrees with the reference") : t;
    }
};

std::string metricText(const SensitivityMetrics& m, const Target& target)
{
    std::string text = "final SQNR " + (std::isfinite(m.sqnrDb) ? formatNumber(m.sqnrDb) + " dB" : std::string(m.sqnrDb > 0 ? "infinite" : "not finite"));
    if (target.f1Drop)
        text += ", F1 drop " + formatNumber(target.drop(m));
    else if (!target.sqnrDb)
        text += m.agrees ? ", answer agrees" : ", answer differs";
    return text;
}

// The smallest prefix of the ranking that meets the target, each candidate verified by a run.
void suggest(Sweep& sweep, SensitivityResult& result, const Target& target)
{
    result.target = target.text();
    if (target.met(result.baseline)) {
        result.suggestionReached = true;
        result.suggestedMetrics = result.baseline;
        result.suggestionNote = "The FP8 run already meets the target (" + result.target + "); no Linear needs to stay float.";
        return;
    }
    std::vector<std::string> prefix, bestPrefix;
    std::optional<SensitivityMetrics> best;
    for (const SensitivityEntry& entry : result.entries) {
        prefix.insert(prefix.end(), entry.linears.begin(), entry.linears.end());
        const SensitivityMetrics m = sweep.measureNextPrefix(overridesFor(prefix, Precision::Float, false),
                                                             overridesFor(entry.linears, Precision::Float, false),
                                                             "Verifying " + std::to_string(prefix.size()) + " float");
        result.verifiedPrefixes.push_back({prefix.size(), m});
        if (!best || target.better(m, *best)) {
            best = m;
            bestPrefix = prefix;
        }
        if (target.met(m)) {
            result.suggestedFloat = prefix;
            result.suggestedMetrics = m;
            result.suggestionReached = true;
            result.suggestionNote = "Keeping these " + std::to_string(prefix.size()) + " Linear(s) float meets the target (" +
                                    result.target + ") in a verified run: " + metricText(m, target) + ".";
            return;
        }
    }
    result.suggestedFloat = bestPrefix;
    result.suggestedMetrics = best;
    result.suggestionNote = "No prefix of the ranking reaches the target (" + result.target + "); the best found keeps " +
                            std::to_string(bestPrefix.size()) + " Linear(s) float: " + metricText(*best, target) + ".";
}

void explainCauses(Sweep& sweep, const InferenceBackend& run, const InferenceBackend* reference, SensitivityResult& result)
{
    const Checkpoint& checkpoint = run.checkpoint();
    const std::vector<LinearScaleStatistics> scales = computeScaleStatistics(checkpoint);
    std::vector<Finding> findings = diagnoseCheckpoint(checkpoint, scales);
    const std::vector<Finding> activationFindings = diagnoseActivations(sweep.activations, run.linears());
    findings.insert(findings.begin(), activationFindings.begin(), activationFindings.end());
    for (const LinearInfo& l : run.linears()) {
        if (!l.quantized)
            continue;
        LinearCauseInputs in;
        in.info = &l;
        in.findings = &findings;
        for (const LinearScaleStatistics& s : scales)
            if (s.module == l.module)
                in.scales = &s;
        for (const ActivationStatistics& a : sweep.activations)
            if (a.module == l.module)
                in.activations = &a;
        const auto sample = sweep.samples.find(l.module);
        in.sample = sample == sweep.samples.end() ? nullptr : &sample->second;
        in.codes = checkpoint.tensors().find(l.module + ".weight");
        in.referenceWeight = reference ? reference->checkpoint().tensors().find(l.module + ".weight") : nullptr;
        result.causes.push_back(explainLinear(in));
    }
    for (SensitivityEntry& entry : result.entries)
        for (const SensitivityCause& cause : result.causes)
            if (entry.linears.size() == 1 && cause.module == entry.module)
                entry.cause = cause;
}

void validate(const SensitivityOptions& options, const SensitivityInput& input, const InferenceBackend& run)
{
    if (const std::string problem = granularityProblem(options.granularity); !problem.empty())
        throw OptionError(TaskOption::Granularity, problem);
    if (options.targetSqnrDb && !std::isfinite(*options.targetSqnrDb))
        throw OptionError(TaskOption::TargetSqnr, "{option} must be a finite number of dB.");
    if (options.targetF1Drop && !(*options.targetF1Drop >= 0 && *options.targetF1Drop <= 100))
        throw OptionError(TaskOption::TargetF1Drop, "{option} must be between 0 and 100 F1 points.");
    const bool qa = input.squad || !input.single.question.empty() || !input.single.context.empty();
    if (options.targetF1Drop && !qa)
        throw OptionError(TaskOption::TargetF1Drop, "{option} needs a question{(Question)} or a SQuAD file{(Squad)}; "
                                                    "use {TargetSqnr} for this input.");
    if (!run.checkpoint().layout().isQuestionAnswering() && qa)
        throw OptionError(TaskOption::Question, "{option} and {Squad} need a question-answering checkpoint; " +
                                                    run.checkpoint().directory() + " is " +
                                                    architectureName(run.config().architecture) + ".");
}

// Runs float_one and fp8_one of every unit; a cancel keeps what finished.
void sweepEntries(Sweep& sweep, std::vector<SensitivityEntry> units, const SensitivityOptions& options,
                  SensitivityResult& result)
{
    for (SensitivityEntry& unit : units) {
        try {
            const std::string& label = unit.module;
            unit.floatOne = sweep.measure(overridesFor(unit.linears, Precision::Float, false), "Kept float: " + label);
            unit.fp8One = sweep.measure(overridesFor(unit.linears, Precision::Fp8, true), "FP8 alone: " + label);
        } catch (const Cancelled&) {
            result.complete = false;
            result.stoppedReason = "Cancelled after " + std::to_string(result.entries.size()) + " of " +
                                   std::to_string(units.size()) + " entries.";
            return;
        }
        result.entries.push_back(unit);
        if (options.onEntry)
            options.onEntry(result.entries.back());
    }
}

} // namespace

const std::vector<std::string>& sensitivityGranularities()
{
    static const std::vector<std::string> granularities{"linear", "unit", "layer"};
    return granularities;
}

std::string granularityProblem(const std::string& granularity)
{
    const std::vector<std::string>& known = sensitivityGranularities();
    if (std::find(known.begin(), known.end(), granularity) != known.end())
        return {};
    return "{option} must be " + joinedWords(known, " or ") + ", not \"" + granularity + "\".";
}

SensitivityResult runSensitivity(InferenceBackend& run, InferenceBackend* reference, const SensitivityInput& input,
                                 const SensitivityOptions& options, const Progress& progress)
{
    validate(options, input, run);
    SensitivityResult result;
    result.granularity = options.granularity;
    result.referenceIsStandIn = reference == nullptr;
    result.referenceLabel = reference ? "reference (" + reference->checkpoint().directory() + ")" : "dequant";
    std::vector<SensitivityEntry> units = sweepUnits(run, options.granularity);
    Sweep sweep(run, reference ? *reference : run, options.runMode, progress, result);
    buildCases(sweep, run, input, result);
    sweep.plannedRuns = 2 + 2 * units.size() + units.size() / 2;
    sweep.runReferences();
    result.baseline = sweep.measure({}, "Baseline", true);
    PrecisionOverrides allFloat;
    allFloat.othersFloat = true;
    result.allFloat = sweep.measure(allFloat, "All float");
    sweepEntries(sweep, std::move(units), options, result);
    rankEntries(result.entries, result.inputKind == "squad");
    explainCauses(sweep, run, reference, result);
    Target target{options.targetSqnrDb, options.targetF1Drop, result.inputKind == "squad", result.reference.f1};
    if (result.complete) {
        try {
            suggest(sweep, result, target);
            result.suggestionValidity = keepFloatValidity(run.checkpoint(), result.suggestedFloat);
        } catch (const Cancelled&) {
            result.complete = false;
            result.stoppedReason = "Cancelled while verifying the suggestion; the entries are complete.";
        }
    }
    run.checkpoint().tensors().checkUnchanged();
    progress.report(1.0, "Sensitivity done");
    return result;
}

} // namespace scalescope
