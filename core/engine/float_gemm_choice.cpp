// oneDNN's version and the BLAS's configuration (no LibTorch headers): which float32 GEMM runs,
// chosen by timing the candidates at a model's shapes (float_gemm.h), and the cache of those times.
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/environment.h"
#include "common/error.h"
#include "common/text_files.h"
#include "engine/compute_threads.h"
#include "engine/float_gemm.h"
#include "engine/matmul_benchmark.h"
#include "io/atomic_write.h"

namespace scalescope {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

const FloatGemmPath kCandidates[] = {FloatGemmPath::OneDnn, FloatGemmPath::Blas};

std::string environment(const char* name)
{
    const char* value = std::getenv(name);
    return value ? value : "";
}

// The first "model name" and "flags" lines of /proc/cpuinfo: machines of one kind differ in their
// flags (AMX, AVX512_BF16), and the measurement is only valid for the same ones.
std::string cpuIdentity()
{
    std::ifstream in("/proc/cpuinfo");
    std::string line, model, flags;
    while (std::getline(in, line) && (model.empty() || flags.empty())) {
        if (model.empty() && line.rfind("model name", 0) == 0)
            model = line.substr(line.find(':') + 1);
        else if (flags.empty() && line.rfind("flags", 0) == 0)
            flags = line.substr(line.find(':') + 1);
    }
    return model + "|" + flags;
}

std::string blasConfiguration()
{
    using GetConfig = const char* (*)();
    const auto get = reinterpret_cast<GetConfig>(dlsym(RTLD_DEFAULT, "openblas_get_config"));
    return get ? std::string("OpenBLAS ") + get() : "a BLAS that is not OpenBLAS";
}

std::string oneDnnVersion()
{
    const dnnl_version_t* v = dnnl::version();
    return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
}

// FNV-1a: a stable key (std::hash may change between builds).
std::string stableHash(const std::string& text)
{
    uint64_t hash = 1469598103934665603ull;
    for (unsigned char c : text) {
        hash ^= c;
        hash *= 1099511628211ull;
    }
    std::ostringstream out;
    out << std::hex << hash;
    return out.str();
}

// What a cached rate measured: a float32 layer with its element-wise work (measureFloatLayerGflops).
// Entries of the earlier measurement, the layer's GEMMs alone, have other keys and are measured again.
constexpr const char* kMeasurement = "float32 layer";

std::string cacheKey(int64_t hidden, int64_t intermediate, int64_t rows)
{
    return stableHash(std::string(kMeasurement) + "|" + cpuIdentity() + "|" + oneDnnVersion() + "|" + blasConfiguration() + "|threads " +
                      std::to_string(computeThreads()) + "|" + std::to_string(rows) + "x" + std::to_string(hidden) +
                      "x" + std::to_string(intermediate));
}

FloatGemmPath pathNamed(const std::string& name, bool* known)
{
    for (FloatGemmPath path : kCandidates)
        if (name == floatGemmPathName(path)) {
            *known = true;
            return path;
        }
    *known = false;
    return FloatGemmPath::OneDnn;
}

json readCache()
{
    try {
        if (fs::exists(floatGemmCacheFile()))
            return readJsonFile(floatGemmCacheFile());
    } catch (const std::exception&) { // a damaged cache is measured again and rewritten
    }
    return json::object();
}

void writeCache(const std::string& key, const FloatGemmChoice& choice)
{
    try {
        json cache = readCache();
        if (!cache.is_object())
            cache = json::object();
        json entry = {{"path", floatGemmPathName(choice.path)}, {"measured", kMeasurement}, {"hidden", choice.hidden},
                      {"intermediate", choice.intermediate}, {"rows", choice.rows}, {"threads", computeThreads()},
                      {"onednn", oneDnnVersion()}, {"blas", blasConfiguration()}};
        for (const FloatGemmCandidate& c : choice.candidates)
            entry["gflops"][floatGemmPathName(c.path)] = c.gflops;
        cache[key] = entry;
        fs::create_directories(fs::path(floatGemmCacheFile()).parent_path());
        writeBytesAtomically(floatGemmCacheFile(), cache.dump(2) + "\n");
    } catch (const std::exception&) { // an unwritable cache folder costs a measurement next time, nothing more
    }
}

// The cached choice for `key`, when the entry names a known path.
bool cachedChoice(const std::string& key, FloatGemmChoice& choice)
{
    const json cache = readCache();
    if (!cache.is_object() || !cache.contains(key) || !cache[key].is_object())
        return false;
    const json& entry = cache[key];
    bool known = false;
    if (!entry.contains("path") || !entry["path"].is_string())
        return false;
    choice.path = pathNamed(entry["path"].get<std::string>(), &known);
    if (!known)
        return false;
    if (entry.contains("gflops") && entry["gflops"].is_object())
        for (FloatGemmPath path : kCandidates)
            if (const auto it = entry["gflops"].find(floatGemmPathName(path)); it != entry["gflops"].end() && it->is_number())
                choice.candidates.push_back({path, it->get<double>(), ""});
    choice.source = "cached";
    return true;
}

FloatGemmChoice measure(int64_t hidden, int64_t intermediate, int64_t rows)
{
    FloatGemmChoice choice;
    choice.source = "measured";
    choice.hidden = hidden;
    choice.intermediate = intermediate;
    choice.rows = rows;
    for (FloatGemmPath path : kCandidates)
        choice.candidates.push_back({path, 0, ""});
    // Times a candidate on its own thread placement and keeps its best rate. The previous
    // candidate's idle threads spin for a while after its last call (OpenBLAS's for ~2^28 cycles,
    // 0.1 s at 2.5 GHz); timing this one next to them would measure both.
    auto timeOn = [](FloatGemmCandidate& candidate, const std::function<double()>& time) {
        if (!candidate.problem.empty()) // unusable stays unusable, with no rate
            return;
        try {
            placeComputeThreads(candidate.path == FloatGemmPath::Blas);
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
            candidate.gflops = std::max(candidate.gflops, time());
        } catch (const std::exception& e) {
            candidate.problem = e.what();
            candidate.gflops = 0;
        }
    };
    // First the self-check and one layer: a candidate far behind (the reference BLAS runs at a few
    // GFLOP/s) is not timed again, its loss is clear and each layer costs it seconds.
    double screened = 0;
    for (FloatGemmCandidate& candidate : choice.candidates) {
        timeOn(candidate, [&] {
            candidate.problem = floatGemmSelfCheck(candidate.path);
            return candidate.problem.empty() ? measureFloatLayerGflops(candidate.path, hidden, intermediate, rows, 1, 1) : 0.0;
        });
        screened = std::max(screened, candidate.gflops);
    }
    // The others over three layers in a row, the rate a forward sees, in rounds that alternate
    // between them so that a passing load on the machine slows each alike; each keeps its best. On an
    // AVX2 EPYC one layer alone varied 107-133 GFLOP/s, three 150-152, and the two paths were 5-15 %
    // apart.
    std::vector<FloatGemmCandidate*> contenders;
    for (FloatGemmCandidate& candidate : choice.candidates)
        if (candidate.problem.empty() && candidate.gflops > screened / 4)
            contenders.push_back(&candidate);
    if (contenders.size() > 1) {
        for (FloatGemmCandidate* candidate : contenders)
            candidate->gflops = 0;
        for (int round = 0; round < 2; ++round)
            for (FloatGemmCandidate* candidate : contenders)
                timeOn(*candidate,
                       [&] { return measureFloatLayerGflops(candidate->path, hidden, intermediate, rows, 3, 1); });
    }
    double best = 0;
    for (const FloatGemmCandidate& candidate : choice.candidates)
        if (candidate.problem.empty() && candidate.gflops > best) {
            best = candidate.gflops;
            choice.path = candidate.path;
        }
    return choice;
}

// Holds the cache folder's measurement lock, so that the processes of one machine measure one at a
// time and the first one's choice stands for all. Two processes timing at once slow each other, and
// on a machine where the paths are close each may keep a different one: a CPU runner's float32
// results then differed from the in-process ones in the last bits (summation order; test_dl16 saw
// it on an AVX2 EPYC). The wait is bounded: a holder that stops answering costs a measurement of
// our own after kWait, never a hang (the kernel drops the lock of a holder that dies). The lock file
// stays: removing it would let two processes lock two different files of one name.
class MeasurementLock {
public:
    MeasurementLock()
    {
        constexpr auto kWait = std::chrono::seconds(60);
        std::error_code ignored;
        const fs::path file = fs::path(floatGemmCacheFile()).replace_extension(".lock");
        fs::create_directories(file.parent_path(), ignored);
        fd_ = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd_ < 0) // an unwritable cache folder: nothing is kept, so there is nothing to agree on
            return;
        const auto deadline = std::chrono::steady_clock::now() + kWait;
        while (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
            if (errno != EWOULDBLOCK || std::chrono::steady_clock::now() > deadline) {
                ::close(fd_);
                fd_ = -1;
                return;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
    }
    ~MeasurementLock()
    {
        if (fd_ >= 0)
            ::close(fd_);
    }
    MeasurementLock(const MeasurementLock&) = delete;
    MeasurementLock& operator=(const MeasurementLock&) = delete;

private:
    int fd_ = -1;
};

struct Choices {
    std::mutex mutex;
    std::map<std::string, FloatGemmChoice> byKey; // stable addresses: callers keep references
    const FloatGemmChoice* last = nullptr;
};

Choices& choices()
{
    static Choices c;
    return c;
}

void use(FloatGemmPath path)
{
    setChosenFloatGemmPath(path);
    placeComputeThreads(floatGemmPath() == FloatGemmPath::Blas);
}

} // namespace

const char* floatGemmPathName(FloatGemmPath path)
{
    return path == FloatGemmPath::Blas ? "blas" : "onednn";
}

std::string floatGemmCacheFile()
{
    fs::path folder;
    if (const std::string xdg = environment("XDG_CACHE_HOME"); !xdg.empty())
        folder = fs::path(xdg) / "scalescope";
    else if (const std::string home = environment("HOME"); !home.empty())
        folder = fs::path(home) / ".cache" / "scalescope";
    else
        folder = fs::temp_directory_path() / "scalescope-cache";
    return (folder / "float-gemm.json").string();
}

std::string floatGemmRequestFromEnvironment()
{
    return environmentChoice("SCALESCOPE_FLOAT_GEMM", {floatGemmPathName(FloatGemmPath::Blas),
                                                       floatGemmPathName(FloatGemmPath::OneDnn), "measure"},
                             "the faster of the two as measured once per machine");
}

const FloatGemmChoice& chooseFloatGemm(int64_t hidden, int64_t intermediate, int64_t rows)
{
    Choices& all = choices();
    const std::lock_guard<std::mutex> lock(all.mutex);
    const std::string key = cacheKey(hidden, intermediate, rows);
    auto it = all.byKey.find(key);
    if (it == all.byKey.end()) {
        FloatGemmChoice choice;
        bool known = false;
        const std::string asked = floatGemmRequestFromEnvironment();
        const FloatGemmPath forced = pathNamed(asked, &known);
        if (known) {
            choice.path = forced;
            choice.source = "SCALESCOPE_FLOAT_GEMM";
        } else if (asked == "measure" || !cachedChoice(key, choice)) { // "measure": a busy first run is redone
            const MeasurementLock oneAtATime;
            // Another process may have measured while this one waited: its choice stands.
            if (asked == "measure" || !cachedChoice(key, choice)) {
                choice = measure(hidden, intermediate, rows);
                writeCache(key, choice);
            }
        }
        choice.hidden = hidden;
        choice.intermediate = intermediate;
        choice.rows = rows;
        it = all.byKey.emplace(key, std::move(choice)).first;
    }
    all.last = &it->second;
    use(it->second.path);
    return it->second;
}

std::string floatGemmDescription()
{
    const FloatGemmChoice* last = nullptr;
    {
        const std::lock_guard<std::mutex> lock(choices().mutex);
        last = choices().last;
    }
    if (!last)
        last = &chooseFloatGemm(768, 3072); // roberta-base's widths
    const FloatGemmPath path = floatGemmPath();
    std::string text = std::string("float32 GEMM: ") +
                       (path == FloatGemmPath::Blas ? "BLAS (" + blasConfiguration() + ")" : oneDnnVersion() + " matmul");
    if (floatGemmPathForced())
        return text + ", forced by the caller";
    text += ", " + last->source;
    if (last->source == "measured" || last->source == "cached") {
        text += " at " + std::to_string(last->rows) + " x " + std::to_string(last->hidden) + "/" +
                std::to_string(last->intermediate) + ":";
        for (const FloatGemmCandidate& c : last->candidates) {
            char rate[64];
            std::snprintf(rate, sizeof rate, " %s %.0f GFLOP/s", floatGemmPathName(c.path), c.gflops);
            text += c.problem.empty() ? rate : std::string(" ") + floatGemmPathName(c.path) + " unusable (" + c.problem + ")";
            text += c.path == kCandidates[std::size(kCandidates) - 1] ? "" : ",";
        }
    }
    return text;
}

std::string floatGemmSelfCheck(FloatGemmPath path)
{
    const int64_t rows = 37, in = 200, out = 72;
    std::mt19937 random(23);
    std::uniform_real_distribution<float> value(-2.0f, 2.0f);
    std::vector<float> x(static_cast<std::size_t>(rows * in)), w(static_cast<std::size_t>(out * in)),
        bias(static_cast<std::size_t>(out)), y(static_cast<std::size_t>(rows * out));
    for (std::vector<float>* v : {&x, &w, &bias})
        for (float& f : *v)
            f = value(random);
    floatLinearOn(path, x.data(), rows, in, w.data(), out, bias.data(), y.data());
    for (int64_t t = 0; t < rows; ++t)
        for (int64_t o = 0; o < out; ++o) {
            double sum = bias[std::size_t(o)], magnitude = std::fabs(bias[std::size_t(o)]);
            for (int64_t k = 0; k < in; ++k) {
                const double p = double(x[std::size_t(t * in + k)]) * w[std::size_t(o * in + k)];
                sum += p;
                magnitude += std::fabs(p);
            }
            const double bound = double(in + 2) * std::ldexp(1.0, -23) * magnitude;
            if (!(std::fabs(y[std::size_t(t * out + o)] - sum) <= bound))
                return "its self-check disagreed with a float64 recomputation";
        }
    return {};
}

} // namespace scalescope
