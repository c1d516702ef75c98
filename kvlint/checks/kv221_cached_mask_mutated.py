"""KV221: a cached atten_mask attribute mutated in place (docs: rules/codes/KV221.toml)."""
import ast
from typing import Optional, Set

from kvlint.analysis.dtypes import receiver_is_module
from kvlint.analysis.module import dotted_name
from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.facts import load_facts
from kvlint.helpers.masks import INPLACE
from kvlint.helpers.roles import positional_role_operators, role_values

FACTS = load_facts()
MASK_READERS = FACTS.family("mask_readers")
POSITIONAL_MASK_OPERATORS = positional_role_operators("mask")

BUILD_FUNCTIONS = ("__init__", "__post_init__")
# OVERWRITES: in-place writes that replace the content instead of modifying it (a refill).
OVERWRITES = frozenset({"copy_", "fill_", "zero_"})
# Heuristic STEP_METADATA_FUNCTION: where a captured graph's metadata buffers are refilled
# for each step (the function or its class says metadata/graph/replay/capture, or the class
# is a backend/builder/runner, not a layer). Refilling a captured mask buffer there, in place,
# from the step's inputs is what graph replay requires.
STEP_METADATA_WORDS = ("metadata", "replay", "capture", "graph")
# Module functions that hand back their first argument's mask, transformed (identity).
MASK_TRANSFORMS = frozenset({"logical_not", "tril", "triu", "flip", "narrow", "squeeze", "unsqueeze",
                             "transpose", "permute", "reshape", "broadcast_to"})


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
        # ...and the keyword (or `**dict` key) that feeds the mask, or an operator taking it
        # by position
        return (("atten_mask", *POSITIONAL_MASK_OPERATORS),)

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
        if self._refill(target, node) and self._step_metadata_function(func, ctx):
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
    def _refill(target, node) -> bool:
        """An overwrite of the buffer from values that do not read it: `buf[:n].copy_(m)`,
        `buf.fill_(True)`, `buf[i] = m` (not `masked_fill_`, `*=`, `buf.copy_(buf & m)`)."""
        want = _key(target)
        if isinstance(node, ast.Call):
            if node.func.attr not in OVERWRITES:
                return False
            values = [*node.args, *(k.value for k in node.keywords)]
        elif isinstance(node, ast.Assign):
            values = [node.value]
        else:
            return False
        return not any(_key(n) == want for v in values for n in ast.walk(v) if isinstance(n, ast.Attribute))

    @staticmethod
    def _step_metadata_function(func, ctx: FileContext) -> bool:
        """STEP_METADATA_FUNCTION (see above)."""
        cls = ctx.index.enclosing_class(func)
        names = [func.name] + ([cls.name] if cls is not None else [])
        if any(w in n.lower() for n in names for w in STEP_METADATA_WORDS):
            return True
        return cls is not None and ctx.context.layer_class(func) is None \
            and any(w.lower() in cls.name.lower() for w in ("Backend", "Builder", "Runner", "Metadata"))

    @staticmethod
    def _mask_attributes(ctx: FileContext) -> Set[str]:
        """Attributes whose identity reaches a fused-attention mask in this file (`atten_mask`, or
        npu_fusion_attention's positional argument 7): the
        attribute itself, a slice or view of it, `.to()` / `.unsqueeze()` / `.masked_fill()`
        of it, `~it`, an alias (MASK_IDENTITY). Not the arguments of a call that builds a new
        mask (`gen_mask(seq_lens, block_tables)`, `indices < seq_lens`)."""
        out: Set[str] = set()
        for oc in ctx.op_calls:
            if oc.name not in MASK_READERS:
                continue
            stack = [(v, 0) for v in role_values(oc, ctx, "mask")]
            while stack:
                expr, depth = stack.pop()
                if isinstance(expr, ast.Attribute):
                    key = _key(expr)
                    if key:
                        out.add(key)
                elif isinstance(expr, ast.Subscript):
                    stack.append((expr.value, depth))
                elif isinstance(expr, ast.UnaryOp):
                    stack.append((expr.operand, depth))
                elif isinstance(expr, ast.BinOp):  # `self.mask * -10000.0`, `m1 | m2`
                    stack.extend([(expr.left, depth), (expr.right, depth)])
                elif isinstance(expr, ast.IfExp):
                    stack.extend([(expr.body, depth), (expr.orelse, depth)])
                elif isinstance(expr, ast.NamedExpr):
                    stack.append((expr.value, depth))
                elif isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
                    if receiver_is_module(expr.func.value) or dotted_name(expr.func.value) in ("torch_npu", "F"):
                        if expr.func.attr in MASK_TRANSFORMS and expr.args:
                            stack.append((expr.args[0], depth))
                    else:
                        stack.append((expr.func.value, depth))  # a method of the mask
                elif isinstance(expr, ast.Name) and depth < 4:
                    stack.extend((v, depth + 1) for v in ctx.values.bindings(expr.id, oc.call))
        return out
