"""The contracts' registry, and `check_call`, the public entry point that runs them on one call.

Each family (`kvlint/runtime/families/<family>/contracts.py`) registers its checks for operator
base names with `@contract(...)`. The guard asks `contracts_for(op)` once per operator at patch
time; anything else (the CPU emulation, a test) calls `check_call(op_name, bound_args)`, which
needs no patching and returns the findings of that one call.

Verdict cache: a contract registered with `pure=True` is shape-only: its verdict (its findings,
and what it adds to the family view) is a function of the call's *signature* (`signature()`:
how many positional arguments, the keywords passed, and per value its shape, dtype and
contiguity (strides when not contiguous) for a tensor, type and value for a scalar, string or
bool, type and length for a list of ints, None for None). It never reads a tensor's values,
a length list's entries, the device, the mode (meta/full) or state. `run()` runs an operator's
pure contracts once per signature and replays their verdict on the next call of that signature
(the layers of a model repeat one), then runs the other contracts (value reads, KV401's state)
on every call. A verdict is replayed exactly: the same findings in the same order, each with
this call's site (so the guard's warnings follow the same once-per-site rules), and the view
rebuilt from the cached numbers with this call's tensors. A signature whose pure contracts
crashed is not cached (the crash is reported per call site, as without the cache).

Family modules import only this module, `kvlint.runtime.call` and the facts; never the guard."""
from __future__ import annotations

import warnings
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

import torch

from kvlint.runtime import callsite
from kvlint.runtime.errors import ContractError, Violation

_REGISTRY: Dict[str, List[Callable]] = {}
_loaded = False

# The order contracts run in, whatever order their modules were imported in: the FA view
# first (fa's fa_view sets call.view for the rest), the writers' slot values and the stateful
# kv_len discipline last.
_MODULE_ORDER = ("fa.contracts", "fa.paged", "fa.quant_out", "fa.quant_in", "fusion.contracts", "mla.contracts",
                 "cache_write.contracts", "kvlen.contracts")
# Contracts that keep state across calls (KV401): run by the guard; by check_call on request.
STATEFUL_MODULES = frozenset({"kvlen.contracts"})


def contract(*names: str, pure: bool = False, works: Optional[Callable] = None, detached: bool = False):
    """Register `fn` for the operator base names `names`. `pure`: shape-only (see the module
    docstring); its verdict is cached per call signature. For the other contracts (run on every
    call), what a cache hit may skip: `works(call)`, evaluated once per cached verdict right after
    the pure contracts ran, says whether `fn` has anything to check in calls with that verdict
    (it may read the family view's numbers and the operator name, never a value, the mode or
    state; `fn` itself must return at once when it says no); a hit runs only the contracts
    that work. `detached`: `fn` reads only the view's numbers (never its tensors: it takes
    them from `call.args`) and never writes the view, so a hit whose contracts are all detached
    hands them the verdict's detached view instead of a copy with the call's tensors."""
    def register(fn):
        fn.kvlint_pure = pure
        fn.kvlint_works = works
        fn.kvlint_detached = detached
        for name in names:
            _REGISTRY.setdefault(name, []).append(fn)
        return fn
    return register


def _load() -> None:
    global _loaded
    if not _loaded:
        from kvlint.runtime.families.cache_write import contracts as _cw  # noqa: F401  (registration)
        from kvlint.runtime.families.fa import contracts as _fa  # noqa: F401  (registration)
        from kvlint.runtime.families.fa import paged as _paged  # noqa: F401
        from kvlint.runtime.families.fa import quant_out as _quant_out  # noqa: F401
        from kvlint.runtime.families.fusion import contracts as _fusion  # noqa: F401
        from kvlint.runtime.families.kvlen import contracts as _kvlen  # noqa: F401
        from kvlint.runtime.families.mla import contracts as _mla  # noqa: F401
        _loaded = True


def _module(fn) -> str:
    return ".".join(fn.__module__.split(".")[-2:])


def _rank(fn) -> int:
    module = _module(fn)
    return _MODULE_ORDER.index(module) if module in _MODULE_ORDER else len(_MODULE_ORDER)


def base_name(name: str) -> str:
    """`_X_get_max_workspace` is checked as X (same arguments, same contracts)."""
    from kvlint.facts import load_facts

    return load_facts().namespaces.base_name(name)


def _order(fn) -> Tuple[bool, int]:
    return (not getattr(fn, "kvlint_pure", False), _rank(fn))


def contracts_named(name: str) -> List[Callable]:
    """The contracts of operator `name`, in the order they run: the pure ones first, then the
    others, each group by module (_MODULE_ORDER) and, within a module, registration order."""
    _load()
    return sorted(_REGISTRY.get(base_name(name), ()), key=_order)


def contracts_for(op) -> List[Callable]:
    return contracts_named(op.name)


# ------------------------------------------------------------------------------ verdict cache
_Tensor = torch.Tensor
VERDICTS_PER_OPERATOR = 4096   # signatures kept per operator; the cache starts afresh past that


def signature(args, kwargs) -> Optional[tuple]:
    """The call's signature (module docstring), or None when an argument has none (a list
    holding anything but ints, an object). The schema defaults are the same on every call of
    an operator, so only what the caller passed counts: how many positionally, the keyword
    names in call order, then, flat, per value: a tensor's shape (a torch.Size), dtype and True
    when contiguous, else its strides; a string or None as it is; a number's or bool's type and
    value; a list's or tuple's type and length. The first item of a value tells its kind and so
    how many items follow (a Size or tuple: 3; a str or None: 1; a type: 2), so two different
    calls never share a signature."""
    parts = [len(args), *kwargs]
    add = parts.append
    for v in (*args, *kwargs.values()) if kwargs else args:
        cls = type(v)
        if cls is _Tensor:
            add(v.shape)
            add(v.dtype)
            add(v.is_contiguous() or v.stride())
        elif cls is str or v is None:
            add(v)
        elif cls is int or cls is float or cls is bool:  # the type in the item: 1, 1.0 and True are equal as values
            add(cls)
            add(v)
        elif isinstance(v, _Tensor):  # Parameter and other subclasses
            add(v.shape)
            add(v.dtype)
            add(v.is_contiguous() or v.stride())
        elif cls is list or cls is tuple:
            for item in v:
                if type(item) is not int:
                    return None
            add(cls)
            add(len(v))
        else:
            return None
    return tuple(parts)


# ------------------------------------------------------------------------------ key functions
# The guard's fast signature: per call pattern (how many positional arguments, which keywords,
# each value's exact type, which tensor values are the same object as an earlier one), a
# function generated once that tests the pattern and returns the signature's reads in one
# straight-line expression, with no loop and no per-value type branch. Its key is (pattern
# token, per tensor not an alias of an earlier value: shape, dtype, True or strides; per
# str/int/float/bool: the value; per list or tuple of ints: its length; None and an alias:
# nothing), so it holds what `signature()` holds: one verdict per key (an alias, e.g. MLA's key
# passed as the value, has the metadata of the tensor it is: reading it again adds nothing).
# Keyword order is not in it: contracts read arguments by name (a call with the same keywords in
# another order gets the same verdict).
PATTERNS_PER_OPERATOR = 64     # patterns kept per operator; they start afresh past that
_SCALARS = (str, int, float, bool)
_SEQUENCES = (list, tuple)


class _Pattern:
    """A key function's first item: which pattern the key's other items belong to."""

    __slots__ = ("pattern",)

    def __init__(self, pattern):
        self.pattern = pattern

    def __repr__(self) -> str:
        return f"<kvlint call pattern {self.pattern!r}>"


def _keyable(cls) -> bool:
    return cls in _SCALARS or cls is type(None) or cls in _SEQUENCES or issubclass(cls, _Tensor)


def aliases_of(values, types) -> tuple:
    """(j, i) for each tensor value j that is the very object of an earlier tensor value i (the
    first one): part of a call pattern."""
    found = []
    for j, cls in enumerate(types):
        if isinstance(cls, type) and issubclass(cls, _Tensor):
            for i in range(j):
                if values[i] is values[j]:
                    found.append((j, i))
                    break
    return tuple(found)


def pattern_of(args, kwargs) -> tuple:
    """The call pattern of `key_source`: (npos, keyword names, value types, aliases)."""
    types = tuple(map(type, args)) + tuple(map(type, kwargs.values()))
    return (len(args), tuple(kwargs), types, aliases_of((*args, *kwargs.values()), types))


def key_source(pattern: tuple, env: Dict[str, Any]) -> Tuple[List[str], str]:
    """The body of a key function of call pattern `pattern` (`pattern_of`; every type passes
    `_keyable`): lines (indented for a function of `args, kwargs`) that return None when the
    call does not have the pattern (or a list holds anything but ints) and otherwise leave the
    values in locals a0.. (positional) and k0.. (keywords, in the pattern's order), and the key's
    expression. Adds the names the lines use to `env`."""
    npos, names, types, aliases = pattern
    env.update({"_token": _Pattern(pattern), "_int": int})
    values = [f"a{i}" for i in range(npos)] + [f"k{i}" for i in range(len(names))]
    lines = [f"    if len(args) != {npos} or len(kwargs) != {len(names)}:",
             "        return None"]
    if npos:
        lines.append(f"    {', '.join(values[:npos])}, = args")
    if names:
        lines.append("    try:")
        lines.extend(f"        k{i} = kwargs[{name!r}]" for i, name in enumerate(names))
        lines.append("    except KeyError:")
        lines.append("        return None")
    alias = dict(aliases)
    tests, loops, items = [], [], ["_token"]
    for i, (value, cls) in enumerate(zip(values, types)):
        if cls is type(None):
            tests.append(f"{value} is not None")
            continue
        if i in alias:
            tests.append(f"{value} is not {values[alias[i]]}")
            continue
        env[f"_t{i}"] = cls
        tests.append(f"type({value}) is not _t{i}")
        if cls in _SEQUENCES:
            loops.append(f"    for item in {value}:\n        if type(item) is not _int:\n            return None")
            items.append(f"len({value})")
        elif cls in _SCALARS:
            items.append(value)
        else:  # a tensor
            items.extend((f"{value}.shape", f"{value}.dtype", f"({value}.is_contiguous() or {value}.stride())"))
    if tests:
        lines.append(f"    if {' or '.join(tests)}:")
        lines.append("        return None")
    lines.extend(loops)
    return lines, f"({', '.join(items)},)"


def key_function(pattern: tuple) -> Callable:
    """The key function of one call pattern (`pattern_of`): `fn(args, kwargs)` returns None when
    the call does not have this pattern (or a list holds anything but ints), else the call's
    key. Each of the pattern's types must pass `_keyable`."""
    env: Dict[str, Any] = {}
    lines, key = key_source(pattern, env)
    source = "\n".join(["def key(args, kwargs):", *lines, f"    return {key}"])
    exec(source, env)  # noqa: S102 - generated from the pattern's names and types, never from values
    return env["key"]


def _key_function_or_none(pattern: tuple) -> Optional[Callable]:
    return key_function(pattern) if all(map(_keyable, pattern[2])) else None


def per_pattern(table: Dict[tuple, Optional[Callable]], pattern: tuple, make: Callable) -> Optional[Callable]:
    """`make(pattern)`, made once per pattern and kept in `table` (at most
    PATTERNS_PER_OPERATOR patterns: past that the table starts afresh)."""
    if pattern in table:
        return table[pattern]
    if len(table) >= PATTERNS_PER_OPERATOR:
        table.clear()
    made = table[pattern] = make(pattern)
    return made


class _Verdicts(dict):
    """signature -> verdict, and `last`: the (signature, verdict) found last, compared before
    the dict is hashed into (the layers of a model repeat one signature)."""

    __slots__ = ("last",)

    def __init__(self):
        super().__init__()
        self.last = None

    def clear(self) -> None:
        self.last = None
        super().clear()


class Plan:
    """An operator's contracts split for the verdict cache: `pure` (run once per signature),
    `rest` (every call), and the cached verdicts: signature -> (view template, findings without
    their site)."""

    __slots__ = ("pure", "rest", "verdicts", "keyfn", "patterns", "hits")

    def __init__(self, contracts):
        self.pure = tuple(fn for fn in contracts if getattr(fn, "kvlint_pure", False))
        self.rest = tuple(fn for fn in contracts if not getattr(fn, "kvlint_pure", False))
        self.verdicts = _Verdicts()
        self.keyfn: Optional[Callable] = None   # the key function of the last call pattern seen
        self.patterns: Dict[tuple, Optional[Callable]] = {}
        # a verdict's idle contracts (`works` said no) -> (the rest a hit runs, whether it needs
        # the view with the call's tensors)
        self.hits: Dict[frozenset, Tuple[tuple, bool]] = {}

    def hit(self, idle: frozenset) -> Tuple[tuple, bool]:
        """(the contracts a cache hit runs, whether they need the attached view) for a verdict
        whose idle contracts are `idle`."""
        found = self.hits.get(idle)
        if found is None:
            rest = tuple(fn for fn in self.rest if fn not in idle)
            found = self.hits[idle] = (rest, not all(getattr(fn, "kvlint_detached", False) for fn in rest))
        return found

    def idle(self, call) -> frozenset:
        """The contracts of `rest` that say (`works`) they have nothing to check in a call with
        this call's verdict; one whose `works` fails counts as working."""
        idle = []
        for fn in self.rest:
            works = getattr(fn, "kvlint_works", None)
            if works is not None:
                try:
                    if not works(call):
                        idle.append(fn)
                except Exception:  # noqa: BLE001 - then the contract runs on every hit
                    pass
        return frozenset(idle)

    def key(self, args, kwargs) -> Optional[tuple]:
        """The call's verdict key (None: not cached): the last pattern's key function's, else
        this pattern's (generated on first sight), else, for a value no key function reads
        (an object, a dtype), `signature()`'s (then None)."""
        keyfn = self.keyfn
        if keyfn is not None:
            key = keyfn(args, kwargs)
            if key is not None:
                return key
        keyfn = per_pattern(self.patterns, pattern_of(args, kwargs), _key_function_or_none)
        if keyfn is None:
            return signature(args, kwargs)
        self.keyfn = keyfn
        return keyfn(args, kwargs)  # None: a list holding something other than ints


_PLANS: Dict[str, Plan] = {}


def plan_named(name: str, stateful: bool = True) -> Plan:
    """The Plan of operator `name` (one per base name and statefulness, shared by the guard,
    check_call and kvlint.emulate, so they share verdicts)."""
    key = base_name(name) + ("" if stateful else ":stateless")
    plan = _PLANS.get(key)
    if plan is None:
        contracts = contracts_named(name)
        if not stateful:
            contracts = [fn for fn in contracts if _module(fn) not in STATEFUL_MODULES]
        plan = _PLANS[key] = Plan(contracts)
        if not stateful:  # the same pure contracts: one cache
            plan.verdicts = plan_named(name).verdicts
    return plan


def clear_verdicts() -> None:
    for plan in _PLANS.values():
        plan.verdicts.clear()


def _replay(call, templates) -> None:
    site = callsite.describe(call.frame())
    call.findings.extend(Violation(code, op, argument, expected, given, consequence, site, severity)
                         for code, op, argument, expected, given, consequence, severity in templates)


def run(plan: Plan, call, crashed: Callable, key: Optional[tuple]) -> None:
    """Run `plan` on `call`: its pure contracts, or their cached verdict for signature `key`
    (None: not cached), then the rest. `crashed(contract, call, exc)` reports a contract that
    raised something other than ContractError."""
    entry = None
    if key is not None:
        verdicts = plan.verdicts
        last = verdicts.last
        if last is not None and last[0] == key:
            entry = last[1]
        else:
            entry = verdicts.get(key)
            if entry is not None:
                verdicts.last = (key, entry)
    if entry is not None:
        template, findings, idle = entry
        rest, attach = plan.hits.get(idle) or plan.hit(idle)
        if template is not None:
            call.view = template.attached(call.args) if attach else template
        if findings:
            _replay(call, findings)
    else:
        rest = plan.rest
        before, clean = len(call.findings), True
        for fn in plan.pure:
            try:
                fn(call)
            except ContractError:
                raise
            except Exception as exc:  # noqa: BLE001 - a contract must never break the user's call
                crashed(fn, call, exc)
                clean = False
        if key is not None and clean:
            verdicts = plan.verdicts
            if len(verdicts) >= VERDICTS_PER_OPERATOR:
                verdicts.clear()
            view = call.view
            entry = (view.detached() if view is not None else None,
                     tuple((f.code, f.op, f.argument, f.expected, f.given, f.consequence, f.severity)
                           for f in call.findings[before:]),
                     plan.idle(call))
            verdicts[key] = entry
            verdicts.last = (key, entry)
    for fn in rest:  # a miss runs them all: what a hit skips must find nothing (tests compare both)
        try:
            fn(call)
        except ContractError:
            raise
        except Exception as exc:  # noqa: BLE001
            crashed(fn, call, exc)


def _catalog_operator(op_name: str, namespace: Optional[str]):
    from kvlint.catalog import load_catalog

    fallback = None
    for op in load_catalog().operators:
        if op.name == op_name and (namespace is None or op.namespace == namespace):
            if not op.overload:
                return op
            fallback = fallback or op
    return fallback


def check_call(op_name: str, bound_args: Mapping[str, Any], *, namespace: Optional[str] = None,
               checks: str = "meta", stateful: bool = False, cache: bool = True) -> list:
    """Run the contracts of one call of `op_name` (a torch_npu operator base name, e.g.
    "npu_fused_infer_attention_score") on `bound_args` (argument name -> value; schema defaults
    are filled in for what is missing) and return the `Violation`s, in contract order. Raises
    nothing for a broken call: `raise ContractError(f)` for each error-severity finding `f` to
    get the guard's raise mode. `checks="full"` also reads device tensor values. `stateful`
    also runs the cross-call kv_len discipline (KV401; off by default: the guard runs it).
    An unknown operator has no contracts: []. A crashing contract warns and is skipped.
    `cache=False` runs every contract instead of replaying a cached shape verdict (the
    findings are the same; tests compare the two)."""
    from kvlint.runtime.call import Call

    op = _catalog_operator(op_name, namespace)
    if op is None:
        return []
    bound = {p.name: p.default for p in op.params if not p.required}
    bound.update(bound_args)
    kwargs = dict(bound_args)
    call = Call(op, base_name(op.name), bound, kwargs, (), 0, checks == "full")
    run(plan_named(op.name, stateful), call, _warn_crash, signature((), kwargs) if cache else None)
    return call.findings


def _warn_crash(fn, call, exc) -> None:
    warnings.warn(f"kvlint: contract {fn.__name__} could not check this {call.name} call "
                  f"({type(exc).__name__}: {exc}); skipped", RuntimeWarning, stacklevel=4)
