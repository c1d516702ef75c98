"""KV202: sparse_mode=2 (left-up causal) where 3 is documented (docs: rules/codes/KV202.toml)."""
from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.checks.operators import FA, PFA
from kvlint.checks.sparse import sparse_view


@register
class LeftUpCausal(Rule):
    code = "KV202"
    operators = FA + (PFA,)

    def check_call(self, oc, ctx: FileContext):
        view = sparse_view(oc, ctx)
        if 2 in view.modes and view.mode_node is not None:
            yield ctx.finding(self.code, view.mode_node,
                              "sparse_mode=2 is left-up causal: when the query is shorter than the "
                              "KV (chunked prefill, MTP, prefix cache) it hides the newest keys; use "
                              "sparse_mode=3 (right-down causal) as documented", anchor=oc.call)
