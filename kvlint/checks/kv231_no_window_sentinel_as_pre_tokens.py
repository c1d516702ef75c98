"""KV231: a window whose "no window" value (-1 or None) goes straight into `pre_tokens`
(docs: rules/codes/KV231.toml)."""
import ast
from typing import Optional

from kvlint.analysis.module import FunctionNode, dotted_name, parameter_defaults, walk_in_order
from kvlint.checks import register
from kvlint.checks.base import FileContext, NoCase, Rule
from kvlint.helpers.roles import operators_with, role_node, role_values, spelling
from kvlint.helpers.windows import (
    WINDOW_WORD,
    guard_mentions,
    is_window_name,
    mentioned,
    self_attribute_values,
    window_leaves,
)

NONE, MINUS_ONE = "None", "-1"


def _sentinel_compare(node: ast.Compare, want: str) -> Optional[str]:
    """NO_WINDOW_SENTINEL: `want is None` / `is not None` -> "None"; `want == -1`, `!= -1`,
    `> -1`, `>= 0`, `< 0` -> "-1"."""
    sides = [node.left, *node.comparators]
    if len(sides) != 2 or dotted_name(sides[0]) != want:
        return None
    op, other = node.ops[0], sides[1]
    if isinstance(other, ast.Constant) and other.value is None and isinstance(op, (ast.Is, ast.IsNot)):
        return NONE
    value = other.value if isinstance(other, ast.Constant) else None
    if isinstance(other, ast.UnaryOp) and isinstance(other.op, ast.USub) and isinstance(other.operand, ast.Constant):
        value = -other.operand.value
    if value == -1 and isinstance(op, (ast.Eq, ast.NotEq, ast.Gt, ast.LtE)):
        return MINUS_ONE
    if value == 0 and isinstance(op, (ast.Lt, ast.GtE)):
        return MINUS_ONE
    return None


def _literal_sentinel(value: ast.expr) -> Optional[str]:
    if isinstance(value, ast.Constant) and value.value is None:
        return NONE
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub) and \
            isinstance(value.operand, ast.Constant) and value.operand.value == 1:
        return MINUS_ONE
    return None


@register
class NoWindowSentinelAsPreTokens(Rule):
    code = "KV231"
    operators = operators_with("pre_tokens")

    def required_words(self, settings):
        return ((NoCase(WINDOW_WORD),),)  # WINDOW_NAME lowercases

    def check_call(self, oc, ctx: FileContext):
        if oc.variant == "workspace":
            return
        node = role_node(oc, ctx, "pre_tokens")
        if node is None:
            return
        keyword = spelling(oc.name, "pre_tokens")
        for value in role_values(oc, ctx, "pre_tokens"):
            for leaf in window_leaves(value, oc.call, ctx):
                if leaf.subtracted or not is_window_name(leaf.expr) or \
                        not isinstance(leaf.expr, (ast.Name, ast.Attribute)):
                    continue
                text = dotted_name(leaf.expr)
                if text is None or any(text in guard_mentions(t, ctx) for t in leaf.guard_tests):
                    continue
                sentinel, where, condition = self._sentinel(leaf.expr, text, oc.call, ctx)
                if sentinel is None or (sentinel == NONE and leaf.truthy_guarded):
                    continue
                if self._guarded(text, oc, ctx) or (condition and self._guarded_by(condition, oc, ctx)):
                    continue
                if sentinel == NONE:
                    effect = "a layer without a window then passes None and the call raises TypeError there"
                else:
                    effect = (f"a layer without a window then runs with {keyword}=-1, a band that "
                              f"ends before the query (with next_tokens=0: empty, so every row is fully "
                              f"masked, or rejected for TND) instead of full attention")
                yield ctx.finding(
                    self.code, node,
                    f"`{text}` goes into `{keyword}` unchecked, but {sentinel} means \"no window\" "
                    f"here ({where}): {effect}; map it first (`{text} if {text} "
                    f"{'is not None' if sentinel == NONE else '!= -1'} else 2147483647`)",
                    anchor=oc.call)
                return

    @staticmethod
    def _sentinel(expr: ast.expr, text: str, call: ast.Call, ctx: FileContext):
        """(sentinel, where it shows, the condition under which the class assigns the
        sentinel, if any) or (None, "", None)."""
        for value in self_attribute_values(expr, ctx):
            for leaf in window_leaves(value, value, ctx):
                s = _literal_sentinel(leaf.expr)
                if s:
                    condition = leaf.guard_tests[-1] if leaf.guard_tests else None
                    return s, f"the class assigns it {s} on line {value.lineno}", condition
        func = ctx.index.enclosing_function(call)
        if isinstance(expr, ast.Name) and isinstance(func, FunctionNode):
            defaults = parameter_defaults(func)
            if expr.id in defaults and _literal_sentinel(defaults[expr.id]):
                s = _literal_sentinel(defaults[expr.id])
                return s, f"its default is {s}", None
        for node in walk_in_order(ctx.index.tree):
            if isinstance(node, ast.Compare):
                s = _sentinel_compare(node, text)
                if s:
                    return s, f"line {node.lineno} tests it for {s}", None
        return None, "", None

    @staticmethod
    def _guarded(text: str, oc, ctx: FileContext) -> bool:
        """The call is under a test of the window (an enclosing `if`, or an earlier `if` in the
        function, e.g. `if window is None: return ...`), or its sparse mode or mask switch on
        it (`sparse_mode=4 if w != -1 else 0`: with mode 0 and no mask pre_tokens is ignored)."""
        func = ctx.index.enclosing_function(oc.call)
        scope = func if func is not None else ctx.index.tree
        for n in walk_in_order(scope):
            if isinstance(n, (ast.If, ast.While, ast.IfExp, ast.Assert)) and n.lineno <= oc.call.lineno \
                    and text in guard_mentions(n.test, ctx):
                return True
        for role in ("sparse_mode", "mask"):
            for v in role_values(oc, ctx, role):
                for c in [v, *ctx.values.candidates(v, oc.call)]:
                    if text in mentioned(c):
                        return True
        return False

    @staticmethod
    def _guarded_by(condition: ast.expr, oc, ctx: FileContext) -> bool:
        """The class assigns the sentinel when `condition` is false (`w if self.is_sliding else
        None`), and the call's method runs only under a test of that condition: in the method
        itself, or at every `self.method(...)` call of the class (one hop)."""
        names = set(mentioned(condition))
        if not names:
            return False
        func = ctx.index.enclosing_function(oc.call)
        if func is None:
            return False
        if any(isinstance(n, (ast.If, ast.IfExp)) and names & set(mentioned(n.test)) for n in ast.walk(func)):
            return True
        cls = ctx.index.enclosing_class(func)
        if cls is None:
            return False
        calls = [n for n in ast.walk(cls) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                 and n.func.attr == func.name and isinstance(n.func.value, ast.Name) and n.func.value.id == "self"]
        if not calls:
            return False
        for call in calls:
            tests = [a.test for a in ctx.index.ancestors(call) if isinstance(a, (ast.If, ast.IfExp))]
            if not any(names & set(mentioned(t)) for t in tests):
                return False
        return True
