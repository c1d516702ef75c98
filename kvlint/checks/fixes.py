"""Shared by the rules that attach fixes. Adding an argument is a libcst transformation of
the call (kvlint/cst_edit.py: the call's layout is kept); renames and value replacements are
position-exact edits of one token or expression. kvlint/fix.py applies and verifies them."""
from __future__ import annotations

import ast
from typing import Optional

from kvlint.analysis.findings import Edit
from kvlint.analysis.module import dotted_name
from kvlint.checks.base import FileContext


def cst_index(ctx: FileContext):
    """The file's libcst index, built on the first fix that needs it."""
    index = getattr(ctx, "_cst_index", None)
    if index is None:
        from kvlint.cst_edit import CstIndex

        index = ctx._cst_index = CstIndex(ctx.source.text)
    return index


def add_keyword(call: ast.Call, text: str, ctx: FileContext) -> Optional[Edit]:
    """Add `name=value` (`text`) after the call's last argument, as a libcst transformation
    of the call that keeps its layout (one argument per line stays so; a trailing comma and a
    comment after it stay). None for a call without arguments or one libcst does not see."""
    from kvlint.cst_edit import add_keyword_edit

    if not (call.args or call.keywords):
        return None
    name, _, value = text.partition("=")
    return add_keyword_edit(cst_index(ctx), ctx.index.span(call), name.strip(), value.strip())


def set_keyword(call: ast.Call, name: str, value: str, ctx: FileContext) -> Optional[Edit]:
    """`name=value` on `call`: replace the value if the keyword is there, else add it."""
    for kw in call.keywords:
        if kw.arg == name:
            return ctx.edit_replace(kw.value, value)
    return add_keyword(call, f"{name}={value}", ctx)


def module_head(call: ast.Call) -> str:
    """`torch` for `torch.ones(...)`, `th` for `th.ones(...)`."""
    name = dotted_name(call.func.value) if isinstance(call.func, ast.Attribute) else None
    return name or "torch"
