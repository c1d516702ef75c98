"""Shared by the mask rules: where an atten_mask is built."""
from __future__ import annotations

import ast
from typing import Callable, Iterator, Optional, Tuple

from kvlint.analysis.dtypes import CONVERTING_METHODS, PRESERVING_METHODS, receiver_is_module
from kvlint.analysis.resolve import OperatorCall
from kvlint.checks.base import FileContext
from kvlint.helpers.roles import role_values

SHAPED_FACTORIES = {"ones", "zeros", "empty", "full", "rand", "randn"}


def mask_constructions(oc: OperatorCall, ctx: FileContext) -> Iterator[ast.expr]:
    """Where the mask the call passes is built (by keyword, or at the schema position: the
    8th argument of npu_fusion_attention)."""
    for value in role_values(oc, ctx, "mask"):
        for site in ctx.dtypes.construction_sites(value, oc.call):
            if isinstance(site, ast.Constant) and site.value is None:
                continue
            yield site


# The walk below looks through at most this many names and calls (deeper chains are unknown).
MAX_STEPS = 11
# Methods whose result holds the receiver's values (dtype and device changes included).
KEPT = frozenset(PRESERVING_METHODS) | frozenset(CONVERTING_METHODS) | {"to", "type"}
# Look-through calls of the cast rules (KV222, KV223): device, memory and shape changes.
DEVICE_SHAPE_KEEPING = frozenset({"npu", "cuda", "cpu", "contiguous", "clone", "detach", "view", "reshape",
                                  "unsqueeze", "squeeze", "expand", "to", "pin_memory"})

Step = Optional[Tuple[str, ast.AST]]


def follow_kept(expr: ast.AST, ctx: FileContext, step: Callable[[ast.AST], Step]) -> Optional[ast.AST]:
    """Walk from `expr` down to where its values come from: through names with one binding
    (followed into same-module builders) and whatever `step` says to look through.
    `step(node)` returns ("found", node) to stop with a result, ("next", node) to go on at
    `node`, or None for "not what we look for"."""
    for _ in range(MAX_STEPS):
        if isinstance(expr, ast.Name):
            cands = ctx.values.candidates(expr, expr, follow_calls=True)
            if len(cands) != 1 or cands[0] is expr:
                return None
            expr = cands[0]
            continue
        verdict = step(expr)
        if verdict is None:
            return None
        kind, expr = verdict
        if kind == "found":
            return expr
    return None


def kept_receiver(expr: ast.AST) -> Optional[ast.expr]:
    """`x` for `x.<method>(...)` where the method keeps x's values (dtype and device may change)."""
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in KEPT:
        return expr.func.value
    return None


def _factory_step(expr: ast.AST) -> Step:
    if isinstance(expr, ast.UnaryOp):
        return "next", expr.operand
    if not isinstance(expr, ast.Call) or not isinstance(expr.func, ast.Attribute):
        return None
    f = expr.func
    if receiver_is_module(f.value):
        if f.attr in SHAPED_FACTORIES:
            return "found", expr
        if f.attr in ("triu", "tril") and expr.args:
            return "next", expr.args[0]
        return None
    if f.attr in ("view", "reshape", "expand", "repeat"):
        return None  # changes the shape
    receiver = kept_receiver(expr)
    return ("next", receiver) if receiver is not None else None


def innermost_factory(expr: ast.expr, ctx: FileContext) -> Optional[ast.Call]:
    """`torch.ones(...)` inside `~torch.tril(torch.ones(...)).to(torch.bool).npu()` and the like."""
    found = follow_kept(expr, ctx, _factory_step)
    return found if isinstance(found, ast.Call) else None
