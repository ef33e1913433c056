#include "analysis/attention_headroom.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "numerics/fp8.h"

namespace scalescope {
namespace {

// The median of values (the mean of the middle two for an even count); 0 for none.
double median(std::vector<double> values)
{
    if (values.empty())
        return 0;
    std::sort(values.begin(), values.end());
    const std::size_t middle = values.size() / 2;
    return values.size() % 2 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
}

// What is pooled per module before the medians are taken.
struct Pool {
    CastHeadroom summary;
    std::vector<double> scales;
    std::vector<std::vector<double>> tops; // per head, per sequence
};

} // namespace

int CastHeadroom::tightestHead() const
{
    int tightest = -1;
    for (const HeadHeadroom& head : heads)
        if (tightest < 0 || head.topMedian < heads[static_cast<std::size_t>(tightest)].topMedian)
            tightest = head.head;
    return tightest;
}

int64_t CastHeadroom::values() const
{
    int64_t total = 0;
    for (const HeadHeadroom& head : heads)
        total += head.values;
    return total;
}

double CastHeadroom::zeroShare() const
{
    int64_t zeros = 0;
    for (const HeadHeadroom& head : heads)
        zeros += head.zeros;
    return values() ? double(zeros) / double(values()) : 0.0;
}

double CastHeadroom::subnormalShare() const
{
    int64_t subnormals = 0;
    for (const HeadHeadroom& head : heads)
        subnormals += head.subnormals;
    return values() ? double(subnormals) / double(values()) : 0.0;
}

std::vector<CastHeadroom> summarizeAttentionHeadroom(const std::vector<AttentionCastRecord>& records)
{
    std::vector<Pool> pools;
    std::map<std::string, std::size_t> index;
    for (const AttentionCastRecord& record : records) {
        auto [it, added] = index.emplace(record.module, pools.size());
        if (added) {
            Pool pool;
            pool.summary.module = record.module;
            pool.summary.layer = record.layer;
            pool.summary.key = record.key;
            pool.summary.range = record.range;
            pool.summary.heads.resize(static_cast<std::size_t>(std::max<int64_t>(record.heads, 0)));
            for (std::size_t h = 0; h < pool.summary.heads.size(); ++h)
                pool.summary.heads[h].head = static_cast<int>(h);
            pool.tops.resize(pool.summary.heads.size());
            pools.push_back(std::move(pool));
        }
        Pool& pool = pools[it->second];
        const std::size_t heads = pool.summary.heads.size();
        if (static_cast<int64_t>(heads) != record.heads)
            continue; // one model's casts always have its head count
        for (std::size_t s = 0; s < record.scales.size(); ++s) {
            int64_t sequenceValues = 0;
            float sequenceAmax = 0;
            for (std::size_t h = 0; h < heads; ++h) {
                sequenceValues += record.values[s * heads + h];
                sequenceAmax = std::max(sequenceAmax, record.headAmax[s * heads + h]);
            }
            if (sequenceValues == 0)
                continue; // a row without real tokens
            const double scale = record.scales[s];
            ++pool.summary.sequences;
            pool.scales.push_back(scale);
            for (std::size_t h = 0; h < heads; ++h) {
                const std::size_t i = s * heads + h;
                HeadHeadroom& head = pool.summary.heads[h];
                pool.tops[h].push_back(double(record.headAmax[i]) / scale);
                head.setsScale += record.headAmax[i] == sequenceAmax ? 1 : 0;
                head.values += record.values[i];
                head.zeros += record.zeros[i];
                head.subnormals += record.subnormals[i];
            }
        }
    }
    std::vector<CastHeadroom> out;
    for (Pool& pool : pools) {
        pool.summary.scaleMedian = median(pool.scales);
        for (std::size_t h = 0; h < pool.summary.heads.size(); ++h) {
            HeadHeadroom& head = pool.summary.heads[h];
            const std::vector<double>& tops = pool.tops[h];
            head.topMedian = median(tops);
            head.topMin = tops.empty() ? 0 : *std::min_element(tops.begin(), tops.end());
            head.unusedBinades = head.topMedian > 0 ? std::log2(double(fp8::kE4M3Max) / head.topMedian)
                                                    : std::numeric_limits<double>::infinity();
        }
        out.push_back(std::move(pool.summary));
    }
    return out;
}

} // namespace scalescope
