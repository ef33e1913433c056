#include "models/module_tree_model.h"
#include "models/value_text.h"

#include <QHash>
#include <QStringList>

#include <algorithm>
#include <functional>
#include <map>

namespace scalescope::ui {

struct ModuleTreeModel::Node {
    QString segment;
    QString path;            // full dotted name
    Node* parent = nullptr;
    int row = 0;
    std::vector<std::unique_ptr<Node>> children;
    QHash<QString, Node*> childBySegment;

    bool isTensor = false;
    QString tensorDtype;
    QString tensorShape;

    int tensorCount = 0;     // tensors in this subtree, this node's own included
    double elements = 0;
    QString dtypes;          // "F8_E4M3, F32"
    QString sortKey;
};

namespace {

double elementCount(const std::vector<int64_t>& shape)
{
    double count = 1;
    for (int64_t d : shape)
        count *= double(d);
    return count;
}

} // namespace

ModuleTreeModel::ModuleTreeModel(QObject* parent) : QAbstractItemModel(parent), root_(std::make_unique<Node>()) {}

ModuleTreeModel::~ModuleTreeModel() = default;

void ModuleTreeModel::setTensors(const std::vector<TensorRow>& tensors)
{
    auto root = std::make_unique<Node>();
    std::vector<std::pair<Node*, const TensorRow*>> leaves;
    for (const TensorRow& tensor : tensors) {
        const QString name = QString::fromStdString(tensor.name);
        Node* node = root.get();
        for (const QString& segment : name.split(QLatin1Char('.'))) {
            Node* child = node->childBySegment.value(segment, nullptr);
            if (!child) {
                auto created = std::make_unique<Node>();
                created->segment = segment;
                created->path = node == root.get() ? segment : node->path + QLatin1Char('.') + segment;
                created->sortKey = naturalSortKey(segment);
                created->parent = node;
                child = created.get();
                node->childBySegment.insert(segment, child);
                node->children.push_back(std::move(created));
            }
            node = child;
        }
        // A repeated name (not possible in a valid checkpoint) keeps its last entry, counted once.
        node->isTensor = true;
        node->tensorDtype = QString::fromStdString(tensor.dtype);
        node->tensorShape = shapeText(tensor.shape);
        node->elements = elementCount(tensor.shape);
    }

    // Post-order: order siblings, number rows, and sum the subtrees bottom-up.
    struct Summary {
        std::map<QString, double> elementsByDtype;
    };
    std::function<Summary(Node&)> finish = [&](Node& node) -> Summary {
        std::sort(node.children.begin(), node.children.end(), [](const auto& a, const auto& b) {
            const int byKey = a->sortKey.compare(b->sortKey);
            return byKey != 0 ? byKey < 0 : a->segment < b->segment;
        });
        Summary summary;
        double elements = node.isTensor ? node.elements : 0;
        int count = node.isTensor ? 1 : 0;
        if (node.isTensor)
            summary.elementsByDtype[node.tensorDtype] += node.elements;
        for (int row = 0; row < int(node.children.size()); ++row) {
            Node& child = *node.children[row];
            child.row = row;
            const Summary below = finish(child);
            for (const auto& [dtype, n] : below.elementsByDtype)
                summary.elementsByDtype[dtype] += n;
            elements += child.elements;
            count += child.tensorCount;
        }
        node.elements = elements;
        node.tensorCount = count;
        std::vector<std::pair<QString, double>> ordered(summary.elementsByDtype.begin(),
                                                        summary.elementsByDtype.end());
        std::stable_sort(ordered.begin(), ordered.end(),
                         [](const auto& a, const auto& b) { return a.second > b.second; });
        QStringList names;
        for (const auto& entry : ordered)
            names << entry.first;
        node.dtypes = names.join(QStringLiteral(", "));
        return summary;
    };
    finish(*root);

    beginResetModel();
    root_ = std::move(root);
    endResetModel();
}

void ModuleTreeModel::clear()
{
    setTensors({});
}

void ModuleTreeModel::setQuantizedLinears(const QStringList& modules)
{
    beginResetModel();
    quantizedLinears_ = QSet<QString>(modules.begin(), modules.end());
    floatLinears_.clear();
    endResetModel();
}

void ModuleTreeModel::setFloatLinears(const QStringList& modules)
{
    const QSet<QString> wanted(modules.begin(), modules.end());
    if (wanted == floatLinears_)
        return;
    const QSet<QString> changed = (wanted - floatLinears_) + (floatLinears_ - wanted);
    floatLinears_ = wanted;
    for (const QString& module : changed) {
        const QModelIndex index = indexForName(module).siblingAtColumn(FloatColumn);
        if (index.isValid())
            emit dataChanged(index, index, {Qt::CheckStateRole, Qt::ToolTipRole, SortRole});
    }
}

QStringList ModuleTreeModel::floatLinears() const
{
    QStringList modules(floatLinears_.begin(), floatLinears_.end());
    modules.sort();
    return modules;
}

Qt::ItemFlags ModuleTreeModel::flags(const QModelIndex& index) const
{
    Qt::ItemFlags flags = QAbstractItemModel::flags(index);
    if (index.isValid() && index.column() == FloatColumn && quantizedLinears_.contains(nodeOf(index)->path))
        flags |= Qt::ItemIsUserCheckable;
    return flags;
}

bool ModuleTreeModel::setData(const QModelIndex& index, const QVariant& value, int role)
{
    if (role != Qt::CheckStateRole || !index.isValid() || index.column() != FloatColumn)
        return false;
    const QString module = nodeOf(index)->path;
    if (!quantizedLinears_.contains(module))
        return false;
    QSet<QString> wanted = floatLinears_;
    if (value.value<Qt::CheckState>() == Qt::Checked)
        wanted.insert(module);
    else
        wanted.remove(module);
    QStringList modules(wanted.begin(), wanted.end());
    modules.sort();
    setFloatLinears(modules);
    emit floatLinearsEdited(modules);
    return true;
}

const ModuleTreeModel::Node* ModuleTreeModel::nodeOf(const QModelIndex& index) const
{
    return index.isValid() ? static_cast<const Node*>(index.internalPointer()) : root_.get();
}

QModelIndex ModuleTreeModel::indexForName(const QString& fullName) const
{
    if (fullName.isEmpty())
        return QModelIndex();
    const Node* node = root_.get();
    for (const QString& segment : fullName.split(QLatin1Char('.'))) {
        node = node->childBySegment.value(segment, nullptr);
        if (!node)
            return QModelIndex();
    }
    return createIndex(node->row, NameColumn, const_cast<Node*>(node));
}

bool ModuleTreeModel::isTensor(const QModelIndex& index) const
{
    return index.isValid() && index.model() == this && nodeOf(index)->isTensor;
}

QModelIndex ModuleTreeModel::index(int row, int column, const QModelIndex& parent) const
{
    if (column < 0 || column >= ColumnCount || (parent.isValid() && parent.column() != NameColumn))
        return QModelIndex();
    const Node* parentNode = nodeOf(parent);
    if (row < 0 || row >= int(parentNode->children.size()))
        return QModelIndex();
    return createIndex(row, column, parentNode->children[row].get());
}

QModelIndex ModuleTreeModel::parent(const QModelIndex& child) const
{
    if (!child.isValid())
        return QModelIndex();
    const Node* parentNode = nodeOf(child)->parent;
    if (!parentNode || parentNode == root_.get())
        return QModelIndex();
    return createIndex(parentNode->row, NameColumn, const_cast<Node*>(parentNode));
}

int ModuleTreeModel::rowCount(const QModelIndex& parent) const
{
    if (parent.isValid() && parent.column() != NameColumn)
        return 0;
    return int(nodeOf(parent)->children.size());
}

int ModuleTreeModel::columnCount(const QModelIndex&) const
{
    return ColumnCount;
}

QVariant ModuleTreeModel::data(const QModelIndex& index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid))
        return QVariant();
    const Node& node = *nodeOf(index);
    const int column = index.column();
    switch (role) {
    case Qt::CheckStateRole:
        if (column == FloatColumn && quantizedLinears_.contains(node.path))
            return floatLinears_.contains(node.path) ? Qt::Checked : Qt::Unchecked;
        return QVariant();
    case Qt::DisplayRole:
        switch (column) {
        case NameColumn: return node.segment;
        case DtypeColumn: return node.dtypes;
        case TensorCountColumn: return QString::number(node.tensorCount);
        case ElementsColumn: return QString::number(node.elements, 'f', 0);
        default: return QVariant();
        }
    case Qt::ToolTipRole:
        switch (column) {
        case NameColumn:
        case DtypeColumn:
            if (node.isTensor && node.children.empty())
                return tr("%1\n%2 %3").arg(node.path, node.tensorDtype, node.tensorShape);
            return tr("%1\n%n tensor(s): %2", nullptr, node.tensorCount).arg(node.path, node.dtypes);
        case TensorCountColumn: return QString::number(node.tensorCount);
        case ElementsColumn: return QString::number(node.elements, 'f', 0);
        case FloatColumn:
            if (!quantizedLinears_.contains(node.path))
                return QVariant();
            return floatLinears_.contains(node.path)
                       ? tr("%1 runs in float (dequantized or reference weights, float input): uncheck to run it in FP8").arg(node.path)
                       : tr("Check to run %1 in float and rerun the current input (what-if)").arg(node.path);
        default: return QVariant();
        }
    case Qt::TextAlignmentRole:
        return alignmentFor(column == TensorCountColumn || column == ElementsColumn);
    case SortRole:
        switch (column) {
        case NameColumn: return node.sortKey;
        case DtypeColumn: return node.dtypes;
        case TensorCountColumn: return double(node.tensorCount);
        case ElementsColumn: return node.elements;
        case FloatColumn: return quantizedLinears_.contains(node.path) ? (floatLinears_.contains(node.path) ? 2.0 : 1.0) : 0.0;
        default: return QVariant();
        }
    case SubjectRole:
        return node.path;
    default:
        return QVariant();
    }
}

QVariant ModuleTreeModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || section < 0 || section >= ColumnCount)
        return QAbstractItemModel::headerData(section, orientation, role);
    if (role == Qt::DisplayRole) {
        switch (section) {
        case NameColumn: return tr("Module");
        case DtypeColumn: return tr("Dtype");
        case TensorCountColumn: return tr("Tensors");
        case ElementsColumn: return tr("Elements");
        case FloatColumn: return tr("Float");
        default: break;
        }
    }
    if (role == Qt::ToolTipRole && section == DtypeColumn)
        return tr("Dtypes of the tensors below, the one holding most elements first");
    if (role == Qt::ToolTipRole && section == FloatColumn)
        return tr("Run in float: a checked Linear runs on float weights and inputs in every run from now on (what-if)");
    if (role == Qt::TextAlignmentRole)
        return alignmentFor(section == TensorCountColumn || section == ElementsColumn);
    return QAbstractItemModel::headerData(section, orientation, role);
}

} // namespace scalescope::ui
