"""The accuracy table of kvlint.emulate's attention kernels (a script, not a test).

    python benchmarks/emulate_accuracy.py

Runs the cases of tests/emulate/test_emulate_attention_accuracy.py (built by tests/emulate/cases.py
from per-request dense tensors, truth = float64 softmax attention with explicit masks) and prints,
per group of cases, the largest max-abs error of the output: fp32 through the reference kernels,
bf16 and fp16 through the emulated operators. The tests assert <= 1e-4 (fp32) and <= 2e-2."""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "emulate")]

import torch  # noqa: E402

import kvlint.emulate  # noqa: E402

kvlint.emulate.install(force=True)
import test_emulate_attention_accuracy as acc  # noqa: E402
import torch_npu  # noqa: E402
from cases import build, max_error, per_request_output  # noqa: E402

from kvlint.runtime.families.fa import reference as fa_ref  # noqa: E402
from kvlint.runtime.families.fusion import reference as fusion_ref  # noqa: E402


def group(case) -> str:
    if case.dim == 512:
        return "MLA absorb (512 + rope 64, paged)"
    if case.rope_dim:
        return "rope (D 128 + 64)"
    if case.paged:
        return f"paged {case.paged} cache"
    if case.sparse in (2, 3, 4):
        return f"sparse_mode {case.sparse} (compressed mask)"
    if case.user_mask:
        return f"sparse_mode {case.sparse} with a mask"
    if case.heads != case.kv_heads * 2 or case.q_lens != [3, 3]:
        return "GQA / MQA / lengths"
    return "layouts (sparse 0, no mask)"


def fa_error(case, dtype):
    (q, k, v), kw, expected, _ = build(case, dtype)
    if dtype == torch.float32:
        out, _ = fa_ref.fused_infer_attention_score(q, k, v, **kw)
    else:
        out, _ = torch_npu.npu_fused_infer_attention_score(q, k, v, **kw)
    return max_error(per_request_output(out.float(), case)[0], expected)


def fusion_error(case, dtype):
    (q, k, v), args, expected, _ = acc._fusion_inputs(case, dtype)
    fn = fusion_ref.fusion_attention if dtype == torch.float32 else torch_npu.npu_fusion_attention
    if dtype != torch.float32:
        case = type(case)(**{**case.__dict__, "kv_heads": case.heads})
        (q, k, v), args, expected, _ = acc._fusion_inputs(case, dtype)
    out = fn(q, k, v, case.heads, case.layout, **args)[0]
    return max_error(per_request_output(out.float(), case)[0], expected)


def main():
    rows = {}
    operator_cases = {c.name for c in acc.THROUGH_OPERATOR}
    for case in acc.DENSE + acc.PAGED + acc.NZ + acc.MLA:
        row = rows.setdefault(("FA v1", group(case)), {"n": 0})
        row["n"] += 1
        for dtype, label in ((torch.float32, "fp32"), (torch.bfloat16, "bf16"), (torch.float16, "fp16")):
            if dtype != torch.float32 and case.name not in operator_cases:
                continue
            row[label] = max(row.get(label, 0.0), fa_error(case, dtype))
    for case in acc.FUSION:
        row = rows.setdefault(("npu_fusion_attention", "layouts, modes 0-4, TND"), {"n": 0})
        row["n"] += 1
        for dtype, label in ((torch.float32, "fp32"), (torch.bfloat16, "bf16")):
            row[label] = max(row.get(label, 0.0), fusion_error(case, dtype))
    print("| operator | cases | n | fp32 (reference) | bf16 (operator) | fp16 (operator) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for (op, name), row in rows.items():
        cells = [f"{row[k]:.1e}" if k in row else "-" for k in ("fp32", "bf16", "fp16")]
        print(f"| {op} | {name} | {row['n']} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
