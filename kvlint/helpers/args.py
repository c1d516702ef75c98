"""What a call passes for a parameter: by keyword (incl. resolved `**dicts`) or by position
when the schema makes it positional; its literal candidates; whether it visibly omits one.

Everything here is syntax plus the engine's value tracer; nothing is evaluated.
"""
from __future__ import annotations

import ast
import re
from typing import List, Optional

from kvlint.analysis.module import dotted_name
from kvlint.analysis.resolve import OperatorCall
from kvlint.analysis.values import UNKNOWN
from kvlint.checks.base import FileContext
from kvlint.facts import load_facts


def positional_value(oc: OperatorCall, ctx: FileContext, name: str) -> Optional[ast.expr]:
    """The argument passed by position for schema parameter `name`, or None."""
    names = [p.name for p in oc.operator.positional_params]
    args = ctx.args(oc.call)
    if name in names and names.index(name) < len(args.positional):
        return args.positional[names.index(name)]
    return None


def param_values(oc: OperatorCall, ctx: FileContext, name: str) -> List[ast.expr]:
    """The expressions passed for parameter `name`: by keyword (incl. resolved `**dicts`),
    else by position when the schema makes it positional."""
    values = ctx.args(oc.call).values(name)
    if values:
        return values
    value = positional_value(oc, ctx, name)
    return [value] if value is not None else []


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


def omits(oc: OperatorCall, ctx: FileContext, keyword: str) -> bool:
    """True only when the call visibly does not pass `keyword`: explicit keywords and
    resolvable `**dicts` are read; any unresolved `**`/`*` makes the answer False."""
    args = ctx.args(oc.call)
    if not args.complete or args.has(keyword):
        return False
    return positional_value(oc, ctx, keyword) is None


def missing_keyword(rule_code: str, oc: OperatorCall, ctx: FileContext, role: str, consequence: str,
                    fix_for=None):
    """The finding of a rule that reports a keyword left at its schema default, at the
    callee; `_get_max_workspace` twins are skipped (their result does not depend on it).
    `role` names the keyword by what it does (rules/facts/operators.toml): "scale", "num_heads"."""
    if oc.variant == "workspace":
        return None
    keyword = load_facts().keyword(oc.name, role)
    if keyword is None:
        return None
    from kvlint.helpers.keywords import misnamed

    if not omits(oc, ctx, keyword) or misnamed(oc, ctx, keyword):
        return None  # passed under the other version's name: KV101's finding (or KV102's)
    fix = fix_for(oc.call, keyword, ctx) if fix_for else None
    return ctx.finding(rule_code, oc.call.func,
                       f"{oc.name} without `{keyword}`: {consequence.format(keyword=keyword)}", fix)


def same_expression(a: ast.expr, b: ast.expr, ctx: FileContext) -> bool:
    """Two argument expressions that denote the same object: the same text re-reading one
    object (names, attributes, subscripts, views of them), or names that trace to one and
    the same construction (the same node), or to one text of that kind. Text alone is not
    enough for an expression that builds a tensor each time it runs: `k = torch.randn(s)`
    and `v = torch.randn(s)` are two tensors (`builds_new_object`)."""
    ta, tb = _norm(ctx.text(a)), _norm(ctx.text(b))
    if ta == tb and not builds_new_object(a, ctx):
        return True
    ca = [c for c in ctx.values.candidates(a) if hasattr(c, "lineno")]
    cb = [c for c in ctx.values.candidates(b) if hasattr(c, "lineno")]
    if not ca or not cb:
        return False
    if {id(c) for c in ca} == {id(c) for c in cb}:
        return True  # one and the same construction (`kv = torch.randn(s)`, key=kv, value=kv)
    texts_a, texts_b = {_norm(ctx.text(c)) for c in ca}, {_norm(ctx.text(c)) for c in cb}
    return len(texts_a) == 1 and texts_a == texts_b and not any(builds_new_object(c, ctx) for c in ca + cb)


def builds_new_object(expr: ast.expr, ctx: FileContext) -> bool:
    """Whether evaluating `expr` twice gives two objects: its receiver chain (`x` of
    `x.attr`, `x[i]`, `x.view(...)`) ends in a call of a module's function (`torch.randn`,
    `np.zeros`), of a plain name (a function), or in an operation (`a + b`), not in a name
    or a constant, which each reading of the expression sees again."""
    node = expr
    while True:
        if isinstance(node, (ast.Name, ast.Constant)):
            return False
        if isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            head = (dotted_name(node.func.value) or "").split(".")[0]
            if head in ctx.index.imports:  # (every `import` statement's local name is there)
                return True  # `torch.randn(...)`, `np.zeros(...)`: a module's function
            node = node.func.value  # a method of the receiver (`kv.view(...)`): a view of it
        else:
            return True


def _norm(text: str) -> str:
    return re.sub(r"\s+", "", text)
