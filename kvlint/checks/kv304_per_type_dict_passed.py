"""KV304: the framework's per-attention-type dict passed as block_table / slot_mapping
(docs: rules/codes/KV304.toml)."""
from __future__ import annotations

import ast
import weakref
from typing import FrozenSet

from kvlint.analysis.module import dotted_name
from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.facts import load_facts
from kvlint.helpers.args import param_values

FACTS = load_facts()

PARAMS = ("block_table", "slot_mapping", "slot_indices")
FIELDS = ("block_table", "slot_mapping")
# FRAMEWORK_METADATA: objects whose block_table / slot_mapping fields are documented as
# Dict[attn_type -> Tensor] (cann-recipes-infer's ForwardMetadata).
FRAMEWORK_METADATA = ("forward_metadata",)
# PER_TYPE_KEY: an index that selects an attention type or KV-cache group, not a tensor slice.
PER_TYPE_KEY_WORDS = ("type", "gid", "group")

_indexed_cache: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _per_type_key(key: ast.expr) -> bool:
    if isinstance(key, ast.Constant):
        return isinstance(key.value, str)
    name = dotted_name(key)
    return name is not None and any(w in name.split(".")[-1].lower() for w in PER_TYPE_KEY_WORDS)


def indexed_per_type(ctx: FileContext) -> FrozenSet[str]:
    """PER_TYPE_DICT_INDEXED: dotted names this file subscripts with a per-type key
    (`forward_metadata.block_table[self.attn_type]`)."""
    found = _indexed_cache.get(ctx.index)
    if found is None:
        names = set()
        for node in ctx.index.walk(ctx.index.tree):  # into a set: any order
            if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) \
                    and node.value.attr in FIELDS and _per_type_key(node.slice):
                name = dotted_name(node.value)
                if name:
                    names.add(name)
        found = _indexed_cache[ctx.index] = frozenset(names)
    return found


@register
class PerTypeDictPassed(Rule):
    code = "KV304"
    operators = FACTS.family("per_request_tensors")

    def check_call(self, oc, ctx: FileContext):
        for param in PARAMS:
            if oc.operator.param(param) is None:
                continue
            for value in param_values(oc, ctx, param):
                for leaf in ctx.values.candidates(value, oc.call):
                    if not (isinstance(leaf, ast.Attribute) and leaf.attr in FIELDS):
                        continue
                    name = dotted_name(leaf)
                    if name is None:
                        continue
                    receiver = name.split(".")[-2] if "." in name else ""
                    branch = None
                    if name in indexed_per_type(ctx):
                        why = f"this file indexes `{name}[...]` by attention type elsewhere"
                    elif receiver in FRAMEWORK_METADATA:
                        why = f"`{receiver}.{leaf.attr}` is a dict keyed by attention type"
                        branch = "FRAMEWORK_METADATA"
                    else:
                        continue
                    yield ctx.finding(
                        self.code, value,
                        f"`{param}` of {oc.name} gets `{name}` itself, but {why}: the operator "
                        f"needs the tensor of this layer's type; pass `{name}[self.attn_type]`",
                        anchor=oc.call, branch=branch)
                    return
