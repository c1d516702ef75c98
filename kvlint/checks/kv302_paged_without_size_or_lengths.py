"""KV302: block_table without block_size or without the KV lengths (docs: rules/codes/KV302.toml)."""
from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.checks.missing import omits
from kvlint.checks.operators import FA_V1, KV_LENGTH_KEYWORD, PAGED_READERS


def passes_a_block_table(oc, ctx) -> bool:
    values = ctx.args(oc.call).values("block_table")
    if not values:
        return False
    literal = [ctx.values.literal(c) for v in values for c in ctx.values.candidates(v)]
    return not all(x is None for x in literal)


@register
class PagedWithoutSizeOrLengths(Rule):
    code = "KV302"
    operators = PAGED_READERS

    def check_call(self, oc, ctx: FileContext):
        if not passes_a_block_table(oc, ctx):
            return
        missing = [k for k in ("block_size", KV_LENGTH_KEYWORD[oc.name]) if omits(oc, ctx, k)]
        if oc.name == FA_V1 and ctx.args(oc.call).has("actual_seq_lengths"):
            # the IFA habit (Q lengths passed as if they were KV lengths) is KV305's, with its rename
            missing = [k for k in missing if k != KV_LENGTH_KEYWORD[oc.name]]
        if not missing:
            return
        what = " and ".join(f"`{k}`" for k in missing)
        consequence = []
        if "block_size" in missing:
            consequence.append("block_size defaults to 0, which paged attention rejects")
        if len(missing) > 1 or "block_size" not in missing:
            consequence.append("without per-batch KV lengths the operator cannot tell how much of "
                               "each sequence's blocks to read")
        yield ctx.finding(self.code, oc.call.func,
                          f"{oc.name} with `block_table` but without {what}: " + "; ".join(consequence))
