"""KV330: npu_scatter_pa_kv_cache without cache_mode on a cache the code shows as ND
(docs: rules/codes/KV330.toml)."""
from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.helpers.args import omits, param_values
from kvlint.helpers.tensors import is_nd_cache, is_nz_view


@register
class ScatterPaDefaultNz(Rule):
    code = "KV330"
    operators = ("npu_scatter_pa_kv_cache",)

    def check_call(self, oc, ctx: FileContext):
        if not omits(oc, ctx, "cache_mode"):
            return
        caches = param_values(oc, ctx, "key_cache") + param_values(oc, ctx, "value_cache")
        if not caches or any(is_nz_view(c, ctx) for c in caches):
            return
        if not any(is_nd_cache(c, ctx) for c in caches):
            return  # a layout the code does not show (a parameter): nothing to judge
        yield ctx.finding(self.code, oc.call.func,
                          "npu_scatter_pa_kv_cache without `cache_mode` writes the NZ layout "
                          "(default 'PA_NZ'), but this cache is built or viewed as ND, not as an NZ view "
                          "(`cache.view(nb, N*D // 16, bs, 16)`): an ND cache [nb, bs, N, D] is "
                          "filled in the wrong order and attention reads scrambled keys; pass "
                          "cache_mode=\"Norm\" for an ND cache, or cache_mode=\"PA_NZ\" to say the "
                          "NZ layout is meant")
