"""Installing and removing the guard.

Mechanism: every guarded operator is a `torch._ops.OpOverloadPacket` (`torch.ops.npu.X`, which
*is* `torch_npu.X`) with `OpOverload`s (`.default`, `.out`). Both call `self._op(...)`, an
instance attribute holding the C++ entry point. `patch()` replaces that attribute, on the
packet and on each overload, with a Python function that checks the contracts and then calls
the saved entry point; `unpatch()` puts the saved objects back. So every Python path to the
operator is guarded - `torch_npu.X`, `torch.ops.npu.X`, `torch.ops.npu.X.default`, references
captured before `patch()` (they are the same packet object) - and nothing else pays anything.
See docs/runtime.md for the measurements behind this choice.
"""
from __future__ import annotations

import threading
import warnings
from typing import Dict, List, Optional, Tuple

import torch

from kvlint.catalog import load_catalog
from kvlint.facts import load_facts
from kvlint.runtime import callsite
from kvlint.runtime.call import Call
from kvlint.runtime.contracts import contracts_for
from kvlint.runtime.errors import ContractError, ContractWarning, Finding

MODES = ("raise", "warn", "collect")
CHECKS = ("meta", "full")
OPERATOR_PACKAGES = load_facts().namespaces.packages

_lock = threading.RLock()
_handles: List["GuardHandle"] = []
_saved: List[Tuple[object, object]] = []   # (packet or overload, original _op)


class GuardHandle:
    """Returned by `patch()`; a context manager. In collect mode, `findings` lists what was found."""

    def __init__(self, mode: str, checks: str):
        self.mode = mode
        self.checks = checks
        self.findings: List[Finding] = []
        self.active = False

    def __enter__(self) -> "GuardHandle":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Remove this handle; the guard comes off when the last handle is closed."""
        unpatch(self)

    def __repr__(self) -> str:
        return f"<kvlint GuardHandle mode={self.mode} checks={self.checks} active={self.active}>"


class _Spec:
    """What the wrapper needs per operator overload, computed once at patch time."""

    __slots__ = ("op", "name", "positional", "defaults", "contracts")

    def __init__(self, op, contracts):
        self.op = op
        self.name = _base_name(op.name)
        self.positional = tuple(p.name for p in op.params if p.kind == "positional")
        self.defaults = {p.name: p.default for p in op.params if not p.required}
        self.contracts = contracts


_base_name = load_facts().namespaces.base_name


def _import_operator_packages() -> None:
    import importlib

    for package in OPERATOR_PACKAGES:
        try:
            importlib.import_module(package)
        except Exception:  # absent, or broken on this machine: guard what is there
            pass
    callsite.reset()


def _targets():
    """(object whose _op to replace, catalog operator) for every registered catalog operator."""
    namespaces: Dict[str, object] = {}
    for op in load_catalog().operators:
        ns = namespaces.get(op.namespace)
        if ns is None:
            ns = namespaces[op.namespace] = getattr(torch.ops, op.namespace)
        try:
            packet = getattr(ns, op.name)
        except (AttributeError, RuntimeError):
            continue
        if not isinstance(packet, torch._ops.OpOverloadPacket):
            continue
        if op.overload:
            try:
                yield getattr(packet, op.overload), op
            except (AttributeError, RuntimeError):
                continue
        else:
            yield packet, op
            try:
                yield packet.default, op
            except (AttributeError, RuntimeError):
                pass


def _report(findings: List[Finding]) -> None:
    handle = _handles[-1] if _handles else None
    if handle is None:
        return
    for finding in findings:
        if handle.mode == "collect":
            handle.findings.append(finding)
        elif handle.mode == "raise" and finding.severity == "error":
            raise ContractError(finding)
        else:
            warnings.warn(ContractWarning(finding.message), stacklevel=4)


def _wrap(original, spec: _Spec):
    contracts = spec.contracts
    positional, defaults, op, name = spec.positional, spec.defaults, spec.op, spec.name

    def guarded(*args, **kwargs):
        if _handles:
            try:
                full = _handles[-1].checks == "full"
            except IndexError:  # the last handle closed on another thread meanwhile
                return original(*args, **kwargs)
            bound = defaults.copy()
            if args:
                bound.update(zip(positional, args))
            if kwargs:
                bound.update(kwargs)
            call = Call(op, name, bound, kwargs, positional, len(args), full)
            for contract in contracts:
                try:
                    contract(call)
                except ContractError:
                    raise
                except Exception as exc:  # a contract must never break the user's call
                    warnings.warn(f"kvlint: contract {contract.__name__} could not check this "
                                  f"{name} call ({type(exc).__name__}: {exc}); skipped", RuntimeWarning,
                                  stacklevel=3)
            if call.findings:
                _report(call.findings)
        return original(*args, **kwargs)

    guarded.__name__ = f"kvlint_guarded_{spec.op.name}"
    guarded.__kvlint_original__ = original
    return guarded


def _install() -> None:
    _import_operator_packages()
    for target, op in _targets():
        original = target._op
        if getattr(original, "__kvlint_original__", None) is not None:
            continue
        target._op = _wrap(original, _Spec(op, contracts_for(op)))
        _saved.append((target, original))


def refresh() -> None:
    """While patched, also guard operators registered since (e.g. torch_npu imported later)."""
    with _lock:
        if _handles:
            _install()


def _uninstall() -> None:
    while _saved:
        target, original = _saved.pop()
        target._op = original
    from kvlint.runtime.contracts import kvlen

    kvlen.reset()


def patch(mode: str = "raise", checks: str = "meta") -> GuardHandle:
    """Guard every call of the known Ascend attention / KV-cache operators.

    Idempotent and nestable: each call returns a new handle, the innermost open handle decides
    the mode; the operators are wrapped once and unwrapped when the last handle is closed."""
    if mode not in MODES:
        raise ValueError(f"kvlint.patch: mode must be one of {', '.join(MODES)}, got {mode!r}")
    if checks not in CHECKS:
        raise ValueError(f"kvlint.patch: checks must be one of {', '.join(CHECKS)}, got {checks!r}")
    handle = GuardHandle(mode, checks)
    with _lock:
        if not _saved:
            _install()
        _handles.append(handle)
        handle.active = True
    return handle


def unpatch(handle: Optional[GuardHandle] = None) -> None:
    """Close `handle`, or, without one, every handle: the original operators are back once no
    handle is open. Calling it when nothing is patched does nothing."""
    with _lock:
        if handle is None:
            closing = list(_handles)
        else:
            closing = [handle] if handle in _handles else []
        for h in closing:
            _handles.remove(h)
            h.active = False
        if not _handles and _saved:
            _uninstall()


def is_patched() -> bool:
    return bool(_saved)
