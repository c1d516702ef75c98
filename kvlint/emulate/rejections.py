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


def _ignore(contract, call, exc) -> None:
    """A contract that crashes rejects nothing and says nothing here (the guard, when on,
    reports it)."""


def findings(op, given) -> list:
    """The contracts' findings for one call, meta checks, without the ones that keep state
    across calls (KV401: the guard's job); shape verdicts are shared with the guard's cache.
    `given`: the arguments the caller passed (the dispatcher drops keywords equal to their
    default)."""
    from kvlint.runtime.call import Call  # imported here: kvlint.emulate loads without the guard
    from kvlint.runtime.registry import base_name, plan_named, run, signature

    bound = {p.name: p.default for p in op.params if not p.required}
    bound.update(given)
    kwargs = dict(given)
    call = Call(op, base_name(op.name), bound, kwargs, (), 0, False)
    run(plan_named(op.name, stateful=False), call, _ignore, signature((), kwargs))
    return call.findings


def reject_loudly(op, given) -> None:
    """Raise EmulatedOperatorError for the first loud finding of this call."""
    for finding in findings(op, given):
        if is_loud(finding):
            raise EmulatedOperatorError(finding)
