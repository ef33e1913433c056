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
#include "common/error.h"
#include "consumer_words.h"
#include "linear_selection.h"
#include "models/value_text.h"
#include "tasks/fix_provenance.h"
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

Grade comparisonGrade(const ComparisonResult& comparison)
{
    return worse(gradeSqnr(comparison.finalLogits.sqnrDb), gradeAgreement(answersAgree(comparison)));
}

// "14.9 dB, poor, answers \"Paris\"": one side of a before/after.
QString sideText(const ComparisonResult& comparison)
{
    QString text = QObject::tr("%1 dB, %2").arg(decibelText(comparison.finalLogits.sqnrDb), gradeWord(comparisonGrade(comparison)));
    if (comparison.qa)
        text += QObject::tr(", answers \"%1\"").arg(QString::fromStdString(comparison.qa->runAnswer.text).toHtmlEscaped());
    return text;
}

// A button of the fix lines, named for tests and style sheets.
QPushButton* fixButton(const QString& text, const char* name, QWidget* parent)
{
    auto* button = new QPushButton(text, parent);
    button->setObjectName(QString::fromLatin1(name));
    return button;
}

// A label beside its buttons, the whole row hidden until it has something to say.
QWidget* fixRow(QLabel* label, const QList<QPushButton*>& buttons, QWidget* parent)
{
    auto* row = new QWidget(parent);
    auto* layout = new QHBoxLayout(row);
    layout->setContentsMargins(0, 0, 0, 0);
    label->setWordWrap(true);
    label->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(label, 1);
    for (QPushButton* button : buttons)
        layout->addWidget(button, 0, Qt::AlignTop);
    row->hide();
    return row;
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
        case NextStep::Quantize: emit quantizeRequested(); break;
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

    createFixLines();
    auto* nextRow = new QHBoxLayout;
    nextRow->addWidget(next_, 1);
    nextRow->addWidget(nextButton_);
    suspectsTitle_ = new QLabel(this);
    auto* content = new QWidget(this);
    auto* inner = new QVBoxLayout(content);
    inner->addWidget(verdict_);
    inner->addWidget(savedFixRow_);
    inner->addWidget(provenanceRow_);
    inner->addWidget(beforeAfter_);
    inner->addLayout(nextRow);
    inner->addWidget(suspectsTitle_);
    inner->addWidget(suspects_, 1);
    inner->addWidget(consumers_);
    // Takes the spare height while the suspect table is hidden (a good verdict, a float checkpoint),
    // so that the lines above keep together; the table's stretch wins while it is shown.
    inner->addStretch(0);
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

// The saved-fix line (Open Fixed Checkpoint, Compare with the Original), the open fix's
// provenance line (Compare with the Original) and the before/after line.
void TriagePanel::createFixLines()
{
    savedFixLabel_ = new QLabel(this);
    savedFixLabel_->setObjectName(QStringLiteral("triageSavedFix"));
    QPushButton* openFixed = fixButton(tr("Open Fixed Checkpoint"), "triageOpenFixed", this);
    QPushButton* compareFixed = fixButton(tr("Compare with the Original"), "triageCompareOriginal", this);
    compareFixed->setToolTip(tr("Opens the fixed checkpoint on the reference it was verified against, answers the same "
                                "input and runs this original beside it"));
    connect(openFixed, &QPushButton::clicked, this, [this] { emit openFixedRequested(savedFix_, QString()); });
    connect(compareFixed, &QPushButton::clicked, this, [this] { emit openFixedRequested(savedFix_, savedFixFrom_); });
    savedFixRow_ = fixRow(savedFixLabel_, {openFixed, compareFixed}, this);
    provenanceLabel_ = new QLabel(this);
    provenanceLabel_->setObjectName(QStringLiteral("triageProvenance"));
    provenanceCompare_ = fixButton(tr("Compare with the Original"), "triageProvenanceCompare", this);
    connect(provenanceCompare_, &QPushButton::clicked, this, [this] { emit openFixedRequested(QString(), provenanceSource_); });
    provenanceRow_ = fixRow(provenanceLabel_, {provenanceCompare_}, this);
    beforeAfter_ = new QLabel(this);
    beforeAfter_->setObjectName(QStringLiteral("triageBeforeAfter"));
    beforeAfter_->setWordWrap(true);
    beforeAfter_->setTextFormat(Qt::RichText);
    beforeAfter_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    beforeAfter_->hide();
}

void TriagePanel::takeResult(const PanelResult& result)
{
    if (result.checkpoint) {
        checkpoint_ = result.checkpoint;
        comparison_.reset();
        evaluation_.reset();
        sweep_.reset();
        compareWith_.reset();
        readProvenance();
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
        sweepComparison_ = comparison_;
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

void TriagePanel::readProvenance()
{
    provenanceText_.clear();
    provenanceSource_.clear();
    try {
        const std::optional<nlohmann::json> provenance = readFixProvenance(checkpoint_->directory.toStdString());
        if (!provenance)
            return;
        provenanceSource_ = QString::fromStdString(provenanceSource(*provenance));
        const QString reference = QString::fromStdString(provenanceReference(*provenance));
        const QString against = reference.isEmpty() ? tr("the original's dequantized weights")
                                : QFileInfo(reference).isDir()
                                    ? tr("the reference %1").arg(reference)
                                    : tr("the reference %1, which is no longer there, so it is compared with its own dequantized "
                                         "weights here (Reference > Choose... picks another)").arg(reference);
        QString numbers;
        const nlohmann::json measurement = provenance->value("measurement", nlohmann::json());
        auto db = [](const nlohmann::json& side) {
            const nlohmann::json value = side.is_object() ? side.value("sqnr_db", nlohmann::json()) : nlohmann::json();
            return value.is_number() ? decibelText(value.get<double>()) : QStringLiteral("?");
        };
        if (measurement.is_object())
            numbers = tr("; the %1 measured the final SQNR at %2 dB before and %3 dB after")
                          .arg(QString::fromStdString(measurement.value("measured_by", std::string())),
                               db(measurement.value("before", nlohmann::json())), db(measurement.value("after", nlohmann::json())));
        provenanceText_ = tr("This checkpoint is a fix of %1%2, verified against %3 on %4%5.")
                              .arg(provenanceSource_,
                                   provenanceSourceUnchanged(*provenance) ? QString() : tr(" (gone or changed since)"), against,
                                   QString::fromStdString(provenanceInputsText(*provenance)), numbers);
    } catch (const Error& e) {
        provenanceText_ = QString::fromUtf8(e.what());
    }
}

void TriagePanel::showSavedFix(const QString& folder, const QString& summary)
{
    savedFix_ = folder;
    savedFixFrom_ = checkpoint_ ? checkpoint_->directory : QString();
    savedFixSummary_ = summary;
    showFixLines();
}

void TriagePanel::setCompareWith(std::shared_ptr<const CompareWithOutcome> b)
{
    compareWith_ = std::move(b);
    showFixLines();
}

void TriagePanel::showFixLines()
{
    const bool saved = !savedFix_.isEmpty() && checkpoint_ && savedFixFrom_ == checkpoint_->directory;
    savedFixLabel_->setText(saved ? savedFixSummary_ : QString());
    savedFixRow_->setVisible(saved);
    provenanceLabel_->setText(provenanceText_);
    provenanceRow_->setVisible(!provenanceText_.isEmpty());
    provenanceCompare_->setVisible(QFileInfo(provenanceSource_).isDir() && checkpoint_ && checkpoint_->runnable);
    const QString beforeAfter = beforeAfterText();
    beforeAfter_->setText(beforeAfter);
    beforeAfter_->setVisible(!beforeAfter.isEmpty());
}

// The checkpoint compared with (File > Compare With, or Compare with the Original) beside this
// one, on the same input and reference: before and after when B is the original of this fix.
QString TriagePanel::beforeAfterText() const
{
    if (!compareWith_ || !compareWith_->comparison || !comparison_ || !isCurrent(comparisonStamp_))
        return {};
    const bool original = !provenanceSource_.isEmpty() && QFileInfo(provenanceSource_) == QFileInfo(compareWith_->directory);
    return tr("<b>%1</b> on the same input against %2: %3 %4; this checkpoint %5.")
        .arg(original ? tr("Before and after the fix") : tr("Beside %1").arg(QFileInfo(compareWith_->directory).fileName().toHtmlEscaped()),
             QString::fromStdString(comparison_->referenceLabel).toHtmlEscaped(),
             original ? tr("the original (%1)").arg(QFileInfo(compareWith_->directory).fileName().toHtmlEscaped())
                      : tr("it"),
             sideText(*compareWith_->comparison), sideText(*comparison_));
}

bool TriagePanel::anythingQuantized() const
{
    if (!checkpoint_)
        return false;
    return std::any_of(checkpoint_->statistics.begin(), checkpoint_->statistics.end(),
                       [](const LinearScaleStatistics& s) { return s.quantized; }) ||
           std::any_of(checkpoint_->linears.begin(), checkpoint_->linears.end(), [](const LinearInfo& l) { return l.quantized; });
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
    if (!anythingQuantized())
        return {}; // nothing to judge: a float checkpoint is its own reference
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
    if (!anythingQuantized())
        return tr("<p style='font-size:large'><b>No FP8 verdict</b>: nothing in this checkpoint is quantized.</p>"
                  "Every Linear is float, so there is nothing to judge. It can be the float reference of an FP8 "
                  "checkpoint of this model (open that one, then Reference &gt; Choose... this folder), or be "
                  "quantized to FP8 (Quantize...).");
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
                    .arg(coloured(gradeSqnr(sqnr), tr("%1 dB, %2").arg(decibelText(sqnr), gradeWord(gradeSqnr(sqnr)))))
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
    // inspect's words, the AIU per loading: the GUI and the CLI say the same of a checkpoint.
    return tr("<b>How each runtime loads this checkpoint</b> (details: Model &gt; Consumers): %1")
        .arg(consumerVerdictsText(checkpoint_->consumers, true));
}

// The sweep's ranking when there is one (it measured what keeping each entry float recovers);
// otherwise the Linears whose outputs lost most in the last run; findings that name a Linear
// are added to its reason, or make it a suspect of its own.
std::vector<TriagePanel::Suspect> TriagePanel::rankSuspects() const
{
    std::vector<Suspect> suspects;
    // Suspects only where there is something wrong to find: not on a float checkpoint, not under a
    // good verdict (closestToTheLine() names the nearest Linear instead).
    if (!checkpoint_ || !anythingQuantized() || overallGrade() == QLatin1String("good"))
        return suspects;
    auto labelOf = [this](const std::string& module) {
        for (const LinearScaleStatistics& s : checkpoint_->statistics)
            if (s.module == module)
                return QString::fromStdString(s.label);
        return QString::fromStdString(module);
    };
    if (sweepOfThisInput() && sweep_->complete) {
        for (const SensitivityEntry& entry : sweep_->entries) {
            if (suspects.size() == kShownSuspects)
                break;
            if (sensitivityNoMeasurableEffect(entry, sweep_->spread))
                continue; // keeping it float changes nothing beyond the run-to-run spread
            // The sweep's own two measures (tasks/sensitivity.h), as its chart draws them.
            QString why = tr("%1 %2; %3 %4")
                              .arg(decibelText(entry.recoveredDb), QString::fromUtf8(kRecoveredMeasure),
                                   decibelText(entry.lostAloneDb), QString::fromUtf8(kLostAloneMeasure));
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
                                    .arg(decibelText(outputs[i]->metrics.sqnrDb), gradeWord(gradeSqnr(outputs[i]->metrics.sqnrDb)))});
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
    // A good verdict and a float checkpoint have no suspect list at all; the title says why.
    suspects_->setVisible(!suspects.empty() || (anythingQuantized() && overallGrade() != QLatin1String("good")));
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
    const bool sweepCurrent = sweepOfThisInput() && isCurrent(sweepStamp_);
    if (!checkpoint_) {
        sentence = tr("Open a checkpoint (File > Open, Ctrl+O) or one of the Demo menu's.");
    } else if (!checkpoint_->runnable) {
        sentence = tr("This checkpoint cannot run (%1): fix what the Model tab's diagnostics name.").arg(checkpoint_->loadError);
    } else if (!anythingQuantized()) {
        sentence = tr("Nothing to fix: quantize this float checkpoint to FP8 (the Calibration tab writes one), or use it "
                      "as the reference of an FP8 checkpoint.");
        nextStep_ = NextStep::Quantize;
        button = tr("Quantize...");
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

// Under a good verdict: the Linear whose output lost most in the last run, as one phrase.
QString TriagePanel::closestToTheLine() const
{
    if (!comparison_ || overallGrade() != QLatin1String("good"))
        return {};
    const CapturePointMetrics* closest = nullptr;
    for (const CapturePointMetrics& p : comparison_->points)
        if (p.kind == CaptureKind::LinearOutput && (!closest || p.metrics.sqnrDb < closest->metrics.sqnrDb))
            closest = &p;
    return closest ? tr("%1 (its output's SQNR is %2 dB)")
                         .arg(QString::fromStdString(closest->label.empty() ? closest->module : closest->label),
                              decibelText(closest->metrics.sqnrDb))
                   : QString();
}

void TriagePanel::refresh()
{
    closest_ = closestToTheLine();
    const bool good = overallGrade() == QLatin1String("good");
    suspectsTitle_->setText(!checkpoint_ || anythingQuantized() ? QString() : tr("<b>No suspects</b>: nothing is quantized."));
    if (good)
        suspectsTitle_->setText(closest_.isEmpty() ? tr("<b>No suspects</b>: the verdict is good.")
                                                   : tr("<b>No suspects</b>: the verdict is good. Closest to the line: %1")
                                                         .arg(closest_.toHtmlEscaped()));
    if (suspectsTitle_->text().isEmpty())
        suspectsTitle_->setText(sweepOfThisInput() && sweep_->complete
                                ? tr("<b>Suspects</b>, ranked by the sweep: what keeping each float recovers")
                            : comparison_ ? tr("<b>Suspects</b>: the Linears with the lowest output SQNR in the last run "
                                               "(the sweep ranks them by what they cost the final output)")
                                          : tr("<b>Suspects</b>: the Linears the diagnostics name"));
    verdict_->setText(verdictText());
    consumers_->setText(consumersText());
    fillSuspects(rankSuspects());
    chooseNextStep();
    showFixLines();
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
        verdict["final_sqnr_db"] = std::isfinite(finalSqnr()) ? nlohmann::json(finalSqnr()) : nlohmann::json(decibelText(finalSqnr()).toStdString());
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
    verdict["closest_to_the_line"] = closest_.isEmpty() ? nlohmann::json() : nlohmann::json(closest_.toStdString());
    if (checkpoint_ && !anythingQuantized())
        verdict["note"] = "nothing in this checkpoint is quantized: no FP8 verdict";
    section.summary()["verdict"] = verdict;
}

} // namespace scalescope::ui
