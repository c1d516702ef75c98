"""KV207: a literal sparse_mode outside the documented set (docs: rules/codes/KV207.toml)."""
from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.facts import load_facts
from kvlint.helpers.args import int_literals, literals
from kvlint.helpers.roles import role_node

FACTS = load_facts()


@register
class SparseModeUndocumented(Rule):
    code = "KV207"
    operators = FACTS.family("window_readers")

    def check_call(self, oc, ctx: FileContext):
        found = literals(oc, ctx, "sparse_mode")
        if not found:
            return
        allowed = FACTS.operator(oc.name).sparse_modes or ()
        wrong = sorted(set(v for v in int_literals(found) if v not in allowed))
        if not wrong:
            return
        node = role_node(oc, ctx, "sparse_mode") or oc.call.func
        v = wrong[0]
        reserved = FACTS.fa.sparse.reserved
        elsewhere = [name for name in self.operators if v in (FACTS.operator(name).sparse_modes or ())]
        if v in reserved:
            what = f"is a reserved mode ({', '.join(reserved.values())}) that is not implemented"
        elif elsewhere:
            what = f"({FACTS.fa.sparse.named.get(v, 'this mode')}) exists only in " \
                f"{', '.join(FACTS.versions.label(name) for name in elsewhere)}"
        else:
            what = "is not a sparse mode"
        yield ctx.finding(
            self.code, node,
            f"sparse_mode={v} {what}: {oc.name} accepts "
            f"{', '.join(map(str, allowed))} and raises on anything else", anchor=oc.call)
