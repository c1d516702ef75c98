"""Shared by the rules that report a keyword left at its schema default."""
from __future__ import annotations

from kvlint.analysis.resolve import OperatorCall
from kvlint.checks.base import FileContext


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
