#include "tasks/sensitivity.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "analysis/diagnostics.h"
#include "analysis/scale_statistics.h"
#include "common/error.h"
#include "common/option_error.h"
#include "common/text_files.h"
#include "tasks/evaluate.h"
#include "tasks/final_outputs.h"
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
    Sweep(InferenceBackend& run, InferenceBackend& reference, const RunSettings& settings, const Progress& progress,
          SensitivityResult& result)
        : run_(run), reference_(reference), settings_(settings), progress_(progress), result_(result),
          floatWeights_(&reference == &run ? nullptr : floatWeightSource(&reference))
    {
    }

    std::vector<Case> cases;
    std::size_t plannedRuns = 1;
    std::map<std::string, LinearInputSample> samples; // baseline inputs of the quantized Linears
    std::vector<ActivationStatistics> activations;

    void runReferences()
    {
        const ForwardOptions options = forwardOptions(referenceRunSettings());
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
            ForwardOptions options = forwardOptions(settings_.withOverrides(overrides));
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
    RunSettings settings_;
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
            metrics.agrees = f.outputsAgree;
            if (f.sequence)
                addSequenceAgreement(*f.sequence, metrics);
        }
    }

    static void addSequenceAgreement(const SequenceOutputAgreement& sequence, SensitivityMetrics& metrics)
    {
        metrics.labelFlips = sequence.labelFlips;
        metrics.meanCosine = sequence.meanCosine;
        metrics.minCosine = sequence.minCosine;
        metrics.kendallTau = sequence.kendallTau;
        if (sequence.kendallTau)
            metrics.sameOrder = sequence.sameOrder;
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
        if (units.empty() || units.back().module != name) {
            SensitivityEntry unit;
            unit.module = name;
            unit.label = name == l.module ? layout.shortLabel(name) : "L" + std::to_string(layer);
            units.push_back(std::move(unit));
        }
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
        SensitivityEntry entry;
        entry.module = unit.module;
        entry.label = unit.label;
        for (const std::string& module : unit.linears)
            if (quantized.count(module))
                entry.linears.push_back(module);
        if (!entry.linears.empty())
            units.push_back(std::move(entry));
    }
    return units;
}

// With AIU FP8 attention, one more entry per layer: "the attention of layer N in FP8" (its K/V casts),
// after the layer's other entries. It is measured and ranked like any unit; being a run option, not
// something a checkpoint stores, it is never part of a keep-float suggestion.
void addFp8AttentionUnits(const InferenceBackend& run, std::vector<SensitivityEntry>& units)
{
    const EncoderLayout& layout = run.checkpoint().layout();
    for (int layer = static_cast<int>(run.config().numLayers) - 1; layer >= 0; --layer) {
        SensitivityEntry entry;
        entry.module = layout.fp8AttentionUnit(layer);
        entry.label = layout.shortLabel(entry.module);
        entry.linears = {entry.module}; // the override that runs it float (or alone in FP8)
        entry.fp8Attention = true;
        auto after = std::find_if(units.rbegin(), units.rend(),
                                  [&](const SensitivityEntry& u) { return layout.layerOf(u.module) == layer; });
        auto before = std::find_if(units.begin(), units.end(), [&](const SensitivityEntry& u) {
            const int of = layout.layerOf(u.module);
            return of < 0 || of > layer;
        });
        units.insert(after != units.rend() ? after.base() : before, std::move(entry));
    }
}


std::vector<SensitivityEntry> sweepUnits(const InferenceBackend& run, const std::string& granularity,
                                         AttentionPrecision attention)
{
    std::vector<SensitivityEntry> units =
        granularity == "unit" ? runtimeUnitEntries(run) : linearOrLayerUnits(run, granularity == "layer");
    if (attention == AttentionPrecision::Fp8Aiu)
        addFp8AttentionUnits(run, units);
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
    result.agreement = agreementWords(run.checkpoint().layout(), run.config().numLabels);
    if (!input.squad) {
        Case c;
        c.input = input.single;
        c.prepared = prepareComparisonInput(run, c.input);
        result.inputKind = c.input.texts.empty() ? inputKindOf(c.prepared) : "texts";
        result.samples = c.input.texts.empty() ? 1 : c.input.texts.size();
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
    std::optional<OptionError> optionLeftOut; // the first question an option left out (--max-seq-len)
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
        } catch (const OptionError& e) {
            if (!optionLeftOut)
                optionLeftOut = e;
            continue;
        } catch (const Error&) {
            continue; // a question that cannot be windowed is left out, as evaluate skips it
        }
        sweep.cases.push_back(std::move(c));
    }
    // When an option left out every question, the option is the problem: name it.
    if (sweep.cases.empty() && optionLeftOut)
        throw *optionLeftOut;
    if (sweep.cases.empty())
        throw Error("No question of " + input.squad->path + " can be run (the file has none, or none fits the model).");
    result.samples = sweep.cases.size();
}

double orLowest(double value)
{
    return std::isnan(value) ? -std::numeric_limits<double>::infinity() : value;
}

// Most helpful to keep float first: SQuAD by F1 kept float, otherwise by final SQNR kept float
// (the same order as dB recovered: the baseline is common to all); ties go to the unit whose FP8
// alone hurts most.
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

// Two entries the sweep cannot tell apart: their dB recovered (and, on SQuAD, their F1 kept
// float) within the spread. Two infinite recoveries (both make the output exact) tie too.
bool tied(const SensitivityEntry& a, const SensitivityEntry& b, const SensitivitySpread& spread, bool squad)
{
    if (!spread.estimated || std::isnan(a.recoveredDb) || std::isnan(b.recoveredDb))
        return false;
    if (squad && std::fabs(a.floatOne.f1 - b.floatOne.f1) > spread.f1Points + 1e-9)
        return false;
    if (std::isinf(a.recoveredDb) || std::isinf(b.recoveredDb))
        return a.recoveredDb == b.recoveredDb;
    return std::fabs(a.recoveredDb - b.recoveredDb) <= spread.db;
}

// Tie groups over the ranking: each group is led by its best-ranked entry and holds the entries
// after it that tie with that leader (not chained through each other, so a long run of small steps
// does not become one group). Returns the groups as [first, last) index ranges; marks tieRank.
std::vector<std::pair<std::size_t, std::size_t>> groupTies(std::vector<SensitivityEntry>& entries,
                                                            const SensitivitySpread& spread, bool squad)
{
    std::vector<std::pair<std::size_t, std::size_t>> groups;
    for (std::size_t first = 0; first < entries.size();) {
        std::size_t last = first + 1;
        while (last < entries.size() && tied(entries[first], entries[last], spread, squad))
            ++last;
        for (std::size_t i = first; i < last; ++i)
            entries[i].tieRank = last - first > 1 ? entries[first].rank : 0;
        groups.emplace_back(first, last);
        first = last;
    }
    return groups;
}

void copyInfo(const SensitivitySweepInfo& info, SensitivityResult& result)
{
    result.inputKind = info.inputKind;
    result.granularity = info.granularity;
    result.referenceLabel = info.referenceLabel;
    result.referenceIsStandIn = info.referenceIsStandIn;
    result.run = info.run;
    result.target = info.target;
    result.agreement = info.agreement;
    result.samples = info.samples;
    result.baseline = info.baseline;
    result.allFloat = info.allFloat;
    result.reference = info.reference;
}

// Ranks the entries, estimates the spread on them and marks the ties: the one order the finished
// sweep and a live one both use.
std::vector<std::pair<std::size_t, std::size_t>> rankAndGroup(const SensitivitySweepInfo& info, SensitivityResult& result)
{
    const bool squad = info.inputKind == "squad";
    rankEntries(result.entries, squad);
    result.spread = estimateSensitivitySpread(result.entries, info);
    return groupTies(result.entries, result.spread, squad);
}

struct Target {
    std::optional<double> sqnrDb, f1Drop;
    bool squad = false;
    double referenceF1 = 100;
    AgreementWords words; // what "agrees" means for this model's outputs

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
        return t.empty() ? (squad ? "every answer agrees with the reference" : words.agrees + " with the reference") : t;
    }
};

std::string metricText(const SensitivityMetrics& m, const Target& target)
{
    std::string text = "final SQNR " + (std::isfinite(m.sqnrDb) ? formatNumber(m.sqnrDb) + " dB" : std::string(m.sqnrDb > 0 ? "infinite" : "not finite"));
    if (target.f1Drop)
        text += ", F1 drop " + formatNumber(target.drop(m));
    else if (!target.sqnrDb)
        text += ", " + (m.agrees ? target.words.agrees : target.words.differs);
    return text;
}

std::string linearsText(std::size_t count)
{
    return std::to_string(count) + (count == 1 ? " Linear" : " Linears");
}

// What the ties in a suggestion mean, "" without ties.
std::string tiesNote(const SensitivityResult& result, const std::vector<std::pair<std::size_t, std::size_t>>& groups)
{
    if (result.suggestedTied.empty())
        return {};
    std::string note = " " + linearsText(result.suggestedTied.size()) + " of it come from entries that tie within the spread (" +
                       "+-" + formatNumber(result.spread.db) + " dB of dB recovered), so they are kept together: the sweep "
                       "cannot tell which of them matters, and does not pick among them.";
    const auto& [first, last] = groups.front();
    if (last - first > 1 && 2 * (last - first) >= result.entries.size())
        note += " No entry stands out: ranks 1-" + std::to_string(last - first) + " of " +
                std::to_string(result.entries.size()) + " tie, so the FP8 error is spread over the model rather than "
                "caused by one " + (result.granularity == "layer" ? "layer." : "Linear.");
    return note;
}

// The smallest run of whole tie groups from the top of the ranking that meets the target, each
// candidate verified by a run. A tie group is added whole, never in part: its entries are within
// the spread of each other, so any order among them is noise and picking some of them would be a
// guess dressed as a finding.
void suggest(Sweep& sweep, const InferenceBackend& run, SensitivityResult& result, const Target& target,
             const std::vector<std::pair<std::size_t, std::size_t>>& groups)
{
    // FP8 attention entries rank with the rest but are no part of a checkpoint: said, then skipped.
    std::string attentionNote;
    if (!result.entries.empty() && result.entries.front().fp8Attention)
        attentionNote = " The top entry, " + run.checkpoint().layout().describeModule(result.entries.front().module) +
                        ", is a run option (--attention), not something a checkpoint keeps float; the suggestion "
                        "skips such entries.";
    if (target.met(result.baseline)) {
        result.suggestionReached = true;
        result.suggestedMetrics = result.baseline;
        result.suggestionNote = "The FP8 run already meets the target (" + result.target + "); no Linear needs to stay float.";
        return;
    }
    std::vector<std::string> prefix, tiedInPrefix, bestPrefix, bestTied;
    std::optional<SensitivityMetrics> best;
    for (const auto& [first, last] : groups) {
        std::vector<std::string> added;
        for (std::size_t i = first; i < last; ++i)
            if (!result.entries[i].fp8Attention)
                added.insert(added.end(), result.entries[i].linears.begin(), result.entries[i].linears.end());
        if (added.empty())
            continue;
        prefix.insert(prefix.end(), added.begin(), added.end());
        if (last - first > 1)
            tiedInPrefix.insert(tiedInPrefix.end(), added.begin(), added.end());
        const SensitivityMetrics m = sweep.measureNextPrefix(overridesFor(prefix, Precision::Float, false),
                                                             overridesFor(added, Precision::Float, false),
                                                             "Verifying " + std::to_string(prefix.size()) + " float");
        result.verifiedPrefixes.push_back({prefix.size(), m});
        if (!best || target.better(m, *best)) {
            best = m;
            bestPrefix = prefix;
            bestTied = tiedInPrefix;
        }
        if (target.met(m)) {
            result.suggestedFloat = prefix;
            result.suggestedTied = tiedInPrefix;
            result.suggestedMetrics = m;
            result.suggestionReached = true;
            result.suggestionNote = "Verified: with these " + linearsText(prefix.size()) + " float, " + metricText(m, target) +
                                    ", which meets the target (" + result.target + ")." + tiesNote(result, groups) +
                                    attentionNote;
            return;
        }
    }
    if (!best) {
        result.suggestionNote = "No Linear entry to keep float: the ranking holds only FP8 attention, a run option." +
                                attentionNote;
        return;
    }
    result.suggestedFloat = bestPrefix;
    result.suggestedTied = bestTied;
    result.suggestedMetrics = best;
    result.suggestionNote = "No prefix of the ranking reaches the target (" + result.target + "); the best found keeps " +
                            linearsText(bestPrefix.size()) + " float: " + metricText(*best, target) + "." +
                            tiesNote(result, groups) + attentionNote;
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
    if (options.spreadDb && !(*options.spreadDb >= 0 && std::isfinite(*options.spreadDb)))
        throw Error("The stated spread must be a finite number of dB, 0 or more.");
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
                  const std::shared_ptr<const SensitivitySweepInfo>& info, SensitivityResult& result)
{
    for (SensitivityEntry& unit : units) {
        try {
            const std::string& label = unit.module;
            unit.floatOne = sweep.measure(overridesFor(unit.linears, Precision::Float, false), "Kept float: " + label);
            unit.fp8One = sweep.measure(overridesFor(unit.linears, Precision::Fp8, true), "FP8 alone: " + label);
            unit.recoveredDb = unit.floatOne.sqnrDb - info->baseline.sqnrDb;
            unit.lostAloneDb = sensitivityLostAloneDb(unit.fp8One, info->baseline, info->allFloat);
            unit.sweep = info;
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

double sensitivityLostAloneDb(const SensitivityMetrics& fp8One, const SensitivityMetrics& baseline,
                              const SensitivityMetrics& allFloat)
{
    // Noise power relative to the reference's signal; an exact run (+inf dB) has none.
    auto noise = [](double sqnrDb) { return std::pow(10.0, -sqnrDb / 10.0); };
    if (std::isnan(fp8One.sqnrDb) || std::isnan(baseline.sqnrDb) || std::isnan(allFloat.sqnrDb))
        return std::numeric_limits<double>::quiet_NaN();
    const double whole = noise(baseline.sqnrDb);
    const double alone = noise(fp8One.sqnrDb) - noise(allFloat.sqnrDb);
    if (!(alone > 0) || !(whole > 0))
        return 0.0;
    if (alone >= whole)
        return std::numeric_limits<double>::infinity();
    return -10.0 * std::log10(1.0 - alone / whole);
}

// The spread. The sweep is deterministic: the same run twice gives the same numbers bit for bit,
// so "run to run" cannot be measured by repeating a run. What varies is which roundings happen to
// meet: keeping one Linear float changes every rounding downstream of it, and the errors of the
// others partly cancel or add by chance (this is why some entries "recover" a negative number of
// dB: no Linear's FP8 error helps in expectation, yet keeping one float can lower the final SQNR).
// Each entry is measured twice, independently: dB recovered (only it float, the others' errors
// around it) and dB lost alone (only it FP8, nothing to interact with). Were the errors simply
// additive the two would agree (sensitivityLostAloneDb); their gap is the chance part, the size of
// what any one measurement can be off by. So the spread is twice a robust standard deviation of
// that gap over the entries, 2 x 1.4826 x median |recovered - lost alone| (the median, so that
// the one entry that matters, whose gap can be large when its error dominates, does not widen it):
// about 1.4 standard deviations of the difference of two entries' dB recovered, so two entries
// closer than it are not told apart. SQuAD adds one question's F1 (100 / questions): one
// borderline answer flipping is within what rounding changes.
SensitivitySpread estimateSensitivitySpread(const std::vector<SensitivityEntry>& entries, const SensitivitySweepInfo& info)
{
    constexpr std::size_t kMinimumBasis = 3;
    constexpr double kMadToSigma = 1.4826; // a normal distribution's standard deviation per median absolute deviation
    SensitivitySpread spread;
    if (info.statedSpreadDb) {
        spread.estimated = *info.statedSpreadDb > 0;
        spread.db = std::max(0.0, *info.statedSpreadDb);
        spread.method = spread.estimated ? "+-" + formatNumber(spread.db) + " dB, as stated (not estimated)."
                                         : "No ties: a spread of 0 dB was stated.";
        return spread;
    }
    std::vector<double> gaps;
    for (const SensitivityEntry& e : entries)
        if (std::isfinite(e.recoveredDb) && std::isfinite(e.lostAloneDb))
            gaps.push_back(std::fabs(e.recoveredDb - e.lostAloneDb));
    spread.basis = gaps.size();
    if (info.inputKind == "squad")
        spread.f1Points = 100.0 / double(std::max<std::size_t>(1, info.samples));
    if (gaps.size() < kMinimumBasis) {
        spread.method = "Not estimated: " + std::to_string(gaps.size()) + " of " + std::to_string(entries.size()) +
                        " entries have both measures finite, and the spread needs at least " +
                        std::to_string(kMinimumBasis) + "; no tie is claimed.";
        return spread;
    }
    std::nth_element(gaps.begin(), gaps.begin() + std::ptrdiff_t(gaps.size() / 2), gaps.end());
    double median = gaps[gaps.size() / 2];
    if (gaps.size() % 2 == 0) {
        const double below = *std::max_element(gaps.begin(), gaps.begin() + std::ptrdiff_t(gaps.size() / 2));
        median = (median + below) / 2;
    }
    spread.estimated = true;
    spread.db = 2.0 * kMadToSigma * median;
    spread.method = "+-" + formatNumber(spread.db) + " dB: twice the robust standard deviation (1.4826 x median) of the gap "
                    "between each entry's dB recovered kept float and dB lost alone in FP8, over " +
                    std::to_string(gaps.size()) + " entries; the two would agree if FP8 errors simply added, so the gap "
                    "is how much a measure owes to how this run's roundings happen to interact." +
                    (info.inputKind == "squad" ? " F1 within " + formatNumber(spread.f1Points) + " points (one question) ties too." : "");
    return spread;
}

SensitivityResult partialSensitivityResult(const SensitivitySweepInfo& info, std::vector<SensitivityEntry> entries)
{
    SensitivityResult result;
    copyInfo(info, result);
    result.entries = std::move(entries);
    result.complete = false;
    rankAndGroup(info, result); // causes come after the last entry: a live result has none yet
    return result;
}

SensitivityResult runSensitivity(InferenceBackend& run, InferenceBackend* reference, const SensitivityInput& input,
                                 const SensitivityOptions& options, const Progress& progress)
{
    validate(options, input, run);
    SensitivityResult result;
    result.granularity = options.granularity;
    result.referenceIsStandIn = reference == nullptr;
    result.referenceLabel = reference ? "reference (" + reference->checkpoint().directory() + ")" : "dequant";
    std::vector<SensitivityEntry> units = sweepUnits(run, options.granularity, options.run.attention);
    Sweep sweep(run, reference ? *reference : run, options.run, progress, result);
    buildCases(sweep, run, input, result);
    sweep.plannedRuns = 2 + 2 * units.size() + units.size() / 2;
    sweep.runReferences();
    result.baseline = sweep.measure({}, "Baseline", true);
    PrecisionOverrides allFloat;
    allFloat.othersFloat = true;
    result.allFloat = sweep.measure(allFloat, "All float");
    const Target target{options.targetSqnrDb, options.targetF1Drop, result.inputKind == "squad", result.reference.f1,
                        result.agreement};
    result.run = options.run;
    result.target = target.text();
    auto info = std::make_shared<SensitivitySweepInfo>();
    info->inputKind = result.inputKind;
    info->granularity = result.granularity;
    info->referenceLabel = result.referenceLabel;
    info->referenceIsStandIn = result.referenceIsStandIn;
    info->run = result.run;
    info->target = result.target;
    info->agreement = result.agreement;
    info->statedSpreadDb = options.spreadDb;
    info->samples = result.samples;
    info->baseline = result.baseline;
    info->allFloat = result.allFloat;
    info->reference = result.reference;
    sweepEntries(sweep, std::move(units), options, info, result);
    const auto groups = rankAndGroup(*info, result);
    explainCauses(sweep, run, reference, result);
    if (result.complete) {
        try {
            suggest(sweep, run, result, target, groups);
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
