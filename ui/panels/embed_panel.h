#pragma once
// Embed panel (a sentence embedder): texts in, one per line, with an optional prompt (the
// checkpoint's prompt names offered); out: each text's run-vs-reference cosine (worst first, the
// worst highlighted), both sides' similarity matrices as heat maps on one colour scale and their
// difference, each text's cosine as a bar, and a chosen text's nearest neighbours on each side (the neighbours that differ marked).
#include <QWidget>

#include <memory>

#include "panels/result_panel.h"

class QComboBox;
class QLabel;
class QPlainTextEdit;
class QPushButton;
class QStandardItemModel;
class QTableView;

namespace scalescope::ui {

class ChartView;
class RunButtonState;
class StaleBanner;
class WorkbenchSession;

class EmbedPanel : public QWidget, public ResultPanel {
    Q_OBJECT
public:
    explicit EmbedPanel(WorkbenchSession* session, QWidget* parent = nullptr);
    ~EmbedPanel() override;

    // The open checkpoint's prompt names ("query", "passage") for the prompt box.
    void setPromptNames(const QStringList& names);
    void setRunnable(bool runnable, const QString& reason);
    void setTexts(const QStringList& texts);
    QStringList texts() const;
    // "" (the checkpoint's default), a prompt name, or a literal text.
    QString prompt() const;
    void setPrompt(const QString& prompt);
    // Embeds the texts again with their prompt (another mode, reference or what-if now holds).
    void rerun();

    void takeResult(const PanelResult& result) override;
    void clearResults(const QString& why) override;
    StaleBanner* banner() const override { return banner_; }
    QString reportName() const override { return QStringLiteral("embed"); }
    QString notRunReason() const override { return QStringLiteral("no texts embedded yet"); }
    void addToReport(ReportSection& section, bool runResultCurrent) const override;
    void setBusy(bool busy) override;

    std::shared_ptr<const EmbedOutcome> outcome() const { return outcome_; }
    QPushButton* embedButton() const { return embed_; }
    QLabel* resultLabel() const { return result_; }
    QStandardItemModel* cosineModel() const { return cosines_; }
    QStandardItemModel* neighboursModel() const { return neighbours_; }
    QComboBox* neighbourChoice() const { return neighbourOf_; }
    // Run, reference, difference, and each text's cosine with its reference.
    QList<ChartView*> charts() const;

signals:
    void embedRequested(const QStringList& texts, const QString& prompt);

private:
    void requestEmbed();
    void showOutcome(const EmbedOutcome& outcome, const QString& referenceLabel);
    void showCosines(const EmbedResult& result);
    void showNeighbours();

    std::shared_ptr<const EmbedOutcome> outcome_;
    StaleBanner* banner_ = nullptr;
    QPlainTextEdit* texts_ = nullptr;
    QComboBox* prompt_ = nullptr;
    QPushButton* embed_ = nullptr;
    std::unique_ptr<RunButtonState> runState_;
    QLabel* result_ = nullptr;
    QStandardItemModel* cosines_ = nullptr;
    QTableView* cosineView_ = nullptr;
    ChartView* runMatrix_ = nullptr;
    ChartView* referenceMatrix_ = nullptr;
    ChartView* differenceMatrix_ = nullptr;
    QComboBox* neighbourOf_ = nullptr;
    QStandardItemModel* neighbours_ = nullptr;
    QTableView* neighboursView_ = nullptr;
    ChartView* cosineChart_ = nullptr;
};

} // namespace scalescope::ui
