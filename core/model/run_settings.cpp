#include "model/run_settings.h"

#include <utility>

#include <nlohmann/json.hpp>

#include "model/inference_backend.h"

namespace scalescope {

RunSettings::RunSettings(RunMode mode, Accumulation accumulation) : mode(mode), accumulation(accumulation) {}

std::string RunSettings::label() const
{
    return runLabel(mode, accumulation);
}

std::string RunSettings::problem() const
{
    return accumulationProblem(mode, accumulation);
}

RunSettings RunSettings::withOverrides(PrecisionOverrides other) const
{
    RunSettings settings = *this;
    settings.overrides = std::move(other);
    return settings;
}

bool operator==(const RunSettings& a, const RunSettings& b)
{
    return a.mode == b.mode && a.accumulation == b.accumulation && a.attention == b.attention &&
           a.overrides.modules == b.overrides.modules && a.overrides.othersFloat == b.overrides.othersFloat &&
           a.device == b.device;
}

RunSettings referenceRunSettings()
{
    RunSettings reference;
    reference.mode = RunMode::Dequant;
    return reference;
}

void applyRunSettings(const RunSettings& settings, ForwardOptions& options)
{
    options.mode = settings.mode;
    options.accumulation = settings.accumulation;
    options.attention = settings.attention;
    options.overrides = settings.overrides;
}

ForwardOptions forwardOptions(const RunSettings& settings)
{
    ForwardOptions options;
    applyRunSettings(settings, options);
    return options;
}

nlohmann::json runSettingsJson(const RunSettings& settings)
{
    nlohmann::json floatLinears = nlohmann::json::array(), fp8Linears = nlohmann::json::array();
    for (const auto& [module, precision] : settings.overrides.modules)
        (precision == Precision::Float ? floatLinears : fp8Linears).push_back(module);
    return {{"mode", runModeName(settings.mode)},
            {"accumulation", accumulationName(settings.accumulation)},
            {"attention", attentionPrecisionName(settings.attention)},
            {"float_linears", floatLinears},
            {"fp8_linears", fp8Linears},
            {"others_float", settings.overrides.othersFloat},
            {"device", settings.device}};
}

} // namespace scalescope
