"""kv_len discipline (KV401): the length / slot / table tensors a forward step passes to its
layers must not change between layers. Reads version counters only (no values, no sync).

A step is inferred: each (operator, argument) remembers the tensor it last saw (a weak
reference, so that a new tensor reusing a dead one's id is never taken for it; its data pointer
and `_version`) and which layers saw that version. A layer is identified by its own KV cache
(the data pointer of the cache argument named in rules/facts/kvlen.toml [tracked_layer]: no
frame walk), else by the nearest calling `torch.nn.Module`, else by the call site. Seeing a
layer again means a new step began (the runner may advance kv_len between steps); a new
version seen by a layer that has not yet run in this step means the tensor was mutated between
two layers of one step."""
from __future__ import annotations

import threading
import weakref

import torch

from kvlint.facts import load_facts
from kvlint.runtime import callsite  # noqa: F401 - read by the generated kv_len_discipline functions
from kvlint.runtime.call import Call
from kvlint.runtime.registry import contract

# (operator, argument, scheme) -> [weak reference, data pointer, version, layers] of the tensor
# last seen (_nothing_seen: none yet). Made at import for every tracked argument and updated in
# place, so each operator's generated discipline holds its own states (no key hashed per call).
_state: dict = {}
_lock = threading.Lock()


def _nothing_seen():  # the weak reference of 'no tensor seen yet' (dereferences to None, like a dead one)
    return None


def _unseen() -> list:
    """A state before any tensor: nothing seen, no pointer, no version, no layer."""
    return [_nothing_seen, None, None, set()]


def reset() -> None:
    with _lock:
        for state in _state.values():
            state[:] = _unseen()


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
    state = _state[key]
    if state[0]() is not tensor or state[1] != pointer:  # identity (no strong reference kept) and pointer
        state[:] = [weakref.ref(tensor), pointer, version, {layer}]
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


def _report(call: Call, mutated) -> None:
    for arg, (before, after) in mutated:
        call.fail("KV401", arg, "unchanged between the layers of one forward step",
                  f"mutated in place since the previous layer's call ({_describe(before, after)})",
                  "each later layer reads/writes at shifted positions: the KV cache is silently corrupted "
                  "(advance kv_len once per step, outside model.forward)")


def _discipline(name: str):
    """KV401 for operator `name`, generated once from its [tracked] arguments and [tracked_layer]
    cache: straight-line code, one block per tracked argument (no loop, no per-call table lookup).

    Per tracked tensor: its version (an inference tensor's values instead, `_version_of`) and
    data pointer, taken from `call.stamps` when an earlier contract of this call read them (the
    paged values' memo); the layer (its cache's data pointer, else `callsite.layer_key`) and the
    lock only once the call passes a tracked tensor; the unchanged case inline, else `_observe`.
    Each block holds its two states (cache and frame scheme; `_state` keeps the same lists); the
    generated code reads `_lock` and `_observe` as this module's globals."""
    keys = _TRACKED[name]
    cache_arg, when = _LAYER_CACHE.get(name, (None, None))
    tracked = [arg for _, arg in keys]
    cells = {}
    lines = ["    if call.tracing:", "        return  # meta stand-ins of traced tensors: no identity, no version",
             "    args = call.args"]
    lines += [f"    t{i} = args.get({arg!r})" for i, (_, arg) in enumerate(keys)]
    lines.append("    if " + " and ".join(f"type(t{i}) is not _Tensor" for i in range(len(keys))) + ":")
    lines += ["        return", "    stamps = call.stamps", "    layer = mutated = None", "    locked = False",
              "    try:"]
    for i, key in enumerate(keys):
        cells[f"_cache_key{i}"], cells[f"_frame_key{i}"] = key + ("cache",), key + ("frame",)
        cells[f"_cache_state{i}"] = _state.setdefault(key + ("cache",), _unseen())
        cells[f"_frame_state{i}"] = _state.setdefault(key + ("frame",), _unseen())
        if cache_arg is None:
            layer_of = "0"
        else:
            table = f"t{tracked.index(when)}" if when in tracked else f"args.get({when!r})"
            condition = "" if when is None else f" and isinstance({table}, _Tensor)"
            layer_of = f"cache.data_ptr() if type(cache) is _Tensor{condition} else 0"
        lines += [
            f"        if type(t{i}) is _Tensor:",
            f"            if stamps is not None and t{i} is stamps[0]:",
            "                version, pointer = stamps[1], stamps[2]",
            f"            elif stamps is not None and t{i} is stamps[3]:",
            "                version, pointer = stamps[4], stamps[5]",
            "            else:",
            "                pointer = None",
            "                try:",
            f"                    version = t{i}._version",
            "                except RuntimeError:  # an inference tensor",
            f"                    version = _version_of(call, t{i})",
            "            if version is not None:",
            "                if layer is None:",
            # the layer: its own KV cache (data pointer) when the call passes one, else the nearest
            # calling torch.nn.Module or call site (a frame walk); the two schemes keep separate
            # states (a tensor seen by paged and by non-paged calls is tracked once per scheme)
            f"                    cache = args.get({cache_arg!r})" if cache_arg else "                    pass",
            f"                    layer = {layer_of}",
            "                    by_cache = bool(layer)",
            "                    if not by_cache:",
            "                        layer = callsite.layer_key(call.frame())",
            "                    _lock.acquire()  # once for the call's tensors (`with` per tensor costs twice as much)",
            "                    locked = True",
            f"                state = _cache_state{i} if by_cache else _frame_state{i}",
            "                if pointer is None:",
            f"                    pointer = t{i}.data_ptr()",
            f"                if state[2] == version and state[0]() is t{i} and state[1] == pointer:",
            "                    layers = state[3]  # _observe's unchanged case, inline (every layer of a step)",
            "                    if layer in layers:",
            "                        layers.clear()  # a new step, unchanged tensor",
            "                    layers.add(layer)",
            "                else:",
            f"                    change = _observe(_cache_key{i} if by_cache else _frame_key{i}, t{i}, layer, "
            "version, pointer)",
            "                    if change is not None:",
            f"                        mutated = (mutated or []) + [({key[1]!r}, change)]"]
    lines += ["    finally:", "        if locked:", "            _lock.release()", "    if mutated:",
              "        _report(call, mutated)"]
    params = ", ".join(cells)
    source = (f"def _make({params}):\n    def kv_len_discipline(call):\n"
              + "\n".join("    " + line for line in lines) + "\n    return kv_len_discipline\n")
    # compiled under this file's name: callsite.user_frame skips its frames like the module's own
    exec(compile(source, __file__, "exec"), globals())  # noqa: S102 - from rules/facts/kvlen.toml's names
    return globals().pop("_make")(**cells)


for _name in _TRACKED:
    contract(_name, detached=True)(_discipline(_name))  # never reads the family view
