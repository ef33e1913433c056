#include "panels/result_panel.h"

#include "stale_banner.h"

namespace scalescope::ui {

bool ResultPanel::hasResult() const
{
    return banner() && banner()->hasResult();
}

bool ResultPanel::isStale() const
{
    return banner() && banner()->isStale();
}

void ResultPanel::setCurrentStamp(const RunStamp& now)
{
    if (StaleBanner* strip = banner())
        strip->setCurrentStamp(now);
    currentStampChanged(now);
}

} // namespace scalescope::ui
