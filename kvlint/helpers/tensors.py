"""What a tensor argument visibly is: the dims of the factory call or view that builds it,
an NZ view, a literal last dim (shared by the mask and cache-write rules)."""
from __future__ import annotations

import ast
import re
from typing import List, Optional, Tuple

from kvlint.analysis.module import dotted_name
from kvlint.checks.base import FileContext

RESHAPES = ("view", "reshape")
TORCH_FACTORIES = ("zeros", "ones", "empty", "randn", "rand", "full")
# NZ_VIEW: the fractal last dim of an NZ cache (16 for fp16/bf16, 32 for int8).
NZ_LAST_DIMS = (16, 32)
_NZ_NAME = re.compile(r"(^|_)nz($|_)", re.IGNORECASE)


def reshape_dims(expr: ast.expr) -> Optional[List[ast.expr]]:
    """The dims of `t.view(a, b, c)` / `t.reshape((a, b, c))`, else None."""
    if not (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in RESHAPES):
        return None
    if len(expr.args) == 1 and isinstance(expr.args[0], (ast.Tuple, ast.List)):
        return list(expr.args[0].elts)
    if any(isinstance(a, ast.Starred) for a in expr.args) or not expr.args:
        return None
    if len(expr.args) == 1 and (dotted_name(expr.args[0]) or "").startswith("torch."):
        return None  # .view(torch.uint8): a dtype view
    return list(expr.args)


def is_nz_view(expr: ast.expr, ctx: FileContext) -> bool:
    """NZ_VIEW: some candidate of `expr` is a 5-D view, a view whose last dim is 16/32 or a
    name saying NZ (`KV_CACHE_NZ_DIM`), or comes from a function whose name says NZ."""
    for cand in ctx.values.candidates(expr, expr, follow_calls=True):
        dims = reshape_dims(cand)
        if dims is not None and _nz_dims(dims, ctx):
            return True
    if isinstance(expr, ast.Call):
        callee = dotted_name(expr.func) or ""
        if _NZ_NAME.search(callee.split(".")[-1]):
            return True
    return False


def is_nd_cache(expr: ast.expr, ctx: FileContext) -> bool:
    """ND_CACHE: some candidate of `expr` is a view, a reshape or a torch factory whose dims
    show no NZ layout (`torch.zeros(nb, bs, n, d)`, `cache.view(-1, bs, n, d)`): the code
    shows an ND cache. A cache it does not show (a parameter, a list's element) is not one."""
    for cand in ctx.values.candidates(expr, expr, follow_calls=True):
        dims = reshape_dims(cand) or _torch_factory_dims(cand)
        if dims is not None and not _nz_dims(dims, ctx):
            return True
    return False


def _nz_dims(dims: List[ast.expr], ctx: FileContext) -> bool:
    """Dims of the NZ layout: five of them, or a last one of 16/32 or named NZ."""
    if len(dims) == 5:
        return True
    last = dims[-1]
    if ctx.values.int_value(last, last) in NZ_LAST_DIMS:
        return True
    return any(_NZ_NAME.search(part) for part in (dotted_name(last) or "").split("."))


def literal_last_dim(expr: ast.expr, ctx: FileContext) -> Optional[int]:
    """The literal last dim of the tensor `expr` is built or viewed as (a factory call with
    literal sizes or a `.view(..., n)`), when every candidate agrees; else None."""
    widths = set()
    for cand in ctx.values.candidates(expr, expr, follow_calls=True):
        dims = reshape_dims(cand) or _torch_factory_dims(cand)
        if not dims:
            return None
        v = ctx.values.int_value(dims[-1], dims[-1])
        if not isinstance(v, int):
            return None
        widths.add(v)
    return widths.pop() if len(widths) == 1 else None


def factory_dims(call: ast.expr) -> Optional[List[ast.expr]]:
    """The size expressions of a factory call (`ones(2, 3)`, `zeros((2, 3))`, `empty(size=(2, 3))`,
    `full((2, 3), v)`), else None. The caller knows the call is a factory."""
    if not isinstance(call, ast.Call):
        return None
    size_kw = next((k.value for k in call.keywords if k.arg == "size"), None)
    fname = call.func.attr if isinstance(call.func, ast.Attribute) else ""
    args = call.args[:1] if fname == "full" else call.args
    if size_kw is not None:
        return list(size_kw.elts) if isinstance(size_kw, (ast.Tuple, ast.List)) and size_kw.elts else None
    if len(args) == 1 and isinstance(args[0], (ast.Tuple, ast.List)):
        return list(args[0].elts) or None
    if args and not any(isinstance(a, ast.Starred) for a in args):
        return list(args)
    return None


def factory_shape(call: ast.Call, ctx: FileContext) -> Optional[Tuple[Optional[int], ...]]:
    """The literal dims of a factory call (None for a dim that is not a literal)."""
    dims = factory_dims(call)
    if dims is None:
        return None
    out = []
    for d in dims:
        v = ctx.values.int_value(d, d)
        out.append(v if isinstance(v, int) else None)
    return tuple(out)


def _torch_factory_dims(expr: ast.expr) -> Optional[List[ast.expr]]:
    if not (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute)):
        return None
    if dotted_name(expr.func.value) not in ("torch",) or expr.func.attr not in TORCH_FACTORIES:
        return None
    return factory_dims(expr)
