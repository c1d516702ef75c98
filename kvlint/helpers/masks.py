"""Shared by the mask rules: where an atten_mask is built."""
from __future__ import annotations

import ast
from typing import Callable, Collection, Iterator, Optional, Tuple

from kvlint.analysis.dtypes import CONVERTING_METHODS, PRESERVING_METHODS, dtype_of_expr, receiver_is_module
from kvlint.analysis.module import dotted_name, is_none, positional_parameters
from kvlint.analysis.resolve import OperatorCall
from kvlint.checks.base import FileContext
from kvlint.helpers.roles import role_values

# Tensor methods that change a mask in place (KV221, KV224).
INPLACE = frozenset({
    "masked_fill_", "fill_", "mul_", "add_", "sub_", "div_", "copy_", "zero_", "tril_", "triu_",
    "logical_not_", "logical_and_", "logical_or_", "bitwise_not_", "index_fill_", "masked_scatter_",
    "clamp_", "fill_diagonal_",
})

SHAPED_FACTORIES = {"ones", "zeros", "empty", "full", "rand", "randn"}


def mask_constructions(oc: OperatorCall, ctx: FileContext) -> Iterator[ast.expr]:
    """Where the mask the call passes is built (by keyword, or at the schema position: the
    8th argument of npu_fusion_attention)."""
    for value in role_values(oc, ctx, "mask"):
        for site in ctx.dtypes.construction_sites(value, oc.call):
            if is_none(site):
                continue
            yield site


# The walk below looks through at most this many names and calls (deeper chains are unknown).
MAX_STEPS = 11
# Methods whose result holds the receiver's values (dtype and device changes included).
KEPT = frozenset(PRESERVING_METHODS) | frozenset(CONVERTING_METHODS) | {"to", "type"}
# Look-through calls of the cast rules (KV222, KV223): device, memory and shape changes.
DEVICE_SHAPE_KEEPING = frozenset({"npu", "cuda", "cpu", "contiguous", "clone", "detach", "view", "reshape",
                                  "unsqueeze", "squeeze", "expand", "to", "pin_memory"})

# the calls that keep a mask's values and dtype (FOREIGN_MASK looks through them)
SHAPE_KEEPING = DEVICE_SHAPE_KEEPING - {"to"}

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


def cast_at_top(expr: ast.expr, dtypes: Collection[str], methods: Collection[str]) -> Optional[ast.Call]:
    """The cast to one of `dtypes` at the top of `expr` (`.to(torch.X)`, `.type(torch.X)`, or a
    no-argument method of `methods` such as `.bool()`), looking through DEVICE_SHAPE_KEEPING
    calls; None when the top is something else or a cast to another dtype."""
    while isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
        f = expr.func
        if f.attr in methods and not expr.args:
            return expr
        if f.attr in ("to", "type"):
            target = next((k.value for k in expr.keywords if k.arg == "dtype"), expr.args[0] if expr.args else None)
            dtype = dtype_of_expr(target)
            if dtype in dtypes:
                return expr
            if dtype is not None:
                return None
        if f.attr not in DEVICE_SHAPE_KEEPING:
            return None
        expr = f.value
    return None


def foreign_mask(source: ast.expr, at: ast.AST, ctx: FileContext) -> bool:
    """FOREIGN_MASK: every value `source` may hold (None aside: no mask on that path) comes
    from outside the file's own constructions (a parameter, another object's attribute, or a
    view or copy of one), so its polarity is unknown."""
    cands = [c for c in ctx.values.candidates(source, at, follow_calls=True)
             if not is_none(c)]  # no mask on that path
    for c in cands:
        base = c
        while True:
            if isinstance(base, ast.Subscript):
                base = base.value
            elif isinstance(base, ast.Call) and isinstance(base.func, ast.Attribute) \
                    and base.func.attr in SHAPE_KEEPING and not receiver_is_module(base.func.value):
                base = base.func.value  # a view or copy of the mask: the same values
            else:
                break
        if isinstance(base, ast.Name):
            func = ctx.index.enclosing_function(at)
            if not ctx.values.is_parameter(base.id, func):
                return False
        elif isinstance(base, ast.Attribute):
            if isinstance(base.value, ast.Name) and base.value.id == "self":
                return False  # built by the class: its polarity is visible to the reader
        else:
            return False
    return bool(cands)


def unchecked_foreign_mask(source: ast.expr, at: ast.AST, ctx: FileContext) -> Optional[str]:
    """The name to show for `source` when it is a FOREIGN_MASK whose dtype the function never
    looks at (DTYPE_OR_POLARITY_CHECK), else None: what KV222 and KV223 report a cast of."""
    if not foreign_mask(source, at, ctx) or polarity_checked(source, at, ctx):
        return None
    return dotted_name(source) or ctx.text(source)


# Reads of a mask that show the code knows its dtype (DTYPE_OR_POLARITY_CHECK).
CHECK_CALLS = {"is_floating_point", "dtype"}


def polarity_checked(source: ast.expr, at: ast.AST, ctx: FileContext) -> bool:
    """DTYPE_OR_POLARITY_CHECK: the function reads `x.dtype`, calls `x.is_floating_point()`
    / `torch.is_floating_point(x)`, or compares `x` (`x == 0`, `x < 0`)."""
    func = ctx.index.enclosing_function(at)
    want = dotted_name(source)
    if func is None or want is None:
        return False
    for n in ast.walk(func):
        if isinstance(n, ast.Attribute) and n.attr in CHECK_CALLS and dotted_name(n.value) == want:
            return True
        if isinstance(n, ast.Call) and dotted_name(n.func) in ("torch.is_floating_point",) and \
                n.args and dotted_name(n.args[0]) == want:
            return True
        if isinstance(n, ast.Compare) and any(dotted_name(x) == want for x in [n.left, *n.comparators]) \
                and not any(isinstance(op, (ast.Is, ast.IsNot)) for op in n.ops):
            return True
    return False


# Heuristic INDUCTOR_PATTERN_PAIR. torch._inductor's pattern matcher rewrites a traced graph
# that matches `search_fn` into what `replace_fn` computes, both called with the same
# arguments in the same order: `register_replacement(search_fn, replace_fn, example_args, ...)`.
PATTERN_MATCHER = "torch._inductor"
REGISTER_REPLACEMENT = "register_replacement"


def additive_by_pattern(source: ast.expr, at: ast.AST, ctx: FileContext) -> bool:
    """Heuristic INDUCTOR_PATTERN_PAIR: `source` is a parameter of a graph-rewrite
    replacement whose search pattern adds the same argument to the scores (`scores + mask`),
    so the mask it receives is additive (0 keep, -inf masked) and `.bool()` of it is right.
    The file imports `register_replacement` from torch._inductor, and the function holding
    `at` is named right after a module-level function of the file (the pattern) in one
    tuple, list or call (`(pattern, replacement, ...)`, `register_replacement(pattern,
    replacement, ...)`); the pattern's parameter at the same position appears as an operand
    of `+` and is never rebound there."""
    func = ctx.index.enclosing_function(at)
    if not isinstance(source, ast.Name) or not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)) \
            or not _imports_register_replacement(ctx):
        return False
    position = _positional_index(func, source.id)
    if position is None:
        return False
    functions = {n.name: n for n in ctx.index.tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    if functions.get(func.name) is not func:
        return False
    for pattern_name in _patterns_paired_with(func.name, ctx):
        pattern = functions.get(pattern_name)
        if pattern is None or pattern is func:
            continue
        params = positional_parameters(pattern)
        if position < len(params) and _added_unchanged(pattern, params[position].arg, ctx):
            return True
    return False


def _imports_register_replacement(ctx: FileContext) -> bool:
    for _, module, original in ctx.index.from_imports.values():
        if original == REGISTER_REPLACEMENT and (module == PATTERN_MATCHER or module.startswith(PATTERN_MATCHER + ".")):
            return True
    return False


def _positional_index(func: ast.AST, name: str) -> Optional[int]:
    params = positional_parameters(func)
    for k, p in enumerate(params):
        if p.arg == name:
            return k
    return None


def _patterns_paired_with(replacement: str, ctx: FileContext) -> Iterator[str]:
    """The names written right before `replacement` among the elements of a tuple or list,
    or the positional arguments of a call, anywhere in the file."""
    for node in ast.walk(ctx.index.tree):
        if isinstance(node, (ast.Tuple, ast.List)):
            items = node.elts
        elif isinstance(node, ast.Call):
            items = node.args
        else:
            continue
        for before, item in zip(items, items[1:]):
            if isinstance(item, ast.Name) and item.id == replacement and isinstance(before, ast.Name):
                yield before.id


def _added_unchanged(func: ast.AST, name: str, ctx: FileContext) -> bool:
    """Whether `name` is an operand of `+` (or `+=`) in `func` and never rebound there."""
    if name in ctx.index.stores(func):
        return False
    for node in ast.walk(func):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and any(
                isinstance(side, ast.Name) and side.id == name for side in (node.left, node.right)):
            return True
        if isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add) and \
                isinstance(node.value, ast.Name) and node.value.id == name:
            return True
    return False
