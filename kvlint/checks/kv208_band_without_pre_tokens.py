"""KV208: sparse_mode=4 (band) without a pre_tokens window (docs: rules/codes/KV208.toml)."""
from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.facts import load_facts
from kvlint.helpers.args import literals, omits
from kvlint.helpers.sparse import sparse_view

FACTS = load_facts()


@register
class BandWithoutPreTokens(Rule):
    code = "KV208"
    operators = FACTS.family("window_readers")

    def check_call(self, oc, ctx: FileContext):
        view = sparse_view(oc, ctx)
        if not set(FACTS.fa.sparse.band) & view.modes or view.mode_node is None:
            return
        name = FACTS.keyword(oc.name, "pre_tokens") or "pre_tokens"
        param = oc.operator.param(name)
        unlimited = param.default if param is not None and not param.required else None  # the schema's INT_MAX
        pre = literals(oc, ctx, name)
        if pre is None:
            if not omits(oc, ctx, name):
                return
            said = f"without `{name}`"
        elif pre and unlimited is not None and all(v == unlimited for v in pre):
            said = f"with {name}={unlimited}"
        else:
            return
        yield ctx.finding(
            self.code, view.mode_node,
            f"sparse_mode=4 (band) {said}: the window is unbounded, so the band is full causal "
            f"attention and the sliding window is silently dropped; pass {name}=<window> "
            f"and {FACTS.keyword(oc.name, 'next_tokens')}=0", anchor=oc.call)
