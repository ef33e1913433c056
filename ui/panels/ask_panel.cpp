#include "panels/ask_panel.h"

#include <algorithm>

#include <QCheckBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QShortcut>
#include <QSpinBox>
#include <QSplitter>
#include <QScrollBar>
#include <QTableView>
#include <QTextBlock>
#include <QVBoxLayout>

#include "charts/chart_view.h"
#include "models/answers_model.h"
#include "models/probability_bar_delegate.h"
#include "report/charts.h"
#include "report_section.h"
#include "stale_banner.h"
#include "tasks/question_answering.h"
#include "text/bpe_tokenizer.h" // byteOffsetOfCodePoint
#include "session_results.h"
#include "workbench_session.h"

namespace scalescope::ui {

int stringPositionOfCodePoint(const QString& text, int codePoint)
{
    int position = 0;
    for (int cp = 0; cp < codePoint && position < text.size(); ++cp)
        position += (text.at(position).isHighSurrogate() && position + 1 < text.size()) ? 2 : 1;
    return position;
}

AskPanel::AskPanel(WorkbenchSession* session, QWidget* parent) : QWidget(parent)
{
    createInputs();
    createResults();
    layOut();
    connectKeys();
    connect(this, &AskPanel::askRequested, session, &WorkbenchSession::ask);
    connect(banner_, &StaleBanner::rerunRequested, this, &AskPanel::rerun);
}

void AskPanel::askAbout(const QString& question, const QString& context)
{
    setInputs(question, context);
    emit askRequested(question, context, options());
}

void AskPanel::rerun()
{
    if (outcome_)
        emit askRequested(outcome_->question, outcome_->context, outcome_->options);
}

void AskPanel::createInputs()
{
    question_ = new QLineEdit(this);
    question_->setPlaceholderText(tr("Question"));
    context_ = new QPlainTextEdit(this);
    context_->setPlaceholderText(tr("Context: the passage the answer is taken from"));
    // Tab moves on instead of inserting a tab character (which would change the passage).
    context_->setTabChangesFocus(true);
    ask_ = new QPushButton(tr("Answer"), this);
    ask_->setToolTip(tr("Run the FP8 model and its reference (Ctrl+Enter)"));
    topK_ = new QSpinBox(this);
    topK_->setRange(1, 20);
    topK_->setValue(10);
    maxAnswerLength_ = new QSpinBox(this);
    maxAnswerLength_->setRange(1, 512);
    maxAnswerLength_->setValue(30);
    maxAnswerLength_->setSuffix(tr(" tokens"));
    allowNoAnswer_ = new QCheckBox(tr("Allow no answer (SQuAD 2.0), threshold"), this);
    nullThreshold_ = new QDoubleSpinBox(this);
    nullThreshold_->setRange(-100, 100);
    nullThreshold_->setDecimals(2);
    nullThreshold_->setEnabled(false);
    connect(allowNoAnswer_, &QCheckBox::toggled, nullThreshold_, &QWidget::setEnabled);

}

// The options row under the context: answers, length, SQuAD 2.0 null answer, and the Answer button.
QLayout* AskPanel::optionsRow()
{
    auto* options = new QHBoxLayout;
    options->addWidget(new QLabel(tr("Answers:"), this));
    options->addWidget(topK_);
    options->addSpacing(12);
    options->addWidget(new QLabel(tr("Max answer length:"), this));
    options->addWidget(maxAnswerLength_);
    options->addSpacing(12);
    options->addWidget(allowNoAnswer_);
    options->addWidget(nullThreshold_);
    options->addStretch(1);
    options->addWidget(ask_);

    return options;
}

void AskPanel::createResults()
{
    result_ = new QLabel(tr("Ask a question about the context."), this);
    result_->setWordWrap(true);
    result_->setTextInteractionFlags(Qt::TextSelectableByMouse);

    answers_ = new AnswersModel(this);
    answersView_ = new QTableView(this);
    answersView_->setModel(answers_);
    answersView_->verticalHeader()->hide();
    answersView_->setSelectionBehavior(QAbstractItemView::SelectRows);
    answersView_->setItemDelegate(new ProbabilityBarDelegate(answersView_));
    // The answers share the width the numbers leave (and wrap), so the side-by-side table never
    // needs a horizontal scroll bar; the numbers are sized to their contents in showOutcome.
    answersView_->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
    for (int column : {int(AnswersModel::RunAnswerColumn), int(AnswersModel::ReferenceAnswerColumn)})
        answersView_->horizontalHeader()->setSectionResizeMode(column, QHeaderView::Stretch);
    answersView_->horizontalHeader()->setStretchLastSection(false);
    // Before any answer the number columns would keep the default 100 px each and squeeze the
    // answer columns' headers to "eference answe": sized to their header text instead.
    answersView_->resizeColumnsToContents();
    answersView_->setWordWrap(true);
    answersView_->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    // Tab leaves the table (arrow keys move within it).
    answersView_->setTabKeyNavigation(false);

    logits_ = new ChartView(this);
    logits_->setPlaceholder(tr("The start and end logits over the tokens appear here after a question is answered."));

}

void AskPanel::layOut()
{
    auto* inputs = new QWidget(this);
    auto* inputLayout = new QVBoxLayout(inputs);
    inputLayout->setContentsMargins(0, 0, 0, 0);
    inputLayout->addWidget(question_);
    inputLayout->addWidget(context_, 1);
    inputLayout->addLayout(optionsRow());
    inputLayout->addWidget(result_);

    auto* splitter = new QSplitter(Qt::Vertical, this);
    splitter->setObjectName(QStringLiteral("askSplitter"));
    splitter->addWidget(inputs);
    splitter->addWidget(answersView_);
    splitter->addWidget(logits_);
    splitter->setStretchFactor(0, 1);
    splitter->setStretchFactor(1, 1);
    splitter->setStretchFactor(2, 1);
    // The logits chart's rotated token labels and legend take ~110 px: it gets the most room.
    splitter->setSizes({240, 170, 380});
    banner_ = new StaleBanner(this);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(banner_);
    layout->addWidget(splitter, 1);

}

void AskPanel::connectKeys()
{
    // Reading order: question, context, the options, Answer, then the results.
    setTabOrder(question_, context_);
    setTabOrder(context_, topK_);
    setTabOrder(topK_, maxAnswerLength_);
    setTabOrder(maxAnswerLength_, allowNoAnswer_);
    setTabOrder(allowNoAnswer_, nullThreshold_);
    setTabOrder(nullThreshold_, ask_);
    setTabOrder(ask_, answersView_);
    ask_->setFocusPolicy(Qt::StrongFocus);
    ask_->setAutoDefault(true);

    // The highlights and answer offsets point into the text as it was asked; an edit invalidates them.
    connect(context_, &QPlainTextEdit::textChanged, this, [this] {
        if (!showingResult_ || context_->extraSelections().isEmpty())
            return;
        context_->setExtraSelections({});
        result_->setText(result_->text() + tr("<br><i>The context was edited after this answer: its highlights "
                                              "were removed. Answer again for the new text.</i>"));
    });

    connect(ask_, &QPushButton::clicked, this, &AskPanel::requestAsk);
    connect(question_, &QLineEdit::returnPressed, this, &AskPanel::requestAsk);
    for (const QKeySequence& keys : {QKeySequence(Qt::CTRL | Qt::Key_Return), QKeySequence(Qt::CTRL | Qt::Key_Enter)}) {
        auto* shortcut = new QShortcut(keys, this);
        shortcut->setContext(Qt::WidgetWithChildrenShortcut);
        connect(shortcut, &QShortcut::activated, this, &AskPanel::requestAsk);
    }
}

void AskPanel::setInputs(const QString& question, const QString& context)
{
    question_->setText(question);
    context_->setPlainText(context);
}

void AskPanel::clearResults(const QString& why)
{
    showingResult_ = false;
    outcome_.reset();
    answers_->clear();
    logitsA_ = {};
    logitTokens_.clear();
    drawLogits();
    context_->setExtraSelections({});
    result_->setText(why);
    banner_->clearResult();
}

void AskPanel::setRunnable(bool runnable, const QString& reason)
{
    runnable_ = runnable;
    notRunnableReason_ = reason;
    updateAskEnabled();
}

void AskPanel::updateAskEnabled()
{
    ask_->setEnabled(!busy_ && runnable_);
    ask_->setToolTip(runnable_ ? tr("Run the quantized model and its reference (Ctrl+Enter)")
                               : tr("Cannot answer: %1").arg(notRunnableReason_));
}

QString AskPanel::question() const { return question_->text(); }
QString AskPanel::context() const { return context_->toPlainText(); }

QaOptions AskPanel::options() const
{
    QaOptions options;
    options.topK = topK_->value();
    options.nBest = std::max(20, options.topK);
    options.maxAnswerLen = maxAnswerLength_->value();
    if (allowNoAnswer_->isChecked())
        options.nullThreshold = static_cast<float>(nullThreshold_->value());
    return options;
}

void AskPanel::setBusy(bool busy)
{
    busy_ = busy;
    updateAskEnabled();
}

void AskPanel::requestAsk()
{
    if (!ask_->isEnabled())
        return;
    if (question_->text().trimmed().isEmpty() || context_->toPlainText().trimmed().isEmpty()) {
        result_->setText(tr("Type a question and a context first."));
        return;
    }
    emit askRequested(question_->text(), context_->toPlainText(), options());
}

void AskPanel::takeResult(const PanelResult& result)
{
    if (!result.ask)
        return;
    outcome_ = result.ask;
    showOutcome(*result.ask, result.referenceLabel);
    warnIfOutsideDemoCorpus(*result.ask);
}

void AskPanel::warnIfOutsideDemoCorpus(const AskOutcome& outcome)
{
    if (!demo_.holdsCheckpoint(outcome.stamp.checkpoint) || demo_.holdsPassage(outcome.context))
        return;
    result_->setText(result_->text() +
                     tr("<br><span style='color:#8a5a00'>The demo models were trained on the demo passages "
                        "only (Demo &gt; Passages): about other text their answers mean nothing.</span>"));
}

void AskPanel::addToReport(ReportSection& section, bool runResultCurrent) const
{
    if (!runResultCurrent)
        return;
    section.addChart(logits_);
    section.addTable(QStringLiteral("answers"), answers_);
    if (outcome_) {
        section.summary()["question"] = outcome_->question.toStdString();
        section.summary()["context"] = outcome_->context.toStdString();
    }
}

void AskPanel::showOutcome(const AskOutcome& outcome, const QString& referenceLabel)
{
    answers_->setRunLabel(outcome.stamp.modeName());
    answers_->setAnswers(outcome.runAnswers, outcome.referenceAnswers, true);
    answersView_->resizeColumnsToContents();
    // Score bars fill their cell in proportion: both score columns get one width (one scale).
    const int scoreWidth = std::max(answersView_->columnWidth(AnswersModel::RunScoreColumn),
                                    answersView_->columnWidth(AnswersModel::ReferenceScoreColumn));
    for (int column : {int(AnswersModel::RunScoreColumn), int(AnswersModel::ReferenceScoreColumn)})
        answersView_->setColumnWidth(column, scoreWidth);
    answersView_->horizontalScrollBar()->setValue(0);
    banner_->setResultStamp(outcome.stamp);
    showingResult_ = true;

    auto describe = [](const std::vector<QaAnswer>& answers) {
        if (answers.empty())
            return tr("no span found");
        const QaAnswer& a = answers.front();
        if (a.isNull)
            return tr("<i>no answer</i> (p = %1)").arg(a.score, 0, 'f', 3);
        return tr("<b>%1</b> (p = %2)").arg(QString::fromStdString(a.text).toHtmlEscaped()).arg(a.score, 0, 'f', 3);
    };
    // The comparison's verdict (answersAgree, the one definition; never on non-finite outputs).
    const bool agree = outcome.comparison && outcome.comparison->qa ? outcome.comparison->qa->sameBestAnswer
                       : !outcome.runAnswers.empty() && !outcome.referenceAnswers.empty()
                           ? answersAgree(outcome.runAnswers.front(), outcome.referenceAnswers.front())
                           : outcome.runAnswers.empty() && outcome.referenceAnswers.empty();
    result_->setText(tr("<span style='background:#cfe3f7'>%1</span>: %2 &nbsp;&nbsp; "
                        "<span style='border-bottom:2px solid #e69f00'>Reference</span> (%3): %4 &nbsp;&nbsp; %5")
                         .arg(outcome.stamp.modeName(), describe(outcome.runAnswers), referenceLabel.toHtmlEscaped(),
                              describe(outcome.referenceAnswers),
                              agree ? tr("<span style='color:#1a7f37'>agree</span>")
                                    : tr("<span style='color:#b00'>differ</span>")));

    highlightAnswers(outcome);
    showLogits(outcome);
}

// Both best answers in the context: the run's with a background, the reference's underlined, so
// the two stay distinguishable when they overlap.
void AskPanel::highlightAnswers(const AskOutcome& outcome)
{
    QList<QTextEdit::ExtraSelection> selections;
    const QString text = context_->toPlainText();
    auto select = [&](const std::vector<QaAnswer>& answers, bool run) {
        if (answers.empty() || answers.front().isNull)
            return;
        QTextEdit::ExtraSelection selection;
        selection.cursor = QTextCursor(context_->document());
        selection.cursor.setPosition(stringPositionOfCodePoint(text, answers.front().start));
        selection.cursor.setPosition(stringPositionOfCodePoint(text, answers.front().end), QTextCursor::KeepAnchor);
        if (run) {
            selection.format.setBackground(QColor(0xcf, 0xe3, 0xf7));
        } else {
            selection.format.setUnderlineStyle(QTextCharFormat::SingleUnderline);
            selection.format.setUnderlineColor(QColor(0xe6, 0x9f, 0x00));
            selection.format.setFontUnderline(true);
        }
        selections << selection;
    };
    select(outcome.runAnswers, true);
    select(outcome.referenceAnswers, false);
    context_->setExtraSelections(selections);

}

namespace {

// The first and last context token of `encoding` that the best answer's characters overlap;
// {-1, -1} for no answer, the null answer, or an answer outside this window.
std::pair<int, int> answerTokens(const Encoding& encoding, const std::vector<QaAnswer>& answers)
{
    if (answers.empty() || answers.front().isNull)
        return {-1, -1};
    const QaAnswer& answer = answers.front();
    int first = -1, last = -1;
    for (std::size_t i = 0; i < encoding.ids.size(); ++i) {
        const auto [start, end] = encoding.offsets[i];
        if (encoding.sequenceIds[i] != 1 || end <= answer.start || start >= answer.end)
            continue;
        if (first < 0)
            first = static_cast<int>(i);
        last = static_cast<int>(i);
    }
    return {first, last};
}

} // namespace

// Logits of the window holding the run's best answer (the first window otherwise).
void AskPanel::showLogits(const AskOutcome& outcome)
{
    if (!outcome.comparison || !outcome.comparison->qa)
        return;
    const QaAgreement& qa = *outcome.comparison->qa;
    std::size_t window = 0;
    if (!outcome.runAnswers.empty() && outcome.runAnswers.front().window >= 0)
        window = static_cast<std::size_t>(outcome.runAnswers.front().window);
    if (window >= qa.windows.size())
        return;
    const Encoding& encoding = qa.windows[window].encoding;
    std::vector<std::string> tokens;
    const std::string question = outcome.question.toStdString();
    const std::string context = outcome.context.toStdString();
    for (std::size_t i = 0; i < encoding.ids.size(); ++i) {
        const auto [start, end] = encoding.offsets[i];
        const std::string& source = encoding.sequenceIds[i] == 0 ? question : context;
        if (encoding.sequenceIds[i] < 0) {
            // The tokenizer's own spelling of its specials ([CLS], [SEP] for BERT).
            const auto special = outcome.specialTokens.find(encoding.ids[i]);
            tokens.push_back(special != outcome.specialTokens.end() ? special->second : std::string());
        } else {
            const std::size_t from = byteOffsetOfCodePoint(source, start);
            tokens.push_back(source.substr(from, byteOffsetOfCodePoint(source, end) - from));
        }
    }
    ChartData chart
        = qaLogitsChart(tokens, qa.runStartLogits[window], qa.runEndLogits[window], qa.referenceStartLogits[window],
            qa.referenceEndLogits[window], true, answerTokens(encoding, outcome.runAnswers));
    relabelRunSeries(chart, outcome.stamp.modeName());
    logitsA_ = chart;
    logitTokens_ = tokens;
    logitWindow_ = window;
    drawLogits();
    logits_->setStamp(outcome.stamp.describe());
}

void AskPanel::setCompareWith(std::shared_ptr<const CompareWithOutcome> b)
{
    compareWith_ = std::move(b);
    drawLogits();
}

void AskPanel::drawLogits()
{
    if (!compareWith_) {
        logits_->setChart(logitsA_);
        return;
    }
    // B's run of the same question has the same windows (same model, tokenizer and options).
    const ComparisonResult* b = compareWith_->comparison.get();
    const QaAgreement* qa = b && b->qa ? &*b->qa : nullptr;
    if (!qa || logitWindow_ >= qa->runStartLogits.size() || qa->runStartLogits[logitWindow_].size() != logitTokens_.size()) {
        logits_->setChart(overlayOrAbsent(logitsA_, nullptr, "A", "B"));
        return;
    }
    ChartData bChart = qaLogitsChart(logitTokens_, qa->runStartLogits[logitWindow_], qa->runEndLogits[logitWindow_], {}, {}, false);
    relabelRunSeries(bChart, compareWith_->stamp.modeName());
    logits_->setChart(overlayOrAbsent(logitsA_, &bChart, "A", "B"));
}

} // namespace scalescope::ui
