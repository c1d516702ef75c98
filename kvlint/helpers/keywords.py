"""Shared by the keyword rules: which keywords an operator call passes that its schema lacks."""
from __future__ import annotations

import ast
from typing import Iterator, List, Optional, Tuple

from kvlint.analysis.findings import Fix
from kvlint.analysis.resolve import OperatorCall
from kvlint.analysis.values import KeywordArg
from kvlint.checks.base import FileContext
from kvlint.facts import load_facts


def unknown_keywords(oc: OperatorCall, ctx: FileContext) -> Iterator[KeywordArg]:
    allowed = oc.operator.keyword_names
    for kw in ctx.args(oc.call).all():
        if kw.name not in allowed:
            yield kw


def other_version_name(op_name: str, keyword: str, ctx: FileContext) -> Optional[Tuple[str, str]]:
    """(version label, right keyword or "") when `keyword` belongs to the other FA version.

    The right keyword is "" when the other version's keyword has no counterpart here."""
    versions = load_facts().versions
    if op_name == versions.v1:
        label, renames, other_name = "v2", versions.v2_to_v1, versions.v2
    elif op_name == versions.v2:
        label, renames, other_name = "v1", versions.v1_to_v2, versions.v1
    else:
        return None
    if renames.get(keyword):
        return label, renames[keyword]
    other = ctx.catalog.operator("npu", other_name)
    if other is not None and keyword in other.keyword_names:
        return label, ""
    return None


def misnamed(oc: OperatorCall, ctx: FileContext, keyword: str) -> List[KeywordArg]:
    """The arguments passed for `keyword` under another name that KV101 (the other FA
    version's name) or KV102 (a documented keyword hint, `scale` for `scale_value`) reports
    with `keyword` as the right name. Such a value is there, misnamed: the rules about that
    keyword being left at its default (KV103, KV104) or dropped by a wrapper (KV150) leave the
    call to KV101/KV102 (one mistake, one finding) -- when that rule runs: with KV101 (KV102)
    not enabled, nothing is subsumed, so no mistake goes unreported."""
    hints = load_facts().keyword_hints.get(oc.name, {})
    by_version, by_hint = ctx.settings.enabled("KV101"), ctx.settings.enabled("KV102")
    out = []
    for kw in unknown_keywords(oc, ctx):
        other = other_version_name(oc.name, kw.name, ctx)
        hint = hints.get(kw.name)
        if (by_version and other is not None and other[1] == keyword) or \
                (by_hint and other is None and hint is not None and hint.use == keyword):
            out.append(kw)
    return out


def rename_fix(kw: KeywordArg, new: str, ctx: FileContext) -> Optional[Fix]:
    """Rename a keyword where it is written: `name=`, a dict key or a `d["name"]` key."""
    node = kw.node
    if isinstance(node, ast.keyword):
        call = ctx.index.parent_of(node)
        if not isinstance(call, ast.Call):
            return None
        from kvlint.helpers.fixes import rename_keyword

        edit = rename_keyword(call, node, new, ctx)  # a libcst transformation of the call
        if edit is None:
            return None
    elif isinstance(node, ast.Constant) and isinstance(node.value, str):
        old = ctx.text(node)
        if len(old) < 2 or old[0] not in "\"'" or old[-1] != old[0]:
            return None
        edit = ctx.edit_replace(node, f"{old[0]}{new}{old[0]}")
    else:
        return None
    if kw.via_dict is not None and dict_feeds_several_calls(kw.via_dict, kw.node, ctx):
        return None  # no rename is right for every call the dict feeds
    return Fix(f"rename `{kw.name}` to `{new}`", (edit,), safe=True)


def dict_feeds_several_calls(name: str, at: ast.AST, ctx: FileContext) -> bool:
    """A `**name` dict unpacked into more than one call of the function: renaming one of its
    keys for one call may break the other (one dict shared by prefill and decode calls)."""
    scope = ctx.index.enclosing_function(at) or ctx.index.tree
    uses = 0
    for node in ast.walk(scope):
        if isinstance(node, ast.Call):
            uses += sum(1 for k in node.keywords if k.arg is None and isinstance(k.value, ast.Name)
                        and k.value.id == name)
    return uses > 1
