"""KV104: fused attention without the query head count (docs: rules/codes/KV104.toml)."""
from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.checks.missing import missing_keyword
from kvlint.checks.operators import FUSED_ATTENTION, HEADS_KEYWORD


@register
class MissingHeads(Rule):
    code = "KV104"
    operators = FUSED_ATTENTION

    def check_call(self, oc, ctx: FileContext):
        finding = missing_keyword(self.code, oc, ctx, HEADS_KEYWORD,
                                  "the query head count defaults to 1, so a multi-head query is read "
                                  "with the wrong head split; pass `{keyword}=<query heads>`")
        if finding is not None:
            yield finding
