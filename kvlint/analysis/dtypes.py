"""What dtype a tensor construction ends with, read from source.

`infer_dtype(expr)` returns one of "bool", "int8", "uint8", "int32", "int64", "float" or None
(unknown). The outermost conversion decides: `torch.triu(torch.ones(n, n), 1).to(torch.int8)`
is int8 although `torch.ones` alone is float. Names, `self.` attributes and builder calls are
followed through the ValueTracer.
"""
from __future__ import annotations

import ast
from typing import Dict, List, Optional, Tuple

from kvlint.analysis.module import dotted_name
from kvlint.analysis.values import Each, ValueTracer

DTYPE_NAMES = {
    "bool": "bool",
    "int8": "int8", "uint8": "uint8",
    "int32": "int32", "int": "int32",
    "int64": "int64", "long": "int64",
    "float16": "float", "half": "float", "bfloat16": "float", "float32": "float", "float": "float",
    "float64": "float", "double": "float",
}
CONVERTING_METHODS = {  # x.half() etc.
    "bool": "bool", "half": "float", "float": "float", "bfloat16": "float", "double": "float",
    "int": "int32", "long": "int64", "char": "int8", "byte": "uint8",
}
# methods that keep the receiver's dtype
PRESERVING_METHODS = {
    "npu", "cuda", "cpu", "contiguous", "view", "reshape", "unsqueeze", "squeeze", "expand",
    "expand_as", "repeat", "clone", "detach", "transpose", "permute", "flatten", "masked_fill",
    "masked_fill_", "fill_", "__getitem__", "narrow", "pin_memory", "t", "T", "tril", "triu",
    "tril_", "triu_", "flip", "roll", "index_select", "requires_grad_", "share_memory_",
    "unsqueeze_", "squeeze_", "copy_", "zero_", "logical_not", "logical_not_",
}
FACTORIES_LIKE = {"ones_like", "zeros_like", "empty_like", "full_like"}
TORCH_HEADS = ("torch", "np", "numpy")


def dtype_of_expr(expr: Optional[ast.expr]) -> Optional[str]:
    """`torch.int32`, `torch.long`, `np.int64`, `"int32"` -> canonical name."""
    if expr is None:
        return None
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return DTYPE_NAMES.get(expr.value)
    name = dotted_name(expr)
    if name is None:
        return None
    head, _, last = name.rpartition(".")
    if head and head.split(".")[0] not in TORCH_HEADS:
        return None
    if not head and name not in ("bool", "int", "float"):
        return None
    if name == "bool":
        return "bool"
    if name == "int":
        return "int64" if not head else "int32"
    if name == "float":
        return "float"
    return DTYPE_NAMES.get(last)


def _keyword(call: ast.Call, name: str) -> Optional[ast.expr]:
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return None


class DtypeInference:
    def __init__(self, tracer: ValueTracer):
        self.tracer = tracer
        self._memo: Dict[Tuple[int, int, int], tuple] = {}  # infer() is pure: memoised

    def infer(self, expr: ast.expr, at: Optional[ast.AST] = None, depth: int = 0) -> List[Optional[str]]:
        """Possible final dtypes of `expr` (one per candidate value)."""
        key = (id(expr), id(at), depth)
        hit = self._memo.get(key)
        if hit is None:  # the entry holds `expr` and `at` so that their ids stay theirs
            hit = self._memo[key] = (expr, at, [self._leaf(cand, depth)
                                                for cand in self.tracer.candidates(expr, at, follow_calls=True)])
        return list(hit[2])

    def dtype_of_construction(self, site: ast.expr) -> Optional[str]:
        """The final dtype of one construction expression (a site from `construction_sites`)."""
        return self._leaf(site, 0)

    def construction_sites(self, expr: ast.expr, at: Optional[ast.AST] = None, depth: int = 0) -> List[ast.expr]:
        """The candidate construction expressions (where a fix would go). A device move or
        other dtype-keeping call on a name (`return mask.to(device)`) leads to the name's own
        construction."""
        sites: List[ast.expr] = []
        for cand in self.tracer.candidates(expr, at, follow_calls=True):
            inner = self._kept_dtype_receiver(cand)
            if inner is not None and depth < 4:
                sites.extend(self.construction_sites(inner, inner, depth + 1))
            else:
                sites.append(cand)
        return sites

    @staticmethod
    def _kept_dtype_receiver(node: ast.expr) -> Optional[ast.expr]:
        if isinstance(node, ast.Subscript) and isinstance(node.value, (ast.Name, ast.Attribute)) \
                and isinstance(node.slice, ast.Slice):
            return node.value  # `buf[:n]`: a view of the buffer
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            return None
        recv, method = node.func.value, node.func.attr
        while isinstance(recv, ast.Subscript) and isinstance(recv.slice, ast.Slice):
            recv = recv.value  # `buf[:n].to(dev)`: the buffer's construction decides
        if not isinstance(recv, (ast.Name, ast.Attribute)) or receiver_is_module(recv):
            return None
        if method in ("npu", "cuda", "cpu", "contiguous", "clone", "detach", "pin_memory"):
            return recv
        if method == "to" and _keyword(node, "dtype") is None and not any(
                dtype_of_expr(a) for a in node.args):
            return recv
        return None

    def _leaf(self, node: ast.expr, depth: int) -> Optional[str]:
        if depth > 8:
            return None
        if isinstance(node, ast.Constant):
            v = node.value
            if isinstance(v, bool):
                return "bool"
            if isinstance(v, float):
                return "float"
            return None
        if isinstance(node, ast.Compare):
            return "bool"
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.Not):
                return "bool"
            return self._follow(node.operand, depth)
        if isinstance(node, ast.BinOp):
            left, right = self._follow(node.left, depth), self._follow(node.right, depth)
            if "float" in (left, right) or self._is_float_literal(node.left) or self._is_float_literal(node.right):
                return "float"
            if isinstance(node.op, (ast.BitAnd, ast.BitOr, ast.BitXor)) and left == right:
                return left
            return None
        if isinstance(node, ast.Subscript):  # an element or slice keeps the dtype
            return self._follow(node.value, depth)
        if isinstance(node, Each):
            return self._follow(node.value, depth)
        if isinstance(node, ast.Call):
            return self._call(node, depth)
        return None

    def _follow(self, expr: ast.expr, depth: int) -> Optional[str]:
        kinds = set(self.infer(expr, expr, depth + 1))
        return kinds.pop() if len(kinds) == 1 else None

    @staticmethod
    def _is_float_literal(node: ast.expr) -> bool:
        if isinstance(node, ast.UnaryOp):
            node = node.operand
        if isinstance(node, ast.Constant) and isinstance(node.value, float):
            return True
        return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "float")

    def _call(self, call: ast.Call, depth: int) -> Optional[str]:
        func = call.func
        dtype_kw = _keyword(call, "dtype")
        if isinstance(func, ast.Attribute):
            method = func.attr
            receiver = func.value
            name = dotted_name(func) or ""
            is_module_func = name.split(".")[0] in TORCH_HEADS and name.count(".") >= 1 \
                and not isinstance(receiver, ast.Call)
            if is_module_func and receiver_is_module(receiver):
                return self._factory(method, call, dtype_kw, depth)
            if method in ("to", "type"):
                if dtype_kw is None and method == "to" and len(call.args) >= 2:
                    dtype_kw = call.args[1]  # .to(device, dtype)
                target = dtype_kw if dtype_kw is not None else (call.args[0] if call.args else None)
                dt = dtype_of_expr(target)
                if dt is not None:
                    return dt
                if dtype_kw is not None:
                    return None  # `.to(dtype=<expression>)`: converted to a dtype we cannot see
                if dtype_kw is None and call.args and not isinstance(call.args[0], ast.Constant):
                    # .to(other_tensor) or .to(device): a device move keeps the dtype
                    pass
                return self._follow(receiver, depth)
            if method in CONVERTING_METHODS:
                return CONVERTING_METHODS[method]
            if method in ("new_zeros", "new_ones", "new_empty", "new_full", "new_tensor"):
                return dtype_of_expr(dtype_kw) if dtype_kw is not None else self._follow(receiver, depth)
            if method in PRESERVING_METHODS:
                return self._follow(receiver, depth)
            return None
        return None

    def _factory(self, fname: str, call: ast.Call, dtype_kw, depth: int) -> Optional[str]:
        if dtype_kw is not None:
            return dtype_of_expr(dtype_kw)
        if fname in ("ones", "zeros", "empty", "rand", "randn"):
            return "float"
        if fname == "full":
            fill = call.args[1] if len(call.args) > 1 else _keyword(call, "fill_value")
            if fill is None:
                return None
            if self._is_float_literal(fill):
                return "float"
            lit = self.tracer.literal(fill)
            if isinstance(lit, bool):
                return "bool"
            if isinstance(lit, int):
                return "int64"
            return None
        if fname in FACTORIES_LIKE and call.args:
            if fname == "full_like" and len(call.args) > 1 and self._is_float_literal(call.args[1]):
                return self._follow(call.args[0], depth)
            return self._follow(call.args[0], depth)
        if fname == "arange":
            if any(self._is_float_literal(a) for a in call.args):
                return "float"
            return "int64"
        if fname in ("tensor", "as_tensor", "array", "asarray"):
            data = call.args[0] if call.args else None
            if data is None:
                return None
            return self._python_data_dtype(data)
        if fname == "from_numpy" and call.args:  # shares the array's memory: its dtype
            return self._follow(call.args[0], depth)
        if fname in ("triu", "tril", "flip", "roll", "narrow") and call.args:
            return self._follow(call.args[0], depth)
        if fname in ("cat", "stack") and call.args and isinstance(call.args[0], (ast.List, ast.Tuple)):
            kinds = {self._follow(e, depth) for e in call.args[0].elts}
            return kinds.pop() if len(kinds) == 1 else None
        if fname == "logical_not":
            return "bool"
        if fname == "where":
            return None
        return None

    def _python_data_dtype(self, data: ast.expr) -> Optional[str]:
        """torch.tensor(<python ints>) is int64; of floats, float. Heuristic
        TENSOR_FROM_PYTHON_INTS: a list comprehension or list of names is taken as ints
        only when every element literal is an int."""
        lit = self.tracer.literal(data)
        if isinstance(lit, tuple):
            flat = list(_flatten(lit))
            if flat and all(isinstance(x, bool) for x in flat):
                return "bool"
            if flat and all(isinstance(x, int) and not isinstance(x, bool) for x in flat):
                return "int64"
            if any(isinstance(x, float) for x in flat):
                return "float"
        return None


def receiver_is_module(receiver: ast.expr) -> bool:
    name = dotted_name(receiver)
    return name is not None and name.split(".")[0] in TORCH_HEADS and name in ("torch", "np", "numpy", "torch.Tensor")


def _flatten(t):
    for x in t:
        if isinstance(x, tuple):
            yield from _flatten(x)
        else:
            yield x
