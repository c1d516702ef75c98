"""KV504: cann_ops_transformer.kv_compress_epilog with a literal head dim, group size or mode
outside the operator's constraints (docs: rules/codes/KV504.toml)."""
from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.helpers.args import param_values
from kvlint.helpers.epilog import EPILOG
from kvlint.helpers.tensors import literal_last_dim


def _default(oc, name: str):
    param = oc.operator.param(name)
    return None if param is None or param.required else param.default


@register
class EpilogBadSize(Rule):
    code = "KV504"
    operators = (EPILOG.name,)

    def check_call(self, oc, ctx: FileContext):
        if oc.operator.namespace != EPILOG.limits_namespace:
            return  # the limits are that binding's kernel's
        xs = param_values(oc, ctx, "x")
        d = literal_last_dim(xs[0], ctx) if len(xs) == 1 else None
        rope, d_max = EPILOG.rope_cols, EPILOG.d_max
        if d is not None and not EPILOG.head_dim_ok(d):
            yield ctx.finding(self.code, xs[0],
                              f"x's last dim is {d}: kv_compress_epilog needs d % {EPILOG.d_multiple} == 0 and "
                              f"{EPILOG.d_min_exclusive} < d <= {d_max} (the last {rope} columns are the rope "
                              f"part, the rest is quantized in groups of 64); the call fails in tiling",
                              anchor=oc.call)
        modes = self._literals(oc, ctx, "quant_mode", _default(oc, "quant_mode"))
        for node, mode in modes:
            if isinstance(mode, str) and mode.lower() not in EPILOG.quant_modes:
                yield ctx.finding(self.code, node,
                                  f"quant_mode {mode!r} is not one of {', '.join(map(repr, EPILOG.quant_modes))}",
                                  anchor=oc.call)
        if not any(isinstance(m, str) and m.lower() == EPILOG.fp4_mode for _, m in modes):
            return
        groups = EPILOG.mode2_groups
        for node, group in self._literals(oc, ctx, "quant_group_size", _default(oc, "quant_group_size")):
            if not isinstance(group, int):
                continue
            if group not in groups:
                # (d - 64) % group == 0 then follows from d % 64 == 0
                shown = ", ".join(map(str, groups[:-1])) + f" or {groups[-1]}"
                yield ctx.finding(self.code, node,
                                  f"quant_group_size {group} with quant_mode '{EPILOG.fp4_mode}': only "
                                  f"{shown} are supported; the call fails in tiling", anchor=oc.call)

    @staticmethod
    def _literals(oc, ctx: FileContext, name: str, default):
        values = param_values(oc, ctx, name)
        if not values:
            return [(oc.call.func, default)] if ctx.args(oc.call).complete else []
        out = []
        for v in values:
            for lit in ctx.values.literal_values(v, oc.call):
                out.append((v, lit))
        return out
