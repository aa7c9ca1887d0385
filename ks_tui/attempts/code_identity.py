"""A kernel's code identity: the sha256 of its source with comments and layout taken out.

The attempt log tells re-measures of one kernel from new kernels by comparing kernels. The
file's own sha256 (the harness result's `kernel_sha256`) changes with every comment or
whitespace edit, so a kernel whose comments were edited (every promotion to best/kernel.cu is
one) read as a new kernel: a re-measure of it could count as a gain, and its repeat runs did
not measure the noise. `code_identity` hashes what the compiler reads instead.

It is conservative: text leaves the hash only where C, C++ and CUDA ignore it, so any change
the compiler sees changes the identity. Comments (`//` to the end of the line, a backslash
before the newline carrying it on, and `/* ... */`) become one space; string, character and
raw string literals are kept as they are, whitespace inside them included; outside them a run
of blanks is one space, each line is stripped and blank lines go, but the line structure stays
(preprocessor lines end at newlines), and a backslash-newline joins two lines as the compiler
does. A quote with no partner on its line keeps the rest of the line as a literal (never read
as a comment). Line ends \\r\\n and \\r read as \\n. For C-family sources only: in Python `//`
is an operator.

Change VERSION with `normalized`: the attempt store keeps identities by blob id on disk under it.
"""

from __future__ import annotations

import hashlib
import re
from itertools import chain

VERSION = 1

# What is not plain code; the text between matches is. Every branch begins with a fixed character (a quote,
# a slash, a backslash) and the pattern has no group in front, so `re` skips plain code quickly.
_TOKEN = re.compile(rb"""
    "(?:(?<=\bR")|(?<=\b[uUL]R")|(?<=\bu8R"))   # a raw string R"x( ... )x" (prefixes u8 u U L), kept whole:
      ([^()\\\s"]{0,16})\([\s\S]*?\)\1"          # backslashes and newlines in it are its own
  | "(?:\\[\s\S]|[^"\\\n])*"?                   # a string: to its closing quote, or to the line's end without one
  | '(?:(?<![\w.]')|(?<=\b[uUL]')|(?<=\bu8'))   # a character literal (after a digit, 1'000's separator is code)
      (?:\\[\s\S]|[^'\\\n])*'?
  | //(?:\\\n|[^\n])*                           # a line comment; a backslash before the newline carries it on
  | /\*[\s\S]*?\*/                              # a block comment
  | \\\n                                        # a backslash-newline: the two lines are one
""", re.VERBOSE)
# What a token leaves in the code, by its first byte: a literal its mark (put back at the end), a comment one
# space, a backslash-newline nothing.
_COMMENT, _SPLICE = ord("/"), ord("\\")


def _mark(data: bytes) -> bytes | None:
    """A byte DATA does not hold (not whitespace), to stand for its literals while the layout is normalized."""
    return next((bytes([b]) for b in (0, *range(0xFF, 0x7F, -1), *range(1, 9), *range(0x0E, 0x20))
                 if bytes([b]) not in data), None)


def normalized(source: bytes) -> bytes:
    """SOURCE as `code_identity` hashes it: comments out, blanks collapsed, lines stripped, blank lines dropped,
    literals as they were. A source that holds every byte value is kept as it is."""
    data = source.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    mark = _mark(data)
    if mark is None:  # not a source file; nothing is left out of it
        return source
    pieces: list[bytes] = []
    literals: list[bytes] = []
    pos = 0
    for m in _TOKEN.finditer(data):
        start = m.start()
        pieces.append(data[pos:start])
        first = data[start]
        if first == _COMMENT:
            pieces.append(b" ")  # one space: a/**/b stays two tokens
        elif first != _SPLICE:
            literals.append(m.group())
            pieces.append(mark)
        pos = m.end()
    pieces.append(data[pos:])
    # bytes.split() splits at C's whitespace (space, \t, \n, \v, \f, \r) and nothing else
    lines = (b" ".join(line.split()) for line in b"".join(pieces).split(b"\n"))
    code = b"\n".join(line for line in lines if line)
    if not literals:
        return code
    parts = code.split(mark)
    return b"".join(chain.from_iterable(zip(parts, literals, strict=False))) + parts[-1]


def code_identity(source: bytes) -> str:
    """sha256 (hex) of SOURCE, a C, C++ or CUDA file, as `normalized` leaves it: two files that differ only in
    comments and layout share it, any other difference parts them."""
    return hashlib.sha256(normalized(source)).hexdigest()
