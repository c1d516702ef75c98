"""Loud rejections: before a reference kernel runs, the guard's contracts check the call, and
the findings that mirror a loud check of the real operator (rules/facts/emulate.toml) raise, as the
NPU's tiling check would. Silent pitfalls are left to the kernel (it computes what the NPU
computes) and to the guard (`kvlint.patch()`, `pytest --kvlint`)."""
from __future__ import annotations

from functools import lru_cache

from kvlint.facts import load_facts


class EmulatedOperatorError(RuntimeError):
    """The emulated operator rejects the call, as the NPU's own parameter checks would (there a
    RuntimeError with an error code such as 561002). `.finding` is the guard's finding."""

    def __init__(self, finding):
        super().__init__(f"{finding.op}: the operator rejects this call (kvlint.emulate, mirrors the NPU's "
                         f"parameter check)\n{finding.message}")
        self.finding = finding
        self.code = finding.code


@lru_cache(maxsize=None)
def loud_codes(op_name: str = "") -> frozenset:
    data = load_facts().table("emulate")
    return frozenset(data["loud_codes"]) - frozenset(data.get("not_loud", {}).get(op_name, ()))


def is_loud(finding) -> bool:
    loud = getattr(finding, "loud", None)
    if loud is not None:
        return bool(loud)
    return finding.severity == "error" and finding.code in loud_codes(finding.op)


def _public_entry_point():
    try:
        from kvlint.runtime.registry import check_call  # the public per-call entry point
    except ImportError:
        return None
    return check_call


_UNRESOLVED = object()
_check_call = _UNRESOLVED
_contracts: dict = {}   # operator -> its contracts (legacy path), resolved once


def _findings(op, given) -> list:
    """The contracts' findings for one call (meta checks, no cross-call state). `given`: the
    arguments the caller passed (the dispatcher drops keywords equal to their default)."""
    global _check_call
    if _check_call is _UNRESOLVED:
        _check_call = _public_entry_point()
    if _check_call is not None:
        return _check_call(op.name, given, namespace=op.namespace)
    return _findings_legacy(op, given)


def _base_name(name: str) -> str:
    if name.startswith("_") and name.endswith("_get_max_workspace"):
        return name[1:-len("_get_max_workspace")]
    return name


def _findings_legacy(op, given) -> list:
    from kvlint.runtime.call import Call

    contracts = _contracts.get(op.qualified)
    if contracts is None:
        from kvlint.runtime.contracts import contracts_for

        contracts = _contracts[op.qualified] = [c for c in contracts_for(op) if not c.__module__.endswith(".kvlen")]
    bound = {p.name: p.default for p in op.params if not p.required}
    bound.update(given)
    call = Call(op, _base_name(op.name), bound, dict(given), (), 0, False)
    for contract in contracts:  # KV401 (kvlen) keeps state across calls: the guard's job
        try:
            contract(call)
        except Exception:  # noqa: BLE001 - a contract that cannot read this call rejects nothing
            continue
    return call.findings


def reject_loudly(op, given) -> None:
    """Raise EmulatedOperatorError for the first loud finding of this call."""
    for finding in _findings(op, given):
        if is_loud(finding):
            raise EmulatedOperatorError(finding)
