"""kvlint: static and run-time checks for Ascend attention and KV-cache operator calls.

The static checker (`kvlint check`) needs only libcst and rich. The runtime guard
(`kvlint.patch()`) needs torch and is imported lazily, so importing kvlint never imports torch.
"""
__version__ = "0.1.0"

_RUNTIME_NAMES = {"patch", "unpatch", "ContractError", "ContractWarning", "GuardHandle"}


def __getattr__(name):  # PEP 562: keep torch out of `import kvlint`
    if name in _RUNTIME_NAMES:
        from kvlint import runtime

        return getattr(runtime, name)
    raise AttributeError(f"module 'kvlint' has no attribute {name!r}")
