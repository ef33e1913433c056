#pragma once
// The sequence-task part of the screenshot tour: the sequence a user of these models goes through
// (open an embedder, embed, open a reranker, rerank, open a classifier, classify, export), on the
// demo's embed/rerank/classify checkpoints when they are installed, generated tiny ones otherwise.
#include <QString>

namespace scalescope::ui {
class MainWindow;
}

// Saves 20-*.png ... 27-*.png and a report in out/tasks-report; prints every panel's stamp after
// each step. False when a step never finished.
bool playTaskTour(scalescope::ui::MainWindow& window, const QString& out);
