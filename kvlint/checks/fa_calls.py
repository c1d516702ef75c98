"""Shared by the FA-call rules (KV105-KV108, KV130-KV131, KV207-KV208, KV303-KV305): what a
call passes for a parameter, how its result is bound, and whether a bound name is read later.

Everything here is syntax plus the engine's value tracer; nothing is evaluated.
"""
from __future__ import annotations

import ast
import re
from typing import List, Optional

from kvlint.analysis.resolve import OperatorCall
from kvlint.analysis.values import UNKNOWN
from kvlint.checks.base import FileContext


def param_values(oc: OperatorCall, ctx: FileContext, name: str) -> List[ast.expr]:
    """The expressions passed for parameter `name`, by keyword (incl. resolved `**dicts`) or
    by position when the schema makes it positional."""
    args = ctx.args(oc.call)
    values = args.values(name)
    if values:
        return values
    names = [p.name for p in oc.operator.positional_params]
    if name in names and names.index(name) < len(args.positional):
        return [args.positional[names.index(name)]]
    return []


def literals(oc: OperatorCall, ctx: FileContext, name: str) -> Optional[List[object]]:
    """Literal candidates of parameter `name` (UNKNOWN where not a literal); None when the
    call does not pass it."""
    values = param_values(oc, ctx, name)
    if not values:
        return None
    out: List[object] = []
    for v in values:
        out.extend(ctx.values.literal_values(v, oc.call))
    return out


def passes_value(oc: OperatorCall, ctx: FileContext, name: str) -> bool:
    """The call passes `name` with something other than a literal None on some path."""
    found = literals(oc, ctx, name)
    return found is not None and any(v is not None for v in found)


def int_literals(values) -> List[int]:
    return [v for v in values if isinstance(v, int) and not isinstance(v, bool)]


def is_true_somewhere(oc: OperatorCall, ctx: FileContext, name: str) -> bool:
    """A flag keyword that is passed and may be true (anything but literal False/None/0)."""
    found = literals(oc, ctx, name)
    if found is None:
        return False
    return any(v is UNKNOWN or bool(v) for v in found)


def result_target(oc: OperatorCall, ctx: FileContext) -> Optional[ast.expr]:
    """The target the call's result is assigned to directly (`a, b = op(...)`), else None."""
    parent = ctx.index.parent_of(oc.call)
    if isinstance(parent, ast.Assign) and parent.value is oc.call and len(parent.targets) == 1:
        return parent.targets[0]
    if isinstance(parent, ast.AnnAssign) and parent.value is oc.call:
        return parent.target
    return None


def unpacked_names(target: Optional[ast.expr]) -> Optional[List[ast.expr]]:
    """The elements of a tuple/list target without a starred element, else None."""
    if isinstance(target, (ast.Tuple, ast.List)) and not any(isinstance(e, ast.Starred) for e in target.elts):
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
    end = (getattr(stmt, "end_lineno", stmt.lineno), getattr(stmt, "end_col_offset", 0))
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


def same_expression(a: ast.expr, b: ast.expr, ctx: FileContext) -> bool:
    """Two argument expressions that denote the same object: the same text, or names that
    trace to one and the same text."""
    ta, tb = _norm(ctx.text(a)), _norm(ctx.text(b))
    if ta == tb:
        return True
    ca = {_norm(ctx.text(c)) for c in ctx.values.candidates(a) if hasattr(c, "lineno")}
    cb = {_norm(ctx.text(c)) for c in ctx.values.candidates(b) if hasattr(c, "lineno")}
    return len(ca) == 1 and ca == cb


def _norm(text: str) -> str:
    return re.sub(r"\s+", "", text)
