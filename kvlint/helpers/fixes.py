"""Shared by the rules that attach fixes: small, position-exact text edits (applied and
verified through libcst by kvlint/fix.py)."""
from __future__ import annotations

import ast
from typing import Optional

from kvlint.analysis.findings import Edit
from kvlint.analysis.module import dotted_name
from kvlint.checks.base import FileContext


def add_keyword(call: ast.Call, text: str, ctx: FileContext) -> Optional[Edit]:
    """Insert `, name=value` right after the call's last argument (so a trailing comma and
    any comment after it stay where they are). None for a call without arguments."""
    nodes = list(call.args) + list(call.keywords)
    if not nodes:
        return None
    last = max(nodes, key=lambda n: (n.end_lineno, n.end_col_offset))
    _, _, end_line, end_col = ctx.index.span(last)
    return Edit((end_line, end_col), (end_line, end_col), f", {text}")


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
