"""install() / uninstall(): the emulated modules in and out of sys.modules."""
from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
from typing import Dict, List, Optional

from kvlint.emulate import modules, operators

PACKAGES = ("torch_npu", "cann_ops_transformer")
_ABSENT = object()

_lock = threading.RLock()
_handles: List["Emulation"] = []
_saved: Optional[Dict[str, object]] = None   # sys.modules entries the emulation replaced


class Emulation:
    """Returned by `install()`; a context manager. `active` says whether this handle holds the
    emulation in place; when not, `reason` says why (the real torch_npu is importable)."""

    def __init__(self, active: bool, reason: str = ""):
        self.active = active
        self.reason = reason

    def __enter__(self) -> "Emulation":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Release this handle; the emulation comes out when the last handle is released."""
        with _lock:
            if self in _handles:
                _handles.remove(self)
                self.active = False
                if not _handles:
                    _restore()

    def __repr__(self) -> str:
        state = "active" if self.active else f"inactive: {self.reason}" if self.reason else "inactive"
        return f"<kvlint.emulate.Emulation {state}>"


def _ours(module) -> bool:
    return getattr(module, modules.MARK, False) is True


def real_package_importable() -> bool:
    """Can the real torch_npu be imported here (found, and its import succeeds)?"""
    present = sys.modules.get("torch_npu")
    if present is not None:
        return not _ours(present)
    try:
        if importlib.util.find_spec("torch_npu") is None:
            return False
    except (ImportError, ValueError):
        return False
    before = set(sys.modules)
    try:
        importlib.import_module("torch_npu")
    except Exception:  # noqa: BLE001 - found but broken here (no driver, ABI): emulate
        for name in set(sys.modules) - before:
            if name == "torch_npu" or name.startswith("torch_npu."):
                del sys.modules[name]
        return False
    return True


def _refresh_guard() -> None:
    """A guard already patched picks up the emulated operators (without importing the guard)."""
    guard = sys.modules.get("kvlint.runtime.guard")
    if guard is not None:
        from kvlint.runtime import callsite

        callsite.reset()
        guard.refresh()


def install(force: bool = False) -> Emulation:
    """Put the emulated torch_npu and cann_ops_transformer in sys.modules, unless the real
    torch_npu is importable (`force=True`: regardless). Returns a handle (a context manager);
    nested installs share one emulation, removed when the last handle closes."""
    global _saved
    with _lock:
        if _handles:
            handle = Emulation(True)
            _handles.append(handle)
            return handle
        if not force and real_package_importable():
            return Emulation(False, "the real torch_npu is importable (install(force=True) emulates anyway)")
        operators.register()
        entries = modules.build()
        _saved = {name: sys.modules.get(name, _ABSENT) for name in entries}
        for name in list(sys.modules):
            if any(name.startswith(p + ".") for p in PACKAGES) and name not in entries:
                _saved[name] = sys.modules[name]
                del sys.modules[name]
        sys.modules.update(entries)
        handle = Emulation(True)
        _handles.append(handle)
    _refresh_guard()
    return handle


def _restore() -> None:
    global _saved
    saved, _saved = _saved, None
    for name, previous in (saved or {}).items():
        if previous is _ABSENT:
            sys.modules.pop(name, None)
        else:
            sys.modules[name] = previous


def uninstall() -> None:
    """Close every handle and restore the sys.modules entries the emulation replaced. The
    operators stay registered with torch for the rest of the process (torch cannot safely drop
    an operator someone still holds); re-installing reuses them. Does nothing when not installed."""
    with _lock:
        for handle in list(_handles):
            handle.active = False
        _handles.clear()
        _restore()


def is_installed() -> bool:
    return _ours(sys.modules.get("torch_npu"))
