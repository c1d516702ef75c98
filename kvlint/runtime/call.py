"""One guarded call: its arguments bound by name, and what a contract may read from them."""
from __future__ import annotations

from typing import Any, Dict, List, Optional

import torch

from kvlint.runtime import callsite
from kvlint.runtime.errors import Violation

# Tensors on these device types are host memory: reading their values never syncs a device.
HOST_DEVICES = frozenset({"cpu"})
# Host tensors with at most this many elements have their values checked in Python (`tolist()`
# costs ~0.2 us for a few elements, ~4 us for 256); bigger ones, and device tensors in full mode,
# with a few vectorised torch ops (~1.5 us for `aminmax`, ~6 us for `unique`, O(n) in C++).
SMALL = 64

_Tensor = torch.Tensor
_Parameter = torch.nn.Parameter


def dtype_name(dtype) -> str:
    return str(dtype).replace("torch.", "")


def dtypes(names) -> frozenset:
    """torch dtypes from their names (rules/facts/), for `tensor.dtype in ...` tests."""
    return frozenset(getattr(torch, name) for name in names if hasattr(torch, name))


def shape_of(t) -> str:
    return "(" + ", ".join(str(int(s)) for s in t.shape) + ")" if isinstance(t, torch.Tensor) else repr(t)


def _capture_probes():
    """The `is_current_stream_capturing` functions that can answer on this machine (NPU, CUDA)."""
    probes = []
    npu = getattr(torch, "npu", None)
    probe = getattr(npu, "is_current_stream_capturing", None)
    if callable(probe):
        probes.append(probe)
    if torch.cuda.is_available():
        probes.append(torch.cuda.is_current_stream_capturing)
    return probes


def capturing() -> bool:
    """Is a device stream being captured into a graph (NPU graph / CUDA graph)? Then reading a
    device value would synchronise and break the capture: value checks are skipped. Replays of
    a captured graph run no Python, so they are never checked."""
    for probe in _capture_probes():
        try:
            if probe():
                return True
        except Exception:  # noqa: BLE001 - no device context: not capturing
            continue
    return False


class Call:
    """`args[name]` is every schema argument (given or defaulted); `passed(name)` tells whether
    the caller passed it; contracts report through `fail()`. `view` is the operator family's
    derived view (FA: `FaView`), set by the family's first contract. `stamps`: None, or
    `(t1, version1, data_pointer1, t2, version2, data_pointer2)`, two tensors' version counter and
    data pointer as an earlier contract of this call read them (the paged values' memo: the table
    and the KV lengths), so that a later one (KV401) does not read them again."""

    __slots__ = ("op", "name", "args", "kwargs", "positional", "npos", "full", "findings", "view", "tracing",
                 "_frame", "stamps")

    def __init__(self, op, name: str, args: Dict[str, Any], kwargs, positional, npos: int, full: bool,
                 tracing: bool = False):
        self.op = op          # catalog Operator
        self.name = name      # base operator name, e.g. npu_fused_infer_attention_score
        self.args = args
        self.kwargs = kwargs          # what the caller passed by keyword
        self.positional = positional  # the schema's positional argument names
        self.npos = npos              # how many of them the caller passed
        self.full = full
        self.findings: List[Violation] = []
        self.view = None
        self.tracing = tracing  # arguments are meta stand-ins of traced tensors (kvlint.runtime.tracing)
        self._frame = False
        self.stamps = None

    def get(self, name: Optional[str], default=None):
        if not name:
            return default
        return self.args.get(name, default)

    def passed(self, name: str) -> bool:
        """Did the caller pass this argument (positionally or by keyword)?"""
        return name in self.kwargs or name in self.positional[:self.npos]

    def frame(self):
        """The user's frame (walked lazily: only a finding or KV401's layer lookup needs it)."""
        if self._frame is False:
            self._frame = callsite.user_frame(1)
        return self._frame

    def fail(self, code: str, argument: str, expected: str, given: str, consequence: str = "",
             severity: str = "error") -> None:
        self.findings.append(Violation(code, self.name, argument, expected, given, consequence,
                                     callsite.describe(self.frame()), severity))

    # ---- values -----------------------------------------------------------------------
    def readable(self, value) -> bool:
        """May a contract read this tensor's values? Always for host tensors; device tensors
        only in full mode and never while a device stream is being captured into a graph;
        never for fake/functional/meta tensors (torch.compile tracing)."""
        if type(value) is not _Tensor and not isinstance(value, _Parameter):
            return False  # not a tensor, or a tensor subclass (FakeTensor, FunctionalTensor)
        if value.is_cpu:  # cheap; device.type costs ~0.3 us
            return "cpu" in HOST_DEVICES or (self.full and not capturing())
        device = value.device.type
        if device in HOST_DEVICES:
            return True
        return self.full and device != "meta" and not capturing()

    def int_list(self, value) -> Optional[List[int]]:
        """A length list as Python ints, or None when absent or not readable in this mode."""
        if value is None:
            return None
        if isinstance(value, torch.Tensor):
            if not self.readable(value) or value.is_floating_point():
                return None
            return value.tolist() if value.dim() == 1 else value.reshape(-1).tolist()
        try:
            return [int(v) for v in value]
        except (TypeError, ValueError):  # SymInts under tracing
            return None
