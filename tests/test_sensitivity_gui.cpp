// The Sensitivity tab and the "run in float" what-if (issue 15, item 5) driven as a user would, on
// the tiny checkpoint with one planted defect that test_sensitivity uses (one Linear's static
// input_scale 64x too small, so its input clips): the sweep's bars fill in as entries arrive, Cancel
// keeps what finished, clicking a bar selects that Linear in the Model, Errors and Scales panels,
// toggling the Linear to float in the Model tree reruns the question with the same logits as an
// independent in-process run with that override (and the status bar, the stamps and the report
// say so), clearing restores the baseline bit for bit, and Save Fixed Checkpoint writes a folder
// whose config ignores the Linear. The granularity box offers (and starts at) "per unit": a q/k/v
// row saves all three Linears, and the line under the suggestion names the consumers.
#include <QtTest>

#include <cmath>

#include <QComboBox>
#include <QTableWidget>

#include <atomic>

#include <nlohmann/json.hpp>

#include <QAbstractItemModel>
#include <QComboBox>
#include <QFileDialog>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QTabWidget>
#include <QTableView>
#include <QTableWidget>
#include <QTreeView>

#include <qcustomplot.h>

#include "charts/chart_view.h"
#include "engine/compute_threads.h"
#include "main_window.h"
#include "model/checkpoint.h"
#include "engine/encoder_model.h"
#include "models/consumers_model.h"
#include "models/layer_metrics_model.h"
#include "models/module_tree_model.h"
#include "models/tensor_table_model.h"
#include "panels/ask_panel.h"
#include "panels/errors_panel.h"
#include "panels/fill_mask_panel.h"
#include "panels/model_panel.h"
#include "panels/scales_panel.h"
#include "panels/sensitivity_panel.h"
#include "stale_banner.h"
#include "support/decibel_figures.h"
#include "support/file_dialog_answer.h"
#include "support/fixtures.h"
#include "analysis/verdict.h"
#include "tasks/compare_runs.h"
#include "panels/triage_panel.h"
#include "tasks/sensitivity_words.h"

using namespace scalescope;
using namespace scalescope::ui;
using namespace scalescope::testing;
using json = nlohmann::json;

namespace {

const QString kDefect = QStringLiteral("roberta.encoder.layer.0.intermediate.dense");
const char* kQuestion = "what is the capital of France ?";
const char* kContext = "Paris is the capital of France . the cat sat on the mat . a dog sat on the cat";

using Outcome = std::shared_ptr<const AskOutcome>;
using Sweep = std::shared_ptr<const SensitivityResult>;

json readJson(const QString& path)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return nullptr;
    return json::parse(file.readAll().toStdString());
}

// The float column's cell of a module in the Model tree, as the view's (sorting) model holds it.
QModelIndex floatCell(ModelPanel* panel, const QString& module)
{
    auto* proxy = qobject_cast<QSortFilterProxyModel*>(panel->treeView()->model());
    return proxy->mapFromSource(panel->treeModel()->indexForName(module).siblingAtColumn(ModuleTreeModel::FloatColumn));
}

} // namespace

class TestSensitivityGui : public QObject {
    Q_OBJECT
    std::string float_, defect_, mlmFloat_, mlmFp8_, hfOnlyFix_;

    bool idle(MainWindow& window) { return QTest::qWaitFor([&] { return !window.session()->busy(); }, 60000); }

    // Opens the defect with its float reference and asks the question: the state every test starts from.
    Outcome openAndAsk(MainWindow& window) { return openAndAsk(window, defect_); }

    Outcome openAndAsk(MainWindow& window, const std::string& checkpoint)
    {
        QSignalSpy ready(&window, &MainWindow::checkpointReady);
        window.openCheckpoint(QString::fromStdString(checkpoint));
        if (!ready.wait(60000))
            return nullptr;
        QSignalSpy reference(window.session(), &WorkbenchSession::referenceChanged);
        window.setReference(QString::fromStdString(float_));
        if (!reference.wait(60000) || !idle(window))
            return nullptr;
        window.askPanel()->setInputs(kQuestion, kContext);
        QSignalSpy answered(window.session(), &WorkbenchSession::answered);
        QTest::mouseClick(window.askPanel()->askButton(), Qt::LeftButton);
        if (!answered.wait(60000) || !idle(window))
            return nullptr;
        return answered.takeFirst().at(0).value<Outcome>();
    }

    // Runs the sweep from the panel at that granularity ("" leaves the box as it is).
    Sweep sweep(MainWindow& window, const QString& granularity = QStringLiteral("linear"))
    {
        window.tabs()->setCurrentWidget(window.sensitivityPanel());
        QComboBox* box = window.sensitivityPanel()->granularityBox();
        if (!granularity.isEmpty())
            box->setCurrentIndex(box->findData(granularity));
        QSignalSpy finished(window.session(), &WorkbenchSession::sensitivityFinished);
        QTest::mouseClick(window.sensitivityPanel()->runButton(), Qt::LeftButton);
        if (!finished.wait(120000) || !idle(window))
            return nullptr;
        return finished.takeFirst().at(0).value<Sweep>();
    }

    // Clicks Save Fixed Checkpoint and answers its dialog with dst; true once the folder is written.
    bool saveFixedCheckpoint(MainWindow& window, const QString& dst)
    {
        const FileDialogAnswer answer(dst); // the save dialog is modal
        QSignalSpy kept(window.session(), &WorkbenchSession::keptFloat);
        QTest::mouseClick(window.sensitivityPanel()->saveButton(), Qt::LeftButton);
        return kept.wait(60000) && kept.takeFirst().at(0).toString() == dst;
    }

    // The question answered in-process with these Linears float: the independent run the GUI's
    // what-if must equal bit for bit.
    ComparisonResult inProcess(const QStringList& floatLinears)
    {
        auto run = EncoderModel::load(defect_);
        auto reference = EncoderModel::load(float_);
        ComparisonInput input;
        input.question = kQuestion;
        input.context = kContext;
        for (const QString& module : floatLinears)
            input.runs.run.overrides.modules[module.toStdString()] = Precision::Float;
        return compareRuns(*run, reference.get(), input);
    }

private slots:
    void initTestCase()
    {
        QStandardPaths::setTestModeEnabled(true);
        QSettings().clear();
        setComputeThreads(2);
        const std::string root = makeTempDir("sens-gui");
        float_ = root + "/float";
        TinyModelSpec spec;
        spec.seed = 4242;
        writeTinyFloatCheckpoint(float_, spec);
        // Static scales calibrated on the question itself, so only the planted defect clips.
        const auto checkpoint = Checkpoint::open(float_);
        const std::vector<int64_t> ids = buildQaWindows(checkpoint->tokenizer(), kQuestion, kContext, {}).front().encoding.ids;
        Fp8Scheme scheme;
        scheme.activations = "tensor";
        Fp8Edits planted;
        planted.inputScaleFactors[kDefect.toStdString()] = 1.0f / 64.0f;
        defect_ = root + "/defect";
        writeTinyFp8Checkpoint(float_, defect_, scheme, ids, planted);
        spec.architecture = "RobertaForMaskedLM";
        mlmFloat_ = root + "/mlm-float";
        writeTinyFloatCheckpoint(mlmFloat_, spec);
        mlmFp8_ = root + "/mlm-fp8";
        writeTinyFp8Checkpoint(mlmFloat_, mlmFp8_, {"channel", "token", "F32"});
        // An earlier fix as keep-float used to write it: a Linear float, listed by its HF name only,
        // which the AIU stack builds as FP8 with an uninitialised scale.
        Fp8Edits hfOnly;
        hfOnly.keepFloat = {"roberta.encoder.layer.1.intermediate.dense"};
        hfOnlyFix_ = root + "/hf-only-fix";
        writeTinyFp8Checkpoint(float_, hfOnlyFix_, {"channel", "token", "F32"}, {0, 5, 6, 7, 8, 9, 2}, hfOnly);
    }

    void sweepFillsBarsAsItRunsAndRanksTheDefectFirst()
    {
        MainWindow window;
        window.show();
        QVERIFY(openAndAsk(window));
        SensitivityPanel* panel = window.sensitivityPanel();
        // Recorded after the panel has taken each entry (it connected first): bars and rows so far,
        // and whether the live chart already means what the finished one does: the same two
        // series, a title that names the target, the bars in rank order of dB recovered.
        std::vector<std::size_t> bars, rows;
        QStringList liveProblems;
        connect(window.session(), &WorkbenchSession::sensitivityEntry, this, [&] {
            const ChartData& live = panel->chart()->chart();
            bars.push_back(live.categories.size());
            rows.push_back(std::size_t(panel->table()->rowCount()));
            if (live.series.size() != 2 || live.series[0].name.rfind(kRecoveredMeasure, 0) != 0 ||
                live.series[1].name.rfind(kLostAloneMeasure, 0) != 0)
                liveProblems << QStringLiteral("series other than the two measures");
            if (live.title.find("; target: ") == std::string::npos || live.title.find(" vs )") != std::string::npos)
                liveProblems << QString::fromStdString(live.title);
            const SensitivityResult& shown = panel->result();
            for (std::size_t i = 0; i < shown.entries.size(); ++i) {
                const double drawn = sensitivityNoMeasurableEffect(shown.entries[i], shown.spread) ? 0.0 : shown.entries[i].recoveredDb;
                if (live.series[0].y[i] != drawn && std::isfinite(shown.entries[i].recoveredDb))
                    liveProblems << QStringLiteral("bar %1 is not its entry's dB recovered").arg(i);
                if (i > 0 && shown.entries[i].rank <= shown.entries[i - 1].rank)
                    liveProblems << QStringLiteral("live entries not in rank order");
            }
            if (panel->summaryLabel()->text().contains(": .") || panel->summaryLabel()->text().contains("Target: ."))
                liveProblems << panel->summaryLabel()->text();
        });
        const Sweep result = sweep(window);
        QVERIFY(result);
        QVERIFY(result->complete);
        const std::size_t linears = 12; // 2 layers x 6 quantized Linears; qa_outputs is float
        QCOMPARE(result->entries.size(), linears);
        QCOMPARE(bars.size(), linears);
        for (std::size_t i = 0; i < linears; ++i) {
            QCOMPARE(bars[i], i + 1);
            QCOMPARE(rows[i], i + 1);
        }
        QVERIFY2(liveProblems.isEmpty(), qPrintable(liveProblems.join("; ")));
        QCOMPARE(QString::fromStdString(result->entries.front().module), kDefect);
        QCOMPARE(result->entries.front().tieRank, 0);
        const ChartData& done = panel->chart()->chart();
        QCOMPARE(done.categories.front(), std::string("L0.ffn.in"));
        QCOMPARE(panel->table()->item(0, SensitivityPanel::ModuleColumn)->text(), kDefect);
        QCOMPARE(panel->table()->horizontalHeaderItem(SensitivityPanel::RecoveredColumn)->text(), QString(kRecoveredMeasure));
        QCOMPARE(panel->table()->horizontalHeaderItem(SensitivityPanel::LostAloneColumn)->text(), QString(kLostAloneMeasure));
        // Ties are marked where the entry is shown: "=N" on its bar's label (so in its tooltip too)
        // and in the table's tie column; an entry that stands alone carries no mark.
        int ties = 0;
        for (std::size_t i = 0; i < result->entries.size(); ++i) {
            const SensitivityEntry& e = result->entries[i];
            // Within the spread of zero an entry is "no effect" instead (entriesWithinTheSpread...).
            if (std::abs(e.recoveredDb) <= result->spread.db) {
                QVERIFY(QString::fromStdString(done.categories[i]).endsWith(" (no effect)"));
                QVERIFY(panel->table()->item(int(i), SensitivityPanel::TieColumn)->text().isEmpty());
                continue;
            }
            const QString mark = e.tieRank > 0 ? QStringLiteral("=%1").arg(e.tieRank) : QString();
            ties += e.tieRank > 0;
            QCOMPARE(panel->table()->item(int(i), SensitivityPanel::TieColumn)->text(), mark);
            QCOMPARE(QString::fromStdString(done.categories[i]).endsWith(" " + mark), e.tieRank > 0);
            QCOMPARE(done.series[0].y[i], e.recoveredDb);
        }
        qInfo("%d of %zu entries tie (spread %.3f dB)", ties, result->entries.size(), result->spread.db);
        // The target is where the verdict turns good, and the suggestion a counted list.
        QCOMPARE(result->target, "final SQNR >= " + QString::number(verdictThresholds().goodSqnrDb, 'f', 2).toStdString() + " dB");
        QCOMPARE(result->suggestedFloat, std::vector<std::string>{kDefect.toStdString()});
        const QString summary = panel->summaryLabel()->text();
        QVERIFY2(summary.contains("<b>Keep 1 Linear float</b>") && summary.contains("<li>" + kDefect + " (L0.ffn.in)</li>"),
                 qPrintable(summary));
        // Its numbers to 0.1 dB, read back and held against the sweep's own measurements.
        QVERIFY2(showsDecibels(summary, result->baseline.sqnrDb), qPrintable(summary));
        QVERIFY(result->suggestedMetrics);
        QVERIFY2(showsDecibels(summary, result->suggestedMetrics->sqnrDb), qPrintable(summary));
    }

    void cancelKeepsWhatFinished()
    {
        MainWindow window;
        window.show();
        QVERIFY(openAndAsk(window));
        SensitivityPanel* panel = window.sensitivityPanel();
        int delivered = 0;
        connect(window.session(), &WorkbenchSession::sensitivityEntry, this, [&] { ++delivered; });
        // Cancel as the first entry finishes (on the worker, before the next starts): the sweep
        // stops at its next forward.
        std::atomic<int> finished{0};
        window.session()->setSweepEntryObserver([&](const SensitivityEntry&) {
            if (++finished == 1)
                window.session()->cancel();
        });
        const Sweep result = sweep(window);
        window.session()->setSweepEntryObserver({});
        QVERIFY(result);
        QVERIFY(!result->complete);
        QVERIFY(!result->stoppedReason.empty());
        qInfo("cancelled with %d of 12 entries finished", delivered);
        QCOMPARE(delivered, 1);
        QCOMPARE(finished.load(), 1);
        // What finished stays on screen: every delivered entry is a bar and a row.
        QCOMPARE(result->entries.size(), std::size_t(delivered));
        QCOMPARE(panel->result().entries.size(), std::size_t(delivered));
        QCOMPARE(panel->chart()->chart().categories.size(), std::size_t(delivered));
        QCOMPARE(panel->table()->rowCount(), delivered);
        // No empty placeholders: the title and the summary name the reference and the target, and
        // say that the sweep stopped instead of offering a suggestion.
        const std::string title = panel->chart()->chart().title;
        QVERIFY2(title.find("; target: final SQNR >= ") != std::string::npos && title.find(" vs )") == std::string::npos,
                 title.c_str());
        const QString summary = panel->summaryLabel()->text();
        QVERIFY2(summary.contains("Target: final SQNR &gt;= ") && !summary.contains("Target: .") &&
                     summary.contains("Stopped with 1 entry finished") && !summary.contains("Keep "),
                 qPrintable(summary));
    }

    void clickingABarSelectsTheLinearEverywhere()
    {
        MainWindow window;
        window.resize(1366, 768);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        QVERIFY(openAndAsk(window));
        QVERIFY(sweep(window));
        SensitivityPanel* panel = window.sensitivityPanel();
        // The top-ranked bar ("gain when kept float" of rank 1), clicked where it is drawn.
        const std::optional<QPoint> onBar = panel->chart()->barPixel(0, 0);
        QVERIFY(onBar);
        QSignalSpy selected(panel, &SensitivityPanel::linearSelected);
        QTest::mouseClick(panel->chart()->plot(), Qt::LeftButton, Qt::NoModifier, *onBar);
        QCOMPARE(selected.count(), 1);
        QCOMPARE(selected.takeFirst().at(0).toString(), kDefect);
        QCOMPARE(panel->chart()->highlightedCategory(), 0);

        // Model: the tree's node and the weight's row in the tensor table.
        ModelPanel* model = window.modelPanel();
        QCOMPARE(model->treeView()->currentIndex().data(ModuleTreeModel::SubjectRole).toString(), kDefect);
        QCOMPARE(model->tensorView()->currentIndex().data(TensorTableModel::SubjectRole).toString(), kDefect + ".weight");

        // Errors: its output's row, its bar among the Linears (the fifth of layer 0: q, k, v,
        // attention output, then the FFN input) and its layer (after the embeddings) shaded.
        ErrorsPanel* errors = window.errorsPanel();
        const QModelIndex row = errors->metricsView()->currentIndex();
        QVERIFY(row.isValid());
        QCOMPARE(row.siblingAtColumn(0).data().toString(), kDefect + ".output");
        QCOMPARE(errors->linearSqnrView()->highlightedCategory(), 4);
        QCOMPARE(errors->linearSqnrView()->chart().categories[4], std::string("L0.ffn.in"));
        QCOMPARE(errors->layerSqnrView()->highlightedCategory(), 1);
        QCOMPARE(errors->chartTabs()->currentWidget(), static_cast<QWidget*>(errors->linearSqnrView()));

        // Scales: the Linear chosen and its range bar shaded.
        ScalesPanel* scales = window.scalesPanel();
        QCOMPARE(scales->selectedLinear(), kDefect);
        const int category = scales->rangesView()->highlightedCategory();
        QVERIFY(category >= 0);
        QCOMPARE(scales->rangesView()->chart().categories[std::size_t(category)], std::string("L0.ffn.in"));
        // ... and in the last run's activation charts (the defect's static scale makes them).
        const std::vector<ChartView*> charts = scales->charts();
        for (ChartView* chart : {charts[3], charts[4]}) {
            const int shaded = chart->highlightedCategory();
            QVERIFY(shaded >= 0);
            QCOMPARE(chart->chart().categories[std::size_t(shaded)], std::string("L0.ffn.in"));
        }
    }

    void runInFloatRerunsAndClearingRestoresTheBaseline()
    {
        MainWindow window;
        window.show();
        const Outcome baseline = openAndAsk(window);
        QVERIFY(baseline);
        const QaAgreement& before = *baseline->comparison->qa;
        QVERIFY(window.floatStatus()->isHidden());

        // The user checks "Float" on the Linear in the Model tree: the question reruns at once.
        ModelPanel* model = window.modelPanel();
        const QModelIndex cell = floatCell(model, kDefect);
        QVERIFY(cell.flags() & Qt::ItemIsUserCheckable);
        QCOMPARE(cell.data(Qt::CheckStateRole).value<Qt::CheckState>(), Qt::Unchecked);
        // A Linear that is not quantized (the head) has no toggle.
        QVERIFY(!(floatCell(model, "qa_outputs").flags() & Qt::ItemIsUserCheckable));
        QSignalSpy answered(window.session(), &WorkbenchSession::answered);
        QVERIFY(model->treeView()->model()->setData(cell, Qt::Checked, Qt::CheckStateRole));
        // Until the rerun lands, the answer on screen is stale: another what-if made it.
        QVERIFY(window.askPanel()->banner()->isStale());
        QVERIFY(window.askPanel()->banner()->label()->text().contains("Linears run in float"));
        QVERIFY(answered.wait(60000));
        QVERIFY(idle(window));
        const Outcome what = answered.takeFirst().at(0).value<Outcome>();
        QCOMPARE(what->stamp.floatLinears, QStringList{kDefect});
        QVERIFY(!window.askPanel()->banner()->isStale());

        // Equal bit for bit to the in-process run with that override, and the error it removes shows.
        const ComparisonResult independent = inProcess({kDefect});
        qInfo("final logits SQNR %.2f dB as declared, %.2f dB with %s in float", baseline->comparison->finalLogits.sqnrDb,
              what->comparison->finalLogits.sqnrDb, qPrintable(kDefect));
        QCOMPARE(what->comparison->qa->runStartLogits, independent.qa->runStartLogits);
        QCOMPARE(what->comparison->qa->runEndLogits, independent.qa->runEndLogits);
        QVERIFY(what->comparison->qa->runStartLogits != before.runStartLogits);
        QVERIFY2(what->comparison->finalLogits.sqnrDb > baseline->comparison->finalLogits.sqnrDb + 3.0,
                 qPrintable(QString("%1 dB after, %2 before").arg(what->comparison->finalLogits.sqnrDb)
                                .arg(baseline->comparison->finalLogits.sqnrDb)));
        QCOMPARE(window.errorsPanel()->comparison()->finalLogits.sqnrDb, what->comparison->finalLogits.sqnrDb);
        QVERIFY(window.errorsPanel()->banner()->label()->text().contains("1 Linear in float: L0.ffn.in"));

        // The Errors drill-down reruns the point with the same what-if: the SQNR of its values is the
        // table's for that point.
        QSignalSpy captured(window.session(), &WorkbenchSession::capturePointReady);
        emit window.errorsPanel()->capturePointRequested(kDefect + ".output");
        QVERIFY(captured.wait(60000));
        QVERIFY(idle(window));
        const auto values = captured.takeFirst().at(0).value<std::shared_ptr<const CapturePointValues>>();
        QCOMPARE(values->stamp.floatLinears, QStringList{kDefect});
        double signal = 0, noise = 0;
        for (std::size_t i = 0; i < values->run.size(); ++i) {
            signal += double(values->reference[i]) * values->reference[i];
            noise += (double(values->reference[i]) - values->run[i]) * (double(values->reference[i]) - values->run[i]);
        }
        double tableSqnr = 0;
        for (const CapturePointMetrics& point : what->comparison->points)
            if (point.name == (kDefect + ".output").toStdString())
                tableSqnr = point.metrics.sqnrDb;
        QVERIFY2(std::abs(10 * std::log10(signal / noise) - tableSqnr) < 1e-3,
                 qPrintable(QString("%1 vs %2").arg(10 * std::log10(signal / noise)).arg(tableSqnr)));

        // The status bar lists it (full name in the tooltip); the tree shows it checked.
        QVERIFY(!window.floatStatus()->isHidden());
        QCOMPARE(window.floatStatus()->text(), QStringLiteral("1 Linear in float: L0.ffn.in"));
        QVERIFY(window.floatStatus()->toolTip().contains(kDefect));
        QVERIFY(!window.clearFloatButton()->isHidden());
        QCOMPARE(floatCell(model, kDefect).data(Qt::CheckStateRole).value<Qt::CheckState>(), Qt::Checked);

        // Clear: the checkpoint as declared again, the baseline's logits bit for bit.
        QTest::mouseClick(window.clearFloatButton(), Qt::LeftButton);
        QVERIFY(answered.wait(60000));
        QVERIFY(idle(window));
        const Outcome cleared = answered.takeFirst().at(0).value<Outcome>();
        QVERIFY(cleared->stamp.floatLinears.isEmpty());
        QCOMPARE(cleared->comparison->qa->runStartLogits, before.runStartLogits);
        QCOMPARE(cleared->comparison->qa->runEndLogits, before.runEndLogits);
        QCOMPARE(cleared->comparison->finalLogits.sqnrDb, baseline->comparison->finalLogits.sqnrDb);
        QVERIFY(window.floatStatus()->isHidden());
        QVERIFY(window.clearFloatButton()->isHidden());
        QCOMPARE(floatCell(model, kDefect).data(Qt::CheckStateRole).value<Qt::CheckState>(), Qt::Unchecked);
    }

    void statusBarListsManyLinearsCompactly()
    {
        MainWindow window;
        window.show();
        QVERIFY(openAndAsk(window));
        // Given in any order, with a name that is no Linear of this checkpoint: kept in layout
        // order, the stranger dropped, three short labels shown and every full name in the tooltip.
        const QStringList modules = {"roberta.encoder.layer.1.output.dense", "roberta.encoder.layer.0.attention.self.query",
                                     "roberta.encoder.layer.9.output.dense", kDefect,
                                     "roberta.encoder.layer.0.attention.self.value"};
        QSignalSpy answered(window.session(), &WorkbenchSession::answered);
        window.session()->setFloatLinears(modules);
        QVERIFY(answered.wait(60000));
        QVERIFY(idle(window));
        QCOMPARE(window.session()->floatLinears(),
                 QStringList({"roberta.encoder.layer.0.attention.self.query", "roberta.encoder.layer.0.attention.self.value",
                              kDefect, "roberta.encoder.layer.1.output.dense"}));
        QCOMPARE(window.floatStatus()->text(), QStringLiteral("4 Linears in float: L0.q, L0.v, L0.ffn.in, ..."));
        for (const QString& module : window.session()->floatLinears())
            QVERIFY(window.floatStatus()->toolTip().contains(module));
        QCOMPARE(window.modelPanel()->treeModel()->floatLinears().size(), 4);
    }

    void togglingBeforeAnyRunFillsTheMaskTabsText()
    {
        MainWindow window;
        window.show();
        QSignalSpy ready(&window, &MainWindow::checkpointReady);
        window.openCheckpoint(QString::fromStdString(mlmFp8_));
        QVERIFY(ready.wait(60000));
        QSignalSpy reference(window.session(), &WorkbenchSession::referenceChanged);
        window.setReference(QString::fromStdString(mlmFloat_));
        QVERIFY(reference.wait(60000));
        QVERIFY(idle(window));
        const QString text = QStringLiteral("the cat <mask> on the mat");
        window.fillMaskPanel()->setText(text);
        // Nothing ran yet: the toggle runs the Fill Mask tab's text with the Linear in float.
        const QString linear = QStringLiteral("roberta.encoder.layer.1.attention.output.dense");
        QSignalSpy filled(window.session(), &WorkbenchSession::masksFilled);
        QVERIFY(window.modelPanel()->treeView()->model()->setData(floatCell(window.modelPanel(), linear), Qt::Checked,
                                                                  Qt::CheckStateRole));
        QVERIFY(filled.wait(60000));
        QVERIFY(idle(window));
        const auto outcome = filled.takeFirst().at(0).value<std::shared_ptr<const FillMaskOutcome>>();
        QCOMPARE(outcome->stamp.floatLinears, QStringList{linear});
        QCOMPARE(window.floatStatus()->text(), QStringLiteral("1 Linear in float: L1.attn.out"));
        // The same distribution as the in-process run with that override, and not the declared one's.
        auto run = EncoderModel::load(mlmFp8_);
        auto floatModel = EncoderModel::load(mlmFloat_);
        ComparisonInput input;
        input.text = text.toStdString();
        const ComparisonResult declared = compareRuns(*run, floatModel.get(), input);
        input.runs.run.overrides.modules[linear.toStdString()] = Precision::Float;
        const ComparisonResult independent = compareRuns(*run, floatModel.get(), input);
        QCOMPARE(outcome->comparison->fillMask->masks.front().runDistribution,
                 independent.fillMask->masks.front().runDistribution);
        QVERIFY(outcome->comparison->fillMask->masks.front().runDistribution !=
                declared.fillMask->masks.front().runDistribution);
        // The MLM head is float in the checkpoint: nothing to toggle there.
        QVERIFY(!(floatCell(window.modelPanel(), "lm_head.dense").flags() & Qt::ItemIsUserCheckable));
    }

    void reportCarriesTheOverridesAndLeavesOutOthers()
    {
        MainWindow window;
        window.show();
        QVERIFY(openAndAsk(window));
        QSignalSpy answered(window.session(), &WorkbenchSession::answered);
        QVERIFY(window.modelPanel()->treeView()->model()->setData(floatCell(window.modelPanel(), kDefect), Qt::Checked,
                                                                  Qt::CheckStateRole));
        QVERIFY(answered.wait(60000));
        QVERIFY(idle(window));

        QTemporaryDir with;
        window.exportReport(with.path());
        const json summary = readJson(with.filePath("summary.json"));
        QCOMPARE(summary["float_linears"], json::array({kDefect.toStdString()}));
        QVERIFY(summary["left_out"].empty());
        QVERIFY(summary.contains("final_logits"));
        QFile index(with.filePath("index.html"));
        QVERIFY(index.open(QIODevice::ReadOnly));
        QVERIFY(index.readAll().contains(kDefect.toUtf8()));

        // Cleared but not rerun yet: the results on screen are another what-if's, so a report made
        // now names them as left out, with the overrides that produced them.
        QTest::mouseClick(window.clearFloatButton(), Qt::LeftButton);
        QTemporaryDir without;
        window.exportReport(without.path());
        const json stale = readJson(without.filePath("summary.json"));
        QCOMPARE(stale["float_linears"], json::array());
        QVERIFY(!stale.contains("final_logits"));
        bool askLeftOut = false;
        for (const json& entry : stale["left_out"])
            if (entry["result"] == "ask") {
                askLeftOut = true;
                QVERIFY(entry["reason"].get<std::string>().find("Linears run in float") != std::string::npos);
                QCOMPARE(entry["produced_by"]["float_linears"], json::array({kDefect.toStdString()}));
            }
        QVERIFY(askLeftOut);
        QVERIFY(answered.wait(60000));
        QVERIFY(idle(window));
    }

    void saveFixedCheckpointWritesTheIgnoreList()
    {
        MainWindow window;
        window.show();
        QVERIFY(openAndAsk(window));
        QVERIFY(sweep(window));
        QTemporaryDir parent;
        const QString dst = parent.filePath("fixed");
        QVERIFY(saveFixedCheckpoint(window, dst));
        const json config = readJson(dst + "/config.json");
        QVERIFY(config.is_object());
        const json& ignore = config["quantization_config"]["ignore"];
        QVERIFY(std::find(ignore.begin(), ignore.end(), kDefect.toStdString()) != ignore.end());
        QVERIFY(QFileInfo(dst + "/model.safetensors").isFile());
        // Listed for the AIU stack too, by its FMS name.
        QVERIFY(std::find(ignore.begin(), ignore.end(), "base_model.layers.0.ff_sub_layer.w1") != ignore.end());
    }

    // From a consumer problem to a checkpoint every runtime loads as intended, on one screen: the
    // Consumers tab flags the earlier HF-only fix, a sweep and Save Fixed Checkpoint write the fix,
    // and the written checkpoint opened in the window shows every consumer "as intended".
    void savedFixLoadsAsIntendedForEveryConsumer()
    {
        MainWindow window;
        window.show();
        QVERIFY(openAndAsk(window, hfOnlyFix_));
        ModelPanel* model = window.modelPanel();
        QCOMPARE(model->consumersModel()->worstVerdict(), ConsumerVerdict::Fails);
        QVERIFY2(model->consumersModel()->summary().startsWith("aiu: fails"), qPrintable(model->consumersModel()->summary()));
        // Clicking the finding selects the Linear the AIU would mis-build.
        const int row = [&] {
            for (int r = 0; r < model->consumersModel()->rowCount(); ++r)
                if (model->consumersModel()->index(r, ConsumersModel::ModulesColumn).data().toString().contains("layer.1.intermediate"))
                    return r;
            return -1;
        }();
        QVERIFY(row >= 0);
        window.tabs()->setCurrentWidget(model);
        model->findChild<QTabWidget*>(QStringLiteral("modelFindingsTabs"))->setCurrentIndex(1);
        QTableView* consumersView = model->consumersView();
        const QRect cell = consumersView->visualRect(consumersView->model()->index(row, ConsumersModel::ModulesColumn));
        QTest::mouseClick(consumersView->viewport(), Qt::LeftButton, {}, cell.center());
        const QModelIndex selected = model->tensorView()->currentIndex();
        QCOMPARE(selected.siblingAtColumn(TensorTableModel::NameColumn).data().toString(),
                 QStringLiteral("roberta.encoder.layer.1.intermediate.dense.weight"));
        // Per unit, so that what is kept float loads on fused q/k/v too; keep the top-ranked unit.
        auto* granularity = window.sensitivityPanel()->findChild<QComboBox*>();
        QVERIFY(granularity && granularity->findData(QStringLiteral("unit")) >= 0);
        granularity->setCurrentIndex(granularity->findData(QStringLiteral("unit")));
        QVERIFY(sweep(window));
        auto* table = window.sensitivityPanel()->findChild<QTableWidget*>();
        QVERIFY(table && table->rowCount() > 0);
        table->selectRow(0);
        QTemporaryDir parent;
        const QString dst = parent.filePath("fixed-for-every-consumer");
        QVERIFY(saveFixedCheckpoint(window, dst));
        QSignalSpy ready(&window, &MainWindow::checkpointReady);
        window.openCheckpoint(dst);
        QVERIFY(ready.wait(60000));
        QVERIFY(idle(window));
        QCOMPARE(model->consumersModel()->worstVerdict(), ConsumerVerdict::AsIntended);
        QVERIFY2(!model->consumersModel()->summary().contains("fails"), qPrintable(model->consumersModel()->summary()));
    }

    // Issue 51: an entry whose "dB recovered" lies within the run-to-run spread of zero (a tie at
    // the bottom, or a negative recovery) has no measurable effect: the table says so instead of a
    // number, its bars are not drawn, and Triage does not make it a suspect.
    void entriesWithinTheSpreadShowNoMeasurableEffect()
    {
        MainWindow window;
        window.show();
        QVERIFY(openAndAsk(window));
        const Sweep result = sweep(window);
        QVERIFY(result && result->spread.estimated);
        SensitivityPanel* panel = window.sensitivityPanel();
        const ChartData& chart = panel->chart()->chart();
        int noEffect = 0;
        for (std::size_t i = 0; i < result->entries.size(); ++i) {
            const SensitivityEntry& e = result->entries[i];
            if (!(std::abs(e.recoveredDb) <= result->spread.db))
                continue;
            ++noEffect;
            const QString cell = panel->table()->item(int(i), SensitivityPanel::RecoveredColumn)->text();
            QVERIFY2(cell.contains("no measurable effect"), qPrintable(cell));
            for (const ChartSeries& series : chart.series)
                for (std::size_t p = 0; p < series.x.size(); ++p)
                    if (series.x[p] == double(i))
                        QCOMPARE(series.y[p], 0.0);
            // Not a suspect by the sweep's measure (a finding may still name it).
            QTableWidget* suspects = window.triagePanel()->suspectsTable();
            for (int r = 0; r < suspects->rowCount(); ++r)
                if (suspects->item(r, 1) && suspects->item(r, 1)->toolTip() == QString::fromStdString(e.linears.front()))
                    QVERIFY2(!suspects->item(r, 2)->text().contains(QString::fromUtf8(kRecoveredMeasure)),
                             qPrintable(suspects->item(r, 2)->text()));
        }
        QVERIFY2(noEffect > 0, "the sweep has no entry within the spread of zero");
    }

    // Issue 27: a sweep says nothing about another checkpoint. Opening one clears it as every other
    // result panel is cleared (saving would otherwise keep the previous model's Linears float).
    void openingAnotherCheckpointClearsTheSweep()
    {
        MainWindow window;
        window.show();
        QVERIFY(openAndAsk(window));
        QVERIFY(sweep(window));
        SensitivityPanel* panel = window.sensitivityPanel();
        QVERIFY(panel->table()->rowCount() > 0);
        QVERIFY(panel->saveButton()->isEnabled());

        QSignalSpy ready(&window, &MainWindow::checkpointReady);
        window.openCheckpoint(QString::fromStdString(mlmFp8_));
        QVERIFY(ready.wait(60000));
        QVERIFY(idle(window));
        QCOMPARE(panel->table()->rowCount(), 0);
        QVERIFY(panel->chart()->chart().series.empty());
        QCOMPARE(panel->chart()->plot()->plottableCount(), 0);
        QVERIFY(!panel->saveButton()->isEnabled());
        QStringList shown;
        for (const QLabel* label : panel->findChildren<QLabel*>())
            if (label->isVisibleTo(panel))
                shown << label->text();
        const QString text = shown.join(QLatin1Char('\n'));
        QVERIFY2(!text.contains(kDefect) && !text.contains("L0.ffn.in"), qPrintable(text));
        QVERIFY2(text.contains("the results of the previous checkpoint were cleared"), qPrintable(text));
    }

    // Another mode over the same checkpoint keeps the sweep (its Linears are still this model's),
    // marked stale as the Evaluate panel's result is.
    void anotherModeMarksTheSweepStale()
    {
        MainWindow window;
        window.show();
        QVERIFY(openAndAsk(window));
        QVERIFY(sweep(window));
        SensitivityPanel* panel = window.sensitivityPanel();
        QVERIFY(!panel->banner()->isStale());
        window.modeBox()->setCurrentIndex(1); // Dequant
        QVERIFY(idle(window));
        QVERIFY(panel->banner()->isStale());
        QVERIFY(panel->table()->rowCount() > 0);
    }

    // Per unit is offered and is where the box starts; saving a q/k/v row writes all three Linears.
    void unitSweepSavesAllOfQkv()
    {
        MainWindow window;
        window.show();
        QVERIFY(openAndAsk(window));
        SensitivityPanel* panel = window.sensitivityPanel();
        QComboBox* box = panel->granularityBox();
        const int unit = box->findData(QStringLiteral("unit"));
        QVERIFY(unit >= 0);
        QCOMPARE(box->itemText(unit), QStringLiteral("per unit (q/k/v together)"));
        QCOMPARE(box->currentIndex(), unit);
        const Sweep result = sweep(window, QString());
        QVERIFY(result);
        QCOMPARE(result->granularity, std::string("unit"));
        QCOMPARE(result->entries.size(), std::size_t(8)); // 2 layers x 4 units
        QVERIFY(!panel->validityLabel()->isHidden());
        // q/k/v kept together split nothing; the AIU still fails on the original's own scheme
        // (channel weights beside static per-tensor activations), and the sentence says so.
        QVERIFY2(panel->validityLabel()->text().contains("Valid only for vLLM and compressed-tensors") &&
                     panel->validityLabel()->text().contains("original scheme itself fails on the AIU"),
                 qPrintable(panel->validityLabel()->text()));

        const QString attention = QStringLiteral("roberta.encoder.layer.0.attention.self");
        int row = -1;
        for (int r = 0; r < panel->table()->rowCount(); ++r)
            if (panel->table()->item(r, 1)->text() == attention)
                row = r;
        QVERIFY(row >= 0);
        panel->table()->selectRow(row);
        QTemporaryDir parent;
        const QString dst = parent.filePath("qkv-float");
        QVERIFY(saveFixedCheckpoint(window, dst));
        const json config = readJson(dst + "/config.json");
        QVERIFY(config.is_object());
        const json& ignore = config["quantization_config"]["ignore"];
        for (const char* role : {"query", "key", "value"}) {
            const std::string module = (attention + "." + role).toStdString();
            QVERIFY2(std::find(ignore.begin(), ignore.end(), module) != ignore.end(), module.c_str());
        }
    }
};

QTEST_MAIN(TestSensitivityGui)
#include "test_sensitivity_gui.moc"
