"""KV233: one branch of a call switches to sparse_mode 0 with no mask while `pre_tokens` still
carries the window another branch applies: the band is dropped on that path (docs:
rules/codes/KV233.toml)."""
import ast

from kvlint.analysis.context import DECODE
from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.facts import load_facts
from kvlint.helpers.sparse import (
    applies_window,
    bidirectional_branches,
    branch_views,
    ignores_window,
    mode_follows_window,
    sparse_view,
    token_window_values,
)
from kvlint.helpers.windows import carries_window

FACTS = load_facts()


def _same_window(a, b) -> bool:
    """The same `pre_tokens` leaf, or the same expression written on both branches."""
    return a.pre_value is b.pre_value or ast.dump(a.pre_value) == ast.dump(b.pre_value)


@register
class BandDroppedOnBranch(Rule):
    code = "KV233"
    operators = FACTS.family("window_readers")

    def check_call(self, oc, ctx: FileContext):
        if oc.variant == "workspace":
            return  # the workspace size does not depend on the window: the real call is reported
        view = sparse_view(oc, ctx)
        if not view.complete and not view.mask_passed:
            return  # an unresolved **kwargs may carry the mask
        views = branch_views(oc, ctx)
        if not views:
            return
        kv203 = bidirectional_branches(oc, ctx, view, views)  # off the decode path: KV203's
        for dropped in views:
            if any(dropped is b for b in kv203):
                continue
            # SINGLE_QUERY_BRANCH: under `max_query_len == 1` (and the like) the operator
            # ignores pre/next_tokens anyway (Q_S = 1): the shortcut is exact there
            if not ignores_window(dropped) or dropped.single_query or dropped.pre_value is None:
                continue
            if not carries_window(dropped.pre_value, oc.call, ctx):
                continue  # a bounded length, not a sliding window (KV203's when it matters)
            applied = next((a for a in views if a is not dropped and applies_window(a)
                            and a.pre_value is not None and _same_window(a, dropped)
                            and not mode_follows_window(oc, ctx, dropped, a)), None)
            if applied is None:
                continue
            yield self._finding(oc, ctx, dropped, applied)
            return

    def _finding(self, oc, ctx: FileContext, dropped, applied):
        pre = FACTS.keyword(oc.name, "pre_tokens")
        mask = FACTS.keyword(oc.name, "mask")
        node = next((v for v in (dropped.mode_value, dropped.mask_value)
                     if isinstance(v, ast.Constant)), None)
        if node is None:
            node = token_window_values(oc, ctx, "pre_tokens")[0]
        kind = "decode branch" if DECODE in (dropped.phase, ctx.context.phase(oc.call)) else "branch"
        where = f"the {kind} of line {node.lineno}" if isinstance(node, ast.Constant) else f"one {kind}"
        how = f"sparse_mode {applied.mode}" if applied.mode in FACTS.fa.sparse.band else \
            f"sparse_mode 0 and `{mask}`"
        return ctx.finding(
            self.code, node,
            f"`{pre}` carries the window that another branch applies ({how}), but on {where} "
            f"sparse_mode is 0 with no `{mask}`, where {oc.name} ignores `{pre}`: the band is "
            f"silently dropped on that path. It changes the result whenever that path can see "
            f"more than one query token per request (MTP or speculative decoding, chunked "
            f"prefill); keep the band mode and its mask there, or take the shortcut only when "
            f"every query is one token", anchor=oc.call)
