#!/usr/bin/env python3
"""Lists functions longer than a limit (default 80 lines) in C++ sources.

A function's length runs from the first line of its signature to its closing brace, whichever line
its opening brace is on: alone on the next line (the project's style for functions) or at the end of
the signature (`) {`). Only a brace at namespace or class scope whose statement reads as a signature
opens a function; lambdas, control blocks and local classes inside a body count as part of that
function, and a lambda or braced initializer at namespace scope is no function. A brace inside a
signature's parentheses is a default argument (`= {}`), and a function-try-block's handlers
(`) try { } catch (...) { }`) count as part of its function.
Comments, string and character literals and preprocessor lines are ignored.
Usage: scripts/long_functions.py [--limit N] DIR...    scripts/long_functions.py --self-test
Exit status: 1 when a function is over the limit (or the self-test fails), 0 otherwise.
"""
import argparse
import pathlib
import re
import sys

# What may follow a signature's closing parenthesis before its body.
SIGNATURE_END = re.compile(r"\)\s*(?:const|volatile|noexcept(?:\s*\([^()]*\))?|override|final|mutable|&&?|"
                           r"->\s*[\w:<>,\s*&]+?|\s)*(?:\btry\s*)?$")
# A constructor's member-initializer list after its parameters: `) : a_(x), b_{y}`.
INITIALIZER_LIST = re.compile(r"\)\s*(?:noexcept\s*)?(?:\btry\s*)?:(?!:)")
# A function-try-block's signature: its handlers (`catch (...) { }` after the body) belong to the function.
TRY_SIGNATURE = re.compile(r"\)[^()]*\btry\b")
HANDLER = re.compile(r"^\s*catch\b")
LAMBDA = re.compile(r"\[[^\[\]]*\]\s*(?:\(|\{|mutable\b|->|$)")
CONTAINER = re.compile(r"\b(?:namespace|class|struct|union|enum)\b|^\s*extern\s*\"\"\s*$")
CONTROL = re.compile(r"^\s*(?:if|for|while|switch|catch|do|else|try)\b")
# Lines that end a statement without a semicolon: access specifiers and Qt's declaration macros.
STATEMENT_BREAK = re.compile(r"\s*(?:(?:public|protected|private|signals|Q_SIGNALS)(?:\s+(?:slots|Q_SLOTS))?\s*:"
                             r"|Q_[A-Z_]+(?:\(.*\))?)\s*")


def strip_code(text):
    """The text with comments, literals' contents and preprocessor lines blanked; newlines kept."""
    out = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c == "#" or (line_start and c in " \t" and text[i:].lstrip(" \t").startswith("#")):
            # A preprocessor line, with its backslash continuations.
            while i < n and not (text[i] == "\n" and text[i - 1] != "\\"):
                i += 1
            continue
        if c == "\n":
            out.append(c)
            line_start = True
            i += 1
            continue
        if c not in " \t":
            line_start = False
        if text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append("\n" * text.count("\n", i, end) or " ")
            i = end
        elif c == '"' and re.match(r"R$", text[max(0, i - 1):i]) and not re.match(r"\w", text[max(0, i - 2):i - 1]):
            match = re.match(r'"([^()\\\s]{0,16})\(', text[i:])
            closing = ")" + (match.group(1) if match else "") + '"'
            end = text.find(closing, i + 1)
            end = n if end < 0 else end + len(closing)
            out.append('""' + "\n" * text.count("\n", i, end))
            i = end
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def outside_parentheses(text):
    """The text with what its parentheses hold removed, so a default argument's lambda is not the statement's."""
    emptied = None
    while emptied != text:
        emptied, text = text, re.sub(r"\([^()]*\)", "\x01", text)
    return text.replace("\x01", "()")


def classify(statement):
    """'function', 'initializer' (a member initializer's brace), 'container' or 'other'."""
    text = re.sub(r"\[\[.*?\]\]", " ", statement)
    text = re.sub(r"\boperator\s*(?:\[\s*\]|\(\s*\))", "operator", text)
    if CONTROL.match(text) or "(" not in text and not CONTAINER.search(text):
        return "other"
    if INITIALIZER_LIST.search(text) and re.search(r"[\w>]\s*$", text):
        return "initializer"
    if SIGNATURE_END.search(text) or INITIALIZER_LIST.search(text) and re.search(r"[)}]\s*$", text):
        if LAMBDA.search(outside_parentheses(text)) or re.search(r"=\s*$", text):
            return "other"
        return "function"
    if CONTAINER.search(text) and not re.search(r"=\s*$", text):
        return "container"
    return "other"


def functions(text):
    """(first line, last line, signature) of every function body in the text, lines 1-based."""
    code = strip_code(text)
    found = []
    # Each open brace: (kind, first line of its statement, statement text). Kinds whose contents are
    # skipped: a function's body, another body, a try-function's handler, and a braced argument inside
    # a signature's parentheses (a default `= {}`, which may hold a lambda with its own semicolons).
    stack = []
    statement, statement_line = [], None
    # Parentheses open in the statement: a brace inside them is an argument, not a body.
    parentheses = 0
    # A function-try-block whose body has closed: (first line, last line, signature) until no handler follows.
    try_function = None
    line = 1
    line_text_start = 0

    def in_body():
        return any(kind in ("function", "other", "handler", "argument") for kind, _, _ in stack)

    def finish_try_function():
        nonlocal try_function
        if try_function:
            found.append(try_function)
            try_function = None

    for i, c in enumerate(code):
        if c == "\n":
            current = code[line_text_start:i]
            if not in_body() and STATEMENT_BREAK.fullmatch(current):
                statement, statement_line, parentheses = [], None, 0
            line += 1
            line_text_start = i + 1
            if statement:
                statement.append(" ")
            continue
        if in_body():
            if c == "{":
                stack.append(("block", line, ""))
            elif c == "}" and stack:
                kind, first, signature = stack.pop()
                if kind in ("function", "handler") and TRY_SIGNATURE.search(signature):
                    try_function = (first, line, signature)
                elif kind == "function":
                    found.append((first, line, signature))
                elif kind == "argument":
                    statement.append(c)
            continue
        if c == "{" and parentheses > 0:
            stack.append(("argument", line, ""))
            statement.append(c)
        elif c == "{":
            text_so_far = "".join(statement).strip()
            if try_function and HANDLER.match(text_so_far):
                stack.append(("handler", try_function[0], try_function[2]))
                try_function = None
            else:
                finish_try_function()
                kind = classify(text_so_far)
                stack.append((kind, statement_line or line, text_so_far))
                if kind == "initializer":
                    statement.append(c)
                    continue
            statement, statement_line, parentheses = [], None, 0
        elif c == "}":
            finish_try_function()
            kind = stack.pop()[0] if stack else "container"
            if kind == "initializer":
                statement.append(c)
            else:
                statement, statement_line, parentheses = [], None, 0
        elif c == ";":
            finish_try_function()
            statement, statement_line, parentheses = [], None, 0
        else:
            if c == "(":
                parentheses += 1
            elif c == ")":
                parentheses = max(0, parentheses - 1)
            if not statement and not c.isspace():
                statement_line = line
            if statement or not c.isspace():
                statement.append(c)
    finish_try_function()
    return found


def long_functions(path, limit):
    found = []
    for first, last, signature in functions(path.read_text(errors="replace")):
        length = last - first + 1
        if length > limit:
            found.append((length, first, " ".join(signature.split())))
    return found


SELF_TEST = r'''
namespace a {
int ownLine(int x)
{
    if (x) {
        return 1;
    }
    return 2;
}
std::vector<int> sameLine(const std::string& s,
                          int n) const {
    auto f = [&](int y) {
        return y;
    };
    for (int i = 0; i < n; ++i) {
        f(i);
    }
    return {};
}
struct Holder {
    int inlineOne() const { return 1; }
    Holder(int v) : value_{v}, other_(v)
    {
        const char* text = "} { ) {";
        // }
    }
    int value_, other_;
};
const auto lambdaAtNamespace = [](int x) {
    return x;
};
const int table[] = {
    1, 2,
};
extern "C" int entry(const char* data) {
    /* { */
    return 0;
}
#define MACRO(x) { x }
int bracedDefault(const Options& options = {}, std::vector<int> sizes = {1, {2}},
                  Callback done = [](int x) { return x; })
{
    return 0;
}
const bool registered = add([](int x) {
    x += 1;
    return x;
});
int tryBlock(int x)
try
{
    return x;
}
catch (const std::exception& error)
{
    return -1;
}
catch (...) {
    return -2;
}
Holder::Holder(int v) try : value_{v}, other_(v) {
}
catch (...)
{
}
int after() { return 0; }
} // namespace a
'''


def self_test():
    got = [(first, last, signature.split("(")[0].split()[-1]) for first, last, signature in functions(SELF_TEST)]
    expected = [(3, 9, "ownLine"), (10, 19, "sameLine"), (21, 21, "inlineOne"), (22, 26, "Holder"),
                (35, 38, "entry"), (40, 44, "bracedDefault"), (49, 60, "tryBlock"), (61, 65, "Holder::Holder"),
                (66, 66, "after")]
    if got != expected:
        print(f"long_functions self-test failed:\n  got      {got}\n  expected {expected}")
        return 1
    print("long_functions self-test passed")
    return 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--limit", type=int, default=80)
    parser.add_argument("--self-test", action="store_true")
    parser.add_argument("dirs", nargs="*")
    options = parser.parse_args()
    if options.self_test:
        return self_test()
    if not options.dirs:
        parser.error("no directories given")
    count = 0
    for directory in options.dirs:
        for path in sorted(pathlib.Path(directory).rglob("*.cpp")) + sorted(pathlib.Path(directory).rglob("*.h")):
            for length, line, signature in long_functions(path, options.limit):
                print(f"{path}:{line}: {length} lines: {signature[:90]}")
                count += 1
    print(f"{count} function(s) over {options.limit} lines")
    return 1 if count else 0


if __name__ == "__main__":
    sys.exit(main())
