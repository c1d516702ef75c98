"""One guarded call: its arguments bound by name, and what a contract may read from them."""
from __future__ import annotations

from typing import Any, Dict, List, Optional

import torch

from kvlint.runtime import callsite
from kvlint.runtime.errors import Finding

# Tensors on these device types are host memory: reading their values never syncs a device.
HOST_DEVICES = frozenset({"cpu"})


def dtype_name(dtype) -> str:
    return str(dtype).replace("torch.", "")


def shape_of(t) -> str:
    return "(" + ", ".join(str(int(s)) for s in t.shape) + ")" if isinstance(t, torch.Tensor) else repr(t)


class Call:
    """`args[name]` is every schema argument (given or defaulted); `given` holds the names the
    caller passed; contracts report through `fail()`."""

    __slots__ = ("op", "name", "args", "given", "full", "findings", "memo", "_frame")

    def __init__(self, op, name: str, args: Dict[str, Any], given, full: bool):
        self.op = op          # catalog Operator
        self.name = name      # base operator name, e.g. npu_fused_infer_attention_score
        self.args = args
        self.given = given
        self.full = full
        self.findings: List[Finding] = []
        self.memo: Dict[str, Any] = {}
        self._frame = False

    def get(self, name: Optional[str], default=None):
        if not name:
            return default
        return self.args.get(name, default)

    def frame(self):
        if self._frame is False:
            self._frame = callsite.user_frame(1)
        return self._frame

    def fail(self, code: str, argument: str, expected: str, given: str, consequence: str = "",
             severity: str = "error") -> None:
        self.findings.append(Finding(code, self.name, argument, expected, given, consequence,
                                     callsite.describe(self.frame()), severity))

    # ---- values -----------------------------------------------------------------------
    def readable(self, value) -> bool:
        """May a contract read this tensor's values? Always for host tensors; device tensors
        only in full mode; never for fake/functional tensors (torch.compile tracing)."""
        if not isinstance(value, torch.Tensor):
            return False
        if type(value) is not torch.Tensor and not isinstance(value, torch.nn.Parameter):
            return False
        if value.device.type in HOST_DEVICES:
            return True
        return self.full and value.device.type != "meta"

    def int_list(self, value) -> Optional[List[int]]:
        """A length list as Python ints, or None when absent or not readable in this mode."""
        if value is None:
            return None
        if isinstance(value, torch.Tensor):
            if not self.readable(value) or value.is_floating_point():
                return None
            return [int(v) for v in value.reshape(-1).tolist()]
        try:
            return [int(v) for v in value]
        except (TypeError, ValueError):  # SymInts under tracing
            return None
