"""kv_len discipline (KV401): the length / slot / table tensors a forward step passes to its
layers must not change between layers. Reads version counters only (no values, no sync).

A step is inferred: each (operator, argument) remembers the tensor it last saw (identity, data
pointer, `_version`) and which layers saw that version. A layer is the nearest calling
`torch.nn.Module`, else the call site. Seeing a layer again means a new step began (the runner
may advance kv_len between steps); a new version seen by a layer that has not yet run in this
step means the tensor was mutated between two layers of one step."""
from __future__ import annotations

import threading

import torch

from kvlint.runtime import callsite
from kvlint.runtime.call import Call
from kvlint.runtime.contracts import contract
from kvlint.runtime.data import contracts_data

_state: dict = {}
_lock = threading.Lock()


def reset() -> None:
    with _lock:
        _state.clear()


def _observe(key, tensor: torch.Tensor, layer):
    """Record that `layer` saw `tensor` for (operator, argument) `key`; return (old, new) version
    when it was mutated in place since an earlier layer of the same step, else None."""
    version = tensor._version
    state = _state.get(key)
    ident = id(tensor)  # with the data pointer; no reference is kept
    if state is None or state[0] != ident or state[1] != tensor.data_ptr():
        _state[key] = [ident, tensor.data_ptr(), version, {layer}]
        return None
    layers = state[3]
    if version == state[2]:
        if layer in layers:
            layers.clear()  # a new step, unchanged tensor
        layers.add(layer)
        return None
    seen_version, state[2] = state[2], version
    if layer in layers:  # a new step: the runner advanced the tensor between steps
        layers.clear()
        layers.add(layer)
        return None
    layers.add(layer)
    return seen_version, version


_TRACKED = {name: tuple((name, arg) for arg in args) for name, args in contracts_data()["tracked"].items()}
_Tensor = torch.Tensor


@contract(*_TRACKED.keys())
def kv_len_discipline(call: Call) -> None:
    args = call.args
    layer = None
    for key in _TRACKED[call.name]:
        tensor = args.get(key[1])
        if type(tensor) is not _Tensor:
            continue
        if layer is None:  # the frame walk, once per call and only with a tracked tensor
            layer = callsite.layer_key(call.frame())
        with _lock:
            mutated = _observe(key, tensor, layer)
        if mutated is not None:
            call.fail("KV401", key[1], "unchanged between the layers of one forward step",
                      f"mutated in place since the previous layer's call (version {mutated[0]} -> {mutated[1]})",
                      "each later layer reads/writes at shifted positions: the KV cache is silently corrupted "
                      "(advance kv_len once per step, outside model.forward)")
