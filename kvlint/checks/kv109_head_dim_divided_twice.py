"""KV109: the softmax scale divides a head-axis tensor's last dim by the head count
(docs: rules/codes/KV109.toml)."""
import ast
import re
from typing import Iterator, Optional, Tuple

from kvlint.analysis.module import dotted_name
from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.facts import load_facts
from kvlint.helpers.args import literals, param_values
from kvlint.helpers.roles import operators_with, role_values

# HEADS_NAME: a name whose last part is one of these holds the number of attention heads.
HEADS_NAMES = ("num_heads", "head_num", "n_heads", "nheads", "num_attention_heads", "num_heads",
               "num_q_heads", "num_query_heads", "num_local_heads", "n_head")
RESHAPES = ("view", "reshape", "unflatten")
# the input layouts whose query has its own head axis (rules/facts/fa.toml head_axis; BSH and
# SBH fold the heads into H)
HEAD_AXIS = load_facts().fa.head_axis
# what a finding needs in the bytes: `.shape[-1]` or `.size(-1)`, however spaced
LAST_DIM_PATTERN = re.compile(rb"shape\s*\[\s*-\s*1\s*\]|size\s*\(\s*-\s*1\s*\)")
TENSOR_ROLES = ("query", "key", "value")


def is_heads_name(expr: ast.expr) -> bool:
    name = dotted_name(expr)
    return name is not None and name.rsplit(".", 1)[-1] in HEADS_NAMES


def last_dim_of(expr: ast.expr) -> Optional[ast.expr]:
    """`x` for `x.shape[-1]` / `x.size(-1)` / `x.shape[2]` on a known rank, else None."""
    if isinstance(expr, ast.Subscript) and isinstance(expr.value, ast.Attribute) and expr.value.attr == "shape":
        index = expr.slice
        if isinstance(index, ast.UnaryOp) and isinstance(index.op, ast.USub) and \
                isinstance(index.operand, ast.Constant) and index.operand.value == 1:
            return expr.value.value
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == "size" \
            and len(expr.args) == 1 and isinstance(expr.args[0], ast.UnaryOp) \
            and isinstance(expr.args[0].operand, ast.Constant) and expr.args[0].operand.value == 1:
        return expr.func.value
    return None


def head_splits(expr: ast.expr) -> Iterator[Tuple[ast.BinOp, ast.expr]]:
    """`x.shape[-1] // num_heads` (or `/`) anywhere in `expr`: (the division, x)."""
    for n in ast.walk(expr):
        if isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Div, ast.FloorDiv)) and is_heads_name(n.right):
            x = last_dim_of(n.left)
            if x is not None:
                yield n, x


@register
class HeadDimDividedTwice(Rule):
    code = "KV109"
    operators = operators_with("scale", "num_heads")

    def required_words(self, settings):
        return ((LAST_DIM_PATTERN,),)

    def check_call(self, oc, ctx: FileContext):
        if oc.variant == "workspace":
            return
        for value in role_values(oc, ctx, "scale"):
            for cand in ctx.values.candidates(value, oc.call):
                for division, x in head_splits(cand):
                    why = self._head_axis(x, division, oc, ctx)
                    if why is None:
                        continue
                    shown = ctx.text(division)
                    yield ctx.finding(
                        self.code, division,
                        f"`{shown}` divides by the head count again, but `{ctx.text(x)}` {why}, so "
                        f"its last dim is already the head dim: the scale comes out sqrt(heads) too "
                        f"large and the softmax too sharp, silently; use `{ctx.text(x)}.shape[-1]`",
                        anchor=oc.call)
                    return

    @staticmethod
    def _head_axis(x: ast.expr, at: ast.AST, oc, ctx: FileContext) -> Optional[str]:
        """Why `x` has a separate head axis: it is this call's query/key/value and the layout
        has one (BNSD, BSND, TND, ...), or it is built in the function by a view/reshape with
        a head-count dim before the last."""
        text = ctx.text(x)
        layouts = [v for v in (literals(oc, ctx, "input_layout") or []) if isinstance(v, str)]
        for role in TENSOR_ROLES:
            for arg in param_values(oc, ctx, role):
                if ctx.text(arg) == text and layouts and all(lay.split("_")[0] in HEAD_AXIS for lay in layouts):
                    return f"is the {role} of a {layouts[0]} call"
        for cand in ctx.values.candidates(x, at):
            if isinstance(cand, ast.Call) and isinstance(cand.func, ast.Attribute) and cand.func.attr in RESHAPES:
                dims = cand.args[0].elts if len(cand.args) == 1 and isinstance(cand.args[0], (ast.Tuple, ast.List)) \
                    else cand.args
                if len(dims) >= 3 and any(is_heads_name(d) for d in dims[:-1]):
                    return f"is `.{cand.func.attr}(...)` with a head axis (line {cand.lineno})"
        return None
