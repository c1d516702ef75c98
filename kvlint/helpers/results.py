"""How a call's result is bound (`out, lse = op(...)`) and whether a bound name is read later."""
from __future__ import annotations

import ast
from typing import List, Optional

from kvlint.analysis.resolve import OperatorCall
from kvlint.checks.base import FileContext


def result_target(call, ctx: FileContext) -> Optional[ast.expr]:
    """The target a call's result (an OperatorCall or an ast.Call) is assigned to directly
    (`a, b = op(...)`), else None."""
    node = call.call if isinstance(call, OperatorCall) else call
    parent = ctx.index.parent_of(node)
    if isinstance(parent, ast.Assign) and parent.value is node and len(parent.targets) == 1:
        return parent.targets[0]
    if isinstance(parent, ast.AnnAssign) and parent.value is node:
        return parent.target
    return None


def unpacked_names(target: Optional[ast.expr], starred: bool = False) -> Optional[List[ast.expr]]:
    """The elements of a tuple/list target, else None; with a starred element (`a, *b`) only
    when `starred`."""
    if isinstance(target, (ast.Tuple, ast.List)) and (starred or not any(isinstance(e, ast.Starred)
                                                                          for e in target.elts)):
        return list(target.elts)
    return None


def is_placeholder(name: str) -> bool:
    return name == "_" or name.startswith("_")


def first_read_after(name: str, stmt: ast.AST, ctx: FileContext) -> Optional[ast.Name]:
    """The first read of `name` after `stmt` in the same function (source order), or None
    when the name is rebound first or never read. Occurrences in the other arm of an
    `if`/`try` that holds `stmt` are skipped (they cannot follow it), and so is a read that
    only hands the value back (`return out, lse`): its consumer is not visible here. Loops
    that re-enter `stmt` are not followed."""
    scope = ctx.index.enclosing_scope(stmt)
    end = (getattr(stmt, "end_lineno", None) or getattr(stmt, "lineno", 0), getattr(stmt, "end_col_offset", 0))
    hits = [n for n in ast.walk(scope)
            if isinstance(n, ast.Name) and n.id == name and (n.lineno, n.col_offset) > end]
    hits.sort(key=lambda n: (n.lineno, n.col_offset))
    for node in hits:
        if ctx.values.in_other_branch(stmt, node):
            continue
        if not isinstance(node.ctx, ast.Load):
            # `lse = lse.squeeze(-1)` reads before it rebinds
            where = ctx.index.statement_of(node)
            reads = [h for h in hits if isinstance(h.ctx, ast.Load) and ctx.index.statement_of(h) is where]
            return reads[0] if reads else None
        if _returned_as_is(node, ctx):
            continue
        return node
    return None


def _returned_as_is(node: ast.Name, ctx: FileContext) -> bool:
    parent = ctx.index.parent_of(node)
    if isinstance(parent, ast.Tuple):
        parent = ctx.index.parent_of(parent)
    return isinstance(parent, ast.Return)
