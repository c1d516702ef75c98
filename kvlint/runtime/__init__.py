"""kvlint's runtime guard: `kvlint.patch()` checks Ascend attention / KV-cache operator
contracts on the real arguments of each call, before the operator runs. See docs/runtime.md."""
try:
    import torch  # noqa: F401
except ImportError as _exc:  # a clear message instead of a traceback from deep inside
    raise ImportError(
        "kvlint's runtime guard (kvlint.patch(), pytest --kvlint) needs PyTorch, which is not importable here "
        f"({type(_exc).__name__}: {_exc}). Install the build your torch_npu was made for, e.g. "
        "`pip install torch==2.6.0` next to `pip install torch-npu==2.6.0`; the static checker "
        "(`kvlint check`) works without it.", name="torch") from _exc

from kvlint.runtime.errors import ContractError, ContractWarning, Violation  # noqa: E402
from kvlint.runtime.guard import GuardHandle, is_patched, patch, unpatch  # noqa: E402
from kvlint.runtime.registry import check_call  # noqa: E402

__all__ = ["patch", "unpatch", "is_patched", "ContractError", "ContractWarning", "GuardHandle", "Violation", "check_call"]
