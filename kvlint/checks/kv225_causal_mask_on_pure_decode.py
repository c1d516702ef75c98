"""KV225: a causal mask with sparse_mode 3 where every query has one token
(docs: rules/codes/KV225.toml)."""
import ast
from typing import Optional

from kvlint.analysis.module import FunctionNode, dotted_name
from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.facts import load_facts
from kvlint.helpers.roles import role_values
from kvlint.helpers.sparse import sparse_view

FACTS = load_facts()
RIGHT_DOWN = FACTS.fa.sparse.right_down_causal
# calls that keep "one token per request" in a lengths list: tensor building, cumulative sums
# (TND lengths are cumulative: cumsum of ones), device and dtype moves
LENGTH_KEEPING = {"tensor", "as_tensor", "cumsum", "to", "npu", "cuda", "cpu", "int", "long", "tolist",
                  "contiguous", "list"}


def ones_per_request(expr: ast.expr, ctx: FileContext, at: ast.AST, depth: int = 0) -> Optional[ast.expr]:
    """PURE_DECODE_LENGTHS: the query lengths are visibly one token per request on every path:
    `[1] * n`, `[1, 1, 1]`, and those through `torch.tensor(...)`, `.cumsum(...)`, `.to(...)`
    and local names (every candidate must show it). Returns the expression that shows it."""
    if depth > 6:
        return None
    shown = None
    cands = ctx.values.candidates(expr, at)
    for cand in cands:
        found = _ones(cand, ctx, depth)
        if found is None:
            return None
        shown = shown or found
    return shown


def _ones(cand: ast.expr, ctx: FileContext, depth: int) -> Optional[ast.expr]:
    if isinstance(cand, ast.BinOp) and isinstance(cand.op, ast.Mult):
        for side in (cand.left, cand.right):
            if isinstance(side, ast.List) and len(side.elts) == 1 and ctx.values.literal(side.elts[0]) == 1:
                return cand
    if isinstance(cand, ast.List) and cand.elts and all(ctx.values.literal(e) == 1 for e in cand.elts):
        return cand
    if isinstance(cand, ast.Call):
        f = cand.func
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
        if name in LENGTH_KEEPING:
            inner = cand.args[0] if cand.args and name in ("tensor", "as_tensor", "list") else \
                f.value if isinstance(f, ast.Attribute) else None
            if inner is not None and ones_per_request(inner, ctx, cand, depth + 1) is not None:
                return cand
    return None


@register
class CausalMaskOnPureDecode(Rule):
    code = "KV225"
    operators = FACTS.family("fa")

    def check_call(self, oc, ctx: FileContext):
        if oc.variant == "workspace":
            return
        view = sparse_view(oc, ctx)
        if view.mode_node is None or view.modes != {RIGHT_DOWN} or view.no_mask:
            return
        evidence = self._one_token(oc, ctx)
        if evidence is None:
            return
        yield ctx.finding(
            self.code, view.mode_node,
            f"sparse_mode={RIGHT_DOWN} with a causal mask where every query has one token "
            f"({evidence}): a one-token query sees every key either way, so the mask only costs "
            f"time (about 10% end to end); on this path pass sparse_mode=0 and no atten_mask",
            anchor=oc.call)

    def _one_token(self, oc, ctx: FileContext) -> Optional[str]:
        for value in role_values(oc, ctx, "q_lens"):
            found = ones_per_request(value, ctx, oc.call)
            if found is not None:
                return f"query lengths `{ctx.text(found)}`, line {found.lineno}"
        names = ctx.settings.names.query_length_names
        child = oc.call
        for anc in ctx.index.ancestors(oc.call):
            if isinstance(anc, (ast.If, ast.IfExp)) and child in (anc.body if isinstance(anc.body, list) else [anc.body]):
                test = anc.test
                if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq):
                    sides = [test.left, test.comparators[0]]
                    if any(ctx.values.literal(s) == 1 for s in sides) and \
                            any((dotted_name(s) or "").rsplit(".", 1)[-1].lower() in names for s in sides):
                        return f"under `if {ctx.text(test)}:`, line {anc.lineno}"
            if isinstance(anc, FunctionNode):
                break
            child = anc
        return None
