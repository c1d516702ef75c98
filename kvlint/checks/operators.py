"""Operator groups the rules talk about, by base name (from the catalog)."""

FA_V1 = "npu_fused_infer_attention_score"
FA_V2 = "npu_fused_infer_attention_score_v2"
IFA = "npu_incre_flash_attention"
PFA = "npu_prompt_flash_attention"
FA = (FA_V1, FA_V2)
FUSED_ATTENTION = (FA_V1, FA_V2, IFA, PFA)
PAGED_READERS = (FA_V1, FA_V2, IFA)

# The keyword each fused-attention operator uses for one concept.
SCALE_KEYWORD = {FA_V1: "scale", FA_V2: "softmax_scale", IFA: "scale_value", PFA: "scale_value"}
HEADS_KEYWORD = {FA_V1: "num_heads", FA_V2: "num_query_heads", IFA: "num_heads", PFA: "num_heads"}
KV_LENGTH_KEYWORD = {FA_V1: "actual_seq_lengths_kv", FA_V2: "actual_seq_kvlen", IFA: "actual_seq_lengths"}

CACHE_WRITERS = (
    "scatter_update_", "npu_scatter_pa_kv_cache", "npu_kv_rmsnorm_rope_cache",
    "npu_kv_rmsnorm_rope_cache_v2", "scatter_pa_kv_cache_with_k_scale", "kv_compress_epilog",
)
ALL_KNOWN = FUSED_ATTENTION + CACHE_WRITERS + ("npu_fusion_attention", "npu_scatter_nd_update_")
# Operators whose atten_mask reads True/1 as masked (the mask-polarity rules).
MASK_READERS = FUSED_ATTENTION + ("npu_fusion_attention",)
