// The workbench's item models and the probability bar delegate. Every model is watched by
// QAbstractItemModelTester (directly and through a QSortFilterProxyModel) while it is filled, reset,
// filtered and sorted; displayed text is checked against hand-built input structs with the
// expected formatting worked out by hand; sorting through SortRole is checked to be numeric where
// a sort of the displayed text would be lexical; the delegate paints into a QImage.
#include <QtTest>

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QImage>
#include <QPainter>
#include <QSortFilterProxyModel>
#include <QStyle>
#include <QTemporaryDir>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "analysis/scale_statistics.h"
#include "io/safetensors.h"
#include "model/checkpoint.h"
#include "models/answers_model.h"
#include "models/consumers_model.h"
#include "models/diagnostics_model.h"
#include "models/layer_metrics_model.h"
#include "models/mask_predictions_model.h"
#include "models/module_tree_model.h"
#include "models/probability_bar_delegate.h"
#include "models/tensor_table_model.h"
#include "support/fixtures.h"

using namespace scalescope;
using namespace scalescope::ui;

// The window mixes models behind one proxy setup, so every model must use the same role numbers.
static_assert(int(TensorTableModel::SortRole) == Qt::UserRole + 1);
static_assert(int(TensorTableModel::SubjectRole) == Qt::UserRole + 2);
static_assert(int(ModuleTreeModel::SortRole) == int(TensorTableModel::SortRole));
static_assert(int(ModuleTreeModel::SubjectRole) == int(TensorTableModel::SubjectRole));
static_assert(int(DiagnosticsModel::SortRole) == int(TensorTableModel::SortRole));
static_assert(int(DiagnosticsModel::SubjectRole) == int(TensorTableModel::SubjectRole));
static_assert(int(AnswersModel::SortRole) == int(TensorTableModel::SortRole));
static_assert(int(MaskPredictionsModel::SortRole) == int(TensorTableModel::SortRole));
static_assert(int(LayerMetricsModel::SortRole) == int(TensorTableModel::SortRole));
static_assert(int(LayerMetricsModel::SubjectRole) == int(TensorTableModel::SubjectRole));
static_assert(int(MaskPredictionsModel::ProbabilityRole) == Qt::UserRole + 3);
static_assert(int(AnswersModel::ProbabilityRole) == Qt::UserRole + 3);
static_assert(ProbabilityBarDelegate::DefaultProbabilityRole == Qt::UserRole + 3);

namespace {

constexpr int kSortRole = Qt::UserRole + 1;
constexpr int kSubjectRole = Qt::UserRole + 2;
constexpr int kProbabilityRole = Qt::UserRole + 3;

const std::string kQuery = "roberta.encoder.layer.0.attention.self.query";
const std::string kKey = "roberta.encoder.layer.0.attention.self.key";

// A proxy sorting on SortRole, with model testers on both the model and the proxy; both are
// children of `owner` and die with it.
QSortFilterProxyModel* checkedProxy(QAbstractItemModel* model, QObject* owner)
{
    new QAbstractItemModelTester(model, QAbstractItemModelTester::FailureReportingMode::QtTest, owner);
    auto* proxy = new QSortFilterProxyModel(owner);
    proxy->setSortRole(kSortRole);
    proxy->setSourceModel(model);
    new QAbstractItemModelTester(proxy, QAbstractItemModelTester::FailureReportingMode::QtTest, owner);
    return proxy;
}

QString text(const QAbstractItemModel& model, int row, int column, int role = Qt::DisplayRole,
             const QModelIndex& parent = QModelIndex())
{
    return model.data(model.index(row, column, parent), role).toString();
}

QStringList columnTexts(const QAbstractItemModel& model, int column, const QModelIndex& parent = QModelIndex(),
                        int role = Qt::DisplayRole)
{
    QStringList texts;
    for (int row = 0; row < model.rowCount(parent); ++row)
        texts << model.data(model.index(row, column, parent), role).toString();
    return texts;
}

int rowOf(const QAbstractItemModel& model, int column, const QString& value)
{
    for (int row = 0; row < model.rowCount(); ++row)
        if (text(model, row, column) == value)
            return row;
    return -1;
}

bool isRightAligned(const QAbstractItemModel& model, const QModelIndex& index)
{
    return (Qt::Alignment(model.data(index, Qt::TextAlignmentRole).toInt()) & Qt::AlignRight) != 0;
}

LinearScaleStatistics quantizedStatistics(const std::string& module, float scaleMin, float scaleMedian,
                                          float scaleMax, double clipped, double underflow,
                                          std::optional<float> inputScale = std::nullopt)
{
    LinearScaleStatistics statistics;
    statistics.module = module;
    statistics.quantized = true;
    statistics.weightDtype = "F8_E4M3";
    statistics.scaleMin = scaleMin;
    statistics.scaleMedian = scaleMedian;
    statistics.scaleMax = scaleMax;
    statistics.scaleRatio = scaleMax / scaleMin;
    statistics.clippedShare = clipped;
    statistics.underflowShare = underflow;
    statistics.inputScale = inputScale;
    return statistics;
}

// A quantized query (with a static input scale), a float key, and an embedding.
std::vector<TensorRow> layerZeroRows()
{
    return {
        {kQuery + ".weight", "F8_E4M3", {768, 768}, "base_model.layers.0.attn.in_proj.query",
         "base_model.layers.0.attn.in_proj.qkv_fused"},
        {kQuery + ".weight_scale", "F32", {768, 1}, "", ""},
        {kQuery + ".bias", "F32", {768}, "", ""},
        {kKey + ".weight", "F32", {768, 768}, "base_model.layers.0.attn.in_proj.key",
         "base_model.layers.0.attn.in_proj.qkv_fused"},
        {"roberta.embeddings.word_embeddings.weight", "F32", {50265, 768}, "", ""},
    };
}

std::vector<LinearScaleStatistics> layerZeroStatistics()
{
    std::vector<LinearScaleStatistics> statistics;
    statistics.push_back(quantizedStatistics(kQuery, 0.00125f, 0.0025f, 0.004f, 0.0123, 0.5, 0.5f));
    statistics.back().scaleRatio = 3.2f; // 0.004f / 0.00125f rounds to 3.2000003f in float
    statistics.back().group = "group_1";
    statistics.back().rule = R"(group_1 target "re:.*self\.query" (pattern))";
    // A float Linear: its statistics exist but must not fill any scale column.
    LinearScaleStatistics key;
    key.module = kKey;
    key.weightDtype = "F32";
    key.scaleMin = 7;
    key.rule = R"(ignored by "re:.*self\.key" (pattern))";
    statistics.push_back(key);
    return statistics;
}

std::vector<TensorRow> treeRows()
{
    std::vector<TensorRow> rows;
    // Layers inserted out of order; 10 must come after 2 once sorted.
    for (int layer : {10, 2, 0, 1}) {
        const std::string prefix = "roberta.encoder.layer." + std::to_string(layer) + ".attention.self.query.";
        rows.push_back({prefix + "weight", "F8_E4M3", {8, 8}});
        rows.push_back({prefix + "weight_scale", "F32", {8, 1}});
        rows.push_back({prefix + "bias", "F32", {8}});
    }
    rows.push_back({"roberta.embeddings.word_embeddings.weight", "F32", {100, 8}});
    rows.push_back({"lm_head.bias", "BF16", {100}});
    return rows;
}

Finding finding(Severity severity, const std::string& code, const std::string& subject, const std::string& message)
{
    Finding f;
    f.severity = severity;
    f.code = code;
    f.subject = subject;
    f.message = message;
    return f;
}

QaAnswer spanAnswer(const std::string& text, float score, int start, int end)
{
    QaAnswer answer;
    answer.text = text;
    answer.score = score;
    answer.start = start;
    answer.end = end;
    answer.window = 0;
    return answer;
}

QaAnswer nullAnswer(float score)
{
    QaAnswer answer;
    answer.isNull = true;
    answer.score = score;
    return answer;
}

MaskPrediction prediction(int64_t id, const std::string& token, float probability)
{
    MaskPrediction p;
    p.tokenId = id;
    p.token = token;
    p.probability = probability;
    return p;
}

CapturePointMetrics point(const std::string& name, const std::string& module, CaptureKind kind, int layer,
                          double sqnr, double cosine = 1, double relativeL2 = 0, double maxAbs = 0, double mse = 0)
{
    CapturePointMetrics p;
    p.name = name;
    p.module = module;
    p.kind = kind;
    p.layer = layer;
    p.metrics.count = 4096;
    p.metrics.sqnrDb = sqnr;
    p.metrics.cosine = cosine;
    p.metrics.relativeL2 = relativeL2;
    p.metrics.maxAbsError = maxAbs;
    p.metrics.mse = mse;
    return p;
}

std::vector<CapturePointMetrics> comparisonPoints()
{
    const double inf = std::numeric_limits<double>::infinity();
    const std::string layer0 = "roberta.encoder.layer.0";
    return {
        point("roberta.embeddings.output", "roberta.embeddings", CaptureKind::Embeddings, -1, inf),
        point(kQuery + ".input", kQuery, CaptureKind::LinearInput, 0, 35.123),
        point(kQuery + ".output", kQuery, CaptureKind::LinearOutput, 0, 28.456, 0.99876543, 0.0123456, 0.25, 1.5e-4),
        point(layer0 + ".output", layer0, CaptureKind::LayerOutput, 0, 9.5),
        point("roberta.encoder.layer.1.output", "roberta.encoder.layer.1", CaptureKind::LayerOutput, 1, 100.25),
        point("qa_outputs.output", "qa_outputs", CaptureKind::LinearOutput, -1, 10.0),
    };
}

QImage whiteImage(const QSize& size)
{
    QImage image(size, QImage::Format_ARGB32);
    image.fill(Qt::white);
    return image;
}

} // namespace

class TestItemModels : public QObject {
    Q_OBJECT

private slots:
    void consumersTableListsFindingsPerLoading();
    void tensorTableFormatsCells_data();
    void tensorTableFormatsCells();
    void tensorTableLeavesFloatLinearsEmpty();
    void tensorTableSortsNumerically();
    void tensorTableSortsScalesWithEmptyCellsLast();
    void tensorTableFiltersAndResets();
    void tensorTableRowsFromCheckpoint();

    void moduleTreeBuildsNumericallyOrderedTree();
    void moduleTreeSummarisesDtypesAndCounts();
    void moduleTreeIndexForName_data();
    void moduleTreeIndexForName();
    void moduleTreeTensorThatIsAlsoAModule();
    void moduleTreeSortsAndFiltersRecursively();

    void diagnosticsShowsFindingsAndCounts();
    void diagnosticsSortsBySeverityRank();
    void diagnosticsFiltersBySubject();

    void answersSideBySide();
    void answersAgree_data();
    void answersAgree();
    void answersWithoutReference();
    void answersSortByScore();

    void maskPredictionsShowTokensAndProbabilities();
    void maskPredictionsSortByProbability();
    void maskPredictionsWithoutReference();

    void layerMetricsFormats_data();
    void layerMetricsFormats();
    void layerMetricsSortsSqnrNumericallyWithInfinityOnTop();
    void layerMetricsOutputsOnly();

    void delegatePaintsBarProportionalToProbability_data();
    void delegatePaintsBarProportionalToProbability();
    void delegateLeavesCellsWithoutProbabilityAlone();
    void delegatePaintsSelectedCells();
};

// ---- ConsumersModel ----

// One row per finding (an AIU finding names the loading and that loading's verdict), one row for a
// consumer without findings, the first Linear as the subject, and the verdicts in one line.
void TestItemModels::consumersTableListsFindingsPerLoading()
{
    ConsumerReport aiu;
    aiu.consumer = Consumer::Aiu;
    aiu.verdict = ConsumerVerdict::Fails;
    aiu.loadings = {{AiuLoading::Fused, ConsumerVerdict::Fails}, {AiuLoading::Unfused, ConsumerVerdict::AsIntended}};
    ConsumerFinding fused;
    fused.consumer = Consumer::Aiu;
    fused.loading = "fused";
    fused.code = "aiu-fused-tensor-scales";
    fused.severity = Severity::Error;
    fused.modules = {kQuery, kKey};
    fused.message = "The per-tensor scales concatenate to shape [3].";
    fused.fix = "Load unfused.";
    aiu.findings = {fused};
    ConsumerReport vllm;
    vllm.consumer = Consumer::Vllm;

    QObject owner;
    ConsumersModel model;
    QSortFilterProxyModel* proxy = checkedProxy(&model, &owner);
    model.setReports({aiu, vllm});
    QCOMPARE(proxy->rowCount(), 2);
    QCOMPARE(text(model, 0, ConsumersModel::ConsumerColumn), QStringLiteral("aiu (fused)"));
    QCOMPARE(text(model, 0, ConsumersModel::EffectColumn), QStringLiteral("fails"));
    QCOMPARE(text(model, 0, ConsumersModel::ModulesColumn), QString::fromStdString(kQuery + " and 1 more"));
    QCOMPARE(model.data(model.index(0, ConsumersModel::ModulesColumn), Qt::ToolTipRole).toString(),
             QString::fromStdString(kQuery + ", " + kKey));
    QCOMPARE(text(model, 0, ConsumersModel::AllModulesColumn), QString::fromStdString(kQuery + ", " + kKey));
    // Exports write the effect in words (a double sort key would be written as a number).
    QCOMPARE(model.data(model.index(0, ConsumersModel::EffectColumn), kSortRole).typeId(), QMetaType::QString);
    QCOMPARE(text(model, 0, ConsumersModel::FixColumn), QStringLiteral("Load unfused."));
    QCOMPARE(model.data(model.index(0, 0), kSubjectRole).toString(), QString::fromStdString(kQuery));
    QCOMPARE(text(model, 1, ConsumersModel::ConsumerColumn), QStringLiteral("vllm"));
    QCOMPARE(text(model, 1, ConsumersModel::EffectColumn), QStringLiteral("as intended"));
    QCOMPARE(text(model, 1, ConsumersModel::FindingColumn), QStringLiteral("Loads as intended."));
    QVERIFY(!model.data(model.index(1, 0), kSubjectRole).isValid());
    QCOMPARE(model.summary(), QStringLiteral("aiu: fails (fused), as intended (unfused) \u00b7 vllm: as intended"));
    QCOMPARE(model.worstVerdict(), ConsumerVerdict::Fails);
    // A note changes nothing: its effect says so, whatever the consumer's verdict.
    ConsumerFinding note = fused;
    note.loading = "both";
    note.severity = Severity::Info;
    aiu.findings = {fused, note};
    model.setReports({aiu});
    QCOMPARE(text(model, 1, ConsumersModel::ConsumerColumn), QStringLiteral("aiu (fused and unfused)"));
    QCOMPARE(text(model, 1, ConsumersModel::EffectColumn), QStringLiteral("note"));
    model.clear();
    QCOMPARE(model.rowCount(), 0);
    QCOMPARE(model.worstVerdict(), ConsumerVerdict::AsIntended);
}

// ---- TensorTableModel ----

void TestItemModels::tensorTableFormatsCells_data()
{
    QTest::addColumn<QString>("tensor");
    QTest::addColumn<int>("column");
    QTest::addColumn<QString>("display");
    QTest::addColumn<QString>("tooltip");

    const QString query = QString::fromStdString(kQuery + ".weight");
    const QString scale = QString::fromStdString(kQuery + ".weight_scale");
    QTest::newRow("name") << query << int(TensorTableModel::NameColumn) << query << query;
    QTest::newRow("dtype") << query << int(TensorTableModel::DtypeColumn) << "F8_E4M3" << "F8_E4M3";
    QTest::newRow("shape") << query << int(TensorTableModel::ShapeColumn) << "[768, 768]" << "589824 elements";
    QTest::newRow("shape [768, 1]") << scale << int(TensorTableModel::ShapeColumn) << "[768, 1]" << "768 elements";
    QTest::newRow("elements 768*768") << query << int(TensorTableModel::ElementsColumn) << "589824" << "589824";
    QTest::newRow("elements 50265*768") << "roberta.embeddings.word_embeddings.weight"
                                        << int(TensorTableModel::ElementsColumn) << "38603520" << "38603520";
    QTest::newRow("scale min") << query << int(TensorTableModel::ScaleMinColumn) << "1.250e-03" << "0.00125";
    QTest::newRow("scale median") << query << int(TensorTableModel::ScaleMedianColumn) << "2.500e-03" << "0.0025";
    QTest::newRow("scale max") << query << int(TensorTableModel::ScaleMaxColumn) << "4.000e-03" << "0.004";
    QTest::newRow("ratio") << query << int(TensorTableModel::ScaleRatioColumn) << "3.2" << "3.2";
    QTest::newRow("clipped") << query << int(TensorTableModel::ClippedColumn) << "1.23" << "1.23 % (share 0.0123)";
    QTest::newRow("underflow") << query << int(TensorTableModel::UnderflowColumn) << "50.00" << "50 % (share 0.5)";
    QTest::newRow("input scale") << query << int(TensorTableModel::InputScaleColumn) << "5.000e-01"
                                 << "static input scale 0.5";
    QTest::newRow("scale column on the scale tensor itself") << scale << int(TensorTableModel::ScaleMinColumn) << ""
                                                             << "";
    // The checkpoint group of every Linear and the rule that picked it (or the ignore entry).
    QTest::newRow("group and rule") << query << int(TensorTableModel::GroupColumn)
                                    << R"(group_1 target "re:.*self\.query" (pattern))"
                                    << QString::fromStdString("Linear " + kQuery + R"(: group_1 target "re:.*self\.query" (pattern))");
    const QString key = QString::fromStdString(kKey + ".weight");
    QTest::newRow("ignored float Linear") << key << int(TensorTableModel::GroupColumn)
                                          << R"(ignored by "re:.*self\.key" (pattern))"
                                          << QString::fromStdString("Linear " + kKey + R"(: ignored by "re:.*self\.key" (pattern))");
    QTest::newRow("no group on other tensors") << scale << int(TensorTableModel::GroupColumn) << "" << "";
}

void TestItemModels::tensorTableFormatsCells()
{
    QFETCH(QString, tensor);
    QFETCH(int, column);
    QFETCH(QString, display);
    QFETCH(QString, tooltip);

    QObject owner;
    TensorTableModel model;
    checkedProxy(&model, &owner);
    model.setTensors(layerZeroRows(), layerZeroStatistics());

    const int row = model.rowForName(tensor);
    QVERIFY(row >= 0);
    const QModelIndex index = model.index(row, column);
    QCOMPARE(model.data(index).toString(), display);
    QCOMPARE(model.data(index, Qt::ToolTipRole).toString(), tooltip);
    QCOMPARE(model.data(index, kSubjectRole).toString(), tensor);
    const bool numeric = column >= TensorTableModel::ElementsColumn && column != TensorTableModel::GroupColumn &&
                         column != TensorTableModel::FmsNameColumn;
    QCOMPARE(isRightAligned(model, index), numeric);
    if (!display.isEmpty() && numeric)
        QCOMPARE(model.data(index, kSortRole).userType(), int(QMetaType::Double));
    QVERIFY(!model.headerData(column, Qt::Horizontal).toString().isEmpty());
}

void TestItemModels::tensorTableLeavesFloatLinearsEmpty()
{
    QObject owner;
    TensorTableModel model;
    checkedProxy(&model, &owner);
    model.setTensors(layerZeroRows(), layerZeroStatistics());

    QCOMPARE(model.headerData(TensorTableModel::ScaleMinColumn, Qt::Horizontal).toString(), QStringLiteral("Scale min"));
    QCOMPARE(model.headerData(TensorTableModel::ClippedColumn, Qt::Horizontal).toString(), QStringLiteral("Clipped (%)"));

    const int key = model.rowForName(QString::fromStdString(kKey + ".weight"));
    QVERIFY(key >= 0);
    QVERIFY(model.statisticsAt(key) == nullptr);
    for (int column = TensorTableModel::ScaleMinColumn; column < TensorTableModel::ColumnCount; ++column) {
        QVERIFY(text(model, key, column).isEmpty());
        QVERIFY(!model.data(model.index(key, column), kSortRole).isValid());
    }
    const int query = model.rowForName(QString::fromStdString(kQuery + ".weight"));
    QVERIFY(model.statisticsAt(query) != nullptr);
    QCOMPARE(model.statisticsAt(query)->module, kQuery);
    QCOMPARE(model.rowForName(QStringLiteral("missing.weight")), -1);
}

void TestItemModels::tensorTableSortsNumerically()
{
    QObject owner;
    TensorTableModel model;
    QSortFilterProxyModel* proxy = checkedProxy(&model, &owner);
    model.setTensors({{"a", "F32", {100}}, {"b", "F32", {9}}, {"c", "F32", {10}}, {"scalar", "F32", {}}});

    QCOMPARE(text(model, rowOf(model, 0, "scalar"), TensorTableModel::ShapeColumn), QStringLiteral("[]"));

    proxy->sort(TensorTableModel::ElementsColumn, Qt::AscendingOrder);
    QCOMPARE(columnTexts(*proxy, TensorTableModel::ElementsColumn), QStringList({"1", "9", "10", "100"}));
    QCOMPARE(columnTexts(*proxy, TensorTableModel::NameColumn), QStringList({"scalar", "b", "c", "a"}));
    proxy->sort(TensorTableModel::ElementsColumn, Qt::DescendingOrder);
    QCOMPARE(columnTexts(*proxy, TensorTableModel::ElementsColumn), QStringList({"100", "10", "9", "1"}));

    // The same proxy on the display text would sort lexically: the SortRole is what makes it numeric.
    proxy->setSortRole(Qt::DisplayRole);
    proxy->sort(TensorTableModel::ElementsColumn, Qt::AscendingOrder);
    QCOMPARE(columnTexts(*proxy, TensorTableModel::ElementsColumn), QStringList({"1", "10", "100", "9"}));
}

void TestItemModels::tensorTableSortsScalesWithEmptyCellsLast()
{
    QObject owner;
    TensorTableModel model;
    QSortFilterProxyModel* proxy = checkedProxy(&model, &owner);
    model.setTensors({{"x.weight", "F8_E4M3", {4, 4}},
                      {"y.weight", "F8_E4M3", {4, 4}},
                      {"y.bias", "F32", {4}},
                      {"z.weight", "F8_E4M3", {4, 4}}},
                     {quantizedStatistics("x", 0.1f, 0.1f, 0.1f, 0, 0), quantizedStatistics("y", 0.02f, 0.02f, 0.02f, 0, 0),
                      quantizedStatistics("z", 0.003f, 0.003f, 0.003f, 0, 0)});

    proxy->sort(TensorTableModel::ScaleMinColumn, Qt::AscendingOrder);
    QCOMPARE(columnTexts(*proxy, TensorTableModel::NameColumn),
             QStringList({"z.weight", "y.weight", "x.weight", "y.bias"}));
    QCOMPARE(columnTexts(*proxy, TensorTableModel::ScaleMinColumn),
             QStringList({"3.000e-03", "2.000e-02", "1.000e-01", ""}));
}

void TestItemModels::tensorTableFiltersAndResets()
{
    QObject owner;
    TensorTableModel model;
    QSortFilterProxyModel* proxy = checkedProxy(&model, &owner);
    proxy->setFilterKeyColumn(TensorTableModel::NameColumn);
    proxy->setFilterFixedString(QStringLiteral("query"));
    QCOMPARE(proxy->rowCount(), 0);

    model.setTensors(layerZeroRows(), layerZeroStatistics());
    QCOMPARE(model.rowCount(), 5);
    QCOMPARE(proxy->rowCount(), 3);
    for (const QString& name : columnTexts(*proxy, TensorTableModel::NameColumn))
        QVERIFY(name.contains(QStringLiteral("query")));

    proxy->setFilterFixedString(QStringLiteral("word_embeddings"));
    QCOMPARE(proxy->rowCount(), 1);
    QCOMPARE(text(*proxy, 0, TensorTableModel::ShapeColumn), QStringLiteral("[50265, 768]"));

    // A second fill replaces everything, statistics included.
    QSignalSpy resets(&model, &QAbstractItemModel::modelReset);
    model.setTensors({{"roberta.embeddings.word_embeddings.weight", "BF16", {10, 4}}});
    QCOMPARE(resets.count(), 1);
    QCOMPARE(model.rowCount(), 1);
    QCOMPARE(proxy->rowCount(), 1);
    QCOMPARE(text(*proxy, 0, TensorTableModel::DtypeColumn), QStringLiteral("BF16"));
    model.clear();
    QCOMPARE(model.rowCount(), 0);
    QCOMPARE(proxy->rowCount(), 0);
}

void TestItemModels::tensorTableRowsFromCheckpoint()
{
    QTemporaryDir temp;
    QVERIFY(temp.isValid());
    const std::string floatDir = temp.filePath(QStringLiteral("float")).toStdString();
    const std::string fp8Dir = temp.filePath(QStringLiteral("fp8")).toStdString();
    testing::TinyModelSpec spec;
    testing::writeTinyFloatCheckpoint(floatDir, spec);
    testing::writeTinyFp8Checkpoint(floatDir, fp8Dir, testing::Fp8Scheme{});
    const auto checkpoint = Checkpoint::open(fp8Dir);

    const std::vector<TensorRow> rows = TensorTableModel::rowsFrom(*checkpoint);
    QVERIFY(rows.size() > 10);
    for (std::size_t i = 1; i < rows.size(); ++i)
        QVERIFY2(rows[i - 1].name < rows[i].name, "rows are sorted by name without repeats");
    const auto find = [&](const std::string& name) -> const TensorRow* {
        for (const TensorRow& row : rows)
            if (row.name == name)
                return &row;
        return nullptr;
    };
    const int hidden = spec.hiddenSize;
    const TensorRow* weight = find(kQuery + ".weight");
    QVERIFY(weight);
    QCOMPARE(weight->dtype, std::string("F8_E4M3"));
    QCOMPARE(weight->shape, (std::vector<int64_t>{hidden, hidden}));
    const TensorRow* scale = find(kQuery + ".weight_scale");
    QVERIFY(scale);
    QCOMPARE(scale->dtype, std::string("F32"));
    QCOMPARE(scale->shape, (std::vector<int64_t>{hidden, 1}));
    // The AIU stack's names (fms's RoBERTa adapter), unfused and with its default fused q/k/v.
    QCOMPARE(weight->fmsName, std::string("base_model.layers.0.attn.in_proj.query"));
    QCOMPARE(weight->fmsFusedName, std::string("base_model.layers.0.attn.in_proj.qkv_fused"));
    QVERIFY(scale->fmsName.empty());
    const TensorRow* head = find("qa_outputs.weight");
    QVERIFY(head);
    QCOMPARE(head->fmsName, std::string("qa_head"));

    QObject owner;
    TensorTableModel model;
    checkedProxy(&model, &owner);
    model.setTensors(rows, computeScaleStatistics(*checkpoint));
    QCOMPARE(model.rowCount(), int(rows.size()));

    // The smallest per-channel scale, read from the tensor here, is what the table shows.
    const FloatTensor scales = checkpoint->tensors().require(kQuery + ".weight_scale").toFloat();
    const float smallest = *std::min_element(scales.values.begin(), scales.values.end());
    const int row = model.rowForName(QString::fromStdString(kQuery + ".weight"));
    QCOMPARE(text(model, row, TensorTableModel::ScaleMinColumn), QString::asprintf("%.3e", double(smallest)));
    QCOMPARE(model.data(model.index(row, TensorTableModel::ScaleMinColumn), kSortRole).toDouble(), double(smallest));
    // Dynamic activations: no input scale to show.
    QVERIFY(text(model, row, TensorTableModel::InputScaleColumn).isEmpty());
    const int qaWeight = model.rowForName(QStringLiteral("qa_outputs.weight"));
    QVERIFY(qaWeight >= 0);
    QVERIFY(text(model, qaWeight, TensorTableModel::ScaleMinColumn).isEmpty());
    QCOMPARE(text(model, row, TensorTableModel::FmsNameColumn), QStringLiteral("base_model.layers.0.attn.in_proj.query"));
    QVERIFY(model.data(model.index(row, TensorTableModel::FmsNameColumn), Qt::ToolTipRole).toString().contains("qkv_fused"));
    QCOMPARE(text(model, qaWeight, TensorTableModel::FmsNameColumn), QStringLiteral("qa_head"));
}

// ---- ModuleTreeModel ----

void TestItemModels::moduleTreeBuildsNumericallyOrderedTree()
{
    QObject owner;
    ModuleTreeModel model;
    checkedProxy(&model, &owner);
    model.setTensors(treeRows());

    QCOMPARE(columnTexts(model, ModuleTreeModel::NameColumn), QStringList({"lm_head", "roberta"}));
    const QModelIndex layer = model.indexForName(QStringLiteral("roberta.encoder.layer"));
    QVERIFY(layer.isValid());
    QCOMPARE(columnTexts(model, ModuleTreeModel::NameColumn, layer), QStringList({"0", "1", "2", "10"}));
    const QModelIndex query = model.indexForName(QStringLiteral("roberta.encoder.layer.10.attention.self.query"));
    QCOMPARE(columnTexts(model, ModuleTreeModel::NameColumn, query), QStringList({"bias", "weight", "weight_scale"}));
    QCOMPARE(model.parent(query).data().toString(), QStringLiteral("self"));
    QCOMPARE(model.headerData(ModuleTreeModel::TensorCountColumn, Qt::Horizontal).toString(), QStringLiteral("Tensors"));
}

void TestItemModels::moduleTreeSummarisesDtypesAndCounts()
{
    QObject owner;
    ModuleTreeModel model;
    checkedProxy(&model, &owner);
    model.setTensors(treeRows());

    const auto cell = [&](const QString& name, int column) {
        const QModelIndex index = model.indexForName(name);
        return model.data(index.siblingAtColumn(column)).toString();
    };
    // query: weight 64 elements F8_E4M3, weight_scale 8 + bias 8 elements F32.
    const QString query = QStringLiteral("roberta.encoder.layer.0.attention.self.query");
    QCOMPARE(cell(query, ModuleTreeModel::DtypeColumn), QStringLiteral("F8_E4M3, F32"));
    QCOMPARE(cell(query, ModuleTreeModel::TensorCountColumn), QStringLiteral("3"));
    QCOMPARE(cell(query, ModuleTreeModel::ElementsColumn), QStringLiteral("80"));
    // roberta: 4 layers x (64 F8 + 16 F32) and the embedding's 800 F32 elements.
    QCOMPARE(cell(QStringLiteral("roberta"), ModuleTreeModel::DtypeColumn), QStringLiteral("F32, F8_E4M3"));
    QCOMPARE(cell(QStringLiteral("roberta"), ModuleTreeModel::TensorCountColumn), QStringLiteral("13"));
    QCOMPARE(cell(QStringLiteral("roberta"), ModuleTreeModel::ElementsColumn), QStringLiteral("1120"));
    QCOMPARE(cell(QStringLiteral("roberta.encoder"), ModuleTreeModel::TensorCountColumn), QStringLiteral("12"));
    QCOMPARE(cell(query + QStringLiteral(".weight"), ModuleTreeModel::DtypeColumn), QStringLiteral("F8_E4M3"));
    QCOMPARE(cell(query + QStringLiteral(".weight"), ModuleTreeModel::TensorCountColumn), QStringLiteral("1"));
    QCOMPARE(cell(QStringLiteral("lm_head"), ModuleTreeModel::DtypeColumn), QStringLiteral("BF16"));

    const QModelIndex count = model.indexForName(query).siblingAtColumn(ModuleTreeModel::TensorCountColumn);
    QVERIFY(isRightAligned(model, count));
    QCOMPARE(model.data(count, kSortRole).toDouble(), 3.0);
}

void TestItemModels::moduleTreeIndexForName_data()
{
    QTest::addColumn<QString>("name");
    QTest::addColumn<bool>("found");
    QTest::addColumn<bool>("tensor");
    QTest::addColumn<QString>("segment");

    QTest::newRow("tensor") << "roberta.encoder.layer.10.attention.self.query.weight" << true << true << "weight";
    QTest::newRow("module") << "roberta.encoder.layer.2" << true << false << "2";
    QTest::newRow("top level") << "lm_head" << true << false << "lm_head";
    QTest::newRow("absent layer") << "roberta.encoder.layer.3" << false << false << "";
    QTest::newRow("absent tensor") << "roberta.encoder.layer.0.attention.self.query.input_scale" << false << false
                                   << "";
    QTest::newRow("partial segment") << "roberta.enc" << false << false << "";
    QTest::newRow("empty") << "" << false << false << "";
}

void TestItemModels::moduleTreeIndexForName()
{
    QFETCH(QString, name);
    QFETCH(bool, found);
    QFETCH(bool, tensor);
    QFETCH(QString, segment);

    QObject owner;
    ModuleTreeModel model;
    checkedProxy(&model, &owner);
    model.setTensors(treeRows());

    const QModelIndex index = model.indexForName(name);
    QCOMPARE(index.isValid(), found);
    if (!found)
        return;
    QCOMPARE(index.column(), int(ModuleTreeModel::NameColumn));
    QCOMPARE(model.data(index).toString(), segment);
    QCOMPARE(model.data(index, kSubjectRole).toString(), name);
    QCOMPARE(model.data(index.siblingAtColumn(ModuleTreeModel::DtypeColumn), kSubjectRole).toString(), name);
    QCOMPARE(model.isTensor(index), tensor);
    QCOMPARE(model.hasChildren(index), !tensor);

    // Walking up the parents spells the name again.
    QStringList segments;
    for (QModelIndex i = index; i.isValid(); i = i.parent())
        segments.prepend(i.data().toString());
    QCOMPARE(segments.join(QLatin1Char('.')), name);
}

void TestItemModels::moduleTreeTensorThatIsAlsoAModule()
{
    QObject owner;
    ModuleTreeModel model;
    checkedProxy(&model, &owner);
    model.setTensors({{"a.b", "F32", {2}}, {"a.b.c", "F16", {3, 3}}});

    const QModelIndex b = model.indexForName(QStringLiteral("a.b"));
    QVERIFY(model.isTensor(b));
    QCOMPARE(model.rowCount(b), 1);
    QCOMPARE(model.data(b.siblingAtColumn(ModuleTreeModel::TensorCountColumn)).toString(), QStringLiteral("2"));
    QCOMPARE(model.data(b.siblingAtColumn(ModuleTreeModel::DtypeColumn)).toString(), QStringLiteral("F16, F32"));
    QCOMPARE(model.data(model.indexForName(QStringLiteral("a.b.c")), kSubjectRole).toString(), QStringLiteral("a.b.c"));

    model.clear();
    QCOMPARE(model.rowCount(), 0);
    QVERIFY(!model.indexForName(QStringLiteral("a.b")).isValid());
}

void TestItemModels::moduleTreeSortsAndFiltersRecursively()
{
    QObject owner;
    ModuleTreeModel model;
    QSortFilterProxyModel* proxy = checkedProxy(&model, &owner);
    model.setTensors(treeRows());

    const auto proxyLayer = [&] {
        return proxy->mapFromSource(model.indexForName(QStringLiteral("roberta.encoder.layer")));
    };
    proxy->sort(ModuleTreeModel::NameColumn, Qt::DescendingOrder);
    QCOMPARE(columnTexts(*proxy, ModuleTreeModel::NameColumn, proxyLayer()), QStringList({"10", "2", "1", "0"}));
    proxy->sort(ModuleTreeModel::NameColumn, Qt::AscendingOrder);
    QCOMPARE(columnTexts(*proxy, ModuleTreeModel::NameColumn, proxyLayer()), QStringList({"0", "1", "2", "10"}));
    // Sorted by the display text instead, "10" would come between "1" and "2".
    proxy->setSortRole(Qt::DisplayRole);
    proxy->sort(ModuleTreeModel::NameColumn, Qt::AscendingOrder);
    QCOMPARE(columnTexts(*proxy, ModuleTreeModel::NameColumn, proxyLayer()), QStringList({"0", "1", "10", "2"}));
    proxy->setSortRole(kSortRole);

    // Sorting the top level by element count: lm_head (100) before roberta (1120).
    proxy->sort(ModuleTreeModel::ElementsColumn, Qt::AscendingOrder);
    QCOMPARE(columnTexts(*proxy, ModuleTreeModel::NameColumn), QStringList({"lm_head", "roberta"}));
    proxy->sort(ModuleTreeModel::ElementsColumn, Qt::DescendingOrder);
    QCOMPARE(columnTexts(*proxy, ModuleTreeModel::NameColumn), QStringList({"roberta", "lm_head"}));

    // Recursive filtering keeps the ancestors of every match.
    proxy->setRecursiveFilteringEnabled(true);
    proxy->setFilterKeyColumn(ModuleTreeModel::NameColumn);
    proxy->setFilterFixedString(QStringLiteral("weight_scale"));
    QCOMPARE(columnTexts(*proxy, ModuleTreeModel::NameColumn), QStringList({"roberta"}));
    QCOMPARE(proxy->rowCount(proxyLayer()), 4);
    const QModelIndex query =
        proxy->mapFromSource(model.indexForName(QStringLiteral("roberta.encoder.layer.2.attention.self.query")));
    QVERIFY(query.isValid());
    QCOMPARE(columnTexts(*proxy, ModuleTreeModel::NameColumn, query), QStringList({"weight_scale"}));
    QVERIFY(!proxy->mapFromSource(model.indexForName(QStringLiteral("roberta.embeddings"))).isValid());

    // A reset under an active filter.
    model.setTensors({{"lm_head.dense.weight_scale", "F32", {1}}, {"lm_head.dense.weight", "F8_E4M3", {4, 4}}});
    QCOMPARE(columnTexts(*proxy, ModuleTreeModel::NameColumn), QStringList({"lm_head"}));
}

// ---- DiagnosticsModel ----

namespace {

std::vector<Finding> someFindings()
{
    return {
        finding(Severity::Warning, "heavy-clipping", kQuery, "Many weight codes sit at +-448."),
        finding(Severity::Error, "scale-shape", kQuery + ".weight_scale", "weight_scale has shape [3] where [768, 1] is expected."),
        finding(Severity::Info, "weight-only", "", "Activations are not quantized."),
        finding(Severity::Error, "missing-scale", kKey, "The weight is F8_E4M3 but weight_scale is missing."),
        finding(Severity::Warning, "fp16-range", "lm_head.dense", "A scale exceeds fp16's range."),
        finding(Severity::Warning, "heavy-underflow", kKey, "Many weight codes are zero or subnormal."),
    };
}

} // namespace

void TestItemModels::diagnosticsShowsFindingsAndCounts()
{
    QObject owner;
    DiagnosticsModel model;
    checkedProxy(&model, &owner);
    QCOMPARE(model.counts().total(), 0);
    model.setFindings(someFindings());

    QCOMPARE(model.rowCount(), 6);
    const SeverityCounts counts = model.counts();
    QCOMPARE(counts.errors, 2);
    QCOMPARE(counts.warnings, 3);
    QCOMPARE(counts.infos, 1);

    QCOMPARE(text(model, 1, DiagnosticsModel::SeverityColumn), QStringLiteral("Error"));
    QCOMPARE(text(model, 1, DiagnosticsModel::CodeColumn), QStringLiteral("scale-shape"));
    QCOMPARE(text(model, 1, DiagnosticsModel::SubjectColumn), QString::fromStdString(kQuery + ".weight_scale"));
    QCOMPARE(text(model, 1, DiagnosticsModel::MessageColumn),
             QStringLiteral("weight_scale has shape [3] where [768, 1] is expected."));
    QCOMPARE(text(model, 1, DiagnosticsModel::MessageColumn, kSubjectRole), QString::fromStdString(kQuery + ".weight_scale"));
    QVERIFY(!model.data(model.index(2, DiagnosticsModel::CodeColumn), kSubjectRole).isValid());
    QCOMPARE(model.headerData(DiagnosticsModel::MessageColumn, Qt::Horizontal).toString(), QStringLiteral("Message"));

    // Each severity carries the style's matching message-box icon, and only in its own column.
    const auto iconImage = [](const QIcon& icon) { return icon.pixmap(16, 16).toImage(); };
    const QStyle::StandardPixmap expected[] = {QStyle::SP_MessageBoxWarning, QStyle::SP_MessageBoxCritical,
                                               QStyle::SP_MessageBoxInformation};
    for (int row = 0; row < 3; ++row) {
        const QIcon icon = model.data(model.index(row, DiagnosticsModel::SeverityColumn), Qt::DecorationRole).value<QIcon>();
        QVERIFY(!icon.isNull());
        QCOMPARE(iconImage(icon), iconImage(QApplication::style()->standardIcon(expected[row])));
    }
    QVERIFY(!model.data(model.index(0, DiagnosticsModel::CodeColumn), Qt::DecorationRole).isValid());
    QVERIFY(iconImage(QApplication::style()->standardIcon(QStyle::SP_MessageBoxWarning)) !=
            iconImage(QApplication::style()->standardIcon(QStyle::SP_MessageBoxCritical)));

    model.setFindings({finding(Severity::Info, "note", "x", "y")});
    QCOMPARE(model.counts().errors, 0);
    QCOMPARE(model.counts().infos, 1);
    model.clear();
    QCOMPARE(model.counts().total(), 0);
    QCOMPARE(model.rowCount(), 0);
}

void TestItemModels::diagnosticsSortsBySeverityRank()
{
    QObject owner;
    DiagnosticsModel model;
    QSortFilterProxyModel* proxy = checkedProxy(&model, &owner);
    model.setFindings(someFindings());

    proxy->sort(DiagnosticsModel::SeverityColumn, Qt::AscendingOrder);
    QCOMPARE(columnTexts(*proxy, DiagnosticsModel::SeverityColumn),
             QStringList({"Error", "Error", "Warning", "Warning", "Warning", "Info"}));
    QCOMPARE(columnTexts(*proxy, DiagnosticsModel::SeverityColumn, {}, kSortRole),
             QStringList({"0", "0", "1", "1", "1", "2"}));
    // The sort is stable: errors keep their input order.
    QCOMPARE(text(*proxy, 0, DiagnosticsModel::CodeColumn), QStringLiteral("scale-shape"));
    QCOMPARE(text(*proxy, 1, DiagnosticsModel::CodeColumn), QStringLiteral("missing-scale"));
    proxy->sort(DiagnosticsModel::SeverityColumn, Qt::DescendingOrder);
    QCOMPARE(text(*proxy, 0, DiagnosticsModel::SeverityColumn), QStringLiteral("Info"));

    proxy->sort(DiagnosticsModel::CodeColumn, Qt::AscendingOrder);
    QCOMPARE(columnTexts(*proxy, DiagnosticsModel::CodeColumn),
             QStringList({"fp16-range", "heavy-clipping", "heavy-underflow", "missing-scale", "scale-shape", "weight-only"}));
}

void TestItemModels::diagnosticsFiltersBySubject()
{
    QObject owner;
    DiagnosticsModel model;
    QSortFilterProxyModel* proxy = checkedProxy(&model, &owner);
    model.setFindings(someFindings());
    proxy->setFilterKeyColumn(DiagnosticsModel::SubjectColumn);
    proxy->setFilterFixedString(QString::fromStdString(kKey));
    QCOMPARE(columnTexts(*proxy, DiagnosticsModel::CodeColumn), QStringList({"missing-scale", "heavy-underflow"}));
}

// ---- AnswersModel ----

void TestItemModels::answersSideBySide()
{
    QObject owner;
    AnswersModel model;
    checkedProxy(&model, &owner);
    model.setAnswers({spanAnswer("the Eiffel Tower", 0.8f, 12, 28), spanAnswer("Eiffel Tower", 0.15f, 16, 28),
                      spanAnswer("Paris", 0.05f, 40, 45)},
                     {spanAnswer("Eiffel Tower.", 0.7f, 16, 29), nullAnswer(0.3f)}, true);

    QCOMPARE(model.rowCount(), 3);
    QCOMPARE(model.columnCount(), 8);
    QCOMPARE(columnTexts(model, AnswersModel::RankColumn), QStringList({"1", "2", "3"}));
    QCOMPARE(columnTexts(model, AnswersModel::RunAnswerColumn),
             QStringList({"the Eiffel Tower", "Eiffel Tower", "Paris"}));
    QCOMPARE(columnTexts(model, AnswersModel::RunScoreColumn), QStringList({"0.8000", "0.1500", "0.0500"}));
    QCOMPARE(columnTexts(model, AnswersModel::RunSpanColumn), QStringList({"12-28", "16-28", "40-45"}));
    QCOMPARE(columnTexts(model, AnswersModel::ReferenceAnswerColumn), QStringList({"Eiffel Tower.", "(no answer)", ""}));
    QCOMPARE(columnTexts(model, AnswersModel::ReferenceScoreColumn), QStringList({"0.7000", "0.3000", ""}));
    QCOMPARE(columnTexts(model, AnswersModel::ReferenceSpanColumn), QStringList({"16-29", "", ""}));
    // Rank 2 differs; rank 3 has no reference answer to agree with.
    QCOMPARE(columnTexts(model, AnswersModel::AgreeColumn), QStringList({"yes", "no", ""}));

    const QModelIndex score = model.index(0, AnswersModel::RunScoreColumn);
    QCOMPARE(model.data(score, kProbabilityRole).toDouble(), double(0.8f));
    QVERIFY(model.data(score, Qt::ToolTipRole).toString().contains(QStringLiteral("0.8")));
    QVERIFY(isRightAligned(model, score));
    QVERIFY(!model.data(model.index(0, AnswersModel::RunAnswerColumn), kProbabilityRole).isValid());
    QVERIFY(!model.data(model.index(2, AnswersModel::ReferenceScoreColumn), kProbabilityRole).isValid());
    QCOMPARE(model.headerData(AnswersModel::ReferenceSpanColumn, Qt::Horizontal).toString(),
             QStringLiteral("Reference span"));
    // The run side is named by the mode that produced it, not "run".
    QCOMPARE(model.headerData(AnswersModel::RunAnswerColumn, Qt::Horizontal).toString(), QStringLiteral("FP8 answer"));
    QSignalSpy headers(&model, &QAbstractItemModel::headerDataChanged);
    model.setRunLabel(QStringLiteral("Dequant"));
    QCOMPARE(headers.count(), 1);
    QCOMPARE(model.headerData(AnswersModel::RunScoreColumn, Qt::Horizontal).toString(), QStringLiteral("Dequant score"));
    QVERIFY(model.agreesAt(0));
    QVERIFY(!model.agreesAt(2));
}

void TestItemModels::answersAgree_data()
{
    QTest::addColumn<QString>("run");
    QTest::addColumn<bool>("runNull");
    QTest::addColumn<QString>("reference");
    QTest::addColumn<bool>("referenceNull");
    QTest::addColumn<QString>("agree");

    QTest::newRow("article and punctuation ignored") << "the Eiffel Tower" << false << "Eiffel Tower." << false << "yes";
    QTest::newRow("case ignored") << "PARIS" << false << "paris" << false << "yes";
    QTest::newRow("different answers") << "Eiffel Tower" << false << "Paris" << false << "no";
    QTest::newRow("both null") << "" << true << "" << true << "yes";
    QTest::newRow("null against a span") << "" << true << "Paris" << false << "no";
    QTest::newRow("null against a span normalising to nothing") << "" << true << "the" << false << "no";
    QTest::newRow("span against null") << "Paris" << false << "" << true << "no";
}

void TestItemModels::answersAgree()
{
    QFETCH(QString, run);
    QFETCH(bool, runNull);
    QFETCH(QString, reference);
    QFETCH(bool, referenceNull);
    QFETCH(QString, agree);

    AnswersModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    const auto make = [](const QString& text, bool isNull) {
        return isNull ? nullAnswer(0.5f) : spanAnswer(text.toStdString(), 0.5f, 0, int(text.size()));
    };
    model.setAnswers({make(run, runNull)}, {make(reference, referenceNull)}, true);
    QCOMPARE(text(model, 0, AnswersModel::AgreeColumn), agree);
    if (runNull)
        QCOMPARE(text(model, 0, AnswersModel::RunAnswerColumn), QStringLiteral("(no answer)"));
    if (referenceNull) {
        QCOMPARE(text(model, 0, AnswersModel::ReferenceAnswerColumn), QStringLiteral("(no answer)"));
        QVERIFY(text(model, 0, AnswersModel::ReferenceSpanColumn).isEmpty());
    }
}

void TestItemModels::answersWithoutReference()
{
    QObject owner;
    AnswersModel model;
    checkedProxy(&model, &owner);
    // The reference list is ignored when there is no reference.
    model.setAnswers({nullAnswer(0.6f), spanAnswer("Paris", 0.4f, 40, 45)}, {spanAnswer("Paris", 0.9f, 40, 45)}, false);

    QVERIFY(!model.hasReference());
    QCOMPARE(model.rowCount(), 2);
    QCOMPARE(columnTexts(model, AnswersModel::RunAnswerColumn), QStringList({"(no answer)", "Paris"}));
    QCOMPARE(columnTexts(model, AnswersModel::RunSpanColumn), QStringList({"", "40-45"}));
    for (int column : {AnswersModel::ReferenceAnswerColumn, AnswersModel::ReferenceScoreColumn,
                       AnswersModel::ReferenceSpanColumn, AnswersModel::AgreeColumn})
        QCOMPARE(columnTexts(model, column), QStringList({"", ""}));

    // More reference answers than run answers: the rows follow the longer list.
    model.setAnswers({spanAnswer("Paris", 0.9f, 40, 45)},
                     {spanAnswer("Paris", 0.8f, 40, 45), spanAnswer("France", 0.2f, 50, 56)}, true);
    QCOMPARE(model.rowCount(), 2);
    QCOMPARE(columnTexts(model, AnswersModel::RunAnswerColumn), QStringList({"Paris", ""}));
    QCOMPARE(columnTexts(model, AnswersModel::ReferenceAnswerColumn), QStringList({"Paris", "France"}));
    model.clear();
    QCOMPARE(model.rowCount(), 0);
}

void TestItemModels::answersSortByScore()
{
    QObject owner;
    AnswersModel model;
    QSortFilterProxyModel* proxy = checkedProxy(&model, &owner);
    // Not best-first on purpose; 2e-05 shows in scientific notation and would sort last as text.
    model.setAnswers({spanAnswer("a", 0.3f, 0, 1), spanAnswer("b", 2e-05f, 2, 3), spanAnswer("c", 0.5f, 4, 5)}, {},
                     false);
    QCOMPARE(text(model, 1, AnswersModel::RunScoreColumn), QStringLiteral("2.00e-05"));
    proxy->sort(AnswersModel::RunScoreColumn, Qt::AscendingOrder);
    QCOMPARE(columnTexts(*proxy, AnswersModel::RunAnswerColumn), QStringList({"b", "a", "c"}));
    proxy->sort(AnswersModel::RankColumn, Qt::DescendingOrder);
    QCOMPARE(columnTexts(*proxy, AnswersModel::RunAnswerColumn), QStringList({"c", "b", "a"}));
}

// ---- MaskPredictionsModel ----

namespace {

std::vector<std::vector<MaskPrediction>> runPredictions()
{
    return {{prediction(6342, " Paris", 0.6f), prediction(32826, "Paris", 0.3f), prediction(21130, " Lyon", 2e-05f)},
            {prediction(4758, " cat", 0.9f)}};
}

std::vector<std::vector<MaskPrediction>> referencePredictions()
{
    return {{prediction(6342, " Paris", 0.7f)}, {prediction(4758, " cat", 0.8f), prediction(2335, " dog", 0.15f)}};
}

} // namespace

void TestItemModels::maskPredictionsShowTokensAndProbabilities()
{
    QObject owner;
    MaskPredictionsModel model;
    checkedProxy(&model, &owner);
    model.setPredictions(runPredictions(), referencePredictions(), true, {5, 9});

    // Mask 1 has 3 ranks (the run's list is longer), mask 2 has 2 (the reference's is longer).
    QCOMPARE(model.rowCount(), 5);
    QCOMPARE(columnTexts(model, MaskPredictionsModel::MaskColumn), QStringList({"1", "1", "1", "2", "2"}));
    QCOMPARE(columnTexts(model, MaskPredictionsModel::RankColumn), QStringList({"1", "2", "3", "1", "2"}));
    const QString space(QChar(0x2423));
    QCOMPARE(columnTexts(model, MaskPredictionsModel::RunTokenColumn),
             QStringList({space + "Paris", "Paris", space + "Lyon", space + "cat", ""}));
    QVERIFY(text(model, 0, MaskPredictionsModel::RunTokenColumn) != text(model, 1, MaskPredictionsModel::RunTokenColumn));
    QCOMPARE(columnTexts(model, MaskPredictionsModel::RunProbabilityColumn),
             QStringList({"0.6000", "0.3000", "2.00e-05", "0.9000", ""}));
    QCOMPARE(columnTexts(model, MaskPredictionsModel::ReferenceTokenColumn),
             QStringList({space + "Paris", "", "", space + "cat", space + "dog"}));
    QCOMPARE(columnTexts(model, MaskPredictionsModel::ReferenceProbabilityColumn),
             QStringList({"0.7000", "", "", "0.8000", "0.1500"}));

    QCOMPARE(text(model, 0, MaskPredictionsModel::RunTokenColumn, Qt::ToolTipRole),
             QStringLiteral("\" Paris\" (token id 6342)"));
    QCOMPARE(text(model, 3, MaskPredictionsModel::MaskColumn, Qt::ToolTipRole),
             QStringLiteral("Mask 2 at token position 9"));
    QCOMPARE(model.data(model.index(2, MaskPredictionsModel::RunProbabilityColumn), kProbabilityRole).toDouble(),
             double(2e-05f));
    QCOMPARE(model.data(model.index(4, MaskPredictionsModel::ReferenceProbabilityColumn), kProbabilityRole).toDouble(),
             double(0.15f));
    QVERIFY(!model.data(model.index(0, MaskPredictionsModel::RunTokenColumn), kProbabilityRole).isValid());
    QVERIFY(!model.data(model.index(4, MaskPredictionsModel::RunProbabilityColumn), kProbabilityRole).isValid());
    QVERIFY(isRightAligned(model, model.index(0, MaskPredictionsModel::RunProbabilityColumn)));
    QVERIFY(!isRightAligned(model, model.index(0, MaskPredictionsModel::RunTokenColumn)));

    QCOMPARE(MaskPredictionsModel::visibleToken("\nx y"), QString(QChar(0x21B5)) + "x" + space + "y");
    QCOMPARE(MaskPredictionsModel::visibleToken(""), QStringLiteral("(empty)"));
}

void TestItemModels::maskPredictionsSortByProbability()
{
    QObject owner;
    MaskPredictionsModel model;
    QSortFilterProxyModel* proxy = checkedProxy(&model, &owner);
    model.setPredictions(runPredictions(), referencePredictions(), true);

    proxy->sort(MaskPredictionsModel::RunProbabilityColumn, Qt::AscendingOrder);
    // 2e-05 < 0.3 < 0.6 < 0.9, and the row without a run prediction last.
    QCOMPARE(columnTexts(*proxy, MaskPredictionsModel::RunProbabilityColumn),
             QStringList({"2.00e-05", "0.3000", "0.6000", "0.9000", ""}));

    proxy->setFilterKeyColumn(MaskPredictionsModel::ReferenceTokenColumn);
    proxy->setFilterFixedString(QStringLiteral("cat"));
    QCOMPARE(proxy->rowCount(), 1);
    QCOMPARE(text(*proxy, 0, MaskPredictionsModel::MaskColumn), QStringLiteral("2"));
}

void TestItemModels::maskPredictionsWithoutReference()
{
    QObject owner;
    MaskPredictionsModel model;
    checkedProxy(&model, &owner);
    model.setPredictions(runPredictions(), referencePredictions(), false);
    QVERIFY(!model.hasReference());
    QCOMPARE(model.rowCount(), 4);
    QCOMPARE(columnTexts(model, MaskPredictionsModel::ReferenceTokenColumn), QStringList({"", "", "", ""}));
    model.clear();
    QCOMPARE(model.rowCount(), 0);
}

// ---- LayerMetricsModel ----

void TestItemModels::layerMetricsFormats_data()
{
    QTest::addColumn<QString>("capturePoint");
    QTest::addColumn<int>("column");
    QTest::addColumn<QString>("display");

    const QString output = QString::fromStdString(kQuery + ".output");
    QTest::newRow("infinite SQNR") << "roberta.embeddings.output" << int(LayerMetricsModel::SqnrColumn) << "inf";
    QTest::newRow("SQNR two decimals") << output << int(LayerMetricsModel::SqnrColumn) << "28.46";
    QTest::newRow("cosine six decimals") << output << int(LayerMetricsModel::CosineColumn) << "0.998765";
    QTest::newRow("relative L2") << output << int(LayerMetricsModel::RelativeL2Column) << "1.235e-02";
    QTest::newRow("max abs error") << output << int(LayerMetricsModel::MaxAbsErrorColumn) << "2.500e-01";
    QTest::newRow("MSE") << output << int(LayerMetricsModel::MseColumn) << "1.500e-04";
    QTest::newRow("kind") << output << int(LayerMetricsModel::KindColumn) << "linear-output";
    QTest::newRow("layer") << output << int(LayerMetricsModel::LayerColumn) << "0";
    QTest::newRow("no layer for embeddings") << "roberta.embeddings.output" << int(LayerMetricsModel::LayerColumn) << "";
    QTest::newRow("kind of a layer output") << "roberta.encoder.layer.1.output" << int(LayerMetricsModel::KindColumn)
                                            << "layer-output";
}

void TestItemModels::layerMetricsFormats()
{
    QFETCH(QString, capturePoint);
    QFETCH(int, column);
    QFETCH(QString, display);

    QObject owner;
    LayerMetricsModel model;
    checkedProxy(&model, &owner);
    model.setPoints(comparisonPoints());
    const int row = model.rowForCapturePoint(capturePoint);
    QVERIFY(row >= 0);
    QCOMPARE(text(model, row, LayerMetricsModel::CapturePointColumn), capturePoint);
    QCOMPARE(text(model, row, column), display);
    QCOMPARE(model.data(model.index(row, column), kSubjectRole).toString(),
             QString::fromStdString(model.pointAt(row)->module));
    QCOMPARE(isRightAligned(model, model.index(row, column)), column >= LayerMetricsModel::LayerColumn);
}

void TestItemModels::layerMetricsSortsSqnrNumericallyWithInfinityOnTop()
{
    QObject owner;
    LayerMetricsModel model;
    QSortFilterProxyModel* proxy = checkedProxy(&model, &owner);
    model.setPoints(comparisonPoints());

    QCOMPARE(model.headerData(LayerMetricsModel::SqnrColumn, Qt::Horizontal).toString(), QStringLiteral("SQNR (dB)"));
    const QModelIndex infinite = model.index(0, LayerMetricsModel::SqnrColumn);
    QVERIFY(std::isinf(model.data(infinite, kSortRole).toDouble()));
    QCOMPARE(model.data(infinite, Qt::ToolTipRole).toString(), QStringLiteral("inf"));
    QCOMPARE(text(model, 2, LayerMetricsModel::SqnrColumn, Qt::ToolTipRole), QStringLiteral("28.456"));

    proxy->sort(LayerMetricsModel::SqnrColumn, Qt::AscendingOrder);
    QCOMPARE(columnTexts(*proxy, LayerMetricsModel::SqnrColumn),
             QStringList({"9.50", "10.00", "28.46", "35.12", "100.25", "inf"}));
    proxy->sort(LayerMetricsModel::SqnrColumn, Qt::DescendingOrder);
    QCOMPARE(text(*proxy, 0, LayerMetricsModel::CapturePointColumn), QStringLiteral("roberta.embeddings.output"));
    proxy->sort(LayerMetricsModel::LayerColumn, Qt::AscendingOrder);
    QCOMPARE(columnTexts(*proxy, LayerMetricsModel::LayerColumn), QStringList({"", "", "0", "0", "0", "1"}));
}

void TestItemModels::layerMetricsOutputsOnly()
{
    QObject owner;
    LayerMetricsModel model;
    checkedProxy(&model, &owner);
    model.setOutputsOnly(true);
    model.setPoints(comparisonPoints());

    QVERIFY(model.outputsOnly());
    QCOMPARE(columnTexts(model, LayerMetricsModel::CapturePointColumn),
             QStringList({QString::fromStdString(kQuery + ".output"), "roberta.encoder.layer.0.output",
                          "roberta.encoder.layer.1.output", "qa_outputs.output"}));
    QCOMPARE(model.pointAt(1)->name, std::string("roberta.encoder.layer.0.output"));
    QCOMPARE(model.rowForCapturePoint(QString::fromStdString(kQuery + ".input")), -1);
    QVERIFY(model.pointAt(4) == nullptr);

    QSignalSpy resets(&model, &QAbstractItemModel::modelReset);
    model.setOutputsOnly(false);
    QCOMPARE(resets.count(), 1);
    QCOMPARE(model.rowCount(), 6);
    QCOMPARE(model.rowForCapturePoint(QString::fromStdString(kQuery + ".input")), 1);
    model.setOutputsOnly(false);
    QCOMPARE(resets.count(), 1);
    model.clear();
    QCOMPARE(model.rowCount(), 0);
}

// ---- ProbabilityBarDelegate ----

namespace {

const QColor kHighlight(0, 0, 255);

QStyleOptionViewItem cellOption(const QRect& rect)
{
    QStyleOptionViewItem option;
    option.rect = rect;
    option.state = QStyle::State_Enabled;
    option.palette = QApplication::palette();
    option.palette.setColor(QPalette::Highlight, kHighlight);
    option.palette.setColor(QPalette::HighlightedText, Qt::white);
    option.palette.setColor(QPalette::Base, Qt::white);
    option.direction = Qt::LeftToRight;
    return option;
}

bool isTinted(const QImage& image, int x, int y)
{
    const QColor pixel = image.pixelColor(x, y);
    return pixel.blue() > 200 && pixel.red() < 230;
}

} // namespace

void TestItemModels::delegatePaintsBarProportionalToProbability_data()
{
    QTest::addColumn<float>("probability");
    QTest::addColumn<int>("lastTintedColumn"); // -1: no bar

    // The bar covers round(p * 198) pixels starting at x = 1 of a 200-pixel cell (1-pixel margin).
    QTest::newRow("half") << 0.5f << 99;
    QTest::newRow("quarter") << 0.25f << 50;
    QTest::newRow("full") << 1.0f << 198;
    QTest::newRow("zero") << 0.0f << -1;
}

void TestItemModels::delegatePaintsBarProportionalToProbability()
{
    QFETCH(float, probability);
    QFETCH(int, lastTintedColumn);

    MaskPredictionsModel model;
    model.setPredictions({{prediction(1, " x", probability)}}, {}, false);
    const QModelIndex index = model.index(0, MaskPredictionsModel::RunProbabilityColumn);
    ProbabilityBarDelegate delegate;

    const QRect cell(0, 0, 200, 40);
    QImage image = whiteImage(cell.size());
    {
        QPainter painter(&image);
        delegate.paint(&painter, cellOption(cell), index);
    }
    // Row 3 lies inside the bar but above the vertically centred text.
    const int y = 3;
    if (lastTintedColumn < 0) {
        for (int x = 0; x < cell.width(); x += 10)
            QVERIFY2(!isTinted(image, x, y), qPrintable(QStringLiteral("x = %1").arg(x)));
        return;
    }
    QVERIFY(!isTinted(image, 0, y));
    QVERIFY(isTinted(image, 1, y));
    QVERIFY(isTinted(image, lastTintedColumn, y));
    if (lastTintedColumn + 1 < cell.width())
        QVERIFY(!isTinted(image, lastTintedColumn + 1, y));
    QCOMPARE(ProbabilityBarDelegate::barRect(QRect(1, 1, 198, 38), probability).right(), lastTintedColumn);
}

void TestItemModels::delegateLeavesCellsWithoutProbabilityAlone()
{
    MaskPredictionsModel model;
    model.setPredictions({{prediction(1, " x", 0.9f)}}, {}, false);
    ProbabilityBarDelegate delegate;
    const QRect cell(0, 0, 200, 40);
    // The token column has no probability; an empty reference cell has no data at all.
    for (int column : {int(MaskPredictionsModel::RunTokenColumn), int(MaskPredictionsModel::ReferenceProbabilityColumn)}) {
        QImage image = whiteImage(cell.size());
        {
            QPainter painter(&image);
            delegate.paint(&painter, cellOption(cell), model.index(0, column));
        }
        for (int x = 0; x < cell.width(); x += 10)
            QVERIFY(!isTinted(image, x, 3));
    }
    QVERIFY(ProbabilityBarDelegate::barRect(QRect(0, 0, 100, 10), std::nan("")).isEmpty());
    QCOMPARE(ProbabilityBarDelegate::barRect(QRect(0, 0, 100, 10), 7.0).width(), 100);
    QCOMPARE(ProbabilityBarDelegate::barRect(QRect(0, 0, 100, 10), 0.3, Qt::RightToLeft), QRect(70, 0, 30, 10));
}

void TestItemModels::delegatePaintsSelectedCells()
{
    AnswersModel model;
    model.setAnswers({spanAnswer("Paris", 0.5f, 0, 5)}, {}, false);
    ProbabilityBarDelegate delegate;
    const QRect cell(0, 0, 200, 40);
    QStyleOptionViewItem option = cellOption(cell);
    option.state |= QStyle::State_Selected;
    option.showDecorationSelected = true;
    QImage image = whiteImage(cell.size());
    {
        QPainter painter(&image);
        delegate.paint(&painter, option, model.index(0, AnswersModel::RunScoreColumn));
    }
    // On the selection the bar lightens the highlight: inside and outside the bar differ.
    QVERIFY(image.pixelColor(50, 3) != image.pixelColor(150, 3));
    QCOMPARE(image.pixelColor(150, 3), kHighlight);
}

QTEST_MAIN(TestItemModels)
#include "test_item_models.moc"
