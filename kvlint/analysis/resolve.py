"""Which operator a call really is.

`OperatorResolver.resolve(call)` is the one interface the rules use. It works from the
module's imports and from aliases bound in the enclosing function or class, never from
string matching on the call text alone:

- `torch_npu.X`, `torch.ops.npu.X`, `import torch_npu as t; t.X`, `from torch_npu import X as fa`
- the `.out` / `.default` overloads and the `_X_get_max_workspace` twins
- receivers bound to an operator namespace: `fa_ops = torch.ops.npu` in the function,
  `self.fa_ops = torch.ops.npu` anywhere in the class, a method of the class that returns a
  namespace (`self._fa_ops_for(is_prefill)`), and the torchair alternatives (`torchair.ops`,
  `tng.ops`), which take the same keywords
- names bound to an operator object (`fa = torch_npu.npu_fused_infer_attention_score`)

A same-named method of a user class (`DeviceOperator.npu_fused_infer_attention_score`) has a
receiver that is none of these, so it is not the operator.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Tuple

from kvlint.analysis.module import FunctionNode, ModuleIndex, dotted_name
from kvlint.catalog import Catalog, Operator
from kvlint.facts import load_facts

_NAMESPACES = load_facts().namespaces
# Qualified prefixes that name an operator namespace, and the catalog namespace each means
# (rules/facts/operators.toml [namespaces.prefixes]).
NAMESPACE_PREFIXES: Mapping[str, str] = _NAMESPACES.prefixes
WORKSPACE_PREFIX, WORKSPACE_SUFFIX = _NAMESPACES.workspace_prefix, _NAMESPACES.workspace_suffix


@dataclass(frozen=True)
class OperatorCall:
    call: ast.Call
    operator: Operator
    variant: str  # "", "out", "default" or "workspace"

    @property
    def name(self) -> str:
        return self.operator.name


class OperatorResolver:
    def __init__(self, index: ModuleIndex, catalog: Catalog):
        self.index = index
        self.catalog = catalog
        self._names = catalog.operator_names()
        self._binding_cache: Dict[Tuple[int, str], List[ast.expr]] = {}
        self._assign_nodes: Optional[Tuple[Dict[str, List[ast.Assign]], Dict[str, List[ast.Assign]]]] = None

    # -- public -------------------------------------------------------------------------
    def resolve(self, call: ast.Call) -> Optional[OperatorCall]:
        func = call.func
        if isinstance(func, ast.Attribute):
            last = func.attr
        elif isinstance(func, ast.Name):
            last = func.id
        else:
            return None
        # cheap reject: the callee's last part must be an operator name or an overload
        if last not in self._names and last not in ("out", "default") and not (
            last.startswith(WORKSPACE_PREFIX) and last.endswith(WORKSPACE_SUFFIX)
        ) and last not in self.index.imports and not self._maybe_alias_name(func):
            return None
        for qualified in self._qualified_candidates(func, call):
            hit = self._lookup(qualified)
            if hit is not None:
                op, variant = hit
                return OperatorCall(call, op, variant)
        return None

    # -- internals ----------------------------------------------------------------------
    def _maybe_alias_name(self, func: ast.expr) -> bool:
        """A plain name or `self.attr` may be bound to an operator object in the function or
        class (`fa = torch_npu.npu_fused_infer_attention_score`, `self.fa = ...`)."""
        if isinstance(func, ast.Name):
            # only through a local `name = ...`: a name assigned nowhere in the module is
            # rejected here without walking its function (the hot path)
            return func.id in self._assigned_nodes()[0]
        return isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self" \
            and func.attr in self._assigned_nodes()[1]

    def _lookup(self, qualified: str) -> Optional[Tuple[Operator, str]]:
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

    def _qualified_candidates(self, func: ast.expr, call: ast.Call):
        for q in self._qualify(func, call, depth=0):
            yield q

    def _qualify(self, expr: ast.expr, at: ast.AST, depth: int) -> List[str]:
        """All dotted qualified names `expr` may stand for."""
        if depth > 4:
            return []
        if isinstance(expr, ast.Name):
            out = []
            for value in self._local_bindings(expr.id, at):
                out.extend(self._qualify(value, at, depth + 1))
            if expr.id in self.index.imports:
                out.append(self.index.imports[expr.id])
            return out
        if isinstance(expr, ast.Attribute):
            base = expr.value
            out = []
            if isinstance(base, ast.Name) and base.id == "self":
                for value in self._self_bindings(expr.attr, at):
                    out.extend(self._qualify(value, at, depth + 1))
            for q in self._qualify(base, at, depth + 1):
                out.append(f"{q}.{expr.attr}")
            return out
        if isinstance(expr, ast.Call):
            # self._fa_ops_for(x): a method of this class returning a namespace
            f = expr.func
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "self":
                out = []
                for value in self._method_returns(f.attr, at):
                    out.extend(self._qualify(value, value, depth + 1))
                return out
            return []
        if isinstance(expr, ast.IfExp):
            return self._qualify(expr.body, at, depth + 1) + self._qualify(expr.orelse, at, depth + 1)
        return []

    def _local_bindings(self, name: str, at: ast.AST) -> List[ast.expr]:
        """Values assigned to `name` in the function enclosing `at` (all branches, nested
        functions included)."""
        func = self.index.enclosing_function(at)
        if func is None:
            return []
        return self._bindings_in(func, name, self._assigned_nodes()[0].get(name, ()))

    def _self_bindings(self, attr: str, at: ast.AST) -> List[ast.expr]:
        """Values assigned to `self.<attr>` anywhere in the class enclosing `at`."""
        cls = self.index.enclosing_class(at)
        if cls is None:
            return []
        return self._bindings_in(cls, "self." + attr, self._assigned_nodes()[1].get(attr, ()))

    def _assigned_nodes(self) -> Tuple[Dict[str, List[ast.Assign]], Dict[str, List[ast.Assign]]]:
        """`=` statements of the module by target: (plain names, `self.` attributes). Built
        once from the index instead of walking every function and class again (hot path)."""
        if self._assign_nodes is None:
            names: Dict[str, List[ast.Assign]] = {}
            attrs: Dict[str, List[ast.Assign]] = {}
            for node in self.index.assigns:
                if isinstance(node, ast.Assign):
                    for t in node.targets:
                        if isinstance(t, ast.Name):
                            names.setdefault(t.id, []).append(node)
                        elif isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                            attrs.setdefault(t.attr, []).append(node)
            self._assign_nodes = (names, attrs)
        return self._assign_nodes

    def _bindings_in(self, scope: ast.AST, key: str, nodes) -> List[ast.expr]:
        """The values of `nodes` (assignments to `key`) inside `scope`, in `ast.walk(scope)`
        order (breadth first: by depth below `scope`, then source order)."""
        cached = self._binding_cache.get((id(scope), key))
        if cached is not None:
            return cached
        inside = []
        for node in dict.fromkeys(nodes):  # `a = a = x` is listed once per target
            depth = 0
            for a in self.index.ancestors(node):
                depth += 1
                if a is scope:
                    inside.append((depth, node.lineno, node.col_offset, node))
                    break
        inside.sort(key=lambda item: item[:3])
        attr = key[5:] if key.startswith("self.") else None
        out = []
        for *_, node in inside:
            for t in node.targets:
                if (attr is None and isinstance(t, ast.Name) and t.id == key) or (
                        attr is not None and isinstance(t, ast.Attribute) and t.attr == attr
                        and isinstance(t.value, ast.Name) and t.value.id == "self"):
                    out.append(node.value)
        self._binding_cache[(id(scope), key)] = out
        return out

    def _method_returns(self, name: str, at: ast.AST) -> List[ast.expr]:
        cls = self.index.enclosing_class(at)
        if cls is None:
            return []
        for stmt in cls.body:
            if isinstance(stmt, FunctionNode) and stmt.name == name:
                return [n.value for n in ast.walk(stmt) if isinstance(n, ast.Return) and n.value is not None]
        return []
