#include "calibrate_command.h"

#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <set>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/text_files.h"
#include "engine/quantize.h"
#include "plot_files.h"
#include "report/calibration_charts.h"
#include "report/result_json.h"
#include "engine/calibration_lab.h"
#include "text_output.h"

namespace scalescope::cli {
namespace {

using json = nlohmann::json;

// --sizes 8,16,32: positive sample counts.
std::vector<int64_t> parseSizes(const std::string& text)
{
    std::vector<int64_t> sizes;
    for (const std::string& entry : parseNameList(text)) {
        if (entry.empty() || entry.size() > 9 || entry.find_first_not_of("0123456789") != std::string::npos ||
            std::stoll(entry) <= 0)
            throw UsageError{"--sizes must be positive sample counts separated by commas such as 8,16,32, not \"" +
                             text + "\"."};
        sizes.push_back(std::stoll(entry));
    }
    if (sizes.empty())
        throw UsageError{"--sizes must name at least one sample count such as 8,16,32."};
    return sizes;
}

double lowest(const std::vector<double>& v) { return v.empty() ? 0.0 : *std::min_element(v.begin(), v.end()); }
double highest(const std::vector<double>& v) { return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end()); }

json calibrationJson(const CalibrationLabResult& r, bool evaluated)
{
    json linears = json::array();
    for (const CalibrationLinear& linear : r.linears) {
        json bySize = json::array();
        for (const CalibrationSizeScales& size : linear.bySize) {
            const std::vector<double> scales(size.scales.begin(), size.scales.end());
            json entry = {{"n", size.n},
                          {"scale_min", lowest(scales)},
                          {"scale_max", highest(scales)},
                          {"ratio_to_full_min", lowest(size.ratioToFull)},
                          {"ratio_to_full_max", highest(size.ratioToFull)},
                          {"scales", scales}};
            // The worst order's share (the largest), and the best's beside it.
            entry["clip_token_share"] = evaluated ? json(highest(size.clipTokenShare)) : json(nullptr);
            entry["clip_element_share"] = evaluated ? json(highest(size.clipElementShare)) : json(nullptr);
            entry["clip_token_share_min"] = evaluated ? json(lowest(size.clipTokenShare)) : json(nullptr);
            entry["clip_element_share_min"] = evaluated ? json(lowest(size.clipElementShare)) : json(nullptr);
            bySize.push_back(entry);
        }
        linears.push_back({{"module", linear.module},
                           {"label", linear.label},
                           {"full_scale", linear.fullScale},
                           {"by_size", bySize},
                           {"converged_at", linear.convergedAt},
                           {"eval_tokens", linear.evalTokens},
                           {"eval_elements", linear.evalElements}});
    }
    json endToEnd = json::array();
    for (const CalibrationEndToEnd& e : r.endToEnd) {
        json perOrder = json::array();
        for (double db : e.sqnrDb)
            perOrder.push_back(finiteOrNull(db));
        endToEnd.push_back({{"n", e.n},
                            {"sqnr_db_min", finiteOrNull(lowest(e.sqnrDb))},
                            {"sqnr_db_max", finiteOrNull(highest(e.sqnrDb))},
                            {"sqnr_db", perOrder}});
    }
    return {{"calibration_samples", r.calibrationSamples},
            {"eval_samples", r.evalSamples},
            {"sizes", r.sizes},
            {"orders", r.orders},
            {"linears", linears},
            {"end_to_end", endToEnd},
            {"spread_db", r.spreadDb},
            {"resampled_sqnr_db", r.resampledSqnrDb},
            {"spread_basis", r.spreadBasis},
            {"suggested_size", r.suggestedSize},
            {"sentence", r.sentence}};
}

void printCalibration(const CalibrationLabResult& r, bool evaluated)
{
    std::cout << "Calibration lab: " << r.calibrationSamples << " calibration samples, " << r.evalSamples
              << " evaluation samples, " << r.orders << " orders\n\n";
    std::cout << std::left << std::setw(22) << "Linear" << std::right << std::setw(14) << "full scale";
    for (int64_t n : r.sizes)
        std::cout << std::setw(10) << ("n=" + std::to_string(n));
    std::cout << "  converged at (per order)\n";
    for (const CalibrationLinear& linear : r.linears) {
        std::cout << std::left << std::setw(22) << terminalSafe(linear.label) << std::right << std::setw(14)
                  << std::setprecision(5) << linear.fullScale;
        for (const CalibrationSizeScales& size : linear.bySize) {
            char cell[32];
            std::snprintf(cell, sizeof cell, "%.3f", lowest(size.ratioToFull));
            std::cout << std::setw(10) << cell;
        }
        std::cout << " ";
        for (int64_t n : linear.convergedAt)
            std::cout << " " << n;
        std::cout << "\n";
    }
    std::cout << "(columns: the smallest scale ratio to the full set over the orders)\n";
    if (evaluated) {
        std::cout << "\nClipped evaluation tokens (worst order, %):\n";
        for (const CalibrationLinear& linear : r.linears) {
            std::cout << std::left << std::setw(22) << terminalSafe(linear.label) << std::right << std::setw(14) << "";
            for (const CalibrationSizeScales& size : linear.bySize) {
                char cell[32];
                std::snprintf(cell, sizeof cell, "%.2f", 100.0 * highest(size.clipTokenShare));
                std::cout << std::setw(10) << cell;
            }
            std::cout << "\n";
        }
        std::cout << "\nFinal-logits SQNR vs the float model (dB, min..max over orders):\n";
        for (const CalibrationEndToEnd& e : r.endToEnd)
            std::cout << "  n = " << std::setw(6) << e.n << "  " << decibelText(lowest(e.sqnrDb)) << " .. "
                      << decibelText(highest(e.sqnrDb)) << "\n";
        std::cout << "Spread: " << decibelText(r.spreadDb) << " dB, " << r.spreadBasis << ".\n";
    }
    std::cout << "\n" << r.sentence << "\n";
}

} // namespace

int commandCalibrate(const Arguments& args)
{
    const std::string floatDir = args.positionals()[0];
    const std::string calibrationFile = args.required("calibration");
    CalibrationLabOptions options;
    if (auto sizes = args.value("sizes"))
        options.sizes = parseSizes(*sizes);
    options.orders = args.intValue("orders", 5, 1, 100);
    if (args.has("format") && !args.has("plots"))
        throw UsageError{"--format applies only with --plots."};
    const std::optional<std::string> write = args.value("write");
    // Refused before the work, as quantize would refuse it after.
    if (write && !args.flag("force") && std::filesystem::exists(std::filesystem::symlink_status(*write)))
        throw Error(*write + " already exists; pass --force to replace it.");
    options.calibrationTexts = readCalibrationTexts(calibrationFile);
    if (auto eval = args.value("eval"))
        options.evalTexts = readCalibrationTexts(*eval, "evaluation file");

    Progress progress;
    progress.callback = [](double fraction, const std::string& stage) {
        std::fprintf(stderr, "\r%3d%% %-70.70s", int(100 * fraction), stage.c_str());
        std::fflush(stderr);
    };
    const CalibrationLabResult result = runCalibrationLab(floatDir, options, progress);
    std::fprintf(stderr, "\r%-76s\r", "");

    const bool evaluated = !options.evalTexts.empty();
    json document = calibrationJson(result, evaluated);
    document["float_dir"] = floatDir;
    document["calibration_file"] = calibrationFile;
    document["eval_file"] = args.has("eval") ? json(*args.value("eval")) : json(nullptr);
    if (auto plots = args.value("plots")) {
        std::vector<ChartData> charts = {calibrationConvergenceChart(result)};
        if (evaluated)
            charts.push_back(calibrationClipChart(result));
        document["plots"] = writePlotFiles(charts, *plots, args.value("format", "png"), document, "calibrate",
                                           args.flag("force"));
    }
    if (write) {
        QuantizeOptions quantize = calibratedQuantizeOptions(options.calibrationTexts, result.suggestedSize);
        quantize.overwrite = args.flag("force");
        quantize.inputFiles.push_back(calibrationFile);
        if (auto eval = args.value("eval"))
            quantize.inputFiles.push_back(*eval);
        quantizeCheckpoint(floatDir, *write, quantize);
        document["written"] = {{"output", *write}, {"n", result.suggestedSize}};
    }
    if (args.flag("json")) {
        std::cout << jsonText(document) << std::endl;
    } else {
        printCalibration(result, evaluated);
        if (document.contains("plots"))
            std::cout << "Wrote " << document["plots"].size() << " files to " << *args.value("plots") << ".\n";
        if (write)
            std::cout << "Wrote " << *write << " calibrated on the first " << result.suggestedSize
                      << " samples (channel weights, static per-tensor activations).\n";
    }
    return 0;
}

} // namespace scalescope::cli
