#include "models/consumers_model.h"

#include <QStringList>

#include "models/diagnostics_model.h"

namespace scalescope::ui {
namespace {

int verdictRank(ConsumerVerdict verdict)
{
    switch (verdict) {
    case ConsumerVerdict::Fails: return 0;
    case ConsumerVerdict::RunsDifferently: return 1;
    case ConsumerVerdict::AsIntended: return 2;
    }
    return 3;
}

// The AIU report's verdict for the loading a finding holds for ("both": the report's own).
ConsumerVerdict loadingVerdict(const ConsumerReport& report, const std::string& loading)
{
    for (const auto& [which, verdict] : report.loadings)
        if (aiuLoadingName(which) == loading)
            return verdict;
    return report.verdict;
}

} // namespace

ConsumersModel::ConsumersModel(QObject* parent) : QAbstractTableModel(parent) {}

void ConsumersModel::setReports(std::vector<ConsumerReport> reports)
{
    beginResetModel();
    reports_ = std::move(reports);
    rows_.clear();
    for (const ConsumerReport& report : reports_) {
        if (report.findings.empty())
            rows_.push_back({&report, nullptr});
        for (const ConsumerFinding& finding : report.findings)
            rows_.push_back({&report, &finding});
    }
    endResetModel();
}

void ConsumersModel::clear()
{
    setReports({});
}

QString ConsumersModel::summary() const
{
    QStringList parts;
    for (const ConsumerReport& report : reports_) {
        QString text = QString::fromUtf8(consumerName(report.consumer)) + QStringLiteral(": ");
        if (report.loadings.empty()) {
            text += QString::fromUtf8(verdictName(report.verdict));
        } else {
            QStringList loadings;
            for (const auto& [loading, verdict] : report.loadings)
                loadings << tr("%1 (%2)").arg(QString::fromUtf8(verdictName(verdict)),
                                              QString::fromUtf8(aiuLoadingName(loading)));
            text += loadings.join(QStringLiteral(", "));
        }
        parts << text;
    }
    return parts.join(QStringLiteral(" \u00b7 "));
}

ConsumerVerdict ConsumersModel::worstVerdict() const
{
    ConsumerVerdict worst = ConsumerVerdict::AsIntended;
    for (const ConsumerReport& report : reports_)
        if (verdictRank(report.verdict) < verdictRank(worst))
            worst = report.verdict;
    return worst;
}

int ConsumersModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : int(rows_.size());
}

int ConsumersModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QString ConsumersModel::consumerText(const Row& row) const
{
    const QString name = QString::fromUtf8(consumerName(row.report->consumer));
    if (!row.finding || row.finding->loading.empty())
        return name;
    return row.finding->loading == "both" ? tr("%1 (fused and unfused)").arg(name)
                                          : tr("%1 (%2)").arg(name, QString::fromStdString(row.finding->loading));
}

QString ConsumersModel::verdictText(const Row& row) const
{
    const ConsumerVerdict verdict =
        row.finding && !row.finding->loading.empty() ? loadingVerdict(*row.report, row.finding->loading) : row.report->verdict;
    return QString::fromUtf8(verdictName(verdict));
}

QVariant ConsumersModel::display(const Row& row, int column) const
{
    switch (column) {
    case ConsumerColumn: return consumerText(row);
    case VerdictColumn: return verdictText(row);
    case SeverityColumn: return row.finding ? DiagnosticsModel::severityText(row.finding->severity) : QVariant();
    case ModulesColumn: {
        if (!row.finding)
            return QVariant();
        QStringList modules;
        for (const std::string& module : row.finding->modules)
            modules << QString::fromStdString(module);
        return modules.join(QStringLiteral(", "));
    }
    case FindingColumn:
        return row.finding ? QString::fromStdString(row.finding->message) : tr("Loads as intended.");
    case FixColumn: return row.finding ? QString::fromStdString(row.finding->fix) : QVariant();
    default: return QVariant();
    }
}

QVariant ConsumersModel::data(const QModelIndex& index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return QVariant();
    const Row& row = rows_[index.row()];
    switch (role) {
    case Qt::DisplayRole:
    case Qt::ToolTipRole:
        return display(row, index.column());
    case Qt::TextAlignmentRole:
        return int(Qt::AlignLeft | Qt::AlignVCenter);
    case SortRole:
        if (index.column() == VerdictColumn) {
            const ConsumerVerdict verdict = row.finding && !row.finding->loading.empty()
                                                ? loadingVerdict(*row.report, row.finding->loading)
                                                : row.report->verdict;
            return double(verdictRank(verdict));
        }
        if (index.column() == SeverityColumn)
            return row.finding ? QVariant(double(DiagnosticsModel::severityRank(row.finding->severity))) : QVariant();
        return display(row, index.column());
    case SubjectRole:
        if (!row.finding || row.finding->modules.empty())
            return QVariant();
        return QString::fromStdString(row.finding->modules.front());
    default:
        return QVariant();
    }
}

QVariant ConsumersModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation == Qt::Horizontal && role == Qt::DisplayRole) {
        switch (section) {
        case ConsumerColumn: return tr("Consumer");
        case VerdictColumn: return tr("Verdict");
        case SeverityColumn: return tr("Severity");
        case ModulesColumn: return tr("Linears");
        case FindingColumn: return tr("What it does");
        case FixColumn: return tr("Fix");
        default: break;
        }
    }
    if (orientation == Qt::Horizontal && role == Qt::ToolTipRole && section == VerdictColumn)
        return tr("as intended / runs differently (a Linear changes scheme or precision) / fails; for the AIU, "
                  "per loading: fused q/k/v (fms's default) or unfused (aiu-fms-testing-utils' encoders)");
    return QAbstractTableModel::headerData(section, orientation, role);
}

} // namespace scalescope::ui
