"""Every operator of rules/operators.json, registered with torch.library under its real
namespace (`torch.ops.npu`, `torch.ops.atb`, `torch.ops.cann_ops_transformer`, ...) from its
real schema string, so the dispatcher checks calls as on the NPU: keyword-only arguments,
arity, types, "Unknown keyword argument". Each call then runs, in order: the
not-emulated-argument check, the loud contracts (rejections.py; not for the workspace-size
queries), the reference kernel.

torch cannot safely remove an operator someone still holds, so the registrations stay for the
life of the process once made; `install()` after `uninstall()` reuses them."""
from __future__ import annotations

import inspect
import threading
from typing import Dict, List

import torch

from kvlint.catalog import load_catalog
from kvlint.emulate.kernels import KERNELS
from kvlint.emulate.rejections import reject_loudly

NOT_EMULATED = ("kvlint.emulate has no reference kernel for {op}: only the attention and KV-cache operators "
                "are emulated (docs/emulate.md lists them)")
UNSUPPORTED_ARGUMENT = ("kvlint.emulate: {op} with {arg} is not emulated (the reference kernels compute the "
                        "floating-point attention / cache-write paths; quantization, pse, padding, shared-prefix "
                        "and dropout inputs are not emulated)")

_lock = threading.Lock()
_libraries: Dict[str, torch.library.Library] = {}
_registered: List[str] = []


def _reads(kernel) -> frozenset:
    """The argument names a kernel (and what it wraps) takes explicitly."""
    names = set()
    while kernel is not None:
        for p in inspect.signature(kernel, follow_wrapped=False).parameters.values():
            if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
                names.add(p.name)
        kernel = getattr(kernel, "__wrapped__", None)
    return frozenset(names)


def _given(names, args, kwargs) -> dict:
    given = dict(zip(names, args))
    given.update(kwargs)
    return given


def _implementation(op, kernel, ignored, check=True):
    names = [p.name for p in op.params]
    defaults = {p.name: p.default for p in op.params if not p.required}
    reads = _reads(kernel)
    unread = [p for p in op.params if not p.required and p.name not in reads and p.name not in (ignored or ())
              ] if check else []
    qualified = op.qualified

    def emulated(*args, **kwargs):
        given = _given(names, args, kwargs)
        for p in unread:
            value = given.get(p.name)
            if value is None or (not isinstance(value, torch.Tensor) and value == p.default):
                continue
            raise NotImplementedError(UNSUPPORTED_ARGUMENT.format(op=qualified, arg=p.name))
        if check:
            reject_loudly(op, given)
        bound = dict(defaults)
        bound.update(given)
        return kernel(**bound)

    emulated.__name__ = f"kvlint_emulated_{op.name}"
    return emulated


def _fake(op, fake):
    names = [p.name for p in op.params]
    defaults = {p.name: p.default for p in op.params if not p.required}

    def meta(*args, **kwargs):
        bound = dict(defaults)
        bound.update(_given(names, args, kwargs))
        return fake(**bound)

    meta.__name__ = f"kvlint_fake_{op.name}"
    return meta


def _not_emulated(op):
    message = NOT_EMULATED.format(op=op.qualified)

    def missing(*args, **kwargs):
        raise NotImplementedError(message)

    missing.__name__ = f"kvlint_not_emulated_{op.name}"
    return missing


def _exists(namespace: str, name: str) -> bool:
    try:
        getattr(getattr(torch.ops, namespace), name)
    except (AttributeError, RuntimeError):
        return False
    return True


def register() -> List[str]:
    """Define and implement every catalog operator, once per process. Raises RuntimeError when
    an operator is already registered by someone else (the real torch_npu was imported)."""
    with _lock:
        if _registered:
            return list(_registered)
        operators = load_catalog().operators
        clashes = sorted({op.qualified for op in operators if not op.overload and _exists(op.namespace, op.name)})
        if clashes:
            raise RuntimeError("kvlint.emulate: these operators are already registered in this process (the real "
                               f"torch_npu or another stand-in was imported first): {', '.join(clashes[:5])}")
        for op in operators:
            lib = _libraries.get(op.namespace)
            if lib is None:
                lib = _libraries[op.namespace] = torch.library.Library(op.namespace, "FRAGMENT")
            entry = KERNELS.get((op.namespace, op.name, op.overload))
            qualified = op.name + (f".{op.overload}" if op.overload else "")
            lib.define(op.schema)
            if entry is None:
                lib.impl(qualified, _not_emulated(op), "CompositeExplicitAutograd")
                continue
            kernel, fake, ignored = entry
            # the workspace query (`_X_get_max_workspace`) only sizes a buffer: no checks, so it
            # stays the dispatch-only baseline the guard's overhead is measured against
            check = ignored is not None
            lib.impl(qualified, _implementation(op, kernel, ignored, check), "CompositeExplicitAutograd")
            if fake is not None:
                torch.library.register_fake(f"{op.namespace}::{qualified}", _fake(op, fake), lib=lib)
        _registered[:] = [op.qualified for op in operators]
        return list(_registered)


def registered() -> bool:
    return bool(_registered)


def emulated_operators() -> List[str]:
    """Qualified names of the operators that have a reference kernel."""
    ops = load_catalog().operators
    return [op.qualified for op in ops if (op.namespace, op.name, op.overload) in KERNELS]
