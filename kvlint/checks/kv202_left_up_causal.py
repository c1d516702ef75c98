"""KV202: sparse_mode=2 (left-up causal) where 3 is documented (docs: rules/codes/KV202.toml)."""
import ast

from kvlint.analysis.findings import Fix
from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.facts import load_facts
from kvlint.helpers.fixes import set_keyword
from kvlint.helpers.sparse import sparse_view

FACTS = load_facts()


@register
class LeftUpCausal(Rule):
    code = "KV202"
    operators = FACTS.family("sparse_mode_readers")

    def check_call(self, oc, ctx: FileContext):
        view = sparse_view(oc, ctx)
        if 2 in view.modes and view.mode_node is not None:
            yield ctx.finding(self.code, view.mode_node,
                              "sparse_mode=2 is left-up causal: when the query is shorter than the "
                              "KV (chunked prefill, MTP, prefix cache) it hides the newest keys; use "
                              "sparse_mode=3 (right-down causal) as documented", right_down_fix(view.mode_node, ctx),
                              anchor=oc.call)


def right_down_fix(node, ctx: FileContext):
    """Unsafe fix, only for a literal `sparse_mode=2` in the call itself: make it 3. Unsafe
    because it changes which keys are visible when the query is shorter than the KV (which
    is the point, but only the author knows the mask and lengths match mode 3)."""
    call = ctx.index.parent_of(node)
    if isinstance(node, ast.keyword) and isinstance(node.value, ast.Constant) and node.value.value == 2 \
            and type(node.value.value) is int and isinstance(call, ast.Call):
        edit = set_keyword(call, node.arg, "3", ctx)  # a libcst transformation of the call
        return Fix("use sparse_mode=3 (right-down causal)", (edit,), safe=False) if edit else None
    return None
