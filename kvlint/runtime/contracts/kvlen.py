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


def _observe(call: Call, arg: str, tensor: torch.Tensor, layer) -> None:
    key = (call.name, arg)
    ident = (id(tensor), tensor.data_ptr())
    version = tensor._version
    with _lock:
        state = _state.get(key)
        if state is None or state[0] != ident:
            _state[key] = [ident, version, {layer}]
            return
        _, seen_version, layers = state
        if version == seen_version:
            if layer in layers:
                layers.clear()  # a new step, unchanged tensor
            layers.add(layer)
            return
        state[1] = version
        mutated_mid_step = layer not in layers
        if not mutated_mid_step:
            layers.clear()
        layers.add(layer)
    if mutated_mid_step:
        call.fail("KV401", arg, "unchanged between the layers of one forward step",
                  f"mutated in place since the previous layer's call (version {seen_version} -> {version})",
                  "each later layer reads/writes at shifted positions: the KV cache is silently corrupted "
                  "(advance kv_len once per step, outside model.forward)")


_TRACKED = contracts_data()["tracked"]


@contract(*_TRACKED.keys())
def kv_len_discipline(call: Call) -> None:
    args = call.args
    tracked = [(n, args[n]) for n in _TRACKED[call.name] if type(args.get(n)) is torch.Tensor]
    if not tracked:
        return
    layer = callsite.layer_key(call.frame())
    for name, tensor in tracked:
        _observe(call, name, tensor, layer)
