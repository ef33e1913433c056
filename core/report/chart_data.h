#pragma once
// A chart described as plain data, so that the core can say what to draw and the UI (QCustomPlot)
// draws it, on screen or headless into PNG/PDF/SVG. Also the source of each chart's CSV export.
#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

namespace scalescope {

// Cells: a heat map; point i is the unit cell centred on (x[i], y[i]) (column and row indices,
// row 0 drawn at the top) coloured by z[i] on a logarithmic colour scale; a cell whose z is not a
// positive finite number is drawn in the "invalid" colour. A chart with a fixed cell range
// (ChartData::cellLower < cellUpper) colours its cells linearly instead, any finite z valid.
enum class SeriesStyle { Bars, Line, Points, Band, Cells };

struct ChartSeries {
    std::string name;                 // legend entry and CSV column
    SeriesStyle style = SeriesStyle::Bars;
    std::vector<double> x;            // x positions (category index for categorical charts)
    std::vector<double> y;            // values; Band: lower bound
    std::vector<double> yUpper;       // Band only: upper bound (per-layer min..max ranges)
    std::string color;                // "#RRGGBB"; empty picks from the palette
    std::vector<double> z = {};       // Cells only: the value of each cell (defaulted: aggregates may omit it)
};

// The points a series draws and exports: as many as its shortest vector that its style uses.
inline std::size_t pointCount(const ChartSeries& series)
{
    std::size_t count = std::min(series.x.size(), series.y.size());
    if (series.style == SeriesStyle::Band)
        count = std::min(count, series.yUpper.size());
    if (series.style == SeriesStyle::Cells)
        count = std::min(count, series.z.size());
    return count;
}

// A horizontal stretch of the value axis shaded behind the series, e.g. the good, fair and poor
// ranges of an SQNR (analysis/verdict.h); a bound beyond the axis is drawn at the axis' edge.
struct ValueBand {
    double lower = 0;
    double upper = 0;
    std::string label;                // "good (>= 30 dB)"
    std::string color;                // "#RRGGBB", drawn translucent
};

struct ChartData {
    std::string id;                   // file stem for exports: "layer_sqnr"
    std::string title;
    std::string xLabel;               // with unit where there is one
    std::string yLabel;
    bool logY = false;
    std::vector<std::string> categories; // when non-empty, x is categorical: tick i shows categories[i]
    std::vector<ChartSeries> series;
    std::vector<std::pair<double, std::string>> horizontalMarkers; // y value and label (e.g. 448)
    std::vector<std::pair<double, std::string>> verticalMarkers = {}; // x value (category index) and label
    std::vector<ValueBand> valueBands = {}; // drawn behind everything, on screen and in exports
    // Cells on a linear colour scale fixed to [cellLower, cellUpper] when cellLower < cellUpper, so
    // that two heat maps (both sides' similarity matrices) compare colour for colour; divergingCells
    // draws a difference: blue below the middle, white at it, red above. Otherwise the logarithmic
    // scale fitted to the data (block scales).
    double cellLower = 0, cellUpper = 0;
    bool divergingCells = false;
    bool rowsAreCategories = false; // a square matrix: row i is categories[i] too
    bool hasFixedCellRange() const { return cellLower < cellUpper; }
};

} // namespace scalescope
