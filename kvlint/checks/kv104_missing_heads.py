"""KV104: fused attention without the query head count (docs: rules/codes/KV104.toml)."""
from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.checks.missing import omits
from kvlint.checks.operators import FUSED_ATTENTION, HEADS_KEYWORD


@register
class MissingHeads(Rule):
    code = "KV104"
    operators = FUSED_ATTENTION

    def check_call(self, oc, ctx: FileContext):
        if oc.variant == "workspace":
            return
        keyword = HEADS_KEYWORD[oc.name]
        if omits(oc, ctx, keyword):
            yield ctx.finding(self.code, oc.call.func,
                              f"{oc.name} without `{keyword}`: the query head count defaults to 1, "
                              f"so a multi-head query is read with the wrong head split; pass "
                              f"`{keyword}=<query heads>`")
