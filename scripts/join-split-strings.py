#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Joins C string literals that were split across two lines.

clang-format used to break long strings (BreakStringLiterals), leaving log
messages in pieces that grep cannot find. `make format` runs this before
clang-format (which no longer breaks strings) so that every message stays
whole; `make format-check` runs it with --check.

A piece is joined with the literal that opens the next line when it ends
the line (outside comments and macro continuations) and does not end in
"\\n" (text meant to come out as separate lines, such as usage, stays as
it is) nor in a hexadecimal or octal escape (joining would change it).

Usage: join-split-strings.py [--check] FILE...
  --check: change nothing; list the files that have split strings and
           exit 1 if there are any.
"""
import re
import sys

# A numeric escape at the end of a piece: "\x1" "2" is not "\x12".
NUMERIC_ESCAPE_END = re.compile(r'\\(x[0-9a-fA-F]+|[0-7]{1,3})$')


def ends_in_string(line, in_comment):
    """Scans one line: (whether it ends right after a string literal's
    closing quote, that literal's text, whether a /* comment is still open
    at its end)."""
    i, n = 0, len(line)
    last_string = None  # the literal the line ends with, if any
    while i < n:
        if in_comment:
            end = line.find('*/', i)
            if end < 0:
                return False, None, True
            i = end + 2
            in_comment = False
            last_string = None
            continue
        c = line[i]
        if line.startswith('/*', i):
            in_comment = True
            i += 2
            continue
        if line.startswith('//', i):
            return False, None, False
        if c in '"\'':
            start = i
            i += 1
            while i < n and line[i] != c:
                i += 2 if line[i] == '\\' else 1
            i += 1
            last_string = line[start:i] if c == '"' else None
            continue
        if not c.isspace():
            last_string = None
        i += 1
    return last_string is not None, last_string, in_comment


def join(text):
    """The text with split literals joined, and how many joins."""
    lines = text.split('\n')
    out = []
    joins = 0
    in_comment = False
    i = 0
    while i < len(lines):
        line = lines[i]
        ends, literal, in_comment_after = ends_in_string(line, in_comment)
        nxt = lines[i + 1].lstrip() if i + 1 < len(lines) else ''
        body = literal[1:-1] if literal else ''
        if (ends and nxt.startswith('"') and not body.endswith('\\n') and
                not NUMERIC_ESCAPE_END.search(body) and
                not line.lstrip().startswith('#')):
            # Drop the closing quote and the next line's opening one.
            lines[i + 1] = line.rstrip()[:-1] + nxt[1:]
            joins += 1
            i += 1
            continue
        out.append(line)
        in_comment = in_comment_after
        i += 1
    return '\n'.join(out), joins


def main(argv):
    check = '--check' in argv
    files = sorted(set(a for a in argv if a != '--check'))
    split = []
    for path in files:
        with open(path, encoding='utf-8') as f:
            text = f.read()
        joined, joins = join(text)
        if not joins:
            continue
        split.append(path)
        if not check:
            with open(path, 'w', encoding='utf-8') as f:
                f.write(joined)
    if check and split:
        for path in split:
            print(f'{path}: a string literal is split across lines '
                  '(make format joins it)', file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
