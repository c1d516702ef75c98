"""KV221: a cached atten_mask attribute mutated in place (docs: rules/codes/KV221.toml)."""
import ast
from typing import Optional, Set

from kvlint.analysis.module import dotted_name
from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.facts import load_facts

FACTS = load_facts()
MASK_READERS = FACTS.family("mask_readers")

INPLACE = frozenset({
    "masked_fill_", "fill_", "mul_", "add_", "sub_", "div_", "copy_", "zero_", "tril_", "triu_",
    "logical_not_", "logical_and_", "logical_or_", "bitwise_not_", "index_fill_", "masked_scatter_",
    "clamp_", "fill_diagonal_",
})
BUILD_FUNCTIONS = ("__init__", "__post_init__")


def _key(expr: ast.expr) -> Optional[str]:
    """`self.mask` -> "self.mask"; `meta.attn_mask` / `a.b.attn_mask` -> ".attn_mask"."""
    while isinstance(expr, ast.Subscript):
        expr = expr.value
    if not isinstance(expr, ast.Attribute):
        return None
    if isinstance(expr.value, ast.Name) and expr.value.id == "self":
        return f"self.{expr.attr}"
    return f".{expr.attr}"


@register
class CachedMaskMutated(Rule):
    code = "KV221"

    def words(self, settings):
        return MASK_READERS  # _mask_attributes starts from their calls

    def required_words(self, settings):
        return (("atten_mask",),)  # ...and the keyword (or `**dict` key) that feeds the mask

    def check_module(self, ctx: FileContext):
        feeding = self._mask_attributes(ctx)
        if not feeding:
            return
        idx = ctx.index
        for node in idx.aug_assigns:
            yield from self._report(node.target, node, feeding, ctx, "an augmented assignment")
        for call in idx.calls:
            f = call.func
            if isinstance(f, ast.Attribute) and f.attr in INPLACE:
                yield from self._report(f.value, call, feeding, ctx, f"`.{f.attr}()`")
        for node in idx.assigns:
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                if isinstance(target, ast.Subscript):
                    yield from self._report(target, node, feeding, ctx, "an item assignment")

    def _report(self, target, node, feeding: Set[str], ctx: FileContext, how: str):
        key = _key(target)
        if key is None or key not in feeding:
            return
        func = ctx.index.enclosing_function(node)
        if func is None or func.name in BUILD_FUNCTIONS or self._fresh_here(target, node, func):
            return
        shown = dotted_name(target.value if isinstance(target, ast.Subscript) else target) or key
        yield ctx.finding(self.code, target,
                          f"`{shown}` feeds a fused-attention `atten_mask` and is changed in place here "
                          f"({how}): the cached mask is shared by every layer, step and captured "
                          f"graph, so the change leaks into all later calls (True/1 = masked); build "
                          f"a new tensor (`mask = self.mask.masked_fill(...)`) or a separate cached "
                          f"mask per shape")

    @staticmethod
    def _fresh_here(target, node, func) -> bool:
        """The attribute is (re)built in the same function before the mutation."""
        want = dotted_name(target.value if isinstance(target, ast.Subscript) else target)
        for n in ast.walk(func):
            if isinstance(n, ast.Assign) and n.lineno < node.lineno and \
                    any(dotted_name(t) == want for t in n.targets):
                return True
        return False

    @staticmethod
    def _mask_attributes(ctx: FileContext) -> Set[str]:
        """Attributes whose value reaches an FA/IFA/PFA `atten_mask` in this file."""
        out: Set[str] = set()
        for oc in ctx.op_calls:
            if oc.name not in MASK_READERS:
                continue
            stack = [(v, 0) for v in ctx.args(oc.call).values("atten_mask")]
            while stack:
                expr, depth = stack.pop()
                callees = {id(n.func) for n in ast.walk(expr) if isinstance(n, ast.Call)}
                for n in ast.walk(expr):
                    if isinstance(n, ast.Attribute) and id(n) not in callees:
                        key = _key(n)
                        if key:
                            out.add(key)
                    elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and depth < 4:
                        stack.extend((v, depth + 1) for v in ctx.values.bindings(n.id, oc.call))
        return out
