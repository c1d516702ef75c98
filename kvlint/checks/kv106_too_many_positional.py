"""KV106: more than query, key, value passed by position (docs: rules/codes/KV106.toml)."""
from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.facts import load_facts

FACTS = load_facts()


@register
class TooManyPositional(Rule):
    code = "KV106"
    operators = FACTS.family("fused_attention")

    def check_call(self, oc, ctx: FileContext):
        positional = ctx.args(oc.call).positional
        allowed = oc.operator.positional_params
        if len(positional) <= len(allowed):
            return
        extra = positional[len(allowed)]
        names = ", ".join(p.name for p in allowed)
        yield ctx.finding(
            self.code, extra,
            f"{oc.name} takes only {names} by position; the {len(positional)} positional arguments "
            f"make the call raise TypeError when it runs: pass argument {len(allowed) + 1} and "
            f"later ones by keyword", anchor=oc.call)
