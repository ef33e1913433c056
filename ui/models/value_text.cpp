#include "models/value_text.h"

#include <QStringList>

#include "report/decibel_text.h"

namespace scalescope::ui {

QString fixedText(double value, int decimals)
{
    return std::isfinite(value) ? QString::number(value, 'f', decimals) : exactText(value);
}

QString significantText(double value)
{
    if (!std::isfinite(value))
        return std::isnan(value) ? QStringLiteral("NaN") : value > 0 ? QStringLiteral("inf") : QStringLiteral("-inf");
    return QString::number(value, 'g', 4);
}

QString decibelText(double db)
{
    return QString::fromStdString(scalescope::decibelString(db));
}

QString spreadDecibelText(double db)
{
    return QString::fromStdString(scalescope::spreadDecibelString(db));
}

QString scientificText(double value)
{
    return std::isfinite(value) ? QString::asprintf("%.3e", value) : exactText(value);
}

QString percentText(double share)
{
    return std::isfinite(share) ? QString::number(share * 100.0, 'f', 2) : exactText(share * 100.0);
}

QString probabilityText(float probability)
{
    if (!std::isfinite(probability))
        return exactText(probability);
    if (probability != 0 && std::fabs(probability) < 1e-4f)
        return QString::asprintf("%.2e", double(probability));
    return QString::number(double(probability), 'f', 4);
}

QString shapeText(const std::vector<int64_t>& shape)
{
    QStringList dims;
    for (int64_t d : shape)
        dims << QString::number(d);
    return QLatin1Char('[') + dims.join(QStringLiteral(", ")) + QLatin1Char(']');
}

QVariant alignmentFor(bool numeric)
{
    // An int, not Qt::Alignment: Qt 6.4's delegates read the role with toInt().
    return int((numeric ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignVCenter);
}

// Digit runs are zero-padded so that a plain string comparison orders them as numbers
// ("layer.2" < "layer.10"). Runs longer than the padding keep their length and still sort after.
QString naturalSortKey(const QString& text)
{
    constexpr int width = 20;
    QString key;
    key.reserve(text.size() + width);
    int i = 0;
    while (i < text.size()) {
        if (!text[i].isDigit()) {
            key += text[i++];
            continue;
        }
        int end = i;
        while (end < text.size() && text[end].isDigit())
            ++end;
        const int length = end - i;
        if (length < width)
            key += QString(width - length, QLatin1Char('0'));
        key += QStringView(text).mid(i, length);
        i = end;
    }
    return key;
}

QString countText(long long count, const QString& one, const QString& many)
{
    return QStringLiteral("%L1 %2").arg(count).arg(count == 1 ? one : many);
}

} // namespace scalescope::ui
