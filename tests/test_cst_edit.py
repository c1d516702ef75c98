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


SET_CASES = [  # (source, keyword, value, the fixed source, or None: left to libcst)
    ("x = m.op(q, k, v, sparse_mode=2)\n", "sparse_mode", "3", "x = m.op(q, k, v, sparse_mode=3)\n"),
    ("x = m.op(q, k, v, sparse_mode = 2, scale=s)\n", "sparse_mode", "3",
     "x = m.op(q, k, v, sparse_mode = 3, scale=s)\n"),
    ("x = m.op(\n    q,\n    sparse_mode=2,  # band\n    atten_mask=mask,\n)\n", "sparse_mode", "3",
     "x = m.op(\n    q,\n    sparse_mode=3,  # band\n    atten_mask=mask,\n)\n"),
    ("x = m.op(q, k, v,\n         sparse_mode=\n         2)\n", "sparse_mode", "3",
     "x = m.op(q, k, v,\n         sparse_mode=\n         3)\n"),
    ('x = m.op("é ü", sparse_mode=2)\n', "sparse_mode", "3", 'x = m.op("é ü", sparse_mode=3)\n'),
    ("y = 'é'; x = m.op(q,\n  dtype=torch.float16)\n", "dtype", "torch.bool",
     "y = 'é'; x = m.op(q,\n  dtype=torch.bool)\n"),
    ("x = m.op(q, sparse_mode=(2))\n", "sparse_mode", "3", None),
    ("x = m.op(q, sparse_mode=(\n    2  # causal\n))\n", "sparse_mode", "3", None),
    ("x = m.op(q, dtype=torch.float16 if a else torch.half)\n", "dtype", "torch.bool",
     "x = m.op(q, dtype=torch.bool)\n"),
    ("x = m.op(q, k)\n", "sparse_mode", "3", None),
]


@pytest.mark.parametrize("src, name, value, after", SET_CASES)
def test_set_keyword_without_libcst_gives_libcst_edit(src, name, value, after):
    """helpers/fixes.set_keyword edits a plain `name=value` itself: the very edit libcst's
    transformation gives; a parenthesized or absent value is left to libcst."""
    from kvlint.analysis.module import ModuleIndex
    from kvlint.catalog import load_catalog
    from kvlint.checks.base import FileContext
    from kvlint.helpers.fixes import _plain_value_edit, set_keyword
    from kvlint.helpers.fixes import fragment as call_fragment
    from kvlint.settings import Settings
    from kvlint.source import decode

    ctx = FileContext(ModuleIndex(decode("m.py", src.encode()), ast.parse(src)), load_catalog(), Settings())
    call = next(n for n in ast.walk(ctx.index.tree) if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "op")
    plain = _plain_value_edit(call, name, value, ctx)
    expected = set_keyword_edit(call_fragment(call, ctx), name, value)
    assert set_keyword(call, name, value, ctx) == expected
    if after is None:
        assert plain is None
    else:
        assert plain == expected and applied(src, plain) == after
