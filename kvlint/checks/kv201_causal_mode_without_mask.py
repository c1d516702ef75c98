"""KV201: sparse_mode 2/3/4 with no atten_mask (docs: rules/codes/KV201.toml)."""
from kvlint.facts import load_facts
from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.checks.sparse import sparse_view

FACTS = load_facts()
SQ = "x".join(map(str, FACTS.fa.mask.compressed_shapes[0]))  # the compressed mask


@register
class CausalModeWithoutMask(Rule):
    code = "KV201"
    operators = FACTS.family("sparse_mode_readers")

    def check_call(self, oc, ctx: FileContext):
        view = sparse_view(oc, ctx)
        modes = sorted(m for m in view.modes if m in FACTS.fa.mask.compressed_modes)
        if not modes or view.mode_node is None:
            return
        if view.mask_passed and not view.mask_all_none:
            return
        if not view.mask_passed and not view.complete:
            return  # an unresolved **kwargs may carry the mask
        shown = "/".join(map(str, modes))
        how = "`atten_mask` is None" if view.mask_passed else "no `atten_mask` is passed"
        yield ctx.finding(self.code, view.mode_node,
                          f"sparse_mode {shown} needs the {SQ} compressed mask but {how}: the "
                          f"operator raises for q_len > 1; pass `atten_mask=` a {SQ} bool "
                          f"mask (True = masked)", anchor=oc.call)
