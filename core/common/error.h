#pragma once
// The one exception type the core throws. Its message is a single sentence that names the file,
// tensor or module concerned and the problem; the CLI and UI show it as it is.
#include <stdexcept>
#include <string>

namespace scalescope {

class Error : public std::runtime_error {
public:
    explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// Thrown when the caller's cancel flag was raised; not a failure of the input.
class Cancelled : public Error {
public:
    Cancelled() : Error("The operation was cancelled.") {}
};

} // namespace scalescope
