"""KV107: query_rope without key_rope or the reverse (docs: rules/codes/KV107.toml)."""
from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.facts import load_facts
from kvlint.helpers.args import literals, omits, passes_value

FACTS = load_facts()

PAIR = ("query_rope", "key_rope")


@register
class RopePair(Rule):
    code = "KV107"
    operators = FACTS.family("mla_rope")

    def check_call(self, oc, ctx: FileContext):
        args = ctx.args(oc.call)
        for given, other in (PAIR, PAIR[::-1]):
            if not passes_value(oc, ctx, given):
                continue
            if omits(oc, ctx, other):
                absent = "does not pass"
            elif args.complete and all(v is None for v in literals(oc, ctx, other) or ()) \
                    and not any(k.conditional for k in args.keywords.get(other, [])):
                absent = "passes None for"
            else:
                continue
            node = args.keywords[given][0].node
            yield ctx.finding(
                self.code, node,
                f"{oc.name} gets `{given}` but {absent} `{other}`: the rope halves of query and key "
                f"go together (MLA), and the operator rejects one without the other; pass both or "
                f"neither", anchor=oc.call)
            return

