#pragma once
// The build's version, stamped on reports, fix provenance and the About box whoever hosts the
// widgets (the app, the screenshot tour, the tests): not whatever the hosting QApplication says,
// which only the app sets.

namespace scalescope::ui {

const char* toolVersion(); // "0.1.0"

} // namespace scalescope::ui
