"""Shared by the kv_compress_epilog rules (KV503, KV504) and KV102: which of the three
same-named bindings owns a keyword (facts: rules/facts/cache_write.toml)."""
from __future__ import annotations

from typing import List, Optional, Tuple

from kvlint.analysis.resolve import OperatorCall
from kvlint.catalog import Catalog
from kvlint.facts import load_facts

EPILOG = load_facts().epilog


def other_binding_keyword(oc: OperatorCall, keyword: str, catalog: Catalog) -> Optional[Tuple[List[str], Optional[str]]]:
    """([other bindings that take `keyword`], this binding's name for it) when `keyword` is
    not this kv_compress_epilog binding's but another's; else None."""
    if oc.name != EPILOG.name or keyword in oc.operator.keyword_names:
        return None
    owners = []
    for ns in EPILOG.bindings:
        op = catalog.operator(ns, EPILOG.name)
        if ns != oc.operator.namespace and op is not None and keyword in op.keyword_names:
            owners.append(ns)
    if not owners:
        return None
    here = None
    for concept in EPILOG.same_concept:
        if keyword in concept.values():
            here = concept.get(oc.operator.namespace) or None
    return owners, here
