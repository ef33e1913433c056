#include "panels/model_panel.h"

#include <algorithm>

#include <QHeaderView>
#include <QLabel>
#include <QMenu>
#include <QLineEdit>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QTreeView>
#include <QVBoxLayout>

#include "frozen_column_table.h"
#include "linear_selection.h"
#include "models/consumers_model.h"
#include "models/diagnostics_model.h"
#include "models/module_tree_model.h"
#include "models/tensor_table_model.h"
#include "models/value_text.h"
#include "report_section.h"
#include "session_results.h"

namespace scalescope::ui {
namespace {

QSortFilterProxyModel* makeProxy(QAbstractItemModel* source, QObject* parent, int sortRole)
{
    auto* proxy = new QSortFilterProxyModel(parent);
    proxy->setSourceModel(source);
    proxy->setSortRole(sortRole);
    proxy->setFilterCaseSensitivity(Qt::CaseInsensitive);
    return proxy;
}

QLineEdit* makeFilter(const QString& placeholder, QSortFilterProxyModel* proxy, QWidget* parent)
{
    auto* filter = new QLineEdit(parent);
    filter->setPlaceholderText(placeholder);
    filter->setClearButtonEnabled(true);
    QObject::connect(filter, &QLineEdit::textChanged, proxy,
                     [proxy](const QString& text) { proxy->setFilterFixedString(text); });
    return filter;
}

} // namespace

ModelPanel::ModelPanel(LinearSelection* selection, QWidget* parent) : QWidget(parent)
{
    tensors_ = new TensorTableModel(this);
    tree_ = new ModuleTreeModel(this);
    diagnostics_ = new DiagnosticsModel(this);
    consumers_ = new ConsumersModel(this);
    tensorProxy_ = makeProxy(tensors_, this, TensorTableModel::SortRole);
    treeProxy_ = makeProxy(tree_, this, ModuleTreeModel::SortRole);
    treeProxy_->setRecursiveFilteringEnabled(true);
    diagnosticsProxy_ = makeProxy(diagnostics_, this, DiagnosticsModel::SortRole);
    diagnosticsProxy_->setFilterKeyColumn(-1);

    summary_ = new QLabel(tr("No checkpoint open."), this);
    summary_->setWordWrap(true);
    summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);

    QWidget* treeBox = createTree();
    QWidget* tableBox = createTensorTable();
    QWidget* diagnosticsBox = createDiagnostics();
    findingsTabs_ = new QTabWidget(this);
    findingsTabs_->setObjectName(QStringLiteral("modelFindingsTabs"));
    findingsTabs_->addTab(diagnosticsBox, tr("Diagnostics"));
    findingsTabs_->addTab(createConsumers(), tr("Consumers"));
    auto* top = new QSplitter(Qt::Horizontal, this);
    top->setObjectName(QStringLiteral("modelTopSplitter"));
    top->addWidget(treeBox);
    top->addWidget(tableBox);
    top->setStretchFactor(0, 2);
    top->setStretchFactor(1, 3);
    top->setSizes({360, 690});
    auto* vertical = new QSplitter(Qt::Vertical, this);
    vertical->setObjectName(QStringLiteral("modelSplitter"));
    vertical->addWidget(top);
    vertical->addWidget(findingsTabs_);
    vertical->setStretchFactor(0, 3);
    vertical->setStretchFactor(1, 1);

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(summary_);
    layout->addWidget(vertical, 1);

    connectSelection();
    connect(this, &ModelPanel::linearSelected, selection, &LinearSelection::select);
    selection->follow(this, [this](const QString& module) { selectSubject(module); });
}

// The module tree with its filter.
QWidget* ModelPanel::createTree()
{
    treeView_ = new QTreeView(this);
    treeView_->setModel(treeProxy_);
    treeView_->setSortingEnabled(true);
    treeView_->sortByColumn(0, Qt::AscendingOrder);
    treeView_->setUniformRowHeights(true);
    // The module names are the point of the tree: they get their width, the counts what is left.
    treeView_->header()->setStretchLastSection(false);
    treeView_->header()->setSectionResizeMode(QHeaderView::Interactive);
    treeView_->header()->setMinimumSectionSize(40);
    // The what-if toggle sits beside the name: on a narrow window the counts scroll away, it does not.
    treeView_->header()->moveSection(treeView_->header()->visualIndex(ModuleTreeModel::FloatColumn), 1);
    treeView_->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(treeView_, &QTreeView::customContextMenuRequested, this, &ModelPanel::showTreeMenu);
    connect(tree_, &ModuleTreeModel::floatLinearsEdited, this, &ModelPanel::floatLinearsEdited);
    auto* treeBox = new QWidget(this);
    auto* treeLayout = new QVBoxLayout(treeBox);
    treeLayout->setContentsMargins(0, 0, 0, 0);
    treeLayout->addWidget(makeFilter(tr("Filter modules"), treeProxy_, treeBox));
    treeLayout->addWidget(treeView_);

    return treeBox;
}

// The tensor table with its filter.
QWidget* ModelPanel::createTensorTable()
{
    // The tensor's name stays beside its statistics however far the table scrolls sideways.
    tensorView_ = new FrozenColumnTableView(this);
    tensorView_->setModel(tensorProxy_);
    tensorView_->setSortingEnabled(true);
    tensorView_->sortByColumn(TensorTableModel::NameColumn, Qt::AscendingOrder);
    tensorView_->setSelectionBehavior(QAbstractItemView::SelectRows);
    tensorView_->setSelectionMode(QAbstractItemView::SingleSelection);
    tensorView_->verticalHeader()->hide();
    tensorView_->horizontalHeader()->setSectionResizeMode(TensorTableModel::NameColumn, QHeaderView::Interactive);
    // The scales are what a row is read for: right after the frozen name, so that a laptop screen
    // shows them without scrolling sideways (dtype, shape and the config rule follow).
    for (int column : {TensorTableModel::ScaleMinColumn, TensorTableModel::ScaleMedianColumn,
                       TensorTableModel::ScaleMaxColumn, TensorTableModel::ScaleRatioColumn})
        tensorView_->horizontalHeader()->moveSection(tensorView_->horizontalHeader()->visualIndex(column),
                                                     column - TensorTableModel::ScaleMinColumn + 1);
    tensorView_->setTextElideMode(Qt::ElideMiddle);
    tensorView_->setWordWrap(false);
    auto* tableBox = new QWidget(this);
    auto* tableLayout = new QVBoxLayout(tableBox);
    tableLayout->setContentsMargins(0, 0, 0, 0);
    tensorFilter_ = makeFilter(tr("Filter tensors by name"), tensorProxy_, tableBox);
    tableLayout->addWidget(tensorFilter_);
    tableLayout->addWidget(tensorView_);

    return tableBox;
}

QWidget* ModelPanel::createDiagnostics()
{
    diagnosticsView_ = new QTableView(this);
    diagnosticsView_->setModel(diagnosticsProxy_);
    diagnosticsView_->setSortingEnabled(true);
    diagnosticsView_->sortByColumn(0, Qt::AscendingOrder);
    diagnosticsView_->setSelectionBehavior(QAbstractItemView::SelectRows);
    diagnosticsView_->verticalHeader()->hide();
    diagnosticsView_->horizontalHeader()->setStretchLastSection(true);
    diagnosticsView_->setWordWrap(true);
    diagnosticsSummary_ = new QLabel(this);
    auto* diagnosticsBox = new QWidget(this);
    auto* diagnosticsLayout = new QVBoxLayout(diagnosticsBox);
    diagnosticsLayout->setContentsMargins(0, 0, 0, 0);
    diagnosticsLayout->addWidget(diagnosticsSummary_);
    diagnosticsLayout->addWidget(diagnosticsView_);

    return diagnosticsBox;
}

// What the AIU stack, vLLM and transformers will do with the checkpoint: the verdicts in one line
// above the findings, each finding clickable like a diagnostic.
QWidget* ModelPanel::createConsumers()
{
    consumersView_ = new QTableView(this);
    consumersView_->setObjectName(QStringLiteral("consumersView"));
    consumersView_->setModel(consumers_);
    consumersView_->setSelectionBehavior(QAbstractItemView::SelectRows);
    consumersView_->verticalHeader()->hide();
    consumersView_->setWordWrap(true);
    // The sentences get the width and wrap; consumer and effect are short, the Linears abridged.
    QHeaderView* header = consumersView_->horizontalHeader();
    header->setSectionResizeMode(ConsumersModel::ConsumerColumn, QHeaderView::ResizeToContents);
    header->setSectionResizeMode(ConsumersModel::EffectColumn, QHeaderView::ResizeToContents);
    header->setSectionResizeMode(ConsumersModel::FindingColumn, QHeaderView::Stretch);
    header->setSectionResizeMode(ConsumersModel::FixColumn, QHeaderView::Stretch);
    header->setSectionResizeMode(ConsumersModel::ModulesColumn, QHeaderView::Interactive);
    header->resizeSection(ConsumersModel::ModulesColumn, 260);
    consumersView_->setColumnHidden(ConsumersModel::AllModulesColumn, true);
    consumersView_->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    connect(consumersView_, &QTableView::clicked, this, [this](const QModelIndex& index) {
        selectSubject(index.data(ConsumersModel::SubjectRole).toString());
    });
    consumersSummary_ = new QLabel(this);
    consumersSummary_->setObjectName(QStringLiteral("consumersSummary"));
    consumersSummary_->setWordWrap(true);
    auto* box = new QWidget(this);
    auto* layout = new QVBoxLayout(box);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(consumersSummary_);
    layout->addWidget(consumersView_);
    return box;
}

// A finding or a tree row selects its tensor; a weight row names its Linear to the other panels.
void ModelPanel::connectSelection()
{
    connect(diagnosticsView_, &QTableView::clicked, this, [this](const QModelIndex& index) {
        selectSubject(index.data(DiagnosticsModel::SubjectRole).toString());
    });
    // A module in the tree narrows the table to its tensors; a tensor is selected in the table.
    connect(treeView_, &QTreeView::clicked, this, [this](const QModelIndex& index) {
        const QString subject = index.data(ModuleTreeModel::SubjectRole).toString();
        const int row = tensors_->rowForName(subject);
        if (row < 0) {
            filterTensorsTo(subject);
            if (linears_.contains(subject))
                emit linearSelected(subject);
            return;
        }
        tensorView_->selectRow(tensorProxy_->mapFromSource(tensors_->index(row, 0)).row());
    });
    connect(tensorView_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
            [this](const QModelIndex& current) {
                const QString name = current.data(TensorTableModel::SubjectRole).toString();
                const QString module = name.section(QLatin1Char('.'), 0, -2);
                if (linears_.contains(module))
                    emit linearSelected(module);
            });
}

// Right-click on a quantized Linear (or anything below it): run it in float or in FP8 again, or
// clear every override.
void ModelPanel::showTreeMenu(const QPoint& position)
{
    QString module = treeView_->indexAt(position).data(ModuleTreeModel::SubjectRole).toString();
    while (!module.isEmpty() && !tree_->isQuantizedLinear(module))
        module = module.contains(QLatin1Char('.')) ? module.section(QLatin1Char('.'), 0, -2) : QString();
    const QStringList current = tree_->floatLinears();
    QMenu menu(this);
    if (!module.isEmpty()) {
        const bool inFloat = current.contains(module);
        menu.addAction(inFloat ? tr("Run %1 in FP8 Again").arg(module) : tr("Run %1 in Float").arg(module), this,
                       [this, module, inFloat] {
                           const QModelIndex index = tree_->indexForName(module).siblingAtColumn(ModuleTreeModel::FloatColumn);
                           tree_->setData(index, inFloat ? Qt::Unchecked : Qt::Checked, Qt::CheckStateRole);
                       });
    }
    QAction* clear = menu.addAction(tr("Run Every Linear as the Checkpoint Declares"), this,
                                    [this] { emit floatLinearsEdited({}); });
    clear->setEnabled(!current.isEmpty());
    menu.exec(treeView_->viewport()->mapToGlobal(position));
}

void ModelPanel::setFloatLinears(const QStringList& modules)
{
    tree_->setFloatLinears(modules);
}

void ModelPanel::takeResult(const PanelResult& result)
{
    if (result.checkpoint)
        showCheckpoint(*result.checkpoint);
}

void ModelPanel::addToReport(ReportSection& section, bool /*runResultCurrent*/) const
{
    section.addTable(QStringLiteral("tensors"), tensors_);
    section.addTable(QStringLiteral("diagnostics"), diagnostics_);
    section.addTable(QStringLiteral("consumers"), consumers_);
    if (architecture_.empty())
        return;
    const auto counts = diagnostics_->counts();
    section.summary()["architecture"] = architecture_;
    section.summary()["diagnostics"]
        = {{"errors", counts.errors}, {"warnings", counts.warnings}, {"infos", counts.infos}};
    nlohmann::json consumers = nlohmann::json::object();
    for (const ConsumerReport& report : consumers_->reports())
        consumers[consumerName(report.consumer)] = verdictName(report.verdict);
    section.summary()["consumers"] = consumers;
}

void ModelPanel::showCheckpoint(const CheckpointInfo& info)
{
    const ModelConfig& config = info.checkpoint->config();
    architecture_ = architectureName(config.architecture);
    QString scheme = tr("not quantized (float)");
    if (config.quantization && !config.quantization->groups.empty()) {
        QStringList groups;
        for (const ConfigGroup& g : config.quantization->groups)
            groups << QString::fromStdString(g.name + ": " + describeScheme(g));
        scheme = groups.join(QStringLiteral("; "));
    }
    summary_->setText(tr("<b>%1</b> &nbsp; %2, %3 layers, hidden %4, %5 heads, vocabulary %6, dtype %7<br>"
                         "Quantization: %8%9")
                          .arg(info.directory.toHtmlEscaped(), QString::fromUtf8(architectureName(config.architecture)))
                          .arg(config.numLayers)
                          .arg(config.hiddenSize)
                          .arg(config.numHeads)
                          .arg(config.vocabSize)
                          .arg(QString::fromStdString(config.torchDtype), scheme.toHtmlEscaped(),
                               info.runnable ? QString()
                                             : tr("<br><span style='color:#b00'>Opened for inspection only: %1</span>")
                                                   .arg(info.loadError.toHtmlEscaped())));
    auto rows = TensorTableModel::rowsFrom(*info.checkpoint);
    tree_->setTensors(rows);
    QStringList quantized;
    linears_.clear();
    for (const LinearInfo& linear : info.linears) {
        linears_ << QString::fromStdString(linear.module);
        if (linear.quantized)
            quantized << QString::fromStdString(linear.module);
    }
    tensorFilter_->clear();
    tree_->setQuantizedLinears(quantized);
    tensors_->setTensors(std::move(rows), info.statistics);
    diagnostics_->setFindings(info.findings);
    consumers_->setReports(info.consumers);
    const bool consumerTrouble = consumers_->worstVerdict() != ConsumerVerdict::AsIntended;
    findingsTabs_->setTabText(1, consumerTrouble ? tr("Consumers (%1)").arg(verdictName(consumers_->worstVerdict()))
                                                 : tr("Consumers"));
    findingsTabs_->setTabToolTip(1, consumers_->summary());
    consumersSummary_->setText(tr("How each runtime loads this checkpoint: %1").arg(consumers_->summary()));
    const auto counts = diagnostics_->counts();
    diagnosticsSummary_->setText(tr("Diagnostics: %1, %2, %3")
                                     .arg(countText(counts.errors, tr("error"), tr("errors")),
                                         countText(counts.warnings, tr("warning"), tr("warnings")),
                                         countText(counts.infos, tr("note"), tr("notes"))));
    tensorView_->resizeColumnsToContents();
    // Long names are elided in the middle (layer index and role stay); the tooltip has all of it.
    tensorView_->setColumnWidth(TensorTableModel::NameColumn, std::min(tensorView_->columnWidth(TensorTableModel::NameColumn), 240));
    diagnosticsView_->resizeColumnToContents(0);
    diagnosticsView_->resizeColumnToContents(1);
    diagnosticsView_->resizeColumnToContents(2);
    treeView_->expandToDepth(1);
    treeView_->resizeColumnToContents(0);
    for (int column = 1; column < tree_->columnCount(); ++column)
        treeView_->resizeColumnToContents(column);
}

void ModelPanel::filterTensorsTo(const QString& module)
{
    // The trailing dot keeps layer.1 from matching layer.10; the filter box shows it, so the user
    // sees why the table is short and clears it there.
    tensorFilter_->setText(module.isEmpty() ? QString() : module + QLatin1Char('.'));
}

void ModelPanel::selectSubject(const QString& subject)
{
    // The table follows the tree: it narrows to the module's tensors (a tensor's module, or the
    // module named), then the tensor (or the module's weight) is selected. When a row of this
    // module is current already (the user clicked it), the table stays as it is.
    const QString current = tensorView_->currentIndex().data(TensorTableModel::SubjectRole).toString();
    if (current.isEmpty() || current.section(QLatin1Char('.'), 0, -2) != subject) {
        int row = tensors_->rowForName(subject);
        const bool isTensor = row >= 0;
        if (!isTensor)
            row = tensors_->rowForName(subject + QStringLiteral(".weight"));
        if (row >= 0) {
            filterTensorsTo(isTensor ? subject.section(QLatin1Char('.'), 0, -2) : subject);
            const QModelIndex index = tensorProxy_->mapFromSource(tensors_->index(row, 0));
            tensorView_->selectRow(index.row());
            tensorView_->scrollTo(index);
        }
    }
    const QModelIndex treeIndex = treeProxy_->mapFromSource(tree_->indexForName(subject));
    if (treeIndex.isValid()) {
        treeView_->setCurrentIndex(treeIndex);
        treeView_->scrollTo(treeIndex);
    }
}

} // namespace scalescope::ui
