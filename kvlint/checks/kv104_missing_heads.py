"""KV104: fused attention without the query head count (docs: rules/codes/KV104.toml)."""
from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.facts import load_facts
from kvlint.helpers.args import missing_keyword

FACTS = load_facts()


@register
class MissingHeads(Rule):
    code = "KV104"
    operators = FACTS.family("fused_attention")

    def check_call(self, oc, ctx: FileContext):
        finding = missing_keyword(self.code, oc, ctx, "num_heads",
                                  "the query head count defaults to 1, so a multi-head query is read "
                                  "with the wrong head split; pass `{keyword}=<query heads>`")
        if finding is not None:
            yield finding
