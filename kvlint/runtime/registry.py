"""The contracts' registry, and `check_call`, the public entry point that runs them on one call.

Each family (`kvlint/runtime/families/<family>/contracts.py`) registers its checks for operator
base names with `@contract(...)`. The guard asks `contracts_for(op)` once per operator at patch
time; anything else (the CPU emulation, a test) calls `check_call(op_name, bound_args)`, which
needs no patching and returns the findings of that one call.

Family modules import only this module, `kvlint.runtime.call` and the facts; never the guard."""
from __future__ import annotations

import warnings
from typing import Any, Callable, Dict, List, Mapping, Optional

_REGISTRY: Dict[str, List[Callable]] = {}
_loaded = False

# The order contracts run in, whatever order their modules were imported in: the FA view
# first (fa's fa_view sets call.view for the rest), the writers' slot values and the stateful
# kv_len discipline last.
_MODULE_ORDER = ("fa.contracts", "fa.paged", "fusion.contracts", "mla.contracts", "cache_write.contracts",
                 "kvlen.contracts")
# Contracts that keep state across calls (KV401): run by the guard; by check_call on request.
STATEFUL_MODULES = frozenset({"kvlen.contracts"})


def contract(*names: str):
    def register(fn):
        for name in names:
            _REGISTRY.setdefault(name, []).append(fn)
        return fn
    return register


def _load() -> None:
    global _loaded
    if not _loaded:
        from kvlint.runtime.families.cache_write import contracts as _cw  # noqa: F401  (registration)
        from kvlint.runtime.families.fa import contracts as _fa  # noqa: F401  (registration)
        from kvlint.runtime.families.fa import paged as _paged  # noqa: F401
        from kvlint.runtime.families.fusion import contracts as _fusion  # noqa: F401
        from kvlint.runtime.families.kvlen import contracts as _kvlen  # noqa: F401
        from kvlint.runtime.families.mla import contracts as _mla  # noqa: F401
        _loaded = True


def _module(fn) -> str:
    return ".".join(fn.__module__.split(".")[-2:])


def _rank(fn) -> int:
    module = _module(fn)
    return _MODULE_ORDER.index(module) if module in _MODULE_ORDER else len(_MODULE_ORDER)


def base_name(name: str) -> str:
    """`_X_get_max_workspace` is checked as X (same arguments, same contracts)."""
    from kvlint.facts import load_facts

    return load_facts().namespaces.base_name(name)


def contracts_named(name: str) -> List[Callable]:
    _load()
    return sorted(_REGISTRY.get(base_name(name), ()), key=_rank)  # stable: registration order within a module


def contracts_for(op) -> List[Callable]:
    return contracts_named(op.name)


def _catalog_operator(op_name: str, namespace: Optional[str]):
    from kvlint.catalog import load_catalog

    fallback = None
    for op in load_catalog().operators:
        if op.name == op_name and (namespace is None or op.namespace == namespace):
            if not op.overload:
                return op
            fallback = fallback or op
    return fallback


def check_call(op_name: str, bound_args: Mapping[str, Any], *, namespace: Optional[str] = None,
               checks: str = "meta", stateful: bool = False) -> list:
    """Run the contracts of one call of `op_name` (a torch_npu operator base name, e.g.
    "npu_fused_infer_attention_score") on `bound_args` (argument name -> value; schema defaults
    are filled in for what is missing) and return the `Violation`s, in contract order. Raises
    nothing for a broken call: `raise ContractError(f)` for each error-severity finding `f` to
    get the guard's raise mode. `checks="full"` also reads device tensor values. `stateful`
    also runs the cross-call kv_len discipline (KV401; off by default: the guard runs it).
    An unknown operator has no contracts: []. A crashing contract warns and is skipped."""
    from kvlint.runtime.call import Call

    op = _catalog_operator(op_name, namespace)
    if op is None:
        return []
    bound = {p.name: p.default for p in op.params if not p.required}
    bound.update(bound_args)
    call = Call(op, base_name(op.name), bound, dict(bound_args), (), 0, checks == "full")
    for fn in contracts_named(op.name):
        if not stateful and _module(fn) in STATEFUL_MODULES:
            continue
        try:
            fn(call)
        except Exception as exc:  # noqa: BLE001 - a contract must never break the caller
            warnings.warn(f"kvlint: contract {fn.__name__} could not check this {call.name} call "
                          f"({type(exc).__name__}: {exc}); skipped", RuntimeWarning, stacklevel=2)
    return call.findings
