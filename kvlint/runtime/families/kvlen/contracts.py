"""kv_len discipline (KV401): the length / slot / table tensors a forward step passes to its
layers must not change between layers. Reads version counters only (no values, no sync).

A step is inferred: each (operator, argument) remembers the tensor it last saw (identity, data
pointer, `_version`) and which layers saw that version. A layer is identified by its own KV cache
(the data pointer of the cache argument named in rules/facts/kvlen.toml [tracked_layer]: no frame
walk), else by the nearest calling `torch.nn.Module`, else by the call site. Seeing a layer again means a new step began (the runner
may advance kv_len between steps); a new version seen by a layer that has not yet run in this
step means the tensor was mutated between two layers of one step."""
from __future__ import annotations

import threading

import torch

from kvlint.facts import load_facts
from kvlint.runtime import callsite
from kvlint.runtime.call import Call
from kvlint.runtime.registry import contract

_state: dict = {}
_lock = threading.Lock()


def reset() -> None:
    with _lock:
        _state.clear()


# Inference tensors (made under torch.inference_mode) have no version counter: readable ones
# of at most this many elements are told apart by their values instead; bigger ones are skipped.
FINGERPRINT_LIMIT = 4096


def _version_of(call: Call, tensor: torch.Tensor):
    """The tensor's version counter, or for an inference tensor a fingerprint of its values
    (None: not trackable in this mode)."""
    try:
        return tensor._version
    except RuntimeError:  # "Inference tensors do not track version counter"
        if tensor.numel() <= FINGERPRINT_LIMIT and call.readable(tensor):
            return ("values",) + tuple(tensor.reshape(-1).tolist())
        return None


def _observe(key, tensor: torch.Tensor, layer, version, pointer):
    """Record that `layer` saw `tensor` (at `version`, data pointer `pointer`) for (operator,
    argument, scheme) `key`; return (old, new) version when it was mutated in place since an
    earlier layer of the same step. The caller holds _lock."""
    state = _state.get(key)
    if state is None or state[0] != id(tensor) or state[1] != pointer:  # identity and pointer; no reference kept
        _state[key] = [id(tensor), pointer, version, {layer}]
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


_TRACKED = {name: tuple((name, arg) for arg in args) for name, args in load_facts().table("tracked").items()}
_LAYER_CACHE = {name: (spec["cache"], spec.get("when")) for name, spec in load_facts().table("tracked_layer").items()}
_Tensor = torch.Tensor


def _describe(before, after) -> str:
    if isinstance(before, tuple) or isinstance(after, tuple):
        return f"values {list(before[1:]) if isinstance(before, tuple) else before} -> " \
               f"{list(after[1:]) if isinstance(after, tuple) else after}"
    return f"version {before} -> {after}"


# per operator: (argument, its state key under the cache scheme, under the frame scheme)
_KEYS = {name: tuple((key[1], key + ("cache",), key + ("frame",)) for key in keys) for name, keys in _TRACKED.items()}
_NO_LAYER_CACHE = (None, None)


@contract(*_TRACKED.keys())
def kv_len_discipline(call: Call) -> None:
    if call.tracing:
        return  # meta stand-ins of traced tensors: no identity, no version
    args = call.args
    layer = mutated = None
    locked = False
    try:
        for arg, cache_key, frame_key in _KEYS[call.name]:
            tensor = args.get(arg)
            if type(tensor) is not _Tensor:
                continue
            try:
                version = tensor._version
            except RuntimeError:  # an inference tensor
                version = _version_of(call, tensor)
                if version is None:
                    continue
            if layer is None:
                # the layer: its own KV cache (data pointer) when the call passes one, else the
                # nearest calling torch.nn.Module or call site (a frame walk); the two schemes keep
                # separate states (a tensor seen by paged and by non-paged calls is tracked once per scheme)
                cache_arg, when = _LAYER_CACHE.get(call.name, _NO_LAYER_CACHE)
                cache = args.get(cache_arg) if cache_arg else None
                layer = cache.data_ptr() if type(cache) is _Tensor and (
                    when is None or isinstance(args.get(when), _Tensor)) else 0
                by_cache = bool(layer)
                if not by_cache:
                    layer = callsite.layer_key(call.frame())
                _lock.acquire()  # once for the call's tensors (`with` per tensor costs twice as much)
                locked = True
            key = cache_key if by_cache else frame_key
            pointer = tensor.data_ptr()
            state = _state.get(key)
            if state is not None and state[2] == version and state[0] == id(tensor) and state[1] == pointer:
                layers = state[3]  # _observe's unchanged case, inline (every layer of a step)
                if layer in layers:
                    layers.clear()  # a new step, unchanged tensor
                layers.add(layer)
                continue
            change = _observe(key, tensor, layer, version, pointer)
            if change is not None:
                mutated = mutated or []
                mutated.append((arg, change))
    finally:
        if locked:
            _lock.release()
    for arg, (before, after) in mutated or ():
        call.fail("KV401", arg, "unchanged between the layers of one forward step",
                  f"mutated in place since the previous layer's call ({_describe(before, after)})",
                  "each later layer reads/writes at shifted positions: the KV cache is silently corrupted "
                  "(advance kv_len once per step, outside model.forward)")
