"""Shared by the sliding-window rules (KV230-KV233): where a call's `pre_tokens` value comes
from, and which names hold a window.

Named heuristics (documented in rules/codes/KV230.toml .. KV233.toml):
- HF_SLIDING_WINDOW: a value named exactly `sliding_window` (an attribute, a parameter, a
  `getattr(config, "sliding_window")`) holds Hugging Face's count, which includes the
  current token. `sliding_window_size`, `window_size`, `window_left` and the like follow
  other conventions (SGLang's `sliding_window_size` is already `sliding_window - 1`).
- WINDOW_NAME: a name or attribute whose last part contains "window" holds a window.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import List, Optional, Tuple

from kvlint.analysis.module import dotted_name
from kvlint.checks.base import FileContext

HF_WINDOW_NAME = "sliding_window"
WINDOW_WORD = "window"
MAX_DEPTH = 8
_PASS_THROUGH_CALLS = ("int", "min", "max")


@dataclass(frozen=True)
class WindowLeaf:
    """One value `pre_tokens` may be: the expression, and the guards on the way to it."""

    expr: ast.expr
    guard_tests: Tuple[ast.expr, ...]  # the tests of the ternaries on the way
    truthy_guarded: bool  # reached as a non-last operand of `x or default`
    subtracted: bool  # reached through `x - k` (k a positive literal)


def last_name(expr: ast.AST) -> Optional[str]:
    if isinstance(expr, ast.Attribute):
        return expr.attr
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "getattr" \
            and len(expr.args) >= 2 and isinstance(expr.args[1], ast.Constant) and isinstance(expr.args[1].value, str):
        return expr.args[1].value
    return None


def is_window_name(expr: ast.AST) -> bool:
    name = last_name(expr)
    return name is not None and WINDOW_WORD in name.lower()


def mentioned(test: ast.AST) -> Tuple[str, ...]:
    """The dotted names a condition reads (`layer.sliding_window_size != -1` -> that name)."""
    out = []
    for n in ast.walk(test):
        if isinstance(n, (ast.Name, ast.Attribute)):
            text = dotted_name(n)
            if text:
                out.append(text)
    return tuple(out)


def guard_mentions(test: ast.expr, ctx: FileContext, depth: int = 0) -> Tuple[str, ...]:
    """What a condition reads, looking through a local flag (`swa = w != -1; ... if swa`) and
    a predicate method of the module or class (`if self._is_swa_layer(layer)`)."""
    out = list(mentioned(test))
    if depth >= 2:
        return tuple(out)
    for n in ast.walk(test):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            for v in ctx.values.bindings(n.id, test):
                if isinstance(v, ast.expr) and not (isinstance(v, ast.Name) and v.id == "<parameter>"):
                    out.extend(guard_mentions(v, ctx, depth + 1))
        elif isinstance(n, ast.Call):
            for r in ctx.values.builder_returns(n, test):
                out.extend(guard_mentions(r, ctx, depth + 1))
    return tuple(out)


def window_leaves(expr: ast.expr, at: ast.AST, ctx: FileContext) -> List[WindowLeaf]:
    out: List[WindowLeaf] = []
    _walk(expr, at, ctx, (), False, False, 0, out, set())
    return out


def _walk(expr, at, ctx: FileContext, guards, truthy, subtracted, depth, out, seen) -> None:
    if depth > MAX_DEPTH:
        return
    if isinstance(expr, ast.IfExp):
        g = guards + (expr.test,)
        _walk(expr.body, at, ctx, g, truthy, subtracted, depth + 1, out, seen)
        _walk(expr.orelse, at, ctx, g, truthy, subtracted, depth + 1, out, seen)
        return
    if isinstance(expr, ast.BoolOp):
        for i, v in enumerate(expr.values):
            last = i == len(expr.values) - 1
            _walk(v, at, ctx, guards, truthy or (isinstance(expr.op, ast.Or) and not last), subtracted,
                  depth + 1, out, seen)
        return
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Sub):
        k = ctx.values.literal(expr.right)
        if isinstance(k, int) and not isinstance(k, bool) and k > 0:
            _walk(expr.left, at, ctx, guards, truthy, True, depth + 1, out, seen)
        return
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id in _PASS_THROUGH_CALLS \
            and len(expr.args) == 1 and not expr.keywords:
        _walk(expr.args[0], at, ctx, guards, truthy, subtracted, depth + 1, out, seen)
        return
    if isinstance(expr, ast.Name) and (expr.id, id(at)) not in seen:
        seen.add((expr.id, id(at)))
        values = ctx.values.bindings(expr.id, at)
        real = [v for v in values if not (isinstance(v, ast.Name) and v.id == "<parameter>")]
        if real:
            for v in real:
                _walk(v, v, ctx, guards, truthy, subtracted, depth + 1, out, seen)
            if len(real) == len(values):
                return
    out.append(WindowLeaf(expr, guards, truthy, subtracted))


def carries_window(expr: ast.expr, at: ast.AST, ctx: FileContext) -> bool:
    """WINDOW_NAME on what `expr` is built from: a window-named name or attribute in it or in
    a value it is traced to (`pre_tokens=w` after `w = self.sliding_window - 1`). A sequence
    length (`seq_len`, `k.shape[0]`) is a causal limit, not a window."""
    exprs = [expr] + [leaf.expr for leaf in window_leaves(expr, at, ctx)]
    return any(is_window_name(n) for e in exprs for n in ast.walk(e) if isinstance(n, (ast.Name, ast.Attribute)))


def self_attribute_values(expr: ast.expr, ctx: FileContext) -> List[ast.expr]:
    """The values `self.x` is assigned anywhere in the enclosing class (empty if not `self.x`)."""
    if not (isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == "self"):
        return []
    cls = ctx.index.enclosing_class(expr)
    if cls is None:
        return []
    return [v for _, v in ctx.values.self_assignments(cls).get(expr.attr, [])]
