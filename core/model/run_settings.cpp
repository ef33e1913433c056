#include "model/run_settings.h"

#include <utility>

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
    return RunSettings(RunMode::Dequant);
}

ForwardOptions forwardOptions(const RunSettings& settings)
{
    ForwardOptions options;
    options.mode = settings.mode;
    options.accumulation = settings.accumulation;
    options.attention = settings.attention;
    options.overrides = settings.overrides;
    return options;
}

} // namespace scalescope
