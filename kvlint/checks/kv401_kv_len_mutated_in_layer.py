"""KV401: kv_len / seq lens / slot_mapping changed inside a layer (docs: rules/codes/KV401.toml)."""
from __future__ import annotations

import ast
import re
from typing import List, Optional

from kvlint.analysis.context import layer_class_pattern, layer_loop_pattern
from kvlint.analysis.module import FunctionNode, dotted_name
from kvlint.checks import register
from kvlint.checks.base import FileContext, NoCase, Rule
from kvlint.helpers.lengths import INPLACE_METHODS, kv_length_update_pattern, kv_length_write_pattern

# Heuristic FRESH_VALUE: a local bound to one of these is its own tensor; mutating it is safe.
FRESH_CALLS = frozenset({"clone", "copy", "deepcopy", "tensor", "zeros", "ones", "arange", "full",
                         "empty", "cat", "stack", "zeros_like", "ones_like", "new_zeros", "new_tensor",
                         "list", "int", "len", "sum", "max", "min", "cumsum", "tolist"})
DEVICE_MOVES = frozenset({"to", "npu", "cuda", "cpu", "pin_memory", "contiguous", "non_blocking"})
# Heuristic IDEMPOTENT_TRANSFORM: applying one of these twice gives what applying it once does
# (`m.seq_lens = m.seq_lens.int()` in every layer leaves the same value): not a drift.
IDEMPOTENT_TRANSFORMS = DEVICE_MOVES | {"int", "long", "view", "reshape", "flatten", "detach"}
# Heuristic INT_VALUE: a local bound to one of these holds a Python int: `+=` rebinds the local
# (the Hugging Face `kv_seq_len = value_states.shape[-2]; kv_seq_len += past_len`).
INT_METHODS = frozenset({"size", "numel", "item", "dim"})
# DRIFTING_METHODS: in-place methods whose result depends on the old value, always; the other
# INPLACE_METHODS (copy_, fill_, zero_, masked_fill_, index_put_, scatter_, ...) overwrite, and
# drift only when their arguments read the tensor they write (`x.copy_(x + 1)`) or accumulate
# (`index_put_(..., accumulate=True)`).
DRIFTING_METHODS = frozenset({"add_", "sub_", "mul_", "div_", "index_add_", "scatter_add_", "append", "extend"})
# Heuristic CONSTRUCTED_OBJECT: a local bound to `ClassName(...)` or `ClassName.factory(...)`
# (a class defined here, or a CamelCase name) is an object this call built: per-call state.
FACTORY_FUNCTIONS = frozenset({"copy", "deepcopy", "replace", "SimpleNamespace", "dict", "namedtuple"})
FACTORY_METHOD = re.compile(r"(?:from|init|create|build|new|make|copy|clone|default)")


def _values_before(name: str, func, at: ast.AST, ctx: FileContext) -> List[ast.expr]:
    """The values the local `name` of `func` is assigned on lines before `at`'s, in order."""
    return [v for stmt, v in ctx.values.assignments(func).get(name, []) if stmt.lineno < at.lineno]


def terminal_name(node: ast.expr) -> Optional[str]:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript):
        return terminal_name(node.value)
    return None


@register
class KvLenMutatedInLayer(Rule):
    code = "KV401"
    def words(self, settings):
        # KV_LENGTH_NAMES as configured, in any case (the rule lowercases a name to compare it)
        return tuple(NoCase(name) for name in settings.names.kv_length_names)

    def required_words(self, settings):
        # necessary for _in_layer: a LAYER_CLASS name or a PER_LAYER_LOOP word (pre-filter);
        # a write of a length name; and a PER_LAYER_LOOP word or a write other than a plain
        # name's `=` (a plain local's store is reported only inside a per-layer loop)
        names = settings.names
        return ((layer_class_pattern(names), layer_loop_pattern(names)),
                (kv_length_write_pattern(names),),
                (layer_loop_pattern(names), kv_length_update_pattern(names)))

    def check_module(self, ctx: FileContext):
        idx = ctx.index
        for node in idx.aug_assigns:
            name = terminal_name(node.target)
            if name and ctx.context.is_kv_length_name(name) and self._in_layer(node, ctx) \
                    and not self._fresh_local(node.target, node, ctx) \
                    and not self._per_call_object(node.target, node, ctx):
                yield ctx.finding(self.code, node.target, self._message(name, node, ctx, "incremented"))
        for call in idx.calls:
            f = call.func
            if isinstance(f, ast.Attribute) and f.attr in INPLACE_METHODS:
                name = terminal_name(f.value)
                if name and ctx.context.is_kv_length_name(name) and self._in_layer(call, ctx) \
                        and not self._fresh_local(f.value, call, ctx) and not self._per_call_object(f.value, call, ctx):
                    if f.attr in ("append", "extend") and not isinstance(f.value, ast.Attribute):
                        continue
                    if not self._drifts(call, f.value):
                        continue  # IDEMPOTENT: overwritten from other values, the same in every layer
                    yield ctx.finding(self.code, call, self._message(name, call, ctx, f"changed in place (.{f.attr})"))
        is_length = ctx.context.is_kv_length_name
        for node in idx.assigns:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                name = terminal_name(target)
                if name and is_length(name):  # _check_store's first test, before its generator is made
                    yield from self._check_store(target, node, ctx)

    def _check_store(self, target, stmt, ctx: FileContext):
        name = terminal_name(target)
        if not name or not ctx.context.is_kv_length_name(name) or stmt.value is None:
            return
        if not self._in_layer(stmt, ctx):
            return
        in_loop = ctx.context.per_layer_loop(stmt) is not None
        if self._per_call_object(target, stmt, ctx):
            return
        if isinstance(target, ast.Subscript):
            base = target
            while isinstance(base, ast.Subscript):
                base = base.value
            if self._fresh_local(base, stmt, ctx) or not self._refers_to(stmt.value, base):
                return  # IDEMPOTENT: the slot gets a value that does not read the old one
            yield ctx.finding(self.code, target, self._message(name, stmt, ctx, "written in place"))
            return
        increments = self._refers_to(stmt.value, target)
        if isinstance(target, ast.Name):
            if in_loop and increments:
                yield ctx.finding(self.code, target, self._message(name, stmt, ctx, "re-derived"))
            return
        if isinstance(target, ast.Attribute):
            if self._device_move(stmt.value, target) or self._restored(stmt, target, ctx):
                return
            # IDEMPOTENT: a new value that does not read the old one is the same per-step
            # value in every layer (written from step inputs): nothing drifts
            if increments:
                yield ctx.finding(self.code, target, self._message(name, stmt, ctx, "overwritten"))

    # -- heuristics -------------------------------------------------------------------------
    def _in_layer(self, node, ctx: FileContext) -> bool:
        """LAYER_CLASS method other than __init__, or PER_LAYER_LOOP body."""
        if ctx.context.per_layer_loop(node) is not None:
            return True
        func = ctx.index.enclosing_function(node)
        if func is None or func.name in ("__init__", "__post_init__"):
            return False
        return ctx.context.layer_class(node) is not None

    def _fresh_local(self, target, at, ctx: FileContext) -> bool:
        """CLONE_THEN_MUTATE: a local bound to a fresh tensor/value before the mutation."""
        if not isinstance(target, ast.Name):
            return False
        func = ctx.index.enclosing_function(at)
        if func is None:
            return False
        before = _values_before(target.id, func, at, ctx)
        if not before:
            return False
        value = before[-1]
        while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in DEVICE_MOVES:
            value = value.func.value
        if isinstance(value, (ast.Constant, ast.List, ast.ListComp, ast.BinOp)):
            return True
        if self._int_value(value) or self._int_local(value, func, at, ctx):
            return True
        if isinstance(value, ast.Call):
            f = value.func
            name = f.attr if isinstance(f, ast.Attribute) else (f.id if isinstance(f, ast.Name) else "")
            return name in FRESH_CALLS
        return False

    @classmethod
    def _int_local(cls, value: ast.expr, func, at, ctx: FileContext, depth: int = 4) -> bool:
        """INT_VALUE through locals: `value` is a local name whose last value before `at` is
        an int (`bsz, q_len, _ = h.size()`, then `kv_seq_len = q_len`); a parameter is not."""
        while isinstance(value, ast.Name) and depth > 0:
            before = _values_before(value.id, func, at, ctx)
            if not before:
                return False
            value, depth = before[-1], depth - 1
            if cls._int_value(value):
                return True
        return False

    @staticmethod
    def _int_value(value: ast.expr) -> bool:
        """INT_VALUE: `t.shape[i]`, `t.size(i)`, `t.numel()`, `t.item()`, `len(x)`, `int(x)`,
        and an element unpacked from a shape (`t.size()[i]`, `t.shape[:2][i]`, as
        `b, n = t.size()` binds them)."""
        if isinstance(value, ast.Subscript) and not isinstance(value.slice, ast.Slice):
            shape = value.value
            if isinstance(shape, ast.Subscript) and isinstance(shape.slice, ast.Slice):
                shape = shape.value  # t.shape[:2][i]
            if isinstance(shape, ast.Attribute) and shape.attr == "shape":
                return True
            if isinstance(shape, ast.Call) and isinstance(shape.func, ast.Attribute) \
                    and shape.func.attr == "size" and not shape.args and not shape.keywords:
                return True
        if isinstance(value, ast.Call):
            f = value.func
            if isinstance(f, ast.Attribute) and f.attr in INT_METHODS and (f.attr != "size" or value.args):
                return True
            if isinstance(f, ast.Name) and f.id in ("len", "int"):
                return True
        return False

    def _per_call_object(self, target, at, ctx: FileContext) -> bool:
        """CONSTRUCTED_OBJECT: `cfg.actual_seq_kvlen = ...` where `cfg` is a local this
        function built (`cfg = AttnCpConfig.init_from_para(p)`, `copy.copy(m)`), like
        clone-then-mutate: the object is per-call state, not the runner's."""
        root = target
        while isinstance(root, (ast.Attribute, ast.Subscript)):
            root = root.value
        if root is target or not isinstance(root, ast.Name) or root.id == "self":
            return False
        func = ctx.index.enclosing_function(at)
        if func is None or ctx.values.is_parameter(root.id, func):
            return False
        before = _values_before(root.id, func, at, ctx)
        if not before or not all(self._constructs(v, ctx) for v in before):
            return False
        return True

    @staticmethod
    def _constructs(value: ast.expr, ctx: FileContext) -> bool:
        if not isinstance(value, ast.Call):
            return False
        f = value.func
        if isinstance(f, ast.Attribute):
            if f.attr in FACTORY_FUNCTIONS:
                return True
            if not FACTORY_METHOD.match(f.attr):
                return False  # `Registry.lookup(...)` may hand back shared state
            f = f.value  # `Config.init_from_para(p)`: a factory of the class
        name = f.id if isinstance(f, ast.Name) else (f.attr if isinstance(f, ast.Attribute) else "")
        if name in FACTORY_FUNCTIONS or name in FRESH_CALLS:
            return True
        if any(c.name == name for c in ctx.index.classes):
            return True
        return bool(re.fullmatch(r"_?[A-Z][a-z0-9]+(?:[A-Z0-9][A-Za-z0-9]*)*", name))

    def _drifts(self, call: ast.Call, written: ast.expr) -> bool:
        """An in-place method drifts when it accumulates, or reads the tensor it writes."""
        method = call.func.attr
        if method in DRIFTING_METHODS:
            return True
        if method == "index_put_" and any(k.arg == "accumulate" and not (isinstance(k.value, ast.Constant)
                                                                          and not k.value.value)
                                          for k in call.keywords):
            return True
        return any(self._refers_to(a, written) for a in [*call.args, *(k.value for k in call.keywords)])

    @staticmethod
    def _refers_to(value: ast.expr, target: ast.expr) -> bool:
        want = dotted_name(target)
        return want is not None and any(dotted_name(n) == want for n in ast.walk(value)
                                        if isinstance(n, (ast.Name, ast.Attribute)))

    @staticmethod
    def _device_move(value: ast.expr, target: ast.expr) -> bool:
        """DEVICE_MOVE / IDEMPOTENT_TRANSFORM: `m.seq_lens = m.seq_lens.to(device)`, `.int()`."""
        want = dotted_name(target)
        while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) \
                and value.func.attr in IDEMPOTENT_TRANSFORMS:
            value = value.func.value
            if dotted_name(value) == want:
                return True
        return False

    @staticmethod
    def _restored(stmt, target, ctx: FileContext) -> bool:
        """TRY_FINALLY_RESTORE: the same attribute is assigned back in a `finally:` block."""
        want = dotted_name(target)
        for anc in ctx.index.ancestors(stmt):
            if isinstance(anc, ast.Try) and anc.finalbody:
                for n in ast.walk(ast.Module(body=anc.finalbody, type_ignores=[])):
                    if isinstance(n, ast.Assign) and any(dotted_name(t) == want for t in n.targets):
                        return True
            if isinstance(anc, FunctionNode):
                break
        return False

    def _message(self, name, node, ctx: FileContext, how: str) -> str:
        loop = ctx.context.per_layer_loop(node)
        where = "inside a per-layer loop" if loop is not None else \
            f"inside {ctx.context.layer_class(node).name}.{ctx.index.enclosing_function(node).name}"
        return (f"`{name}` {how} {where}: it is owned by the runner and shared by every layer of the "
                f"step, so each later layer writes and reads at a shifted position; update it once "
                f"per step outside the model's forward")


def reports_store(target: ast.expr, stmt: ast.AST, ctx: FileContext) -> bool:
    """Whether KV401 reports this store of a length name (KV402 leaves those to KV401)."""
    return any(True for _ in _KV401._check_store(target, stmt, ctx))


def per_call_object(target: ast.expr, stmt: ast.AST, ctx: FileContext) -> bool:
    """KV401's CONSTRUCTED_OBJECT: `target` is an attribute of an object this function built."""
    return _KV401._per_call_object(target, stmt, ctx)


_KV401 = KvLenMutatedInLayer()
