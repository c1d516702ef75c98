"""KV206: the sparse_mode 2/3/4 mask is not 2048x2048 (docs: rules/codes/KV206.toml)."""
from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.checks.masks import factory_shape, innermost_factory, mask_constructions
from kvlint.checks.operators import FA, PFA
from kvlint.checks.sparse import CAUSAL_OR_BAND, sparse_view

COMPRESSED = 2048


def wrong_shape(shape) -> bool:
    if shape is None or len(shape) < 2 or len(shape) > 4 or any(d is None for d in shape):
        return False
    return tuple(shape[-2:]) != (COMPRESSED, COMPRESSED) or any(d != 1 for d in shape[:-2])


@register
class MaskNot2048(Rule):
    code = "KV206"
    operators = FA + (PFA,)

    def check_call(self, oc, ctx: FileContext):
        modes = sorted(m for m in sparse_view(oc, ctx).modes if m in CAUSAL_OR_BAND)
        if not modes:
            return
        for site in mask_constructions(oc, ctx):
            factory = innermost_factory(site, ctx)
            if factory is None:
                continue
            shape = factory_shape(factory, ctx)
            if wrong_shape(shape):
                shown = "x".join(map(str, shape))
                yield ctx.finding(self.code, factory,
                                  f"mask of shape {shown} reaches {oc.name} (line {oc.call.lineno}) with "
                                  f"sparse_mode {'/'.join(map(str, modes))}, which takes only the "
                                  f"2048x2048 compressed mask (or 1x2048x2048, 1x1x2048x2048), "
                                  f"whatever the model's max length")
