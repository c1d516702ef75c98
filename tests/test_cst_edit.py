"""Fixes that change a call's arguments are libcst transformations of the call node: the
call's layout is kept whatever its formatting (kvlint/cst_edit.py)."""
import ast
import textwrap

import pytest

from kvlint.cst_edit import CallFragment, add_keyword_edit, rename_keyword_edit, set_keyword_edit
from kvlint.fix import apply_fixes
from kvlint.analysis.findings import Fix


def fragment(src: str):
    tree = ast.parse(src)
    call = next(n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "op")
    lines = src.splitlines(keepends=True)
    if call.lineno == call.end_lineno:
        text = lines[call.lineno - 1][call.col_offset:call.end_col_offset]
    else:
        text = "".join([lines[call.lineno - 1][call.col_offset:], *lines[call.lineno:call.end_lineno - 1],
                        lines[call.end_lineno - 1][:call.end_col_offset]])
    return call, CallFragment(text, (call.lineno, call.col_offset, call.end_lineno, call.end_col_offset))


def applied(src: str, edit) -> str:
    assert edit is not None
    return apply_fixes(src, [Fix("t", (edit,))])[0]


ADD_CASES = [
    ("x = m.op(q, k, v)\n", "x = m.op(q, k, v, scale=s)\n"),
    ("x = m.op(q, k, v,)\n", "x = m.op(q, k, v, scale=s,)\n"),
    ("""\
        def f():
            if y:
                x = m.op(
                    q,
                    k,
                    v
                )
        """, """\
        def f():
            if y:
                x = m.op(
                    q,
                    k,
                    v,
                    scale=s
                )
        """),
    ("""\
        x = m.op(
            q, k, v,
            num_heads=8,
            input_layout="BSH",  # keep me
        )
        """, """\
        x = m.op(
            q, k, v,
            num_heads=8,
            input_layout="BSH",  # keep me
            scale=s,
        )
        """),
    ("""\
        x = m.op(q, k, v,
                 num_heads=8)
        """, """\
        x = m.op(q, k, v,
                 num_heads=8,
                 scale=s)
        """),
    ("""\
        x = m.op(q, k, v, num_heads=8,  # heads
                 input_layout="BSH")
        """, """\
        x = m.op(q, k, v, num_heads=8,  # heads
                 input_layout="BSH",
                 scale=s)
        """),
]


@pytest.mark.parametrize("before, after", ADD_CASES)
def test_add_keyword_keeps_the_layout(before, after):
    before, after = textwrap.dedent(before), textwrap.dedent(after)
    _, frag = fragment(before)
    assert applied(before, add_keyword_edit(frag, "scale", "s")) == after


def test_rename_keyword_edits_the_name_only():
    src = textwrap.dedent("""\
        x = m.op(q, k, v,
                 softmax_scale  =  0.1,  # the v2 name
                 num_heads=8)
        """)
    call, frag = fragment(src)
    kw = call.keywords[0]
    edit = rename_keyword_edit(frag, (kw.lineno, kw.col_offset), "softmax_scale", "scale")
    assert edit.start == (2, 9) and edit.end == (2, 22) and edit.text == "scale"
    assert applied(src, edit) == src.replace("softmax_scale  =", "scale  =")
    assert rename_keyword_edit(frag, (kw.lineno, kw.col_offset), "num_heads", "x") is None  # wrong name there


def test_set_keyword_replaces_or_adds():
    src = "mask = m.op(n, n, dtype=torch.float16)\n"
    _, frag = fragment(src)
    assert applied(src, set_keyword_edit(frag, "dtype", "torch.bool")) == "mask = m.op(n, n, dtype=torch.bool)\n"
    src = "mask = m.op(n, n)\n"
    _, frag = fragment(src)
    assert applied(src, set_keyword_edit(frag, "dtype", "torch.bool")) == "mask = m.op(n, n, dtype=torch.bool)\n"


def test_unicode_and_strings_in_the_call():
    src = 'x = m.op("é # not a comment", k, v)\n'
    _, frag = fragment(src)
    assert applied(src, add_keyword_edit(frag, "scale", "s")) == 'x = m.op("é # not a comment", k, v, scale=s)\n'
