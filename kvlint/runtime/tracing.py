"""Checking a call made under tracing (torch.compile / make_fx: FakeTensor, FunctionalTensor
arguments) without changing the trace.

`int()` or `bool()` on a symbolic size installs a guard: it specialises the graph on that size
(a recompilation per shape with `dynamic=True`, a ConstraintViolationError with `mark_dynamic`).
So contracts never see a symbolic size: `concrete(bound)` replaces every traced tensor by a
*meta* tensor of the same dtype with its sizes and strides read through their hints (no guard),
and every SymInt / SymFloat / SymBool by its hint. The meta stand-ins are made with every
tracing mode disabled, so nothing is recorded in the graph. Meta tensors carry no values, so
value contracts skip them. What is checked at trace time is the example the tracer holds; the
compiled graph's later calls are checked only where the backend calls the operator from Python."""
from __future__ import annotations

from typing import Any, Dict, Optional

import torch

_SYMBOLIC = (torch.SymInt, torch.SymFloat, torch.SymBool)


class _NoHint(Exception):
    """A size without a hint (data-dependent): the call is not checked at trace time."""


def _hint(value):
    node = value.node
    hint = getattr(node, "_hint", None)
    if hint is None:
        try:
            hint = node.shape_env.optimization_hint(node.expr, fallback=None)
        except Exception as exc:  # noqa: BLE001 - unbacked or unknown: give up on this call
            raise _NoHint() from exc
        if hint is None:
            raise _NoHint()
    if isinstance(value, torch.SymInt):
        return int(hint)
    if isinstance(value, torch.SymFloat):
        return float(hint)
    return bool(hint)


def _size(value) -> int:
    return _hint(value) if isinstance(value, torch.SymInt) else value


def _stand_in(tensor: torch.Tensor) -> torch.Tensor:
    shape = [_size(s) for s in tensor.shape]
    stride = [_size(s) for s in tensor.stride()]
    from torch.utils._python_dispatch import _disable_current_modes

    with _disable_current_modes(), _no_fake_mode():
        return torch.empty_strided(shape, stride, dtype=tensor.dtype, device="meta")


def _no_fake_mode():
    try:
        from torch._subclasses.fake_tensor import unset_fake_temporarily
    except ImportError:  # pragma: no cover - older torch
        import contextlib

        return contextlib.nullcontext()
    return unset_fake_temporarily()


def _value(value):
    if isinstance(value, torch.Tensor):
        return value if type(value) is torch.Tensor else _stand_in(value)
    if isinstance(value, _SYMBOLIC):
        return _hint(value)
    if isinstance(value, (list, tuple)) and any(isinstance(v, (torch.Tensor,) + _SYMBOLIC) for v in value):
        return type(value)(_value(v) for v in value)
    return value


def concrete(bound: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """`bound` with traced tensors and symbolic numbers made concrete, or None when a size has
    no hint (the call is then not checked)."""
    try:
        return {name: _value(value) for name, value in bound.items()}
    except _NoHint:
        return None
