"""KV223: a mask of unknown dtype cast to int8/uint8 for atten_mask
(docs: rules/codes/KV223.toml)."""
import ast
import re
from typing import Optional

from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.facts import load_facts
from kvlint.helpers.masks import cast_at_top, mask_constructions, unchecked_foreign_mask

MASK_READERS = load_facts().family("mask_readers")

INT_DTYPES = ("int8", "uint8")
INT_METHODS = {"byte": "uint8", "char": "int8"}
# what a finding needs in the bytes: an int8/uint8 dtype, or `.byte(` / `.char(` however spaced
INT_CAST_PATTERN = re.compile(rb"int8|\.\s*(?:byte|char)\s*\(")
# the same condition for the pre-filter, as all-of groups of any-of words (`int8` or both
# `byte`/`char` and the call pattern): plain substring tests decide most files, ~3x faster
_CALL_PATTERN = re.compile(rb"\.\s*(?:byte|char)\s*\(")
PREFILTER_GROUPS = (("int8", "byte", "char"), ("int8", _CALL_PATTERN))


def int_cast(expr: ast.expr) -> Optional[ast.Call]:
    """The `.to(torch.int8)` / `.type(torch.uint8)` / `.byte()` / `.char()` at the top of
    `expr`, looking through device/shape-keeping calls."""
    return cast_at_top(expr, INT_DTYPES, INT_METHODS)


@register
class MaskCastToInt(Rule):
    code = "KV223"
    operators = MASK_READERS

    def required_words(self, settings):
        return PREFILTER_GROUPS

    def check_call(self, oc, ctx: FileContext):
        if oc.variant == "workspace":
            return
        for site in mask_constructions(oc, ctx):
            cast = int_cast(site)
            if cast is None:
                continue
            source = cast.func.value
            name = unchecked_foreign_mask(source, cast, ctx)
            if name is None:
                continue
            how = ctx.text(cast)[len(ctx.text(source)):]
            yield ctx.finding(
                self.code, cast,
                f"`{name}` is cast with `{how}` for {oc.name}'s mask (line {oc.call.lineno}) "
                f"without a look at its dtype: a Hugging Face additive mask holds the float "
                f"dtype's minimum where masked, and what that becomes as an integer depends "
                f"on the dtype (it can be 0 = kept), while a 1/0 keep mask comes out "
                f"inverted; say the convention: `({name} < 0)` for an additive mask, "
                f"`({name} == 0)` for a keep mask")
