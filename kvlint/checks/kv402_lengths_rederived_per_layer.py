"""KV402: kv lengths / slot_mapping re-derived inside a per-layer loop
(docs: rules/codes/KV402.toml)."""
import ast

from kvlint.analysis.context import layer_loop_pattern
from kvlint.analysis.module import dotted_name
from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.checks.kv401_kv_len_mutated_in_layer import (
    KvLenMutatedInLayer,
    per_call_object,
    reports_store,
    terminal_name,
)
from kvlint.helpers.lengths import kv_length_write_pattern

# DERIVATION: arithmetic, or a call that builds a new length/slot tensor.
DERIVING_CALLS = frozenset({
    "cumsum", "arange", "tensor", "as_tensor", "cat", "stack", "repeat_interleave", "add", "sub",
    "clamp", "full", "full_like", "zeros", "ones", "max", "sum", "tolist", "list",
})


def derives(value: ast.expr) -> bool:
    for n in ast.walk(value):
        if isinstance(n, ast.BinOp) and not isinstance(n.op, ast.Mod):
            return True
        if isinstance(n, ast.Call):
            f = n.func
            name = f.attr if isinstance(f, ast.Attribute) else (f.id if isinstance(f, ast.Name) else "")
            if name in DERIVING_CALLS:
                return True
    return False


@register
class LengthsRederivedPerLayer(Rule):
    code = "KV402"
    words = KvLenMutatedInLayer.words

    def required_words(self, settings):
        # necessary: a PER_LAYER_LOOP and a write of a length name (pre-filter)
        return ((layer_loop_pattern(settings.names),), (kv_length_write_pattern(settings.names),))

    def check_module(self, ctx: FileContext):
        for stmt in ctx.index.assigns:
            if stmt.value is None:
                continue
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            lengths = [t for t in targets if isinstance(t, (ast.Name, ast.Attribute))
                       and ctx.context.is_kv_length_name(terminal_name(t))]
            if not lengths:
                continue  # no length stored: its loop is not looked for
            loop = ctx.context.per_layer_loop(stmt)
            if loop is None:
                continue
            for target in lengths:
                name = terminal_name(target)
                if not derives(stmt.value):
                    continue
                if reports_store(target, stmt, ctx):
                    continue  # KV401 reports this store (an increment or a foreign write)
                if per_call_object(target, stmt, ctx):
                    continue  # CONSTRUCTED_OBJECT: an object this iteration built holds its own lengths
                shown = dotted_name(target) or name
                yield ctx.finding(self.code, target,
                                  f"`{shown}` is re-derived inside the per-layer loop (line "
                                  f"{loop.lineno}): every layer of one step must read the same "
                                  f"lengths and slots, and a value recomputed per layer drifts as "
                                  f"soon as its inputs change between layers; compute it once per "
                                  f"step before the loop")
