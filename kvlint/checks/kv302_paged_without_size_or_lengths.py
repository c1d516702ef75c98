"""KV302: block_table without block_size or without the KV lengths (docs: rules/codes/KV302.toml)."""
from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.facts import load_facts
from kvlint.helpers.args import omits

FACTS = load_facts()


def passes_a_block_table(oc, ctx) -> bool:
    values = ctx.args(oc.call).values("block_table")
    if not values:
        return False
    literal = [ctx.values.literal(c) for v in values for c in ctx.values.candidates(v)]
    return not all(x is None for x in literal)


@register
class PagedWithoutSizeOrLengths(Rule):
    code = "KV302"
    operators = FACTS.family("paged_readers")

    def check_call(self, oc, ctx: FileContext):
        if not passes_a_block_table(oc, ctx):
            return
        kv_lens = FACTS.role(oc.name, "kv_lens")
        missing = [k for k in ("block_size", kv_lens) if omits(oc, ctx, k)]
        if oc.name == FACTS.versions.v1 and ctx.args(oc.call).has(FACTS.role(oc.name, "q_lens")):
            # the IFA habit (Q lengths passed as if they were KV lengths) is KV305's, with its rename
            missing = [k for k in missing if k != kv_lens]
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
