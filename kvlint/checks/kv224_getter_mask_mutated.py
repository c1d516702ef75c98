"""KV224: a mask obtained from a cache or builder getter changed in place
(docs: rules/codes/KV224.toml)."""
import ast
import re
from typing import Iterator, Optional, Tuple

from kvlint.analysis.dtypes import receiver_is_module
from kvlint.analysis.module import dotted_name
from kvlint.checks import register
from kvlint.checks.base import FileContext, NoCase, Rule
from kvlint.helpers.masks import INPLACE

MASK_WORD = "mask"
# What a finding needs in the bytes: a name ending in "mask" changed in place (the rule reports
# exactly these forms, so the pre-filter pattern is a necessary condition).
_INPLACE_NAMES = "|".join(sorted(INPLACE))
# The same as `(?i)mask[\s\\]*(?:\*\*|//|>>|<<|[*+/%@&|^-])=|mask[\s\\]*\.[\s\\]*(?-i:NAMES)[\s\\]*\(`,
# found faster: after each `mask` (in any case) a substring search of the lowercased bytes
# finds, the rest is matched on the bytes as written (the augmented operators hold no letter,
# so their case does not matter). One pass over the `mask`s for both forms: searching the
# augmented assignment as a regex of its own over the lowercased bytes took a second scan.
_CHANGE_AFTER = re.compile(rb"[\s\\]*(?:(?:\*\*|//|>>|<<|[*+/%@&|^-])=|\.[\s\\]*(?:"
                           + _INPLACE_NAMES.encode() + rb")[\s\\]*\()")


class _MaskChanged:
    pattern = rb"(?i:mask)" + _CHANGE_AFTER.pattern
    flags = 0

    def search(self, data: bytes):
        return self.search_lowered(data, data.lower())

    def search_lowered(self, data: bytes, low: bytes):
        """`search`, given `data.lower()` (the engine's pre-filter makes it once per file)."""
        at = low.find(b"mask")
        while at >= 0:
            found = _CHANGE_AFTER.match(data, at + 4)
            if found is not None:
                return found
            at = low.find(b"mask", at + 1)
        return None


MUTATION_PATTERN = _MaskChanged()

# Calls whose result may share storage with their receiver: slicing keeps it, and these
# return the receiver itself when nothing needs to change (`.contiguous()` of a contiguous
# slice, `.to()` to the same dtype and device, `.float()` of a float tensor).
ALIASING = frozenset({
    "contiguous", "to", "type", "view", "view_as", "reshape", "expand", "expand_as", "narrow",
    "detach", "squeeze", "unsqueeze", "transpose", "permute", "flatten", "unflatten", "float",
    "half", "bfloat16", "bool", "int", "long", "byte", "npu", "cuda", "cpu", "type_as", "t",
})
# MASK_GETTER (when the getter is not in this module): a method whose name starts with get and
# contains "mask", called on an attribute whose name says it holds masks (builder / cache).
GETTER_RECEIVER_WORDS = ("mask", "builder", "cache")


def cached_base(expr: ast.expr, depth: int = 0) -> Optional[ast.expr]:
    """The stored attribute `expr` may alias: `self.cache[:n, :n].contiguous().to(d)` ->
    `self.cache`; None when `expr` makes a fresh tensor."""
    if depth > 12:
        return None
    if isinstance(expr, ast.Subscript):
        return cached_base(expr.value, depth + 1)
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in ALIASING \
            and not receiver_is_module(expr.func.value):
        return cached_base(expr.func.value, depth + 1)
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id in ("self", "cls"):
        return expr
    return None


def mutations(ctx: FileContext) -> Iterator[Tuple[ast.Name, ast.AST, str]]:
    """(the mutated local name, the mutating node, how) for `m *= x` and `m.masked_fill_(...)`
    on a plain local name ending in "mask" (`attn_mask`, `swa_mask`)."""
    for node in ctx.index.aug_assigns:
        if isinstance(node.target, ast.Name) and node.target.id.lower().endswith(MASK_WORD):
            yield node.target, node, "an augmented assignment"
    for call in ctx.index.calls:
        f = call.func
        if isinstance(f, ast.Attribute) and f.attr in INPLACE and isinstance(f.value, ast.Name) \
                and f.value.id.lower().endswith(MASK_WORD):
            yield f.value, call, f"`.{f.attr}()`"


@register
class GetterMaskMutated(Rule):
    code = "KV224"
    trigger_words = (NoCase(MASK_WORD),)  # names are compared lowercased

    def required_words(self, settings):
        return ((MUTATION_PATTERN,),)

    def check_module(self, ctx: FileContext):
        for name, node, how in mutations(ctx):
            func = ctx.index.enclosing_function(node)
            if func is None or ctx.values.is_parameter(name.id, func):
                continue
            for value in ctx.values.bindings(name.id, node):
                found = self._getter(value, node, ctx)
                if found is None:
                    continue
                getter, why = found
                yield ctx.finding(
                    self.code, node.target if isinstance(node, ast.AugAssign) else name,
                    f"`{name.id}` comes from `{ctx.text(getter.func)}(...)` (line {getter.lineno}), "
                    f"{why}, and is changed in place here ({how}): the cached mask changes with it, "
                    f"so every later request, layer and captured graph reads the modified mask; "
                    f"copy first (`{name.id} = {name.id}.clone()`) or build a new tensor "
                    f"(`{name.id} = {name.id} * ...`)", anchor=node)
                break

    @staticmethod
    def _getter(value: ast.expr, at: ast.AST, ctx: FileContext):
        """(the getter call, why it aliases) when `value` is a getter call whose result may
        be a stored mask."""
        if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)):
            return None
        if receiver_is_module(value.func.value):
            return None
        returns = ctx.values.builder_returns(value, at)
        if returns:
            for r in returns:
                for cand in ctx.values.candidates(r, r):
                    base = cached_base(cand)
                    if base is not None:
                        return value, (f"which returns `{ctx.text(cand)}` (line {cand.lineno}): a view "
                                       f"of, or the very tensor in, `{dotted_name(base)}`")
            return None
        method = value.func.attr.lower()
        receiver = dotted_name(value.func.value) or ""
        if method.startswith("get") and MASK_WORD in method and \
                any(w in receiver.rsplit(".", 1)[-1].lower() for w in GETTER_RECEIVER_WORDS):
            return value, "a cache or builder getter (such getters return slices or `.to()` of their cache)"
        return None
