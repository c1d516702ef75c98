"""KV102: a keyword that is in no version of the operator's schema (docs: rules/codes/KV102.toml)."""
import difflib

from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.facts import load_facts
from kvlint.helpers.epilog import other_binding_keyword
from kvlint.helpers.keywords import other_version_name, rename_fix, unknown_keywords

FACTS = load_facts()
FA = FACTS.family("fa")


@register
class UnknownKeyword(Rule):
    code = "KV102"
    operators = FACTS.family("keyword_checked")

    def check_call(self, oc, ctx: FileContext):
        hints = FACTS.keyword_hints.get(oc.name, {})
        for kw in unknown_keywords(oc, ctx):
            if oc.name in FA and other_version_name(oc.name, kw.name, ctx) is not None:
                continue  # KV101's
            if other_binding_keyword(oc, kw.name, ctx.catalog) is not None:
                continue  # KV503's: another kv_compress_epilog binding's keyword
            hint = hints.get(kw.name)
            right = hint.use if hint is not None else ""
            if not right:
                close = difflib.get_close_matches(kw.name, sorted(oc.operator.keyword_names), n=1, cutoff=0.6)
                right = close[0] if close else ""
            said = f"; did you mean `{right}`?" if right else ""
            where = f" (from `**{kw.via_dict}`)" if kw.via_dict else ""
            message = (f"{oc.name} has no keyword `{kw.name}`{where}: this call raises "
                       f"RuntimeError when it first runs{said}")
            fix = rename_fix(kw, right, ctx) if hint is not None and hint.fix else None
            yield ctx.finding(self.code, kw.node, message, fix, anchor=oc.call)
