"""KV503: kv_compress_epilog called with another binding's keyword names or quant_mode type
(docs: rules/codes/KV503.toml)."""
from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.facts import load_facts
from kvlint.helpers.args import param_values
from kvlint.helpers.epilog import EPILOG, other_binding_keyword

SHOW = load_facts().namespaces.show


@register
class EpilogOtherBinding(Rule):
    code = "KV503"
    operators = (EPILOG.name,)

    def check_call(self, oc, ctx: FileContext):
        ns = oc.operator.namespace
        here = SHOW(ns)
        for kw in ctx.args(oc.call).all():
            hit = other_binding_keyword(oc, kw.name, ctx.catalog)
            if hit is None:
                continue
            owners, right = hit
            hint = f"; this binding calls it `{right}`" if right else "; this binding has no such parameter"
            yield ctx.finding(self.code, kw.node,
                              f"`{kw.name}` is a keyword of {' and '.join(SHOW(o) for o in owners)}"
                              f".kv_compress_epilog, not of {here}.kv_compress_epilog: this call "
                              f"raises RuntimeError when it first runs{hint}. The three bindings "
                              f"also differ in quant_mode (check it too)", anchor=oc.call)
        for value in param_values(oc, ctx, "quant_mode"):
            for lit in ctx.values.literal_values(value, oc.call):
                wrong_str = isinstance(lit, str) and not EPILOG.takes_string_mode(ns)
                wrong_int = isinstance(lit, int) and not isinstance(lit, bool) and EPILOG.takes_string_mode(ns)
                if wrong_str or wrong_int:
                    yield ctx.finding(self.code, value,
                                      f"quant_mode {lit!r} has the form of another binding's mode: "
                                      f"{here}.kv_compress_epilog takes {EPILOG.mode_meaning[ns]}; mode 2 "
                                      f"means hifloat8+FP4 in cann_ops_transformer but MXFP8 in "
                                      f"_C_ascend, so translate the scheme, not the number",
                                      anchor=oc.call)
                    break
