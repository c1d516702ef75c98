"""KV205: an atten_mask built with a floating dtype (docs: rules/codes/KV205.toml)."""
import ast
from typing import Optional

from kvlint.analysis.dtypes import receiver_is_module
from kvlint.analysis.findings import Fix
from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.facts import load_facts
from kvlint.helpers.fixes import module_head, set_keyword
from kvlint.helpers.masks import mask_constructions

FACTS = load_facts()

LITERAL_FACTORIES = ("ones", "zeros")


def bool_fix(site: ast.expr, ctx: FileContext) -> Optional[Fix]:
    """Safe fix, only where the mask is a literal `torch.ones/zeros(...)` call, bare or directly
    inside `torch.triu/tril(...)`: set `dtype=torch.bool` on that factory (0/1 become
    False/True, which mean the same to the operator)."""
    call = site
    if _module_call(call, ("triu", "tril")) and call.args:
        call = call.args[0]
    if not _module_call(call, LITERAL_FACTORIES):
        return None
    edit = set_keyword(call, "dtype", f"{module_head(call)}.bool", ctx)
    return Fix("build the mask with dtype=torch.bool", (edit,)) if edit else None


def _listed(dtypes) -> str:
    return ", ".join(dtypes[:-1]) + f" and {dtypes[-1]}" if len(dtypes) > 1 else dtypes[0]


def _module_call(node: ast.expr, names) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in names and receiver_is_module(node.func.value))


@register
class FloatMask(Rule):
    code = "KV205"
    operators = FACTS.family("mask_dtype_readers")

    def check_call(self, oc, ctx: FileContext):
        accepted = FACTS.operator(oc.name).mask_dtypes or FACTS.fa.mask.dtypes
        for site in mask_constructions(oc, ctx):
            dtype = ctx.dtypes.dtype_of_construction(site)
            # float: rejected by every operator; an 8-bit integer one only where the operator's
            # own dtype list leaves it out (npu_fusion_attention: bool and uint8, no int8)
            if dtype == "float" or (dtype == "int8" and dtype not in accepted):
                shown = "a floating tensor" if dtype == "float" else "an int8 tensor"
                yield ctx.finding(self.code, site,
                                  f"this mask reaches {oc.name}'s `atten_mask` (line {oc.call.lineno}) "
                                  f"as {shown}: only {_listed(accepted)} masks are accepted "
                                  f"(True/1 = masked); build it with dtype=torch.bool", bool_fix(site, ctx))
