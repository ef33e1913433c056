#include "models/diagnostics_model.h"

#include <QApplication>
#include <QIcon>
#include <QStyle>

namespace scalescope::ui {

DiagnosticsModel::DiagnosticsModel(QObject* parent) : QAbstractTableModel(parent) {}

void DiagnosticsModel::setFindings(std::vector<Finding> findings)
{
    beginResetModel();
    findings_ = std::move(findings);
    counts_ = {};
    for (const Finding& finding : findings_) {
        switch (finding.severity) {
        case Severity::Error: ++counts_.errors; break;
        case Severity::Warning: ++counts_.warnings; break;
        case Severity::Info: ++counts_.infos; break;
        }
    }
    endResetModel();
}

void DiagnosticsModel::clear()
{
    setFindings({});
}

const Finding* DiagnosticsModel::findingAt(int row) const
{
    return row >= 0 && row < int(findings_.size()) ? &findings_[row] : nullptr;
}

QString DiagnosticsModel::severityText(Severity severity)
{
    switch (severity) {
    case Severity::Error: return tr("Error");
    case Severity::Warning: return tr("Warning");
    case Severity::Info: return tr("Info");
    }
    return QString();
}

int DiagnosticsModel::severityRank(Severity severity)
{
    switch (severity) {
    case Severity::Error: return 0;
    case Severity::Warning: return 1;
    case Severity::Info: return 2;
    }
    return 3;
}

int DiagnosticsModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : int(findings_.size());
}

int DiagnosticsModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant DiagnosticsModel::data(const QModelIndex& index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return QVariant();
    const Finding& finding = findings_[index.row()];
    const int column = index.column();
    switch (role) {
    case Qt::DisplayRole:
    case Qt::ToolTipRole:
        switch (column) {
        case SeverityColumn: return severityText(finding.severity);
        case CodeColumn: return QString::fromStdString(finding.code);
        case SubjectColumn: return QString::fromStdString(finding.subject);
        case MessageColumn: return QString::fromStdString(finding.message);
        default: return QVariant();
        }
    case Qt::DecorationRole: {
        // Icons need a widget style, which only a QApplication has.
        if (column != SeverityColumn || !qobject_cast<QApplication*>(QCoreApplication::instance()))
            return QVariant();
        QStyle::StandardPixmap pixmap = QStyle::SP_MessageBoxInformation;
        if (finding.severity == Severity::Error)
            pixmap = QStyle::SP_MessageBoxCritical;
        else if (finding.severity == Severity::Warning)
            pixmap = QStyle::SP_MessageBoxWarning;
        return QApplication::style()->standardIcon(pixmap);
    }
    case Qt::TextAlignmentRole:
        return int(Qt::AlignLeft | Qt::AlignVCenter);
    case SortRole:
        if (column == SeverityColumn)
            return double(severityRank(finding.severity));
        return data(index, Qt::DisplayRole);
    case SubjectRole:
        if (finding.subject.empty())
            return QVariant();
        return QString::fromStdString(finding.subject);
    default:
        return QVariant();
    }
}

QVariant DiagnosticsModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation == Qt::Horizontal && role == Qt::DisplayRole) {
        switch (section) {
        case SeverityColumn: return tr("Severity");
        case CodeColumn: return tr("Code");
        case SubjectColumn: return tr("Subject");
        case MessageColumn: return tr("Message");
        default: break;
        }
    }
    return QAbstractTableModel::headerData(section, orientation, role);
}

} // namespace scalescope::ui
