#include "panels/embed_panel.h"

#include <QComboBox>
#include <QFont>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QStandardItemModel>
#include <QTableView>
#include <QVBoxLayout>

#include <algorithm>
#include <numeric>

#include "charts/chart_view.h"
#include "panels/task_panel_parts.h"
#include "report/task_charts.h"
#include "report/task_json.h"
#include "report_section.h"
#include "stale_banner.h"
#include "workbench_session.h"

namespace scalescope::ui {
namespace {

// The worst text's row and a neighbour that differs between the sides: a pale red that reads as
// a warning on light palettes and keeps dark text legible.
const QColor kMarkedRow(0xFD, 0xE0, 0xDD);
constexpr int kNeighboursShown = 5;

QTableView* makeTable(QWidget* parent, QStandardItemModel* model)
{
    auto* view = new QTableView(parent);
    view->setModel(model);
    view->verticalHeader()->hide();
    view->setSelectionBehavior(QAbstractItemView::SelectRows);
    view->setMinimumHeight(170);
    return view;
}

void markRow(QStandardItemModel* model, int row)
{
    for (int column = 0; column < model->columnCount(); ++column)
        if (QStandardItem* item = model->item(row, column)) {
            item->setBackground(kMarkedRow);
            QFont font = item->font();
            font.setBold(true);
            item->setFont(font);
        }
}

// The other texts by their similarity to text `of` on one side, most similar first (ties by position).
std::vector<std::size_t> neighboursOf(const std::vector<std::vector<double>>& similarity, std::size_t of)
{
    std::vector<std::size_t> others;
    for (std::size_t j = 0; j < similarity.size(); ++j)
        if (j != of)
            others.push_back(j);
    std::stable_sort(others.begin(), others.end(),
                     [&](std::size_t a, std::size_t b) { return similarity[of][a] > similarity[of][b]; });
    return others;
}

} // namespace

EmbedPanel::EmbedPanel(WorkbenchSession* session, QWidget* parent) : QWidget(parent)
{
    auto* content = new QWidget(this);
    banner_ = new StaleBanner(content);
    texts_ = new QPlainTextEdit(content);
    texts_->setPlaceholderText(tr("Texts to embed, one per line"));
    texts_->setMinimumHeight(90);
    texts_->setMaximumHeight(150);
    prompt_ = new QComboBox(content);
    prompt_->setEditable(true);
    prompt_->lineEdit()->setPlaceholderText(tr("the checkpoint's default"));
    prompt_->setToolTip(tr("Prepended to every text: one of the checkpoint's prompts by name, or any text"));
    prompt_->setMinimumContentsLength(14);
    embed_ = new QPushButton(tr("Embed"), content);
    runState_ = std::make_unique<RunButtonState>(embed_, tr("Embed the texts with the quantized model and its reference"));
    runState_->setRunnable(true, QString());
    auto* side = new QVBoxLayout;
    side->addWidget(new QLabel(tr("Prompt"), content));
    side->addWidget(prompt_);
    side->addWidget(embed_);
    side->addStretch(1);
    auto* inputRow = new QHBoxLayout;
    inputRow->addWidget(texts_, 1);
    inputRow->addLayout(side);

    result_ = new QLabel(tr("Write a few texts, one per line, and press Embed."), content);
    result_->setWordWrap(true);
    cosines_ = new QStandardItemModel(this);
    cosineView_ = makeTable(content, cosines_);
    neighbourOf_ = new QComboBox(content);
    neighbourOf_->setToolTip(tr("The text whose nearest neighbours are listed"));
    neighbours_ = new QStandardItemModel(this);
    auto* neighbourBox = new QGroupBox(tr("Nearest neighbours"), content);
    auto* neighbourLayout = new QVBoxLayout(neighbourBox);
    neighbourLayout->addWidget(neighbourOf_);
    neighboursView_ = makeTable(neighbourBox, neighbours_);
    neighbourLayout->addWidget(neighboursView_, 1);
    auto* tablesRow = new QHBoxLayout;
    tablesRow->addWidget(cosineView_, 1);
    tablesRow->addWidget(neighbourBox, 1);

    runMatrix_ = new ChartView(content);
    referenceMatrix_ = new ChartView(content);
    differenceMatrix_ = new ChartView(content);
    auto* mapsRow = new QHBoxLayout;
    for (ChartView* chart : {runMatrix_, referenceMatrix_, differenceMatrix_}) {
        chart->setPlaceholder(tr("The similarity matrices appear here after Embed."));
        // Below this a matrix of a dozen texts is unreadable: the page scrolls instead.
        chart->setMinimumHeight(kTaskChartMinimumHeight);
        mapsRow->addWidget(chart, 1);
    }
    cosineChart_ = new ChartView(content);
    cosineChart_->setPlaceholder(tr("Each text's cosine with its reference appears here after Embed."));
    cosineChart_->setMinimumHeight(kTaskChartMinimumHeight);

    auto* layout = new QVBoxLayout(content);
    layout->addWidget(banner_);
    layout->addLayout(inputRow);
    layout->addWidget(result_);
    layout->addLayout(tablesRow);
    layout->addLayout(mapsRow, 1);
    layout->addWidget(cosineChart_, 1);
    setScrollingPage(this, content);

    connect(embed_, &QPushButton::clicked, this, &EmbedPanel::requestEmbed);
    addRunShortcut(this, [this] { requestEmbed(); });
    connect(neighbourOf_, qOverload<int>(&QComboBox::currentIndexChanged), this, &EmbedPanel::showNeighbours);
    connect(this, &EmbedPanel::embedRequested, session, &WorkbenchSession::embed);
    connect(banner_, &StaleBanner::rerunRequested, this, &EmbedPanel::rerun);
}

EmbedPanel::~EmbedPanel() = default;

void EmbedPanel::setPromptNames(const QStringList& names)
{
    const QString current = prompt_->currentText();
    prompt_->clear();
    prompt_->addItem(QString());
    prompt_->addItems(names);
    prompt_->setCurrentText(current);
}

void EmbedPanel::setRunnable(bool runnable, const QString& reason) { runState_->setRunnable(runnable, reason); }
void EmbedPanel::setBusy(bool busy) { runState_->setBusy(busy); }
void EmbedPanel::setTexts(const QStringList& texts) { texts_->setPlainText(texts.join(QLatin1Char('\n'))); }
QStringList EmbedPanel::texts() const { return inputLines(texts_->toPlainText()); }
QString EmbedPanel::prompt() const { return prompt_->currentText(); }
void EmbedPanel::setPrompt(const QString& prompt) { prompt_->setCurrentText(prompt); }

QList<ChartView*> EmbedPanel::charts() const { return {runMatrix_, referenceMatrix_, differenceMatrix_, cosineChart_}; }

void EmbedPanel::requestEmbed()
{
    if (!embed_->isEnabled())
        return;
    const QStringList lines = texts();
    if (lines.isEmpty()) {
        result_->setText(tr("Write at least one text (one per line)."));
        return;
    }
    emit embedRequested(lines, prompt());
}

void EmbedPanel::rerun()
{
    if (outcome_)
        emit embedRequested(outcome_->texts, outcome_->prompt);
}

void EmbedPanel::takeResult(const PanelResult& result)
{
    if (!result.embed)
        return;
    outcome_ = result.embed;
    showOutcome(*outcome_, result.referenceLabel);
}

void EmbedPanel::clearResults(const QString& why)
{
    outcome_.reset();
    cosines_->clear();
    neighbours_->clear();
    {
        const QSignalBlocker blocker(neighbourOf_);
        neighbourOf_->clear();
    }
    for (ChartView* chart : charts()) {
        chart->setChart({});
        chart->setStamp(QString());
    }
    result_->setText(why);
    banner_->clearResult();
}

void EmbedPanel::showOutcome(const EmbedOutcome& outcome, const QString& referenceLabel)
{
    const EmbedResult& result = *outcome.result;
    const QString mode = outcome.stamp.modeName();
    banner_->setResultStamp(outcome.stamp);
    double lowest = 1, mean = 0;
    std::size_t worst = 0;
    for (std::size_t i = 0; i < result.inputs.size(); ++i) {
        mean += result.inputs[i].cosine / double(result.inputs.size());
        if (result.inputs[i].cosine < lowest || i == 0) {
            lowest = result.inputs[i].cosine;
            worst = i;
        }
    }
    QString summary = tr("%1 vs %2: %3 pooling%4, %5 texts of %6 dimensions; lowest cosine %7 (text %8), mean %9. "
                         "Errors and Scales show %10.")
                          .arg(mode, referenceLabel.toHtmlEscaped(),
                               QString::fromLatin1(poolingModeName(result.pooling)),
                               result.normalized ? tr(", normalized") : QString())
                          .arg(result.inputs.size())
                          .arg(result.dim)
                          .arg(lowest, 0, 'f', 6)
                          .arg(worst + 1)
                          .arg(mean, 0, 'f', 6)
                          .arg(outcome.comparedInput);
    if (!result.prompt.empty())
        summary += tr(" Prompt \"%1\" prepended.").arg(QString::fromStdString(result.prompt).toHtmlEscaped());
    for (const std::string& note : result.notes)
        summary += QLatin1Char(' ') + QString::fromStdString(note).toHtmlEscaped();
    result_->setText(summary);
    showCosines(result);

    const std::string runName = mode.toStdString();
    runMatrix_->setChart(similarityMatrixChart(result, false, runName));
    referenceMatrix_->setChart(similarityMatrixChart(result, true, runName));
    differenceMatrix_->setChart(similarityDifferenceChart(result, runName));
    cosineChart_->setChart(embeddingCosineChart(result, runName));
    for (ChartView* chart : charts())
        chart->setStamp(outcome.stamp.describe());

    const QSignalBlocker blocker(neighbourOf_);
    const int chosen = std::max(0, neighbourOf_->currentIndex());
    neighbourOf_->clear();
    for (std::size_t i = 0; i < result.inputs.size(); ++i)
        neighbourOf_->addItem(QString::fromStdString(inputLabel(i, result.inputs[i].text, 40)));
    neighbourOf_->setCurrentIndex(chosen < neighbourOf_->count() ? chosen : 0);
    showNeighbours();
}

// One row per text, worst cosine first; the worst is marked.
void EmbedPanel::showCosines(const EmbedResult& result)
{
    cosines_->clear();
    cosines_->setHorizontalHeaderLabels({tr("#"), tr("cosine"), tr("tokens"), tr("text")});
    std::vector<std::size_t> order(result.inputs.size());
    std::iota(order.begin(), order.end(), std::size_t(0));
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return result.inputs[a].cosine < result.inputs[b].cosine; });
    for (std::size_t i : order) {
        const EmbeddedText& text = result.inputs[i];
        QString tokens = QString::number(text.inputIds.size());
        if (text.truncated)
            tokens += tr(" (cut)");
        cosines_->appendRow({numberItem(double(i + 1), 0), numberItem(text.cosine, 6), textItem(tokens),
                             longTextItem(QString::fromStdString(text.text))});
    }
    if (!order.empty())
        markRow(cosines_, 0);
    fitColumns(cosineView_, {3});
}

void EmbedPanel::showNeighbours()
{
    neighbours_->clear();
    neighbours_->setHorizontalHeaderLabels(
        {tr("#"), tr("run"), tr("cos"), tr("reference"), tr("cos"), tr("same")});
    fitColumns(neighboursView_, {1, 3});
    const int of = neighbourOf_->currentIndex();
    if (!outcome_ || of < 0)
        return;
    const EmbedResult& result = *outcome_->result;
    const std::vector<std::size_t> run = neighboursOf(result.similarity, std::size_t(of));
    const std::vector<std::size_t> reference = neighboursOf(result.referenceSimilarity, std::size_t(of));
    // Whole texts: the view elides what does not fit, the tooltip holds it all.
    auto name = [&](std::size_t i) { return QString::fromStdString(inputLabel(i, result.inputs[i].text, 1000)); };
    for (std::size_t rank = 0; rank < run.size() && rank < std::size_t(kNeighboursShown); ++rank) {
        const bool same = run[rank] == reference[rank];
        neighbours_->appendRow({numberItem(double(rank + 1), 0), longTextItem(name(run[rank])),
                                numberItem(result.similarity[std::size_t(of)][run[rank]], 4),
                                longTextItem(name(reference[rank])),
                                numberItem(result.referenceSimilarity[std::size_t(of)][reference[rank]], 4),
                                textItem(same ? tr("yes") : tr("differs"))});
        if (!same)
            markRow(neighbours_, neighbours_->rowCount() - 1);
    }
}

void EmbedPanel::addToReport(ReportSection& section, bool runResultCurrent) const
{
    if (!runResultCurrent || !outcome_)
        return;
    for (const ChartView* chart : charts())
        section.addChart(chart);
    section.addTable(QStringLiteral("embedding_cosines"), cosines_);
    section.addTable(QStringLiteral("embedding_neighbours"), neighbours_);
    // DESIGN's embed JSON without the vectors themselves (a report is read, not reloaded).
    nlohmann::json embed = embedJson(*outcome_->result);
    for (auto& input : embed["inputs"]) {
        input.erase("embedding");
        input.erase("reference_embedding");
    }
    embed["compared_input"] = outcome_->comparedInput.toStdString();
    section.summary()["embed"] = embed;
}

} // namespace scalescope::ui
