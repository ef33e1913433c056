#pragma once
// What scalescope-bench's modes share (bench_main.cpp's forward bench, bench_embed.cpp's embed
// bench): repeated timings with their median, and the CPU the numbers were measured on. Header-only
// so that the modes stay one binary with no library of their own.
#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace scalescope::bench {

struct Timing {
    std::vector<double> ms;
    double median() const
    {
        std::vector<double> s = ms;
        std::sort(s.begin(), s.end());
        return s.empty() ? 0 : (s.size() % 2 ? s[s.size() / 2] : 0.5 * (s[s.size() / 2 - 1] + s[s.size() / 2]));
    }
    double min() const { return ms.empty() ? 0 : *std::min_element(ms.begin(), ms.end()); }
    double max() const { return ms.empty() ? 0 : *std::max_element(ms.begin(), ms.end()); }
    nlohmann::json toJson() const
    {
        return {{"median_ms", median()}, {"min_ms", min()}, {"max_ms", max()}, {"runs_ms", ms}};
    }
};

inline Timing measure(int repeats, const std::function<void()>& work, bool warmUp = true)
{
    if (warmUp)
        work();
    Timing t;
    for (int i = 0; i < repeats; ++i) {
        const auto start = std::chrono::steady_clock::now();
        work();
        t.ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    return t;
}

// The CPU the numbers come from: its model name and the flags that decide the GEMM paths.
inline std::string cpuModelAndFlags()
{
    std::ifstream in("/proc/cpuinfo");
    std::string line, model, flags;
    while (std::getline(in, line) && (model.empty() || flags.empty())) {
        if (model.empty() && line.rfind("model name", 0) == 0)
            model = line.substr(line.find(':') + 2);
        else if (flags.empty() && line.rfind("flags", 0) == 0)
            flags = line.substr(line.find(':') + 1) + " ";
    }
    std::string shown;
    for (const char* flag : {"avx2", "avx512f", "avx512_bf16", "avx512_vnni", "amx_tile", "amx_bf16"})
        if (flags.find(std::string(" ") + flag + " ") != std::string::npos)
            shown += std::string(shown.empty() ? "" : " ") + flag;
    return model + " (" + shown + ")";
}

} // namespace scalescope::bench
