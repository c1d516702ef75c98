"""Which operator a call really is.

`OperatorResolver.resolve(call)` is the one interface the rules use. It works from the
module's imports and from aliases bound in the enclosing function or class, never from
string matching on the call text alone:

- `torch_npu.X`, `torch.ops.npu.X`, `import torch_npu as t; t.X`, `from torch_npu import X as fa`
- optional imports: `try: import torch_npu` / `except ImportError: torch_npu = None` (a name
  bound to an import and otherwise only to None is the import wherever it is called or read)
- the `.out` / `.default` overloads and the `_X_get_max_workspace` twins
- receivers bound to an operator namespace: `fa_ops = torch.ops.npu` in the function,
  `self.fa_ops = torch.ops.npu` anywhere in the class, a method of the class that returns a
  namespace (`self._fa_ops_for(is_prefill)`), and the torchair alternatives (`torchair.ops`,
  `tng.ops`), which take the same keywords
- names bound to an operator object (`fa = torch_npu.npu_fused_infer_attention_score`), in
  the function, an enclosing function, the class or at module level, through
  `functools.partial(op, ...)` (whose keywords count as the call's) and
  `getattr(torch.ops.npu, "op")`

A same-named method of a user class (`DeviceOperator.npu_fused_infer_attention_score`) has a
receiver that is none of these, so it is not the operator.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Tuple, cast

from kvlint.analysis.module import ModuleIndex, dotted_name, optional_import
from kvlint.analysis.values import ValueTracer
from kvlint.catalog import Catalog, Operator
from kvlint.facts import load_facts

_NAMESPACES = load_facts().namespaces
# Qualified prefixes that name an operator namespace, and the catalog namespace each means
# (rules/facts/operators.toml [namespaces.prefixes]).
NAMESPACE_PREFIXES: Mapping[str, str] = _NAMESPACES.prefixes
WORKSPACE_PREFIX, WORKSPACE_SUFFIX = _NAMESPACES.workspace_prefix, _NAMESPACES.workspace_suffix
_DOTTED_PREFIXES = tuple(prefix + "." for prefix in NAMESPACE_PREFIXES)  # one test rejects the rest


@dataclass(frozen=True)
class OperatorCall:
    call: ast.Call
    operator: Operator
    variant: str  # "", "out", "default" or "workspace"

    @property
    def name(self) -> str:
        return self.operator.name


class OperatorResolver:
    """Resolves calls with the module's `ValueTracer` (the one assignment tracer): a callee
    name or `self.attr` is followed to what it was bound to (in the function, an enclosing
    function, the class, the module), then qualified through the imports."""

    def __init__(self, index: ModuleIndex, catalog: Catalog, tracer: Optional[ValueTracer] = None):
        self.index = index
        self.catalog = catalog
        self.tracer = tracer if tracer is not None else ValueTracer(index)
        # callees are followed inside this module only (an alias imported from another
        # module is looked up explicitly, see _qualify): following every `self.x = Cls(...)`
        # into the project's other modules would parse them for nothing (the hot path)
        self._local_view: Optional[ValueTracer] = None  # built when a callee is first traced
        self.operator_names = catalog.operator_names()
        # callee names that may be an operator at once: operator names, overloads, imports
        self._kept: Optional[frozenset] = None
        self._assigned: Optional[Tuple[frozenset, frozenset]] = None
        # call id -> the functools.partial(...) calls its callee went through (their keywords
        # are the call's too)
        self.partials: Dict[int, Tuple[ast.Call, ...]] = {}
        self._resolved: Dict[int, Tuple[ast.Call, Optional[OperatorCall]]] = {}

    @property
    def _local(self) -> ValueTracer:
        if self._local_view is None:
            self._local_view = self.tracer if self.tracer.project is None else self.tracer.local_view()
        return self._local_view

    # -- public -------------------------------------------------------------------------
    def resolve(self, call: ast.Call) -> Optional[OperatorCall]:
        hit = self._resolved.get(id(call))
        if hit is not None:
            return hit[1]
        oc = self._resolve(call)
        self._resolved[id(call)] = (call, oc)  # holds the call: its id stays its own
        return oc

    def _resolve(self, call: ast.Call) -> Optional[OperatorCall]:
        func = call.func
        attribute = False
        if isinstance(func, ast.Attribute):
            last, attribute = func.attr, True
        elif isinstance(func, ast.Name):
            last = func.id
        elif isinstance(func, ast.Call):  # getattr(torch.ops.npu, "...")(...), partial(...)(...)
            last = ""
        else:
            return None
        # cheap reject: the callee's last part must be an operator name, an overload, an
        # import or an alias
        kept = self._kept
        if kept is None:
            kept = self._kept = self.operator_names | {"out", "default"} | self.index.imports.keys() \
                | self.index.from_imports.keys()
        if last not in kept and not (last.startswith(WORKSPACE_PREFIX) and last.endswith(WORKSPACE_SUFFIX)):
            # only a name, `self.x`/`cls.x` or a call can still be an alias
            base = cast(ast.Attribute, func).value if attribute else None
            if attribute and not (isinstance(base, ast.Name) and base.id in ("self", "cls")):
                return None
            if not self._maybe_alias_name(func):
                return None
        for qualified, partials in self._qualify(func, call, depth=0):
            hit = self._lookup(qualified)
            if hit is not None:
                op, variant = hit
                if partials:
                    self.partials[id(call)] = partials
                return OperatorCall(call, op, variant)
        return None

    # -- internals ----------------------------------------------------------------------
    def _maybe_alias_name(self, func: ast.expr) -> bool:
        """A plain name or `self.attr` may be bound to an operator object in the function,
        class or module (`fa = torch_npu.npu_fused_infer_attention_score`, `self.fa = ...`,
        `fa = functools.partial(...)`); a callee that is itself a call may be `getattr(...)`."""
        if isinstance(func, ast.Call):
            return True
        names, attrs = self._assigned_names()
        if isinstance(func, ast.Name):
            # only through an assignment: a name assigned nowhere in the module is rejected
            # here without tracing (the hot path)
            return func.id in names
        return isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
            and func.value.id in ("self", "cls") and func.attr in attrs

    def _assigned_names(self) -> Tuple[frozenset, frozenset]:
        """Names and `self.`/`cls.` attributes some `=` of the module binds (tuple targets
        included). Built once from the index."""
        if self._assigned is None:
            names, attrs = set(), set()

            def add(t):
                if isinstance(t, ast.Name):
                    names.add(t.id)
                elif isinstance(t, ast.Attribute):
                    attrs.add(t.attr)
                elif isinstance(t, (ast.Tuple, ast.List)):
                    for e in t.elts:
                        add(e)
                elif isinstance(t, ast.Starred):
                    add(t.value)

            for node in self.index.assigns:
                for t in (node.targets if isinstance(node, ast.Assign) else [cast(ast.AnnAssign, node).target]):
                    add(t)
            for cls in self.index.classes:  # class-body attributes read as self.X
                for stmt in cls.body:
                    if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                        for t in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]):
                            if isinstance(t, ast.Name):
                                attrs.add(t.id)
            self._assigned = (frozenset(names), frozenset(attrs))
        return self._assigned

    def _lookup(self, qualified: str) -> Optional[Tuple[Operator, str]]:
        if not qualified.startswith(_DOTTED_PREFIXES):
            return None
        for prefix, namespace in NAMESPACE_PREFIXES.items():
            if not qualified.startswith(prefix + "."):
                continue
            rest = qualified[len(prefix) + 1:].split(".")
            if not rest or len(rest) > 2:
                continue
            name = rest[0]
            overload = rest[1] if len(rest) == 2 else ""
            variant = overload
            if name.startswith(WORKSPACE_PREFIX) and name.endswith(WORKSPACE_SUFFIX):
                base = name[len(WORKSPACE_PREFIX):-len(WORKSPACE_SUFFIX)]
                # same keywords as the base operator: rules see it as that operator
                op = self.catalog.operator(namespace, base, "")
                if op is not None and overload in ("", "default"):
                    return op, "workspace"
                continue
            if overload == "out":
                op = self.catalog.operator(namespace, name, "out")
            elif overload in ("", "default"):
                op = self.catalog.operator(namespace, name, "")
            else:
                op = None
            if op is not None:
                return op, variant
        return None

    def _qualify(self, expr: ast.expr, at: ast.AST, depth: int) -> List[Tuple[str, Tuple[ast.Call, ...]]]:
        """All (dotted qualified name, partials gone through) `expr` may stand for."""
        if depth > 6:
            return []
        tracer, local = self.tracer, self._local
        if not tracer.owns(at):  # a value from another module: qualified by its imports
            other = tracer.tracer_for(at)
            if other is not tracer and tracer.project is not None:
                return tracer.project.resolver_of(other)._qualify(expr, at, depth)
            return []
        if isinstance(expr, ast.Name):
            out: List[Tuple[str, Tuple[ast.Call, ...]]] = []
            if expr.id not in self._assigned_names()[0]:
                # bound by no `=` here: an import, or a name no rule can know
                if expr.id in self.index.imports:
                    out.append((self.index.imports[expr.id], ()))
                project = tracer.project
                if project is not None and expr.id in self.index.from_imports:
                    # `from .ops import fia`, where ops.py holds `fia = torch_npu.X`: parsed
                    # only when its bytes hold `fia =` or a re-export
                    for value in project.imported_values(tracer, expr.id, expr.id):
                        out.extend(self._qualify(value, value, depth + 1))
                    imported = project.optional_import(tracer, expr.id, expr.id)
                    if imported is not None:  # an optional import there
                        out.append((imported, ()))
                return out
            values = local.candidates(expr, at, follow_calls=True)
            for value in values:
                if value is expr:
                    if expr.id in self.index.imports:
                        out.append((self.index.imports[expr.id], ()))
                else:
                    out.extend(self._qualify(value, value, depth + 1))
            imported = optional_import(self.index, expr.id, values)
            if imported is not None:
                out.append((imported, ()))
            return out
        if isinstance(expr, ast.Attribute):
            base = expr.value
            out = []
            if isinstance(base, ast.Name) and base.id in ("self", "cls"):
                for value in local.candidates(expr, at, follow_calls=True):
                    if value is not expr:
                        out.extend(self._qualify(value, value, depth + 1))
            for q, partials in self._qualify(base, at, depth + 1):
                if not partials:
                    out.append((f"{q}.{expr.attr}", ()))
            return out
        if isinstance(expr, ast.Call):
            f = expr.func
            name = dotted_name(f)
            if name is not None and (name in ("functools.partial", "partial")
                                     and self.index.imports.get(name.split(".")[0], "").startswith("functools")
                                     ) and expr.args and not isinstance(expr.args[0], ast.Starred):
                return [(q, partials + (expr,)) for q, partials in self._qualify(expr.args[0], at, depth + 1)]
            if name == "getattr" and len(expr.args) == 2 and isinstance(expr.args[1], ast.Constant) \
                    and isinstance(expr.args[1].value, str):
                return [(f"{q}.{expr.args[1].value}", ()) for q, partials in self._qualify(expr.args[0], at, depth + 1)
                        if not partials]
            out = []
            # a method of this class (or a function) returning a namespace or an operator
            for value in local.candidates(expr, at, follow_calls=True):
                if value is not expr:
                    out.extend(self._qualify(value, value, depth + 1))
            return out
        if isinstance(expr, ast.IfExp):
            return self._qualify(expr.body, at, depth + 1) + self._qualify(expr.orelse, at, depth + 1)
        return []
