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
        facts = FACTS.operator(oc.name)
        allowed = facts.sparse_modes or ()
        wrong = sorted(set(v for v in int_literals(found) if v not in allowed))
        node = role_node(oc, ctx, "sparse_mode") or oc.call.func
        if not wrong:
            yield from self._layout_bound(oc, ctx, facts, set(int_literals(found)), node)
            return
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

    def _layout_bound(self, oc, ctx: FileContext, facts, modes, node):
        """npu_fusion_attention: modes 7/8 exist only for TND (varlen), 5 not for TND."""
        layouts = [v for v in (literals(oc, ctx, FACTS.keyword(oc.name, "layout") or "input_layout") or [])
                   if isinstance(v, str)]
        if not layouts or len(set(layouts)) != 1:
            return
        tnd = layouts[0].split("_")[0] == "TND"
        for v in sorted(modes):
            if (v in facts.tnd_only_sparse_modes and not tnd) or (v in facts.not_tnd_sparse_modes and tnd):
                need = "only with input_layout TND (varlen)" if not tnd else "not with input_layout TND"
                yield ctx.finding(
                    self.code, node,
                    f"sparse_mode={v} ({'a varlen band mode' if not tnd else 'prefix, non-compressed'}) "
                    f"is accepted {need}, but this {oc.name} call uses {layouts[0]}: it raises when it "
                    f"runs", anchor=oc.call)
                return
