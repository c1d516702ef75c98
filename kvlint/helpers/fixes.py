"""Shared by the rules that attach fixes. Adding an argument is a libcst transformation of
the call (kvlint/cst_edit.py: the call's layout is kept); renames and value replacements are
position-exact edits of one token or expression. kvlint/fix.py applies and verifies them."""
from __future__ import annotations

import ast
import re
from typing import Optional

from kvlint.analysis.findings import Edit, text_change
from kvlint.analysis.module import dotted_name
from kvlint.checks.base import FileContext


def fragment(call: ast.Call, ctx: FileContext):
    """The call's libcst fragment (kvlint/cst_edit.py), built once per call."""
    from kvlint.cst_edit import CallFragment

    cache = ctx.__dict__.setdefault("_cst_fragments", {})
    found = cache.get(id(call))
    if found is None or found[0] is not call:
        found = cache[id(call)] = (call, CallFragment(ctx.text(call), ctx.index.span(call)))
    return found[1]


def add_keyword(call: ast.Call, text: str, ctx: FileContext) -> Optional[Edit]:
    """Add `name=value` (`text`) after the call's last argument: a libcst transformation of
    the call that keeps its layout (one argument per line stays so; a trailing comma and a
    comment after it stay). None for a call without arguments or one libcst cannot read."""
    from kvlint.cst_edit import add_keyword_edit

    if not (call.args or call.keywords):
        return None
    name, _, value = text.partition("=")
    return add_keyword_edit(fragment(call, ctx), name.strip(), value.strip())


def set_keyword(call: ast.Call, name: str, value: str, ctx: FileContext) -> Optional[Edit]:
    """`name=value` on `call`: the argument's value replaced if the keyword is there, else
    added (both libcst transformations of the call). A keyword written `name=<value>`
    without parentheses around the value, set to a name or a number, gets the edit libcst's
    transformation gives (the value's text replaced, cut the same way) without loading libcst
    (a fifth of a second, the first time in a process)."""
    plain = _plain_value_edit(call, name, value, ctx)
    if plain is not None:
        return plain
    from kvlint.cst_edit import set_keyword_edit

    return set_keyword_edit(fragment(call, ctx), name, value)


_SIMPLE_VALUE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*|[0-9]+")


def _plain_value_edit(call: ast.Call, name: str, value: str, ctx: FileContext) -> Optional[Edit]:
    kw = next((k for k in call.keywords if k.arg == name), None)
    if kw is None or not _SIMPLE_VALUE.fullmatch(value) or not hasattr(kw, "end_lineno"):
        return None
    span = ctx.index.span(call)
    old = ctx.text(call)
    lines = old.split("\n")

    def offset(line: int, col: int) -> int:
        n = line - span[0]
        return sum(len(text) + 1 for text in lines[:n]) + col - (span[1] if n == 0 else 0)

    start = offset(kw.lineno, ctx.index.char_col(kw.lineno, kw.col_offset))
    v_line, v_col, v_end_line, v_end_col = ctx.index.span(kw.value)
    v_start, v_end = offset(v_line, v_col), offset(v_end_line, v_end_col)
    end = offset(kw.end_lineno, ctx.index.char_col(kw.end_lineno, kw.end_col_offset))
    # libcst's argument value holds the parentheses around it: then its text is not the
    # value's own, and libcst decides
    if end != v_end or not re.fullmatch(re.escape(name) + r"\s*=\s*", old[start:v_start]):
        return None
    return text_change(old, old[:v_start] + value + old[v_end:], span)


def rename_keyword(call: ast.Call, kw: ast.keyword, new: str, ctx: FileContext) -> Optional[Edit]:
    """Rename the keyword argument `kw` of `call` to `new` (a libcst transformation)."""
    from kvlint.cst_edit import rename_keyword_edit

    at = (kw.lineno, ctx.index.char_col(kw.lineno, kw.col_offset))
    return rename_keyword_edit(fragment(call, ctx), at, kw.arg, new)


def module_head(call: ast.Call) -> str:
    """`torch` for `torch.ones(...)`, `th` for `th.ones(...)`."""
    name = dotted_name(call.func.value) if isinstance(call.func, ast.Attribute) else None
    return name or "torch"
