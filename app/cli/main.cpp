// scalescope-cli: the headless front end of the ScaleScope engine.
#include <string>
#include <vector>

#include "commands.h"

int main(int argc, char** argv)
{
    std::vector<std::string> args(argv + 1, argv + argc);
    return scalescope::cli::run(args);
}
