"""KV103: fused attention without the softmax scale (docs: rules/codes/KV103.toml)."""
import ast
from typing import Optional

from kvlint.analysis.findings import Fix
from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.facts import load_facts
from kvlint.helpers.args import missing_keyword
from kvlint.helpers.fixes import add_keyword

FACTS = load_facts()

# Heuristic HEAD_DIM_NAMES: the names a head dimension goes by in the corpus.
HEAD_DIM_NAMES = ("head_dim", "head_size")


def known_head_dim(call: ast.Call, ctx: FileContext) -> Optional[str]:
    """The expression holding the head dim at `call`, or None. Only two cases count:
    a parameter or an earlier local assignment of `head_dim`/`head_size` in the enclosing
    function, or -- in a method -- `self.head_dim`/`self.head_size` assigned anywhere in the
    class. Never `query.shape[-1]`: with BSH/TND layouts that is heads * head_dim."""
    fn = ctx.index.enclosing_function(call)
    if fn is None:
        return None
    params = [a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs]
    for name in HEAD_DIM_NAMES:
        if name in params:
            return name
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id in HEAD_DIM_NAMES \
                and node.lineno < call.lineno:
            return node.id
    cls = ctx.index.enclosing_class(call)
    if cls is None or not params or params[0] != "self":
        return None
    for node in ast.walk(cls):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and node.attr in HEAD_DIM_NAMES \
                and isinstance(node.value, ast.Name) and node.value.id == "self":
            return f"self.{node.attr}"
    return None


def scale_fix(call: ast.Call, keyword: str, ctx: FileContext) -> Optional[Fix]:
    head_dim = known_head_dim(call, ctx)
    if head_dim is None:
        return None
    edit = add_keyword(call, f"{keyword}={head_dim} ** -0.5", ctx)
    if edit is None:
        return None
    return Fix(f"pass {keyword}={head_dim} ** -0.5", (edit,), safe=False)


@register
class MissingScale(Rule):
    code = "KV103"
    operators = FACTS.family("scale_readers")

    def check_call(self, oc, ctx: FileContext):
        finding = missing_keyword(self.code, oc, ctx, "scale",
                                  "the softmax scale defaults to 1.0, so the attention is unscaled; "
                                  "pass `{keyword}=head_dim ** -0.5`", scale_fix)
        if finding is not None:
            yield finding
