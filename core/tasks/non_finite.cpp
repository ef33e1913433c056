#include "tasks/non_finite.h"

#include <algorithm>

namespace scalescope {

void mergeNonFinite(std::vector<ModuleNonFinite>& into, const std::vector<ModuleNonFinite>& from)
{
    for (const ModuleNonFinite& module : from) {
        const auto it = std::find_if(into.begin(), into.end(),
                                     [&](const ModuleNonFinite& known) { return known.module == module.module; });
        if (it == into.end())
            into.push_back(module);
        else
            it->count += module.count;
    }
}

std::string describeNonFinite(const std::vector<ModuleNonFinite>& modules)
{
    if (modules.empty())
        return {};
    const ModuleNonFinite& first = modules.front();
    std::string text = "inf or NaN first appears in " + first.module + " (" + std::to_string(first.count) +
                       (first.count == 1 ? " value" : " values");
    if (modules.size() > 1)
        text += "; " + std::to_string(modules.size()) + " modules in all";
    return text + ")";
}

} // namespace scalescope
