"""KV502: npu_kv_rmsnorm_rope_cache given the nope cache as k_cache and the rope cache as
ckv_cache (docs: rules/codes/KV502.toml)."""
import ast
import re
from typing import Optional

from kvlint.analysis.module import dotted_name
from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.facts import load_facts
from kvlint.helpers.args import param_values
from kvlint.helpers.tensors import NZ_LAST_DIMS, literal_last_dim

FACTS = load_facts()

_NOPE = re.compile(r"nope|ckv|c_kv|latent", re.IGNORECASE)
_ROPE = re.compile(r"rope|(^|_)k?pe($|_)", re.IGNORECASE)


def _name(expr: ast.expr) -> str:
    while isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
        expr = expr.func.value
    return (dotted_name(expr) or "").split(".")[-1]


def _is_rope_name(name: str) -> bool:
    return bool(_ROPE.search(name)) and not _NOPE.search(name)


@register
class RmsnormCachesSwapped(Rule):
    code = "KV502"
    operators = FACTS.family("rmsnorm_rope_cache")

    def check_call(self, oc, ctx: FileContext):
        k = param_values(oc, ctx, "k_cache")
        ckv = param_values(oc, ctx, "ckv_cache")
        if len(k) != 1 or len(ckv) != 1:
            return
        reason = self._swapped(k[0], ckv[0], ctx)
        if reason:
            yield ctx.finding(self.code, k[0],
                              f"{oc.name}'s `k_cache` is the rope cache (last dim = cos.size(-1), "
                              f"64 for MLA) and `ckv_cache` the nope/latent cache (last dim = "
                              f"gamma.size(0)), but {reason}: swap the two arguments", anchor=oc.call)

    @staticmethod
    def _swapped(k: ast.expr, ckv: ast.expr, ctx: FileContext) -> Optional[str]:
        kw, cw = literal_last_dim(k, ctx), literal_last_dim(ckv, ctx)
        if kw is not None and cw is not None and kw not in NZ_LAST_DIMS and cw not in NZ_LAST_DIMS \
                and kw > cw:
            return f"the cache passed as `k_cache` is {kw} wide and the one passed as `ckv_cache` {cw}"
        kn, cn = _name(k), _name(ckv)
        if _NOPE.search(kn) and _is_rope_name(cn):
            return f"`{kn}` is passed as `k_cache` and `{cn}` as `ckv_cache`"
        return None
