"""KV101: a keyword of the other FA version (docs: rules/codes/KV101.toml)."""
from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.facts import load_facts
from kvlint.helpers.keywords import other_version_name, rename_fix, unknown_keywords

FACTS = load_facts()


@register
class OtherVersionKeyword(Rule):
    code = "KV101"
    operators = FACTS.family("fa")

    def check_call(self, oc, ctx: FileContext):
        for kw in unknown_keywords(oc, ctx):
            hit = other_version_name(oc.name, kw.name, ctx)
            if hit is None:
                continue
            version, right = hit
            this = "v2" if version == "v1" else "v1"
            where = f" (from `**{kw.via_dict}`)" if kw.via_dict else ""
            if right:
                message = (f"`{kw.name}` is the FA {version} name{where}; {oc.name} ({this}) takes "
                           f"`{right}`: this call raises when it first runs")
                fix = rename_fix(kw, right, ctx)
            else:
                message = (f"`{kw.name}` exists only in FA {version}{where}; {oc.name} ({this}) has "
                           f"no such keyword: this call raises when it first runs")
                fix = None
            yield ctx.finding(self.code, kw.node, message, fix, anchor=oc.call)
