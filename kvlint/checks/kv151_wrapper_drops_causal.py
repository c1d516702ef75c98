"""KV151: a wrapper's `causal` / `is_causal` parameter never changes the attention call
(docs: rules/codes/KV151.toml)."""
import ast

from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.facts import load_facts

MASK_READERS = load_facts().family("mask_readers")

CAUSAL_PARAMS = ("causal", "is_causal")
# Reads that cannot change the call: logging and checks.
INERT_CALLS = ("print", "debug", "info", "warning", "warn", "error", "log", "exception")


@register
class WrapperDropsCausal(Rule):
    code = "KV151"
    operators = MASK_READERS

    def required_words(self, settings):
        return (CAUSAL_PARAMS,)

    def check_call(self, oc, ctx: FileContext):
        func = ctx.index.enclosing_function(oc.call)
        if func is None:
            return
        calls = [c for c in ctx.op_calls if c.name in MASK_READERS and ctx.index.enclosing_function(c.call) is func]
        if not calls or calls[0] is not oc or any(not ctx.args(c.call).complete for c in calls):
            return
        a = func.args
        params = {p.arg: p for p in a.posonlyargs + a.args + a.kwonlyargs}
        for name in CAUSAL_PARAMS:
            param = params.get(name)
            if param is None or self._read(name, func, ctx):
                continue
            lines = ", ".join(str(c.call.lineno) for c in calls)
            yield ctx.finding(
                self.code, param,
                f"`{func.name}` takes `{name}` but never reads it: the {oc.name} call(s) it makes "
                f"(line {lines}) run the same whatever the caller asks, so a caller asking for causal "
                f"attention silently gets the call's fixed masking (bidirectional when it has no "
                f"causal mask); choose sparse_mode / atten_mask / next_tokens from `{name}`")

    @staticmethod
    def _read(name: str, func, ctx: FileContext) -> bool:
        """`name` is read somewhere that may change what runs (anything but an assert, a
        logging call or `del`; a nested function counts: it may build the call's mask)."""
        for n in ast.walk(func):
            if not (isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)):
                continue
            if any(isinstance(x, ast.Assert) or (isinstance(x, ast.Call) and _callee(x) in INERT_CALLS)
                   for x in ctx.index.ancestors(n)):
                continue
            return True
        return False


def _callee(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
