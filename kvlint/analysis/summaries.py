"""Function summaries: which parameters of a function reach which operator argument.

A function or method that forwards its parameters to an operator call (vllm-ascend's
`DeviceOperator.npu_fused_infer_attention_score(...)`, a `flash_attn` drop-in, a framework
wrapper) is an *adapter*. Its `ForwardingSummary` says, for the operator call inside it:

- which adapter parameter reaches which operator keyword or position, directly or through a
  dtype- and value-keeping method (`key.contiguous()`, `x.to(device)`);
- whether its `*args` / `**kwargs` are forwarded as the operator's;
- which operator arguments the adapter fixes itself: they count as passed, with a value the
  rules do not judge at the site (the adapter's own operator call is checked where it is
  written; a value fixed on one branch of a two-branch adapter must not be blamed on a site
  that takes the other).

A call of an adapter is then checked as a call of the operator (`AdapterResolver.resolve`):
the rules see a synthetic call, placed at the call site, whose arguments are the values the
site passes, mapped through the summary, plus the adapter's fixed ones. Summaries are pure
functions of a module's content: computed once per function of a parsed module (a module is
parsed once per content hash, see project.py) and memoised with it.

Which calls are candidates (the hot path stays cheap): a callee whose last name is an
operator name with a receiver that is not an operator namespace (`DeviceOperator.X`,
`self.backend.X`), a function or method of this module that makes an operator call, and a
function imported from a project module whose bytes name an operator.
"""
from __future__ import annotations

import ast
import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple, Union, cast

from kvlint.analysis.context import minimal_words
from kvlint.analysis.module import FunctionNode, dotted_name, place, positional_parameters
from kvlint.analysis.resolve import OperatorCall, OperatorResolver
from kvlint.analysis.values import Unknown, ValueTracer

# methods that hand the operator the same tensor values (for what the rules judge: dtype,
# literal shape, identity)
KEEPING_METHODS = frozenset({"contiguous", "to", "npu", "cuda", "clone", "detach"})


@dataclass
class ForwardingSummary:
    operator: OperatorCall  # the operator call inside the adapter (its module's nodes)
    params: Tuple[str, ...]  # the adapter's positional parameters, self/cls excluded
    to_keyword: Dict[str, str] = field(default_factory=dict)  # parameter -> operator keyword
    to_position: Dict[str, int] = field(default_factory=dict)  # parameter -> operator position
    args_forwarded: Optional[str] = None  # `*args` passed on as the operator's
    kwargs_forwarded: Optional[str] = None  # `**kwargs` passed on as the operator's
    fixed: Dict[str, ast.expr] = field(default_factory=dict)  # keywords the adapter sets itself
    fixed_positions: Dict[int, ast.expr] = field(default_factory=dict)
    complete: bool = True  # False: the operator call has a `**x` / `*x` that is not forwarded
    named: frozenset = frozenset()  # every named parameter of the adapter
    returns_result: bool = False  # the adapter returns the operator's result as it is
    computed: bool = False  # some operator argument is computed in the adapter (not a parameter, not a literal)

    @property
    def forwards(self) -> bool:
        return bool(self.to_keyword or self.to_position or self.args_forwarded or self.kwargs_forwarded)


class OperatorNames:
    """`search(data)`: does `data` hold an operator name of the catalog (a module without one
    holds no adapter: it is not parsed to look for one)? The names are substrings tested one
    by one, those holding another name left out: at memchr speed, where the one alternation
    regex of the names (`pattern`, the cache key Project.mentions files it under) tries every
    name at every byte (0.5 ms for a 40 KB module)."""

    flags = 0

    def __init__(self, names):
        words = {n.encode() for n in names}
        self.words = minimal_words(words)
        self.pattern = b"|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))

    def search(self, data: bytes) -> Optional[bytes]:
        for w in self.words:
            if w in data:
                return w
        return None


_WORDS: Dict[int, OperatorNames] = {}


def operator_words(catalog) -> OperatorNames:
    """The catalog's OperatorNames, one object per catalog."""
    found = _WORDS.get(id(catalog))
    if found is None:
        found = _WORDS[id(catalog)] = OperatorNames(catalog.operator_names())
    return found


def _param_of(expr: ast.expr, params: frozenset) -> Optional[str]:
    """The parameter `expr` hands over unchanged (through keeping methods), or None."""
    while isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) \
            and expr.func.attr in KEEPING_METHODS and not any(
                k.arg == "dtype" for k in expr.keywords) and not (
                expr.func.attr == "to" and any(isinstance(a, ast.Attribute) and (dotted_name(a) or "").startswith(
                    ("torch.", "np.")) for a in expr.args)):
        expr = expr.func.value
    return expr.id if isinstance(expr, ast.Name) and expr.id in params else None


def _reassigned(tracer: ValueTracer, func: ast.AST) -> frozenset:
    return frozenset(tracer.assignments(func))


def summarize(func: Union[ast.FunctionDef, ast.AsyncFunctionDef], op: OperatorCall, tracer: ValueTracer, is_method: bool) -> ForwardingSummary:
    a = func.args
    positional = [p.arg for p in positional_parameters(func)]
    if is_method and positional:
        positional = positional[1:]
    named = frozenset(positional + [p.arg for p in a.kwonlyargs])
    reassigned = _reassigned(tracer, func)
    live = frozenset(n for n in named if n not in reassigned)  # a rebound parameter is not the caller's value
    s = ForwardingSummary(op, tuple(positional), named=named)
    call = op.call
    for i, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            if a.vararg is not None and isinstance(arg.value, ast.Name) and arg.value.id == a.vararg.arg \
                    and i == len(call.args) - 1:
                s.args_forwarded = a.vararg.arg
            else:
                s.complete = False
            continue
        p = _param_of(arg, live)
        if p is not None:
            s.to_position[p] = i
        else:
            s.fixed_positions[i] = arg
            s.computed |= not isinstance(arg, ast.Constant)
    for kw in call.keywords:
        if kw.arg is None:
            if a.kwarg is not None and isinstance(kw.value, ast.Name) and kw.value.id == a.kwarg.arg \
                    and a.kwarg.arg not in reassigned:
                s.kwargs_forwarded = a.kwarg.arg
            else:
                s.complete = False
            continue
        p = _param_of(kw.value, live)
        if p is not None:
            s.to_keyword[p] = kw.arg
        else:
            s.fixed[kw.arg] = kw.value
            s.computed |= not isinstance(kw.value, ast.Constant)
    s.returns_result = _returns(func, call, tracer)
    return s


def _returns(func: ast.AST, call: ast.Call, tracer: ValueTracer) -> bool:
    """`return op(...)`, or `out = op(...)` then `return out`, on every return."""
    returns = tracer.returns_of(func)
    if not returns:
        return False
    for r in returns:
        if r is call:
            continue
        if isinstance(r, ast.Name) and any(v is call for v in tracer.candidates(r, r)):
            continue
        return False
    return True


class AdapterResolver:
    """Resolves calls of adapters to the operator they forward to (see the module doc)."""

    def __init__(self, resolver: OperatorResolver, operator_words: OperatorNames):
        self.resolver = resolver
        self.tracer = resolver.tracer
        self.index = resolver.index
        self.operator_words = operator_words
        self._summaries: Dict[int, Optional[ForwardingSummary]] = {}
        self._functions_with_calls: Optional[Dict[int, List[OperatorCall]]] = None
        self._calls_in: Dict[int, Tuple[ast.AST, List[OperatorCall]]] = {}  # function id -> (it, its calls)
        self._call_lines: Optional[List[int]] = None  # line of each of index.calls (in position order)
        self._synthetic: List[ast.AST] = []

    # -- which functions make operator calls -------------------------------------------------
    def direct_calls(self) -> Dict[int, List[OperatorCall]]:
        """Enclosing function id -> the operator calls it makes directly (this module)."""
        if self._functions_with_calls is None:
            table: Dict[int, List[OperatorCall]] = {}
            for call in self.index.calls:
                oc = self.resolver.resolve(call)
                if oc is not None:
                    func = self.index.enclosing_function(call)
                    if func is not None:
                        table.setdefault(id(func), []).append(oc)
            self._functions_with_calls = table
        return self._functions_with_calls

    def calls_in(self, func: ast.AST) -> List[OperatorCall]:
        """`direct_calls().get(id(func), [])`, resolving only the calls written inside `func`
        (its decorators to its last line) when the module's table is not built: an adapter
        of another module is asked about without resolving every call of that module."""
        if self._functions_with_calls is not None:
            return self._functions_with_calls.get(id(func), [])
        hit = self._calls_in.get(id(func))
        if hit is not None and hit[0] is func:
            return hit[1]
        calls = self.index.calls
        lines = self._call_lines
        if lines is None:
            lines = self._call_lines = [c.lineno for c in calls]
        first = min([cast(ast.stmt, func).lineno] + [d.lineno for d in getattr(func, "decorator_list", ())])
        last = getattr(func, "end_lineno", None) or 10 ** 9
        enclosing, resolve = self.index.enclosing_function, self.resolver.resolve
        found = []
        for call in calls[bisect_left(lines, first):bisect_right(lines, last)]:
            if enclosing(call) is func:
                oc = resolve(call)
                if oc is not None:
                    found.append(oc)
        self._calls_in[id(func)] = (func, found)
        return found

    def summary(self, func: ast.AST, is_method: bool, depth: int = 0) -> Optional[ForwardingSummary]:
        key = id(func) * 2 + is_method
        if key in self._summaries:
            return self._summaries[key]
        self._summaries[key] = None  # recursion ends here
        calls = self.calls_in(func)
        if len(calls) != 1 or not isinstance(func, FunctionNode):
            return None  # one operator call per branch: which one a site reaches is unknown
        s = summarize(func, calls[0], self.tracer, is_method)
        # Heuristic PURE_FORWARDER: only an adapter whose operator arguments are all its own
        # parameters or literals stands for the operator at its call sites (a value it
        # computes itself, e.g. an NZ view of a cache, would be an unknown the rules judge)
        best = s if s.forwards and not s.computed else None
        self._summaries[key] = best
        return best

    # -- call sites --------------------------------------------------------------------------
    def candidate(self, call: ast.Call, operator_names) -> bool:
        f = call.func
        if isinstance(f, ast.Attribute):
            if f.attr in operator_names:
                return True
            if isinstance(f.value, ast.Name) and f.value.id in ("self", "cls"):
                return True
            return isinstance(f.value, ast.Name) and f.value.id in self.index.from_imports
        if isinstance(f, ast.Name):
            return f.id in self.tracer.definitions() or f.id in self.index.from_imports
        return False

    def target(self, call: ast.Call) -> Optional[Tuple["AdapterResolver", ast.AST, bool]]:
        """(resolver of the adapter's module, adapter function, is it a method taking self/cls
        implicitly) for the callee of `call`."""
        f = call.func
        tracer = self.tracer
        found = None
        words = self.operator_words
        if isinstance(f, ast.Name):
            found = tracer.definition(f, call, words, functions_only=True)
            if found is not None and isinstance(found[1], FunctionNode):
                return self._for(found[0]), found[1], False
            return None
        if not isinstance(f, ast.Attribute):
            return None
        owner: Optional[Tuple[ValueTracer, ast.AST]] = None
        if isinstance(f.value, ast.Name) and f.value.id in ("self", "cls"):
            cls = self.index.enclosing_class(call)
            owner = (tracer, cls) if cls is not None else None
        elif isinstance(f.value, ast.Name):
            owner = tracer.definition(f.value, call, words)
            if owner is not None and isinstance(owner[1], FunctionNode):
                owner = None
        if owner is None and f.attr in self.resolver.operator_names \
                and isinstance(f.value, (ast.Name, ast.Attribute)):
            # `mod.adapter(...)`, or an object built from a class: `self.backend.X(...)`
            direct = tracer.definition(f, call, words) if isinstance(f.value, ast.Name) else None
            if direct is not None and isinstance(direct[1], FunctionNode):
                return self._for(direct[0]), direct[1], False
            for obj in tracer.candidates(f.value, call):
                if isinstance(obj, ast.Call) and isinstance(obj.func, (ast.Name, ast.Attribute)):
                    t = tracer.tracer_for(obj)
                    d = t.definition(obj.func, obj, words)
                    if d is not None and isinstance(d[1], ast.ClassDef):
                        owner = d
                        break
        if owner is None or not isinstance(owner[1], ast.ClassDef):
            return None
        from kvlint.analysis.values import _method

        method = _method(owner[1], f.attr, owner[0])
        if method is None:
            return None
        static = any(dotted_name(d) == "staticmethod" for d in getattr(method, "decorator_list", ()))
        return self._for(owner[0]), method, not static

    def _for(self, tracer: ValueTracer) -> "AdapterResolver":
        if tracer is self.tracer:
            return self
        project = tracer.project
        cache = project.__dict__.setdefault("_adapter_resolvers", {})
        r = cache.get(id(tracer))
        if r is None or r.tracer is not tracer:
            r = cache[id(tracer)] = AdapterResolver(project.resolver_of(tracer), self.operator_words)
        return r

    def resolve(self, call: ast.Call) -> Optional[OperatorCall]:
        """The operator call `call` amounts to through an adapter, as a synthetic call at
        `call` (or None)."""
        f = call.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in ("self", "cls") \
                and not self.direct_calls():
            return None  # a method of this module's classes: none makes an operator call
        hit = self.target(call)
        if hit is None:
            return None
        owner, func, is_method = hit
        if owner is not self:
            project = self.tracer.project
            if project is None or not project.mentions(owner.index.source.path, self.operator_words):
                return None
        s = owner.summary(func, is_method)
        if s is None:
            return None
        return OperatorCall(self._synthetic_call(call, s), s.operator.operator, s.operator.variant)

    def _synthetic_call(self, site: ast.Call, s: ForwardingSummary) -> ast.Call:
        positions: Dict[int, ast.expr] = {}
        keywords: List[ast.keyword] = []
        complete = s.complete
        extra_positional: List[ast.expr] = []

        def unknown(like: ast.AST) -> ast.expr:
            node = Unknown()
            place(node, like)
            self.index.parent[id(node)] = site
            self._synthetic.append(node)
            return node

        def fixed_value(value: ast.expr) -> ast.expr:
            return unknown(site)

        def route(param: Optional[str], value: ast.expr, kw: Optional[ast.keyword]) -> None:
            nonlocal complete
            if param is not None and param in s.to_keyword:
                keywords.append(self._keyword(s.to_keyword[param], value, kw or site))
            elif param is not None and param in s.to_position:
                positions[s.to_position[param]] = value
            elif param is not None and param in s.named:
                return  # consumed by the adapter
            elif kw is not None and s.kwargs_forwarded:
                keywords.append(self._keyword(kw.arg, value, kw))
            elif kw is None and s.args_forwarded:
                extra_positional.append(value)
            else:
                complete = False

        for i, arg in enumerate(site.args):
            if isinstance(arg, ast.Starred):
                complete = False
                continue
            route(s.params[i] if i < len(s.params) else None, arg, None)
        for kw in site.keywords:
            if kw.arg is None:
                if s.kwargs_forwarded:
                    keywords.append(self._keyword(None, kw.value, kw))
                else:
                    complete = False
                continue
            route(kw.arg, kw.value, kw)
        given = {k.arg for k in keywords}
        for name, value in s.fixed.items():
            if name not in given:
                keywords.append(self._keyword(name, fixed_value(value), site))
        for i, value in s.fixed_positions.items():
            positions.setdefault(i, fixed_value(value))
        args: List[ast.expr] = []
        for i in range(max(positions) + 1 if positions else 0):
            args.append(positions.get(i) or unknown(site))
        args.extend(extra_positional)
        if not complete:
            keywords.append(self._keyword(None, unknown(site), site))
        call = ast.Call(func=site.func, args=args, keywords=keywords)
        place(call, site)
        parent = self.index.parent_of(site)
        parent = parent if parent is not None else self.index.tree
        if not s.returns_result:
            # the site's result is not the operator's: rules about the operator's outputs
            # (arity, lse, extra outputs) see an unused result
            stmt = ast.Expr(value=call)
            place(stmt, site)
            self.index.parent[id(stmt)] = parent
            self._synthetic.append(stmt)
            parent = stmt
        self.index.parent[id(call)] = parent
        for k in keywords:
            self.index.parent[id(k)] = call
        self._synthetic.append(call)
        return call

    def _keyword(self, name: Optional[str], value: ast.expr, like: ast.AST) -> ast.keyword:
        kw = ast.keyword(arg=name, value=value)
        place(kw, like)
        self._synthetic.append(kw)
        return kw
