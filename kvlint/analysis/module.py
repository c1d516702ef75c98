"""One pass over a module's `ast`: parent links, imports, scopes and positions.

Everything else in the analyzer asks this index instead of re-walking the tree.
"""
from __future__ import annotations

import ast
from collections import deque
from operator import attrgetter
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

from kvlint.source import SourceFile

FunctionNode = (ast.FunctionDef, ast.AsyncFunctionDef)
# the nodes that open a scope of their own
ScopeNode = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


# The walk is the hot path of every parsed file (3x faster than ast.iter_child_nodes): it
# visits only the fields that hold nodes (never the operator/context singletons `Load`, `Add`,
# `Eq`..., which no rule asks about), so a field's value is a node, None, or a list of nodes
# and Nones (`Dict.keys`).
_SCALAR_FIELDS = frozenset({"id", "attr", "name", "arg", "kind", "type_comment", "asname", "module",
                            "level", "simple", "is_async", "conversion", "tag", "rest", "kwd_attrs",
                            "op", "ops", "ctx"})
_SCALAR_BY_TYPE = {ast.Constant: {"value"}, ast.Global: {"names"}, ast.Nonlocal: {"names"}}
if hasattr(ast, "MatchSingleton"):
    _SCALAR_BY_TYPE[ast.MatchSingleton] = {"value"}
_CHILD_FIELDS: Dict[type, Tuple[str, ...]] = {}


def _child_fields(t: type) -> Tuple[str, ...]:
    skip = _SCALAR_BY_TYPE.get(t, ())
    fields = _CHILD_FIELDS[t] = tuple(f for f in t._fields if f not in _SCALAR_FIELDS and f not in skip)
    return fields


# What the index's walk collects, by node type: the number of the list it goes to (see
# ModuleIndex._walk), or _IMPORT and above for the import statements it reads. One dict look-up
# a node (its child fields and its kind) instead of a chain of type tests.
_COLLECTED = {ast.Call: 0, ast.Assign: 1, ast.AnnAssign: 1, ast.AugAssign: 2, ast.ClassDef: 3,
              ast.For: 4, ast.AsyncFor: 4, ast.NamedExpr: 5, ast.Import: 6, ast.ImportFrom: 6}
_IMPORT = 6
_KINDS: Dict[type, Tuple[Tuple[str, ...], int]] = {}
# The node types seen so far that hold no child node and are not collected (`Name`,
# `Constant`, `alias`, `Pass`...: a third of a module's nodes): the walk links them to their
# parent without pushing them, since visiting one would do nothing.
_LEAVES: set = set()


def _kind_entry(t: type) -> Tuple[Tuple[str, ...], int]:
    fields = _CHILD_FIELDS.get(t)
    entry = _KINDS[t] = (fields if fields is not None else _child_fields(t), _COLLECTED.get(t, -1))
    if not entry[0] and entry[1] < 0:
        _LEAVES.add(t)
    return entry


for _t in (ast.Name, ast.Constant):
    _kind_entry(_t)
_POSITION = attrgetter("lineno", "col_offset")


def child_nodes(node: ast.AST) -> List[ast.AST]:
    """`node`'s child nodes in `ast.iter_child_nodes` order, but for the context and operator
    singletons (`Load`, `Add`...: leaves no rule asks about); 3x faster."""
    fields = _CHILD_FIELDS.get(type(node))
    if fields is None:
        fields = _child_fields(type(node))
    out: List[ast.AST] = []
    for name in fields:
        value = getattr(node, name, None)
        if value is None:
            continue
        if type(value) is list:
            out.extend(child for child in value if child is not None)
        else:
            out.append(value)
    return out


def walk_in_order(node: ast.AST) -> Iterator[ast.AST]:
    """What `ast.walk(node)` yields, in its order (breadth first), but for the context and
    operator singletons (`Load`, `Add`...: leaves no rule asks about); 3x faster. For the
    walks whose first hit decides."""
    queue = deque([node])
    return _walk_nodes(queue, queue.popleft, ())


def scope_nodes(scope: ast.AST, skip: Tuple[type, ...] = ScopeNode) -> Iterator[ast.AST]:
    """What `ModuleIndex.walk_scope` yields (no index needed)."""
    stack = deque(child_nodes(scope))
    return _walk_nodes(stack, stack.pop, skip)


def _walk_nodes(pending: "deque[ast.AST]", take, skip: Tuple[type, ...]) -> Iterator[ast.AST]:
    """Take a node from `pending` (`take`: its last one, a stack walk, or its first one,
    breadth first), skip it and its sub-tree if it is of a `skip` type, else add its children
    in field order and yield it."""
    child_fields = _CHILD_FIELDS
    push = pending.append
    while pending:
        n = take()
        t = type(n)
        if t in skip:
            continue
        fields = child_fields.get(t)
        if fields is None:
            fields = _child_fields(t)
        for name in fields:
            value = getattr(n, name, None)
            if value is None:
                continue
            if type(value) is list:
                for child in value:
                    if child is not None:
                        push(child)
            else:
                push(value)
        yield n


_POSITIONS = ("lineno", "col_offset", "end_lineno", "end_col_offset")


def place(node: ast.AST, like: ast.AST) -> ast.AST:
    """`ast.copy_location(node, like)`: the fast way when both are nodes with the four
    positions and `like` has a line and a column (every parsed expression, statement and
    keyword; the synthetic nodes the analysis places on them), else copy_location itself."""
    if node._attributes == _POSITIONS and like._attributes == _POSITIONS:
        d = like.__dict__
        lineno, col = d.get("lineno"), d.get("col_offset")
        if lineno is not None and col is not None and "end_lineno" in d and "end_col_offset" in d:
            node.lineno, node.col_offset = lineno, col
            node.end_lineno, node.end_col_offset = d["end_lineno"], d["end_col_offset"]
            return node
    return ast.copy_location(node, like)


def is_none(node: ast.AST) -> bool:
    """The literal `None`."""
    return isinstance(node, ast.Constant) and node.value is None


def optional_import(index: "ModuleIndex", name: str, values: Sequence[ast.AST]) -> Optional[str]:
    """The dotted name a module imports as `name` when every value it otherwise binds `name`
    to is None: an optional import (`try: import torch_npu` / `except ImportError: torch_npu =
    None`). None is never called nor has attributes, so where the code uses the name, it is
    the import."""
    if values and all(is_none(v) for v in values):
        return index.imports.get(name)
    return None


def dotted_name(node: ast.AST) -> Optional[str]:
    """`a.b.c` for a Name/Attribute chain, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def positional_parameters(func: ast.AST) -> List[ast.arg]:
    """A function's parameters that a positional argument can bind, in order (`self` too)."""
    a = func.args  # type: ignore[attr-defined]
    return a.posonlyargs + a.args


def named_parameters(func: ast.AST) -> List[ast.arg]:
    """A function's parameters that have a name to bind by: positional and keyword-only."""
    a = func.args  # type: ignore[attr-defined]
    return a.posonlyargs + a.args + a.kwonlyargs


def parameter_defaults(func: ast.AST) -> Dict[str, ast.expr]:
    """Parameter name -> its default expression, for the parameters that have one."""
    a = func.args  # type: ignore[attr-defined]
    positional = a.posonlyargs + a.args
    defaults = dict(zip([p.arg for p in positional[len(positional) - len(a.defaults):]], a.defaults))
    defaults.update({p.arg: d for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None})
    return defaults


class ModuleIndex:
    def __init__(self, source: SourceFile, tree: ast.Module):
        self.source = source
        self.tree = tree
        self.parent: Dict[int, ast.AST] = {}
        self.calls: List[ast.Call] = []
        self.imports: Dict[str, str] = {}  # local name -> qualified dotted name
        # every `from M import N as L` (relative ones too): L -> (level, M or "", N)
        self.from_imports: Dict[str, Tuple[int, str, str]] = {}
        # every `import a.b` / `import a.b as c`: local name -> dotted module
        self.module_imports: Dict[str, str] = {}
        self.classes: List[ast.ClassDef] = []
        self.aug_assigns: List[ast.AugAssign] = []
        self.assigns: List[ast.AST] = []
        self.for_loops: List[ast.AST] = []
        self.named_exprs: List[ast.NamedExpr] = []
        self._stores: Dict[int, Dict[str, int]] = {}
        self._self_stores: Dict[int, frozenset] = {}
        self._walk()

    # -- construction -------------------------------------------------------------------
    def _walk(self) -> None:
        parent = self.parent
        kinds = _KINDS
        leaves = _LEAVES  # linked, not pushed: the other nodes are visited in the same order
        # the lists a node of each collected type goes to (by `_KINDS` number)
        buckets = (self.calls, self.assigns, self.aug_assigns, self.classes, self.for_loops, self.named_exprs)
        stack: List[ast.AST] = [self.tree]
        pop, push = stack.pop, stack.append
        while stack:
            node = pop()
            t = type(node)
            entry = kinds.get(t)
            if entry is None:
                entry = _kind_entry(t)
            fields, kind = entry
            if kind >= 0:
                if kind < _IMPORT:
                    buckets[kind].append(node)
                else:
                    self._add_import(node)
            fields_of = node.__dict__  # a parsed node holds its fields there: no attribute look-up
            for name in fields:
                try:
                    value = fields_of[name]
                except KeyError:  # a field a hand-built node lacks
                    value = getattr(node, name, None)
                if value is None:
                    continue
                if type(value) is list:
                    for child in value:
                        if child is not None:
                            parent[id(child)] = node
                            if type(child) not in leaves:
                                push(child)
                else:
                    parent[id(value)] = node
                    if type(value) not in leaves:
                        push(value)
        self.calls.sort(key=_POSITION)

    def _add_import(self, node: ast.AST) -> None:
        if type(node) is ast.Import:
            for alias in node.names:
                if alias.asname:
                    self.imports[alias.asname] = alias.name
                    self.module_imports[alias.asname] = alias.name
                else:
                    head = alias.name.split(".")[0]
                    self.imports[head] = head
                    self.module_imports.setdefault(head, head)
                    self.module_imports[alias.name] = alias.name
            return
        for alias in node.names:
            if alias.name != "*":
                self.from_imports[alias.asname or alias.name] = (node.level or 0, node.module or "", alias.name)
        if node.module and not node.level:
            for alias in node.names:
                self.imports[alias.asname or alias.name] = f"{node.module}.{alias.name}"

    # -- sub-trees ------------------------------------------------------------------------
    def walk(self, node: ast.AST) -> Iterator[ast.AST]:
        """`node` and every node under it, as `ast.walk` finds them but for the context and
        operator singletons (`Load`, `Add`...), in no particular order; 3x faster."""
        stack = deque([node])
        return _walk_nodes(stack, stack.pop, ())

    def walk_scope(self, scope: ast.AST, skip: Tuple[type, ...] = ScopeNode) -> Iterator[ast.AST]:
        """The nodes under `scope` (not `scope` itself) outside nested `skip` nodes (functions,
        classes, lambdas), in the order of a stack walk over `ast.iter_child_nodes` (the last
        child first), without the context and operator singletons."""
        return scope_nodes(scope, skip)

    def stores(self, scope: ast.AST) -> Dict[str, int]:
        """Name -> the first line a `Name` is stored to anywhere under `scope` (nested scopes
        included, as `ast.walk` sees them); computed once per scope."""
        table = self._stores.get(id(scope))
        if table is None:
            table = self._stores[id(scope)] = {}
            for n in self.walk(scope):
                if type(n) is ast.Name and type(n.ctx) is ast.Store:
                    if n.id not in table or n.lineno < table[n.id]:
                        table[n.id] = n.lineno
        return table

    def self_attribute_stores(self, scope: ast.AST) -> frozenset:
        """The attributes `self.<attr>` is stored to anywhere under `scope`; once per scope."""
        attrs = self._self_stores.get(id(scope))
        if attrs is None:
            attrs = self._self_stores[id(scope)] = frozenset(
                n.attr for n in self.walk(scope) if type(n) is ast.Attribute and type(n.ctx) is ast.Store
                and type(n.value) is ast.Name and n.value.id == "self")
        return attrs

    # -- navigation ---------------------------------------------------------------------
    def parent_of(self, node: ast.AST) -> Optional[ast.AST]:
        return self.parent.get(id(node))

    def ancestors(self, node: ast.AST) -> Iterator[ast.AST]:
        p = self.parent.get(id(node))
        while p is not None:
            yield p
            p = self.parent.get(id(p))

    def enclosing_function(self, node: ast.AST) -> Optional[ast.AST]:
        get = self.parent.get
        a = get(id(node))
        while a is not None:
            t = type(a)
            if t is ast.FunctionDef or t is ast.AsyncFunctionDef:
                return a
            a = get(id(a))
        return None

    def enclosing_scope(self, node: ast.AST) -> ast.AST:
        get = self.parent.get
        a = get(id(node))
        while a is not None:
            t = type(a)
            if t is ast.FunctionDef or t is ast.AsyncFunctionDef or t is ast.Lambda:
                return a
            a = get(id(a))
        return self.tree

    def enclosing_class(self, node: ast.AST) -> Optional[ast.ClassDef]:
        """The class whose method holds `node` (a nested function's class counts too)."""
        get = self.parent.get
        a = get(id(node))
        while a is not None:
            if type(a) is ast.ClassDef:
                return a
            a = get(id(a))
        return None

    def statement_of(self, node: ast.AST) -> ast.AST:
        current = node
        while current is not None and not isinstance(current, ast.stmt):
            current = self.parent.get(id(current))
        return current or node

    # -- positions ----------------------------------------------------------------------
    def char_col(self, lineno: int, byte_col: int) -> int:
        """ast columns are UTF-8 byte offsets; reports and edits use characters."""
        line = self.source.line(lineno)
        if line.isascii():
            return byte_col
        return len(line.encode("utf-8")[:byte_col].decode("utf-8", "replace"))

    def span(self, node: ast.AST) -> Tuple[int, int, int, int]:
        """(line, col, end_line, end_col), 1-based lines, 0-based character columns."""
        line = node.lineno
        end_line = getattr(node, "end_lineno", None) or line
        col = self.char_col(line, node.col_offset)
        end_col = self.char_col(end_line, getattr(node, "end_col_offset", None) or node.col_offset)
        return line, col, end_line, end_col
