"""KV501: npu_kv_rmsnorm_rope_cache (v1) outputs 3-4 used without is_output_kv=True
(docs: rules/codes/KV501.toml)."""
import ast

from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.facts import load_facts
from kvlint.helpers.results import result_target, unpacked_names

V1 = load_facts().family("rmsnorm_rope_cache")[0]  # v1 (v2 has no is_output_kv)
LATE_INDICES = (2, 3, -1, -2)


def _used_name(target: ast.expr) -> bool:
    return not (isinstance(target, ast.Name) and target.id.startswith("_"))


@register
class RmsnormOutputsWithoutFlag(Rule):
    code = "KV501"
    operators = (V1,)

    def check_call(self, oc, ctx: FileContext):
        if oc.variant == "workspace":
            return
        args = ctx.args(oc.call)
        flags = args.keywords.get("is_output_kv", [])
        if flags:
            values = [v for kw in flags for v in ctx.values.literal_values(kw.value, oc.call)]
            if any(v is not False for v in values):
                return  # True, or not a literal: may be set
        elif not args.complete:
            return
        for target in self._uses(oc.call, ctx):
            yield ctx.finding(self.code, target,
                              f"{V1} returns (k_cache, ckv_cache, k_rope, c_kv); the last two are "
                              f"computed only with is_output_kv=True, so without it this value is "
                              f"not this step's rotated/normalized K; pass is_output_kv=True "
                              f"(or use only outputs 1-2)", anchor=oc.call)

    @staticmethod
    def _uses(call: ast.Call, ctx: FileContext):
        targets = unpacked_names(result_target(call, ctx), starred=True)
        if targets is not None and len(targets) == 4:
            yield from (t for t in targets[2:] if _used_name(t))
            return
        parent = ctx.index.parent_of(call)
        if isinstance(parent, ast.Subscript) and parent.value is call:
            if ctx.values.int_value(parent.slice, parent) in LATE_INDICES:
                yield parent
        elif isinstance(parent, ast.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0], ast.Name):
            # outs = op(...); outs[3]
            name, func = parent.targets[0].id, ctx.index.enclosing_function(call)
            for node in ast.walk(func) if func is not None else ():
                if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) \
                        and node.value.id == name and node.lineno > parent.lineno \
                        and ctx.values.int_value(node.slice, node) in LATE_INDICES:
                    yield node
