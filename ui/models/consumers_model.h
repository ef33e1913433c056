#pragma once
// What each runtime will do with the checkpoint (core/analysis/consumers.h) as a table, one row per
// finding: Consumer (with the AIU loading it holds for), Verdict (the consumer's, or the loading's
// for the AIU), Severity, Linears, Finding, Fix. A consumer without findings gets one row that says
// it loads as intended. Roles as in tensor_table_model.h; SubjectRole is the first Linear the
// finding touches, so a click selects it in the tree and the tensor table.
#include <QAbstractTableModel>

#include <vector>

#include "analysis/consumers.h"

namespace scalescope::ui {

class ConsumersModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { ConsumerColumn, VerdictColumn, SeverityColumn, ModulesColumn, FindingColumn, FixColumn, ColumnCount };
    enum Role { SortRole = Qt::UserRole + 1, SubjectRole = Qt::UserRole + 2 };

    explicit ConsumersModel(QObject* parent = nullptr);

    void setReports(std::vector<ConsumerReport> reports);
    void clear();

    const std::vector<ConsumerReport>& reports() const { return reports_; }
    // "aiu: fails (fused), as intended (unfused) · vllm: as intended · ...": the verdicts in one line.
    QString summary() const;
    // The worst verdict over every consumer (as intended when there are none).
    ConsumerVerdict worstVerdict() const;

    int rowCount(const QModelIndex& parent = QModelIndex()) const override;
    int columnCount(const QModelIndex& parent = QModelIndex()) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    struct Row {
        const ConsumerReport* report = nullptr;
        const ConsumerFinding* finding = nullptr; // null: the consumer has no findings
    };
    QString consumerText(const Row& row) const;
    QString verdictText(const Row& row) const;
    QVariant display(const Row& row, int column) const;

    std::vector<ConsumerReport> reports_;
    std::vector<Row> rows_;
};

} // namespace scalescope::ui
