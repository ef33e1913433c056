#include "engine/calibration_lab.h"

#include <stdlib.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <set>
#include <system_error>

#include "common/error.h"
#include "engine/encoder_model.h"
#include "io/temporary_owner.h"
#include "model/checkpoint.h"
#include "numerics/fp8_clip.h"
#include "numerics/metrics.h"

namespace scalescope {
namespace {

namespace fs = std::filesystem;

constexpr Dtype kScaleDtype = Dtype::F32;

std::vector<int64_t> labSizes(const std::vector<int64_t>& asked, int64_t count)
{
    std::set<int64_t> sizes;
    if (asked.empty()) {
        for (int64_t n = 8; n < count; n *= 2)
            sizes.insert(n);
    } else {
        for (int64_t n : asked) {
            if (n <= 0)
                throw Error("Calibration sizes must be positive sample counts, not " + std::to_string(n) + ".");
            if (n < count)
                sizes.insert(n);
        }
    }
    sizes.insert(count);
    return {sizes.begin(), sizes.end()};
}

std::string decibels(double db)
{
    if (std::isinf(db))
        return db > 0 ? "inf" : "-inf";
    char text[32];
    std::snprintf(text, sizeof text, "%.2f", db);
    return text;
}

constexpr const char* kCalibrationFolderPrefix = "scalescope-calibrate-";

// A folder of its own under the system's temporary directory ($TMPDIR), removed with everything in
// it when done. It is made new (mkdtemp), so nothing that stood there before is ever removed; a
// calibration that was killed leaves one, which the next removes once its owner is gone.
class TemporaryFolder {
public:
    TemporaryFolder()
    {
        const std::string parent = fs::temp_directory_path().string();
        removeFoldersOfGoneOwners(
            parent, [](std::string_view name) { return ownerOfMkdtempName(name, kCalibrationFolderPrefix); });
        std::string pattern = (fs::path(parent) / (kCalibrationFolderPrefix + temporaryOwnerTag() + "-XXXXXX")).string();
        if (!::mkdtemp(pattern.data()))
            throw Error("Cannot create a temporary folder in " + parent + ": " + std::strerror(errno) + ".");
        path_ = pattern;
    }
    ~TemporaryFolder()
    {
        std::error_code ignored;
        fs::remove_all(path_, ignored);
    }
    TemporaryFolder(const TemporaryFolder&) = delete;
    TemporaryFolder& operator=(const TemporaryFolder&) = delete;
    const fs::path& path() const { return path_; }

private:
    fs::path path_;
};

// Per Linear, the clipped tokens and elements of the evaluation inputs against a set of scales.
struct ClipCounter {
    std::vector<float> scales;               // distinct, ascending
    std::vector<int64_t> tokens, elements;   // per scale
    int64_t totalTokens = 0, totalElements = 0;

    void add(const float* data, int64_t rows, int64_t features)
    {
        for (int64_t row = 0; row < rows; ++row) {
            const float* x = data + row * features;
            float amax = 0;
            for (int64_t i = 0; i < features; ++i)
                amax = std::max(amax, std::fabs(x[i]));
            for (std::size_t s = 0; s < scales.size(); ++s) {
                // Division by a positive scale keeps the order of magnitudes, so a token whose
                // largest value does not clip has no element that does.
                if (!fp8::clipsE4M3(amax, scales[s]))
                    continue;
                int64_t clipped = 0;
                for (int64_t i = 0; i < features; ++i)
                    clipped += fp8::clipsE4M3(x[i], scales[s]);
                ++tokens[s];
                elements[s] += clipped;
            }
        }
        totalTokens += rows;
        totalElements += rows * features;
    }
    std::size_t indexOf(float scale) const
    {
        return static_cast<std::size_t>(std::lower_bound(scales.begin(), scales.end(), scale) - scales.begin());
    }
};

// The scales a size stands for, amax[size][order], for one Linear: the running max of its first n
// calibration texts in that order.
using AmaxBySizeAndOrder = std::vector<std::vector<float>>;
using AmaxPerText = std::vector<std::map<std::string, float>>;

// The Linears quantize gives an input scale, in execution order.
std::vector<const LayoutLinear*> encoderLinears(const Checkpoint& checkpoint)
{
    std::vector<const LayoutLinear*> linears;
    for (const LayoutLinear& linear : checkpoint.layout().linears())
        if (checkpoint.layout().isEncoderLinear(linear.module))
            linears.push_back(&linear);
    return linears;
}

// One Linear's scale after each size in each order, the first n at which it reaches the full set's,
// and (into amaxAt) the amax each scale stands on.
CalibrationLinear calibrateLinear(const LayoutLinear& layoutLinear, const AmaxPerText& perText,
    const std::vector<std::vector<std::size_t>>& orders, const std::vector<int64_t>& sizes, AmaxBySizeAndOrder& amaxAt)
{
    const std::string& module = layoutLinear.module;
    const int64_t count = static_cast<int64_t>(perText.size());
    CalibrationLinear linear;
    linear.module = module;
    linear.label = layoutLinear.shortLabel;
    linear.layer = layoutLinear.layer;
    float fullAmax = 0;
    for (const auto& text : perText)
        if (auto it = text.find(module); it != text.end())
            fullAmax = std::max(fullAmax, it->second);
    linear.fullScale = scaleForAmax(fullAmax, kScaleDtype);
    for (int64_t n : sizes) {
        CalibrationSizeScales size;
        size.n = n;
        linear.bySize.push_back(size);
    }
    amaxAt.assign(sizes.size(), std::vector<float>(orders.size(), 0.0f));
    for (std::size_t o = 0; o < orders.size(); ++o) {
        float running = 0;
        int64_t converged = 0;
        std::size_t nextSize = 0;
        for (int64_t k = 0; k < count; ++k) {
            const auto& text = perText[orders[o][static_cast<std::size_t>(k)]];
            if (auto it = text.find(module); it != text.end())
                running = std::max(running, it->second);
            const float scale = scaleForAmax(running, kScaleDtype);
            if (converged == 0 && scale == linear.fullScale)
                converged = k + 1;
            while (nextSize < sizes.size() && sizes[nextSize] == k + 1) {
                CalibrationSizeScales& size = linear.bySize[nextSize];
                size.scales.push_back(scale);
                size.ratioToFull.push_back(double(scale) / double(linear.fullScale));
                amaxAt[nextSize][o] = running;
                ++nextSize;
            }
        }
        linear.convergedAt.push_back(converged);
    }
    return linear;
}

// Without evaluation texts the suggestion is the smallest size whose scales are the full set's.
void suggestWithoutEvaluation(CalibrationLabResult& result)
{
    const int64_t count = result.calibrationSamples;
    result.suggestedSize = count;
    for (std::size_t s = 0; s < result.sizes.size(); ++s) {
        bool all = true;
        for (const CalibrationLinear& linear : result.linears)
            for (float scale : linear.bySize[s].scales)
                all = all && scale == linear.fullScale;
        if (all) {
            result.suggestedSize = result.sizes[s];
            break;
        }
    }
    result.spreadBasis = "no evaluation texts, so no end-to-end result and no spread";
    result.sentence = "Without evaluation texts: n = " + std::to_string(result.suggestedSize)
        + " is the smallest size whose scales equal the full set's (" + std::to_string(count)
        + " samples) for every Linear in all " + std::to_string(result.orders) + " orders.";
}

// Per Linear, a counter for every distinct scale among its sizes and orders.
std::vector<ClipCounter> clipCounters(const std::vector<CalibrationLinear>& linears)
{
    std::vector<ClipCounter> clips(linears.size());
    for (std::size_t l = 0; l < linears.size(); ++l) {
        std::set<float> distinct;
        for (const CalibrationSizeScales& size : linears[l].bySize)
            distinct.insert(size.scales.begin(), size.scales.end());
        clips[l].scales.assign(distinct.begin(), distinct.end());
        clips[l].tokens.assign(distinct.size(), 0);
        clips[l].elements.assign(distinct.size(), 0);
    }
    return clips;
}

// The evaluation texts as the quantized runs see them, and the float outputs they are measured against.
struct FloatEvaluation {
    std::vector<EncoderInputs> inputs;
    std::vector<std::vector<NamedTensor>> outputs;
};

// One float forward per evaluation text, which also counts each Linear's clipped inputs into clips.
FloatEvaluation evaluateFloat(const std::shared_ptr<const Checkpoint>& checkpoint,
    const std::vector<std::string>& modules, const std::vector<std::string>& evalTexts, std::vector<ClipCounter>& clips,
    const Progress& progress)
{
    std::map<std::string, std::size_t> moduleIndex;
    for (std::size_t l = 0; l < modules.size(); ++l)
        moduleIndex[modules[l] + ".input"] = l;
    FloatEvaluation evaluation;
    std::unique_ptr<EncoderModel> model = EncoderModel::load(checkpoint);
    ForwardOptions forward;
    forward.mode = RunMode::Dequant;
    for (const auto& [name, index] : moduleIndex)
        forward.capture.names.push_back(name);
    forward.onCapture
        = [&](const std::string& name, const std::vector<int64_t>& shape, const float* data, const std::string&) {
              const auto it = moduleIndex.find(name);
              if (it == moduleIndex.end() || shape.empty())
                  return;
              const int64_t features = shape.back();
              int64_t values = 1;
              for (int64_t d : shape)
                  values *= d;
              // One sequence per forward, so every row is a real token.
              clips[it->second].add(data, features > 0 ? values / features : 0, features);
          };
    for (std::size_t i = 0; i < evalTexts.size(); ++i) {
        progress.throwIfCancelled();
        progress.report(0.2 + 0.1 * double(i) / double(evalTexts.size()), "Evaluation forwards (float)");
        EncoderInputs inputs;
        inputs.addSequence(calibrationEncoding(*checkpoint, evalTexts[i]));
        evaluation.outputs.push_back(model->forward(inputs, forward).outputs);
        evaluation.inputs.push_back(std::move(inputs));
    }
    return evaluation;
}

void recordClipShares(std::vector<CalibrationLinear>& linears, const std::vector<ClipCounter>& clips)
{
    for (std::size_t l = 0; l < linears.size(); ++l) {
        CalibrationLinear& linear = linears[l];
        const ClipCounter& counter = clips[l];
        linear.evalTokens = counter.totalTokens;
        linear.evalElements = counter.totalElements;
        for (CalibrationSizeScales& size : linear.bySize)
            for (float scale : size.scales) {
                const std::size_t s = counter.indexOf(scale);
                size.clipTokenShare.push_back(
                    counter.totalTokens ? double(counter.tokens[s]) / double(counter.totalTokens) : 0.0);
                size.clipElementShare.push_back(
                    counter.totalElements ? double(counter.elements[s]) / double(counter.totalElements) : 0.0);
            }
    }
}

// Per bootstrap draw of the full set (as many texts, with replacement), each Linear's amax.
std::vector<std::vector<float>> bootstrapAmax(
    const AmaxPerText& perText, const std::vector<std::string>& modules, int draws)
{
    const int64_t count = static_cast<int64_t>(perText.size());
    std::vector<std::vector<float>> resampled;
    for (int draw = 1; draw <= draws; ++draw) {
        std::mt19937_64 random(kResampleSeed + static_cast<uint64_t>(draw));
        std::vector<float> amax(modules.size(), 0.0f);
        for (int64_t k = 0; k < count; ++k) {
            const auto& text = perText[static_cast<std::size_t>(random() % static_cast<uint64_t>(count))];
            for (std::size_t l = 0; l < modules.size(); ++l)
                if (auto it = text.find(modules[l]); it != text.end())
                    amax[l] = std::max(amax[l], it->second);
        }
        resampled.push_back(amax);
    }
    return resampled;
}

// The set of scales (one amax per Linear) that size s in order o calibrates.
std::vector<float> scaleSetAt(const std::vector<AmaxBySizeAndOrder>& amaxAt, std::size_t s, std::size_t o)
{
    std::vector<float> set;
    set.reserve(amaxAt.size());
    for (const AmaxBySizeAndOrder& linear : amaxAt)
        set.push_back(linear[s][o]);
    return set;
}

// The final-logits SQNR of the checkpoint quantized with one set of scales, written to destination.
double endToEndSqnr(const std::string& floatDir, const std::string& destination,
    const std::vector<std::string>& modules, const std::vector<float>& amax, const FloatEvaluation& evaluation,
    const Progress& progress)
{
    QuantizeOptions quantize;
    quantize.weights = WeightStrategy::Channel;
    quantize.activations = ActivationScheme::Tensor;
    quantize.scaleDtype = kScaleDtype;
    for (std::size_t l = 0; l < modules.size(); ++l)
        quantize.calibratedInputAmax[modules[l]] = amax[l];
    quantizeCheckpoint(floatDir, destination, quantize);
    std::unique_ptr<EncoderModel> model = EncoderModel::load(destination);
    ForwardOptions forward;
    forward.mode = RunMode::Fp8;
    ErrorAccumulator error;
    for (std::size_t i = 0; i < evaluation.inputs.size(); ++i) {
        progress.throwIfCancelled();
        const ForwardResult run = model->forward(evaluation.inputs[i], forward);
        for (const NamedTensor& reference : evaluation.outputs[i]) {
            const FloatTensor& values = run.output(reference.name);
            if (values.values.size() != reference.tensor.values.size())
                throw Error("The quantized model's " + reference.name + " differs in shape from the float model's.");
            error.add(values.values.data(), reference.tensor.values.data(), values.values.size());
        }
    }
    return error.result().sqnrDb;
}

// Fills in the SQNR of every set of scales, each quantized once into a temporary folder.
void measureScaleSets(std::map<std::vector<float>, double>& sqnrOfSet, const std::string& floatDir,
    const std::vector<std::string>& modules, const FloatEvaluation& evaluation, const Progress& progress)
{
    TemporaryFolder folder;
    std::size_t done = 0;
    for (auto& [amax, sqnr] : sqnrOfSet) {
        progress.throwIfCancelled();
        progress.report(0.3 + 0.7 * double(done) / double(sqnrOfSet.size()),
            "End to end: scale set " + std::to_string(done + 1) + " of " + std::to_string(sqnrOfSet.size()));
        const std::string destination = (folder.path() / ("set-" + std::to_string(done))).string();
        sqnr = endToEndSqnr(floatDir, destination, modules, amax, evaluation, progress);
        std::error_code ignored;
        fs::remove_all(destination, ignored);
        ++done;
    }
}

// The spread of the full set's result over its bootstrap draws, and the smallest size within it.
void suggestWithinSpread(CalibrationLabResult& result, const std::vector<std::vector<float>>& resampled,
    const std::map<std::vector<float>, double>& sqnrOfSet)
{
    const int64_t count = result.calibrationSamples;
    auto lowest = [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); };
    auto highest = [](const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); };
    const double full = result.endToEnd.back().sqnrDb.front();
    double low = full, high = full;
    for (const std::vector<float>& amax : resampled) {
        const double db = sqnrOfSet.at(amax);
        result.resampledSqnrDb.push_back(db);
        low = std::min(low, db);
        high = std::max(high, db);
    }
    result.spreadDb = std::isfinite(high - low) ? high - low : 0.0;
    result.spreadBasis = "the range of the final-logits SQNR over the full set and " + std::to_string(result.orders)
        + " bootstrap draws of it (" + std::to_string(count)
        + " samples drawn with replacement): every order of the full set gives the same scales, so its "
          "spread is that of calibrating on another draw of as many samples";
    result.suggestedSize = count;
    std::size_t chosen = result.sizes.size() - 1;
    for (std::size_t s = 0; s < result.sizes.size(); ++s)
        if (lowest(result.endToEnd[s].sqnrDb) >= full - result.spreadDb) {
            result.suggestedSize = result.sizes[s];
            chosen = s;
            break;
        }
    const CalibrationEndToEnd& pick = result.endToEnd[chosen];
    if (result.suggestedSize < count)
        result.sentence = "n = " + std::to_string(result.suggestedSize)
            + " samples give a result within the run-to-run spread of the full set (" + decibels(result.spreadDb)
            + " dB): final-logits SQNR " + decibels(lowest(pick.sqnrDb)) + " to " + decibels(highest(pick.sqnrDb))
            + " dB over " + std::to_string(result.orders) + " orders against " + decibels(full) + " dB with all "
            + std::to_string(count) + ".";
    else
        result.sentence = "No size below the full set of " + std::to_string(count)
            + " samples gives a result within its run-to-run spread (" + decibels(result.spreadDb)
            + " dB); calibrate on all of them (final-logits SQNR " + decibels(full) + " dB).";
}

} // namespace

std::vector<std::size_t> calibrationSampleOrder(std::size_t count, int order)
{
    std::vector<std::size_t> indices(count);
    std::iota(indices.begin(), indices.end(), std::size_t{0});
    if (order == 0)
        return indices;
    // Fisher-Yates with the raw engine output (std::shuffle's distribution differs between
    // standard libraries; the engine's sequence does not).
    std::mt19937_64 random(static_cast<uint64_t>(order));
    for (std::size_t i = count; i > 1; --i)
        std::swap(indices[i - 1], indices[static_cast<std::size_t>(random() % i)]);
    return indices;
}

QuantizeOptions calibratedQuantizeOptions(const std::vector<std::string>& calibrationTexts, int64_t n)
{
    if (n <= 0 || n > static_cast<int64_t>(calibrationTexts.size()))
        throw Error("A calibration size of " + std::to_string(n) + " needs between 1 and " +
                    std::to_string(calibrationTexts.size()) + " calibration samples.");
    QuantizeOptions options;
    options.weights = WeightStrategy::Channel;
    options.activations = ActivationScheme::Tensor;
    options.scaleDtype = kScaleDtype;
    options.calibrationTexts.assign(calibrationTexts.begin(), calibrationTexts.begin() + n);
    return options;
}

CalibrationLabResult runCalibrationLab(const std::string& floatDir, const CalibrationLabOptions& options,
                                       const Progress& progress)
{
    if (options.calibrationTexts.empty())
        throw Error("The calibration lab needs at least one calibration text.");
    if (options.orders < 1 || options.orders > 1000)
        throw Error("The calibration lab needs between 1 and 1000 sample orders, not " + std::to_string(options.orders) + ".");
    std::shared_ptr<const Checkpoint> checkpoint = Checkpoint::open(floatDir);
    if (checkpoint->config().quantization)
        throw Error(floatDir + " is already quantized (its config.json has a quantization_config); the calibration lab "
                               "takes the float checkpoint it would calibrate.");

    CalibrationLabResult result;
    const int64_t count = static_cast<int64_t>(options.calibrationTexts.size());
    result.calibrationSamples = count;
    result.evalSamples = static_cast<int64_t>(options.evalTexts.size());
    result.sizes = labSizes(options.sizes, count);
    result.orders = options.orders;
    const bool evaluate = !options.evalTexts.empty();

    // 1. One float forward per calibration text; every size and order is a prefix max of them.
    Progress calibrating = progress;
    calibrating.callback = [&](double fraction, const std::string&) {
        // calibrationAmaxPerText reports 0 to 0.5 over its forwards.
        progress.report(2.0 * fraction * (evaluate ? 0.2 : 1.0), "Calibration forwards");
    };
    const AmaxPerText perText = calibrationAmaxPerText(checkpoint, options.calibrationTexts, calibrating);
    std::vector<std::vector<std::size_t>> orders;
    orders.reserve(static_cast<std::size_t>(options.orders));
    for (int order = 0; order < options.orders; ++order)
        orders.push_back(calibrationSampleOrder(static_cast<std::size_t>(count), order));
    std::vector<std::string> modules;
    std::vector<AmaxBySizeAndOrder> amaxAt;
    for (const LayoutLinear* linear : encoderLinears(*checkpoint)) {
        modules.push_back(linear->module);
        amaxAt.emplace_back();
        result.linears.push_back(calibrateLinear(*linear, perText, orders, result.sizes, amaxAt.back()));
    }
    if (!evaluate) {
        suggestWithoutEvaluation(result);
        progress.report(1.0, "Calibration lab done");
        return result;
    }

    // 2. One float forward per evaluation text: the clip counts against every scale of every
    // size and order, and the float logits the quantized runs are measured against.
    std::vector<ClipCounter> clips = clipCounters(result.linears);
    const FloatEvaluation evaluation = evaluateFloat(checkpoint, modules, options.evalTexts, clips, progress);
    recordClipShares(result.linears, clips);

    // 3. End to end: each distinct set of scales quantized once, its FP8 logits against the float
    // ones. The bootstrap draws of the full set measure its run-to-run spread.
    const std::vector<std::vector<float>> resampled = bootstrapAmax(perText, modules, options.orders);
    std::map<std::vector<float>, double> sqnrOfSet;
    for (const std::vector<float>& amax : resampled)
        sqnrOfSet.emplace(amax, 0.0);
    for (std::size_t s = 0; s < result.sizes.size(); ++s)
        for (std::size_t o = 0; o < orders.size(); ++o)
            sqnrOfSet.emplace(scaleSetAt(amaxAt, s, o), 0.0);
    measureScaleSets(sqnrOfSet, floatDir, modules, evaluation, progress);
    for (std::size_t s = 0; s < result.sizes.size(); ++s) {
        CalibrationEndToEnd entry;
        entry.n = result.sizes[s];
        for (std::size_t o = 0; o < orders.size(); ++o)
            entry.sqnrDb.push_back(sqnrOfSet.at(scaleSetAt(amaxAt, s, o)));
        result.endToEnd.push_back(entry);
    }

    // 4. The spread and the suggestion.
    suggestWithinSpread(result, resampled, sqnrOfSet);
    progress.report(1.0, "Calibration lab done");
    return result;
}

} // namespace scalescope
