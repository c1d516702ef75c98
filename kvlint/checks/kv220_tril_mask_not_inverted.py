"""KV220: an atten_mask built with torch.tril(...) and not inverted (docs: rules/codes/KV220.toml)."""
import ast
from typing import Optional

from kvlint.analysis.dtypes import receiver_is_module
from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.facts import load_facts
from kvlint.helpers.masks import follow_kept, kept_receiver, mask_constructions

FACTS = load_facts()

# Calls that rewrite the values: what comes out is no longer the tril's polarity.
REWRITING = {"masked_fill", "masked_fill_", "fill_", "copy_", "zero_", "logical_not", "logical_not_",
             "triu", "triu_", "where", "eq", "ne", "lt", "le", "gt", "ge", "logical_xor", "bitwise_not"}


def _tril_step(expr: ast.AST):
    if not (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute)):
        return None  # ~x, 1 - x, x == 0, ...: inverted or rewritten
    f = expr.func
    if f.attr in ("tril", "tril_"):
        return "found", expr
    if receiver_is_module(f.value) or f.attr in REWRITING:
        return None
    receiver = kept_receiver(expr)
    return ("next", receiver) if receiver is not None else None


def uninverted_tril(expr: ast.expr, ctx: FileContext) -> Optional[ast.Call]:
    """The `tril` call `expr` is, with only dtype/device/shape-keeping calls on top of it
    (no `~`, `not`, `logical_not`, `1 - x`, comparison or fill in between)."""
    found = follow_kept(expr, ctx, _tril_step)
    return found if isinstance(found, ast.Call) else None


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
