#include "text/grapheme_clusters.h"

#include "text/code_point_ranges.h"
#include "text/generated/grapheme_tables.h"

namespace scalescope {

namespace {

using grapheme_tables::GraphemeBreak;

GraphemeBreak breakProperty(char32_t cp)
{
    if (cp >= 0x20 && cp < 0x7F)
        return GraphemeBreak::Other; // printable ASCII, most of real text
    return rangeValue(std::begin(grapheme_tables::kBreakRanges), std::end(grapheme_tables::kBreakRanges), cp,
                      &grapheme_tables::BreakRange::value);
}

bool isPictographic(char32_t cp)
{
    return cp >= 0xA9 && rangeValue(std::begin(grapheme_tables::kPictographicRanges),
                                    std::end(grapheme_tables::kPictographicRanges), cp,
                                    &grapheme_tables::PictographicRange::value);
}

bool isControlLike(GraphemeBreak value)
{
    return value == GraphemeBreak::Control || value == GraphemeBreak::CR || value == GraphemeBreak::LF;
}

// State carried along a cluster for the two rules that look further back than one character.
struct BreakState {
    int regionalIndicators = 0;       // RI characters in a row ending at the previous character
    bool pictographicThenExtend = false; // ExtPict Extend* ending at the previous character
    bool pictographicThenZwj = false;    // ExtPict Extend* ZWJ ending at the previous character
};

// Whether a cluster boundary falls between a character of property `before` and one of `after`.
bool breaksBetween(GraphemeBreak before, GraphemeBreak after, char32_t afterCp, const BreakState& state)
{
    using G = GraphemeBreak;
    if (before == G::CR && after == G::LF)
        return false; // GB3
    if (isControlLike(before) || isControlLike(after))
        return true; // GB4, GB5
    if (before == G::L && (after == G::L || after == G::V || after == G::LV || after == G::LVT))
        return false; // GB6
    if ((before == G::LV || before == G::V) && (after == G::V || after == G::T))
        return false; // GB7
    if ((before == G::LVT || before == G::T) && after == G::T)
        return false; // GB8
    if (after == G::Extend || after == G::ZWJ || after == G::SpacingMark)
        return false; // GB9, GB9a
    if (before == G::Prepend)
        return false; // GB9b
    if (state.pictographicThenZwj && isPictographic(afterCp))
        return false; // GB11
    if (before == G::Regional_Indicator && after == G::Regional_Indicator)
        return state.regionalIndicators % 2 == 0; // GB12, GB13
    return true;
}

} // namespace

std::vector<std::size_t> graphemeClusterEnds(const std::vector<char32_t>& codePoints)
{
    std::vector<std::size_t> ends;
    BreakState state;
    GraphemeBreak before = GraphemeBreak::Other;
    for (std::size_t i = 0; i < codePoints.size(); ++i) {
        const char32_t cp = codePoints[i];
        const GraphemeBreak after = breakProperty(cp);
        if (i > 0 && breaksBetween(before, after, cp, state))
            ends.push_back(i);
        const bool pictographic = isPictographic(cp);
        state.pictographicThenZwj = after == GraphemeBreak::ZWJ && state.pictographicThenExtend;
        state.pictographicThenExtend = pictographic || (after == GraphemeBreak::Extend && state.pictographicThenExtend);
        state.regionalIndicators = after == GraphemeBreak::Regional_Indicator ? state.regionalIndicators + 1 : 0;
        before = after;
    }
    if (!codePoints.empty())
        ends.push_back(codePoints.size());
    return ends;
}

} // namespace scalescope
