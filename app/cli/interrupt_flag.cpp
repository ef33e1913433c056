#include "interrupt_flag.h"

#include <csignal>

namespace scalescope::cli {
namespace {

std::atomic<bool> interrupted{false};

extern "C" void onInterrupt(int)
{
    interrupted.store(true);
    std::signal(SIGINT, SIG_DFL);
}

} // namespace

InterruptFlag::InterruptFlag()
{
    interrupted.store(false);
    previous_ = std::signal(SIGINT, onInterrupt);
}

InterruptFlag::~InterruptFlag()
{
    std::signal(SIGINT, previous_ == SIG_ERR ? SIG_DFL : previous_);
}

const std::atomic<bool>* InterruptFlag::flag() const
{
    return &interrupted;
}

} // namespace scalescope::cli
