#include "models/consumers_model.h"

#include <QStringList>


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

// What a finding does to its consumer: an error makes it fail, a warning run differently.
ConsumerVerdict effectOf(const ConsumerFinding* finding)
{
    if (!finding || finding->severity == Severity::Info)
        return ConsumerVerdict::AsIntended;
    return finding->severity == Severity::Error ? ConsumerVerdict::Fails : ConsumerVerdict::RunsDifferently;
}

// Every Linear a finding touches, separated by commas.
QString allModules(const ConsumerFinding* finding)
{
    QStringList modules;
    if (finding)
        for (const std::string& module : finding->modules)
            modules << QString::fromStdString(module);
    return modules.join(QStringLiteral(", "));
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


QVariant ConsumersModel::display(const Row& row, int column) const
{
    switch (column) {
    case ConsumerColumn: return consumerText(row);
    case EffectColumn:
        if (!row.finding)
            return QString::fromUtf8(verdictName(ConsumerVerdict::AsIntended));
        return row.finding->severity == Severity::Info ? tr("note") : QString::fromUtf8(verdictName(effectOf(row.finding)));
    case ModulesColumn: {
        if (!row.finding || row.finding->modules.empty())
            return QVariant();
        const QString first = QString::fromStdString(row.finding->modules.front());
        const auto more = row.finding->modules.size() - 1;
        return more == 0 ? first : tr("%1 and %2 more").arg(first).arg(more);
    }
    case AllModulesColumn: return row.finding ? QVariant(allModules(row.finding)) : QVariant();
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
        return display(row, index.column());
    case Qt::ToolTipRole:
        return index.column() == ModulesColumn ? QVariant(allModules(row.finding)) : display(row, index.column());
    case Qt::TextAlignmentRole:
        return int(Qt::AlignLeft | Qt::AlignVCenter);
    case SortRole:
        if (index.column() == EffectColumn) // a text key: exports write the words, not the rank
            return QString::number(verdictRank(effectOf(row.finding)) * 2 + (row.finding ? 0 : 1));
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
        case EffectColumn: return tr("Effect");
        case ModulesColumn: return tr("Linears");
        case AllModulesColumn: return tr("All Linears");
        case FindingColumn: return tr("What it does");
        case FixColumn: return tr("Fix");
        default: break;
        }
    }
    if (orientation == Qt::Horizontal && role == Qt::ToolTipRole && section == EffectColumn)
        return tr("What the finding does to its consumer: fails, runs differently (a Linear changes scheme or "
                  "precision), or a note that changes nothing; for the AIU per loading: fused q/k/v (fms's "
                  "default) or unfused (aiu-fms-testing-utils' encoders)");
    return QAbstractTableModel::headerData(section, orientation, role);
}

} // namespace scalescope::ui
