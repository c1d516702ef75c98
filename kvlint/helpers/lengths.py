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


@lru_cache(maxsize=8)
def kv_length_write_pattern(names: HeuristicNames) -> LowercasePattern:
    """A KV_LENGTH_NAMES name being written (for the byte pre-filter of the rules that report
    only such writes): `kv_len += 1`, `m.Seq_Lens[i] = x`, `self.kv_len: T = x`,
    `kv_len.add_(1)`, `(kv_len) += 1`. Any case, as `is_kv_length_name` lowercases. Between
    the name and the store: spaces, line continuations, closing parentheses and subscripts
    (brackets nested up to three deep, across lines). Searched over the lowercased bytes
    (LowercasePattern): its only letters are the names' and the methods' (lowercase), the
    rest (`\\s`, `\\b`, the punctuation classes) is the same in any case."""
    words = b"|".join(re.escape(w.lower().encode())
                      for w in sorted({n.lower() for n in names.kv_length_names}, key=lambda w: (-len(w), w)))
    methods = b"|".join(re.escape(m.encode()) for m in sorted(INPLACE_METHODS))
    inner = rb"[^\[\]]*"
    for _ in range(2):
        inner = rb"(?:[^\[\]]|\[" + inner + rb"\])*"
    gap = rb"(?:\s|\\|\)|\[" + inner + rb"\])*"
    store = rb"(?::[^=\n]*)?(?:\*\*|//|>>|<<|[-+*/%&|^@])?=(?!=)"
    call = rb"\.\s*(?:" + methods + rb")\s*\("
    return LowercasePattern(re.compile(rb"\b(?:" + words + rb")\b" + gap + rb"(?:" + store + rb"|" + call + rb")"))
