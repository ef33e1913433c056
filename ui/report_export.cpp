#include "report_export.h"

#include <QAbstractItemModel>
#include <QDir>

#include "charts/chart_export.h"
#include "charts/chart_renderer.h"
#include "common/error.h"
#include "io/atomic_write.h"
#include "report/csv.h"

namespace scalescope::ui {

std::string tableCsv(const QAbstractItemModel& model, int sortRole)
{
    std::string out;
    const int columns = model.columnCount();
    for (int c = 0; c < columns; ++c)
        out += (c ? "," : "") + csvField(model.headerData(c, Qt::Horizontal).toString().toStdString());
    out += "\r\n";
    for (int r = 0; r < model.rowCount(); ++r) {
        for (int c = 0; c < columns; ++c) {
            const QModelIndex index = model.index(r, c);
            const QVariant raw = model.data(index, sortRole);
            QString cell;
            if (raw.typeId() == QMetaType::Double)
                cell = QString::fromStdString(formatChartValue(raw.toDouble()));
            else
                cell = model.data(index, Qt::DisplayRole).toString();
            out += (c ? "," : "") + csvField(cell.toStdString());
        }
        out += "\r\n";
    }
    return out;
}

QStringList exportReport(const ReportContents& contents, const QString& folder)
{
    if (!QDir().mkpath(folder))
        throw Error("Cannot create the report folder " + folder.toStdString() + ".");
    const QDir dir(folder);
    QStringList written;
    for (const ChartData& chart : contents.charts) {
        if (chart.series.empty())
            continue;
        const QString stem = dir.filePath(QString::fromStdString(chart.id));
        exportChartImage(chart, stem + ".png", ChartFormat::Png);
        exportChartImage(chart, stem + ".svg", ChartFormat::Svg);
        exportChartCsv(chart, (stem + ".csv").toStdString());
        written << stem + ".png" << stem + ".svg" << stem + ".csv";
    }
    for (const auto& [name, model] : contents.tables) {
        if (!model || model->rowCount() == 0)
            continue;
        const QString path = dir.filePath(name + ".csv");
        writeBytesAtomically(path.toStdString(), tableCsv(*model));
        written << path;
    }
    const QString summary = dir.filePath(QStringLiteral("summary.json"));
    writeBytesAtomically(summary.toStdString(), contents.summary.dump(2) + "\n");
    written << summary;
    return written;
}

} // namespace scalescope::ui
