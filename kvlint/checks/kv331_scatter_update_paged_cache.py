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
        if self._pair_index(indices[0], oc.call, ctx):
            return  # the documented [N, 2] (block, offset) form: a correct paged write
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

    def _pair_index(self, expr, at, ctx: FileContext) -> bool:
        """PAIR_INDEX: every value the index may hold is built as the documented 2-D [N, 2]
        (block, offset) index of scatter_update_ (ops-nn scatter README, scenario 2:
        `torch.stack([slots // bs, slots % bs], dim=1)`), following locals and, for an
        attribute (`attn_metadata.slot_indices`), what this module stores under that name
        (`Metadata(slot_indices=...)`, `m.slot_indices = ...`)."""
        leaves = []
        for cand in ctx.values.candidates(expr, at):
            cand = _strip_conversions(cand)
            if isinstance(cand, ast.Attribute):
                stored = _stored_values(cand.attr, ctx)
                if not stored:
                    return False
                leaves.extend(v for s, v in stored for v in ctx.values.candidates(v, s))
            else:
                leaves.append(cand)
        return bool(leaves) and all(_is_pair_stack(_strip_conversions(v)) for v in leaves)

    @staticmethod
    def _paged_4d(expr, ctx: FileContext) -> bool:
        """PAGED_VIEW: a 4-D `.view(num_blocks, block_size, ...)` (first dims named like blocks)."""
        for cand in ctx.values.candidates(expr, expr):
            dims = reshape_dims(cand)
            if dims and len(dims) == 4 and all(_BLOCK.search(dotted_name(d) or "") for d in dims[:2]):
                return True
        return False


_CONVERSIONS = ("to", "int", "long", "npu", "cuda", "contiguous", "view", "reshape")


def _strip_conversions(expr: ast.expr) -> ast.expr:
    while isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in _CONVERSIONS \
            and not (expr.func.attr in ("view", "reshape") and expr.args):
        expr = expr.func.value
    return expr


def _is_pair_stack(expr: ast.expr) -> bool:
    """`torch.stack([a, b], dim=1)` / `dim=-1`, or `torch.cat([a.unsqueeze(1), b.unsqueeze(1)], 1)`."""
    if not (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute)
            and expr.func.attr in ("stack", "cat") and expr.args
            and isinstance(expr.args[0], (ast.List, ast.Tuple)) and len(expr.args[0].elts) == 2):
        return False
    dim = expr.args[1] if len(expr.args) > 1 else next((k.value for k in expr.keywords if k.arg == "dim"), None)
    if isinstance(dim, ast.UnaryOp) and isinstance(dim.op, ast.USub) and isinstance(dim.operand, ast.Constant):
        dim_value = -dim.operand.value
    else:
        dim_value = dim.value if isinstance(dim, ast.Constant) else None
    if dim_value not in (1, -1):
        return False
    if expr.func.attr == "cat":
        return all(isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr == "unsqueeze"
                   for e in expr.args[0].elts)
    return True


def _stored_values(attr: str, ctx: FileContext):
    """(statement, value) pairs of what this module stores as attribute `attr`: keyword
    arguments `X(attr=value)` and assignments `obj.attr = value`."""
    out = []
    for call in ctx.index.calls:
        for k in call.keywords:
            if k.arg == attr:
                out.append((call, k.value))
    for stmt in ctx.index.assigns:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        if stmt.value is not None and any(isinstance(x, ast.Attribute) and x.attr == attr for x in targets):
            out.append((stmt, stmt.value))
    return out
