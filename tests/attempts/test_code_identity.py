"""code_identity: comments and layout do not make a new kernel; any change the compiler sees does."""

from __future__ import annotations

import hashlib

import pytest

from ks_tui.attempts.code_identity import code_identity, normalized

KERNEL = b"""\
#include <cuda_runtime.h>
#define SCALE 2.0f  // doubled
/* the toy kernel:
   y = 2 x */
__global__ void twice(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;  // one element a thread
    if (i < n) y[i] = SCALE * x[i];
    asm volatile("// not a comment: PTX text \\n" ::);
}
"""


def same(a: bytes, b: bytes) -> bool:
    return code_identity(a) == code_identity(b)


def test_the_identity_is_a_sha256_of_the_normalized_source():
    assert code_identity(KERNEL) == hashlib.sha256(normalized(KERNEL)).hexdigest()
    assert len(code_identity(KERNEL)) == 64 and code_identity(KERNEL) != hashlib.sha256(KERNEL).hexdigest()


def test_a_comment_only_edit_is_the_same_code():
    edited = (KERNEL.replace(b"// doubled", b"// doubled, as in v3 (see NOTES.md)")
              .replace(b"y = 2 x */", b"y = 2 x, promoted to best/ */")
              + b"// promoted from next_kshift: +1.2% on the grid\n/* a closing block\n comment */\n")
    assert edited != KERNEL and same(KERNEL, edited)
    assert same(KERNEL, KERNEL.replace(b"// one element a thread", b""))


def test_whitespace_reindent_and_blank_lines_are_the_same_code():
    reindented = b"\n\n".join(b"\t  " + line.strip() + b"   " for line in KERNEL.split(b"\n"))
    assert same(KERNEL, reindented)
    assert same(KERNEL, KERNEL.replace(b"int i = ", b"int   i\t=  "))
    assert same(KERNEL, KERNEL.replace(b"\n", b"\r\n"))


def test_a_real_code_change_is_another_kernel():
    for old, new in ((b"2.0f", b"3.0f"), (b"i < n", b"i <= n"), (b"int i", b"long i"),
                     (b"blockIdx.x * blockDim.x", b"blockDim.x * blockIdx.x")):
        assert not same(KERNEL, KERNEL.replace(old, new)), (old, new)
    assert not same(KERNEL, KERNEL + b"static int added;\n")
    # tokens that only whitespace kept apart stay apart
    assert not same(b"int x = a + +b;", b"int x = a ++b;")
    assert not same(b"unsigned int x;", b"unsignedint x;")


def test_slashes_inside_string_and_char_literals_are_code():
    assert normalized(b'const char* s = "a // b /* c */";  // note') == b'const char* s = "a // b /* c */";'
    assert not same(b'puts("a // b");', b'puts("a // c");')
    assert not same(b'puts("a /* b */ c");', b'puts("a  c");')
    # escapes in a literal: \" does not end the string, so the // after it is still inside
    assert not same(b'puts("say \\"hi\\" // x");', b'puts("say \\"hi\\" // y");')
    assert same(b'puts("say \\"hi\\""); // x', b'puts("say \\"hi\\""); // y')
    # a quote in a character literal opens no string
    assert same(b"char q = '\"'; // x\nint a;", b"char q = '\"'; // y\nint a;")
    assert same(b"char c = '/'; int d = a; // b\n", b"char c = '/'; int d = a; // c\n")
    assert not same(b"char c = '/'; int d = 1;", b"char c = '*'; int d = 1;")
    # the PTX text in asm() is a literal: its // and its layout are code
    assert not same(KERNEL, KERNEL.replace(b"PTX text", b"PTX  text"))
    assert not same(KERNEL, KERNEL.replace(b"not a comment", b"not a comment at all"))


def test_whitespace_inside_literals_is_kept():
    assert not same(b's = "a  b";', b's = "a b";')
    assert not same(b"c = ' ';", b"c = '  ';")
    assert not same(b'r = R"(line\n  two)";', b'r = R"(line\ntwo)";')


def test_raw_strings_and_digit_separators():
    raw = b'const char* p = R"x(a // b " /* c */ )x";  // d\nint e;'
    assert normalized(raw) == b'const char* p = R"x(a // b " /* c */ )x";\nint e;'
    assert not same(raw, raw.replace(b"// b", b"// z"))
    assert same(raw, raw.replace(b"// d", b"// z"))
    # 1'000 holds a digit separator, not a character literal: the comment after it is still a comment
    sep = b"int big = 1'000'000; // it's big\nint s = 1'0; // odd count\n"
    assert normalized(sep) == b"int big = 1'000'000;\nint s = 1'0;"
    assert not same(b'int x = 1\'0; s = "it\'s // not";', b'int x = 1\'0; s = "it\'s // nor";')
    assert same(b"auto c = u8'a'; // one", b"auto c = u8'a'; // two")


def test_a_block_comment_between_tokens_is_a_space():
    assert normalized(b"int/**/x;") == b"int x;"
    assert same(b"int/**/x;", b"int x;") and not same(b"int/**/x;", b"intx;")
    assert same(b"a = b /* first */ + c;", b"a = b + /* second */ c;")
    # a block comment over lines is one space, as the compiler reads it: the directive goes on
    assert normalized(b"#define N 4 /* four\n  of them */ + 1\nint x;") == b"#define N 4 + 1\nint x;"
    assert not same(b"#define N 4 /*\n*/ + 1", b"#define N 4\n+ 1")


def test_a_line_comment_goes_on_after_a_backslash_newline():
    text = b"int a; // a comment \\\n  that goes on here\nint b;\n"
    assert normalized(text) == b"int a;\nint b;"
    assert same(text, text.replace(b"goes on here", b"still goes on"))
    # without the backslash the next line is code
    plain = b"int a; // a comment\n  int c;\nint b;\n"
    assert normalized(plain) == b"int a;\nint c;\nint b;"
    assert not same(plain, plain.replace(b"int c;", b"int d;"))


def test_lines_stay_lines_and_a_splice_joins_them():
    # preprocessor lines end at newlines: joining two lines is a code change
    assert not same(b"#define A 1\n+ 2\n", b"#define A 1 + 2\n")
    assert same(b"#define A 1 \\\n    + 2\n", b"#define A 1 + 2\n")
    assert not same(b"#define A 1 \\\n\n+ 2\n", b"#define A 1 \\\n+ 2\n")
    assert not same(b"ab", b"a\\\n b")


@pytest.mark.parametrize("source", [b"", b"// only a comment\n", b"\n\n  \t\n", b"\xff\xfe not utf-8 // x\n",
                                    b'"unterminated // stays\n', b"/* unterminated\nint x;", b"'\\"])
def test_odd_sources_hash_without_error(source):
    assert len(code_identity(source)) == 64


def test_odd_sources_still_tell_code_apart():
    assert code_identity(b"\xff\xfe not utf-8 // x\n") != code_identity(b"\xff\xfd not utf-8 // x\n")
    # an unterminated literal keeps the rest of its line: a // there is not cut
    assert not same(b'"unterminated // stays\n', b'"unterminated // goes\n')
    assert not same(b"/* unterminated\nint x;", b"/* unterminated\nint y;")
