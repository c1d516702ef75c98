"""KV207: a literal sparse_mode outside the documented set (docs: rules/codes/KV207.toml)."""
from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.checks.fa_calls import int_literals, literals
from kvlint.checks.operators import FA_V1, FA_V2, PFA

# torch_npu 2.14.0 docstrings: 5-8 are "not implemented", anything else errors; 9 (treeMask)
# exists only in FA v1, for MLA.
DOCUMENTED = {FA_V1: (0, 1, 2, 3, 4, 9), FA_V2: (0, 1, 2, 3, 4), PFA: (0, 1, 2, 3, 4)}


@register
class SparseModeUndocumented(Rule):
    code = "KV207"
    operators = tuple(DOCUMENTED)

    def check_call(self, oc, ctx: FileContext):
        found = literals(oc, ctx, "sparse_mode")
        if not found:
            return
        allowed = DOCUMENTED[oc.name]
        wrong = sorted(set(v for v in int_literals(found) if v not in allowed))
        if not wrong:
            return
        node = ctx.args(oc.call).keywords["sparse_mode"][0].node
        v = wrong[0]
        if 5 <= v <= 8:
            what = "is a reserved mode (prefix, global, dilated, block_local) that is not implemented"
        elif v == 9:
            what = "(treeMask) exists only in FA v1"
        else:
            what = "is not a sparse mode"
        yield ctx.finding(
            self.code, node,
            f"sparse_mode={v} {what}: {oc.name} accepts "
            f"{', '.join(map(str, allowed))} and raises on anything else", anchor=oc.call)
