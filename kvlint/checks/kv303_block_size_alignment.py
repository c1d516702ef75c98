"""KV303: a literal block_size paged attention rejects (docs: rules/codes/KV303.toml)."""
from kvlint.analysis.context import DECODE
from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.checks.fa_calls import int_literals, literals, passes_value
from kvlint.checks.operators import IFA, PAGED_READERS

MAX_BLOCK_SIZE = 512
PREFILL_ALIGN = 128  # Q_S > 1
DECODE_ALIGN = 16  # Q_S == 1, fp16/bf16 (int8 needs 32)


@register
class BlockSizeAlignment(Rule):
    code = "KV303"
    operators = PAGED_READERS

    def check_call(self, oc, ctx: FileContext):
        if not passes_value(oc, ctx, "block_table"):
            return
        found = literals(oc, ctx, "block_size")
        if not found:
            return
        decode_only = oc.name == IFA or ctx.context.phase(oc.call) == DECODE
        node = ctx.args(oc.call).keywords["block_size"][0].node
        for v in sorted(set(int_literals(found))):
            if v <= 0 or v > MAX_BLOCK_SIZE or v % DECODE_ALIGN:
                yield ctx.finding(
                    self.code, node,
                    f"block_size={v} with a block_table: paged attention needs a non-zero block "
                    f"size of at most {MAX_BLOCK_SIZE}, a multiple of 128 when the query has more "
                    f"than one token ({DECODE_ALIGN}-aligned, 32 for int8, with one token); use 128",
                    anchor=oc.call)
                return
            if v % PREFILL_ALIGN and not decode_only:
                yield ctx.finding(
                    self.code, node,
                    f"block_size={v} with a block_table: allowed only when every query has one "
                    f"token (decode); a prefill, chunked-prefill or MTP call (query length > 1) "
                    f"needs a multiple of 128 up to {MAX_BLOCK_SIZE}, so this call fails there; "
                    f"use 128, or keep this call on the decode path", anchor=oc.call)
                return
