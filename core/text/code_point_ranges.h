#pragma once
// The one lookup in the generated Unicode tables (text/generated): sorted, disjoint ranges of code
// points {first, last, value}, searched by binary search.
#include <algorithm>

namespace scalescope {

// The value of the range holding cp (its `field`), or the field type's zero (CharClass::Other, no
// flags, combining class 0) when no range holds it.
template <typename Range, typename Value>
Value rangeValue(const Range* begin, const Range* end, char32_t cp, Value Range::*field)
{
    const Range* it
        = std::upper_bound(begin, end, cp, [](char32_t value, const Range& range) { return value < range.first; });
    if (it == begin)
        return Value{};
    --it;
    return cp <= it->last ? (*it).*field : Value{};
}

} // namespace scalescope
