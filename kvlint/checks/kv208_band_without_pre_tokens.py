"""KV208: sparse_mode=4 (band) without a pre_tokens window (docs: rules/codes/KV208.toml)."""
from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.checks.fa_calls import literals
from kvlint.checks.missing import omits
from kvlint.checks.operators import FA, PFA
from kvlint.checks.sparse import sparse_view

INT_MAX = 2147483647


@register
class BandWithoutPreTokens(Rule):
    code = "KV208"
    operators = FA + (PFA,)

    def check_call(self, oc, ctx: FileContext):
        view = sparse_view(oc, ctx)
        if 4 not in view.modes or view.mode_node is None:
            return
        pre = literals(oc, ctx, "pre_tokens")
        if pre is None:
            if not omits(oc, ctx, "pre_tokens"):
                return
            said = "without `pre_tokens`"
        elif pre and all(v == INT_MAX for v in pre):
            said = f"with pre_tokens={INT_MAX}"
        else:
            return
        yield ctx.finding(
            self.code, view.mode_node,
            f"sparse_mode=4 (band) {said}: the window is unbounded, so the band is full causal "
            f"attention and the sliding window is silently dropped; pass pre_tokens=<window> "
            f"and next_tokens=0", anchor=oc.call)
