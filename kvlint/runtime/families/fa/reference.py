"""Reference semantics of the fused-attention family, in plain torch (float32 math).

What the NPU computes for `npu_fused_infer_attention_score` (v1, v2), `npu_incre_flash_attention`,
`npu_prompt_flash_attention` and ATB's `_npu_paged_attention`, including what it does silently
(source: ops-transformer attention/fused_infer_attention_score/docs/aclnnFusedInferAttentionScoreV4.md,
"Mask" and "PagedAttention"; docs/context/sparse_mode参数说明.md):

- layouts BSH, BSND, BNSD, NSD, TND, NTD and the `IN_OUT` forms (BNSD_BSND, BSH_NBSD, TND_NTD, ...);
- paged reads through `block_table` from a 3-D (nb, bs, N*D), 4-D (nb, N, bs, D) or 5-D NZ
  (nb, N, D/16, bs, 16) cache; the `actual_seq_lengths(_kv)` limits (one entry = every request,
  more than B = the first B); TND lengths are cumulative end offsets (paged KV lengths per request);
- GQA (query head h reads KV head h // (N / N_kv)); MLA: `query_rope`/`key_rope` add their dot
  product to the scores (the value is whatever `value` holds: the latent in the absorb form);
- sparse_mode 0: the mask plus the pre/next band from the top-left corner, but without a mask
  nothing is masked and pre/next are ignored; 1: the full mask; 2: left-up causal; 3: right-down
  causal (the diagonal ends at the last key); 4: the pre/next band from the right-down corner.
  Modes 2-4 read the 2048x2048 compressed mask along its diagonals (`diagonal_lookup`): the
  documented `triu(ones, 1)` gives exact causal / band masking, any other content is applied
  the way the kernel's tiles read it, i.e. silently wrong;
- scale: whatever is passed (the schema default 1.0 means unscaled scores);
- rows with every key masked: output 0 and LSE +inf (the doc: "inf marks invalid data"); query
  rows past a request's length: output 0, LSE +inf.

Results are float32 math cast to the query dtype: close to the NPU (which accumulates in fp32
too), not bit-exact. Only torch and kvlint's data are imported here."""
from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

import torch

from kvlint.facts import load_facts

INT_MAX = 2147483647
COMPRESSED_MASK = load_facts().fa.mask.compressed_size   # sparse_mode 2/3/4 take the 2048x2048 mask
TOKEN_MAJOR = ("TND", "NTD")
_CHUNK_ELEMENTS = 1 << 24             # score elements per matmul chunk (64 MiB of float32)


# --------------------------------------------------------------------------- layouts
def split_layout(layout: str) -> Tuple[str, str]:
    """'BNSD_BSND' -> ('BNSD', 'BSND'); 'BSH' -> ('BSH', 'BSH')."""
    parts = layout.split("_")
    return parts[0], parts[-1]


def to_bnsd(x: torch.Tensor, base: str, heads: int) -> torch.Tensor:
    """A batch-major tensor in `base` layout -> (B, N, S, D) (a view where possible)."""
    if base == "BSH":
        b, s, h = x.shape
        return x.reshape(b, s, heads, h // heads).transpose(1, 2)
    if base == "SBH":
        s, b, h = x.shape
        return x.reshape(s, b, heads, h // heads).permute(1, 2, 0, 3)
    if base == "BSND":
        return x.transpose(1, 2)
    if base == "BNSD":
        return x
    if base == "NSD":
        return x.unsqueeze(0)
    raise NotImplementedError(f"layout {base}")


def from_bnsd(x: torch.Tensor, base: str) -> torch.Tensor:
    """(B, N, S, D) -> `base` layout, contiguous."""
    b, n, s, d = x.shape
    if base == "BSH":
        return x.transpose(1, 2).reshape(b, s, n * d)
    if base == "SBH":
        return x.permute(2, 0, 1, 3).reshape(s, b, n * d)
    if base == "BSND":
        return x.transpose(1, 2).contiguous()
    if base == "BNSD":
        return x.contiguous()
    if base == "NSD":
        return x[0].contiguous()
    if base == "NBSD":
        return x.permute(1, 0, 2, 3).contiguous()
    raise NotImplementedError(f"output layout {base}")


def seq_axis(base: str) -> int:
    return {"BSH": 1, "BSND": 1, "BNSD": 2, "NSD": 1, "SBH": 0}[base]


def per_request(values, batch: int, limit: int) -> List[int]:
    """A non-TND length list as the NPU reads it: None = the full length; one entry = every
    request; more than `batch` = the first `batch`; each clamped to [0, limit] (the kernel
    cannot read past the tensor; the guard reports longer lists as KV316)."""
    if values is None:
        return [limit] * batch
    vals = int_list(values)
    if len(vals) == 1:
        vals = vals * batch
    vals = (vals + [limit] * batch)[:batch]
    return [min(max(v, 0), limit) for v in vals]


def int_list(values) -> List[int]:
    if isinstance(values, torch.Tensor):
        return [int(v) for v in values.reshape(-1).tolist()]
    return [int(v) for v in values]


def offsets(ends: Sequence[int], total: int) -> List[Tuple[int, int]]:
    """Cumulative end offsets -> (start, end) per request, clamped to the token count. A
    per-request length list passed here is read as offsets, as the NPU reads it (KV315)."""
    spans, start = [], 0
    for end in ends:
        end = min(max(int(end), 0), total)
        spans.append((min(start, end), end))
        start = end
    return spans


# --------------------------------------------------------------------------- paged reads
def gather_blocks(cache: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """cache[ids] along dim 0, by advanced indexing: on CPU tensors `index_select` with large
    rows is up to 10x slower and erratic (torch 2.13, bf16 and int16 alike)."""
    return cache[ids]


def _tokens(picked: torch.Tensor, form: int, kv_heads: int) -> torch.Tensor:
    """Gathered blocks of one cache form -> (N_kv, blocks * bs, D)."""
    if form == 3:
        n, bs, h = picked.shape
        return picked.reshape(n * bs, kv_heads, h // kv_heads).transpose(0, 1)
    if form == 4:
        n, heads, bs, d = picked.shape
        return picked.permute(1, 0, 2, 3).reshape(heads, n * bs, d)
    if form == 5:
        n, heads, d1, bs, d0 = picked.shape
        return picked.permute(1, 0, 3, 2, 4).reshape(heads, n * bs, d1 * d0)
    raise NotImplementedError(f"a {form}-D paged cache")


class PagedReader:
    """Reads requests' tokens from one paged cache: 3-D (nb, bs, N_kv*D), 4-D (nb, N_kv, bs, D)
    or 5-D NZ (nb, N_kv, D/x, bs, x). The blocks every request uses (its first
    ceil(kv_len / block_size) table entries) are gathered in one go."""

    def __init__(self, cache: torch.Tensor, table: torch.Tensor, kv_lens: Sequence[int], block_size: int,
                 kv_heads: int):
        self.form, self.kv_heads, self.kv_lens = cache.dim(), kv_heads, list(kv_lens)
        counts = [-(-max(kv, 0) // block_size) for kv in self.kv_lens]
        rows = [table[b, :n] for b, n in enumerate(counts)]
        ids = torch.cat(rows).long() if rows else table.new_zeros(0).long()
        self.picked = gather_blocks(cache, ids)
        self.starts = [sum(counts[:b]) for b in range(len(counts))]
        self.counts = counts
        if self.form == 3:
            self.dim = cache.shape[-1] // kv_heads
        elif self.form == 4:
            self.dim = cache.shape[-1]
        else:
            self.dim = cache.shape[2] * cache.shape[4]

    def read(self, b: int) -> torch.Tensor:
        """Request b's first kv_len tokens as (N_kv, kv_len, D)."""
        kv_len = self.kv_lens[b]
        if kv_len <= 0:
            return self.picked.new_zeros((self.kv_heads, 0, self.dim))
        blocks = self.picked.narrow(0, self.starts[b], self.counts[b])
        return _tokens(blocks, self.form, self.kv_heads)[:, :kv_len]


def paged_read(cache: torch.Tensor, row: torch.Tensor, kv_len: int, block_size: int, kv_heads: int) -> torch.Tensor:
    """The first `kv_len` tokens of one request, through its block-table row: (N_kv, kv_len, D)."""
    return PagedReader(cache, row.reshape(1, -1), [kv_len], block_size, kv_heads).read(0)


# --------------------------------------------------------------------------- masks
def diagonal_lookup(mask: torch.Tensor) -> torch.Tensor:
    """The compressed mask as the kernel reads it: entry k says whether a score whose key lies
    d = k - n positions right of its diagonal is masked (n = 2048): d <= -n never (a whole tile
    below the diagonal), d >= n always (a tile above it is skipped), otherwise mask[0, d] for
    d >= 0 and mask[-d, 0] below."""
    m = mask.reshape(-1, mask.shape[-2], mask.shape[-1])[0].bool()
    n = m.shape[-1]
    table = torch.empty(2 * n + 1, dtype=torch.bool, device=m.device)
    table[0] = False
    table[1:n] = m[1:, 0].flip(0)
    table[n:2 * n] = m[0, :]
    table[2 * n] = True
    return table


def _geometric_lookup(device) -> torch.Tensor:
    n = COMPRESSED_MASK
    table = torch.zeros(2 * n + 1, dtype=torch.bool, device=device)
    table[n + 1:] = True
    return table


def _lookup(table: torch.Tensor, d: torch.Tensor) -> torch.Tensor:
    n = (table.shape[0] - 1) // 2
    return table[d.clamp(-n, n) + n]


def user_mask(mask: torch.Tensor, b: int, batch: int, q_seq: int, sq: int, skv: int) -> torch.Tensor:
    """Request b's (heads|1, sq, skv) part of a full mask (sparse_mode 0/1): (Q_S, KV_S),
    (B|1, Q_S, KV_S), (B|1, N|1, Q_S, KV_S), and for a one-token query (B, KV_S), (B, 1, KV_S).
    The top-left (sq, skv) corner is read; what a too-small mask does not cover stays unmasked."""
    m = mask
    if m.dim() == 4:
        m = m[b if m.shape[0] > 1 else 0]
    elif m.dim() == 3:
        m = m[b if m.shape[0] > 1 else 0].unsqueeze(0)
    elif m.dim() == 2:
        m = m[b].reshape(1, 1, -1) if (q_seq == 1 and batch > 1 and m.shape[0] == batch) else m.unsqueeze(0)
    else:
        m = m.reshape(1, 1, -1)
    m = m[..., :sq, :skv].bool()
    if m.shape[-2] < sq or m.shape[-1] < skv:
        full = torch.zeros((m.shape[0], sq, skv), dtype=torch.bool, device=m.device)
        full[:, :m.shape[-2], :m.shape[-1]] = m
        m = full
    return m


def masked_positions(sq: int, skv: int, sparse_mode: int, pre: int, nxt: int, mask_b: Optional[torch.Tensor],
                     table: Optional[torch.Tensor], device) -> Optional[torch.Tensor]:
    """Boolean 'masked' (heads|1, sq, skv) for one request, or None when nothing is masked."""
    if sparse_mode in (0, 1):
        if mask_b is None:
            return None  # sparse_mode 0 without a mask: full attention, pre/next ignored
        if sparse_mode == 1:
            return mask_b
        i = torch.arange(sq, device=device).unsqueeze(1)
        j = torch.arange(skv, device=device).unsqueeze(0)
        band = (j - i > nxt) | (i - j > pre)  # the top-left band the mask is combined with
        return mask_b | band
    if sparse_mode not in (2, 3, 4):
        raise NotImplementedError(f"sparse_mode {sparse_mode}")
    table = table if table is not None else _geometric_lookup(device)
    i = torch.arange(sq, device=device).unsqueeze(1)
    j = torch.arange(skv, device=device).unsqueeze(0)
    offset = 0 if sparse_mode == 2 else skv - sq
    d = j - i - offset
    if sparse_mode in (2, 3):
        return _lookup(table, d).unsqueeze(0)
    return (_lookup(table, d - nxt) | _lookup(table, -d - pre)).unsqueeze(0)


# --------------------------------------------------------------------------- the math
def softmax_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float,
                      masked: Optional[torch.Tensor], rope_q: Optional[torch.Tensor] = None,
                      rope_k: Optional[torch.Tensor] = None) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """q (N, Sq, D), k (N_kv, Skv, D), v (N_kv, Skv, Dv), masked (N|1, Sq, Skv) -> out (N, Sq, Dv),
    lse (N, Sq) and the row maxima of the scaled scores (N, Sq), float32. Fully masked rows:
    out 0, lse +inf, max -inf."""
    n, sq = q.shape[0], q.shape[1]
    kv_heads, skv = k.shape[0], k.shape[1]
    if rope_q is not None:
        q = torch.cat([q, rope_q], dim=-1)
        k = torch.cat([k, rope_k], dim=-1)
    group = n // kv_heads
    qf = q.float().reshape(kv_heads, group * sq, q.shape[-1])
    kt = k.float().transpose(-1, -2)
    vf = v.float()
    dv = v.shape[-1]
    if skv == 0:
        return (q.new_zeros((n, sq, dv), dtype=torch.float32), torch.full((n, sq), float("inf")),
                torch.full((n, sq), float("-inf")))
    rows = max(1, _CHUNK_ELEMENTS // max(1, n * skv))
    outs, lses, maxes = [], [], []
    for start in range(0, sq, rows):
        stop = min(sq, start + rows)
        qc = qf.reshape(kv_heads, group, sq, -1)[:, :, start:stop].reshape(kv_heads, group * (stop - start), -1)
        scores = torch.bmm(qc, kt).mul_(scale).reshape(n, stop - start, skv)
        if masked is not None:
            scores.masked_fill_(masked[:, start:stop], float("-inf"))
        rowmax = scores.amax(dim=-1)
        dead = torch.isneginf(rowmax)  # every key masked
        shift = rowmax.masked_fill(dead, 0.0)
        weights = scores.sub_(shift.unsqueeze(-1)).exp_()  # masked scores -> 0
        total = weights.sum(dim=-1)
        out = torch.bmm(weights.reshape(kv_heads, group * (stop - start), skv), vf).reshape(n, stop - start, dv)
        outs.append(out.div_(total.clamp_min(torch.finfo(torch.float32).tiny).unsqueeze(-1)))
        lses.append((shift + torch.log(total)).masked_fill_(dead, float("inf")))
        maxes.append(rowmax)
    return torch.cat(outs, 1), torch.cat(lses, 1), torch.cat(maxes, 1)


class Request:
    """One request's inputs: q (N, Sq, D), k (N_kv, Skv, D), v (N_kv, Skv, Dv), optional ropes."""

    __slots__ = ("q", "k", "v", "rope_q", "rope_k")

    def __init__(self, q, k, v, rope_q=None, rope_k=None):
        self.q, self.k, self.v, self.rope_q, self.rope_k = q, k, v, rope_q, rope_k


def attention(query, key, value, *, num_heads: int, kv_heads: int, scale: float, layout: str,
              atten_mask=None, sparse_mode: int = 0, pre_tokens: int = INT_MAX, next_tokens: int = INT_MAX,
              q_lens=None, kv_lens=None, block_table=None, block_size: int = 0, query_rope=None,
              key_rope=None, mask_needed: bool = True, with_max: bool = False):
    """The whole family's semantics. Returns (out in the output layout and the query dtype,
    lse float32: (B, N, S, 1), or (T, N, 1) for a token-major query; `with_max`: also the row
    maxima of the scaled scores in the LSE's shape). `mask_needed=False` (npu_fusion_attention):
    without a mask, sparse_mode and pre/next do nothing."""
    num_heads = int(num_heads)
    kv_heads = int(kv_heads) or num_heads
    base_in, base_out = split_layout(layout)
    token_major = base_in in TOKEN_MAJOR
    requests, spans = _requests(query, key, value, num_heads, kv_heads, base_in, q_lens, kv_lens,
                                block_table, block_size, query_rope, key_rope)
    if atten_mask is None and not mask_needed:
        sparse_mode = 0
    table = None
    if sparse_mode in (2, 3, 4) and atten_mask is not None and atten_mask.dim() >= 2:
        table = diagonal_lookup(atten_mask)
    q_seq = None if token_major else int(query.shape[seq_axis(base_in)])
    batch = len(requests)
    results = []
    for b, req in enumerate(requests):
        sq, skv = req.q.shape[1], req.k.shape[1]
        mask_b = None
        if sparse_mode in (0, 1) and atten_mask is not None:
            mask_b = user_mask(atten_mask, b, batch, q_seq if q_seq is not None else sq, sq, skv)
        masked = masked_positions(sq, skv, sparse_mode, int(pre_tokens), int(next_tokens), mask_b, table,
                                  req.q.device)
        results.append(softmax_attention(req.q, req.k, req.v, scale, masked, req.rope_q, req.rope_k))
    dv = requests[0].v.shape[-1] if requests else 0
    device = query.device
    if token_major:
        total = int(query.shape[0] if base_in == "TND" else query.shape[1])
        out = torch.zeros((total, num_heads, dv), dtype=torch.float32, device=device)
        lse = torch.full((total, num_heads, 1), float("inf"), device=device)
        rowmax = torch.full((total, num_heads, 1), float("-inf"), device=device)
        for (start, end), (o, l, m) in zip(spans, results):
            out[start:end] = o.transpose(0, 1)
            lse[start:end, :, 0] = l.transpose(0, 1)
            rowmax[start:end, :, 0] = m.transpose(0, 1)
        out = (out if base_out == "TND" else out.transpose(0, 1)).to(query.dtype).contiguous()
    else:
        out = torch.zeros((batch, num_heads, q_seq, dv), dtype=torch.float32, device=device)
        lse = torch.full((batch, num_heads, q_seq, 1), float("inf"), device=device)
        rowmax = torch.full((batch, num_heads, q_seq, 1), float("-inf"), device=device)
        for b, (o, l, m) in enumerate(results):
            out[b, :, :o.shape[1]] = o
            lse[b, :, :l.shape[1], 0] = l
            rowmax[b, :, :m.shape[1], 0] = m
        out = from_bnsd(out, base_out).to(query.dtype)
    return (out, lse, rowmax) if with_max else (out, lse)


def _requests(query, key, value, num_heads, kv_heads, base, q_lens, kv_lens, block_table, block_size,
              query_rope, key_rope):
    """Split the inputs into per-request (q, k, v, ropes); for token-major layouts also the
    (start, end) token span of each request's queries."""
    paged = block_table is not None
    if base in TOKEN_MAJOR:
        q_all = query if base == "TND" else query.transpose(0, 1)
        r_all = None if query_rope is None else (query_rope if base == "TND" else query_rope.transpose(0, 1))
        spans = offsets(int_list(q_lens), q_all.shape[0])
        batch = len(spans)
        if paged:
            kv = [max(int(v), 0) for v in int_list(kv_lens)][:batch]
            kv = kv + [0] * (batch - len(kv))
            readers = _readers(key, value, key_rope, block_table, kv, block_size, kv_heads)
            kv_spans = None
        else:
            k_all = key if base == "TND" else key.transpose(0, 1)
            v_all = value if base == "TND" else value.transpose(0, 1)
            kr_all = None if key_rope is None else (key_rope if base == "TND" else key_rope.transpose(0, 1))
            kv_spans = offsets(int_list(kv_lens), k_all.shape[0])
        requests = []
        for b, (s, e) in enumerate(spans):
            q = q_all[s:e].transpose(0, 1)
            rq = None if r_all is None else r_all[s:e].transpose(0, 1)
            if paged:
                k, v, rk = (None if r is None else r.read(b) for r in readers)
            else:
                ks, ke = kv_spans[b] if b < len(kv_spans) else (0, 0)
                k, v = k_all[ks:ke].transpose(0, 1), v_all[ks:ke].transpose(0, 1)
                rk = None if kr_all is None else kr_all[ks:ke].transpose(0, 1)
            requests.append(Request(q, k, v, rq, rk))
        return requests, spans
    q4 = to_bnsd(query, base, num_heads)
    batch, _, s_q, _ = q4.shape
    lens = per_request(q_lens, batch, s_q)
    r4 = None if query_rope is None else to_bnsd(query_rope, base, num_heads)
    requests = []
    if paged:
        kv = per_request(kv_lens, batch, int(block_table.shape[1]) * int(block_size))
        readers = _readers(key, value, key_rope, block_table, kv, block_size, kv_heads)
        for b in range(batch):
            k, v, rk = (None if r is None else r.read(b) for r in readers)
            requests.append(Request(q4[b, :, :lens[b]], k, v, None if r4 is None else r4[b, :, :lens[b]], rk))
        return requests, None
    k4, v4 = to_bnsd(key, base, kv_heads), to_bnsd(value, base, kv_heads)
    kr4 = None if key_rope is None else to_bnsd(key_rope, base, kv_heads)
    kv = per_request(kv_lens, batch, int(k4.shape[2]))
    for b in range(batch):
        requests.append(Request(q4[b, :, :lens[b]], k4[b, :, :kv[b]], v4[b, :, :kv[b]],
                                None if r4 is None else r4[b, :, :lens[b]],
                                None if kr4 is None else kr4[b, :, :kv[b]]))
    return requests, None


def _readers(key, value, key_rope, table, kv_lens, block_size, kv_heads):
    return tuple(None if cache is None else PagedReader(cache, table, kv_lens, block_size, kv_heads)
                 for cache in (key, value, key_rope))


# --------------------------------------------------------------------------- the operators
def fused_infer_attention_score(query, key, value, *, atten_mask=None, actual_seq_lengths=None,
                                actual_seq_lengths_kv=None, block_table=None, query_rope=None, key_rope=None,
                                num_heads=1, scale=1.0, pre_tokens=INT_MAX, next_tokens=INT_MAX,
                                input_layout="BSH", num_key_value_heads=0, sparse_mode=0, block_size=0,
                                softmax_lse_flag=False, **_precision):
    """npu_fused_infer_attention_score (v1) -> (attention_out, softmax_lse); without
    softmax_lse_flag the LSE output is the documented placeholder: shape (1,), zeros."""
    out, lse = attention(query, key, value, num_heads=num_heads, kv_heads=num_key_value_heads, scale=scale,
                         layout=input_layout, atten_mask=atten_mask, sparse_mode=sparse_mode,
                         pre_tokens=pre_tokens, next_tokens=next_tokens, q_lens=actual_seq_lengths,
                         kv_lens=actual_seq_lengths_kv, block_table=block_table, block_size=block_size,
                         query_rope=query_rope, key_rope=key_rope)
    return out, (lse if softmax_lse_flag else torch.zeros(1, device=query.device))


def fused_infer_attention_score_v2(query, key, value, *, atten_mask=None, actual_seq_qlen=None,
                                   actual_seq_kvlen=None, block_table=None, query_rope=None, key_rope=None,
                                   num_query_heads=1, num_key_value_heads=0, softmax_scale=1.0,
                                   pre_tokens=INT_MAX, next_tokens=INT_MAX, input_layout="BSH", sparse_mode=0,
                                   block_size=0, return_softmax_lse=False, **_precision):
    """npu_fused_infer_attention_score_v2: the v1 semantics under the v2 keyword names."""
    return fused_infer_attention_score(
        query, key, value, atten_mask=atten_mask, actual_seq_lengths=actual_seq_qlen,
        actual_seq_lengths_kv=actual_seq_kvlen, block_table=block_table, query_rope=query_rope,
        key_rope=key_rope, num_heads=num_query_heads, scale=softmax_scale, pre_tokens=pre_tokens,
        next_tokens=next_tokens, input_layout=input_layout, num_key_value_heads=num_key_value_heads,
        sparse_mode=sparse_mode, block_size=block_size, softmax_lse_flag=return_softmax_lse)


def incre_flash_attention(query, key, value, *, atten_mask=None, actual_seq_lengths=None, block_table=None,
                          num_heads=1, scale_value=1.0, input_layout="BSH", num_key_value_heads=0, block_size=0,
                          **_precision):
    """npu_incre_flash_attention: one query token per request; `actual_seq_lengths` are the
    KV lengths; the mask (B, KV_S)-like, no sparse modes."""
    out, _ = attention(query, key, value, num_heads=num_heads, kv_heads=num_key_value_heads, scale=scale_value,
                       layout=input_layout, atten_mask=atten_mask, kv_lens=actual_seq_lengths,
                       block_table=block_table, block_size=block_size)
    return out


def prompt_flash_attention(query, key, value, *, atten_mask=None, actual_seq_lengths=None, num_heads=1,
                           scale_value=1.0, pre_tokens=INT_MAX, next_tokens=0, input_layout="BSH",
                           num_key_value_heads=0, actual_seq_lengths_kv=None, sparse_mode=0, **_precision):
    """npu_prompt_flash_attention. Its next_tokens defaults to 0: with sparse_mode 0 and a mask,
    the top-left causal band is applied on top of the mask."""
    out, _ = attention(query, key, value, num_heads=num_heads, kv_heads=num_key_value_heads, scale=scale_value,
                       layout=input_layout, atten_mask=atten_mask, sparse_mode=sparse_mode, pre_tokens=pre_tokens,
                       next_tokens=next_tokens, q_lens=actual_seq_lengths, kv_lens=actual_seq_lengths_kv)
    return out


def atb_paged_attention(query, key_cache, value_cache, num_kv_heads, num_heads, scale_value, block_table,
                        context_lens, out, workspace=None):
    """ATB _npu_paged_attention: query (B, N, D), caches (nb, bs, N_kv, D); writes `out` (B, N, Dv)."""
    nb, bs = key_cache.shape[:2]
    res, _ = attention(query.unsqueeze(1), key_cache.reshape(nb, bs, -1), value_cache.reshape(nb, bs, -1),
                       num_heads=num_heads, kv_heads=num_kv_heads, scale=scale_value, layout="BSND",
                       kv_lens=context_lens, block_table=block_table, block_size=bs)
    out.copy_(res.squeeze(1))
