"""KV222: a mask of unknown dtype and polarity cast to bool for atten_mask
(docs: rules/codes/KV222.toml)."""
import ast
from typing import Optional, Tuple

from kvlint.analysis.dtypes import dtype_of_expr, receiver_is_module
from kvlint.analysis.module import dotted_name
from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.facts import load_facts
from kvlint.helpers.masks import mask_constructions

FACTS = load_facts()

KEEPING = {"npu", "cuda", "cpu", "contiguous", "clone", "detach", "view", "reshape", "unsqueeze",
           "squeeze", "expand", "to", "pin_memory"}
CHECK_CALLS = {"is_floating_point", "dtype"}


def bool_cast(expr: ast.expr) -> Optional[ast.Call]:
    """The `.bool()` / `.to(torch.bool)` / `.type(torch.bool)` at the top of `expr`, looking
    through device/shape-keeping calls."""
    while isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
        f = expr.func
        if f.attr == "bool" and not expr.args:
            return expr
        if f.attr in ("to", "type"):
            target = next((k.value for k in expr.keywords if k.arg == "dtype"), expr.args[0] if expr.args else None)
            if dtype_of_expr(target) == "bool":
                return expr
            if dtype_of_expr(target) is not None:
                return None
        if f.attr not in KEEPING:
            return None
        expr = f.value
    return None


def negation(expr: ast.expr) -> Optional[Tuple[ast.expr, ast.expr]]:
    """(the negating node, what it negates) for `torch.logical_not(x)`, `x.logical_not()` and
    `~x.bool()` / `~x.to(torch.bool)`, looking through device/shape-keeping calls on top."""
    while isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in KEEPING \
            and not receiver_is_module(expr.func.value):
        expr = expr.func.value
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == "logical_not":
        if receiver_is_module(expr.func.value) and len(expr.args) == 1:
            return expr, expr.args[0]
        if not receiver_is_module(expr.func.value) and not expr.args:
            return expr, expr.func.value
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Invert):
        cast = bool_cast(expr.operand)
        if cast is not None:
            return expr, cast.func.value
    return None


@register
class MaskCastToBool(Rule):
    code = "KV222"
    operators = FACTS.family("mask_readers")

    def check_call(self, oc, ctx: FileContext):
        for site in mask_constructions(oc, ctx):
            negated = negation(site)
            if negated is not None:
                node, source = negated
                if self._foreign(source, node, ctx) and not self._checked(source, node, ctx):
                    name = dotted_name(source) or ctx.text(source)
                    yield ctx.finding(
                        self.code, node,
                        f"`{name}` is negated into a bool mask for {oc.name}'s `atten_mask` (line "
                        f"{oc.call.lineno}) without a look at its dtype: a bool/1-0 keep mask (SDPA, "
                        f"Hugging Face) comes out right, but an additive float mask (0 keep / -inf "
                        f"masked) comes out inverted, silently; check the dtype and say the "
                        f"polarity: `{name} < 0` (additive), `{name} == 0` (keep mask)")
                continue
            cast = bool_cast(site)
            if cast is None:
                continue
            source = cast.func.value
            if not self._foreign(source, cast, ctx) or self._checked(source, cast, ctx):
                continue
            name = dotted_name(source) or ctx.text(source)
            yield ctx.finding(self.code, cast,
                              f"`{name}` is cast to bool for {oc.name}'s `atten_mask` (line "
                              f"{oc.call.lineno}) without a look at its dtype or polarity: an additive "
                              f"float mask (0 keep / -inf masked) comes out right, but a 1/0 keep "
                              f"mask (Hugging Face `attention_mask`) comes out inverted, silently; "
                              f"check the dtype and say the polarity: `{name} < 0` (additive), "
                              f"`{name} == 0` (keep mask)")

    @staticmethod
    def _foreign(source: ast.expr, at: ast.AST, ctx: FileContext) -> bool:
        """FOREIGN_MASK: every value `source` may hold comes from outside the file's own
        constructions (a parameter, another object's attribute), so its polarity is unknown."""
        cands = ctx.values.candidates(source, at, follow_calls=True)
        for c in cands:
            base = c
            while isinstance(base, ast.Subscript):
                base = base.value
            if isinstance(base, ast.Name):
                func = ctx.index.enclosing_function(at)
                if not ctx.values.is_parameter(base.id, func):
                    return False
            elif isinstance(base, ast.Attribute):
                if isinstance(base.value, ast.Name) and base.value.id == "self":
                    return False  # built by the class: its polarity is visible to the reader
            else:
                return False
        return bool(cands)

    @staticmethod
    def _checked(source: ast.expr, at: ast.AST, ctx: FileContext) -> bool:
        """DTYPE_OR_POLARITY_CHECK: the function reads `x.dtype`, calls `x.is_floating_point()`
        / `torch.is_floating_point(x)`, or compares `x` (`x == 0`, `x < 0`)."""
        func = ctx.index.enclosing_function(at)
        want = dotted_name(source)
        if func is None or want is None:
            return False
        for n in ast.walk(func):
            if isinstance(n, ast.Attribute) and n.attr in CHECK_CALLS and dotted_name(n.value) == want:
                return True
            if isinstance(n, ast.Call) and dotted_name(n.func) in ("torch.is_floating_point",) and \
                    n.args and dotted_name(n.args[0]) == want:
                return True
            if isinstance(n, ast.Compare) and any(dotted_name(x) == want for x in [n.left, *n.comparators]) \
                    and not any(isinstance(op, (ast.Is, ast.IsNot)) for op in n.ops):
                return True
        return False
