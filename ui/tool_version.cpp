#include "tool_version.h"

namespace scalescope::ui {

const char* toolVersion()
{
    return SCALESCOPE_VERSION;
}

} // namespace scalescope::ui
