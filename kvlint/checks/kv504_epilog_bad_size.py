"""KV504: cann_ops_transformer.kv_compress_epilog with a literal head dim, group size or mode
outside the operator's constraints (docs: rules/codes/KV504.toml)."""
from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.checks.cache_args import arg_values, literal_last_dim
from kvlint.checks.epilog import EPILOG, STRING_MODES

ROPE = 64
MAX_D = 8192
FP4_GROUPS = (16, 32, 64)
DEFAULT_MODE, DEFAULT_GROUP = "fp8_e8m0", 64


@register
class EpilogBadSize(Rule):
    code = "KV504"
    operators = (EPILOG,)

    def check_call(self, oc, ctx: FileContext):
        if oc.operator.namespace != "cann_ops_transformer":
            return  # the seed's constraints are the ops-transformer kernel's
        xs = arg_values(oc, ctx, "x")
        d = literal_last_dim(xs[0], ctx) if len(xs) == 1 else None
        if d is not None and not (d % ROPE == 0 and ROPE < d <= MAX_D):
            yield ctx.finding(self.code, xs[0],
                              f"x's last dim is {d}: kv_compress_epilog needs d % 64 == 0 and "
                              f"64 < d <= 8192 (the last 64 columns are the rope part, the rest is "
                              f"quantized in groups of 64); the call fails in tiling", anchor=oc.call)
        modes = self._literals(oc, ctx, "quant_mode", DEFAULT_MODE)
        for node, mode in modes:
            if isinstance(mode, str) and mode.lower() not in STRING_MODES:
                yield ctx.finding(self.code, node,
                                  f"quant_mode {mode!r} is not one of {', '.join(map(repr, STRING_MODES))}",
                                  anchor=oc.call)
        if not any(isinstance(m, str) and m.lower() == "hifloat8_fp4" for _, m in modes):
            return
        for node, group in self._literals(oc, ctx, "quant_group_size", DEFAULT_GROUP):
            if not isinstance(group, int):
                continue
            if group not in FP4_GROUPS:
                # (d - 64) % group == 0 then follows from d % 64 == 0
                yield ctx.finding(self.code, node,
                                  f"quant_group_size {group} with quant_mode 'hifloat8_fp4': only 16, "
                                  f"32 or 64 are supported; the call fails in tiling", anchor=oc.call)

    @staticmethod
    def _literals(oc, ctx: FileContext, name: str, default):
        values = arg_values(oc, ctx, name)
        if not values:
            return [(oc.call.func, default)] if ctx.args(oc.call).complete else []
        out = []
        for v in values:
            for lit in ctx.values.literal_values(v, oc.call):
                out.append((v, lit))
        return out
