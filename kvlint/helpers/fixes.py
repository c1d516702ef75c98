"""Shared by the rules that attach fixes. Adding an argument is a libcst transformation of
the call (kvlint/cst_edit.py: the call's layout is kept); renames and value replacements are
position-exact edits of one token or expression. kvlint/fix.py applies and verifies them."""
from __future__ import annotations

import ast
from typing import Optional

from kvlint.analysis.findings import Edit
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
    added (both libcst transformations of the call)."""
    from kvlint.cst_edit import set_keyword_edit

    return set_keyword_edit(fragment(call, ctx), name, value)


def rename_keyword(call: ast.Call, kw: ast.keyword, new: str, ctx: FileContext) -> Optional[Edit]:
    """Rename the keyword argument `kw` of `call` to `new` (a libcst transformation)."""
    from kvlint.cst_edit import rename_keyword_edit

    at = (kw.lineno, ctx.index.char_col(kw.lineno, kw.col_offset))
    return rename_keyword_edit(fragment(call, ctx), at, kw.arg, new)


def module_head(call: ast.Call) -> str:
    """`torch` for `torch.ones(...)`, `th` for `th.ones(...)`."""
    name = dotted_name(call.func.value) if isinstance(call.func, ast.Attribute) else None
    return name or "torch"
