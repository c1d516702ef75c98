"""KV110 (static half): a literal input_layout npu_fusion_attention does not accept (docs:
rules/codes/KV110.toml; the runtime half checks every FA-family layout and rank)."""
from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.facts import load_facts
from kvlint.helpers.roles import role_node, role_values, spelling

FACTS = load_facts()
# flash_attention_score_infershape.cpp: "The inputLayout should be BSH/SBH/BSND/BNSD/TND
# (case-insensitive)"; rules/facts/fa_contracts.toml [fa_contracts.fusion], also read by the guard
FUSION_LAYOUTS = tuple(FACTS.table("fa_contracts")["fusion"]["layouts"])


@register
class FusionLayoutUnknown(Rule):
    code = "KV110"
    operators = FACTS.family("fusion_attention")

    def check_call(self, oc, ctx: FileContext):
        if oc.variant == "workspace":
            return  # the real call with the same layout is reported
        keyword = spelling(oc.name, "layout")
        wrong = []
        for value in role_values(oc, ctx, "layout"):
            for v in ctx.values.literal_values(value, oc.call):
                if isinstance(v, str) and v.upper() not in FUSION_LAYOUTS and v not in wrong:
                    wrong.append(v)
        if not wrong:
            return
        shown = " / ".join(repr(v) for v in wrong)
        fa = [v for v in wrong if v.upper() in FACTS.fa.layout_rank]
        note = f" ({' / '.join(fa)}: a fused_infer_attention_score layout)" if fa else ""
        yield ctx.finding(
            self.code, role_node(oc, ctx, "layout") or oc.call.func,
            f"{oc.name} with {keyword} {shown}: the operator accepts only "
            f"{'/'.join(FUSION_LAYOUTS)} and rejects the call{note}; pass the layout the query "
            f"really has", anchor=oc.call)
