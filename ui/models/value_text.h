#pragma once
// How the item models write numbers and shapes: one set of helpers so that every table formats
// the same value the same way.
#include <QString>
#include <QVariant>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <vector>

namespace scalescope::ui {

// Shortest text that reads back as the same value; floats stay floats so 0.001f shows as "0.001".
template <typename T>
QString exactText(T value)
{
    if (std::isnan(value))
        return QStringLiteral("nan");
    if (std::isinf(value))
        return value > 0 ? QStringLiteral("inf") : QStringLiteral("-inf");
    char buffer[64];
    const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
    return QString::fromLatin1(buffer, int(result.ptr - buffer));
}

QString fixedText(double value, int decimals);     // "12.35"; non-finite as exactText
QString scientificText(double value);              // "1.235e-04"
// Four significant digits, what a person compares on a card ("46.69", "0.006154"); "NaN", "inf".
QString significantText(double value);
// A measured SQNR or a difference of two, to 0.1 dB ("38.3", "inf"), by report/decibel_text.h's rule.
QString decibelText(double db);
// A run-to-run spread, to 0.01 dB (report/decibel_text.h).
QString spreadDecibelText(double db);
QString percentText(double share);                 // share 0.1234 -> "12.34"
QString probabilityText(float probability);        // four decimals, tiny ones scientific
QString shapeText(const std::vector<int64_t>& shape); // "[768, 768]"
QVariant alignmentFor(bool numeric);               // Qt::TextAlignmentRole value
// "1 error", "2,048 errors": the count with thousands separators and the noun that fits it.
QString countText(long long count, const QString& one, const QString& many);
// A key whose plain string order is natural order: "layer.2" before "layer.10".
QString naturalSortKey(const QString& text);

} // namespace scalescope::ui
