#pragma once
// What each runtime will do with the checkpoint (core/analysis/consumers.h) as a table, one row per
// finding: Consumer (with the AIU loading it holds for), Effect (what the finding does to that
// consumer: fails, runs differently, or a note), Finding, Fix, Linears (the first, and how many
// more; all of them in the tooltip). A consumer without findings gets one row that says it loads as
// intended; the consumers' verdicts are summary(). Roles as in tensor_table_model.h; SubjectRole is the first Linear the
// finding touches, so a click selects it in the tree and the tensor table.
#include <QAbstractTableModel>

#include <vector>

#include "analysis/consumers.h"

namespace scalescope::ui {

class ConsumersModel : public QAbstractTableModel {
    Q_OBJECT
public:
    // AllModulesColumn lists every Linear (for exports; the view hides it).
    enum Column { ConsumerColumn, EffectColumn, FindingColumn, FixColumn, ModulesColumn, AllModulesColumn, ColumnCount };
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
    QVariant display(const Row& row, int column) const;

    std::vector<ConsumerReport> reports_;
    std::vector<Row> rows_;
};

} // namespace scalescope::ui
