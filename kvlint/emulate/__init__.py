"""kvlint.emulate: run NPU attention and KV-cache code where there is no NPU.

`install()` puts an emulated `torch_npu` (and `cann_ops_transformer`) in `sys.modules` when the
real package is not importable (`install(force=True)`: always); `uninstall()` restores what was
there. Both are idempotent; `install()` returns a handle that is also a context manager:

    with kvlint.emulate.install():
        import torch_npu
        out, _ = torch_npu.npu_fused_infer_attention_score(q, k, v, num_heads=8, scale=0.125, ...)

Every operator of kvlint's catalog (rules/operators.json) is registered under its real namespace
with its real schema; the attention and KV-cache operators run reference kernels in plain torch
(`kvlint/runtime/families/<family>/reference.py`) after the guard's loud contracts (a call the
NPU rejects raises `EmulatedOperatorError`); the others raise NotImplementedError. In pytest:
`pytest --kvlint-emulate` (with `--kvlint` to guard the session too). Needs torch
(`pip install 'ascend-kvlint[emulate]'`, torch pinned where an unpinned one would pull a CUDA build).
See docs/emulate.md."""
from __future__ import annotations

try:
    import torch  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised without torch only
    raise ImportError("kvlint.emulate needs torch: pip install 'ascend-kvlint[emulate]' (pin torch, e.g. "
                      "torch==2.13.0, where an unpinned one would pull a CUDA build)") from exc

from kvlint.emulate.install import Emulation, install, is_installed, uninstall
from kvlint.emulate.operators import emulated_operators
from kvlint.emulate.rejections import EmulatedOperatorError

__all__ = ["install", "uninstall", "is_installed", "Emulation", "EmulatedOperatorError", "emulated_operators"]
