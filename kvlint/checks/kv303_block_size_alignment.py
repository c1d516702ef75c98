"""KV303: a literal block_size paged attention rejects (docs: rules/codes/KV303.toml)."""
from kvlint.analysis.context import DECODE
from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.facts import load_facts
from kvlint.helpers.args import int_literals, literals, passes_value

FACTS = load_facts()
RULES = FACTS.fa.block_size


@register
class BlockSizeAlignment(Rule):
    code = "KV303"
    operators = FACTS.family("paged_readers")

    def check_call(self, oc, ctx: FileContext):
        if not passes_value(oc, ctx, FACTS.role(oc.name, "block_table")):
            return
        found = literals(oc, ctx, FACTS.role(oc.name, "block_size"))
        if not found:
            return
        decode_only = oc.name in FACTS.family("decode_only") or ctx.context.phase(oc.call) == DECODE
        rope = FACTS.keyword(oc.name, "query_rope")
        mla = rope is not None and passes_value(oc, ctx, rope)
        node = ctx.args(oc.call).keywords[FACTS.role(oc.name, "block_size")][0].node
        largest, step = RULES.max, RULES.prefill_multiple
        align = RULES.decode_default_alignment
        for v in sorted(set(int_literals(found))):
            if mla:
                if not RULES.allowed(v, prefill=not decode_only, mla=True):
                    yield ctx.finding(
                        self.code, node,
                        f"block_size={v} with a block_table and `{rope}` (MLA): the MLA paged kernel "
                        f"takes only block_size {' or '.join(map(str, RULES.mla))}, whatever the query "
                        f"length; use 128", anchor=oc.call)
                    return
                continue
            if not RULES.allowed(v, prefill=False):
                yield ctx.finding(
                    self.code, node,
                    f"block_size={v} with a block_table: paged attention needs a non-zero block "
                    f"size of at most {largest}, a multiple of {step} when the query has more "
                    f"than one token ({align}-aligned, {RULES.decode_alignment['int8']} for int8, with one token); "
                    f"use {step}",
                    anchor=oc.call)
                return
            if not decode_only and not RULES.allowed(v, prefill=True):
                yield ctx.finding(
                    self.code, node,
                    f"block_size={v} with a block_table: allowed only when every query has one "
                    f"token (decode); a prefill, chunked-prefill or MTP call (query length > 1) "
                    f"needs a multiple of {step} up to {largest}, so this call fails there; "
                    f"use {step}, or keep this call on the decode path", anchor=oc.call)
                return
