"""KV306: a literal block_size that disagrees with the block dimension of the paged cache view
passed in the same call (docs: rules/codes/KV306.toml)."""
import ast
from typing import Iterator, Optional, Tuple

from kvlint.analysis.values import UNKNOWN
from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.facts import load_facts
from kvlint.helpers.args import param_values, passes_value
from kvlint.helpers.roles import role_node, role_values

PAGED_READERS = load_facts().family("paged_readers")

RESHAPES = ("view", "reshape")
KEEPING = ("contiguous", "clone", "detach", "npu")
# A 3-D paged cache is (num_blocks, block_size, kv_heads * head_dim): the block axis per
# cache rank is an operator fact (rules/facts/fa.toml paged_cache_block_axis).
BLOCK_DIM_3D = load_facts().fa.paged_cache_block_axis[3]


def cache_view(expr: ast.expr, ctx: FileContext, at: ast.AST) -> Iterator[ast.Call]:
    """The `.view(...)`/`.reshape(...)` calls that produce `expr` (names in the function
    followed; `.contiguous()` and the like looked through)."""
    for cand in ctx.values.candidates(expr, at):
        node = cand
        while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in KEEPING:
            node = node.func.value
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in RESHAPES:
            yield node


def block_dim(view: ast.Call) -> Optional[ast.expr]:
    dims = list(view.args)
    if len(dims) == 1 and isinstance(dims[0], (ast.Tuple, ast.List)):
        dims = list(dims[0].elts)
    if len(dims) != 3 or any(isinstance(d, ast.Starred) for d in dims) or view.keywords:
        return None
    return dims[BLOCK_DIM_3D]


@register
class BlockSizeDisagreesWithCacheView(Rule):
    code = "KV306"
    operators = PAGED_READERS

    def check_call(self, oc, ctx: FileContext):
        if oc.variant == "workspace" or not passes_value(oc, ctx, "block_table"):
            return
        sizes = role_values(oc, ctx, "block_size")
        if len(sizes) != 1:
            return
        size = ctx.values.int_value(sizes[0], oc.call)
        if size is UNKNOWN:
            return
        for role in ("key", "value"):
            for value in param_values(oc, ctx, role):
                for view in cache_view(value, ctx, oc.call):
                    found = self._disagreement(view, size, ctx)
                    if found is None:
                        continue
                    dim, shown = found
                    when = "" if shown.lstrip("-").isdigit() else f" unless `{shown}` is {size}"
                    yield ctx.finding(
                        self.code, role_node(oc, ctx, "block_size"),
                        f"block_size={size}, but the `{role}` cache is viewed as (num_blocks, {shown}, "
                        f"...) on line {view.lineno}: the operator walks the cache in blocks of "
                        f"{size} tokens, so{when} the block table entries point at the wrong "
                        f"tokens, silently; pass `block_size={ctx.text(dim)}`", anchor=oc.call)
                    return

    @staticmethod
    def _disagreement(view: ast.Call, size: int, ctx: FileContext) -> Optional[Tuple[ast.expr, str]]:
        dim = block_dim(view)
        if dim is None:
            return None
        literal = ctx.values.literal(dim)
        if isinstance(literal, int) and not isinstance(literal, bool):
            return (dim, str(literal)) if literal not in (size, -1) else None
        values = ctx.values.literal_values(dim, view)
        ints = {v for v in values if isinstance(v, int) and not isinstance(v, bool)}
        if values and UNKNOWN not in values and ints == {size}:
            return None
        if isinstance(dim, (ast.Name, ast.Attribute)) and "block" not in ctx.text(dim).lower() \
                and "page" not in ctx.text(dim).lower():
            return None  # BLOCK_DIM_NAME: only a dim named for the block is the block size
        return dim, ctx.text(dim)
