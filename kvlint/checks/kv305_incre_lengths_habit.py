"""KV305: FA v1 reading a KV cache with actual_seq_lengths but no actual_seq_lengths_kv
(docs: rules/codes/KV305.toml)."""
from kvlint.analysis.context import DECODE
from kvlint.analysis.findings import Fix
from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.facts import load_facts
from kvlint.helpers.args import omits, passes_value
from kvlint.helpers.keywords import rename_fix

FACTS = load_facts()
FA_V1 = FACTS.versions.v1
# Heuristic KV_LENGTH_VALUE: the rename to actual_seq_lengths_kv is offered only when the
# value's own name says KV lengths (`kv_lens`, `context_lens`, `seq_lens`, `cache_lens`);
# a query length (`query_lens` in speculative decoding, `q_seq_lens`) gets no fix.
KV_LENGTH_PARTS = ("context", "cache", "seq", "seqlen", "seqlens")  # with "kv" anywhere in the name
QUERY_LENGTH_PARTS = ("q", "query", "queries", "qlen", "qlens", "tokens")


def says_kv_lengths(value) -> bool:
    import ast

    node = value
    while isinstance(node, (ast.Subscript, ast.Call)):  # kv_lens[:n], kv_lens.tolist()
        node = node.value if isinstance(node, ast.Subscript) else node.func
        if isinstance(node, ast.Attribute) and node.attr in ("tolist", "to", "cpu", "int", "npu", "cuda", "long"):
            node = node.value
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    parts = name.lower().split("_")
    if any(p in QUERY_LENGTH_PARTS or p.startswith("query") for p in parts):
        return False
    return "kv" in name.lower() or any(p in KV_LENGTH_PARTS for p in parts)
Q_LENGTHS, KV_LENGTHS = FACTS.role(FA_V1, "q_lens"), FACTS.role(FA_V1, "kv_lens")


@register
class IncreLengthsHabit(Rule):
    code = "KV305"
    operators = (FA_V1,)

    def check_call(self, oc, ctx: FileContext):
        args = ctx.args(oc.call)
        if not passes_value(oc, ctx, Q_LENGTHS) or not omits(oc, ctx, KV_LENGTHS):
            return
        paged = passes_value(oc, ctx, "block_table")
        if not paged and ctx.context.phase(oc.call) != DECODE:
            return
        where = "a paged call (block_table)" if paged else "a decode call"
        kw = args.keywords[Q_LENGTHS][0]
        fix = rename_fix(kw, KV_LENGTHS, ctx) if says_kv_lengths(kw.value) else None
        if fix is not None:
            fix = Fix(fix.description, fix.edits, safe=False)
        effect = ("paged attention requires the KV lengths, so the call is rejected" if paged else
                  "with one query token they are ignored, so the call reads the whole cache")
        yield ctx.finding(
            self.code, kw.node,
            f"{oc.name} in {where} passes `{Q_LENGTHS}` but not `{KV_LENGTHS}`: in FA v1 "
            f"`{Q_LENGTHS}` are the query lengths (in npu_incre_flash_attention they were the KV "
            f"lengths); {effect}; pass the KV lengths as `{KV_LENGTHS}`", fix, anchor=oc.call,
            branch=None if paged else "DECODE_PHASE")
