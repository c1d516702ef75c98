"""Simple values in the same function, class or module.

The tracer answers "what may this expression be?" with a list of candidate expressions:
names assigned in the function (every assignment before the use, so both branches of an
if/else count), `x if c else y` (both arms), `self.x` assigned in any method of the class,
module-level names, and calls to a builder function or method of the same module or class
(its return values). It never evaluates code; `literal()` reads constants only.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Tuple

from kvlint.analysis.module import (
    FunctionNode,
    ModuleIndex,
    dotted_name,
    named_parameters,
    parameter_defaults,
    place,
    positional_parameters,
    walk_in_order,
)

UNKNOWN = object()
MAX_DEPTH = 6
_PARAMETER = ast.Name(id="<parameter>", ctx=ast.Load())  # marker: the incoming value survives


def definitely_assigns(stmts: List[ast.stmt], name: str, before_line: int) -> bool:
    """True when every path through `stmts` (up to `before_line`) assigns `name`."""
    for stmt in stmts:
        if stmt.lineno >= before_line:
            return False
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                return True
        elif isinstance(stmt, ast.If) and stmt.orelse:
            if definitely_assigns(stmt.body, name, before_line) and \
                    definitely_assigns(stmt.orelse, name, before_line):
                return True
    return False


@dataclass
class KeywordArg:
    name: str
    value: ast.expr
    node: ast.AST  # where the keyword is written: a `keyword`, a dict key or a subscript key
    conditional: bool = False  # only added on some paths (inside an if, or via a ternary dict)
    via_dict: Optional[str] = None  # the `**name` it came through


@dataclass
class CallArgs:
    positional: List[ast.expr] = field(default_factory=list)
    keywords: Dict[str, List[KeywordArg]] = field(default_factory=dict)
    complete: bool = True  # False when a `**x` or `*x` could not be resolved

    def has(self, name: str) -> bool:
        return name in self.keywords

    def values(self, name: str) -> List[ast.expr]:
        return [k.value for k in self.keywords.get(name, [])]

    def all(self) -> Iterable[KeywordArg]:
        for items in self.keywords.values():
            yield from items


class Each(ast.expr):
    """Synthetic: any one element of the iterable `value` (a `for` target's value)."""

    _fields = ("value",)
    value: ast.expr


class Unknown(ast.expr):
    """Synthetic: a value the tracer knows nothing about (a loop counter)."""

    _fields = ()


FUNCTOOLS_PARTIAL = ("functools.partial", "partial")
_UNPACKED = (ast.Tuple, ast.List)  # targets an assignment unpacks element by element


def literal_element(value: ast.AST, i: int) -> Optional[ast.expr]:
    """Element `i` (negative from the end) of a tuple or list literal without a starred
    element, else None."""
    if isinstance(value, (ast.Tuple, ast.List)) and -len(value.elts) <= i < len(value.elts) \
            and not any(isinstance(e, ast.Starred) for e in value.elts):
        return value.elts[i]
    return None


class ValueTracer:
    """The one assignment tracer of a module: the value tracing of every rule and the
    operator resolver's alias lookups both ask it.

    With a `project` (kvlint.analysis.project.Project), names imported from the checked
    project's own modules are followed too: builder functions, classes, module constants.
    A node of another module is answered by that module's tracer."""

    def __init__(self, index: ModuleIndex, project=None):
        self.index = index
        self.project = project
        self._assign_tables: Dict[int, Dict[str, List[Tuple[ast.AST, ast.expr]]]] = {}
        self._self_tables: Dict[int, Dict[str, List[Tuple[ast.AST, ast.expr]]]] = {}
        self._grouped: Optional[Tuple[Dict[int, List[ast.AST]], Dict[int, List[ast.AST]]]] = None
        self._class_attr_writes: Optional[Dict[Tuple[str, str], List[Tuple[ast.AST, ast.expr]]]] = None
        self._defs: Optional[Dict[str, ast.AST]] = None
        self._bound: Optional[frozenset] = None
        # a local_view's tracer: the module-wide tables below are that tracer's (asked of it
        # when first needed, so that whichever of the two asks first, both share one)
        self._origin: Optional["ValueTracer"] = None
        self._synthetic: List[ast.AST] = []  # keeps synthetic nodes (and their ids) alive
        self._synthetic_ids: set = set()
        self._opaque_memo: Dict[int, bool] = {}
        self._getattr_nodes: Dict[int, ast.expr] = {}
        self._returns: Dict[int, Tuple[ast.AST, List[ast.expr]]] = {}  # function id -> (it, its return values)
        # for kvlint/analysis/branches.py: node id -> (condition, its key); function id ->
        # (function, condition key -> one condition with that key)
        self.condition_keys: Dict[int, Tuple[ast.AST, str]] = {}
        self.arm_tests: Dict[int, Tuple[ast.AST, Dict[str, ast.expr]]] = {}
        # candidates() is pure for a given index: memoised, else a chain of names bound to
        # each other (`x = f(x)` in loops, builders calling builders) is exponential
        self._candidates: Dict[Tuple[int, int, int, bool], Tuple[ast.AST, ast.AST, List[ast.expr]]] = {}

    def local_view(self) -> "ValueTracer":
        """A tracer of the same module that does not follow names into other modules,
        sharing this one's binding tables and synthetic nodes (not its memo: its answers
        differ)."""
        view = ValueTracer(self.index)
        for name in ("_assign_tables", "_self_tables", "_synthetic", "_synthetic_ids", "_getattr_nodes"):
            setattr(view, name, getattr(self, name))
        view._origin = self  # bound_names, _statements, definitions, class_attribute_writes
        return view

    # -- synthetic nodes ------------------------------------------------------------------
    def _make(self, node: ast.expr, like: ast.AST, parent: ast.AST) -> ast.expr:
        """Register a synthetic node under `parent`, placed at `like` (its one new child, a
        subscript's index constant, too; its other children are real nodes)."""
        place(node, like)
        self.index.parent[id(node)] = parent
        if isinstance(node, ast.Subscript):
            place(node.slice, like)
            self.index.parent[id(node.slice)] = node
        self._synthetic.append(node)
        self._synthetic_ids.add(id(node))
        return node

    def owns(self, node: ast.AST) -> bool:
        return node is self.index.tree or id(node) in self.index.parent

    def tracer_for(self, node: ast.AST) -> "ValueTracer":
        """The tracer of the module `node` belongs to (this one unless it is another
        module's node)."""
        if self.project is None or self.owns(node):
            return self
        return self.project.tracer_of(node) or self

    # -- assignment tables ----------------------------------------------------------------
    def _flatten_targets(self, target: ast.expr, value: ast.expr, stmt: ast.AST):
        """(leaf target, value) pairs of one assignment: `a, b = x, y` pairs elementwise;
        `q, k, v, m = helper(...)` and `mask, mode = (None, 0) if c else (m, 3)` bind each
        name to its element (`helper(...)[3]`, a synthetic subscript that candidates()
        projects)."""
        if isinstance(target, (ast.Tuple, ast.List)):
            elts = target.elts
            if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(elts) and not any(
                    isinstance(e, ast.Starred) for e in list(elts) + list(value.elts)):
                for t, v in zip(elts, value.elts):
                    yield from self._flatten_targets(t, v, stmt)
                return
            for i, t in enumerate(elts):
                if isinstance(t, ast.Starred):
                    return  # elements after a star: position unknown
                sub = self._make(ast.Subscript(value=value, slice=ast.Constant(i), ctx=ast.Load()), t, stmt)
                yield from self._flatten_targets(t, sub, stmt)
            return
        yield target, value

    def _loop_targets(self, loop: ast.AST):
        """(leaf target, value) pairs of a `for` header: `for m, s in zip(masks, modes)` binds
        each name to an element of its own iterable, `for i, x in enumerate(xs)` x to an
        element of xs (i to an unknown), `for x in xs` x to an element of xs."""
        target, it = loop.target, loop.iter
        if isinstance(target, (ast.Tuple, ast.List)) and isinstance(it, ast.Call) \
                and isinstance(it.func, ast.Name) and not it.keywords:
            fname = it.func.id
            if fname == "zip" and len(it.args) == len(target.elts) and not any(
                    isinstance(x, ast.Starred) for x in list(it.args) + list(target.elts)):
                for t, a in zip(target.elts, it.args):
                    yield from self._flatten_targets(t, self._make(Each(value=a), t, loop), loop)
                return
            if fname == "enumerate" and it.args and len(target.elts) == 2:
                yield from self._flatten_targets(target.elts[0], self._make(Unknown(), target.elts[0], loop), loop)
                yield from self._flatten_targets(target.elts[1], self._make(Each(value=it.args[0]), target.elts[1],
                                                                              loop), loop)
                return
        yield from self._flatten_targets(target, self._make(Each(value=it), target, loop), loop)

    def _pairs(self, node: ast.AST):
        """What _statement_pairs yields; a tuple at once for `x = v` with one target that is
        not unpacked (most statements: no generators)."""
        if type(node) is ast.Assign and len(node.targets) == 1 and type(node.targets[0]) not in _UNPACKED:
            return ((node.targets[0], node.value),)
        return self._statement_pairs(node)

    def _statement_pairs(self, node: ast.AST):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                yield from self._flatten_targets(target, node.value, node)
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            yield from self._flatten_targets(node.target, node.value, node)
        elif isinstance(node, ast.NamedExpr):
            yield node.target, node.value
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            yield from self._loop_targets(node)

    def assignments(self, scope: ast.AST) -> Dict[str, List[Tuple[ast.AST, ast.expr]]]:
        """name -> [(statement, value)] for plain-name assignments directly in `scope`
        (nested functions and classes excluded): `=`, annotated, walrus, tuple unpacking and
        `for` targets."""
        table = self._assign_tables.get(id(scope))
        if table is None:
            table = self._assign_tables[id(scope)] = {}
            for node in self._statements()[0].get(id(scope), ()):
                for target, value in self._pairs(node):
                    if isinstance(target, ast.Name):
                        table.setdefault(target.id, []).append((node, value))
            _sort(table)
        return table

    def bound_names(self) -> frozenset:
        """Every name some binding statement of the module (`=`, annotated, walrus, `for`)
        has among its targets, tuples and stars unpacked: a superset of the names of every
        `assignments()` table, so a name outside it is bound by none of them (asked before a
        function's table is built for one name; most functions' tables are never needed)."""
        if self._bound is None and self._origin is not None:
            self._bound = self._origin.bound_names()
        if self._bound is None:
            names = set()
            add = names.add
            for node in self.index.assigns:
                for target in (node.targets if type(node) is ast.Assign else (node.target,)):
                    _target_names(target, add)
            for node in self.index.for_loops:
                _target_names(node.target, add)
            for node in self.index.named_exprs:
                _target_names(node.target, add)
            self._bound = frozenset(names)
        return self._bound

    def assigned(self, scope: ast.AST, name: str) -> List[Tuple[ast.AST, ast.expr]]:
        """`assignments(scope).get(name, [])`, without building the table when no binding
        statement of the module binds `name`. Read-only."""
        if name not in self.bound_names():
            return []
        return self.assignments(scope).get(name, [])

    def self_assignments(self, cls: ast.ClassDef) -> Dict[str, List[Tuple[ast.AST, ast.expr]]]:
        """attr -> [(statement, value)]: `self.attr = v` in any method (tuple targets
        included), `attr = v` in the class body, `Cls.attr = v` / `cls.attr = v` anywhere in
        the module; then the same for base classes of this module that lack the attribute."""
        table = self._self_tables.get(id(cls))
        if table is not None:
            return table
        table = self._self_tables[id(cls)] = {}  # a cycle of bases ends here
        for node in self._statements()[1].get(id(cls), ()):
            in_body = self.index.parent_of(node) is cls
            for target, value in self._pairs(node):
                if in_body and isinstance(target, ast.Name):  # class body: `X = v` is read as self.X
                    table.setdefault(target.id, []).append((node, value))
                elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                        and target.value.id in ("self", "cls"):
                    table.setdefault(target.attr, []).append((node, value))
        _sort(table)
        for (owner, attr), items in self.class_attribute_writes().items():
            if owner == cls.name:
                table[attr] = table.get(attr, []) + items
        for base in cls.bases:
            b = self.definitions().get(base.id) if isinstance(base, ast.Name) else None
            if isinstance(b, ast.ClassDef) and b is not cls:
                for attr, items in self.self_assignments(b).items():
                    if attr not in table:
                        table[attr] = items
        return table

    def _statements(self):
        """Binding statements the ModuleIndex collected, grouped by their scope (function,
        class body or module) and by their innermost class: one pass, no re-walk (the hot
        path)."""
        if self._grouped is None and self._origin is not None:
            self._grouped = self._origin._statements()
        if self._grouped is None:
            index = self.index
            parent = index.parent
            by_scope: Dict[int, List[ast.AST]] = {}
            by_class: Dict[int, List[ast.AST]] = {}
            scope_types = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
            # statements under one parent (a function body, an `if`...) share scope and class
            under: Dict[int, Tuple[Optional[ast.AST], Optional[ast.AST]]] = {}
            for node in (*index.assigns, *index.for_loops, *index.named_exprs):
                above = parent.get(id(node))
                hit = under.get(id(above))
                if hit is None:
                    scope = above
                    while scope is not None and type(scope) not in scope_types:
                        scope = parent.get(id(scope))
                    cls = scope
                    while cls is not None and type(cls) is not ast.ClassDef:
                        cls = parent.get(id(cls))
                    hit = under[id(above)] = (scope, cls)
                scope, cls = hit
                by_scope.setdefault(id(scope if scope is not None else index.tree), []).append(node)
                if cls is not None and not isinstance(node, (ast.For, ast.AsyncFor)):
                    by_class.setdefault(id(cls), []).append(node)
            self._grouped = (by_scope, by_class)
        return self._grouped

    def class_attribute_writes(self) -> Dict[Tuple[str, str], List[Tuple[ast.AST, ast.expr]]]:
        """(class name, attr) -> [(statement, value)] for `Cls.attr = v` in the module."""
        if self._class_attr_writes is None and self._origin is not None:
            self._class_attr_writes = self._origin.class_attribute_writes()
        if self._class_attr_writes is None:
            writes: Dict[Tuple[str, str], List[Tuple[ast.AST, ast.expr]]] = {}
            classes = {c.name for c in self.index.classes}
            for node in self.index.assigns if classes else ():
                targets = node.targets if type(node) is ast.Assign else (node.target,)
                if (len(targets) == 1 and type(targets[0]) is ast.Name) or not any(
                        _writes_class_attribute(t, classes) for t in targets):
                    continue  # no `Cls.attr` among its targets: not unpacked for nothing
                for target, value in self._statement_pairs(node):
                    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                            and target.value.id in classes:
                        writes.setdefault((target.value.id, target.attr), []).append((node, value))
            self._class_attr_writes = writes
        return self._class_attr_writes

    def definitions(self) -> Dict[str, ast.AST]:
        """Module-level functions and classes by name."""
        if self._defs is None and self._origin is not None:
            self._defs = self._origin.definitions()
        if self._defs is None:
            self._defs = {n.name: n for n in self.index.tree.body
                          if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
        return self._defs

    def is_parameter(self, name: str, func: Optional[ast.AST]) -> bool:
        if not isinstance(func, FunctionNode):
            return False
        a = func.args
        params = named_parameters(func) + [x for x in (a.vararg, a.kwarg) if x]
        return any(p.arg == name for p in params)

    # -- definitions across modules ---------------------------------------------------------
    def definition(self, expr: ast.expr, at: ast.AST, words=None,
                   functions_only: bool = False) -> Optional[Tuple["ValueTracer", ast.AST]]:
        """The function or class a name or `module.name` stands for: this module's own, or
        one imported from a module of the checked project (followed through re-exports;
        with `words`, a bytes regex, only from a module whose bytes match it).
        `functions_only`: the caller takes anything but a function for None (an imported
        name that can only be a class is then not looked for, Project.imported_definition)."""
        if isinstance(expr, ast.Name):
            func = self.index.enclosing_function(at) if self.owns(at) else None
            if func is not None and (self.assigned(func, expr.id) or self.is_parameter(expr.id, func)):
                return None  # a local name, not the module's definition
            d = self.definitions().get(expr.id)
            if d is not None:
                return self, d
            if self.project is not None:
                return self.project.imported_definition(self, expr.id, words, functions_only)
            return None
        if isinstance(expr, ast.Attribute) and self.project is not None:
            dotted = dotted_name(expr.value)
            if dotted is not None:
                return self.project.attribute_definition(self, dotted, expr.attr, words)
        return None

    def module_binding(self, name: str) -> List[ast.expr]:
        """Values of a module-level `name` (imported from a project module if not bound here)."""
        items = self.assigned(self.index.tree, name)
        if items:
            return [v for _, v in items]
        if self.project is not None and name in self.index.from_imports:
            return self.project.imported_values(self, name)
        return []

    # -- candidates ------------------------------------------------------------------------
    def bindings(self, name: str, at: ast.AST) -> List[ast.expr]:
        """Values `name` may hold at `at`: assignments in the enclosing function before `at`
        (every branch), else those of enclosing functions (a closure), else module-level
        assignments. When the name is a parameter that is not assigned on every path before
        `at`, the parameter itself stays a candidate (an unknown leaf): `if q_len > 1: ...
        else: mask = None` keeps the caller's mask."""
        func = self.index.enclosing_function(at)
        line = getattr(at, "lineno", 10 ** 9)
        if func is not None:
            items = self.assigned(func, name)
            before = [(stmt, v) for stmt, v in items if stmt.lineno < line]
            if before:
                values = [_PARAMETER if self._opaque(v) else v for v in self._reaching(before, func)]
                if self.is_parameter(name, func) and not definitely_assigns(func.body, name, line):
                    values.append(_PARAMETER)
                return values
            if items or self.is_parameter(name, func):
                return []
            outer = self.index.enclosing_function(func)
            while outer is not None:  # a closure reads the enclosing function's binding
                items = self.assigned(outer, name)
                if items:
                    return [v for _, v in items]
                if self.is_parameter(name, outer):
                    return []
                outer = self.index.enclosing_function(outer)
        return self.module_binding(name)

    def _opaque(self, value: ast.expr) -> bool:
        """A synthetic element (`a, b = x`, `for a in xs`) of a value the tracer knows nothing
        about: the name itself is then all there is (its name heuristics still apply), as for
        a parameter."""
        if isinstance(value, Unknown):
            return True
        if not isinstance(value, (ast.Subscript, Each)) or id(value) not in self._synthetic_ids:
            return False
        hit = self._opaque_memo.get(id(value))
        if hit is not None:
            return hit
        self._opaque_memo[id(value)] = False  # `a, b = f(a)`: asking again while answering ends here
        hit = self._opaque_memo[id(value)] = self._opaque_uncached(value)
        return hit

    def _opaque_uncached(self, value: ast.expr) -> bool:
        if isinstance(value, ast.Subscript):  # a tuple element: opaque unless a tuple was found
            return self.candidates(value, value, follow_calls=True) == [value]
        base = value.value
        leaves = self.candidates(base, base, follow_calls=True)
        return all(isinstance(c, (ast.Name, ast.Attribute, Unknown, Each))
                   or (isinstance(c, ast.Subscript) and id(c) in self._synthetic_ids) for c in leaves) and not any(
            isinstance(c, (ast.Tuple, ast.List)) for c in leaves)

    def _reaching(self, before, func) -> List[ast.expr]:
        # every assignment from the last one written at the function's top level on (an
        # earlier top-level one is overwritten); assignments inside branches, and loop
        # targets (the loop may not run), all count.
        result = []
        for stmt, v in reversed(before):
            result.append(v)
            if self.index.parent_of(stmt) is func and not isinstance(stmt, (ast.For, ast.AsyncFor)):
                break
        return list(reversed(result))

    def candidates(self, expr: ast.expr, at: Optional[ast.AST] = None, depth: int = 0,
                   follow_calls: bool = False) -> List[ast.expr]:
        """Leaf expressions `expr` may evaluate to. A leaf that cannot be followed further is
        returned as is (a parameter name, a call, an attribute of another object...)."""
        at = at if at is not None else expr
        if depth > MAX_DEPTH:
            return [expr]
        if self.project is not None and not self.owns(at):
            other = self.project.tracer_of(at)
            if other is not None and other is not self:
                return other.candidates(expr, at, depth, follow_calls)
        key = (id(expr), id(at), depth, follow_calls)
        hit = self._candidates.get(key)
        if hit is None:
            # the entry holds `expr` and `at`: a node a rule built on the fly cannot be freed
            # and its id reused for another node while the memo lives
            hit = self._candidates[key] = (expr, at, self._candidates_uncached(expr, at, depth, follow_calls))
        return list(hit[2])

    def _candidates_uncached(self, expr: ast.expr, at: ast.AST, depth: int, follow_calls: bool) -> List[ast.expr]:
        if isinstance(expr, ast.IfExp):
            return (self.candidates(expr.body, at, depth + 1, follow_calls)
                    + self.candidates(expr.orelse, at, depth + 1, follow_calls))
        if isinstance(expr, ast.Name):
            values = self.bindings(expr.id, at)
            if not values:
                return [expr]
            out: List[ast.expr] = []
            for v in values:
                if v is _PARAMETER:
                    out.append(expr)  # the caller's value: unknown
                else:
                    out.extend(self.candidates(v, v, depth + 1, follow_calls))
            return out
        if isinstance(expr, ast.Attribute):
            return self._attribute(expr, at, depth, follow_calls)
        if isinstance(expr, ast.Subscript) and isinstance(expr.slice, ast.Constant) \
                and type(expr.slice.value) is int:
            return self._element(expr, at, depth, follow_calls)
        if isinstance(expr, Each):
            out = []
            for base in self.candidates(expr.value, at, depth + 1, follow_calls):
                if isinstance(base, (ast.List, ast.Tuple, ast.Set)) and not any(
                        isinstance(e, ast.Starred) for e in base.elts):
                    for e in base.elts:
                        out.extend(self.candidates(e, e, depth + 1, follow_calls))
                else:
                    out.append(expr)
            return list(dict.fromkeys(out)) or [expr]
        if isinstance(expr, ast.Call):
            attr = self._getattr_as_attribute(expr)
            if attr is not None:
                return self.candidates(attr, at, depth + 1, follow_calls)
            if follow_calls:
                returns = self.builder_returns(expr, at)
                if returns:
                    out = []
                    for r in returns:
                        out.extend(self.candidates(r, r, depth + 1, follow_calls))
                    return out
        return [expr]

    def _getattr_as_attribute(self, call: ast.Call) -> Optional[ast.expr]:
        """`getattr(x, "name")` (and with a default) read as `x.name`."""
        f = call.func
        if not (isinstance(f, ast.Name) and f.id == "getattr" and len(call.args) in (2, 3)
                and isinstance(call.args[1], ast.Constant) and isinstance(call.args[1].value, str)
                and call.args[1].value.isidentifier()):
            return None
        node = self._getattr_nodes.get(id(call))
        if node is None:
            node = self._getattr_nodes[id(call)] = self._make(
                ast.Attribute(value=call.args[0], attr=call.args[1].value, ctx=ast.Load()), call,
                self.index.parent_of(call) or self.index.tree)
        return node

    def _element(self, expr: ast.Subscript, at: ast.AST, depth: int, follow_calls: bool) -> List[ast.expr]:
        """`x[i]` with a literal i: element i of each tuple/list candidate of x (a builder's
        `return mask, mode` included); the subscript itself for any other candidate."""
        i = expr.slice.value
        out: List[ast.expr] = []
        keep = False
        for base in self.candidates(expr.value, at, depth + 1, True):
            e = literal_element(base, i)
            if e is not None:
                out.extend(self.candidates(e, e, depth + 1, follow_calls))
            else:
                keep = True
        if keep or not out:
            out.append(expr)
        return out

    def _attribute(self, expr: ast.Attribute, at: ast.AST, depth: int, follow_calls: bool) -> List[ast.expr]:
        """`self.x` (any method of the class, its class body, its bases here), `Cls.x` (class
        attributes), and `obj.x` where obj is built by a class of the project from literals
        (`cfg = AttnConfig(sparse_mode=0)`, a dataclass default, an `__init__` that stores a
        parameter)."""
        base = expr.value
        if isinstance(base, ast.Name):
            if base.id in ("self", "cls"):
                owner = self.index.enclosing_class(at)
                found = (self, owner) if owner is not None else None
            else:
                found = self.definition(base, at)
            if found is not None and isinstance(found[1], ast.ClassDef):
                tracer, cls = found
                out = []
                for _, v in tracer.self_assignments(cls).get(expr.attr, []):
                    out.extend(tracer.candidates(v, v, depth + 1, follow_calls))
                return out or [expr]
            if base.id in ("self", "cls"):
                return [expr]
        out = []
        keep = False
        for obj in self.candidates(base, at, depth + 1, False):
            values = self.tracer_for(obj)._constructed_attribute(obj, expr.attr) if isinstance(obj, ast.Call) else None
            if values is None:
                keep = True
                continue
            for tracer, v in values:
                out.extend(tracer.candidates(v, v, depth + 1, follow_calls))
        if keep or not out:
            out.append(expr)
        return out

    def _constructed_attribute(self, call: ast.Call, attr: str):
        """[(tracer, value)] of attribute `attr` of the object `call` builds when it calls a
        class of the project; None when unknown."""
        found = self.definition(call.func, call) if isinstance(call.func, (ast.Name, ast.Attribute)) else None
        if found is None or not isinstance(found[1], ast.ClassDef):
            return None
        tracer, cls = found
        for kw in call.keywords:
            if kw.arg == attr:
                return [(self, kw.value)]
        if any(kw.arg is None for kw in call.keywords) or any(isinstance(a, ast.Starred) for a in call.args):
            return None
        init = next((s for s in cls.body if isinstance(s, FunctionNode) and s.name == "__init__"), None)
        if init is None:  # a dataclass / NamedTuple: fields in order, defaults in the body
            fields = [s for s in cls.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)]
            for n, f in enumerate(fields):
                if f.target.id == attr:
                    if n < len(call.args):
                        return [(self, call.args[n])]
                    return [(tracer, f.value)] if f.value is not None else None
            items = tracer.self_assignments(cls).get(attr, [])
            return [(tracer, v) for _, v in items] or None
        stored = [v for s, v in tracer.self_assignments(cls).get(attr, [])
                  if tracer.index.enclosing_function(s) is init]
        if len(stored) != 1:
            return None
        value = stored[0]
        if isinstance(value, ast.Name) and tracer.is_parameter(value.id, init) \
                and not tracer.assignments(init).get(value.id):
            params = [p.arg for p in positional_parameters(init)][1:]
            if value.id in params and params.index(value.id) < len(call.args):
                return [(self, call.args[params.index(value.id)])]
            kw = next((k.value for k in call.keywords if k.arg == value.id), None)
            if kw is not None:
                return [(self, kw)]
            default = parameter_defaults(init).get(value.id)
            return [(tracer, default)] if default is not None else None
        return [(tracer, value)]

    def builder_returns(self, call: ast.Call, at: ast.AST) -> List[ast.expr]:
        """Return values of a builder defined in this module/class, or imported from a module
        of the project: `get_mask(...)`, `self._build_mask(...)`, `Cls.method(...)`,
        `utils.get_mask(...)`."""
        func = call.func
        target: Optional[ast.AST] = None
        tracer: ValueTracer = self
        if isinstance(func, ast.Name):
            found = self.definition(func, at)
            if found is not None:
                tracer, target = found
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in ("self", "cls"):
            owner = self.index.enclosing_class(at)
            if owner is not None:
                target = _method(owner, func.attr, self)
        elif isinstance(func, ast.Attribute):
            found = self.definition(func.value, at) if isinstance(func.value, ast.Name) else None
            if found is not None and isinstance(found[1], ast.ClassDef):
                tracer, owner = found
                target = _method(owner, func.attr, tracer)
            elif self.project is not None and dotted_name(func) is not None and self.definition(func, at):
                tracer, target = self.definition(func, at)
            else:  # a method of an object built from a class here or in the project:
                # `self.block_tables = BlockTable(...)`, later `self.block_tables.get_device_tensor(n)`
                for obj in self.candidates(func.value, at, 1, False):
                    owner_tracer = self.tracer_for(obj)
                    cls = owner_tracer.definition(obj.func, obj) if isinstance(obj, ast.Call) and isinstance(
                        obj.func, (ast.Name, ast.Attribute)) else None
                    if cls is not None and isinstance(cls[1], ast.ClassDef):
                        method = _method(cls[1], func.attr, cls[0])
                        if method is not None:
                            tracer, target = cls[0], method
                            break
        if isinstance(target, ast.ClassDef) or not isinstance(target, FunctionNode):
            return []
        return tracer.returns_of(target)

    def returns_of(self, func: ast.AST) -> List[ast.expr]:
        """The values `func` returns (not those of its nested functions); once per function."""
        hit = self._returns.get(id(func))
        if hit is None or hit[0] is not func:
            enclosing = self.index.enclosing_function
            hit = self._returns[id(func)] = (func, [
                n.value for n in walk_in_order(func) if type(n) is ast.Return and n.value is not None
                and enclosing(n) is func])
        return list(hit[1])

    # -- literals ---------------------------------------------------------------------------
    def literal(self, expr: ast.expr):
        """The constant value of `expr`, or UNKNOWN."""
        if isinstance(expr, ast.Constant):
            return expr.value
        if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, (ast.USub, ast.UAdd)):
            inner = self.literal(expr.operand)
            if isinstance(inner, (int, float)) and not isinstance(inner, bool):
                return -inner if isinstance(expr.op, ast.USub) else inner
            return UNKNOWN
        if isinstance(expr, (ast.Tuple, ast.List)):
            items = [self.literal(e) for e in expr.elts]
            return UNKNOWN if any(i is UNKNOWN for i in items) else tuple(items)
        return UNKNOWN

    def literal_values(self, expr: ast.expr, at: Optional[ast.AST] = None) -> List[object]:
        """Literal value of each candidate (UNKNOWN where not a literal)."""
        return [self.literal(c) for c in self.candidates(expr, at)]

    def int_value(self, expr: ast.expr, at: Optional[ast.AST] = None):
        """An int if every candidate is the same int literal (names followed), else UNKNOWN."""
        values = self.literal_values(expr, at)
        if values and all(isinstance(v, int) and not isinstance(v, bool) for v in values) \
                and len(set(values)) == 1:
            return values[0]
        return UNKNOWN

    # -- keywords --------------------------------------------------------------------------
    def call_args(self, call: ast.Call) -> CallArgs:
        args = CallArgs()
        for a in call.args:
            if isinstance(a, ast.Starred):
                args.complete = False
            else:
                args.positional.append(a)
        for kw in call.keywords:
            if kw.arg is not None:
                args.keywords.setdefault(kw.arg, []).append(KeywordArg(kw.arg, kw.value, kw))
            else:
                if not self._expand_mapping(kw.value, call, args, conditional=False, depth=0):
                    args.complete = False
        return args

    def _expand_mapping(self, expr: ast.expr, at: ast.AST, args: CallArgs, conditional: bool,
                        depth: int, via: Optional[str] = None) -> bool:
        """Add the keys of a `**expr` mapping; False when it cannot be resolved."""
        if depth > MAX_DEPTH:
            return False
        if isinstance(expr, ast.Dict):
            ok = True
            for k, v in zip(expr.keys, expr.values):
                if k is None:
                    ok &= self._expand_mapping(v, at, args, conditional, depth + 1, via)
                elif isinstance(k, ast.Constant) and isinstance(k.value, str):
                    args.keywords.setdefault(k.value, []).append(KeywordArg(k.value, v, k, conditional, via))
                else:
                    ok = False
            return ok
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "dict":
            return self._expand_call_arguments(expr, at, args, conditional, depth, via)
        if isinstance(expr, ast.IfExp):
            a = self._expand_mapping(expr.body, at, args, True, depth + 1, via)
            b = self._expand_mapping(expr.orelse, at, args, True, depth + 1, via)
            return a and b
        if isinstance(expr, ast.Name):
            return self._expand_named_dict(expr.id, at, args, conditional, depth)
        return False

    def _expand_call_arguments(self, call: ast.Call, at: ast.AST, args: CallArgs, conditional: bool,
                               depth: int, via: Optional[str]) -> bool:
        """The keys `dict(m, k=v, **n)` or `d.update(m, k=v, **n)` contributes."""
        ok = True
        for a in call.args:
            ok &= self._expand_mapping(a, at, args, conditional, depth + 1, via)
        for kw in call.keywords:
            if kw.arg is None:
                ok &= self._expand_mapping(kw.value, at, args, conditional, depth + 1, via)
            else:
                args.keywords.setdefault(kw.arg, []).append(KeywordArg(kw.arg, kw.value, kw, conditional, via))
        return ok

    def _expand_named_dict(self, name: str, at: ast.AST, args: CallArgs, conditional: bool, depth: int) -> bool:
        func = self.index.enclosing_function(at)
        scope = func if func is not None else self.index.tree
        items = self.assignments(scope).get(name, [])
        line = getattr(at, "lineno", 10 ** 9)
        items = [(s, v) for s, v in items if s.lineno < line and not self.in_other_branch(s, at)]
        if not items:
            return False
        ok = True
        for stmt, value in items:
            ok &= self._expand_mapping(value, stmt, args, conditional or len(items) > 1, depth + 1, name)
        # d["k"] = v, d.update({...}) / d.update(k=v), d.setdefault("k", v) in the same scope
        for node in self.index.walk_scope(scope):
            t = type(node)
            if t is ast.Assign:
                if not any(isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name)
                           and target.value.id == name for target in node.targets):
                    continue
            elif not (t is ast.Call and isinstance(node.func, ast.Attribute)
                      and isinstance(node.func.value, ast.Name) and node.func.value.id == name
                      and node.func.attr in ("update", "setdefault", "pop", "clear", "popitem")):
                continue  # neither writes nor drops a key of `name`: nothing to add
            if node.lineno >= line:
                continue
            cond = conditional or self._is_conditional(node, scope)
            if cond and self.in_other_branch(node, at):
                continue  # `if v2: d["softmax_scale"] = s` does not reach the call in the else arm
            if t is ast.Assign:
                for target in node.targets:
                    if (isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name)
                            and target.value.id == name):
                        key = target.slice
                        if isinstance(key, ast.Constant) and isinstance(key.value, str):
                            args.keywords.setdefault(key.value, []).append(
                                KeywordArg(key.value, node.value, key, cond, name))
                        else:
                            ok = False
            else:
                method = node.func.attr
                if method == "update":
                    ok &= self._expand_call_arguments(node, node, args, cond, depth, name)
                elif method == "setdefault" and node.args and isinstance(node.args[0], ast.Constant):
                    key = node.args[0].value
                    value = node.args[1] if len(node.args) > 1 else ast.Constant(None)
                    args.keywords.setdefault(key, []).append(KeywordArg(key, value, node.args[0], cond, name))
                elif method in ("pop", "clear", "popitem"):
                    for items_ in args.keywords.values():
                        for k in items_:
                            if k.via_dict == name:
                                k.conditional = True
        return ok

    def in_other_branch(self, a: ast.AST, b: ast.AST) -> bool:
        """`a` and `b` sit in different arms of one `if`/ternary (or a `try` body and one of
        its handlers), so one never runs after the other in the same pass."""
        chain = [a] + list(self.index.ancestors(a))
        position = {id(n): i for i, n in enumerate(chain)}
        child_b = b
        for anc in self.index.ancestors(b):
            i = position.get(id(anc))
            if i is not None:
                if i == 0:
                    return False
                arm_a, arm_b = _arm(anc, chain[i - 1]), _arm(anc, child_b)
                return bool(arm_a) and bool(arm_b) and arm_a != arm_b
            child_b = anc
        return False

    def _is_conditional(self, node: ast.AST, scope: ast.AST) -> bool:
        for a in self.index.ancestors(node):
            if a is scope:
                return False
            if isinstance(a, (ast.If, ast.For, ast.While, ast.Try, ast.With, ast.IfExp, ast.Match)
                          if hasattr(ast, "Match") else (ast.If, ast.For, ast.While, ast.Try, ast.With, ast.IfExp)):
                return True
        return False


def _target_names(target: ast.expr, add) -> None:
    """`add` each name among an assignment target's leaves (tuples, lists and stars
    unpacked; `x[i]` and `o.a` bind no name)."""
    t = type(target)
    if t is ast.Name:
        add(target.id)
    elif t is ast.Tuple or t is ast.List:
        for e in target.elts:
            _target_names(e, add)
    elif t is ast.Starred:
        _target_names(target.value, add)


def _writes_class_attribute(target: ast.expr, classes) -> bool:
    """Whether an assignment target (tuple and starred targets included) holds `C.attr` for
    a class name `C` in `classes`."""
    if isinstance(target, ast.Attribute):
        return isinstance(target.value, ast.Name) and target.value.id in classes
    if isinstance(target, (ast.Tuple, ast.List)):
        return any(_writes_class_attribute(e, classes) for e in target.elts)
    if isinstance(target, ast.Starred):
        return _writes_class_attribute(target.value, classes)
    return False


def _sort(table: Dict[str, List[Tuple[ast.AST, ast.expr]]]) -> None:
    for items in table.values():
        items.sort(key=lambda pair: (pair[0].lineno, pair[0].col_offset))


def _method(cls: ast.ClassDef, name: str, tracer: "ValueTracer") -> Optional[ast.AST]:
    """Method `name` of `cls`, or of a base class defined in the same module."""
    seen = set()
    while cls is not None and id(cls) not in seen:
        seen.add(id(cls))
        for stmt in cls.body:
            if isinstance(stmt, FunctionNode) and stmt.name == name:
                return stmt
        base = next((b for b in cls.bases if isinstance(b, ast.Name)), None)
        d = tracer.definitions().get(base.id) if base is not None else None
        cls = d if isinstance(d, ast.ClassDef) else None
    return None


def _arm(node: ast.AST, child: ast.AST) -> str:
    """Which exclusive arm of `node` holds `child`: "body", "else", a handler, or "" (the
    test, a `finally`, or no arms: runs on every path through `node`)."""
    if isinstance(node, (ast.If, ast.IfExp)):
        if child is node.test:
            return ""
        orelse = node.orelse if isinstance(node.orelse, list) else [node.orelse]
        return "else" if any(child is c for c in orelse) else "body"
    if isinstance(node, ast.Try):
        if any(child is f for f in node.finalbody):
            return ""
        for n, handler in enumerate(node.handlers):
            if child is handler:
                return f"handler{n}"
        return "body"
    return ""
