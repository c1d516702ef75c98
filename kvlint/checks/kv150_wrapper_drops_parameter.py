"""KV150: a wrapper's own scale / mask parameter never reaches the operator it calls
(docs: rules/codes/KV150.toml)."""
import ast
from typing import Dict, List, Set

from kvlint.analysis.module import FunctionNode
from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.facts import load_facts

SCALE_PARAMS = ("scale", "softmax_scale", "scale_value", "sm_scale")
MASK_PARAMS = ("attention_mask", "attn_mask", "atten_mask")
MASK_KEYWORD = "atten_mask"
MAX_HOPS = 6
FACTS = load_facts()
MASK_READERS = FACTS.family("mask_readers")


@register
class WrapperDropsParameter(Rule):
    code = "KV150"
    operators = MASK_READERS

    def check_call(self, oc, ctx: FileContext):
        func = ctx.index.enclosing_function(oc.call)
        if func is None or not self._first_op_call(oc, func, ctx):
            return
        params = self._params(func)
        for name in params:
            concept = "scale" if name in SCALE_PARAMS else "mask" if name in MASK_PARAMS else None
            if concept is None:
                continue
            calls = [c for c in ctx.op_calls if c.name in MASK_READERS
                     and ctx.index.enclosing_function(c.call) is func]
            if any(not ctx.args(c.call).complete for c in calls):
                return  # an unresolved **kwargs may carry it
            if any(self._reaches(name, c, concept, func, ctx) for c in calls):
                continue
            keyword = MASK_KEYWORD if concept == "mask" else "/".join(
                sorted({FACTS.keyword(c.name, "scale") or "scale" for c in calls}))
            yield ctx.finding(self.code, params[name],
                              f"`{func.name}` takes `{name}` but its value never reaches the "
                              f"`{keyword}` of the {oc.name} call(s) it makes (line "
                              f"{', '.join(str(c.call.lineno) for c in calls)}): the caller's value "
                              f"is silently dropped; pass it through (or remove the parameter)")

    @staticmethod
    def _first_op_call(oc, func, ctx: FileContext) -> bool:
        """Report each function once, from its first operator call."""
        for c in ctx.op_calls:
            if c.name in MASK_READERS and ctx.index.enclosing_function(c.call) is func:
                return c is oc
        return False

    @staticmethod
    def _params(func) -> Dict[str, ast.arg]:
        a = func.args
        return {p.arg: p for p in a.posonlyargs + a.args + a.kwonlyargs}

    def _reaches(self, name: str, oc, concept: str, func, ctx: FileContext) -> bool:
        args = ctx.args(oc.call)
        if concept == "mask":
            values = args.values(MASK_KEYWORD)
        else:
            values = args.values(FACTS.keyword(oc.name, "scale") or "scale") + args.values("scale")
        values += list(args.positional)
        return any(self._depends(v, name, func, ctx, set(), 0) for v in values)

    def _depends(self, expr: ast.expr, name: str, func, ctx: FileContext, seen: Set[str], hops: int) -> bool:
        """`expr` mentions `name`, directly or through names assigned in `func`."""
        for n in ast.walk(expr):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                if n.id == name:
                    return True
                if n.id in seen or hops >= MAX_HOPS:
                    continue
                seen.add(n.id)
                for _, value in ctx.values.assignments(func).get(n.id, []):
                    if self._depends(value, name, func, ctx, seen, hops + 1):
                        return True
        return False
