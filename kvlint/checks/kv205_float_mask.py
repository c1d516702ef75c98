"""KV205: an atten_mask built with a floating dtype (docs: rules/codes/KV205.toml)."""
from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.checks.masks import mask_constructions
from kvlint.checks.operators import FUSED_ATTENTION


@register
class FloatMask(Rule):
    code = "KV205"
    operators = FUSED_ATTENTION

    def check_call(self, oc, ctx: FileContext):
        for site in mask_constructions(oc, ctx):
            if ctx.dtypes._leaf(site, 0) == "float":
                yield ctx.finding(self.code, site,
                                  f"this mask reaches {oc.name}'s `atten_mask` (line {oc.call.lineno}) "
                                  f"as a floating tensor: only bool, int8 and uint8 masks are accepted "
                                  f"(True/1 = masked); build it with dtype=torch.bool")
