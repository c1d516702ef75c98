"""KV130: the softmax LSE output used without asking for it (docs: rules/codes/KV130.toml)."""
import ast

from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.facts import load_facts
from kvlint.helpers.args import is_true_somewhere, omits
from kvlint.helpers.results import first_read_after, is_placeholder, result_target, unpacked_names

FACTS = load_facts()



@register
class LseWithoutFlag(Rule):
    code = "KV130"
    operators = tuple(FACTS.keywords(FACTS.family("fa"), "lse_flag"))

    def check_call(self, oc, ctx: FileContext):
        if oc.variant not in ("", "default"):
            return
        flag = FACTS.role(oc.name, "lse_flag")
        if is_true_somewhere(oc, ctx, flag):
            return
        if ctx.args(oc.call).has(flag):
            said = f"with `{flag}` False"
        elif omits(oc, ctx, flag):
            said = f"without `{flag}=True`"
        else:
            return
        use = self._lse_use(oc, ctx)
        if use is None:
            return
        node, name = use
        yield ctx.finding(
            self.code, node,
            f"{name} (the softmax LSE output of {oc.name}) is used, but the call runs {said}: "
            f"the operator then returns a placeholder, not the LSE, so whatever combines it "
            f"(context parallel, chunked prefill) is silently wrong; pass `{flag}=True`",
            anchor=oc.call)

    @staticmethod
    def _lse_use(oc, ctx: FileContext):
        parent = ctx.index.parent_of(oc.call)
        if isinstance(parent, ast.Subscript) and parent.value is oc.call:
            index = ctx.values.literal(parent.slice)
            if index in (1, -1):
                return parent, "`[1]`"
            return None
        names = unpacked_names(result_target(oc, ctx))
        if names is None or len(names) != 2 or not isinstance(names[1], ast.Name):
            return None
        lse = names[1]
        if is_placeholder(lse.id):
            return None
        stmt = ctx.index.statement_of(oc.call)
        if first_read_after(lse.id, stmt, ctx) is None:
            return None
        return lse, f"`{lse.id}`"
