#include "common/progress.h"

#include "common/error.h"

namespace scalescope {

void Progress::throwIfCancelled() const
{
    if (cancelled())
        throw Cancelled();
}

} // namespace scalescope
