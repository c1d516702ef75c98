"""The static rules, one module per rule. `all_rules()` instantiates every registered rule."""
from __future__ import annotations

import importlib
import pkgutil
from typing import Dict, List, Type

from kvlint.checks.base import FileContext, Rule

_REGISTRY: Dict[str, Type[Rule]] = {}


def register(cls: Type[Rule]) -> Type[Rule]:
    if cls.code in _REGISTRY:
        raise ValueError(f"rule {cls.code} registered twice")
    _REGISTRY[cls.code] = cls
    return cls


def _load_rule_modules() -> None:
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("kv") and info.name[2:5].isdigit():
            importlib.import_module(f"{__name__}.{info.name}")


_LOADED = False


def all_rules() -> List[Rule]:
    """Every rule, with every rule module imported first: a registry that merely is not
    empty (one rule module imported directly) is not complete."""
    global _LOADED
    if not _LOADED:
        _load_rule_modules()
        _LOADED = True
    return [_REGISTRY[code]() for code in sorted(_REGISTRY)]


__all__ = ["FileContext", "Rule", "register", "all_rules"]
