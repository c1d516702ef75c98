"""Resolved settings for one run: which codes are on, severities, the heuristics' names.

Built from the command line and `[tool.kvlint]` in pyproject.toml (kvlint/config.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Iterable, Tuple


@dataclass(frozen=True)
class HeuristicNames:
    """The words the heuristics look for; `[tool.kvlint]` can extend them."""

    # FUNCTION_NAME_PHASE: a function whose name contains one of these words runs that phase
    # (once the operator names it spells are taken out: `prompt_flash_attention_npu` has none).
    prefill_function_words: Tuple[str, ...] = ("prefill", "prompt", "context_encode")
    decode_function_words: Tuple[str, ...] = ("decode", "decoding", "incre", "generate_step")
    # PAST_CONTEXT_FUNCTION: a function computing attention of new tokens over the cached
    # prefix (chunked prefill context): every key is in the past, so no phase is implied.
    past_context_function_words: Tuple[str, ...] = (
        "prefill_context", "prefix", "chunked_context", "past_context", "history",
    )
    # BRANCH_FLAG_PHASE: a boolean flag naming the phase (`if is_prefill:`, `if attn_metadata.is_decode`).
    prefill_flags: Tuple[str, ...] = ("is_prefill", "prefill", "is_prompt", "is_context", "in_prefill")
    decode_flags: Tuple[str, ...] = ("is_decode", "decode", "is_decoding", "in_decode")
    # BRANCH_ENUM_STATE: `attn_state == AscendAttentionState.PrefillNoCache` is prefill,
    # `== ...DecodeOnly` decode (also `in (...)`, `!=`, `not in`); the member's name decides.
    # ChunkedPrefill / PrefillCacheHit mix both phases in one batch (no phase).
    prefill_states: Tuple[str, ...] = ("PrefillNoCache", "PrefillOnly", "Prefill", "PREFILL", "PREFILL_NO_CACHE")
    decode_states: Tuple[str, ...] = ("DecodeOnly", "Decode", "DECODE", "DECODE_ONLY", "SpecDecoding")
    # BRANCH_QUERY_LENGTH: `q_len == 1` is decode, `q_len > 1` is prefill.
    query_length_names: Tuple[str, ...] = (
        "q_len", "seq_len", "q_seq_len", "query_len", "seqlen", "s_q", "q_s", "num_tokens_per_req",
        "qlen", "query_length", "seq_length", "max_query_len", "max_q_len", "max_seqlen_q",
    )
    # LAYER_CLASS: classes whose methods are one layer of the model (KV401).
    layer_class_words: Tuple[str, ...] = ("Attention", "Attn", "Layer", "Decoder", "MLA", "Block", "Indexer")
    # ...unless the name also says it builds or holds metadata rather than being a layer.
    not_layer_class_words: Tuple[str, ...] = (
        "Builder", "Metadata", "Runner", "Manager", "Table", "Config", "Test", "Backend", "Mask",
    )
    # PER_LAYER_LOOP: `for layer in self.layers:` and the like.
    layer_loop_words: Tuple[str, ...] = ("layers", "layer_list", "blocks", "decoder_layers", "h")
    # KV_LENGTH_NAMES: runner-owned length/slot tensors that layers must only read (KV401).
    kv_length_names: Tuple[str, ...] = (
        "kv_len", "kv_lens", "seq_len", "seq_lens", "seqlens", "context_lens", "actual_seq_lengths",
        "actual_seq_lengths_kv", "actual_seq_lengths_q", "actual_seq_qlen", "actual_seq_kvlen",
        "slot_mapping", "slot_mappings", "kv_seq_len", "kv_lengths", "seq_lens_list",
    )


def code_matches(code: str, patterns: Iterable[str]) -> bool:
    """`KV1` matches KV101..KV199; `KV301` matches only itself; `ALL` matches everything."""
    return any(p == "ALL" or code.startswith(p) for p in patterns)


@dataclass(frozen=True)
class Settings:
    select: Tuple[str, ...] = ()  # empty: every rule enabled by default
    ignore: Tuple[str, ...] = ()
    extend_select: Tuple[str, ...] = ()
    severity: Dict[str, str] = field(default_factory=dict)
    names: HeuristicNames = HeuristicNames()
    # from [tool.kvlint] (kvlint/config.py): glob patterns, relative to `root`
    exclude: Tuple[str, ...] = ()
    extend_exclude: Tuple[str, ...] = ()
    per_file_ignores: Tuple[Tuple[str, Tuple[str, ...]], ...] = ()
    root: str = ""  # the folder holding the config file ("" = the current folder)
    config_file: str = ""  # "" = no config file (defaults or --isolated)
    preview: bool = False  # preview rules and heuristic branches on (`--preview`, `preview = true`)

    def enabled(self, code: str, default_on: bool = True, preview_rule: bool = False) -> bool:
        """Whether rule `code` runs. A preview rule runs only with `preview` on, however it is
        selected (as in ruff)."""
        if code_matches(code, self.ignore) or (preview_rule and not self.preview):
            return False
        if self.select:
            return code_matches(code, self.select) or code_matches(code, self.extend_select)
        return default_on or code_matches(code, self.extend_select)
