"""The emulated `torch_npu` and `cann_ops_transformer` module objects.

As in the real packages: `torch_npu.X is torch.ops.npu.X`; ATB's `_npu_*` operators are also
`torch_npu._npu_*`, the others `torch_npu.atb.X`; `cann_ops_transformer.X` and
`cann_ops_transformer.ops.X` are `torch.ops.cann_ops_transformer.X`. `torch_npu.npu` answers
`is_available()` with False. Any other attribute raises AttributeError saying it is not emulated
(so `hasattr` checks and feature probes behave)."""
from __future__ import annotations

import types
from typing import Dict

import torch

from kvlint.catalog import load_catalog

MARK = "__kvlint_emulated__"


class _Module(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}: kvlint.emulate emulates only "
                             "the attention and KV-cache operators of kvlint's catalog (docs/emulate.md)")


def _module(name: str, doc: str) -> types.ModuleType:
    module = _Module(name, doc)
    setattr(module, MARK, True)
    return module


def _noop(*args, **kwargs):
    return None


def _no_device(*args, **kwargs):
    raise RuntimeError("kvlint.emulate has no NPU device: keep the tensors on the CPU")


def _wheel_version() -> str:
    source = load_catalog().generated_from  # torch_npu-2.14.0-cp311-...
    parts = source.split("-")
    return parts[1] if len(parts) > 1 else "0"


def build() -> Dict[str, types.ModuleType]:
    """sys.modules entries for the emulation (the operators must be registered already)."""
    npu = _module("torch_npu", "kvlint.emulate: torch_npu's attention and KV-cache operators on CPU tensors")
    npu.__version__ = f"{_wheel_version()}+kvlint.emulate"
    atb = _module("torch_npu.atb", "kvlint.emulate: the ATB operators")
    device = _module("torch_npu.npu", "kvlint.emulate: no NPU device")
    device.is_available = lambda: False
    device.device_count = lambda: 0
    device.synchronize = _noop
    device.set_device = _no_device
    device.current_device = _no_device
    npu.npu = device
    npu.atb = atb
    cot = _module("cann_ops_transformer", "kvlint.emulate: CANN ops-transformer's torch extension on CPU tensors")
    cot_ops = _module("cann_ops_transformer.ops", "kvlint.emulate: CANN ops-transformer's operators")
    cot.ops = cot_ops
    for op in load_catalog().operators:
        packet = getattr(getattr(torch.ops, op.namespace), op.name)
        if op.namespace == "npu":
            setattr(npu, op.name, packet)
        elif op.namespace == "atb":
            setattr(atb, op.name, packet)
            if op.name.startswith("_npu_"):
                setattr(npu, op.name, packet)
        elif op.namespace == "cann_ops_transformer":
            setattr(cot, op.name, packet)
            setattr(cot_ops, op.name, packet)
    return {"torch_npu": npu, "torch_npu.atb": atb, "torch_npu.npu": device,
            "cann_ops_transformer": cot, "cann_ops_transformer.ops": cot_ops}
