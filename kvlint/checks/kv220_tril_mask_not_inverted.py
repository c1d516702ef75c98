"""KV220: an atten_mask built with torch.tril(...) and not inverted (docs: rules/codes/KV220.toml)."""
import ast
from typing import Optional

from kvlint.analysis.dtypes import CONVERTING_METHODS, PRESERVING_METHODS, receiver_is_module
from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.facts import load_facts
from kvlint.helpers.masks import mask_constructions

FACTS = load_facts()

# Calls that rewrite the values: what comes out is no longer the tril's polarity.
REWRITING = {"masked_fill", "masked_fill_", "fill_", "copy_", "zero_", "logical_not", "logical_not_",
             "triu", "triu_", "where", "eq", "ne", "lt", "le", "gt", "ge", "logical_xor", "bitwise_not"}


def uninverted_tril(expr: ast.expr, ctx: FileContext, depth: int = 0) -> Optional[ast.Call]:
    """The `tril` call `expr` is, with only dtype/device/shape-keeping calls on top of it
    (no `~`, `not`, `logical_not`, `1 - x`, comparison or fill in between)."""
    if depth > 10:
        return None
    if isinstance(expr, ast.Name):
        cands = ctx.values.candidates(expr, expr, follow_calls=True)
        if len(cands) == 1 and cands[0] is not expr:
            return uninverted_tril(cands[0], ctx, depth + 1)
        return None
    if not (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute)):
        return None  # ~x, 1 - x, x == 0, ...: inverted or rewritten
    f = expr.func
    if f.attr in ("tril", "tril_"):
        return expr
    if receiver_is_module(f.value) or f.attr in REWRITING:
        return None
    if f.attr in PRESERVING_METHODS or f.attr in CONVERTING_METHODS or f.attr in ("to", "type"):
        return uninverted_tril(f.value, ctx, depth + 1)
    return None


@register
class TrilMaskNotInverted(Rule):
    code = "KV220"
    operators = FACTS.family("mask_readers")

    def check_call(self, oc, ctx: FileContext):
        for site in mask_constructions(oc, ctx):
            tril = uninverted_tril(site, ctx)
            if tril is None:
                continue
            yield ctx.finding(self.code, tril,
                              f"this lower-triangular mask reaches {oc.name}'s `atten_mask` (line "
                              f"{oc.call.lineno}) as is, but True/1 means *masked*: it hides the "
                              f"past and lets every token attend to the future, silently; invert it "
                              f"(`~torch.tril(...)`) or build `torch.triu(ones, diagonal=1)`")
