#!/usr/bin/env python3
"""Lists functions longer than a limit (default 80 lines) in C++ sources.

The project's style puts a function's opening brace alone on a line at the indentation of its
signature, so a body runs from that line to the closing brace at the same indentation. Lambdas and
control blocks keep their brace on the signature line and are counted as part of their function.
Usage: scripts/long_functions.py [--limit N] DIR...
"""
import argparse
import pathlib
import re
import sys


def long_functions(path, limit):
    lines = path.read_text(errors="replace").splitlines()
    found = []
    i = 0
    while i < len(lines):
        line = lines[i]
        match = re.fullmatch(r"( *)\{", line)
        if match and i > 0 and not lines[i - 1].rstrip().endswith((";", ",", "=")):
            indent = match.group(1)
            end = i + 1
            while end < len(lines) and not re.fullmatch(indent + r"\}.*", lines[end]):
                end += 1
            length = end - i + 2  # signature line and closing brace included
            if length > limit and not re.match(r"\s*(namespace|class|struct|enum)\b", lines[i - 1]):
                found.append((length, i, lines[i - 1].strip()))
            i = end
        i += 1
    return found


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--limit", type=int, default=80)
    parser.add_argument("dirs", nargs="+")
    options = parser.parse_args()
    count = 0
    for directory in options.dirs:
        for path in sorted(pathlib.Path(directory).rglob("*.cpp")) + sorted(pathlib.Path(directory).rglob("*.h")):
            for length, line, signature in long_functions(path, options.limit):
                print(f"{path}:{line}: {length} lines: {signature[:90]}")
                count += 1
    print(f"{count} function(s) over {options.limit} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
