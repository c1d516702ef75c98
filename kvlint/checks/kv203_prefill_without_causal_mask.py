"""KV203: prefill attention that is silently bidirectional (docs: rules/codes/KV203.toml)."""
from kvlint.analysis.context import DECODE, PREFILL
from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.facts import load_facts
from kvlint.helpers.sparse import bounded, sparse_view, token_window_values

FACTS = load_facts()
SQ = "x".join(map(str, FACTS.fa.mask.compressed_shapes[0]))  # the compressed mask


@register
class PrefillWithoutCausalMask(Rule):
    code = "KV203"
    operators = FACTS.family("window_readers")

    def check_call(self, oc, ctx: FileContext):
        view = sparse_view(oc, ctx)
        if not view.modes_known or view.modes != {0} or not view.no_mask:
            return
        if not view.complete and not view.mask_passed:
            return
        phase = ctx.context.phase(oc.call)
        if phase == DECODE:
            return
        for role in ("next_tokens", "pre_tokens"):
            window = token_window_values(oc, ctx, role)
            if window is not None and bounded(window[1]):
                node, _ = window
                name = FACTS.keyword(oc.name, role)
                yield ctx.finding(self.code, node,
                                  f"`{name}` is ignored under sparse_mode 0 without a mask: the "
                                  f"attention silently becomes bidirectional; use sparse_mode=3 "
                                  f"(causal) or 4 (band) with the {SQ} mask", anchor=oc.call)
                return
        if phase == PREFILL:
            yield ctx.finding(self.code, oc.call.func,
                              f"{oc.name} on the prefill path with sparse_mode 0 and no mask: nothing "
                              f"is masked, so every token attends to future tokens; use "
                              f"sparse_mode=3 with the {SQ} causal mask", branch="PREFILL_PHASE")
