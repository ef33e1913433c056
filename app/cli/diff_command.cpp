#include "diff_command.h"

#include <algorithm>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "analysis/scale_statistics.h"
#include "charts/chart_export.h"
#include "common/error.h"
#include "common/text_files.h"
#include "engine/open_backend.h"
#include "plot_files.h"
#include "report/charts.h"
#include "report/result_json.h"
#include "tasks/checkpoint_diff.h"
#include "tasks/squad_dataset.h"
#include "text_output.h"

namespace scalescope::cli {
namespace {

using json = nlohmann::json;

// The text output lists this many differing tensors and ranked points; --json has them all.
constexpr std::size_t kTextListLimit = 12;

std::string shapeOrNothing(const std::vector<int64_t>& shape)
{
    return shapeText(shape);
}

std::string tensorLine(const TensorDifference& t)
{
    std::ostringstream line;
    line << t.verdict;
    if (t.dtypeA != t.dtypeB)
        line << "; dtype " << t.dtypeA << " -> " << t.dtypeB;
    if (t.shapeA != t.shapeB)
        line << "; shape " << shapeOrNothing(t.shapeA) << " -> " << shapeOrNothing(t.shapeB);
    if (t.fp8Codes) {
        line << "; " << t.codesDiffering << " of " << t.elements << " codes differ";
        if (!t.codeStepHistogram.empty()) {
            line << " (steps";
            for (const auto& [steps, count] : t.codeStepHistogram)
                line << " " << steps << ":" << count;
            line << ")";
        }
        if (t.nanMismatches)
            line << ", " << t.nanMismatches << " NaN mismatches";
        if (t.signedZeroSwaps)
            line << ", " << t.signedZeroSwaps << " +0/-0 swaps";
    } else if (t.elements > 0) {
        line << "; " << t.valuesDiffering << " of " << t.elements << " values differ";
        if (t.valuesDiffering)
            line << ", up to " << t.maxUlps << " ULP" << (t.maxUlps == 1 ? "" : "s") << " of " << t.ulpUnit;
        if (t.nanMismatches)
            line << ", " << t.nanMismatches << " NaN mismatches";
        if (t.hasRatio && t.valuesDiffering)
            line << ", B/A " << std::setprecision(6) << t.ratioMin << ".." << t.ratioMax;
    }
    return line.str();
}

void printDiff(const CheckpointDiff& diff, const DiffMetrics* metrics)
{
    std::cout << "A: " << terminalSafe(diff.a) << "\nB: " << terminalSafe(diff.b) << "\n";
    std::cout << (diff.identical() ? "Identical: same config, schemes and tensors.\n" : "Not identical.\n");
    if (!diff.config.empty()) {
        std::cout << "\nConfig differences (" << diff.config.size() << "):\n";
        for (const FieldDifference& d : diff.config)
            std::cout << "  " << terminalSafe(d.field) << ": " << terminalSafe(d.a) << " -> " << terminalSafe(d.b)
                      << "\n";
    }
    if (!diff.linears.empty()) {
        // Linears with the same differences are listed together, their differences once.
        std::vector<std::pair<std::vector<std::string>, const LinearDifference*>> groups;
        auto same = [](const LinearDifference& x, const LinearDifference& y) {
            return std::equal(x.differences.begin(), x.differences.end(), y.differences.begin(), y.differences.end(),
                [](const FieldDifference& p, const FieldDifference& q) {
                    return p.field == q.field && p.a == q.a && p.b == q.b;
                });
        };
        for (const LinearDifference& l : diff.linears) {
            auto group = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return same(*g.second, l); });
            if (group == groups.end())
                groups.push_back({{l.module}, &l});
            else
                group->first.push_back(l.module);
        }
        std::cout << "\nLinears whose scheme differs (" << diff.linears.size() << "):\n";
        for (const auto& [modules, linear] : groups) {
            std::cout << "  " << modules.size() << (modules.size() == 1 ? " Linear: " : " Linears: ");
            for (std::size_t i = 0; i < modules.size(); ++i)
                std::cout << (i ? ", " : "") << modules[i];
            std::cout << "\n";
            for (const FieldDifference& d : linear->differences)
                std::cout << "    " << terminalSafe(d.field) << ": " << terminalSafe(d.a) << " -> " << terminalSafe(d.b)
                          << "\n";
        }
    }
    std::size_t counts[3] = {0, 0, 0};
    for (const TensorDifference& t : diff.tensors)
        ++counts[t.verdict == kDiffIdentical ? 0 : t.verdict == kDiffWithinOneStep ? 1 : 2];
    std::cout << "\nTensors in both: " << diff.tensors.size() << " (" << counts[0] << " identical, " << counts[1] << " "
              << kDiffWithinOneStep << ", " << counts[2] << " different); only in A: " << diff.onlyInA.size()
              << ", only in B: " << diff.onlyInB.size() << "\n";
    std::size_t shown = 0;
    const std::size_t differing = diff.tensors.size() - counts[0];
    for (const TensorDifference& t : diff.tensors) {
        if (t.verdict == kDiffIdentical)
            continue;
        if (shown++ == kTextListLimit) {
            std::cout << "  ... and " << differing - kTextListLimit << " more (--json lists every tensor)\n";
            break;
        }
        std::cout << "  " << t.name << ": " << tensorLine(t) << "\n";
    }
    for (const auto* list : {&diff.onlyInA, &diff.onlyInB}) {
        const char* side = list == &diff.onlyInA ? "A" : "B";
        for (std::size_t i = 0; i < list->size() && i < kTextListLimit; ++i)
            std::cout << "  " << (*list)[i] << ": only in " << side << "\n";
        if (list->size() > kTextListLimit)
            std::cout << "  ... and " << list->size() - kTextListLimit << " more only in " << side << "\n";
    }

    if (!metrics)
        return;
    std::cout << "\nBoth runs (fp8) vs " << terminalSafe(metrics->referenceLabel) << ", " << metrics->inputKind
              << " input"
              << (metrics->samples > 1 ? ", mean over " + std::to_string(metrics->samples) + " questions" : "") << "\n";
    std::cout << "Final logits SQNR: A " << decibelText(metrics->runA.finalLogits.sqnrDb) << " dB, B "
              << decibelText(metrics->runB.finalLogits.sqnrDb) << " dB\n";
    std::cout << "Capture points where A and B differ most (SQNR in dB):\n";
    std::cout << "  " << std::left << std::setw(60) << "capture point" << std::right << std::setw(10) << "A"
              << std::setw(10) << "B" << std::setw(10) << "B - A"
              << "\n";
    for (std::size_t r = 0; r < metrics->ranked.size() && r < kTextListLimit; ++r) {
        const PointDifference& p = metrics->points[metrics->ranked[r]];
        std::cout << "  " << std::left << std::setw(60) << p.name << std::right << std::setw(10)
                  << decibelText(p.a.sqnrDb) << std::setw(10) << decibelText(p.b.sqnrDb) << std::setw(10)
                  << decibelText(p.sqnrDifferenceDb) << "\n";
    }
}

std::vector<ChartData> diffCharts(const Checkpoint& a, const Checkpoint& b, const DiffMetrics* metrics)
{
    std::vector<ChartData> charts;
    ChartData scales = overlayCharts(
        weightScaleRangesChart(computeScaleStatistics(a)), weightScaleRangesChart(computeScaleStatistics(b)), "A", "B");
    scales.id = "diff_weight_scales";
    charts.push_back(std::move(scales));
    if (metrics) {
        using Builder = ChartData (*)(const ComparisonResult&);
        for (Builder build :
            {Builder(layerSqnrChart), Builder(layerCosineChart), Builder(linearSqnrChart), Builder(errorGrowthChart)}) {
            ChartData chart = overlayCharts(build(metrics->runA), build(metrics->runB), "A", "B");
            chart.id = "diff_" + chart.id;
            charts.push_back(std::move(chart));
        }
    }
    return charts;
}

} // namespace

int commandDiff(const Arguments& args)
{
    const std::string dirA = args.positionals()[0], dirB = args.positionals()[1];
    ComparisonInput input;
    int sources = readComparisonInput(args, input);
    if (args.has("squad"))
        ++sources;
    if (sources > 1)
        throw UsageError{"diff takes at most one of --question/--context, --text, --input-ids, --texts or --squad."};
    if (args.has("max-samples") && !args.has("squad") && !args.has("texts"))
        throw UsageError{"--max-samples applies only with --squad or --texts."};
    if (args.has("format") && !args.has("plots"))
        throw UsageError{"--format applies only with --plots."};
    if (args.has("plots")) {
        try {
            ui::parseChartFormat(args.value("format", "png"));
        } catch (const Error& e) {
            throw UsageError{e.what()};
        }
    }
    const std::size_t maxSamples = static_cast<std::size_t>(args.intValue("max-samples", 0, 0, 100'000'000));

    std::shared_ptr<const Checkpoint> a = Checkpoint::open(dirA);
    std::shared_ptr<const Checkpoint> b = Checkpoint::open(dirB);
    const CheckpointDiff diff = diffCheckpoints(*a, *b);

    std::optional<DiffMetrics> metrics;
    if (sources == 1) {
        SquadDataset dataset;
        if (auto squad = args.value("squad"))
            dataset = readSquadFile(*squad);
        std::unique_ptr<InferenceBackend> runA = openBackend(DeviceSpec{}, a);
        std::unique_ptr<InferenceBackend> runB = openBackend(DeviceSpec{}, b);
        std::unique_ptr<InferenceBackend> reference;
        if (auto dir = args.value("reference"))
            reference = openBackend(DeviceSpec{}, Checkpoint::open(*dir));
        Progress progress;
        progress.callback = [](double fraction, const std::string& stage) {
            std::fprintf(stderr, "\r%3d%% %-70.70s", int(100 * fraction), stage.c_str());
            std::fflush(stderr);
        };
        metrics = diffMetrics(
            *runA, *runB, reference.get(), input, args.has("squad") ? &dataset : nullptr, maxSamples, progress);
        std::fprintf(stderr, "\r%-76s\r", "");
    } else if (args.has("reference")) {
        throw UsageError{
            "--reference applies only with inputs (--question/--context, --text, --input-ids, --texts or --squad)."};
    }

    json document = diffJson(diff, metrics ? &*metrics : nullptr);
    if (auto plots = args.value("plots"))
        document["plots"] = writePlotFiles(diffCharts(*a, *b, metrics ? &*metrics : nullptr), *plots,
            args.value("format", "png"), document, "diff", args.flag("force"));
    if (args.flag("json")) {
        std::cout << jsonText(document) << std::endl;
        return 0;
    }
    printDiff(diff, metrics ? &*metrics : nullptr);
    if (document.contains("plots"))
        std::cout << "\nWrote " << document["plots"].size() << " files to " << *args.value("plots") << ".\n";
    return 0;
}

} // namespace scalescope::cli
