"""The contracts: small functions `check(call)` that report through `call.fail(...)`.

Each module registers its checks for operator base names with `@contract(...)`; the guard asks
`contracts_for(op)` once per operator at patch time."""
from __future__ import annotations

from typing import Callable, Dict, List

_REGISTRY: Dict[str, List[Callable]] = {}
_loaded = False


def contract(*names: str):
    def register(fn):
        for name in names:
            _REGISTRY.setdefault(name, []).append(fn)
        return fn
    return register


def _load() -> None:
    global _loaded
    if not _loaded:
        from kvlint.runtime.contracts import fa, kvlen, paged, writers  # noqa: F401  (registration)
        _loaded = True


# The order contracts run in, whatever order their modules were imported in: the FA view
# first (fa.fa_view sets call.view for the rest), the writers' slot values last.
_MODULE_ORDER = ("fa", "kvlen", "paged", "writers")


def _rank(fn) -> int:
    module = fn.__module__.rsplit(".", 1)[-1]
    return _MODULE_ORDER.index(module) if module in _MODULE_ORDER else len(_MODULE_ORDER)


def contracts_for(op) -> List[Callable]:
    from kvlint.facts import load_facts

    _load()
    base = load_facts().namespaces.base_name(op.name)
    return sorted(_REGISTRY.get(base, ()), key=_rank)  # stable: registration order within a module


def registered() -> Dict[str, List[Callable]]:
    _load()
    return {k: list(v) for k, v in _REGISTRY.items()}
