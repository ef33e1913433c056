#include "panels/triage_panel.h"

#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QTableWidget>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

#include "analysis/verdict.h"
#include "linear_selection.h"
#include "models/value_text.h"
#include "tasks/sensitivity_words.h"
#include "report_section.h"

namespace scalescope::ui {
namespace {

constexpr std::size_t kShownSuspects = 8;

QString coloured(Grade grade, const QString& text)
{
    return QStringLiteral("<span style='color:%1; font-weight:bold'>%2</span>")
        .arg(QString::fromLatin1(gradeColor(grade)), text);
}

QString gradeWord(Grade grade)
{
    return QString::fromLatin1(gradeName(grade));
}

bool answersAgree(const ComparisonResult& comparison)
{
    if (comparison.runOutputsNonFinite || comparison.referenceOutputsNonFinite)
        return false;
    if (comparison.qa)
        return comparison.qa->sameBestAnswer;
    if (comparison.fillMask) {
        for (const auto& mask : comparison.fillMask->masks)
            if (!mask.top1Agrees)
                return false;
        return true;
    }
    // An embedder, a classifier, a reranker, or a text through a QA or MLM model: every row of
    // the final outputs decides the same (a label, a side of 0, a vector's cosine >= 0.99).
    return comparison.outputsAgree;
}

double f1Drop(const EvaluationResult& evaluation)
{
    return evaluation.referenceScores.f1 - evaluation.runScores.f1;
}

const char* consumerTitle(Consumer consumer)
{
    switch (consumer) {
    case Consumer::Aiu: return "AIU";
    case Consumer::Vllm: return "vLLM";
    case Consumer::CompressedTensors: return "transformers";
    }
    return "";
}

Grade consumerGrade(ConsumerVerdict verdict)
{
    return verdict == ConsumerVerdict::AsIntended ? Grade::Good
           : verdict == ConsumerVerdict::RunsDifferently ? Grade::Fair
                                                         : Grade::Poor;
}

} // namespace

TriagePanel::TriagePanel(LinearSelection* selection, QWidget* parent) : QWidget(parent)
{
    verdict_ = new QLabel(this);
    verdict_->setObjectName(QStringLiteral("triageVerdict"));
    verdict_->setWordWrap(true);
    verdict_->setTextFormat(Qt::RichText);
    verdict_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    verdict_->setFrameShape(QFrame::StyledPanel);
    verdict_->setMargin(8);
    consumers_ = new QLabel(this);
    consumers_->setWordWrap(true);
    consumers_->setTextFormat(Qt::RichText);
    next_ = new QLabel(this);
    next_->setObjectName(QStringLiteral("triageNextStep"));
    next_->setWordWrap(true);
    nextButton_ = new QPushButton(this);
    nextButton_->setObjectName(QStringLiteral("triageNextButton"));
    connect(nextButton_, &QPushButton::clicked, this, [this] {
        switch (nextStep_) {
        case NextStep::Answer: emit answerRequested(); break;
        case NextStep::Sweep: emit sweepRequested(); break;
        case NextStep::SaveFixed: emit saveFixedRequested(fixModules_); break;
        case NextStep::Evaluate: emit evaluateRequested(); break;
        case NextStep::None: break;
        }
    });

    suspects_ = new QTableWidget(0, 4, this);
    suspects_->setObjectName(QStringLiteral("triageSuspects"));
    suspects_->setHorizontalHeaderLabels({tr("#"), tr("Linear"), tr("Why it is a suspect"), tr("Look closer")});
    suspects_->verticalHeader()->hide();
    suspects_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    suspects_->setSelectionBehavior(QAbstractItemView::SelectRows);
    suspects_->setSelectionMode(QAbstractItemView::SingleSelection);
    suspects_->setWordWrap(true);
    suspects_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    QHeaderView* header = suspects_->horizontalHeader();
    header->setSectionResizeMode(0, QHeaderView::ResizeToContents);
    header->setSectionResizeMode(1, QHeaderView::ResizeToContents);
    header->setSectionResizeMode(2, QHeaderView::Stretch);
    header->setSectionResizeMode(3, QHeaderView::ResizeToContents);
    suspects_->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    suspects_->setMinimumHeight(180);
    connect(suspects_, &QTableWidget::currentCellChanged, this, [this](int row, int, int, int) {
        if (row >= 0 && row < int(shown_.size()))
            emit linearSelected(shown_[std::size_t(row)].module);
    });

    auto* nextRow = new QHBoxLayout;
    nextRow->addWidget(next_, 1);
    nextRow->addWidget(nextButton_);
    suspectsTitle_ = new QLabel(this);
    auto* content = new QWidget(this);
    auto* inner = new QVBoxLayout(content);
    inner->addWidget(verdict_);
    inner->addLayout(nextRow);
    inner->addWidget(suspectsTitle_);
    inner->addWidget(suspects_, 1);
    inner->addWidget(consumers_);
    auto* scroll = new QScrollArea(this);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    scroll->setWidget(content);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(scroll);
    connect(this, &TriagePanel::linearSelected, selection, &LinearSelection::select);
    selection->follow(this, [this](const QString& module) { selectLinear(module); });
    refresh();
}

void TriagePanel::takeResult(const PanelResult& result)
{
    if (result.checkpoint) {
        checkpoint_ = result.checkpoint;
        comparison_.reset();
        evaluation_.reset();
        sweep_.reset();
    }
    if (result.comparison) {
        comparison_ = result.comparison;
        comparisonStamp_ = result.stamp;
    }
    if (result.evaluation) {
        evaluation_ = result.evaluation;
        evaluationStamp_ = result.stamp;
    }
    if (result.sensitivity) {
        sweep_ = result.sensitivity;
        sweepStamp_ = result.stamp;
    }
    refresh();
}

void TriagePanel::clearResults(const QString& /*why*/)
{
    comparison_.reset();
    evaluation_.reset();
    sweep_.reset();
    refresh();
}

void TriagePanel::currentStampChanged(const RunStamp& now)
{
    now_ = now;
    // Parts of another checkpoint say nothing about this one.
    if (comparison_ && comparisonStamp_.checkpoint != now.checkpoint)
        comparison_.reset();
    if (evaluation_ && evaluationStamp_.checkpoint != now.checkpoint)
        evaluation_.reset();
    if (sweep_ && sweepStamp_.checkpoint != now.checkpoint)
        sweep_.reset();
    refresh();
}

void TriagePanel::setBusy(bool busy)
{
    busy_ = busy;
    nextButton_->setEnabled(!busy && nextStep_ != NextStep::None);
    for (QToolButton* button : suspects_->findChildren<QToolButton*>())
        button->setEnabled(!busy);
}

double TriagePanel::finalSqnr() const
{
    if (!comparison_)
        return std::nan("");
    return comparison_->finalLogits.sqnrDb;
}

QString TriagePanel::overallGrade() const
{
    bool any = false;
    Grade grade = Grade::Good;
    if (comparison_ && isCurrent(comparisonStamp_)) {
        any = true;
        grade = worse(gradeSqnr(finalSqnr()), gradeAgreement(answersAgree(*comparison_)));
    }
    if (evaluation_ && isCurrent(evaluationStamp_) && !evaluation_->examples.empty()) {
        any = true;
        grade = worse(grade, gradeF1Drop(f1Drop(*evaluation_)));
    }
    return any ? gradeWord(grade) : QString();
}

QString TriagePanel::verdictText() const
{
    if (!checkpoint_)
        return tr("<b>No checkpoint open.</b>");
    const VerdictThresholds& t = verdictThresholds();
    QString text;
    const QString overall = overallGrade();
    const Grade overallValue = overall == QLatin1String("good") ? Grade::Good
                               : overall == QLatin1String("fair") ? Grade::Fair
                                                                  : Grade::Poor;
    text += overall.isEmpty() ? tr("<p style='font-size:large'><b>No verdict yet</b>: nothing has run on this checkpoint.</p>")
                              : tr("<p style='font-size:large'><b>Verdict: %1</b></p>").arg(coloured(overallValue, overall));
    auto staleNote = [this](const RunStamp& stamp) {
        const QString difference = stamp.differenceFrom(now_);
        return difference.isEmpty() ? QString()
                                    : tr(" <span style='color:#8a5a00'>(stale: the %1 changed since; not graded)</span>")
                                          .arg(difference.toHtmlEscaped());
    };
    if (comparison_) {
        const double sqnr = finalSqnr();
        text += tr("Final output SQNR: %1 &nbsp;<small>(good at %2 dB or more, poor below %3 dB)</small>%4<br>")
                    .arg(coloured(gradeSqnr(sqnr), tr("%1 dB, %2").arg(significantText(sqnr), gradeWord(gradeSqnr(sqnr)))))
                    .arg(t.goodSqnrDb)
                    .arg(t.poorSqnrDb)
                    .arg(staleNote(comparisonStamp_));
        const bool agree = answersAgree(*comparison_);
        QString detail;
        if (comparison_->qa && !agree)
            detail = tr(": %1 answers \"%2\", the reference \"%3\"")
                         .arg(QString::fromStdString(comparison_->runLabel).toHtmlEscaped(),
                              QString::fromStdString(comparison_->qa->runAnswer.text).toHtmlEscaped(),
                              QString::fromStdString(comparison_->qa->referenceAnswer.text).toHtmlEscaped());
        else if (comparison_->qa)
            detail = tr(": \"%1\"").arg(QString::fromStdString(comparison_->qa->runAnswer.text).toHtmlEscaped());
        text += tr("%1 agree%2<br>")
                    .arg(comparison_->qa ? tr("Answers") : comparison_->fillMask ? tr("Top-1 predictions") : tr("Outputs"))
                    .arg(QStringLiteral(" ") + coloured(gradeAgreement(agree), agree ? tr("yes") : tr("no")) + detail);
        text += tr("<small>Holds for: %1</small><br>").arg(comparisonStamp_.describe().toHtmlEscaped());
    } else {
        text += tr("No question answered and no mask filled yet.<br>");
    }
    if (evaluation_ && !evaluation_->examples.empty()) {
        const double drop = f1Drop(*evaluation_);
        text += tr("Evaluation of %1 questions: EM %2 (reference %3), F1 %4 (reference %5): %6 "
                   "&nbsp;<small>(good within %7 points, poor beyond %8)</small>%9<br>")
                    .arg(evaluation_->examples.size())
                    .arg(significantText(evaluation_->runScores.exact), significantText(evaluation_->referenceScores.exact),
                         significantText(evaluation_->runScores.f1), significantText(evaluation_->referenceScores.f1))
                    .arg(coloured(gradeF1Drop(drop), tr("F1 %1 %2 points").arg(drop >= 0 ? tr("down") : tr("up"), significantText(std::abs(drop)))))
                    .arg(t.goodF1Drop)
                    .arg(t.poorF1Drop)
                    .arg(staleNote(evaluationStamp_));
    }
    return text;
}

QString TriagePanel::consumersText() const
{
    if (!checkpoint_ || checkpoint_->consumers.empty())
        return {};
    QStringList parts;
    for (const ConsumerReport& report : checkpoint_->consumers)
        parts << QStringLiteral("%1: %2").arg(QString::fromLatin1(consumerTitle(report.consumer)),
                                              coloured(consumerGrade(report.verdict), QString::fromLatin1(verdictName(report.verdict))));
    return tr("<b>How each runtime loads this checkpoint</b> (details: Model &gt; Consumers): %1").arg(parts.join(QStringLiteral(" &nbsp; ")));
}

// The sweep's ranking when there is one (it measured what keeping each entry float recovers);
// otherwise the Linears whose outputs lost most in the last run; findings that name a Linear
// are added to its reason, or make it a suspect of its own.
std::vector<TriagePanel::Suspect> TriagePanel::rankSuspects() const
{
    std::vector<Suspect> suspects;
    if (!checkpoint_)
        return suspects;
    auto labelOf = [this](const std::string& module) {
        for (const LinearScaleStatistics& s : checkpoint_->statistics)
            if (s.module == module)
                return QString::fromStdString(s.label);
        return QString::fromStdString(module);
    };
    if (sweep_ && sweep_->complete) {
        for (const SensitivityEntry& entry : sweep_->entries) {
            if (suspects.size() == kShownSuspects)
                break;
            // The sweep's own two measures (tasks/sensitivity.h), as its chart draws them.
            QString why = tr("%1 %2; %3 %4")
                              .arg(significantText(entry.recoveredDb), QString::fromUtf8(kRecoveredMeasure),
                                   significantText(entry.lostAloneDb), QString::fromUtf8(kLostAloneMeasure));
            if (entry.tieRank > 0)
                why += tr(" (%1: tied with rank %2 within the run-to-run spread)")
                           .arg(QString::fromStdString(sensitivityTieMark(entry)))
                           .arg(entry.tieRank);
            if (entry.cause && !entry.cause->label.empty())
                why += QStringLiteral("; ") + QString::fromStdString(entry.cause->label);
            const std::string module = entry.linears.size() == 1 ? entry.linears.front() : entry.module;
            suspects.push_back({QString::fromStdString(module), QString::fromStdString(entry.label), why});
        }
    } else if (comparison_) {
        std::vector<const CapturePointMetrics*> outputs;
        for (const CapturePointMetrics& p : comparison_->points)
            if (p.kind == CaptureKind::LinearOutput)
                outputs.push_back(&p);
        std::stable_sort(outputs.begin(), outputs.end(), [](const CapturePointMetrics* a, const CapturePointMetrics* b) {
            return a->metrics.sqnrDb < b->metrics.sqnrDb;
        });
        for (std::size_t i = 0; i < outputs.size() && i < 5; ++i)
            suspects.push_back({QString::fromStdString(outputs[i]->module), QString::fromStdString(outputs[i]->label),
                                tr("its output's SQNR is %1 dB (%2), among the lowest of the Linears")
                                    .arg(significantText(outputs[i]->metrics.sqnrDb), gradeWord(gradeSqnr(outputs[i]->metrics.sqnrDb)))});
    }
    auto addFindings = [&](const std::vector<Finding>& findings) {
        for (const Finding& f : findings) {
            if (f.severity == Severity::Info)
                continue;
            const QString module = LinearSelection::moduleOf(QString::fromStdString(f.subject));
            const std::string name = module.toStdString();
            const bool isLinear = std::any_of(checkpoint_->linears.begin(), checkpoint_->linears.end(),
                                              [&](const LinearInfo& l) { return l.module == name; });
            if (!isLinear)
                continue;
            auto it = std::find_if(suspects.begin(), suspects.end(), [&](const Suspect& s) { return s.module == module; });
            const QString sentence = QString::fromStdString(f.message);
            if (it != suspects.end())
                it->why += QStringLiteral("; ") + sentence;
            else if (suspects.size() < kShownSuspects)
                suspects.push_back({module, labelOf(name), sentence});
        }
    };
    if (comparison_)
        addFindings(comparison_->findings);
    addFindings(checkpoint_->findings);
    return suspects;
}

void TriagePanel::fillSuspects(const std::vector<Suspect>& suspects)
{
    shown_ = suspects;
    const QSignalBlocker blocker(suspects_);
    suspects_->clearContents();
    suspects_->setRowCount(int(suspects.size()));
    for (int r = 0; r < int(suspects.size()); ++r) {
        const Suspect& s = suspects[std::size_t(r)];
        suspects_->setItem(r, 0, new QTableWidgetItem(QString::number(r + 1)));
        auto* name = new QTableWidgetItem(s.label);
        name->setToolTip(s.module);
        suspects_->setItem(r, 1, name);
        auto* why = new QTableWidgetItem(s.why);
        why->setToolTip(s.why);
        suspects_->setItem(r, 2, why);
        auto* buttons = new QWidget(suspects_);
        auto* row = new QHBoxLayout(buttons);
        row->setContentsMargins(2, 0, 2, 0);
        const QString module = s.module;
        const struct {
            QString text;
            void (TriagePanel::*signal)(const QString&);
        } actions[] = {
            {tr("Run in Float"), &TriagePanel::runInFloatRequested},
            {tr("Scales"), &TriagePanel::showScalesRequested},
            {tr("Errors"), &TriagePanel::showErrorsRequested},
        };
        for (const auto& action : actions) {
            auto* button = new QToolButton(buttons);
            button->setText(action.text);
            button->setEnabled(!busy_);
            const auto signal = action.signal;
            connect(button, &QToolButton::clicked, this, [this, module, signal] {
                emit linearSelected(module);
                emit(this->*signal)(module);
            });
            row->addWidget(button);
        }
        suspects_->setCellWidget(r, 3, buttons);
    }
    if (suspects.empty()) {
        suspects_->setRowCount(1);
        suspects_->setItem(0, 2, new QTableWidgetItem(checkpoint_ ? tr("No suspects: no finding names a Linear, and nothing has run yet.")
                                                                  : QString()));
    }
}

void TriagePanel::chooseNextStep()
{
    fixModules_.clear();
    QString sentence;
    QString button;
    nextStep_ = NextStep::None;
    const bool comparisonCurrent = comparison_ && isCurrent(comparisonStamp_);
    const bool sweepCurrent = sweep_ && isCurrent(sweepStamp_);
    if (!checkpoint_) {
        sentence = tr("Open a checkpoint (File > Open, Ctrl+O) or one of the Demo menu's.");
    } else if (!checkpoint_->runnable) {
        sentence = tr("This checkpoint cannot run (%1): fix what the Model tab's diagnostics name.").arg(checkpoint_->loadError);
    } else if (!comparisonCurrent) {
        sentence = tr("Run an input (a question, a mask, texts to embed or rank, a text to classify) to measure the "
                      "quantized model against its reference.");
        nextStep_ = NextStep::Answer;
        button = tr("Run the Input (F5/F6)");
    } else if (sweepCurrent && sweep_->complete && sweep_->suggestionReached && !sweep_->suggestedFloat.empty()) {
        for (const std::string& module : sweep_->suggestedFloat)
            fixModules_ << QString::fromStdString(module);
        sentence = tr("%1: %2 (meets %3). Save the fixed checkpoint.")
                       .arg(QString::fromStdString(keepFloatHeadline(*sweep_)), fixModules_.join(QStringLiteral(", ")),
                            QString::fromStdString(sweep_->target));
        nextStep_ = NextStep::SaveFixed;
        button = tr("Save Fixed Checkpoint...");
    } else if (sweepCurrent) {
        sentence = QString::fromStdString(sweep_->suggestionNote.empty() ? std::string("The sweep suggests nothing to keep float.")
                                                                         : sweep_->suggestionNote);
    } else if (overallGrade() == QLatin1String("good")) {
        sentence = evaluation_ ? tr("The quantized model tracks its reference on this input and the evaluation: nothing to fix.")
                   : comparison_->qa
                       ? tr("The quantized model tracks its reference on this input: evaluate a SQuAD file to confirm it over many.")
                       : tr("The quantized model tracks its reference on this input: try more inputs to confirm it.");
        nextStep_ = evaluation_ || !comparison_->qa ? NextStep::None : NextStep::Evaluate;
        button = tr("Evaluate (F7)");
    } else {
        sentence = tr("Find the Linear that costs most: the sweep runs each one in float and in FP8 alone.");
        nextStep_ = NextStep::Sweep;
        button = tr("Run Sensitivity Sweep (F8)");
    }
    nextSentence_ = sentence;
    next_->setText(tr("<b>Next:</b> %1").arg(sentence.toHtmlEscaped()));
    nextButton_->setText(button);
    nextButton_->setVisible(nextStep_ != NextStep::None);
    nextButton_->setEnabled(!busy_);
}

void TriagePanel::refresh()
{
    suspectsTitle_->setText(sweep_ && sweep_->complete
                                ? tr("<b>Suspects</b>, ranked by the sweep: what keeping each float recovers")
                            : comparison_ ? tr("<b>Suspects</b>: the Linears with the lowest output SQNR in the last run "
                                               "(the sweep ranks them by what they cost the final output)")
                                          : tr("<b>Suspects</b>: the Linears the diagnostics name"));
    verdict_->setText(verdictText());
    consumers_->setText(consumersText());
    fillSuspects(rankSuspects());
    chooseNextStep();
}

void TriagePanel::selectLinear(const QString& module)
{
    const QSignalBlocker blocker(suspects_);
    for (int r = 0; r < int(shown_.size()); ++r)
        if (shown_[std::size_t(r)].module == module) {
            suspects_->selectRow(r);
            return;
        }
    suspects_->clearSelection();
}

QStringList TriagePanel::suspects() const
{
    QStringList modules;
    for (const Suspect& s : shown_)
        modules << s.module;
    return modules;
}

void TriagePanel::addToReport(ReportSection& section, bool /*runResultCurrent*/) const
{
    nlohmann::json verdict;
    const QString grade = overallGrade();
    verdict["grade"] = grade.isEmpty() ? nlohmann::json() : nlohmann::json(grade.toStdString());
    if (comparison_ && isCurrent(comparisonStamp_)) {
        verdict["final_sqnr_db"] = std::isfinite(finalSqnr()) ? nlohmann::json(finalSqnr()) : nlohmann::json(significantText(finalSqnr()).toStdString());
        verdict["answers_agree"] = answersAgree(*comparison_);
    }
    if (evaluation_ && isCurrent(evaluationStamp_) && !evaluation_->examples.empty())
        verdict["f1_drop_points"] = f1Drop(*evaluation_);
    const VerdictThresholds& t = verdictThresholds();
    verdict["thresholds"] = {{"good_sqnr_db", t.goodSqnrDb}, {"poor_sqnr_db", t.poorSqnrDb},
                             {"good_f1_drop", t.goodF1Drop}, {"poor_f1_drop", t.poorF1Drop}};
    verdict["next_step"] = nextSentence_.toStdString();
    nlohmann::json suspects = nlohmann::json::array();
    for (const Suspect& s : shown_)
        suspects.push_back({{"module", s.module.toStdString()}, {"label", s.label.toStdString()}, {"why", s.why.toStdString()}});
    verdict["suspects"] = suspects;
    section.summary()["verdict"] = verdict;
}

} // namespace scalescope::ui
