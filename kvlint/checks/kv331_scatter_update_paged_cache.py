"""KV331: scatter_update_ used to write a paged cache with a slot index (docs: rules/codes/KV331.toml)."""
import ast
import re

from kvlint.analysis.module import dotted_name
from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.helpers.args import param_values
from kvlint.helpers.tensors import reshape_dims

# SLOT_INDEX: a flat block*block_size+offset index, by name.
_SLOT = re.compile(r"(^|_)slots?($|_)|slot_mapping|slot_indices|slot_ids", re.IGNORECASE)
_BLOCK = re.compile(r"block", re.IGNORECASE)


def _terminal(expr: ast.expr) -> str:
    while isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
        expr = expr.func.value  # slot_mapping.view(-1).to(torch.int64)
    if isinstance(expr, ast.Subscript):
        expr = expr.value
    name = dotted_name(expr) or ""
    return name.split(".")[-1]


@register
class ScatterUpdatePagedCache(Rule):
    code = "KV331"
    operators = ("scatter_update_",)

    def check_call(self, oc, ctx: FileContext):
        indices = param_values(oc, ctx, "indices")
        data = param_values(oc, ctx, "self")
        if not indices or not data:
            return
        slot = _terminal(indices[0])
        paged = self._paged_4d(data[0], ctx)
        if not _SLOT.search(slot) and not paged:
            return
        why = f"its index `{slot}` is a slot index" if _SLOT.search(slot) else \
            "the cache is a 4-D paged view [num_blocks, block_size, N, D]"
        yield ctx.finding(self.code, oc.call.func,
                          f"scatter_update_ writes `updates[b]` at position `indices[b]` of batch row "
                          f"b along `axis` of a contiguous [B, S, H] cache, but {why}: the rows land "
                          f"in the wrong blocks, silently; write a paged cache with "
                          f"npu_scatter_nd_update_(cache.view(-1, N, D), slot_mapping.view(-1, 1), "
                          f"x.view(-1, N, D)) or npu_scatter_pa_kv_cache")

    @staticmethod
    def _paged_4d(expr, ctx: FileContext) -> bool:
        """PAGED_VIEW: a 4-D `.view(num_blocks, block_size, ...)` (first dims named like blocks)."""
        for cand in ctx.values.candidates(expr, expr):
            dims = reshape_dims(cand)
            if dims and len(dims) == 4 and all(_BLOCK.search(dotted_name(d) or "") for d in dims[:2]):
                return True
        return False
