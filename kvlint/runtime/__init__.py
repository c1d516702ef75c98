"""kvlint's runtime guard: `kvlint.patch()` checks Ascend attention / KV-cache operator
contracts on the real arguments of each call, before the operator runs. See docs/runtime.md."""
from kvlint.runtime.errors import ContractError, ContractWarning, Finding
from kvlint.runtime.guard import GuardHandle, is_patched, patch, unpatch
from kvlint.runtime.registry import check_call

__all__ = ["patch", "unpatch", "is_patched", "ContractError", "ContractWarning", "GuardHandle", "Finding", "check_call"]
