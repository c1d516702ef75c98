"""What the kv-length rules (KV401, KV402) share: which calls write a tensor in place, and
the byte pattern of a KV_LENGTH_NAMES write for their pre-filter."""
from __future__ import annotations

import re
from functools import lru_cache

from kvlint.analysis.context import HeuristicNames, LowercasePattern

# The in-place tensor methods KV401 treats as a write of the tensor they are called on.
INPLACE_METHODS = frozenset({
    "add_", "sub_", "mul_", "div_", "copy_", "fill_", "zero_", "index_put_", "index_add_",
    "index_copy_", "index_fill_", "scatter_", "scatter_add_", "masked_fill_", "masked_scatter_",
    "clamp_", "append", "extend",
})


def _write_parts(names: HeuristicNames):
    """The pieces of the KV_LENGTH_NAMES write patterns: the names (lowercase), a subscript
    (brackets nested up to three deep, across lines), the gap between a name and its store
    (spaces, line continuations, closing parentheses, subscripts), a store (`=`, annotated
    or augmented), an augmented store, an in-place method call."""
    words = b"|".join(re.escape(w.lower().encode())
                      for w in sorted({n.lower() for n in names.kv_length_names}, key=lambda w: (-len(w), w)))
    methods = b"|".join(re.escape(m.encode()) for m in sorted(INPLACE_METHODS))
    inner = rb"[^\[\]]*"
    for _ in range(2):
        inner = rb"(?:[^\[\]]|\[" + inner + rb"\])*"
    subscript = rb"\[" + inner + rb"\]"
    gap = rb"(?:\s|\\|\)|" + subscript + rb")*"
    augmented = rb"(?:\*\*|//|>>|<<|[-+*/%&|^@])=(?!=)"
    store = rb"(?::[^=\n]*)?(?:\*\*|//|>>|<<|[-+*/%&|^@])?=(?!=)"
    call = rb"\.\s*(?:" + methods + rb")\s*\("
    return words, subscript, gap, store, augmented, call


@lru_cache(maxsize=8)
def kv_length_write_pattern(names: HeuristicNames) -> LowercasePattern:
    """A KV_LENGTH_NAMES name being written (for the byte pre-filter of the rules that report
    only such writes): `kv_len += 1`, `m.Seq_Lens[i] = x`, `self.kv_len: T = x`,
    `kv_len.add_(1)`, `(kv_len) += 1`. Any case, as `is_kv_length_name` lowercases. Between
    the name and the store: spaces, line continuations, closing parentheses and subscripts
    (brackets nested up to three deep, across lines). Searched over the lowercased bytes
    (LowercasePattern): its only letters are the names' and the methods' (lowercase), the
    rest (`\\s`, `\\b`, the punctuation classes) is the same in any case."""
    words, _, gap, store, _, call = _write_parts(names)
    return LowercasePattern(re.compile(rb"\b(?:" + words + rb")\b" + gap + rb"(?:" + store + rb"|" + call + rb")"))


@lru_cache(maxsize=8)
def kv_length_update_pattern(names: HeuristicNames) -> LowercasePattern:
    """A KV_LENGTH_NAMES write other than a plain name's `=` (KV401 reports a plain local's
    `seq_lens = ...` only inside a per-layer loop): an attribute's store (`m.seq_lens = x`,
    `self. kv_len: T = x`), a subscript's (`kv_len[i] = x`), an augmented assignment
    (`kv_len += 1`, `(kv_len) -= 1`), an in-place method (`kv_len.add_(1)`). Any case, like
    kv_length_write_pattern."""
    words, subscript, gap, store, augmented, call = _write_parts(names)
    return LowercasePattern(re.compile(
        rb"\.(?:\s|\\)*(?:" + words + rb")\b" + gap + rb"(?:" + store + rb"|" + call + rb")"
        + rb"|\b(?:" + words + rb")\b(?:\s|\\|\))*" + subscript + gap + rb"(?:" + store + rb"|" + call + rb")"
        + rb"|\b(?:" + words + rb")\b" + gap + rb"(?:" + augmented + rb"|" + call + rb")"))
