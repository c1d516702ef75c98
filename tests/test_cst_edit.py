"""Fixes that change a call's arguments are libcst transformations of the call node: the
call's layout is kept whatever its formatting (kvlint/cst_edit.py)."""
import ast
import textwrap

import pytest

from kvlint.analysis.findings import Fix
from kvlint.cst_edit import CallFragment, add_keyword_edit, rename_keyword_edit, set_keyword_edit
from kvlint.fix import apply_fixes


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


# -- value replacements and renames without libcst (helpers/fixes.py) ------------------------
EXACT_CASES = [
    "x = m.op(q, sparse_mode=2)\n",
    "x = m.op(q, sparse_mode=(2), next_tokens=0)\n",
    "x = m.op(\n    q,\n    sparse_mode=2,  # left-up\n)\n",
    "x = m.op(q, dtype=torch.float16)\n",
    "x = m.op(q, dtype=(\n    torch.float16))\n",
    "x = m.op('é', sparse_mode=2, dtype=torch.float)\n",
]


def _context(src: str):
    from kvlint.analysis.module import ModuleIndex
    from kvlint.catalog import load_catalog
    from kvlint.checks.base import FileContext
    from kvlint.settings import Settings
    from kvlint.source import decode

    source = decode("t.py", src.encode())
    return FileContext(ModuleIndex(source, ast.parse(src)), load_catalog(), Settings())


REPLACEMENTS = [(src, name, value) for name, value in (("sparse_mode", "3"), ("dtype", "torch.bool"))
                for src in EXACT_CASES if f"{name}=" in src]  # a keyword not passed is added, by libcst


@pytest.mark.parametrize("src, name, value", REPLACEMENTS)
def test_a_value_replacement_is_the_edit_libcst_gives(src, name, value):
    from kvlint.helpers.fixes import set_keyword

    call, frag = fragment(src)
    ctx = _context(src)
    node = next(n for n in ast.walk(ctx.index.tree) if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "op")
    exact = set_keyword(node, name, value, ctx)
    assert exact == set_keyword_edit(frag, name, value)
    assert applied(src, exact) == applied(src, set_keyword_edit(frag, name, value))


@pytest.mark.parametrize("src", EXACT_CASES)
def test_a_rename_is_the_edit_libcst_gives(src):
    from kvlint.helpers.fixes import rename_keyword

    call, frag = fragment(src)
    ctx = _context(src)
    node = next(n for n in ast.walk(ctx.index.tree) if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "op")
    kw = node.keywords[0]
    at = (kw.lineno, ctx.index.char_col(kw.lineno, kw.col_offset))
    assert rename_keyword(node, kw, "renamed", ctx) == rename_keyword_edit(frag, at, kw.arg, "renamed")


def test_a_check_whose_fixes_are_replacements_does_not_load_libcst(tmp_path):
    import subprocess
    import sys

    (tmp_path / "m.py").write_text("import torch_npu\n\n\ndef f(q, k, v, m):\n"
                                   "    return torch_npu.npu_fused_infer_attention_score(q, k, v, num_heads=8, scale=0.1,\n"
                                   "        input_layout='BSND', atten_mask=m, sparse_mode=2)\n")
    code = ("import sys\nfrom kvlint.cli import main\nrc = main(['check', '--no-cache', '--output-format', 'json', "
            f"{str(tmp_path / 'm.py')!r}])\nprint('libcst' in sys.modules, rc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout
    assert '"KV202"' in out and '"fixable": true' in out
    assert out.strip().endswith("False 1")
