"""KV151: a wrapper's `causal` / `is_causal` parameter never changes the attention call
(docs: rules/codes/KV151.toml)."""
import ast

from kvlint.analysis.module import named_parameters, parameter_defaults
from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.facts import load_facts
from kvlint.helpers.roles import role_values
from kvlint.helpers.sparse import sparse_view

FACTS = load_facts()
MASK_READERS = FACTS.family("mask_readers")

CAUSAL_PARAMS = ("causal", "is_causal")
CAUSAL_MODES = frozenset(FACTS.fa.sparse.causal_or_band)
# CALLERS_MASK: a required mask parameter of the wrapper (as KV150 names them, no default)
# that reaches every call's atten_mask, as in Hugging Face's attention-interface functions
# `(module, query, key, value, attention_mask, ...)`: the caller always supplies the mask and
# it carries the causal pattern; `is_causal` only repeats it. An SDPA-style drop-in
# (`attn_mask=None, is_causal=False`) is still reported: there `is_causal=True` comes with no mask.
MASK_PARAMS = ("attention_mask", "attn_mask", "atten_mask")
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
        params = {p.arg: p for p in named_parameters(func)}
        for name in CAUSAL_PARAMS:
            param = params.get(name)
            if param is None or self._read(name, func, ctx) or self._callers_mask(params, calls, func, ctx):
                continue
            if all(self._always_causal(c, ctx) for c in calls):
                continue
            lines = ", ".join(str(c.call.lineno) for c in calls)
            yield ctx.finding(
                self.code, param,
                f"`{func.name}` takes `{name}` but never reads it: the {oc.name} call(s) it makes "
                f"(line {lines}) run the same whatever the caller asks, so a caller asking for causal "
                f"attention silently gets the call's fixed masking (bidirectional when it has no "
                f"causal mask); choose sparse_mode / atten_mask / next_tokens from `{name}`")

    @staticmethod
    def _always_causal(oc, ctx: FileContext) -> bool:
        """The call is causal whatever the flag: a literal causal or band mode, and a mask."""
        view = sparse_view(oc, ctx)
        return view.modes_known and bool(view.modes) and not view.no_mask and \
            all(m in CAUSAL_MODES for m in view.modes)

    @staticmethod
    def _callers_mask(params, calls, func, ctx: FileContext) -> bool:
        """CALLERS_MASK (see above): every call's atten_mask comes from a mask parameter."""
        from kvlint.checks.kv150_wrapper_drops_parameter import bindings_of

        defaulted = set(parameter_defaults(func))
        masks = [p for p in params if p in MASK_PARAMS and p not in defaulted]
        if not masks:
            return False
        bindings = bindings_of(func, ctx)
        return all(any(bindings.depends(v, m) for v in role_values(c, ctx, "mask") for m in masks)
                   for c in calls)

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
