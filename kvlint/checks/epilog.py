"""Shared by the kv_compress_epilog rules (KV503, KV504) and KV102: the three same-named
bindings and what each calls its keywords and quant modes."""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from kvlint.analysis.resolve import OperatorCall
from kvlint.catalog import Catalog

EPILOG = "kv_compress_epilog"
BINDINGS = ("cann_ops_transformer", "_C_ascend", "custom")
SHOWN = {"cann_ops_transformer": "torch.ops.cann_ops_transformer", "_C_ascend": "torch.ops._C_ascend",
         "custom": "torch.ops.custom"}
# The same concept under each binding's name.
SAME_CONCEPT = (
    {"cann_ops_transformer": "cache", "_C_ascend": "kv_compress_cache", "custom": "kv_compress_cache"},
    {"cann_ops_transformer": "round_scale", "_C_ascend": "round_scale_flag", "custom": "round_scale_flag"},
    {"cann_ops_transformer": "x_scale", "_C_ascend": None, "custom": "scale"},
)
# cann_ops_transformer's string modes and the aclnn int each maps to (seed 004).
STRING_MODES = {"fp8_bf16": 0, "fp8_e8m0": 1, "hifloat8_fp4": 2}
MODE_MEANING = {
    "cann_ops_transformer": "'fp8_bf16' (0), 'fp8_e8m0' (1, MX-FP8 e8m0 scales) or 'hifloat8_fp4' (2)",
    "_C_ascend": "an int: 1 = group FP8, 2 = MXFP8",
    "custom": "an int (default 2)",
}


def takes_string_mode(namespace: str) -> bool:
    return namespace == "cann_ops_transformer"


def other_binding_keyword(oc: OperatorCall, keyword: str, catalog: Catalog) -> Optional[Tuple[List[str], Optional[str]]]:
    """([other bindings that take `keyword`], this binding's name for it) when `keyword` is
    not this kv_compress_epilog binding's but another's; else None."""
    if oc.name != EPILOG or keyword in oc.operator.keyword_names:
        return None
    owners = []
    for ns in BINDINGS:
        op = catalog.operator(ns, EPILOG)
        if ns != oc.operator.namespace and op is not None and keyword in op.keyword_names:
            owners.append(ns)
    if not owners:
        return None
    here = None
    for concept in SAME_CONCEPT:
        if keyword in concept.values():
            here = concept.get(oc.operator.namespace)
    return owners, here
