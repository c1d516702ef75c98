"""Shared by the cache-write rules (KV330-KV349, KV501-KV509): an operator argument by its
schema name, and what a cache argument visibly is (an NZ view, a literal last dim)."""
from __future__ import annotations

import ast
import re
from typing import List, Optional, Tuple

from kvlint.analysis.module import dotted_name
from kvlint.analysis.resolve import OperatorCall
from kvlint.checks.base import FileContext

RESHAPES = ("view", "reshape")
# NZ_VIEW: the fractal last dim of an NZ cache (16 for fp16/bf16, 32 for int8).
NZ_LAST_DIMS = (16, 32)
_NZ_NAME = re.compile(r"(^|_)nz($|_)", re.IGNORECASE)


def arg_values(oc: OperatorCall, ctx: FileContext, name: str) -> List[ast.expr]:
    """The expressions passed for schema parameter `name`, positionally or by keyword."""
    args = ctx.args(oc.call)
    names = [p.name for p in oc.operator.positional_params]
    if name in names and names.index(name) < len(args.positional):
        return [args.positional[names.index(name)]]
    return args.values(name)


def reshape_dims(expr: ast.expr) -> Optional[List[ast.expr]]:
    """The dims of `t.view(a, b, c)` / `t.reshape((a, b, c))`, else None."""
    if not (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in RESHAPES):
        return None
    if len(expr.args) == 1 and isinstance(expr.args[0], (ast.Tuple, ast.List)):
        return list(expr.args[0].elts)
    if any(isinstance(a, ast.Starred) for a in expr.args) or not expr.args:
        return None
    if len(expr.args) == 1 and dotted_name(expr.args[0]) and dotted_name(expr.args[0]).startswith("torch."):
        return None  # .view(torch.uint8): a dtype view
    return list(expr.args)


def is_nz_view(expr: ast.expr, ctx: FileContext) -> bool:
    """NZ_VIEW: some candidate of `expr` is a 5-D view, a view whose last dim is 16/32 or a
    name saying NZ (`KV_CACHE_NZ_DIM`), or comes from a function whose name says NZ."""
    for cand in ctx.values.candidates(expr, expr, follow_calls=True):
        dims = reshape_dims(cand)
        if dims is not None:
            if len(dims) == 5:
                return True
            last = dims[-1]
            if ctx.values.int_value(last, last) in NZ_LAST_DIMS:
                return True
            if any(_NZ_NAME.search(part) for part in (dotted_name(last) or "").split(".")):
                return True
    if isinstance(expr, ast.Call):
        callee = dotted_name(expr.func) or ""
        if _NZ_NAME.search(callee.split(".")[-1]):
            return True
    return False


def literal_last_dim(expr: ast.expr, ctx: FileContext) -> Optional[int]:
    """The literal last dim of the tensor `expr` is built or viewed as (a factory call with
    literal sizes or a `.view(..., n)`), when every candidate agrees; else None."""
    widths = set()
    for cand in ctx.values.candidates(expr, expr, follow_calls=True):
        dims = reshape_dims(cand) or _factory_dims(cand)
        if not dims:
            return None
        v = ctx.values.int_value(dims[-1], dims[-1])
        if not isinstance(v, int):
            return None
        widths.add(v)
    return widths.pop() if len(widths) == 1 else None


def _factory_dims(expr: ast.expr) -> Optional[List[ast.expr]]:
    if not (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute)):
        return None
    if dotted_name(expr.func.value) not in ("torch",) or expr.func.attr not in (
            "zeros", "ones", "empty", "randn", "rand", "full"):
        return None
    args = expr.args[:1] if expr.func.attr == "full" else expr.args
    if len(args) == 1 and isinstance(args[0], (ast.Tuple, ast.List)):
        return list(args[0].elts)
    if args and not any(isinstance(a, ast.Starred) for a in args):
        return list(args)
    return None


def unpacked_targets(call: ast.Call, ctx: FileContext) -> Optional[Tuple[ast.expr, ...]]:
    """`a, b, c, d = call(...)`: the target names, else None."""
    parent = ctx.index.parent_of(call)
    if isinstance(parent, ast.Assign) and parent.value is call and len(parent.targets) == 1 \
            and isinstance(parent.targets[0], (ast.Tuple, ast.List)):
        return tuple(parent.targets[0].elts)
    return None
