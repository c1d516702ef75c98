"""Branch by branch: the combinations of values that can reach a call together.

Code sets related arguments together per branch (`if single_token: mask, mode = None, 0
else: mask, mode = m, 4`, `mode = 3 if causal else 0` next to `mask = m if causal else
None`). Judging each argument's candidates on their own mixes branches (the cross product:
mode 4 with mask None). `combinations()` keeps, for each leaf value, the branch arms it was
assigned in, and returns only the combinations whose arms agree:

- an arm is (condition, side): `if c:` / `else:` of a statement, the two sides of a ternary,
  a `try` body or one handler; two conditions with the same source text are one condition
  (nothing in between is assumed to change it);
- the call's own arms count too (a value assigned in the `else:` of the `if` holding the
  call cannot reach it);
- a value that is not a name or a ternary (a parameter, an attribute...) is on every path.

Returns None when there are more than MAX_COMBINATIONS (the rules then fall back to the
per-argument view).
"""
from __future__ import annotations

import ast
import itertools
from typing import Dict, FrozenSet, List, Optional, Sequence, Tuple

from kvlint.analysis.module import FunctionNode, walk_in_order

MAX_COMBINATIONS = 64
MAX_DEPTH = 6
Arm = Tuple[str, str]  # (condition key, side)


def _key(test: ast.expr, tracer=None) -> str:
    """A condition's identity: its source structure (`ast.dump`), once per node of the
    tracer's module."""
    if tracer is None:
        return ast.dump(test)
    memo = tracer.condition_keys
    hit = memo.get(id(test))
    if hit is None or hit[0] is not test:
        hit = memo[id(test)] = (test, ast.dump(test))
    return hit[1]


def _consistent(a: FrozenSet[Arm], b: FrozenSet[Arm]) -> Optional[FrozenSet[Arm]]:
    sides = dict(a)
    for cond, side in b:
        if sides.get(cond, side) != side:
            return None
    return a | b


def merged_or(a, b):
    return _consistent(a, b)


def arms_of(tracer, node: ast.AST, stop: Optional[ast.AST]) -> FrozenSet[Arm]:
    """The arms holding `node`, up to `stop` (its function)."""
    out = set()
    child = node
    for anc in tracer.index.ancestors(node):
        if anc is stop:
            break
        if isinstance(anc, (ast.If, ast.IfExp)) and child is not anc.test:
            orelse = anc.orelse if isinstance(anc.orelse, list) else [anc.orelse]
            out.add((_key(anc.test, tracer), "else" if any(child is c for c in orelse) else "body"))
        elif isinstance(anc, ast.Try):
            for n, handler in enumerate(anc.handlers):
                if child is handler:
                    out.add((f"try@{id(anc)}", f"handler{n}"))
                    break
            else:
                if any(child is c for c in anc.body):
                    out.add((f"try@{id(anc)}", "body"))
        child = anc
    return frozenset(out)


def tagged(tracer, expr: ast.expr, at: ast.AST, arms: FrozenSet[Arm] = frozenset(),
           depth: int = 0) -> List[Tuple[ast.expr, FrozenSet[Arm]]]:
    """The leaf values `expr` may have at `at`, each with the arms it needs."""
    if depth > MAX_DEPTH:
        return [(expr, arms)]
    if isinstance(expr, ast.IfExp):
        key = _key(expr.test, tracer)
        out = []
        for side, value in (("body", expr.body), ("else", expr.orelse)):
            merged = _consistent(arms, frozenset({(key, side)}))
            if merged is not None:
                out.extend(tagged(tracer, value, at, merged, depth + 1))
        return out
    if isinstance(expr, ast.Subscript) and isinstance(expr.value, ast.IfExp) \
            and isinstance(expr.slice, ast.Constant) and type(expr.slice.value) is int and expr.slice.value >= 0:
        # `mask, mode = (m, 4) if c else (None, 0)`: each name is element i of the ternary
        # (a synthetic subscript, values.py), so element i of each side, on that side's arm
        test, i = expr.value.test, expr.slice.value
        key = _key(test)
        from kvlint.analysis.values import literal_element

        out = []
        for side, value in (("body", expr.value.body), ("else", expr.value.orelse)):
            merged = _consistent(arms, frozenset({(key, side)}))
            if merged is None:
                continue
            elt = literal_element(value, i)
            if elt is None:  # not a tuple literal there: that side's element i, as a leaf
                out.append((tracer._make(ast.Subscript(value=value, slice=ast.Constant(i), ctx=ast.Load()),
                                         expr, expr), merged))
            else:
                out.extend(tagged(tracer, elt, elt, merged, depth + 1))
        return out
    if isinstance(expr, ast.BoolOp) and len(expr.values) == 2:
        # `a or b` is a when a is truthy, else b; `a and b` is b when a is truthy, else a
        first, second = expr.values
        key = _key(first, tracer)
        sides = (("body", first), ("else", second)) if isinstance(expr.op, ast.Or) else \
            (("body", second), ("else", first))
        out = []
        for side, value in sides:
            merged = _consistent(arms, frozenset({(key, side)}))
            if merged is not None:
                out.extend(tagged(tracer, value, at, merged, depth + 1))
        return out
    if isinstance(expr, ast.Name) and tracer.owns(at):
        func = tracer.index.enclosing_function(at)
        if func is None:
            return [(expr, arms)]
        line = getattr(at, "lineno", 10 ** 9)
        items = [(s, v) for s, v in tracer.assignments(func).get(expr.id, []) if s.lineno < line]
        if not items:
            return [(expr, arms)]
        out = []
        reaching = []
        for stmt, value in reversed(items):  # from the last top-level assignment on, as bindings()
            reaching.append((stmt, value))
            if tracer.index.parent_of(stmt) is func and not isinstance(stmt, (ast.For, ast.AsyncFor)):
                break
        reaching.reverse()
        for n, (stmt, value) in enumerate(reaching):
            own = arms_of(tracer, stmt, func)
            # a later assignment in one arm overrides this one on that arm: this value
            # reaches the call only through the other side (`x = a` ... `if c: x = b`)
            for later, _ in reaching[n + 1:]:
                extra = arms_of(tracer, later, func) - own
                if len(extra) == 1:
                    cond, side = next(iter(extra))
                    if not cond.startswith("try@"):
                        own = own | {(cond, "else" if side == "body" else "body")}
            if _consistent(own, own) is None:
                continue
            stmt_arms = own
            if tracer._opaque(value):
                out.append((expr, merged_or(arms, stmt_arms)))
                continue
            merged = _consistent(arms, stmt_arms)
            if merged is not None:
                out.extend(tagged(tracer, value, value, merged, depth + 1))
        out = [(v, a) for v, a in out if a is not None]
        from kvlint.analysis.values import definitely_assigns

        if tracer.is_parameter(expr.id, func) and not definitely_assigns(func.body, expr.id, line):
            out.append((expr, arms))
        return out or [(expr, arms)]
    return [(expr, arms)]


def combinations(tracer, at: ast.AST, exprs: Dict[str, Optional[ast.expr]]
                 ) -> Optional[List[Tuple[Dict[str, Optional[ast.expr]], FrozenSet[Arm]]]]:
    """The feasible combinations (role -> leaf value, the arms they need) of the leaf values
    of `exprs` (role -> expression, None for an argument not passed) at `at`."""
    func = tracer.index.enclosing_function(at) if tracer.owns(at) else None
    base = arms_of(tracer, at, func) if isinstance(func, FunctionNode) else frozenset()
    roles = list(exprs)
    choices: List[Sequence[Tuple[Optional[ast.expr], FrozenSet[Arm]]]] = []
    total = 1
    for role in roles:
        e = exprs[role]
        options: Sequence[Tuple[Optional[ast.expr], FrozenSet[Arm]]] = \
            [(None, frozenset())] if e is None else tagged(tracer, e, at, base)
        total *= max(1, len(options))
        if total > MAX_COMBINATIONS:
            return None
        choices.append(options)
    out = []
    for combo in itertools.product(*choices):
        arms: Optional[FrozenSet[Arm]] = base
        for _, a in combo:
            arms = _consistent(arms, a) if arms is not None else None
        if arms is not None:
            out.append(({role: value for role, (value, _) in zip(roles, combo)}, arms))
    return out


def arm_tests(tracer, at: ast.AST) -> Dict[str, ast.expr]:
    """Condition key -> one condition node with that text, in `at`'s function (to ask what
    a combination's arms imply, e.g. its phase)."""
    func = tracer.index.enclosing_function(at) if tracer.owns(at) else None
    if func is None:
        return {}
    hit = tracer.arm_tests.get(id(func))
    if hit is None or hit[0] is not func:
        out: Dict[str, ast.expr] = {}
        for n in walk_in_order(func):
            if type(n) is ast.If or type(n) is ast.IfExp:
                out.setdefault(_key(n.test, tracer), n.test)
        hit = tracer.arm_tests[id(func)] = (func, out)
    return dict(hit[1])
