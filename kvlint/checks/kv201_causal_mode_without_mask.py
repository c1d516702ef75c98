"""KV201: a sparse_mode that needs a mask, with no atten_mask (docs: rules/codes/KV201.toml)."""
import ast
from typing import Iterator

from kvlint.analysis.context import DECODE
from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.facts import load_facts
from kvlint.helpers.roles import positional_index, role_node, role_values, spelling
from kvlint.helpers.sparse import branch_views, sparse_view
from kvlint.helpers.windows import mentioned

FACTS = load_facts()
SQ = "x".join(map(str, FACTS.fa.mask.compressed_shapes[0]))  # the compressed mask


@register
class CausalModeWithoutMask(Rule):
    code = "KV201"
    operators = FACTS.family("window_readers")

    def check_call(self, oc, ctx: FileContext):
        view = sparse_view(oc, ctx)
        ignores = FACTS.operator(oc.name).window_needs_mask
        if ignores:  # every mode but the default one needs the mask to mean anything
            modes = sorted(m for m in view.modes if isinstance(m, int) and m != FACTS.fa.sparse.default_mask)
        else:
            modes = sorted(m for m in view.modes if m in FACTS.fa.mask.compressed_modes)
        if not modes or view.mode_node is None:
            return
        if view.mask_passed and not view.mask_all_none:
            yield from self._per_branch(oc, ctx, ignores)
            return
        if not view.mask_passed and not view.complete:
            return  # an unresolved **kwargs may carry the mask
        if self._mode_follows_mask(oc, ctx):
            return
        shown = "/".join(map(str, modes))
        mask = spelling(oc.name, "mask") or "atten_mask"
        how = f"`{mask}` is None" if view.mask_passed else f"no `{mask}` is passed"
        if ignores:
            pre, nxt = spelling(oc.name, "pre_tokens"), spelling(oc.name, "next_tokens")
            wanted = f"the {SQ} compressed mask" if set(modes) <= set(FACTS.fa.mask.compressed_modes) \
                else "the mask the mode describes"
            by_position = not ctx.args(oc.call).keywords.get(mask) and role_node(oc, ctx, "mask") is not None
            at = f" (argument {positional_index(oc, mask)})" if by_position else ""
            given = f"`{mask}=None`{at}" if view.mask_passed else f"no `{mask}`"
            message = (f"sparse_mode {shown} with {given}: {oc.name} then ignores sparse_mode, `{pre}` "
                       f"and `{nxt}` and computes full attention, so causal or band attention is "
                       f"silently bidirectional; pass `{mask}=` {wanted} (bool, True = masked)")
        else:
            message = (f"sparse_mode {shown} needs the {SQ} compressed mask but {how}: the "
                       f"operator raises for q_len > 1; pass `atten_mask=` a {SQ} bool "
                       f"mask (True = masked)")
        yield ctx.finding(self.code, view.mode_node, message, anchor=oc.call)

    def _per_branch(self, oc, ctx: FileContext, ignores) -> "Iterator":
        """Mask and mode set per branch: a branch whose mode needs the mask and whose mask is
        literal None (`if c: mask, mode = None, 3`), where other branches pass one."""
        if ignores:
            return
        if ctx.context.phase(oc.call) == DECODE:
            return
        for b in branch_views(oc, ctx) or ():
            # a branch that drops the mask on the decode path (`if max_query_len > 1: mask = m
            # else: mask = None`) does not raise: q_len is 1 there
            if b.mode in FACTS.fa.mask.compressed_modes and b.mask_none and b.mode_value is not None \
                    and b.phase != DECODE:
                yield ctx.finding(
                    self.code, b.mode_value,
                    f"sparse_mode {b.mode} needs the {SQ} compressed mask but `atten_mask` is None on "
                    f"this branch: the operator raises for q_len > 1; pass `atten_mask=` a {SQ} bool "
                    f"mask (True = masked) there too", anchor=oc.call)
                return

    @staticmethod
    def _mode_follows_mask(oc, ctx: FileContext) -> bool:
        """MODE_FOLLOWS_MASK: `sparse_mode=3 if mask is not None else 0` (directly or through a
        local name): the masked mode is chosen only when the mask exists, so a None mask means
        mode 0 at run time."""
        masks = {ctx.text(m) for m in role_values(oc, ctx, "mask")}
        for value in role_values(oc, ctx, "sparse_mode"):
            for expr in [value, *ctx.values.bindings(value.id, oc.call)] if isinstance(value, ast.Name) else [value]:
                if isinstance(expr, ast.IfExp) and masks & set(mentioned(expr.test)):
                    return True
        return False
