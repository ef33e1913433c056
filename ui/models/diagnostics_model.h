#pragma once
// Diagnostics findings (core/analysis/diagnostics.h) as a table: Severity (with the standard
// message-box icon), Code, Subject, Message. SortRole on the severity column is the rank
// (error 0, warning 1, info 2) so that an ascending sort puts errors first; other roles as in
// tensor_table_model.h, SubjectRole being the finding's tensor or module.
#include <QAbstractTableModel>

#include <vector>

#include "analysis/diagnostics.h"

namespace scalescope::ui {

struct SeverityCounts {
    int errors = 0;
    int warnings = 0;
    int infos = 0;
    int total() const { return errors + warnings + infos; }
};

class DiagnosticsModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { SeverityColumn, CodeColumn, SubjectColumn, MessageColumn, ColumnCount };
    enum Role { SortRole = Qt::UserRole + 1, SubjectRole = Qt::UserRole + 2 };

    explicit DiagnosticsModel(QObject* parent = nullptr);

    void setFindings(std::vector<Finding> findings);
    void clear();

    const Finding* findingAt(int row) const; // null when out of range
    SeverityCounts counts() const { return counts_; }

    int rowCount(const QModelIndex& parent = QModelIndex()) const override;
    int columnCount(const QModelIndex& parent = QModelIndex()) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    static QString severityText(Severity severity); // translated "Error", "Warning", "Info"
    static int severityRank(Severity severity);

private:
    std::vector<Finding> findings_;
    SeverityCounts counts_;
};

} // namespace scalescope::ui
