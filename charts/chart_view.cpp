#include "charts/chart_view.h"

#include <QAbstractScrollArea>
#include <QApplication>
#include <QClipboard>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QMenu>
#include <QLabel>
#include <QMessageBox>
#include <QStackedWidget>
#include <QToolButton>
#include <QVBoxLayout>
#include <QScrollBar>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>
#include <qcustomplot.h>

#include "charts/chart_export.h"
#include "charts/chart_renderer.h"
#include "common/error.h"

namespace scalescope::ui {

namespace {

// The data area of every chart on screen keeps at least this many pixels; the title, legend and
// tick labels come on top. Every panel page scrolls (ResultTabs), so on a 768-pixel screen the page
// grows a scroll bar instead of squashing a chart to an unreadable strip.
constexpr int kMinimumDataHeight = 160;

// What the plot needs besides its data area, as the last layout made it: the rows of title and
// legend and the axis rect's margins (tick labels, axis titles).
int layoutOverhead(const QCustomPlot& plot)
{
    QCPLayoutGrid* layout = plot.plotLayout();
    int overhead = layout->margins().top() + layout->margins().bottom();
    int rows = 0;
    for (int row = 0; row < layout->rowCount(); ++row) {
        int tallest = 0;
        for (int column = 0; column < layout->columnCount(); ++column) {
            QCPLayoutElement* element = layout->element(row, column);
            if (!element || !element->visible())
                continue;
            if (element == plot.axisRect())
                tallest = std::max(tallest, element->margins().top() + element->margins().bottom());
            else
                tallest = std::max(tallest, element->minimumOuterSizeHint().height());
        }
        overhead += tallest;
        ++rows;
    }
    return overhead + std::max(rows - 1, 0) * layout->rowSpacing();
}

// `view` holds a row of buttons `buttonsHeight` tall above `plot`.
void keepDataAreaReadable(QWidget& view, QCustomPlot& plot, int buttonsHeight)
{
    const int minimum = kMinimumDataHeight + layoutOverhead(plot);
    if (plot.minimumHeight() != minimum)
        plot.setMinimumHeight(minimum);
    // The view's own minimum too: a panel's ("260 px") would take precedence over what the plot
    // needs and clip its bottom, and a splitter around the view hears of a new minimum only from
    // the view itself. It grows to the buttons' row and the plot, and never shrinks.
    const int needed = buttonsHeight + view.layout()->spacing() + minimum;
    if (view.minimumHeight() < needed)
        view.setMinimumHeight(needed);
}

} // namespace

bool ChartView::eventFilter(QObject* watched, QEvent* event)
{
    if (watched != plot_ || event->type() != QEvent::Wheel)
        return QWidget::eventFilter(watched, event);
    auto* wheel = static_cast<QWheelEvent*>(event);
    if (wheel->modifiers() & Qt::ControlModifier)
        return false; // QCustomPlot zooms (iRangeZoom)
    // Handed to the nearest scroll area around the chart, as if the chart were not there.
    for (QWidget* ancestor = parentWidget(); ancestor; ancestor = ancestor->parentWidget())
        if (auto* area = qobject_cast<QAbstractScrollArea*>(ancestor)) {
            QScrollBar* bar = wheel->angleDelta().x() != 0 && wheel->angleDelta().y() == 0
                                  ? area->horizontalScrollBar()
                                  : area->verticalScrollBar();
            QCoreApplication::sendEvent(bar, event);
            break;
        }
    return true;
}

ChartView::ChartView(QWidget* parent) : QWidget(parent)
{
    plot_ = new QCustomPlot(this);
    // Narrow enough for two charts side by side in a 1024-pixel window; the height follows the
    // chart drawn (keepDataAreaReadable).
    plot_->setMinimumSize(200, kMinimumDataHeight);
    // A new width can wrap the title onto another line: the data area keeps its height. Queued, as
    // a minimum set while QCustomPlot lays out would resize it from inside its own replot.
    connect(
        plot_, &QCustomPlot::afterLayout, this,
        [this] { keepDataAreaReadable(*this, *plot_, resetButton_->sizeHint().height()); }, Qt::QueuedConnection);
    // The wheel scrolls the page the chart sits in; Ctrl+wheel zooms the chart (eventFilter).
    plot_->installEventFilter(this);

    placeholder_ = new QLabel(tr("No data yet."), this);
    placeholder_->setAlignment(Qt::AlignCenter);
    placeholder_->setWordWrap(true);
    placeholder_->setStyleSheet(QStringLiteral("color: palette(mid);"));
    stack_ = new QStackedWidget(this);
    stack_->addWidget(placeholder_);
    stack_->addWidget(plot_);

    resetButton_ = new QToolButton(this);
    resetButton_->setText(tr("Reset View"));
    resetButton_->setToolTip(tr("Show the whole chart again after zooming or panning"));
    connect(resetButton_, &QToolButton::clicked, this, &ChartView::resetView);

    exportButton_ = new QToolButton(this);
    exportButton_->setText(tr("Export"));
    exportButton_->setPopupMode(QToolButton::InstantPopup);
    auto* menu = new QMenu(exportButton_);
    for (const QString& format : {QStringLiteral("PNG"), QStringLiteral("PDF"), QStringLiteral("SVG"), QStringLiteral("CSV")})
        menu->addAction(tr("%1...").arg(format), this, [this, format] { exportAs(format.toLower()); });
    menu->addSeparator();
    menu->addAction(tr("Copy Image"), this, &ChartView::copyToClipboard);
    exportButton_->setMenu(menu);

    auto* buttons = new QHBoxLayout;
    buttons->setContentsMargins(0, 0, 0, 0);
    buttons->addStretch(1);
    buttons->addWidget(resetButton_);
    buttons->addWidget(exportButton_);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addLayout(buttons);
    layout->addWidget(stack_, 1);
    exportButton_->setEnabled(false);
    resetButton_->setEnabled(false);

    auto clicked = [this](QCPAbstractPlottable* plottable, int dataIndex) {
        if (!plottable)
            return;
        // Data points carry their x (category index) as the key.
        double key = 0;
        if (auto* bars = qobject_cast<QCPBars*>(plottable))
            key = bars->data()->at(dataIndex)->key;
        else if (auto* graph = qobject_cast<QCPGraph*>(plottable))
            key = graph->data()->at(dataIndex)->key;
        else
            return;
        emit categoryClicked(static_cast<int>(std::lround(key)));
    };
    connect(plot_, &QCustomPlot::plottableClick, this,
            [clicked](QCPAbstractPlottable* plottable, int dataIndex, QMouseEvent*) { clicked(plottable, dataIndex); });
    // A marker line drawn through a bar (where departures start, a limit) takes the click first:
    // the bar under it is what the user meant.
    connect(plot_, &QCustomPlot::itemClick, this, [this, clicked](QCPAbstractItem*, QMouseEvent* event) {
        int dataIndex = -1;
        QCPAbstractPlottable* plottable = plot_->plottableAt(event->pos(), false, &dataIndex);
        if (plottable && dataIndex >= 0)
            clicked(plottable, dataIndex);
    });
}

void ChartView::setChart(const ChartData& chart)
{
    chart_ = chart;
    highlighted_ = -1;
    renderChart(*plot_, chart_);
    plot_->replot();
    const bool hasData = !chart_.series.empty();
    exportButton_->setEnabled(hasData);
    resetButton_->setEnabled(hasData);
    stack_->setCurrentWidget(hasData ? static_cast<QWidget*>(plot_) : placeholder_);
}

void ChartView::setPlaceholder(const QString& text)
{
    placeholder_->setText(text);
}

void ChartView::resetView()
{
    renderChart(*plot_, chart_);
    drawHighlight();
    plot_->replot();
}

std::optional<QPoint> ChartView::barPixel(int series, int category) const
{
    auto* bars = series >= 0 && series < plot_->plottableCount() ? qobject_cast<QCPBars*>(plot_->plottable(series)) : nullptr;
    if (!bars || category < 0)
        return std::nullopt;
    // A series may hold bars at some categories only (bars coloured by class): look the key up.
    const auto bar = bars->data()->findBegin(category, false);
    if (bar == bars->data()->constEnd() || bar->key != category)
        return std::nullopt;
    const double value = bar->value;
    const int y = qRound(plot_->yAxis->coordToPixel(value / 2));
    const int from = qRound(plot_->xAxis->coordToPixel(category - 0.5));
    const int to = qRound(plot_->xAxis->coordToPixel(category + 0.5));
    // The middle of the run of pixels that hit this bar: away from its neighbours' edges.
    std::vector<int> hits;
    for (int x = std::min(from, to); x <= std::max(from, to); ++x) {
        int index = -1;
        if (plot_->plottableAt(QPointF(x, y), false, &index) == bars && bars->data()->at(index)->key == category)
            hits.push_back(x);
    }
    if (hits.empty())
        return std::nullopt;
    return QPoint(hits[hits.size() / 2], y);
}

void ChartView::highlightCategory(int index)
{
    highlighted_ = index >= 0 && std::size_t(index) < chart_.categories.size() ? index : -1;
    renderChart(*plot_, chart_);
    drawHighlight();
    plot_->replot();
}

void ChartView::highlightCategory(const std::string& label)
{
    const auto found = std::find(chart_.categories.begin(), chart_.categories.end(), label);
    highlightCategory(found == chart_.categories.end() ? -1 : int(found - chart_.categories.begin()));
}

// Behind the data: a translucent column over the category, full height of the axis rect.
void ChartView::drawHighlight()
{
    if (highlighted_ < 0)
        return;
    auto* shade = new QCPItemRect(plot_);
    shade->setLayer(QStringLiteral("background"));
    shade->topLeft->setTypeX(QCPItemPosition::ptPlotCoords);
    shade->topLeft->setTypeY(QCPItemPosition::ptAxisRectRatio);
    shade->bottomRight->setTypeX(QCPItemPosition::ptPlotCoords);
    shade->bottomRight->setTypeY(QCPItemPosition::ptAxisRectRatio);
    shade->topLeft->setCoords(highlighted_ - 0.5, 0.0);
    shade->bottomRight->setCoords(highlighted_ + 0.5, 1.0);
    shade->setPen(QPen(QColor(0xe0, 0xb2, 0x52), 1.0));
    shade->setBrush(QColor(0xff, 0xd5, 0x4f, 90));
    shade->setClipToAxisRect(true);
    shade->setSelectable(false);
    // Keep the x axis on the shaded category (zoomed in, it may be off screen).
    QCPRange range = plot_->xAxis->range();
    if (highlighted_ < range.lower || highlighted_ > range.upper)
        plot_->xAxis->setRange(highlighted_ - range.size() / 2, highlighted_ + range.size() / 2);
}

ChartData ChartView::stampedChart() const
{
    ChartData stamped = chart_;
    if (!stamp_.isEmpty())
        stamped.title += " [" + stamp_.toStdString() + "]";
    return stamped;
}

void ChartView::copyToClipboard()
{
    QApplication::clipboard()->setPixmap(plot_->toPixmap());
}

void relabelRunSeries(ChartData& chart, const QString& mode)
{
    if (mode == QLatin1String("FP8"))
        return;
    for (ChartSeries& series : chart.series) {
        const std::size_t at = series.name.find("FP8");
        if (at != std::string::npos)
            series.name.replace(at, 3, mode.toStdString());
    }
}

void ChartView::exportAs(const QString& format)
{
    const QString filter = format == "csv" ? tr("CSV data (*.csv)") : tr("%1 image (*.%2)").arg(format.toUpper(), format);
    QString path = QFileDialog::getSaveFileName(this, tr("Export Chart"),
                                                QString::fromStdString(chart_.id) + "." + format, filter);
    if (path.isEmpty())
        return;
    if (!path.endsWith("." + format, Qt::CaseInsensitive))
        path += "." + format;
    try {
        if (format == "csv")
            exportChartCsv(chart_, path.toStdString());
        else
            exportChartImage(stampedChart(), path, parseChartFormat(format.toStdString()));
    } catch (const Error& e) {
        QMessageBox::warning(this, tr("Export failed"), QString::fromUtf8(e.what()));
    }
}

} // namespace scalescope::ui
