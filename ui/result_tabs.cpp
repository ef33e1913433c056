#include "result_tabs.h"

#include <QCoreApplication>
#include <QEvent>
#include <QFileInfo>
#include <QFrame>
#include <QLayout>
#include <QPushButton>
#include <QScrollArea>
#include <QSplitter>
#include <QVBoxLayout>

#include "input_panels.h"
#include "linear_selection.h"
#include "panels/ask_panel.h"
#include "panels/attention_panel.h"
#include "panels/calibration_panel.h"
#include "panels/classify_panel.h"
#include "panels/device_check_panel.h"
#include "panels/embed_panel.h"
#include "panels/errors_panel.h"
#include "panels/evaluate_panel.h"
#include "panels/fill_mask_panel.h"
#include "panels/linear_inspector.h"
#include "panels/model_panel.h"
#include "panels/rerank_panel.h"
#include "panels/scales_panel.h"
#include "panels/sensitivity_panel.h"
#include "panels/task_evaluate_panel.h"
#include "panels/triage_panel.h"
#include "stale_banner.h"
#include "workbench_session.h"

namespace scalescope::ui {

namespace {

// A page whose content needs more height (a chart drew a two-line title) tells its scroll area,
// which otherwise keeps the content at its old size and the layout squeezes the charts again. The
// content's minimum is stated explicitly: a page with a word-wrapped label is sized by its
// height-for-width, the sum of preferred heights, which a splitter of charts can fall below.
class PageGrowth : public QObject {
public:
    PageGrowth(QWidget* content, QScrollArea* scroll) : QObject(content), scroll_(scroll)
    {
        content->installEventFilter(this);
    }

protected:
    bool eventFilter(QObject* watched, QEvent* event) override
    {
        if (event->type() == QEvent::LayoutRequest) {
            auto* content = static_cast<QWidget*>(watched);
            const int minimum = content->layout() ? content->layout()->minimumSize().height() : 0;
            if (content->minimumHeight() != minimum)
                content->setMinimumHeight(minimum);
            QCoreApplication::postEvent(scroll_, new QEvent(QEvent::LayoutRequest));
        }
        return QObject::eventFilter(watched, event);
    }

private:
    QScrollArea* scroll_;
};

// The page's own layout moves into a scroll area that fills the page: a window shorter than the
// page's minimum (the charts' heights, ChartView) scrolls it rather than squashing every chart.
// With room to spare the content fills the page exactly as before. The panel stays the tab's page.
void scrollWhenShort(QWidget* page)
{
    QLayout* layout = page->layout();
    if (!layout)
        return;
    auto* content = new QWidget;
    content->setLayout(layout); // Qt takes the layout off the page, with the widgets it manages
    auto* scroll = new QScrollArea(page);
    scroll->setObjectName(QStringLiteral("pageScrollArea"));
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setWidget(content);
    new PageGrowth(content, scroll);
    auto* pageLayout = new QVBoxLayout(page);
    pageLayout->setContentsMargins(0, 0, 0, 0);
    pageLayout->addWidget(scroll);
}

} // namespace

ResultTabs::ResultTabs(WorkbenchSession* session, LinearSelection* selection, QWidget* parent)
    : QTabWidget(parent), session_(session), selection_(selection)
{
    createPanels(parent);
    connectResults();
    connectPanels();
    connectDeviceCheck();
    connectTriage();
}

void ResultTabs::createPanels(QWidget* parent)
{
    triage_ = new TriagePanel(selection_, this);
    model_ = new ModelPanel(selection_, this);
    ask_ = new AskPanel(session_, this);
    fillMask_ = new FillMaskPanel(session_, this);
    scales_ = new ScalesPanel(selection_, this);
    errors_ = new ErrorsPanel(session_, selection_, this);
    evaluate_ = new EvaluatePanel(session_, this);
    addTab(triage_, tr("Triage"));
    addTab(model_, tr("Model"));
    addTab(ask_, tr("Ask"));
    addTab(fillMask_, tr("Fill Mask"));
    addTab(scales_, tr("Scales"));
    addTab(errors_, tr("Errors"));
    addTab(evaluate_, tr("Evaluate"));
    deviceCheck_ = new DeviceCheckPanel(session_, this);
    addTab(deviceCheck_, tr("Device Check"));
    // The sequence tasks come after the SQuAD views, so that Alt+1 ... Alt+8 keep their panels.
    embed_ = new EmbedPanel(session_, this);
    addTab(embed_, tr("Embed"));
    rerank_ = new RerankPanel(session_, this);
    addTab(rerank_, tr("Rerank"));
    classify_ = new ClassifyPanel(session_, this);
    addTab(classify_, tr("Classify"));
    taskEvaluate_ = new TaskEvaluatePanel(session_, this);
    addTab(taskEvaluate_, tr("Evaluate Tasks"));
    sensitivity_ = new SensitivityPanel(session_, selection_, this);
    addTab(sensitivity_, tr("Sensitivity"));
    attention_ = new AttentionPanel(this);
    addTab(attention_, tr("Attention"));
    calibration_ = new CalibrationPanel(session_, this);
    addTab(calibration_, tr("Calibration"));
    // The verdict first.
    panels_ = {triage_,      model_,   ask_,     fillMask_,    scales_,     errors_,    evaluate_, deviceCheck_,
               embed_,       rerank_,  classify_, taskEvaluate_, sensitivity_, attention_, calibration_};
    InputPanelSet inputs;
    inputs.ask = ask_;
    inputs.fillMask = fillMask_;
    inputs.embed = embed_;
    inputs.rerank = rerank_;
    inputs.classify = classify_;
    inputs_ = new InputPanels(this, inputs, this);
    // A splitter dragged to the end hides a chart for good, with no hint how to get it back.
    for (QSplitter* splitter : findChildren<QSplitter*>())
        splitter->setChildrenCollapsible(false);
    for (int i = 0; i < count(); ++i)
        scrollWhenShort(widget(i));
    inspector_ = new LinearInspector(selection_, parent);
}

PanelResult ResultTabs::resultOf(const RunStamp& stamp) const
{
    PanelResult result;
    result.stamp = stamp;
    result.referenceLabel = referenceLabel_;
    return result;
}

void ResultTabs::showResult(const PanelResult& result)
{
    for (ResultPanel* panel : panels_)
        panel->takeResult(result);
    inspector_->takeResult(result);
}

// The session's results, each to every panel (each takes the parts it shows), its state and busy.
void ResultTabs::connectResults()
{
    connect(session_, &WorkbenchSession::referenceChanged, this, [this](const QString& label) { referenceLabel_ = label; });
    connect(session_, &WorkbenchSession::answered, this, [this](std::shared_ptr<const AskOutcome> outcome) {
        PanelResult result = resultOf(outcome->stamp);
        result.ask = outcome;
        result.comparison = outcome->comparison;
        showResult(result);
        inputs_->ranIn(ask_);
        emit inputRan();
    });
    connect(session_, &WorkbenchSession::masksFilled, this, [this](std::shared_ptr<const FillMaskOutcome> outcome) {
        PanelResult result = resultOf(outcome->stamp);
        result.fillMask = outcome;
        result.comparison = outcome->comparison;
        showResult(result);
        inputs_->ranIn(fillMask_);
        emit inputRan();
    });
    connectTaskResults();
    connectTaskEvaluation();
    connect(session_, &WorkbenchSession::evaluated, this,
        [this](std::shared_ptr<const EvaluationResult> evaluation, const RunStamp& stamp) {
            PanelResult result = resultOf(stamp);
            result.evaluation = std::move(evaluation);
            showResult(result);
        });
    connect(session_, &WorkbenchSession::sensitivityFinished, this,
        [this](std::shared_ptr<const SensitivityResult> sweep, const RunStamp& stamp) {
            PanelResult result = resultOf(stamp);
            result.sensitivity = std::move(sweep);
            showResult(result);
        });
    connect(session_, &WorkbenchSession::deviceChecked, this, [this](std::shared_ptr<const DeviceCheckOutcome> outcome) {
        PanelResult result = resultOf(outcome->stamp);
        result.deviceCheck = std::move(outcome);
        showResult(result);
    });
    connect(session_, &WorkbenchSession::stateChanged, this, &ResultTabs::showState);
    connect(session_->jobs(), &JobTracker::busyChanged, this, [this](bool busy) {
        for (ResultPanel* panel : panels_)
            panel->setBusy(busy);
    });
}

// The sequence tasks' results: each carries the comparison of one of its inputs for Errors and Scales.
void ResultTabs::connectTaskResults()
{
    connect(session_, &WorkbenchSession::textsEmbedded, this, [this](std::shared_ptr<const EmbedOutcome> outcome) {
        PanelResult result = resultOf(outcome->stamp);
        result.embed = outcome;
        result.comparison = outcome->comparison;
        showResult(result);
        inputs_->ranIn(embed_);
        emit inputRan();
    });
    connect(session_, &WorkbenchSession::passagesReranked, this, [this](std::shared_ptr<const RerankOutcome> outcome) {
        PanelResult result = resultOf(outcome->stamp);
        result.rerank = outcome;
        result.comparison = outcome->comparison;
        showResult(result);
        inputs_->ranIn(rerank_);
        emit inputRan();
    });
    connect(session_, &WorkbenchSession::textClassified, this, [this](std::shared_ptr<const ClassifyOutcome> outcome) {
        PanelResult result = resultOf(outcome->stamp);
        result.classify = outcome;
        result.comparison = outcome->comparison;
        showResult(result);
        inputs_->ranIn(classify_);
        emit inputRan();
    });
}

void ResultTabs::connectTaskEvaluation()
{
    connect(session_, &WorkbenchSession::taskEvaluated, this, [this](std::shared_ptr<const TaskEvaluationOutcome> outcome) {
        PanelResult result = resultOf(outcome->stamp);
        result.taskEvaluation = std::move(outcome);
        showResult(result);
    });
    // An input opened from the evaluation runs at once in its panel, as a question opened from
    // Evaluate runs in Ask.
    auto runIn = [this](QWidget* panel, QPushButton* button) {
        setCurrentWidget(panel);
        if (button->isEnabled())
            button->click();
    };
    connect(taskEvaluate_, &TaskEvaluatePanel::openInEmbed, this, [this, runIn](const QStringList& texts) {
        embed_->setTexts(texts);
        runIn(embed_, embed_->embedButton());
    });
    connect(taskEvaluate_, &TaskEvaluatePanel::openInRerank, this, [this, runIn](const QString& query, const QStringList& passages) {
        rerank_->setInputs(query, passages);
        runIn(rerank_, rerank_->rerankButton());
    });
    connect(taskEvaluate_, &TaskEvaluatePanel::openInClassify, this, [this, runIn](const QString& text, const QString& pair) {
        classify_->setInputs(text, pair);
        runIn(classify_, classify_->classifyButton());
    });
}

void ResultTabs::showCheckpoint(std::shared_ptr<const CheckpointInfo> info)
{
    info_ = std::move(info);
    PanelResult opened;
    opened.checkpoint = info_;
    showResult(opened);
    inputs_->showCheckpoint(*info_);
    // The SQuAD view for a question-answering or masked-LM checkpoint, Evaluate Tasks for the others.
    const HeadKind head = info_->checkpoint->layout().head();
    const bool task = head == HeadKind::Embedding || head == HeadKind::SequenceClassification;
    setTabEnabled(indexOf(evaluate_), !task);
    setTabEnabled(indexOf(taskEvaluate_), task);
    if (!isTabEnabled(currentIndex()))
        setCurrentWidget(task ? static_cast<QWidget*>(taskEvaluate_) : static_cast<QWidget*>(evaluate_));
}

void ResultTabs::showState()
{
    const RunStamp now = session_->currentStamp();
    const QString why = tr("Opened %1: the results of the previous checkpoint were cleared.")
                            .arg(QFileInfo(now.checkpoint).fileName());
    // Results of another checkpoint say nothing about this one: they go. Results of this one under
    // another reference, mode or device are kept, marked stale, and rerun when that is cheap.
    // A panel with no result may still hold a message about the previous checkpoint (a failed
    // evaluation, a cancelled sweep): it is replaced too.
    const bool anotherCheckpoint = now.checkpoint != shownCheckpoint_;
    shownCheckpoint_ = now.checkpoint;
    const QString fresh = tr("Opened %1: nothing has run on it yet.").arg(QFileInfo(now.checkpoint).fileName());
    for (ResultPanel* panel : panels_) {
        if (panel->hasResult() && panel->banner()->resultStamp().checkpoint != now.checkpoint)
            panel->clearResults(why);
        else if (anotherCheckpoint && panel->banner() && !panel->hasResult())
            panel->clearResults(fresh);
        panel->setCurrentStamp(now);
    }
    inspector_->setCurrentStamp(now);
    inspector_->setFloatLinears(now.floatLinears);
    inputs_->rerunStale();
    model_->setFloatLinears(now.floatLinears);
}

void ResultTabs::setCompareWith(std::shared_ptr<const CompareWithOutcome> b)
{
    for (ResultPanel* panel : panels_)
        panel->setCompareWith(b);
    inspector_->setCompareWith(b);
}

// What one view asks of another: Errors and Scales rerun the last input, the Model tree and the
// inspector toggle Linears to float, the inspector and Evaluate lead to another tab.
void ResultTabs::connectPanels()
{
    // These views show the last question's or mask's run: rerun whichever it was.
    for (StaleBanner* banner : {errors_->banner(), scales_->banner()})
        connect(banner, &StaleBanner::rerunRequested, inputs_, &InputPanels::rerunLast);
    connect(model_, &ModelPanel::floatLinearsEdited, this, &ResultTabs::setFloatLinears);
    connect(inspector_, &LinearInspector::floatToggled, this, &ResultTabs::setLinearFloat);
    connect(inspector_, &LinearInspector::showScalesRequested, this,
            [this](const QString& module) { showLinearIn(scales_, module); });
    connect(inspector_, &LinearInspector::showErrorsRequested, this,
            [this](const QString& module) { showLinearIn(errors_, module); });
    connect(evaluate_, &EvaluatePanel::openInAsk, this, [this](const QString& question, const QString& context) {
        ask_->askAbout(question, context);
        setCurrentWidget(ask_);
    });
}

void ResultTabs::connectDeviceCheck()
{
    // A point clicked in the check is selected in Errors, whose drill-down draws it for the last
    // question when the results there hold it.
    auto showPoint = [this](const QString& point) {
        // A Linear's input or output: that Linear becomes the one every view shows (first, so
        // that Errors then selects this very point rather than the Linear's output).
        QString module = point;
        if (module.endsWith(QLatin1String(".input")))
            module.chop(6);
        else if (module.endsWith(QLatin1String(".output")))
            module.chop(7);
        if (info_ && module != point)
            for (const LinearInfo& linear : info_->linears)
                if (linear.module == module.toStdString())
                    selection_->select(module);
        if (errors_->selectCapturePoint(point) && !errors_->isStale())
            session_->capturePoint(point);
    };
    connect(deviceCheck_, &DeviceCheckPanel::capturePointSelected, this, showPoint);
    connect(deviceCheck_, &DeviceCheckPanel::showInErrorsRequested, this, [this, showPoint](const QString& point) {
        showPoint(point);
        setCurrentWidget(errors_);
    });
    // The check uses the file Evaluate uses, unless the user chose another for it.
    connect(evaluate_, &EvaluatePanel::evaluateRequested, this, [this](const QString& squadFile) {
        if (deviceCheck_->squadFile().isEmpty())
            deviceCheck_->setSquadFile(squadFile);
    });
}

// The triage card's buttons press what the user would press elsewhere.
void ResultTabs::connectTriage()
{
    connect(triage_, &TriagePanel::runInFloatRequested, this, [this](const QString& module) { setLinearFloat(module, true); });
    connect(triage_, &TriagePanel::showScalesRequested, this, [this](const QString& module) { showLinearIn(scales_, module); });
    connect(triage_, &TriagePanel::showErrorsRequested, this, [this](const QString& module) { showLinearIn(errors_, module); });
    connect(triage_, &TriagePanel::answerRequested, inputs_, &InputPanels::runOrShow);
    connect(triage_, &TriagePanel::sweepRequested, this, [this] {
        if (sensitivity_->runButton()->isEnabled())
            sensitivity_->runButton()->click();
    });
    connect(triage_, &TriagePanel::evaluateRequested, this, [this] {
        // The evaluation the open checkpoint's head has: SQuAD, or its task's dataset.
        const bool squad = isTabEnabled(indexOf(evaluate_));
        QPushButton* button = squad ? evaluate_->evaluateButton() : taskEvaluate_->evaluateButton();
        setCurrentWidget(squad ? static_cast<QWidget*>(evaluate_) : static_cast<QWidget*>(taskEvaluate_));
        if (button->isEnabled())
            button->click();
    });
    connect(triage_, &TriagePanel::saveFixedRequested, sensitivity_, &SensitivityPanel::saveFixedCheckpoint);
    // A float checkpoint is quantized where the GUI writes FP8 checkpoints: the calibration lab.
    connect(triage_, &TriagePanel::quantizeRequested, this, [this] { setCurrentWidget(calibration_); });
    connect(session_, &WorkbenchSession::keptFloat, triage_, &TriagePanel::showSavedFix);
    connect(triage_, &TriagePanel::openFixedRequested, this, &ResultTabs::openFixedRequested);
    connect(sensitivity_, &SensitivityPanel::openFixedRequested, this, &ResultTabs::openFixedRequested);
}

void ResultTabs::setFloatLinears(const QStringList& modules)
{
    const QStringList before = session_->floatLinears();
    session_->setFloatLinears(modules); // a change reruns the last result's input (showState)
    model_->setFloatLinears(session_->floatLinears());
    // Nothing ran yet: the what-if runs the input the open checkpoint's panel holds.
    if (session_->floatLinears() != before && !inputs_->hasResult())
        inputs_->runCurrent();
}

void ResultTabs::setLinearFloat(const QString& module, bool inFloat)
{
    QStringList modules = session_->floatLinears();
    modules.removeAll(module);
    if (inFloat)
        modules << module;
    setFloatLinears(modules);
}

void ResultTabs::showLinearIn(QWidget* panel, const QString& module)
{
    selection_->select(module);
    setCurrentWidget(panel);
}

} // namespace scalescope::ui
