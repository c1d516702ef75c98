"""KV232: a layer or backend class stores a sliding window that none of its attention calls
uses (docs: rules/codes/KV232.toml)."""
import ast

from kvlint.checks import register
from kvlint.checks.base import FileContext, NoCase, Rule
from kvlint.helpers.roles import operators_with, role_values, spelling
from kvlint.helpers.sparse import sparse_view
from kvlint.helpers.windows import WINDOW_WORD, is_window_name

WINDOW_OPERATORS = operators_with("pre_tokens")


@register
class WindowNeverUsed(Rule):
    code = "KV232"
    operators = WINDOW_OPERATORS

    def required_words(self, settings):
        return ((NoCase(WINDOW_WORD),),)  # WINDOW_NAME lowercases

    def check_module(self, ctx: FileContext):
        by_class = {}
        for oc in ctx.op_calls:
            if oc.name in WINDOW_OPERATORS and oc.variant != "workspace":
                cls = ctx.index.enclosing_class(oc.call)
                if cls is not None:
                    by_class.setdefault(id(cls), (cls, []))[1].append(oc)
        loaded = None  # read from the whole module, only when a class needs it
        for cls, calls in by_class.values():
            if any(self._may_window(oc, ctx) for oc in calls):
                continue
            for attr, items in ctx.values.self_assignments(cls).items():
                if not is_window_name(ast.Name(id=attr)):
                    continue
                stmt, value = items[0]
                if all(isinstance(v, ast.Constant) and v.value is None for _, v in items):
                    continue
                if loaded is None:  # the module walk, only for a class storing a window
                    loaded = self._loaded_attributes(ctx)
                if attr in loaded:
                    continue
                target = next(t for t in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target])
                              if isinstance(t, ast.Attribute) and t.attr == attr)
                lines = ", ".join(str(oc.call.lineno) for oc in calls)
                yield ctx.finding(
                    self.code, target,
                    f"`{cls.name}` stores `self.{attr}` but never reads it, and its attention call(s) "
                    f"(line {lines}) pass no window (no band mode, no window in pre_tokens): a "
                    f"sliding-window layer silently attends to the whole context; pass "
                    f"sparse_mode=4 with pre_tokens=window - 1 and next_tokens=0 when it is set")

    @staticmethod
    def _may_window(oc, ctx: FileContext) -> bool:
        """The call may apply a window: mode 4 (or not a literal), a `pre_tokens` built from a
        window-named value, or an unresolved **kwargs that may carry either. (A bounded
        `pre_tokens` such as `actual_seq_qlen[-1]` is a causal limit, not the window: the
        window attribute is read nowhere.)"""
        if not ctx.args(oc.call).complete:
            return True
        view = sparse_view(oc, ctx) if spelling(oc.name, "sparse_mode") == "sparse_mode" else None
        if view is not None and (not view.modes_known or 4 in view.modes):
            return True
        for value in role_values(oc, ctx, "pre_tokens"):
            for cand in [value, *ctx.values.candidates(value, oc.call)]:
                if any(is_window_name(n) for n in ast.walk(cand) if isinstance(n, (ast.Name, ast.Attribute))):
                    return True
        return False

    @staticmethod
    def _loaded_attributes(ctx: FileContext):
        """Attribute names read anywhere in the module (`self.w`, `layer.w`, `getattr(x, "w")`)."""
        out = set()
        for node in ctx.index.walk(ctx.index.tree):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                out.add(node.attr)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                out.add(node.value)
        return out
