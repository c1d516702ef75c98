"""KV108: an MLA absorb call whose num_key_value_heads is not 1 (docs: rules/codes/KV108.toml)."""
from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.facts import load_facts
from kvlint.helpers.args import int_literals, literals, omits, param_values, passes_value, same_expression

FACTS = load_facts()


def is_absorb_call(oc, ctx: FileContext) -> bool:
    """ABSORB_CALL: key and value are the same expression (the latent cache) and the call
    passes query_rope."""
    keys, values = param_values(oc, ctx, "key"), param_values(oc, ctx, "value")
    if len(keys) != 1 or len(values) != 1 or not passes_value(oc, ctx, "query_rope"):
        return False
    return same_expression(keys[0], values[0], ctx)


@register
class AbsorbKvHeads(Rule):
    code = "KV108"
    operators = FACTS.family("mla_rope")

    def check_call(self, oc, ctx: FileContext):
        if not is_absorb_call(oc, ctx):
            return
        found = literals(oc, ctx, "num_key_value_heads")
        if found is None:
            if not omits(oc, ctx, "num_key_value_heads"):
                return
            node, said = oc.call.func, "without `num_key_value_heads` (default 0 = as many KV heads as query heads)"
        else:
            wrong = sorted(set(v for v in int_literals(found) if v != 1))
            if not wrong:
                return
            node = ctx.args(oc.call).keywords["num_key_value_heads"][0].node
            said = f"with num_key_value_heads={wrong[0]}"
        yield ctx.finding(
            self.code, node,
            f"{oc.name} is an MLA absorb call (key and value are the same latent cache, with "
            f"query_rope) {said}: the latent cache has one head, so the GQA ratio is wrong; "
            f"pass num_key_value_heads=1", anchor=oc.call)
