"""KV103: fused attention without the softmax scale (docs: rules/codes/KV103.toml)."""
from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.checks.missing import omits
from kvlint.checks.operators import FUSED_ATTENTION, SCALE_KEYWORD


@register
class MissingScale(Rule):
    code = "KV103"
    operators = FUSED_ATTENTION

    def check_call(self, oc, ctx: FileContext):
        if oc.variant == "workspace":
            return
        keyword = SCALE_KEYWORD[oc.name]
        if omits(oc, ctx, keyword):
            yield ctx.finding(self.code, oc.call.func,
                              f"{oc.name} without `{keyword}`: the softmax scale defaults to 1.0, so "
                              f"the attention is unscaled; pass `{keyword}=head_dim ** -0.5`")
