#include "common/environment.h"

#include <cerrno>
#include <cstdlib>

#include "common/error.h"
#include "common/text_files.h"

namespace scalescope {
namespace {

// The value as an error quotes it: short, and nothing a terminal would act on.
std::string quoted(const std::string& text)
{
    return "\"" + terminalSafe(abbreviatedText(text, 40)) + "\"";
}

} // namespace

std::string environmentText(const char* name)
{
    const char* value = std::getenv(name);
    return value ? std::string(value) : std::string();
}

std::uint64_t environmentInteger(const char* name, const std::string& text, std::uint64_t low, std::uint64_t high,
                                 const char* what, const char* unsetMeans)
{
    char* end = nullptr;
    errno = 0;
    const unsigned long long value = std::strtoull(text.c_str(), &end, 10);
    const bool digitsOnly = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
    if (!digitsOnly || end != text.c_str() + text.size() || errno != 0 || value < low || value > high)
        throw Error(std::string(name) + "=" + quoted(text) + " is not " + what + ": it must be an integer from " +
                    std::to_string(low) + " to " + std::to_string(high) + " (unset, " + unsetMeans + ").");
    return value;
}

std::string environmentChoice(const char* name, const std::vector<std::string>& choices, const char* unsetMeans)
{
    const std::string text = environmentText(name);
    if (text.empty())
        return text;
    std::string listed;
    for (const std::string& choice : choices) {
        if (text == choice)
            return text;
        listed += (listed.empty() ? "" : ", ") + choice;
    }
    throw Error(std::string(name) + "=" + quoted(text) + " is not one of " + listed + " (unset, " + unsetMeans + ").");
}

} // namespace scalescope
