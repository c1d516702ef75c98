"""Shared by the rules that attach fixes. Adding an argument is a libcst transformation of
the call (kvlint/cst_edit.py: the call's layout is kept); renames and value replacements are
position-exact edits of one token or expression, computed from `ast` positions (a check
whose only fixes are these never imports libcst: 0.16 s per process). kvlint/fix.py applies and verifies them."""
from __future__ import annotations

import ast
from typing import Optional

from kvlint.analysis.findings import Edit
from kvlint.analysis.module import dotted_name
from kvlint.checks.base import FileContext
from kvlint.edit_span import changed_part, position


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
    """`name=value` on `call`: the argument's value replaced if the keyword is there (the
    value's exact span, cut down to what differs: the edit libcst's transformation gives,
    without loading libcst), else added; a parenthesized value, which libcst replaces with
    its parentheses, and the addition are libcst transformations of the call."""
    passed = [kw for kw in call.keywords if kw.arg == name]
    if len(passed) == 1 and _parses(value) \
            and ctx.index.span(passed[0])[2:] == ctx.index.span(passed[0].value)[2:]:
        return _replace(passed[0].value, value, ctx)
    from kvlint.cst_edit import set_keyword_edit

    return set_keyword_edit(fragment(call, ctx), name, value)


def rename_keyword(call: ast.Call, kw: ast.keyword, new: str, ctx: FileContext) -> Optional[Edit]:
    """Rename the keyword argument `kw` of `call` to `new`: an edit of the name's exact span
    (where the source spells the name as `ast` reports it; otherwise, e.g. a name written
    with Unicode compatibility characters that `ast` normalizes, a libcst transformation)."""
    line, col = kw.lineno, ctx.index.char_col(kw.lineno, kw.col_offset)
    if kw.arg is not None and ctx.index.source.line(line)[col:col + len(kw.arg)] == kw.arg:
        return Edit((line, col), (line, col + len(kw.arg)), new)
    from kvlint.cst_edit import rename_keyword_edit

    return rename_keyword_edit(fragment(call, ctx), (line, col), kw.arg, new)


def _replace(node: ast.expr, new: str, ctx: FileContext) -> Edit:
    """Replace `node`'s text by `new`, cut down to the part that differs (as the libcst edits
    are: `torch.float16` -> `torch.bool` edits `float16`)."""
    line, col, _, _ = ctx.index.span(node)
    old = ctx.text(node)
    head, old_end, new_end = changed_part(old, new)
    return Edit(position(old, line, col, head), position(old, line, col, old_end), new[head:new_end])


def _parses(value: str) -> bool:
    try:
        ast.parse(value, mode="eval")
    except SyntaxError:
        return False
    return True


def module_head(call: ast.Call) -> str:
    """`torch` for `torch.ones(...)`, `th` for `th.ones(...)`."""
    name = dotted_name(call.func.value) if isinstance(call.func, ast.Attribute) else None
    return name or "torch"
