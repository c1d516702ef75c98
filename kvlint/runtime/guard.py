"""Installing and removing the guard.

Mechanism: every guarded operator is a `torch._ops.OpOverloadPacket` (`torch.ops.npu.X`, which
*is* `torch_npu.X`) with `OpOverload`s (`.default`, `.out`). Both call `self._op(...)`, an
instance attribute holding the C++ entry point. `patch()` replaces that attribute, on the
packet and on each overload, with a `_Guarded` callable that checks the contracts and then calls
the saved entry point; `unpatch()` puts the saved objects back. So every Python path to the
operator is guarded - `torch_npu.X`, `torch.ops.npu.X`, `torch.ops.npu.X.default`, references
captured before `patch()` (they are the same packet object) - and nothing else pays anything.

Invisible to everything but broken calls:
- torch hashes a packet / overload by `hash(self._op)`: `_Guarded` hashes like the entry point
  it wraps, so dicts keyed by the operator (inductor lowerings, decomposition tables) still hit.
- under tracing (FakeTensor / FunctionalTensor arguments) symbolic sizes are read through their
  hints, never `int()`-ed: no guard, no specialisation, no recompilation.
- handles belong to the context (thread, asyncio task) that opened them: a call is checked
  under its own context's innermost handle, else under the most recent handle open anywhere.
See docs/runtime.md for the measurements behind these choices.
"""
from __future__ import annotations

import contextvars
import threading
import warnings
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch

from kvlint.catalog import load_catalog
from kvlint.facts import load_facts
from kvlint.runtime import callsite, tracing
from kvlint.runtime.call import Call
from kvlint.runtime.errors import ContractError, ContractWarning, Violation
from kvlint.runtime.registry import base_name as _base_name
from kvlint.runtime.registry import clear_verdicts, key_source, pattern_of, per_pattern, plan_named, run

MODES = ("raise", "warn", "collect")
CHECKS = ("meta", "full")
OPERATOR_PACKAGES = load_facts().namespaces.packages

_lock = threading.RLock()
_open: List["GuardHandle"] = []            # every open handle, in opening order (any context)
_context: contextvars.ContextVar = contextvars.ContextVar("kvlint_guard_handles", default=())
_saved: List[Tuple[object, object]] = []   # (packet or overload, original _op)
_missing: Dict[str, str] = {}              # operator package -> why it could not be imported
_crashes: set = set()                      # (contract, call site) already warned about
_Tensor = torch.Tensor


class GuardHandle:
    """Returned by `patch()`; a context manager. In collect mode, `findings` lists what was found.
    `guarded` is how many operator entry points the guard wraps; `reason` says why it is 0."""

    def __init__(self, mode: str, checks: str):
        self.mode = mode
        self.checks = checks
        self.full = checks == "full"
        self.findings: List[Violation] = []
        self.active = False
        self.guarded = 0
        self.reason = ""

    def __enter__(self) -> "GuardHandle":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Remove this handle; the guard comes off when the last handle is closed."""
        unpatch(self)

    def __repr__(self) -> str:
        return f"<kvlint GuardHandle mode={self.mode} checks={self.checks} active={self.active}>"


class _Spec:
    """What the wrapper needs per operator overload, computed once at patch time. `entry` is
    the entry function of the last call pattern seen (`_entry_function`), `entries` those of
    every pattern seen (None: that pattern takes the generic path, `enter`)."""

    __slots__ = ("op", "name", "positional", "defaults", "plan", "names", "bind", "entry", "entries")

    def __init__(self, op):
        self.op = op
        self.name = _base_name(op.name)
        self.positional = tuple(p.name for p in op.params if p.kind == "positional")
        self.defaults = {p.name: p.default for p in op.params if not p.required}
        self.plan = plan_named(op.name)
        self.names = frozenset(p.name for p in op.params)
        self.bind = _binder(self.positional, self.defaults)
        self.entry = _no_entry
        self.entries: Dict[tuple, Optional[Callable]] = {}

    def enter(self, args, kwargs, full: bool):
        """(call, verdict key) for a call the last pattern's entry function did not take: this
        pattern's entry function (generated on first sight), else the generic path (binding,
        tracing's stand-ins, `Plan.key`); None when a traced size has no hint (not checked)."""
        entry = per_pattern(self.entries, pattern_of(args, kwargs), self._entry_or_none)
        if entry is not None:
            self.entry = entry
            found = entry(args, kwargs, full)
            if found is not None:
                return found
        bound = self.bind(args, kwargs)
        traced = bool(args) and type(args[0]) is not _Tensor and isinstance(args[0], _Tensor)
        if traced:
            bound = tracing.concrete(bound)  # hints for symbolic sizes, meta stand-ins
            if bound is None:
                return None
        call = Call(self.op, self.name, bound, kwargs, self.positional, len(args), full, traced)
        # traced calls: sizes are hints of symbolic ones, not a signature to reuse
        return call, None if traced else self.plan.key(args, kwargs)


    def _entry_or_none(self, pattern: tuple) -> Optional[Callable]:
        return _entry_function(self, pattern) if _fast(pattern[2]) else None


def _no_entry(args, kwargs, full):
    return None


_ENTRY_SCALARS = (str, int, float, bool, type(None), list, tuple)


def _fast(types) -> bool:
    """May a pattern with these value types take an entry function? Plain tensors, scalars,
    None and lists only: a tensor subclass (FakeTensor, FunctionalTensor under tracing, a
    Parameter) takes the generic path."""
    return all(cls is _Tensor or cls in _ENTRY_SCALARS for cls in types)


def _entry_function(spec: _Spec, pattern: tuple) -> Callable:
    """The guard's entry for one call pattern (`registry.pattern_of`), generated once:
    `entry(args, kwargs, full)` returns None when the call does not have the pattern, else
    (call, verdict key): the pattern's key function's tests and reads, the binding of every
    schema argument (the defaults, the positional values, the keywords) and the `Call`, in one
    function (the generic path: `bind`, `Call(...)`, `Plan.key`, three calls)."""
    npos, names = pattern[0], pattern[1]
    env: Dict[str, Any] = {"_defaults": spec.defaults, "_new": Call.__new__, "_Call": Call, "_op": spec.op,
                           "_name": spec.name, "_positional": spec.positional}
    lines, key = key_source(pattern, env)
    binds = [f"    bound[{name!r}] = a{i}" for i, name in zip(range(npos), spec.positional)]
    binds += [f"    bound[{name!r}] = k{i}" for i, name in enumerate(names)]
    source = "\n".join([
        "def entry(args, kwargs, full):", *lines,
        "    bound = _defaults.copy()", *binds,
        "    call = _new(_Call)",
        *(f"    call.{slot} = {value}" for slot, value in _call_slots(npos)),
        f"    return call, {key}"])
    exec(compile(source, __file__, "exec"), env)  # noqa: S102 - from the schema's and the pattern's names
    return env["entry"]


def _call_slots(npos: int):
    """What `Call.__init__` sets, as (slot, expression) for an entry function (a test compares
    both ways of making a Call)."""
    return (("op", "_op"), ("name", "_name"), ("args", "bound"), ("kwargs", "kwargs"),
            ("positional", "_positional"), ("npos", str(npos)), ("full", "full"), ("findings", "[]"),
            ("view", "None"), ("tracing", "False"), ("_frame", "False"), ("stamps", "None"))


def _binder(positional: Tuple[str, ...], defaults: dict):
    """`bind(args, kwargs)`: every schema argument by name, the defaults filled in; the
    positional values stored with one unpacking when the caller passed all of them."""
    env = {"_defaults": defaults, "_positional": positional}
    targets = "".join(f"bound[{name!r}], " for name in positional)
    source = ("def bind(args, kwargs):\n"
              "    bound = _defaults.copy()\n"
              f"    if len(args) == {len(positional)}:\n"
              f"        {targets or '_'} = args\n"
              "    else:\n"
              "        for name, value in zip(_positional, args):\n"
              "            bound[name] = value\n"
              "    if kwargs:\n"
              "        bound.update(kwargs)\n"
              "    return bound\n")
    exec(source, env)  # noqa: S102 - generated from the schema's argument names
    return env["bind"]


def _keyword_finding(spec: _Spec, kwargs, exc: Optional[Exception]) -> Optional[Violation]:
    """The dispatcher rejected the call: if a keyword is not in the schema (a v1/v2 keyword in
    the other version, often through **kwargs), name the keyword meant instead of the schema dump.
    Runs only after the operator failed (no cost on the happy path)."""
    unknown = [k for k in kwargs if k not in spec.names]
    if not unknown:
        return None
    import difflib

    facts = load_facts()
    versions, wrong = facts.versions, unknown[0]
    other = versions.other(spec.name)
    renames = versions.v2_to_v1 if spec.name == versions.v1 else versions.v1_to_v2 if other else {}
    hint = facts.keyword_hints.get(spec.name, {}).get(wrong)
    first_line = str(exc).strip().splitlines() if exc is not None else [
        f"Unknown keyword argument {wrong!r} for operator '{spec.op.namespace}::{spec.op.name}'"]
    dispatcher = next((line for line in first_line if "keyword" in line.lower()), first_line[0] if first_line else "")
    dispatcher = dispatcher.split(" Schema:")[0]  # the schema dump stays out of the message
    if wrong in renames:
        code, right, given = "KV101", renames[wrong], f"{wrong!r}, a keyword of {other}"
    elif hint is not None:
        code, right, given = "KV102", hint.use, f"{wrong!r} (not a keyword of {spec.name})"
    else:
        close = difflib.get_close_matches(wrong, sorted(spec.names), n=1)
        code, right, given = "KV102", close[0] if close else None, f"{wrong!r} (not a keyword of {spec.name})"
    expected = f"{right!r}" if right else f"one of {spec.name}'s keywords"
    frame = callsite.user_frame(3)
    return Violation(code, spec.name, wrong, expected, given,
                   f"the dispatcher rejects the call ({dispatcher.strip()})", callsite.describe(frame))


def _import_operator_packages() -> None:
    import importlib

    for package in OPERATOR_PACKAGES:
        try:
            importlib.import_module(package)
            _missing.pop(package, None)
        except Exception as exc:  # absent, or broken on this machine: guard what is there
            _missing[package] = f"{type(exc).__name__}: {exc}"
    callsite.reset()


def _targets():
    """(object whose _op to replace, catalog operator) for every registered catalog operator."""
    namespaces: Dict[str, object] = {}
    for op in load_catalog().operators:
        ns = namespaces.get(op.namespace)
        if ns is None:
            ns = namespaces[op.namespace] = getattr(torch.ops, op.namespace)
        try:
            packet = getattr(ns, op.name)
        except (AttributeError, RuntimeError):
            continue
        if not isinstance(packet, torch._ops.OpOverloadPacket):
            continue
        if op.overload:
            try:
                yield getattr(packet, op.overload), op
            except (AttributeError, RuntimeError):
                continue
        else:
            yield packet, op
            try:
                yield packet.default, op
            except (AttributeError, RuntimeError):
                pass


def _current() -> Optional[GuardHandle]:
    """The handle deciding this call: the caller's context's innermost open one, else the most
    recent one open in any context (a worker thread of a guarded process is guarded too)."""
    own = _context.get()
    for handle in reversed(own):
        if handle.active:
            return handle
    try:
        return _open[-1]
    except IndexError:
        return None


def _warn(message: str, category, frame) -> None:
    """A warning attributed to the user's line (so filters by module or line apply there)."""
    if frame is None:
        warnings.warn(message, category, stacklevel=3)
        return
    globs = frame.f_globals
    warnings.warn_explicit(message, category, frame.f_code.co_filename, frame.f_lineno,
                           module=globs.get("__name__"), registry=globs.setdefault("__warningregistry__", {}),
                           module_globals=globs)


def _report(handle: GuardHandle, call: Call) -> None:
    for finding in call.findings:
        if handle.mode == "collect":
            handle.findings.append(finding)
        elif handle.mode == "raise" and finding.severity == "error":
            raise ContractError(finding)
        else:
            _warn(finding.message, ContractWarning, call.frame())


def _crashed(contract, call: Call, exc: Exception) -> None:
    """A contract crashed (a kvlint bug, or input it does not know): warn once per contract and
    call site, never break the user's call."""
    site = callsite.describe(call.frame())
    key = (contract, site)
    if key in _crashes:
        return
    _crashes.add(key)
    _warn(f"kvlint: contract {contract.__name__} could not check this {call.name} call "
          f"({type(exc).__name__}: {exc}); skipped (reported once per call site)", RuntimeWarning, call.frame())


class _Guarded:
    """Stands in for an operator's `_op`: checks the call, then calls the saved entry point.
    Hashes like that entry point (torch's `OpOverload.__hash__` is `hash(self._op)`)."""

    __slots__ = ("__kvlint_original__", "_spec", "_hash", "__name__")

    def __init__(self, original, spec: _Spec):
        self.__kvlint_original__ = original
        self._spec = spec
        self._hash = hash(original)
        self.__name__ = f"kvlint_guarded_{spec.op.name}"

    def __hash__(self) -> int:
        return self._hash

    def __getattr__(self, name):  # anything else torch may read off `_op`
        return getattr(self.__kvlint_original__, name)

    def __call__(self, *args, **kwargs):
        own = _context.get()
        handle = own[-1] if own and own[-1].active else _current()
        if handle is not None:
            spec = self._spec
            found = spec.entry(args, kwargs, handle.full) or spec.enter(args, kwargs, handle.full)
            if found is not None:
                call, key = found
                run(spec.plan, call, _crashed, key)
                if call.findings:
                    if kwargs:  # an unknown keyword explains the rest (v2's num_heads leaves num_query_heads at 1)
                        finding = _keyword_finding(spec, kwargs, None)
                        if finding is not None:
                            call.findings.insert(0, finding)
                    _report(handle, call)
        try:
            return self.__kvlint_original__(*args, **kwargs)
        except (RuntimeError, TypeError) as exc:
            if not kwargs or handle is None:
                raise
            finding = _keyword_finding(self._spec, kwargs, exc)
            if finding is None:
                raise
            if handle.mode == "raise":
                raise ContractError(finding) from None  # instead of the dispatcher's schema dump
            if handle.mode == "collect":
                handle.findings.append(finding)
            else:
                warnings.warn(ContractWarning(finding.message), stacklevel=2)
            raise


def _install() -> int:
    _import_operator_packages()
    if not _saved:
        clear_verdicts()  # cached verdicts live while the guard is on (facts patched in between are seen)
    count = 0
    for target, op in _targets():
        original = target._op
        if isinstance(original, _Guarded):
            continue
        target._op = _Guarded(original, _Spec(op))
        _saved.append((target, original))
        count += 1
    return count


def _no_operator_reason() -> str:
    if _missing:
        return "; ".join(f"{name} is not importable ({why})" for name, why in _missing.items())
    return "no operator of rules/operators.json is registered with torch"


def refresh() -> None:
    """While patched, also guard operators registered since (e.g. torch_npu imported later)."""
    with _lock:
        if _open:
            _install()
            for handle in _open:
                handle.guarded = len(_saved)
                handle.reason = "" if _saved else handle.reason


def _uninstall() -> None:
    while _saved:
        target, original = _saved.pop()
        target._op = original
    from kvlint.runtime.families.kvlen import contracts as kvlen

    kvlen.reset()


_warned_empty = False


def patch(mode: str = "raise", checks: str = "meta") -> GuardHandle:
    """Guard every call of the known Ascend attention / KV-cache operators.

    Idempotent and nestable: each call returns a new handle, owned by the calling context; the
    innermost open handle of a context decides the mode of its calls; the operators are wrapped
    once and unwrapped when the last handle (of any context) is closed. When no operator can be
    guarded (torch_npu not importable), warns once with the reason (`handle.reason`)."""
    global _warned_empty
    if mode not in MODES:
        raise ValueError(f"kvlint.patch: mode must be one of {', '.join(MODES)}, got {mode!r}")
    if checks not in CHECKS:
        raise ValueError(f"kvlint.patch: checks must be one of {', '.join(CHECKS)}, got {checks!r}")
    handle = GuardHandle(mode, checks)
    with _lock:
        if not _saved:
            _install()
        handle.guarded = len(_saved)
        if not _saved:
            handle.reason = _no_operator_reason()
        _open.append(handle)
        handle.active = True
        warn_empty = not _saved and not _warned_empty
        _warned_empty = _warned_empty or warn_empty
    _context.set(_context.get() + (handle,))
    if warn_empty:
        warnings.warn(f"kvlint.patch(): guarding no operator: {handle.reason}", RuntimeWarning, stacklevel=2)
    return handle


def unpatch(handle: Optional[GuardHandle] = None) -> None:
    """Close `handle`, or, without one, every handle the calling context opened: the original
    operators are back once no handle is open anywhere. Calling it when nothing is patched does
    nothing."""
    own = _context.get()
    with _lock:
        if handle is None:
            closing = [h for h in own if h.active]
        else:
            closing = [handle] if handle.active else []
        for h in closing:
            _open.remove(h)
            h.active = False
        if not _open and _saved:
            _uninstall()
    if closing and any(h in own for h in closing):
        _context.set(tuple(h for h in own if h.active))


def is_patched() -> bool:
    return bool(_saved)
