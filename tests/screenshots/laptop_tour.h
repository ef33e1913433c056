#pragma once
// The laptop tour (issue 51): the planted-defect demo, its sweep, the float demo, its calibration
// lab and a device check, the BERT demo, fill-mask, a report and the reranker's fix, shooting each
// page at the screen's size and printing how tall every plot is drawn and whether the toolbar
// shows Cancel and Export.
#include <QString>

#include "demo_catalog.h"

namespace scalescope::ui {
class MainWindow;
}

// Saves out/NN-step-page.png and a report in out/report. False when a step never finished.
bool playLaptopTour(scalescope::ui::MainWindow& window, const scalescope::ui::DemoCatalog& demo, const QString& out);

// The float demo's Calibration lab on the first lines of the demo split, its page shot and its
// plots measured: out/03-calibration-calibration.png. Part of the laptop tour.
bool playCalibrationTour(scalescope::ui::MainWindow& window, const scalescope::ui::DemoCatalog& demo, const QString& out);

// The planted-defect reranker demo through its fix (issue 51): its ranking, a sweep with its first
// Linear in the inspector, Save Fixed Checkpoint (out/rerank-fixed), Open Fixed Checkpoint and
// Compare with the Original, each shot: out/08-... to 12-.... The laptop tour ends with it.
bool playRerankFixTour(scalescope::ui::MainWindow& window, const scalescope::ui::DemoCatalog& demo, const QString& out);
