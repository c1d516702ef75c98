"""Shared by the rules that report a keyword left at its schema default."""
from __future__ import annotations

from kvlint.analysis.resolve import OperatorCall
from kvlint.checks.base import FileContext
from kvlint.facts import load_facts


def omits(oc: OperatorCall, ctx: FileContext, keyword: str) -> bool:
    """True only when the call visibly does not pass `keyword`: explicit keywords and
    resolvable `**dicts` are read; any unresolved `**`/`*` makes the answer False."""
    args = ctx.args(oc.call)
    if not args.complete or args.has(keyword):
        return False
    names = [p.name for p in oc.operator.positional_params]
    if keyword in names and names.index(keyword) < len(args.positional):
        return False
    return True


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
    if not omits(oc, ctx, keyword):
        return None
    fix = fix_for(oc.call, keyword, ctx) if fix_for else None
    return ctx.finding(rule_code, oc.call.func,
                       f"{oc.name} without `{keyword}`: {consequence.format(keyword=keyword)}", fix)
