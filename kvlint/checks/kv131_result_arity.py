"""KV131: an operator result unpacked into the wrong number of names
(docs: rules/codes/KV131.toml)."""
import re

from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.facts import load_facts
from kvlint.helpers.results import result_target, unpacked_names

FACTS = load_facts()

_ONE_TENSOR = re.compile(r"^Tensor(\(\w!?\))?$")


def returned_values(oc) -> int:
    """1 for a single Tensor, the tuple size for a tuple, 0 when unknown or a list
    (`Tensor[]`). The workspace query returns one tensor, whatever its base operator."""
    if oc.variant == "workspace":
        return 1
    returns = oc.operator.schema.rsplit("->", 1)[-1].strip()
    if _ONE_TENSOR.match(returns):
        return 1
    if returns.startswith("(") and returns != "()":
        return oc.operator.returns
    return 0


@register
class ResultArity(Rule):
    code = "KV131"
    operators = FACTS.family("tuple_results")  # return counts: rules/operators.json

    def check_call(self, oc, ctx: FileContext):
        n = returned_values(oc)
        if n == 0:
            return
        target = result_target(oc, ctx)
        names = unpacked_names(target)
        if names is None or len(names) == n:
            return
        if n == 1:
            message = (f"{oc.name}{' (workspace query)' if oc.variant == 'workspace' else ''} returns "
                       f"one tensor, not a tuple: unpacking it into {len(names)} names splits the "
                       f"tensor along dim 0 (and raises unless that dim is {len(names)}); assign it "
                       f"to one name")
        else:
            message = (f"{oc.name} returns {n} values; unpacking into {len(names)} names raises "
                       f"ValueError when it runs; unpack exactly {n} (use `_` for the ones you drop)")
        yield ctx.finding(self.code, target, message, anchor=oc.call)
