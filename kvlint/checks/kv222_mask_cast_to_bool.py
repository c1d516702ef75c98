"""KV222: a mask of unknown dtype and polarity cast to bool for atten_mask
(docs: rules/codes/KV222.toml)."""
import ast
from typing import Optional, Tuple

from kvlint.analysis.dtypes import receiver_is_module
from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.facts import load_facts
from kvlint.helpers.masks import (
    DEVICE_SHAPE_KEEPING,
    additive_by_pattern,
    cast_at_top,
    mask_constructions,
    unchecked_foreign_mask,
)

FACTS = load_facts()



def bool_cast(expr: ast.expr) -> Optional[ast.Call]:
    """The `.bool()` / `.to(torch.bool)` / `.type(torch.bool)` at the top of `expr`, looking
    through device/shape-keeping calls."""
    return cast_at_top(expr, ("bool",), ("bool",))


def negation(expr: ast.expr) -> Optional[Tuple[ast.expr, ast.expr]]:
    """(the negating node, what it negates) for `torch.logical_not(x)`, `x.logical_not()` and
    `~x.bool()` / `~x.to(torch.bool)`, looking through device/shape-keeping calls on top."""
    while isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in DEVICE_SHAPE_KEEPING \
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
                name = unchecked_foreign_mask(source, node, ctx)
                if name is not None:
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
            name = unchecked_foreign_mask(cast.func.value, cast, ctx)
            if name is None or additive_by_pattern(cast.func.value, cast, ctx):
                continue  # INDUCTOR_PATTERN_PAIR: the pattern shows an additive mask, cast right
            yield ctx.finding(self.code, cast,
                              f"`{name}` is cast to bool for {oc.name}'s `atten_mask` (line "
                              f"{oc.call.lineno}) without a look at its dtype or polarity: an additive "
                              f"float mask (0 keep / -inf masked) comes out right, but a 1/0 keep "
                              f"mask (Hugging Face `attention_mask`) comes out inverted, silently; "
                              f"check the dtype and say the polarity: `{name} < 0` (additive), "
                              f"`{name} == 0` (keep mask)")
