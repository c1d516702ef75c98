"""KV206: the sparse_mode 2/3/4 mask is not the compressed 2048x2048 one
(docs: rules/codes/KV206.toml)."""
from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.facts import load_facts
from kvlint.helpers.masks import innermost_factory, mask_constructions
from kvlint.helpers.sparse import sparse_view
from kvlint.helpers.tensors import factory_shape

FACTS = load_facts()
MASK = FACTS.fa.mask
_RANKS = range(min(map(len, MASK.compressed_shapes)), max(map(len, MASK.compressed_shapes)) + 1)


def wrong_shape(shape) -> bool:
    if shape is None or len(shape) not in _RANKS or any(d is None for d in shape):
        return False
    return not MASK.is_compressed_shape(shape)


@register
class MaskNot2048(Rule):
    code = "KV206"
    operators = FACTS.family("window_readers")

    def check_call(self, oc, ctx: FileContext):
        modes = sorted(m for m in sparse_view(oc, ctx).modes if m in MASK.compressed_modes)
        if not modes:
            return
        for site in mask_constructions(oc, ctx):
            factory = innermost_factory(site, ctx)
            if factory is None:
                continue
            shape = factory_shape(factory, ctx)
            if shape is not None and wrong_shape(shape):
                shown = "x".join(map(str, shape))
                yield ctx.finding(self.code, factory,
                                  f"mask of shape {shown} reaches {oc.name} (line {oc.call.lineno}) with "
                                  f"sparse_mode {'/'.join(map(str, modes))}, which takes only the "
                                  f"{MASK.shown_shapes('compressed mask')}, "
                                  f"whatever the model's max length")
