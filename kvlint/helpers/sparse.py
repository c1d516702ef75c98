"""Shared by the sparse_mode / atten_mask rules: what a call's sparse_mode and mask may be,
on the whole and branch by branch.

Named heuristics (documented in rules/codes/KV203.toml and KV233.toml):
- MODE_FOLLOWS_WINDOW: a branch without the band is the no-window side of a condition that
  reads the window or a window flag (`mode_follows_window`).
- PARAMETER_DEFAULT: a window that is a parameter the function never rebinds is its literal
  default (`parameter_default`).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Set, Tuple

from kvlint.analysis.dtypes import receiver_is_module
from kvlint.analysis.module import parameter_defaults
from kvlint.analysis.resolve import OperatorCall
from kvlint.analysis.values import UNKNOWN, KeywordArg
from kvlint.checks.base import FileContext
from kvlint.facts import load_facts
from kvlint.helpers.roles import positional_value, role_values

FACTS = load_facts()
# A pre/next_tokens value this large means "no limit" (INT_MAX default, or 65535 as used by
# diffusion models): ignoring it changes nothing.
UNBOUNDED_TOKENS = FACTS.fa.sparse.unbounded_tokens


@dataclass
class SparseView:
    modes: Set[object]  # literal candidates; UNKNOWN when any candidate is not a literal
    mode_node: Optional[ast.AST]  # the keyword node, if passed
    mask_passed: bool
    mask_all_none: bool  # no mask, or every candidate is literal None
    complete: bool  # all keywords known

    @property
    def modes_known(self) -> bool:
        return UNKNOWN not in self.modes

    @property
    def no_mask(self) -> bool:
        return not self.mask_passed or self.mask_all_none


def _role_args(oc: OperatorCall, ctx: FileContext, role: str) -> List[KeywordArg]:
    """What the call passes for `role`: its keyword(s) (incl. `**dict` keys), else the
    positional argument at the schema's position for it (npu_fusion_attention's mask is
    argument 7), as a KeywordArg whose node is the argument itself."""
    keyword = FACTS.keyword(oc.name, role)
    if keyword is None:
        return []
    kws = ctx.args(oc.call).keywords.get(keyword, [])
    if kws:
        return kws
    value = positional_value(oc, ctx, keyword)
    return [KeywordArg(keyword, value, value)] if value is not None else []


def sparse_view(oc: OperatorCall, ctx: FileContext) -> SparseView:
    args = ctx.args(oc.call)
    modes: Set[object] = set()
    mode_node = None
    kws = _role_args(oc, ctx, "sparse_mode")
    if kws:
        mode_node = kws[0].node
        for kw in kws:
            modes.update(ctx.values.literal_values(kw.value, oc.call))
        if any(kw.conditional for kw in kws):
            modes.add(FACTS.fa.sparse.default_mask)
    else:
        modes.add(FACTS.fa.sparse.default_mask)
    mask_kws = _role_args(oc, ctx, "mask")
    mask_values: List[object] = []
    for kw in mask_kws:
        mask_values.extend(ctx.values.literal_values(kw.value, oc.call))
    mask_all_none = bool(mask_kws) and all(v is None for v in mask_values) and \
        not any(kw.conditional for kw in mask_kws)
    return SparseView(modes, mode_node, bool(mask_kws), mask_all_none, args.complete)


def token_window_values(oc: OperatorCall, ctx: FileContext, role: str):
    """(where it is written, literal candidates) of the `pre_tokens` / `next_tokens` role
    (`pre_tockens` / `next_tockens` for npu_fusion_attention), or None if not passed. A
    candidate that is a parameter with a literal default is that default (heuristic
    PARAMETER_DEFAULT)."""
    kws = _role_args(oc, ctx, role)
    if not kws:
        return None
    values = []
    for kw in kws:
        for leaf in ctx.values.candidates(kw.value, oc.call):
            default = parameter_default(leaf, ctx)
            values.append(ctx.values.literal(leaf) if default is None else default)
    return kws[0].node, values


def parameter_default(leaf: ast.expr, ctx: FileContext) -> Optional[object]:
    """PARAMETER_DEFAULT: the literal default of the parameter `leaf` names, when the function
    never stores to that name (no `=`, `+=`, loop target...): `def __init__(self,
    next_tokens=65535): self.next_tokens = next_tokens` means no limit when no caller says
    otherwise. A caller that passes another value is judged at its own call (an adapter's call
    sites are checked with the values they pass); a constructor's callers are not followed.
    None: not such a parameter."""
    if not isinstance(leaf, ast.Name):
        return None
    tracer = ctx.values.tracer_for(leaf)
    func = tracer.index.enclosing_function(leaf)
    if func is None or not tracer.is_parameter(leaf.id, func) or leaf.id in tracer.index.stores(func):
        return None
    default = parameter_defaults(func).get(leaf.id)
    if default is None:
        return None
    value = tracer.literal(default)
    return None if value is UNKNOWN else value


def bounded(values) -> bool:
    """Some candidate is a real window (not literal and huge)."""
    return any(not (isinstance(v, int) and v >= UNBOUNDED_TOKENS) for v in values)


@dataclass
class BranchView:
    """One feasible combination of sparse_mode, mask and window values (kvlint/analysis/
    branches.py): literals (UNKNOWN where not one; absent roles are their defaults)."""
    mode: object
    mask_none: bool  # the mask is absent or literal None on this combination
    pre: object
    next: object
    mode_value: Optional[ast.expr]
    phase: Optional[str]  # what the combination's branch conditions say of the phase
    pre_value: Optional[ast.expr] = None  # the pre_tokens leaf of this combination
    mask_value: Optional[ast.expr] = None  # the mask leaf of this combination
    single_query: bool = False  # its branch conditions say every query is one token
    # the arms it needs: condition key -> (one condition node with that text, "body"/"else")
    arms: Dict[str, Tuple[ast.expr, str]] = field(default_factory=dict)


ABSENT = object()


def branch_views(oc: OperatorCall, ctx: FileContext) -> Optional[List[BranchView]]:
    """The feasible combinations of sparse_mode / mask / pre_tokens / next_tokens at the call
    (None when a role comes from more than one keyword, e.g. a conditional dict entry, or
    there are too many). Computed once per call (KV201, KV203 and KV233 all ask)."""
    memo = ctx.__dict__.setdefault("_branch_views", {})
    hit = memo.get(id(oc.call))
    if hit is None or hit[0] is not oc.call:
        hit = memo[id(oc.call)] = (oc.call, _branch_views(oc, ctx))
    return list(hit[1]) if hit[1] is not None else None


def _branch_views(oc: OperatorCall, ctx: FileContext) -> Optional[List[BranchView]]:
    from kvlint.analysis.branches import arm_tests, combinations

    exprs = {}
    for role in ("sparse_mode", "mask", "pre_tokens", "next_tokens"):
        kws = _role_args(oc, ctx, role)
        if len(kws) > 1 or any(k.conditional for k in kws):
            return None
        exprs[role] = kws[0].value if kws else None
    combos = combinations(ctx.values, oc.call, exprs)
    if combos is None:
        return None
    tests = arm_tests(ctx.values, oc.call)
    views = []
    for combo, arms in combos:
        phases = {ctx.context.arm_phase(tests[k], side == "body") for k, side in arms if k in tests}
        phases.discard(None)
        single = any(ctx.context.single_query_arm(tests[k], side == "body") for k, side in arms if k in tests)

        def lit(role, default, combo=combo):
            v = combo[role]
            if v is None:
                return default
            values = set(map(repr, ctx.values.literal_values(v, v)))  # a module constant too
            return ctx.values.literal_values(v, v)[0] if len(values) == 1 else UNKNOWN

        mask = combo["mask"]
        views.append(BranchView(
            lit("sparse_mode", FACTS.fa.sparse.default_mask),
            mask is None or (ctx.values.literal(mask) is None and isinstance(mask, ast.Constant)),
            lit("pre_tokens", ABSENT), lit("next_tokens", ABSENT), combo["sparse_mode"],
            phases.pop() if len(phases) == 1 else None, combo["pre_tokens"], mask, single,
            {k: (tests[k], side) for k, side in arms if k in tests}))
    return views


def ignores_window(b: BranchView) -> bool:
    """On this combination sparse_mode is 0 (given or defaulted) with no mask, and
    `pre_tokens` is a bounded value: the operator forces pre/next_tokens to INT_MAX there
    (sparse_mode 0 = defaultMask), so that window is ignored."""
    return b.mode == FACTS.fa.sparse.default_mask and b.mask_none and b.pre is not ABSENT \
        and b.pre_value is not None and bounded([b.pre])


def applies_window(b: BranchView) -> bool:
    """On this combination `pre_tokens` bounds the attention: the band mode (4), or
    sparse_mode 0 with a mask (defaultMask with a mask reads pre/next_tokens). Modes 1-3
    ignore them."""
    return b.mode in FACTS.fa.sparse.band or (b.mode == FACTS.fa.sparse.default_mask and not b.mask_none)


def _outermost(names) -> Set[str]:
    """The dotted names that are not the base of another one (`self.window`, not `self`)."""
    names = set(names)
    return {n for n in names if not any(m.startswith(n + ".") for m in names)}


def mode_follows_window(oc: OperatorCall, ctx: FileContext, dropped: BranchView,
                        applied: BranchView) -> bool:
    """MODE_FOLLOWS_WINDOW: the branch dropping the window and the branch applying it are the
    two sides of a condition that reads the window itself or a window flag (`sparse_mode=4
    if layer.sliding_window_size != -1 else 0`, `if self.use_sliding_window:`, also through a
    local flag or a predicate method; WINDOW_NAME for the flag): sparse_mode 0 is taken
    where the layer has no window, so nothing is dropped."""
    from kvlint.helpers.windows import WINDOW_WORD, guard_mentions, mentioned, window_leaves

    if dropped.pre_value is None:
        return False
    names = set(mentioned(dropped.pre_value))
    for leaf in window_leaves(dropped.pre_value, oc.call, ctx):
        names.update(mentioned(leaf.expr))
    names = _outermost(names)

    def about_window(test: ast.expr) -> bool:
        read = _outermost(guard_mentions(test, ctx))
        return bool(names & read) or any(WINDOW_WORD in n.rsplit(".", 1)[-1].lower() for n in read)

    return any(key in applied.arms and applied.arms[key][1] != side and about_window(test)
               for key, (test, side) in dropped.arms.items())


def bidirectional_branches(oc: OperatorCall, ctx: FileContext, view: SparseView,
                           views: Optional[List[BranchView]]) -> List[BranchView]:
    """The branches KV203 reports (the first of them): off the decode path, sparse_mode 0
    without a mask drops a band's window, the very `pre_tokens` leaf a sparse_mode 4 branch
    passes (`if c: mask, mode = None, 0 else: mask, mode = m, 4`). Only for calls whose
    sparse_mode is 0 on some branches and another literal on others. (`next_tokens=0` there
    is only the band's other edge: a non-causal branch ignoring it loses nothing it asked
    for.)"""
    if not (view.modes_known and FACTS.fa.sparse.default_mask in view.modes
            and view.modes != {FACTS.fa.sparse.default_mask}):
        return []
    if not view.complete and not view.mask_passed:
        return []
    from kvlint.analysis.context import DECODE

    if views is None or ctx.context.phase(oc.call) == DECODE:
        return []
    bands = [b for b in views if b.mode in FACTS.fa.sparse.band and b.pre_value is not None]
    return [b for b in views if b.phase != DECODE and ignores_window(b) and
            any(a.pre_value is b.pre_value and not mode_follows_window(oc, ctx, b, a) for a in bands)]


# Layouts whose query lengths are cumulative over the packed tokens (TND and its NTD forms).
PACKED_LAYOUTS = ("TND", "NTD")


def one_query_per_sequence(oc: OperatorCall, ctx: FileContext) -> bool:
    """Whether the call's query lengths give every sequence one query token, so that no
    query has a later token to be masked from: in a packed (TND) layout, cumulative lengths
    `list(range(1, n + 1))` / `range(1, n + 1)` / `torch.arange(1, n + 1)` (each query its
    own sequence, its key/value lengths saying how far back it sees); in another layout, per
    sequence lengths `[1] * n`. The values are followed through names."""
    layouts = [ctx.values.literal(v) for v in role_values(oc, ctx, "layout")]
    if len(layouts) != 1 or not isinstance(layouts[0], str):
        return False
    packed = layouts[0].startswith(PACKED_LAYOUTS)
    values = role_values(oc, ctx, "q_lens")
    if len(values) != 1:
        return False
    sites = ctx.values.candidates(values[0], oc.call, follow_calls=False)
    test = _ones_cumulative if packed else _all_ones
    return bool(sites) and all(test(_strip_conversions(s)) for s in sites)


def _strip_conversions(node: ast.expr) -> ast.expr:
    """`x.tolist()`, `x.to(...)`, `x.int()`, `x.npu()`, `list(x)`, `tuple(x)`: x."""
    while True:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
                "tolist", "to", "int", "long", "npu", "cpu", "cuda", "contiguous") and not receiver_is_module(node.func.value):
            node = node.func.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("list", "tuple") \
                and len(node.args) == 1 and not node.keywords:
            node = node.args[0]
        else:
            return node


def _ones_cumulative(node: ast.expr) -> bool:
    """`range(1, n + 1)` or `torch.arange(1, n + 1)` (step 1): cumulative lengths 1, 2, ..., n."""
    if not isinstance(node, ast.Call) or any(k.arg == "step" for k in node.keywords):
        return False
    f = node.func
    is_range = isinstance(f, ast.Name) and f.id == "range"
    is_arange = isinstance(f, ast.Attribute) and f.attr == "arange" and receiver_is_module(f.value)
    if not (is_range or is_arange) or len(node.args) != 2:
        return False
    start = node.args[0]
    return isinstance(start, ast.Constant) and start.value == 1 and not isinstance(start.value, bool)


def _all_ones(node: ast.expr) -> bool:
    """`[1] * n` / `n * [1]`, or a list or tuple of ones."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        for side in (node.left, node.right):
            if isinstance(side, (ast.List, ast.Tuple)) and len(side.elts) == 1 and _is_one(side.elts[0]):
                return True
        return False
    return isinstance(node, (ast.List, ast.Tuple)) and bool(node.elts) and all(_is_one(e) for e in node.elts)


def _is_one(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value == 1 and not isinstance(node.value, bool)
