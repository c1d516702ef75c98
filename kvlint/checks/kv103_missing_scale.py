"""KV103: fused attention without the softmax scale (docs: rules/codes/KV103.toml)."""
import ast
from typing import Optional

from kvlint.analysis.findings import Fix
from kvlint.analysis.module import named_parameters
from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.facts import load_facts
from kvlint.helpers.args import missing_keyword
from kvlint.helpers.fixes import add_keyword

FACTS = load_facts()

# Heuristic HEAD_DIM_NAMES: the names a head dimension goes by in the corpus.
HEAD_DIM_NAMES = ("head_dim", "head_size")
# Heuristic SCALE_NAMES: the names an already computed softmax scale goes by (vLLM's
# `self.scale`, HF's `self.scaling`, `softmax_scale`); the fix passes it before computing one.
SCALE_NAMES = ("softmax_scale", "scale", "scaling", "sm_scale", "scale_value")


def _in_scope(call: ast.Call, ctx: FileContext, names) -> Optional[str]:
    """The first of `names` visible at `call`: a parameter or an earlier local of the
    enclosing function, else -- in a method -- `self.<name>` assigned in the class."""
    fn = ctx.index.enclosing_function(call)
    if fn is None:
        return None
    params = [a.arg for a in named_parameters(fn)]
    stores = ctx.index.stores(fn)  # name -> first line stored in the function
    for name in names:
        if name in params or stores.get(name, call.lineno) < call.lineno:
            return name
    cls = ctx.index.enclosing_class(call)
    if cls is None or not params or params[0] != "self":
        return None
    assigned = ctx.index.self_attribute_stores(cls)
    for name in names:
        if name in assigned:
            return f"self.{name}"
    return None


def known_scale(call: ast.Call, ctx: FileContext) -> Optional[str]:
    """The scale expression for `call`: a scale already in scope (SCALE_NAMES), else
    `<head dim> ** -0.5` from a known head dim, else None."""
    scale = _in_scope(call, ctx, SCALE_NAMES)
    if scale is not None:
        return scale
    head_dim = known_head_dim(call, ctx)
    return f"{head_dim} ** -0.5" if head_dim is not None else None


def known_head_dim(call: ast.Call, ctx: FileContext) -> Optional[str]:
    """The expression holding the head dim at `call`, or None. Only two cases count:
    a parameter or an earlier local assignment of `head_dim`/`head_size` in the enclosing
    function, or -- in a method -- `self.head_dim`/`self.head_size` assigned anywhere in the
    class. Never `query.shape[-1]`: with BSH/TND layouts that is heads * head_dim."""
    return _in_scope(call, ctx, HEAD_DIM_NAMES)


def scale_fix(call: ast.Call, keyword: str, ctx: FileContext) -> Optional[Fix]:
    scale = known_scale(call, ctx)
    if scale is None:
        return None
    edit = add_keyword(call, f"{keyword}={scale}", ctx)
    if edit is None:
        return None
    return Fix(f"pass `{keyword}={scale}`", (edit,), safe=False)


@register
class MissingScale(Rule):
    code = "KV103"
    operators = FACTS.family("scale_readers")

    def check_call(self, oc, ctx: FileContext):
        scale = (known_scale(oc.call, ctx) or "head_dim ** -0.5").replace("{", "{{").replace("}", "}}")
        finding = missing_keyword(self.code, oc, ctx, "scale",
                                  "the softmax scale defaults to 1.0, so the attention is unscaled; "
                                  f"pass `{{keyword}}={scale}`", scale_fix)
        if finding is not None:
            yield finding
