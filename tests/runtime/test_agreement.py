"""The static rule and the runtime contract give the same verdict on equivalent literal calls.

Each case is one call written twice: as source text for `kvlint check` (only the static rule
selected) and as a real call on CPU tensors under `kvlint.patch(mode="collect")`. The facts
both halves read live in rules/facts/; a disagreement here means one half reads a fact the
other does not.
"""
from __future__ import annotations

import textwrap
from typing import Callable, Dict, List, Tuple

import pytest
import torch
import torch_npu

from kvlint.engine import Checker
from kvlint.facts import load_facts
from kvlint.settings import Settings

FACTS = load_facts()
H = torch.float16
V1, V2 = FACTS.versions.v1, FACTS.versions.v2
PFA = "npu_prompt_flash_attention"
MASK = torch.ones(2048, 2048, dtype=torch.bool).triu(1)


def static_codes(code: str, body: str, function: str = "forward") -> List[str]:
    """The codes `code`'s rule reports on a module calling `body` inside `def <function>`."""
    src = "import torch\nimport torch_npu\n\n\ndef {}(q, k, v, mask, table, qr, kr):\n{}\n".format(
        function, textwrap.indent(textwrap.dedent(body).strip("\n"), "    "))
    result = Checker(Settings(select=(code,))).check_bytes("case.py", src.encode())
    assert not result.errors, result.errors
    return [f.code for f in result.findings]


def runtime_codes(collect, fn: Callable[[], object]) -> List[str]:
    def run():
        try:
            fn()
        except (RuntimeError, IndexError, ValueError, TypeError, KeyError, ZeroDivisionError):
            pass  # collect mode lets the call proceed; the CPU stand-in may then fail itself
    return collect(run)


def t(*shape, dtype=H):
    return torch.randn(*shape).to(dtype)


# ------------------------------------------------------------------ sparse_mode x operator
SPARSE_CALLS: Dict[str, Tuple[str, Callable[[int], Callable[[], object]]]] = {
    V1: ("torch_npu.npu_fused_infer_attention_score(q, k, v, num_heads=4, num_key_value_heads=2, "
         "scale=0.25, input_layout='BSH', atten_mask=mask, sparse_mode={mode})",
         lambda mode: lambda: torch_npu.npu_fused_infer_attention_score(
             t(2, 3, 64), t(2, 5, 32), t(2, 5, 32), num_heads=4, num_key_value_heads=2, scale=0.25,
             input_layout="BSH", atten_mask=MASK, sparse_mode=mode)),
    V2: ("torch_npu.npu_fused_infer_attention_score_v2(q, k, v, num_query_heads=4, num_key_value_heads=2, "
         "softmax_scale=0.25, input_layout='BSH', atten_mask=mask, sparse_mode={mode})",
         lambda mode: lambda: torch_npu.npu_fused_infer_attention_score_v2(
             t(2, 3, 64), t(2, 5, 32), t(2, 5, 32), num_query_heads=4, num_key_value_heads=2,
             softmax_scale=0.25, input_layout="BSH", atten_mask=MASK, sparse_mode=mode)),
    PFA: ("torch_npu.npu_prompt_flash_attention(q, k, v, num_heads=4, num_key_value_heads=2, "
          "scale_value=0.25, input_layout='BSH', atten_mask=mask, sparse_mode={mode})",
          lambda mode: lambda: torch_npu.npu_prompt_flash_attention(
              t(2, 3, 64), t(2, 5, 32), t(2, 5, 32), num_heads=4, num_key_value_heads=2, scale_value=0.25,
              input_layout="BSH", atten_mask=MASK, sparse_mode=mode)),
}


def test_the_sparse_mode_cases_cover_every_sparse_mode_reader():
    assert set(SPARSE_CALLS) == set(FACTS.family("sparse_mode_readers"))


@pytest.mark.parametrize("op", sorted(SPARSE_CALLS))
@pytest.mark.parametrize("mode", range(-1, 11))
def test_sparse_mode(collect, op, mode):
    text, call = SPARSE_CALLS[op]
    static = "KV207" in static_codes("KV207", text.format(mode=mode))
    runtime = "KV213" in runtime_codes(collect, call(mode))
    assert static == runtime, f"{op} sparse_mode={mode}: static {'rejects' if static else 'accepts'}, " \
                              f"runtime {'rejects' if runtime else 'accepts'}"
    assert static == (mode not in FACTS.operator(op).sparse_modes)


# ------------------------------------------------------------------ block_size x phase x MLA
BLOCK_SIZES = (16, 32, 48, 64, 100, 128, 192, 256, 384, 512, 1024)


def paged_call(block_size: int, q_seq: int, mla: bool) -> Callable[[], object]:
    """A paged FA v1 call, BNSD, 2 requests of 2 blocks each; MLA: D=512 latent + 64 rope."""
    blocks, batch = 4, 2
    table = torch.arange(blocks, dtype=torch.int32).reshape(batch, 2)
    lengths = [3, block_size + 1]
    if mla:
        q, cache = t(batch, 2, q_seq, 512), t(blocks, 1, block_size, 512)
        rope = dict(query_rope=t(batch, 2, q_seq, 64), key_rope=t(blocks, 1, block_size, 64))
        heads = dict(num_heads=2, num_key_value_heads=1)
    else:
        q, cache = t(batch, 4, q_seq, 16), t(blocks, 2, block_size, 16)
        rope, heads = {}, dict(num_heads=4, num_key_value_heads=2)
    return lambda: torch_npu.npu_fused_infer_attention_score(
        q, cache, cache, **heads, scale=0.25, input_layout="BNSD", block_table=table, block_size=block_size,
        actual_seq_lengths_kv=lengths, **rope)


@pytest.mark.parametrize("mla", (False, True), ids=("gqa", "mla"))
@pytest.mark.parametrize("phase", ("prefill", "decode"))
@pytest.mark.parametrize("block_size", BLOCK_SIZES)
def test_block_size(collect, block_size, phase, mla):
    rope = ", query_rope=qr, key_rope=kr" if mla else ""
    text = (f"torch_npu.npu_fused_infer_attention_score(q, k, v, num_heads=4, scale=0.25, input_layout='BNSD', "
            f"block_table=table, block_size={block_size}, actual_seq_lengths_kv=[3, 5]{rope})")
    static = "KV303" in static_codes("KV303", text, function=f"forward_{phase}")
    runtime = "KV311" in runtime_codes(collect, paged_call(block_size, 2 if phase == "prefill" else 1, mla))
    assert static == runtime, f"block_size={block_size} {phase} {'MLA' if mla else 'GQA'}: static " \
                              f"{'rejects' if static else 'accepts'}, runtime {'rejects' if runtime else 'accepts'}"
    expected = not FACTS.fa.block_size.allowed(block_size, prefill=phase == "prefill", mla=mla, dtype="float16")
    assert static == expected


# ------------------------------------------------------------------ mask forms
MASK_SHAPES = ((2048, 2048), (1, 2048, 2048), (1, 1, 2048, 2048), (4096, 4096), (1024, 1024),
               (2, 2048, 2048), (4, 1, 2048, 2048), (2048, 4096))


@pytest.mark.parametrize("mode", FACTS.fa.mask.compressed_modes)
@pytest.mark.parametrize("shape", MASK_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_compressed_mask_shape(collect, shape, mode):
    shown = ", ".join(map(str, shape))
    text = (f"m = torch.ones(({shown}), dtype=torch.bool).triu(1)\n"
            f"torch_npu.npu_fused_infer_attention_score(q, k, v, num_heads=4, num_key_value_heads=2, "
            f"scale=0.25, input_layout='BSH', pre_tokens=8, atten_mask=m, sparse_mode={mode})")
    static = "KV206" in static_codes("KV206", text)
    mask = torch.ones(*shape, dtype=torch.bool).triu(1)
    runtime = "KV206" in runtime_codes(collect, lambda: torch_npu.npu_fused_infer_attention_score(
        t(2, 3, 64), t(2, 5, 32), t(2, 5, 32), num_heads=4, num_key_value_heads=2, scale=0.25,
        input_layout="BSH", pre_tokens=8, atten_mask=mask, sparse_mode=mode))
    assert static == runtime == (not FACTS.fa.mask.is_compressed_shape(shape)), shape


@pytest.mark.parametrize("mode", FACTS.fa.mask.compressed_modes)
def test_compressed_mode_without_a_mask(collect, mode):
    text = (f"torch_npu.npu_fused_infer_attention_score(q, k, v, num_heads=4, num_key_value_heads=2, "
            f"scale=0.25, input_layout='BSH', pre_tokens=8, atten_mask=None, sparse_mode={mode})")
    static = "KV201" in static_codes("KV201", text)
    runtime = "KV201" in runtime_codes(collect, lambda: torch_npu.npu_fused_infer_attention_score(
        t(2, 3, 64), t(2, 5, 32), t(2, 5, 32), num_heads=4, num_key_value_heads=2, scale=0.25,
        input_layout="BSH", pre_tokens=8, atten_mask=None, sparse_mode=mode))
    assert static and runtime


# ------------------------------------------------------------------ npu_fusion_attention layouts
FUSION_QUERIES = {"BSH": (2, 5, 8 * 64), "SBH": (5, 2, 8 * 64), "BSND": (2, 5, 8, 64), "BNSD": (2, 8, 5, 64),
                  "TND": (10, 8, 64)}


@pytest.mark.parametrize("layout", [*FUSION_QUERIES, "NTD", "BNSD_BSND", "SBND", "BSHD", "bsnd"])
def test_fusion_attention_layout(collect, layout):
    lens = ", actual_seq_qlen=[5, 10], actual_seq_kvlen=[5, 10]" if layout == "TND" else ""
    text = f"torch_npu.npu_fusion_attention(q, k, v, 8, {layout!r}, scale=0.125{lens})"
    static = "KV110" in static_codes("KV110", text)
    q = t(*FUSION_QUERIES.get(layout.upper(), (2, 5, 8, 64)))
    extra = dict(actual_seq_qlen=[5, 10], actual_seq_kvlen=[5, 10]) if layout == "TND" else {}
    runtime = "KV110" in runtime_codes(collect, lambda: torch_npu.npu_fusion_attention(
        q, q.clone(), q.clone(), 8, layout, scale=0.125, **extra))
    expected = layout.upper() not in FUSION_QUERIES
    assert static == runtime == expected, f"{layout}: static {static}, runtime {runtime}"
