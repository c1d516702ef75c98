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

from kvlint.analysis.module import FunctionNode, ModuleIndex

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


class ValueTracer:
    def __init__(self, index: ModuleIndex):
        self.index = index
        self._assign_tables: Dict[int, Dict[str, List[Tuple[ast.AST, ast.expr]]]] = {}
        self._self_tables: Dict[int, Dict[str, List[Tuple[ast.AST, ast.expr]]]] = {}
        self._defs: Optional[Dict[str, ast.AST]] = None
        # candidates() is pure for a given index: memoised, else a chain of names bound to
        # each other (`x = f(x)` in loops, builders calling builders) is exponential
        self._candidates: Dict[Tuple[int, int, int, bool], Tuple[ast.AST, ast.AST, List[ast.expr]]] = {}

    # -- assignment tables ----------------------------------------------------------------
    def assignments(self, scope: ast.AST) -> Dict[str, List[Tuple[ast.AST, ast.expr]]]:
        """name -> [(statement, value)] for plain-name assignments directly in `scope`
        (nested functions and classes excluded)."""
        table = self._assign_tables.get(id(scope))
        if table is not None:
            return table
        table = {}
        stack = list(ast.iter_child_nodes(scope))
        while stack:
            node = stack.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                continue
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    self._bind(table, target, node, node.value)
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                self._bind(table, node.target, node, node.value)
            elif isinstance(node, ast.NamedExpr):
                self._bind(table, node.target, node, node.value)
            stack.extend(ast.iter_child_nodes(node))
        for items in table.values():
            items.sort(key=lambda pair: (pair[0].lineno, pair[0].col_offset))
        self._assign_tables[id(scope)] = table
        return table

    @staticmethod
    def _bind(table, target, stmt, value) -> None:
        if isinstance(target, ast.Name):
            table.setdefault(target.id, []).append((stmt, value))
        elif isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) \
                and len(target.elts) == len(value.elts):
            for t, v in zip(target.elts, value.elts):
                ValueTracer._bind(table, t, stmt, v)

    def self_assignments(self, cls: ast.ClassDef) -> Dict[str, List[Tuple[ast.AST, ast.expr]]]:
        table = self._self_tables.get(id(cls))
        if table is not None:
            return table
        table = {}
        for node in ast.walk(cls):
            targets: List[ast.expr] = []
            if isinstance(node, ast.Assign):
                targets, value = node.targets, node.value
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                targets, value = [node.target], node.value
            for target in targets:
                if (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                        and target.value.id == "self"):
                    table.setdefault(target.attr, []).append((node, value))
        self._self_tables[id(cls)] = table
        return table

    def definitions(self) -> Dict[str, ast.AST]:
        """Module-level functions and classes by name."""
        if self._defs is None:
            self._defs = {n.name: n for n in self.index.tree.body
                          if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
        return self._defs

    def is_parameter(self, name: str, func: ast.AST) -> bool:
        if not isinstance(func, FunctionNode):
            return False
        a = func.args
        params = a.posonlyargs + a.args + a.kwonlyargs + [x for x in (a.vararg, a.kwarg) if x]
        return any(p.arg == name for p in params)

    # -- candidates ------------------------------------------------------------------------
    def bindings(self, name: str, at: ast.AST) -> List[ast.expr]:
        """Values `name` may hold at `at`: assignments in the enclosing function before `at`
        (every branch), else module-level assignments. When the name is a parameter that is
        not assigned on every path before `at`, the parameter itself stays a candidate (an
        unknown leaf): `if q_len > 1: ... else: mask = None` keeps the caller's mask."""
        func = self.index.enclosing_function(at)
        line = getattr(at, "lineno", 10 ** 9)
        if func is not None:
            items = self.assignments(func).get(name, [])
            before = [(stmt, v) for stmt, v in items if stmt.lineno < line]
            if before:
                values = self._reaching(before, func)
                if self.is_parameter(name, func) and not definitely_assigns(func.body, name, line):
                    values.append(_PARAMETER)
                return values
            if items or self.is_parameter(name, func):
                return []
        items = self.assignments(self.index.tree).get(name, [])
        return [v for _, v in items]

    def _reaching(self, before, func) -> List[ast.expr]:
        # every assignment from the last one written at the function's top level on (an
        # earlier top-level one is overwritten); assignments inside branches all count.
        result = []
        for stmt, v in reversed(before):
            result.append(v)
            if self.index.parent_of(stmt) is func:
                break
        return list(reversed(result))

    def candidates(self, expr: ast.expr, at: Optional[ast.AST] = None, depth: int = 0,
                   follow_calls: bool = False) -> List[ast.expr]:
        """Leaf expressions `expr` may evaluate to. A leaf that cannot be followed further is
        returned as is (a parameter name, a call, an attribute of another object...)."""
        at = at if at is not None else expr
        if depth > MAX_DEPTH:
            return [expr]
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
        if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == "self":
            cls = self.index.enclosing_class(at)
            if cls is not None:
                items = self.self_assignments(cls).get(expr.attr, [])
                if items:
                    out = []
                    for _, v in items:
                        out.extend(self.candidates(v, v, depth + 1, follow_calls))
                    return out
            return [expr]
        if follow_calls and isinstance(expr, ast.Call):
            returns = self.builder_returns(expr, at)
            if returns:
                out = []
                for r in returns:
                    out.extend(self.candidates(r, r, depth + 1, follow_calls))
                return out
        return [expr]

    def builder_returns(self, call: ast.Call, at: ast.AST) -> List[ast.expr]:
        """Return values of a builder defined in this module/class: `get_mask(...)`,
        `self._build_mask(...)`, `Cls.method(...)`."""
        func = call.func
        target: Optional[ast.AST] = None
        if isinstance(func, ast.Name):
            target = self.definitions().get(func.id)
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            owner = None
            if func.value.id in ("self", "cls"):
                owner = self.index.enclosing_class(at)
            else:
                d = self.definitions().get(func.value.id)
                owner = d if isinstance(d, ast.ClassDef) else None
            if owner is not None:
                for stmt in owner.body:
                    if isinstance(stmt, FunctionNode) and stmt.name == func.attr:
                        target = stmt
        if not isinstance(target, FunctionNode):
            return []
        return [n.value for n in ast.walk(target) if isinstance(n, ast.Return) and n.value is not None
                and self.index.enclosing_function(n) is target]

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
        for node in self._walk_scope(scope):
            if getattr(node, "lineno", 0) >= line:
                continue
            cond = conditional or self._is_conditional(node, scope)
            if cond and self.in_other_branch(node, at):
                continue  # `if v2: d["softmax_scale"] = s` does not reach the call in the else arm
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if (isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name)
                            and target.value.id == name):
                        key = target.slice
                        if isinstance(key, ast.Constant) and isinstance(key.value, str):
                            args.keywords.setdefault(key.value, []).append(
                                KeywordArg(key.value, node.value, key, cond, name))
                        else:
                            ok = False
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == name:
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

    def _walk_scope(self, scope: ast.AST):
        stack = list(ast.iter_child_nodes(scope))
        while stack:
            node = stack.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                continue
            yield node
            stack.extend(ast.iter_child_nodes(node))

    def _is_conditional(self, node: ast.AST, scope: ast.AST) -> bool:
        for a in self.index.ancestors(node):
            if a is scope:
                return False
            if isinstance(a, (ast.If, ast.For, ast.While, ast.Try, ast.With, ast.IfExp, ast.Match)
                          if hasattr(ast, "Match") else (ast.If, ast.For, ast.While, ast.Try, ast.With, ast.IfExp)):
                return True
        return False


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
