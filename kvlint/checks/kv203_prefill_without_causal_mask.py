"""KV203: prefill attention that is silently bidirectional (docs: rules/codes/KV203.toml)."""
from kvlint.analysis.context import DECODE, PREFILL
from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.facts import load_facts
from kvlint.helpers.sparse import (
    bidirectional_branches,
    bounded,
    branch_views,
    one_query_per_sequence,
    sparse_view,
    token_window_values,
)

FACTS = load_facts()
SQ = "x".join(map(str, FACTS.fa.mask.compressed_shapes[0]))  # the compressed mask


@register
class PrefillWithoutCausalMask(Rule):
    code = "KV203"
    operators = FACTS.family("window_readers")

    def check_call(self, oc, ctx: FileContext):
        view = sparse_view(oc, ctx)
        if view.modes_known and 0 in view.modes and view.modes != {0}:
            yield from self._per_branch(oc, ctx, view)
            return
        if not view.modes_known or view.modes != {0} or not view.no_mask:
            return
        if not view.complete and not view.mask_passed:
            return
        phase = ctx.context.phase(oc.call)
        if phase == DECODE:
            return
        # one query token per sequence: no query has a later token to hide, so only a window
        # back (pre_tokens) can be dropped
        single = one_query_per_sequence(oc, ctx)
        for role in ("pre_tokens",) if single else ("next_tokens", "pre_tokens"):
            window = token_window_values(oc, ctx, role)
            if window is not None and bounded(window[1]):
                node, _ = window
                name = FACTS.keyword(oc.name, role)
                yield ctx.finding(self.code, node,
                                  f"`{name}` is ignored under sparse_mode 0 without a mask: the "
                                  f"attention silently becomes bidirectional; use sparse_mode=3 "
                                  f"(causal) or 4 (band) with the {SQ} mask", anchor=oc.call)
                return
        if phase == PREFILL and not single:
            yield ctx.finding(self.code, oc.call.func,
                              f"{oc.name} on the prefill path with sparse_mode 0 and no mask: nothing "
                              f"is masked, so every token attends to future tokens; use "
                              f"sparse_mode=3 with the {SQ} causal mask", branch="PREFILL_PHASE")

    def _per_branch(self, oc, ctx: FileContext, view):
        """Modes set per branch: a branch off the decode path with sparse_mode 0 and no mask
        drops the band's window that reaches the call (helpers/sparse.py
        bidirectional_branches; on the decode path it is KV233's)."""
        found = bidirectional_branches(oc, ctx, view, branch_views(oc, ctx))
        if not found:
            return
        b = found[0]
        window = token_window_values(oc, ctx, "pre_tokens")
        name = FACTS.keyword(oc.name, "pre_tokens")
        where = f" (the branch of line {b.mode_value.lineno})" if b.mode_value is not None else ""
        yield ctx.finding(self.code, window[0],
                          f"`{name}` is ignored where sparse_mode is 0 without a mask{where}: "
                          f"on that branch the window is silently dropped and attention "
                          f"becomes bidirectional; use sparse_mode=4 (band) with the {SQ} mask "
                          f"there too", anchor=oc.call)
