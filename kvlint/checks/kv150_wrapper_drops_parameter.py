"""KV150: a wrapper's own scale / mask parameter never reaches the operator it calls, or
reaches one of its operator calls but not another (docs: rules/codes/KV150.toml)."""
import ast
from typing import Dict, List, Optional, Set

from kvlint.analysis.context import DECODE
from kvlint.analysis.module import child_nodes, dotted_name, named_parameters, scope_nodes
from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.facts import load_facts
from kvlint.helpers.keywords import misnamed

SCALE_PARAMS = ("scale", "softmax_scale", "scale_value", "sm_scale")
MASK_PARAMS = ("attention_mask", "attn_mask", "atten_mask")
MASK_KEYWORD = "atten_mask"
QKV = ("query", "key", "value")
MAX_HOPS = 8
FACTS = load_facts()
MASK_READERS = FACTS.family("mask_readers")
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


class Bindings:
    """What each local name (and `self.x`) of one function may be bound from: assignments,
    tuple unpacks of any value (`q, k, v, m = fetch(..., attn_mask)`), loop and comprehension
    targets (`for m, x in zip(masks, xs)`), `with ... as x`, walrus, augmented assignments."""

    def __init__(self, func: ast.AST):
        self.table: Dict[str, List[ast.expr]] = {}
        for node in scope_nodes(func, _SCOPES):  # a stack walk, nested scopes skipped
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    self._bind(t, node.value)
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)) and node.value is not None:
                self._bind(node.target, node.value)
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                self._bind(node.target, node.iter)
            elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                self._bind(node.optional_vars, node.context_expr)

    def _bind(self, target: ast.expr, value: ast.expr) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts) \
                    and not any(isinstance(e, ast.Starred) for e in target.elts):
                for t, v in zip(target.elts, value.elts):
                    self._bind(t, v)
            else:
                for t in target.elts:  # an unpacked call result: each part may carry any input
                    self._bind(t, value)
        elif isinstance(target, ast.Starred):
            self._bind(target.value, value)
        else:
            key = _key(target)
            if key is not None:
                self.table.setdefault(key, []).append(value)

    def depends(self, expr: ast.expr, name: str, seen: Optional[Set[str]] = None, hops: int = 0) -> bool:
        """`expr` mentions `name`, directly or through the names and `self.x` bound in the
        function. `obj.field` of a local built as `Params(..., field=value)` follows only
        `value` (field-sensitive), not everything else the object was built from."""
        seen = set() if seen is None else seen
        stack = [expr]
        while stack:
            n = stack.pop()
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id != "self":
                picked = self._field(n.value.id, n.attr)
                if picked is not None:
                    if hops < MAX_HOPS and any(self.depends(v, name, seen, hops + 1) for v in picked):
                        return True
                    continue
            key = _key(n) if isinstance(getattr(n, "ctx", None), ast.Load) else None
            if key is not None:
                if key == name:
                    return True
                if key not in seen and hops < MAX_HOPS:
                    seen.add(key)
                    if any(self.depends(v, name, seen, hops + 1) for v in self.table.get(key, ())):
                        return True
                if isinstance(n, ast.Attribute):
                    continue  # `self.x`: followed through its bindings
            stack.extend(child_nodes(n))
        return False

    def _field(self, obj: str, attr: str) -> Optional[List[ast.expr]]:
        """The values of keyword `attr` when every binding of `obj` is a call passing it."""
        values = self.table.get(obj)
        if not values or not all(isinstance(v, ast.Call) for v in values):
            return None
        picked = [k.value for v in values for k in v.keywords if k.arg == attr]
        return picked if len(picked) == len(values) else None


def bindings_of(func: ast.AST, ctx: FileContext) -> Bindings:
    """The `Bindings` of `func`, built once per function (each operator call in it asks)."""
    memo = ctx.__dict__.setdefault("_bindings", {})
    hit = memo.get(id(func))
    if hit is None or hit[0] is not func:
        hit = memo[id(func)] = (func, Bindings(func))
    return hit[1]


def _key(node: ast.AST) -> Optional[str]:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return f"self.{node.attr}"
    return None


@register
class WrapperDropsParameter(Rule):
    code = "KV150"
    operators = MASK_READERS

    def check_call(self, oc, ctx: FileContext):
        func = ctx.index.enclosing_function(oc.call)
        if func is None or not self._first_op_call(oc, func, ctx):
            return
        calls = [c for c in ctx.op_calls if c.name in MASK_READERS and ctx.index.enclosing_function(c.call) is func]
        if any(not ctx.args(c.call).complete for c in calls):
            return  # an unresolved **kwargs may carry it
        bindings = bindings_of(func, ctx)
        for name, param in self._params(func).items():
            concept = "scale" if name in SCALE_PARAMS else "mask" if name in MASK_PARAMS else None
            if concept is None:
                continue
            # REJECTED_OR_HANDED_OFF: `if mask is not None: raise ...` / `return other(..., mask)`
            # before a call: that call only runs without the value, so nothing is dropped there
            open_calls = [c for c in calls if not self._guarded(c.call, name, func, bindings, ctx)
                          and not self._known_unset(c.call, name, func, ctx)]
            if not open_calls:
                continue
            reached = [c for c in calls if self._reaches(name, c, concept, bindings, ctx)]
            keyword = MASK_KEYWORD if concept == "mask" else "/".join(
                sorted({FACTS.keyword(c.name, "scale") or "scale" for c in calls}))
            if not reached:
                yield ctx.finding(self.code, param,
                                  f"`{func.name}` takes `{name}` but its value never reaches the "
                                  f"`{keyword}` of the {oc.name} call(s) it makes (line "
                                  f"{', '.join(str(c.call.lineno) for c in calls)}): the caller's value "
                                  f"is silently dropped; pass it through (or remove the parameter)")
                continue
            branch = "PER_CALL_SCALE" if concept == "scale" else "PER_CALL_MASK"
            if not ctx.branch_on(self.code, branch):
                continue
            for c in open_calls:
                if c in reached or not self._drops_here(c, reached, concept, ctx):
                    continue
                text = (f"`{name}` of `{func.name}` reaches the {reached[0].name} call at line "
                        f"{reached[0].call.lineno} but not this one: on this path the caller's "
                        f"{concept} is silently dropped; pass `{name}` here too")
                yield ctx.finding(self.code, c.call.func, text, branch=branch)

    @staticmethod
    def _first_op_call(oc, func, ctx: FileContext) -> bool:
        """Report each function from its first operator call."""
        for c in ctx.op_calls:
            if c.name in MASK_READERS and ctx.index.enclosing_function(c.call) is func:
                return c is oc
        return False

    @staticmethod
    def _params(func) -> Dict[str, ast.arg]:
        return {p.arg: p for p in named_parameters(func)}

    @staticmethod
    def _reaches(name: str, oc, concept: str, bindings: Bindings, ctx: FileContext) -> bool:
        """The value reaches the call: its scale keyword or a positional argument after
        query, key, value for a scale; any argument but query, key and value for a mask (a
        mask also counts when it becomes the lengths, `_upad_input(mask)` -> cu_seqlens ->
        `actual_seq_qlen`). Query, key and value do not count: they are often built from an
        object that also holds the mask or the scale (`params = Params(q, k, v, mask)`)."""
        args = ctx.args(oc.call)
        if concept == "mask":
            values = [k.value for key, items in args.keywords.items() if key not in QKV for k in items]
        else:
            keyword = FACTS.keyword(oc.name, "scale") or "scale"
            values = args.values(keyword) + args.values("scale")
            values += [kw.value for kw in misnamed(oc, ctx, keyword)]  # KV101's finding, not ours
        values = list(values) + list(args.positional[3:])
        return any(bindings.depends(v, name) for v in values)

    @staticmethod
    def _drops_here(oc, reached, concept: str, ctx: FileContext) -> bool:
        """PER_CALL_DROP: a scale not taken from the parameter is always a drop. A mask only
        where the call passes none at all, in the same masking mode (sparse_mode) as a call
        that takes it (`sparse_mode=3` with the causal mask, `sparse_mode=0` without it is a
        choice of mode, not a drop), and not on the decode path (heuristic phase: one query
        token needs no causal mask)."""
        if concept == "scale":
            return True
        if any(not (isinstance(v, ast.Constant) and v.value is None) for v in ctx.args(oc.call).values(MASK_KEYWORD)):
            return False  # the call passes a mask of its own on this path: a choice, not a drop
        if ctx.context.phase(oc.call) == DECODE:
            return False
        modes = {_sparse_mode(c, ctx) for c in reached}
        return None not in modes and _sparse_mode(oc, ctx) in modes

    def _guarded(self, call: ast.Call, name: str, func, bindings: Bindings, ctx: FileContext) -> bool:
        """A statement before the call, in a block that holds it, raises when `name` is set
        (`if mask is not None: raise ...`, `assert mask is None`) or returns a value built from
        it (`if mask is not None: return other_backend(..., mask)`)."""
        child = ctx.index.statement_of(call)
        for anc in ctx.index.ancestors(call):
            for block in _blocks(anc):
                if child in block:
                    for stmt in block[:block.index(child)]:
                        if isinstance(stmt, ast.If) and _tests_set(stmt.test, name) and stmt.body:
                            last = stmt.body[-1]
                            if isinstance(last, ast.Raise) or (isinstance(last, ast.Return) and last.value is not None
                                                               and bindings.depends(last.value, name)):
                                return True
                        if isinstance(stmt, ast.Assert) and _tests_unset(stmt.test, name):
                            return True
            if anc is func:
                break
            child = anc
        return False

    @staticmethod
    def _known_unset(call: ast.Call, name: str, func, ctx: FileContext) -> bool:
        """The call sits where `name` is None: the body of `if name is None:` / the else of
        `if name is not None:`."""
        child: ast.AST = call
        for anc in ctx.index.ancestors(call):
            if isinstance(anc, (ast.If, ast.IfExp)):
                body = anc.body if isinstance(anc.body, list) else [anc.body]
                orelse = anc.orelse if isinstance(anc.orelse, list) else [anc.orelse]
                if child in body and _tests_unset(anc.test, name):
                    return True
                if child in orelse and _tests_set(anc.test, name):
                    return True
            if anc is func:
                break
            child = anc
        return False


def _sparse_mode(oc, ctx: FileContext):
    """The call's literal sparse_mode (0 when left out), None when not a literal."""
    values = ctx.args(oc.call).values("sparse_mode")
    if not values:
        return 0
    literals = {ctx.values.int_value(v, oc.call) for v in values}
    return literals.pop() if len(literals) == 1 else None


def _blocks(node: ast.AST):
    for field in ("body", "orelse", "finalbody"):
        block = getattr(node, field, None)
        if isinstance(block, list):
            yield block
    for handler in getattr(node, "handlers", ()) or ():
        yield handler.body


def _is_name(node: ast.AST, name: str) -> bool:
    return dotted_name(node) == name


def _none_compare(test: ast.expr, name: str, op: type) -> bool:
    """`name is None` (op=ast.Is) / `name is not None` (op=ast.IsNot)."""
    return isinstance(test, ast.Compare) and len(test.ops) == 1 and _is_name(test.left, name) \
        and isinstance(test.ops[0], op) and isinstance(test.comparators[0], ast.Constant) \
        and test.comparators[0].value is None


def _tests_set(test: ast.expr, name: str) -> bool:
    """True whenever `name` holds a value: `name`, `name is not None`, `... or name is not None`."""
    if _is_name(test, name) or _none_compare(test, name, ast.IsNot):
        return True
    return isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or) and any(_tests_set(v, name) for v in test.values)


def _tests_unset(test: ast.expr, name: str) -> bool:
    """True only when `name` is None: `name is None`, `not name`, `name is None and ...`."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) and _is_name(test.operand, name):
        return True
    if _none_compare(test, name, ast.Is):
        return True
    return isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) and any(_tests_unset(v, name) for v in test.values)
