#include "panels/classify_panel.h"

#include <QFont>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QStandardItemModel>
#include <QTableView>
#include <QVBoxLayout>

#include <algorithm>

#include "charts/chart_view.h"
#include "models/probability_bar_delegate.h"
#include "panels/task_panel_parts.h"
#include "report/task_charts.h"
#include "report/task_json.h"
#include "report_section.h"
#include "stale_banner.h"
#include "workbench_session.h"

namespace scalescope::ui {
namespace {

const QColor kChosenLabel(0xDD, 0xEB, 0xF7);

QStandardItem* probabilityItem(double probability)
{
    QStandardItem* item = numberItem(probability, 4);
    item->setData(probability, ProbabilityBarDelegate::DefaultProbabilityRole);
    return item;
}

// What the sides decided, in words: the label (single-label), the labels above 0.5 (multi-label),
// the raw score (a score).
QString decisionText(const ClassifyResult& result, const ClassSide& side)
{
    switch (result.problem) {
    case ClassificationProblem::SingleLabel:
        return QStringLiteral("%1 (%2)").arg(QString::fromStdString(side.label)).arg(side.probabilities.at(std::size_t(side.labelId)), 0, 'f', 4);
    case ClassificationProblem::MultiLabel: {
        QStringList on;
        for (std::size_t i = 0; i < side.probabilities.size(); ++i)
            if (side.probabilities[i] > 0.5)
                on << QString::fromStdString(i < result.labels.size() ? result.labels[i] : "LABEL_" + std::to_string(i));
        return on.isEmpty() ? ClassifyPanel::tr("no label above 0.5") : on.join(QStringLiteral(", "));
    }
    case ClassificationProblem::Score:
        return ClassifyPanel::tr("score %1").arg(side.logits.empty() ? 0.0 : double(side.logits.front()), 0, 'f', 4);
    }
    return {};
}

} // namespace

ClassifyPanel::ClassifyPanel(WorkbenchSession* session, QWidget* parent) : QWidget(parent)
{
    auto* content = new QWidget(this);
    banner_ = new StaleBanner(content);
    text_ = new QLineEdit(content);
    text_->setPlaceholderText(tr("The text to classify"));
    pair_ = new QLineEdit(content);
    pair_->setPlaceholderText(tr("Optional second text of a pair (a premise's hypothesis, a query's passage)"));
    classify_ = new QPushButton(tr("Classify"), content);
    runState_ = std::make_unique<RunButtonState>(classify_, tr("Classify the text with the quantized model and its reference"));
    auto* form = new QFormLayout;
    form->addRow(tr("Text"), text_);
    form->addRow(tr("Pair"), pair_);
    auto* inputRow = new QHBoxLayout;
    inputRow->addLayout(form, 1);
    inputRow->addWidget(classify_, 0, Qt::AlignBottom);

    flip_ = new QLabel(content);
    flip_->setObjectName(QStringLiteral("labelFlip"));
    // The same warning colours as a stale banner: a flip is the first thing to see.
    flip_->setStyleSheet(QStringLiteral("#labelFlip { background: #f8d7da; border: 1px solid #d9534f; color: #6b1a1a; "
                                        "padding: 4px; font-weight: bold; }"));
    flip_->setWordWrap(true);
    flip_->hide();
    result_ = new QLabel(tr("Write a text (and a pair if the model takes two) and press Classify."), content);
    result_->setWordWrap(true);
    labels_ = new QStandardItemModel(this);
    labelsView_ = new QTableView(content);
    labelsView_->setModel(labels_);
    labelsView_->verticalHeader()->hide();
    labelsView_->horizontalHeader()->setStretchLastSection(true);
    labelsView_->setItemDelegate(new ProbabilityBarDelegate(labelsView_));
    labelsView_->setMinimumHeight(170);
    chart_ = new ChartView(content);
    chart_->setPlaceholder(tr("The probabilities of both sides appear here after Classify."));
    chart_->setMinimumHeight(260);
    auto* resultsRow = new QHBoxLayout;
    resultsRow->addWidget(labelsView_, 1);
    resultsRow->addWidget(chart_, 1);

    auto* layout = new QVBoxLayout(content);
    layout->addWidget(banner_);
    layout->addLayout(inputRow);
    layout->addWidget(flip_);
    layout->addWidget(result_);
    layout->addLayout(resultsRow, 1);
    setScrollingPage(this, content);

    connect(classify_, &QPushButton::clicked, this, &ClassifyPanel::requestClassify);
    connect(text_, &QLineEdit::returnPressed, this, &ClassifyPanel::requestClassify);
    connect(pair_, &QLineEdit::returnPressed, this, &ClassifyPanel::requestClassify);
    addRunShortcut(this, [this] { requestClassify(); });
    connect(this, &ClassifyPanel::classifyRequested, session, &WorkbenchSession::classify);
    connect(banner_, &StaleBanner::rerunRequested, this, &ClassifyPanel::rerun);
}

ClassifyPanel::~ClassifyPanel() = default;

void ClassifyPanel::setRunnable(bool runnable, const QString& reason) { runState_->setRunnable(runnable, reason); }
void ClassifyPanel::setBusy(bool busy) { runState_->setBusy(busy); }
QString ClassifyPanel::text() const { return text_->text().trimmed(); }
QString ClassifyPanel::pair() const { return pair_->text().trimmed(); }

void ClassifyPanel::setInputs(const QString& text, const QString& pair)
{
    text_->setText(text);
    pair_->setText(pair);
}

void ClassifyPanel::requestClassify()
{
    if (!classify_->isEnabled())
        return;
    if (text().isEmpty()) {
        result_->setText(tr("Write a text to classify."));
        return;
    }
    emit classifyRequested(text(), pair());
}

void ClassifyPanel::rerun()
{
    if (outcome_)
        emit classifyRequested(outcome_->text, outcome_->pair);
}

void ClassifyPanel::takeResult(const PanelResult& result)
{
    if (!result.classify)
        return;
    outcome_ = result.classify;
    showOutcome(*outcome_, result.referenceLabel);
}

void ClassifyPanel::clearResults(const QString& why)
{
    outcome_.reset();
    labels_->clear();
    chart_->setChart({});
    chart_->setStamp(QString());
    flip_->clear();
    flip_->hide();
    result_->setText(why);
    banner_->clearResult();
}

void ClassifyPanel::showOutcome(const ClassifyOutcome& outcome, const QString& referenceLabel)
{
    const ClassifyResult& result = *outcome.result;
    const ClassifiedInput& input = result.inputs.at(0);
    const QString mode = outcome.stamp.modeName();
    banner_->setResultStamp(outcome.stamp);
    flip_->setVisible(input.flip);
    flip_->setText(input.flip ? tr("The decision flips: %1 says %2, the reference says %3.")
                                    .arg(mode, decisionText(result, input.run), decisionText(result, input.reference))
                              : QString());
    // A score (regression, a reranker's relevance) is no distribution: it has no KL.
    const QString kl = input.kl ? tr("KL(reference || run) %1 nats").arg(*input.kl, 0, 'g', 4)
                                : tr("no KL (a score is not a distribution)");
    QString summary = tr("%1 vs %2 (%3): %4 %5, the reference %6; %7. Errors and Scales show %8.")
                          .arg(mode, referenceLabel, QString::fromLatin1(classificationProblemName(result.problem)), mode,
                               decisionText(result, input.run), decisionText(result, input.reference), kl)
                          .arg(outcome.comparedInput);
    if (input.truncated)
        summary += tr(" The input was cut to the model's longest sequence.");
    for (const std::string& note : result.notes)
        summary += QLatin1Char(' ') + QString::fromStdString(note);
    result_->setText(summary);
    showLabels(result);
    chart_->setChart(classProbabilitiesChart(result, 0, mode.toStdString()));
    chart_->setStamp(outcome.stamp.describe());
}

// One row per label: both sides' probabilities as bars and their logits; each side's chosen label
// (single-label) or labels above 0.5 (multi-label) shaded.
void ClassifyPanel::showLabels(const ClassifyResult& result)
{
    const ClassifiedInput& input = result.inputs.at(0);
    const bool score = result.problem == ClassificationProblem::Score;
    labels_->clear();
    // Short headers, the whole words in their tooltips: the table fits beside its chart at 1366 px.
    labels_->setHorizontalHeaderLabels({tr("label"), score ? tr("run sigmoid") : tr("run p"),
                                        score ? tr("ref sigmoid") : tr("ref p"), tr("run logit"), tr("ref logit")});
    const QStringList whole{tr("label"), score ? tr("run sigmoid") : tr("run probability"),
                            score ? tr("reference sigmoid") : tr("reference probability"), tr("run logit"),
                            tr("reference logit")};
    for (int column = 0; column < whole.size(); ++column)
        labels_->horizontalHeaderItem(column)->setToolTip(whole[column]);
    auto chosen = [&](const ClassSide& side, std::size_t i) {
        return result.problem == ClassificationProblem::SingleLabel ? std::size_t(side.labelId) == i
                                                                   : side.probabilities[i] > 0.5;
    };
    for (std::size_t i = 0; i < input.run.probabilities.size(); ++i) {
        const QString label = QString::fromStdString(i < result.labels.size() ? result.labels[i] : "LABEL_" + std::to_string(i));
        QList<QStandardItem*> row{textItem(label), probabilityItem(input.run.probabilities[i]),
                                  probabilityItem(input.reference.probabilities.at(i)),
                                  numberItem(input.run.logits.at(i), 4), numberItem(input.reference.logits.at(i), 4)};
        if (chosen(input.run, i))
            row[RunProbabilityColumn]->setBackground(kChosenLabel);
        if (chosen(input.reference, i))
            row[ReferenceProbabilityColumn]->setBackground(kChosenLabel);
        if (chosen(input.run, i) != chosen(input.reference, i)) {
            QFont bold = row[LabelColumn]->font();
            bold.setBold(true);
            row[LabelColumn]->setFont(bold);
            row[LabelColumn]->setText(label + tr(" (flips)"));
        }
        labels_->appendRow(row);
    }
    labelsView_->resizeColumnsToContents();
    const int width = std::max({labelsView_->columnWidth(RunProbabilityColumn),
                                labelsView_->columnWidth(ReferenceProbabilityColumn), 100});
    // Equal probabilities draw equal bars on both sides.
    labelsView_->setColumnWidth(RunProbabilityColumn, width);
    labelsView_->setColumnWidth(ReferenceProbabilityColumn, width);
}

void ClassifyPanel::addToReport(ReportSection& section, bool runResultCurrent) const
{
    if (!runResultCurrent || !outcome_)
        return;
    section.addChart(chart_);
    section.addTable(QStringLiteral("class_probabilities"), labels_);
    nlohmann::json classify = classifyJson(*outcome_->result);
    classify["text"] = outcome_->text.toStdString();
    if (!outcome_->pair.isEmpty())
        classify["pair"] = outcome_->pair.toStdString();
    classify["compared_input"] = outcome_->comparedInput.toStdString();
    section.summary()["classify"] = classify;
}

} // namespace scalescope::ui
