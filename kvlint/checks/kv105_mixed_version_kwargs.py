"""KV105: one kwargs dict holding FA v1 and FA v2 keywords (docs: rules/codes/KV105.toml)."""
from __future__ import annotations

import ast
from typing import Dict, List, Tuple

from kvlint.analysis.values import KeywordArg
from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.facts import load_facts

FACTS = load_facts()


def version_only_names(ctx: FileContext) -> Tuple[frozenset, frozenset]:
    v1_op, v2_op = ctx.catalog.operator("npu", FACTS.versions.v1), ctx.catalog.operator("npu", FACTS.versions.v2)
    assert v1_op is not None and v2_op is not None, "rules/operators.json lacks an FA version"
    v1, v2 = v1_op.keyword_names, v2_op.keyword_names
    return v1 - v2, v2 - v1


@register
class MixedVersionKwargs(Rule):
    code = "KV105"
    operators = FACTS.family("fa")

    def check_module(self, ctx: FileContext):
        v1_only, v2_only = version_only_names(ctx)
        groups: Dict[Tuple[int, str], List[KeywordArg]] = {}
        anchors: Dict[Tuple[int, str], ast.Call] = {}
        for oc in ctx.op_calls:
            if oc.name not in self.operators:
                continue
            scope = ctx.index.enclosing_scope(oc.call)
            for kw in ctx.args(oc.call).all():
                if isinstance(kw.node, ast.keyword) and ctx.index.parent_of(kw.node) is oc.call:
                    continue  # written at the call: KV101's business
                key = (id(scope), kw.via_dict or f"@{id(ctx.index.parent_of(kw.node))}")
                items = groups.setdefault(key, [])
                if all(k.node is not kw.node for k in items):
                    items.append(kw)
                anchors.setdefault(key, oc.call)
        for key, items in groups.items():
            old = sorted({k.name for k in items if k.name in v1_only})
            new = sorted({k.name for k in items if k.name in v2_only})
            if not old or not new:
                continue
            if all(k.conditional for k in items if k.name in v1_only or k.name in v2_only):
                continue  # e.g. `if v2: d["softmax_scale"] = s else: d["scale"] = s`
            call = anchors[key]
            name = key[1] if not key[1].startswith("@") else None
            node = self._construction(name, call, items, ctx)
            label = f"kwargs dict `{name}`" if name else "this kwargs dict"
            yield ctx.finding(
                self.code, node,
                f"{label} holds FA v1 keywords ({_names(old)}) and FA v2 keywords ({_names(new)}): "
                f"whichever version it is passed to raises on the other version's keys when the "
                f"call first runs; keep one dict per version (rename map: rules/facts/operators.toml)",
                anchor=node)

    @staticmethod
    def _construction(name, call, items, ctx: FileContext) -> ast.AST:
        """Where the dict is built: its first assignment before the call, else its first key."""
        if name:
            scope = ctx.index.enclosing_function(call) or ctx.index.tree
            for stmt, value in ctx.values.assignments(scope).get(name, []):
                if stmt.lineno < call.lineno:
                    return value
        first = min(items, key=lambda k: (k.node.lineno, k.node.col_offset))
        parent = ctx.index.parent_of(first.node)
        return parent if isinstance(parent, (ast.Dict, ast.Call)) else first.node


def _names(names) -> str:
    shown = ", ".join(f"`{n}`" for n in names[:3])
    return shown + (", ..." if len(names) > 3 else "")
