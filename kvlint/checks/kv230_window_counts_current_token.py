"""KV230: a Hugging Face `sliding_window` passed as `pre_tokens` without `- 1`
(docs: rules/codes/KV230.toml)."""
import ast

from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.helpers.roles import operators_with, role_node, role_values, spelling
from kvlint.helpers.windows import HF_WINDOW_NAME, last_name, self_attribute_values, window_leaves


def _hf_count(leaf, ctx: FileContext, depth: int = 0) -> bool:
    """HF_SLIDING_WINDOW: the leaf is named `sliding_window`, and when it is `self.x` the
    class's own assignments do not convert it (`self.sliding_window = sliding_window - 1`,
    or from a helper such as `get_attention_sliding_window_size(config)`)."""
    if leaf.subtracted or last_name(leaf.expr) != HF_WINDOW_NAME:
        return False
    assigned = self_attribute_values(leaf.expr, ctx)
    if not assigned or depth > 2:
        return True
    for value in assigned:
        for inner in window_leaves(value, value, ctx):
            if inner.expr is leaf.expr:
                continue
            if _hf_count(inner, ctx, depth + 1):
                return True
    return False


@register
class WindowCountsCurrentToken(Rule):
    code = "KV230"
    operators = operators_with("pre_tokens")

    def required_words(self, settings):
        return ((HF_WINDOW_NAME,),)

    def check_call(self, oc, ctx: FileContext):
        if oc.variant == "workspace":
            return
        keyword = spelling(oc.name, "pre_tokens")
        node = role_node(oc, ctx, "pre_tokens")
        if node is None:
            return
        for value in role_values(oc, ctx, "pre_tokens"):
            for leaf in window_leaves(value, oc.call, ctx):
                if _hf_count(leaf, ctx):
                    shown = ctx.text(leaf.expr)
                    fix = f"pass `{shown} - 1`" if isinstance(leaf.expr, (ast.Name, ast.Attribute)) \
                        else "subtract 1 where the window is read from the config"
                    yield ctx.finding(
                        self.code, node,
                        f"`{shown}` goes into `{keyword}` as is: a Hugging Face `sliding_window` counts "
                        f"the current token, `{keyword}` counts only the earlier ones, so every query "
                        f"attends to one key too many, silently; {fix}",
                        anchor=oc.call)
                    return
