#include "report_export.h"

#include <QAbstractItemModel>
#include <QDir>

#include "charts/chart_export.h"
#include "charts/chart_renderer.h"
#include "common/error.h"
#include "io/output_folder.h"
#include "models/value_text.h"
#include "report/csv.h"
#include "run_stamp.h"

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

namespace {

QString html(const std::string& text)
{
    return QString::fromStdString(text).toHtmlEscaped();
}

QString summaryValue(const nlohmann::json& value)
{
    if (value.is_object()) { // {"aiu": "fails", ...} reads as "aiu: fails; ..."
        QStringList parts;
        for (const auto& [key, item] : value.items())
            parts << QString::fromStdString(key).toHtmlEscaped() + QStringLiteral(": ") + summaryValue(item);
        return parts.join(QStringLiteral("; "));
    }
    return value.is_string() ? QString::fromStdString(value.get<std::string>()).toHtmlEscaped()
                             : QString::fromStdString(value.dump()).toHtmlEscaped();
}

// A decibel or F1-point figure as people read it: to 0.1 ("38.3"; "inf" for a perfect match), the
// window's rule (report/decibel_text.h); a value that is not a number (an older summary) as it is.
QString oneDecimalValue(const nlohmann::json& value)
{
    return value.is_number() ? decibelText(value.get<double>()) : summaryValue(value);
}

// The stamp table's rows in words: the mode as the window names it ("FP16 twin"), an empty list
// as "none" and a list as its items.
QString stampRowValue(const std::string& key, const nlohmann::json& summary)
{
    const nlohmann::json& value = summary[key];
    if (key == "mode" && value.is_string()) {
        RunStamp stamp;
        if (parseRunMode(value.get<std::string>(), stamp.run.mode)) {
            if (summary.value("accumulation", nlohmann::json()).is_string())
                parseAccumulation(summary["accumulation"].get<std::string>(), stamp.run.accumulation);
            return stamp.modeName().toHtmlEscaped();
        }
    }
    if (value.is_array()) {
        if (value.empty())
            return QStringLiteral("none");
        QStringList items;
        for (const auto& item : value)
            items << summaryValue(item);
        return items.join(QStringLiteral(", "));
    }
    return summaryValue(value);
}

// How the stamp table names a summary key ("float_linears" reads as "run in float").
QString stampRowName(const std::string& key)
{
    if (key == "float_linears")
        return QStringLiteral("run in float");
    if (key == "app_version")
        return QStringLiteral("version");
    return QString::fromStdString(key).toHtmlEscaped();
}

// The triage verdict the page opens with (summary["verdict"], written by the Triage panel).
QString verdictHtml(const nlohmann::json& summary)
{
    if (!summary.contains("verdict") || !summary["verdict"].is_object())
        return {};
    const nlohmann::json& verdict = summary["verdict"];
    QString box = QStringLiteral("<div class=\"verdict\">");
    if (verdict.value("grade", nlohmann::json()).is_string()) {
        const QString grade = QString::fromStdString(verdict["grade"].get<std::string>()).toHtmlEscaped();
        box += QStringLiteral("<h2>Verdict: <span class=\"%1\">%1</span></h2><ul>").arg(grade);
    } else {
        box += QStringLiteral("<h2>No verdict: nothing ran in this state</h2><ul>");
    }
    if (verdict.contains("final_sqnr_db"))
        box += QStringLiteral("<li>final output SQNR: %1 dB</li>").arg(oneDecimalValue(verdict["final_sqnr_db"]));
    if (verdict.contains("answers_agree"))
        box += QStringLiteral("<li>answers agree with the reference: %1</li>")
                   .arg(verdict["answers_agree"].get<bool>() ? QStringLiteral("yes") : QStringLiteral("no"));
    if (verdict.contains("f1_drop_points"))
        box += QStringLiteral("<li>F1 drop against the reference: %1 points</li>").arg(oneDecimalValue(verdict["f1_drop_points"]));
    if (verdict.contains("next_step"))
        box += QStringLiteral("<li>next: %1</li>").arg(summaryValue(verdict["next_step"]));
    box += QStringLiteral("</ul>");
    if (verdict.contains("suspects") && !verdict["suspects"].empty()) {
        box += QStringLiteral("<p>Suspects:</p><ol>");
        for (const auto& suspect : verdict["suspects"])
            box += QStringLiteral("<li><b>%1</b> (%2): %3</li>")
                       .arg(summaryValue(suspect.value("label", nlohmann::json())),
                            summaryValue(suspect.value("module", nlohmann::json())),
                            summaryValue(suspect.value("why", nlohmann::json())));
        box += QStringLiteral("</ol>");
    }
    return box + QStringLiteral("</div>\n");
}

// The device check's verdict (summary["device_check"], written by the Device Check panel).
QString deviceCheckHtml(const nlohmann::json& summary)
{
    if (!summary.contains("device_check") || !summary["device_check"].is_object())
        return {};
    const nlohmann::json& check = summary["device_check"];
    const bool passed = check.value("passed", false);
    QString box = QStringLiteral("<div class=\"verdict\"><h2>Device check: <span class=\"%1\">%2</span></h2><p>%3</p>")
                      .arg(passed ? QStringLiteral("good") : QStringLiteral("poor"),
                           passed ? QStringLiteral("PASS") : QStringLiteral("FAIL"),
                           summaryValue(check.value("sentence", nlohmann::json(""))));
    if (check.contains("reasons") && !check["reasons"].empty()) {
        box += QStringLiteral("<ul>");
        for (const auto& reason : check["reasons"])
            box += QStringLiteral("<li>%1</li>").arg(summaryValue(reason));
        box += QStringLiteral("</ul>");
    }
    box += QStringLiteral("<p>%1; thresholds: %2</p>")
               .arg(summaryValue(check.value("run_under_test", nlohmann::json(""))),
                    summaryValue(check.value("thresholds_source", nlohmann::json(""))));
    return box + QStringLiteral("</div>\n");
}

// One self-contained page (relative links to the PNGs next to it) that opens from the file system.
std::string indexHtml(const ReportContents& contents)
{
    QString page = QStringLiteral(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>ScaleScope report</title>\n"
        "<style>body{font-family:sans-serif;margin:1.5em;max-width:1200px}table{border-collapse:collapse;"
        "margin-bottom:1.5em}td,th{border:1px solid #ccc;padding:2px 6px;font-size:90%}th{background:#eee}"
        "img{max-width:100%;border:1px solid #ddd}.stamp td:first-child{font-weight:bold}"
        ".left{color:#8a5a00}.verdict{border:2px solid #888;padding:.5em 1em;margin-bottom:1em}"
        ".good{color:#1b7837}.fair{color:#b35806}.poor{color:#b2182b}</style></head><body>\n<h1>ScaleScope report</h1>\n");
    page += verdictHtml(contents.summary);
    page += deviceCheckHtml(contents.summary);
    page += QStringLiteral("<table class=\"stamp\">\n");
    for (const char* key : {"checkpoint", "reference", "mode", "device", "float_linears", "architecture", "consumers",
                            "question", "context", "text", "app_version", "date"})
        if (contents.summary.contains(key))
            page += QStringLiteral("<tr><td>%1</td><td>%2</td></tr>\n").arg(stampRowName(key), stampRowValue(key, contents.summary));
    page += QStringLiteral("</table>\n");
    if (contents.summary.contains("left_out") && !contents.summary["left_out"].empty()) {
        page += QStringLiteral("<p class=\"left\">Left out because they do not belong to the state above:</p><ul class=\"left\">\n");
        for (const auto& entry : contents.summary["left_out"])
            page += QStringLiteral("<li>%1: %2</li>\n")
                        .arg(summaryValue(entry.value("result", nlohmann::json())),
                             summaryValue(entry.value("reason", nlohmann::json())));
        page += QStringLiteral("</ul>\n");
    }
    if (contents.summary.contains("not_run") && !contents.summary["not_run"].empty()) {
        page += QStringLiteral("<p class=\"left\">Not in this report because they did not run in the state above:</p><ul class=\"left\">\n");
        for (const auto& entry : contents.summary["not_run"])
            page += QStringLiteral("<li>%1: %2</li>\n")
                        .arg(summaryValue(entry.value("result", nlohmann::json())),
                             summaryValue(entry.value("reason", nlohmann::json())));
        page += QStringLiteral("</ul>\n");
    }
    for (const ChartData& chart : contents.charts) {
        if (chart.series.empty())
            continue;
        page += QStringLiteral("<h2>%1</h2>\n<p><img src=\"%2.png\" alt=\"%1\"> <br><a href=\"%2.svg\">SVG</a> "
                               "<a href=\"%2.csv\">CSV</a></p>\n")
                    .arg(html(chart.title), html(chart.id));
    }
    for (const auto& [name, model] : contents.tables) {
        if (!model || model->rowCount() == 0)
            continue;
        page += QStringLiteral("<h2>%1</h2>\n<p><a href=\"%1.csv\">CSV</a></p>\n<table><tr>").arg(name.toHtmlEscaped());
        for (int c = 0; c < model->columnCount(); ++c)
            page += QStringLiteral("<th>%1</th>").arg(model->headerData(c, Qt::Horizontal).toString().toHtmlEscaped());
        page += QStringLiteral("</tr>\n");
        for (int r = 0; r < model->rowCount(); ++r) {
            page += QStringLiteral("<tr>");
            for (int c = 0; c < model->columnCount(); ++c)
                page += QStringLiteral("<td>%1</td>").arg(model->index(r, c).data().toString().toHtmlEscaped());
            page += QStringLiteral("</tr>\n");
        }
        page += QStringLiteral("</table>\n");
    }
    page += QStringLiteral("</body></html>\n");
    return page.toStdString();
}

} // namespace

QStringList exportReport(const ReportContents& contents, const QString& folder)
{
    const QDir dir(folder);
    std::vector<OutputFile> files;
    for (const ChartData& chart : contents.charts) {
        if (chart.series.empty())
            continue;
        for (const ChartFormat format : {ChartFormat::Png, ChartFormat::Svg}) {
            const std::string name = chart.id + "." + chartFormatExtension(format);
            const std::string shown = dir.filePath(QString::fromStdString(name)).toStdString();
            files.push_back({name, [&chart, format, shown] { return chartImageBytes(chart, format, QSize(1200, 700), shown); }});
        }
        files.push_back({chart.id + ".csv", [&chart] { return chartCsv(chart); }});
    }
    for (const auto& [name, model] : contents.tables) {
        if (!model || model->rowCount() == 0)
            continue;
        const QAbstractItemModel* table = model;
        files.push_back({(name + ".csv").toStdString(), [table] { return tableCsv(*table); }});
    }
    files.push_back({"summary.json", [&contents] { return contents.summary.dump(2) + "\n"; }});
    files.push_back({"index.html", [&contents] { return indexHtml(contents); }});
    QStringList written;
    for (const std::string& path : writeOutputFolder(folder.toStdString(), files, true))
        written << QString::fromStdString(path);
    return written;
}

} // namespace scalescope::ui
