#pragma once
// "Export Report": every chart (PNG, SVG and CSV), every table (CSV) and a JSON summary into one
// folder, and an index.html that shows them all with the summary's stamps (no server needed).
// Each file is written atomically; the caller decides about an existing folder.
#include <QString>
#include <QStringList>

#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "report/chart_data.h"

class QAbstractItemModel;

namespace scalescope::ui {

struct ReportContents {
    std::vector<ChartData> charts;                                   // ids must be unique
    std::vector<std::pair<QString, const QAbstractItemModel*>> tables; // file stem, model
    nlohmann::json summary;
};

// Returns the files written. The folder is reserved for this export while it writes
// (io/output_folder.h). Throws scalescope::Error naming the folder or file that could not be written.
QStringList exportReport(const ReportContents& contents, const QString& folder);

// A table model as RFC 4180 CSV: the header, then every row; cells are the display text, except
// numbers, which are written in full precision from the model's sort role when it holds one.
std::string tableCsv(const QAbstractItemModel& model, int sortRole = Qt::UserRole + 1);

} // namespace scalescope::ui
