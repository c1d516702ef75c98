"""Shared by the mask rules: where an atten_mask is built."""
from __future__ import annotations

import ast
from typing import Iterator, Optional

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


def innermost_factory(expr: ast.expr, ctx: FileContext, depth: int = 0) -> Optional[ast.Call]:
    """`torch.ones(...)` inside `~torch.tril(torch.ones(...)).to(torch.bool).npu()` and the like."""
    if depth > 10:
        return None
    if isinstance(expr, ast.UnaryOp):
        return innermost_factory(expr.operand, ctx, depth + 1)
    if isinstance(expr, ast.Name):
        cands = ctx.values.candidates(expr, expr, follow_calls=True)
        if len(cands) == 1 and cands[0] is not expr:
            return innermost_factory(cands[0], ctx, depth + 1)
        return None
    if not isinstance(expr, ast.Call) or not isinstance(expr.func, ast.Attribute):
        return None
    f = expr.func
    if receiver_is_module(f.value):
        if f.attr in SHAPED_FACTORIES:
            return expr
        if f.attr in ("triu", "tril") and expr.args:
            return innermost_factory(expr.args[0], ctx, depth + 1)
        return None
    if f.attr in PRESERVING_METHODS or f.attr in CONVERTING_METHODS or f.attr in ("to", "type"):
        if f.attr in ("view", "reshape", "expand", "repeat"):
            return None  # changes the shape
        return innermost_factory(f.value, ctx, depth + 1)
    return None
