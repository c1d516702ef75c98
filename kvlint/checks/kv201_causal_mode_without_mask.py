"""KV201: sparse_mode 2/3/4 with no atten_mask (docs: rules/codes/KV201.toml)."""
from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.checks.operators import FA, PFA
from kvlint.checks.sparse import CAUSAL_OR_BAND, sparse_view


@register
class CausalModeWithoutMask(Rule):
    code = "KV201"
    operators = FA + (PFA,)

    def check_call(self, oc, ctx: FileContext):
        view = sparse_view(oc, ctx)
        modes = sorted(m for m in view.modes if m in CAUSAL_OR_BAND)
        if not modes or view.mode_node is None:
            return
        if view.mask_passed and not view.mask_all_none:
            return
        if not view.mask_passed and not view.complete:
            return  # an unresolved **kwargs may carry the mask
        shown = "/".join(map(str, modes))
        how = "`atten_mask` is None" if view.mask_passed else "no `atten_mask` is passed"
        yield ctx.finding(self.code, view.mode_node,
                          f"sparse_mode {shown} needs the 2048x2048 compressed mask but {how}: the "
                          f"operator raises for q_len > 1; pass `atten_mask=` a 2048x2048 bool "
                          f"mask (True = masked)", anchor=oc.call)
