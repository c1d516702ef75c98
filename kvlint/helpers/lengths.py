"""What the kv-length rules (KV401, KV402) share: which calls write a tensor in place, and
the byte pattern of a KV_LENGTH_NAMES write for their pre-filter."""
from __future__ import annotations

import re
from functools import lru_cache
from typing import List, Optional

from kvlint.analysis.context import AnyOf, LowercasePattern
from kvlint.settings import HeuristicNames

# The in-place tensor methods KV401 treats as a write of the tensor they are called on.
INPLACE_METHODS = frozenset({
    "add_", "sub_", "mul_", "div_", "copy_", "fill_", "zero_", "index_put_", "index_add_",
    "index_copy_", "index_fill_", "scatter_", "scatter_add_", "masked_fill_", "masked_scatter_",
    "clamp_", "append", "extend",
})


def _name_heads(names: HeuristicNames) -> List[bytes]:
    """`\\b(?:NAMES)` for the KV_LENGTH_NAMES (lowercase, longest first), as one pattern per
    first three bytes: the literal bytes, then a look-behind for the word boundary before them,
    then the rest of the names (`seq(?<![a-z0-9_]seq)(?:_lens_list|_lens|_len|lens)`). sre
    skips to a literal at memchr speed and tries an alternation of names at every byte: on
    the cann-recipes-infer + vllm-ascend files, 3x faster. Together the patterns match where
    the alternation does."""
    heads: dict = {}
    for name in sorted({n.lower() for n in names.kv_length_names}, key=lambda w: (-len(w), w)):
        heads.setdefault(name[:3], []).append(name[3:])
    out = []
    for first, rests in sorted(heads.items()):
        lit = re.escape(first.encode())
        out.append(lit + rb"(?<![a-z0-9_]" + lit + rb")(?:" + b"|".join(re.escape(r.encode()) for r in rests) + rb")")
    return out


def _write_parts(names: HeuristicNames):
    """The pieces of the KV_LENGTH_NAMES write patterns after a name (`_name_heads`): the gap
    between a name and its store (spaces, line continuations, closing parentheses and
    subscripts, brackets nested up to three deep, across lines); the operators of an
    augmented store; an in-place method call."""
    methods = b"|".join(re.escape(m.encode()) for m in sorted(INPLACE_METHODS))
    inner = rb"[^\[\]]*"
    for _ in range(2):
        inner = rb"(?:[^\[\]]|\[" + inner + rb"\])*"
    gap = rb"(?:\s|\\|\)|\[" + inner + rb"\])*"
    ops = rb"(?:\*\*|//|>>|<<|[-+*/%&|^@])"
    call = rb"\.\s*(?:" + methods + rb")\s*\("
    return gap, ops, call


@lru_cache(maxsize=8)
def kv_length_write_pattern(names: HeuristicNames) -> AnyOf:
    """A KV_LENGTH_NAMES name being written (for the byte pre-filter of the rules that report
    only such writes): `kv_len += 1`, `m.Seq_Lens[i] = x`, `self.kv_len: T = x`,
    `kv_len.add_(1)`, `(kv_len) += 1`. Any case, as `is_kv_length_name` lowercases. Between
    the name and the store: spaces, line continuations, closing parentheses and subscripts
    (brackets nested up to three deep, across lines). Searched over the lowercased bytes
    (LowercasePattern): its only letters are the names' and the methods' (lowercase), the
    rest (`\\s`, `\\b`, the punctuation classes) is the same in any case. One pattern per
    `_name_heads` head."""
    gap, ops, call = _write_parts(names)
    store = rb"(?::[^=\n]*)?" + ops + rb"?=(?!=)"
    return AnyOf(*(LowercasePattern(re.compile(head + rb"\b" + gap + rb"(?:" + store + rb"|" + call + rb")"))
                   for head in _name_heads(names)))


class KvLengthUpdate:
    """A pre-filter word: a KV_LENGTH_NAMES write other than a plain name's `=` (KV401
    reports a plain local's `seq_lens = ...` only inside a per-layer loop): an attribute's
    store (`m.seq_lens = x`, `self. kv_len: T = x`), a subscript's (`kv_len[i] = x`), an
    augmented assignment (`kv_len += 1`, `(kv_len) -= 1`), an in-place method
    (`kv_len.add_(1)`). Any case. Each write kv_length_write_pattern finds is looked at (a
    search from the character after the previous one's start, so that none hides another,
    e.g. in the annotation of `kv_len: int; self.kv_len += 1`); one regex of the three forms
    is 10x slower (no literal to skip to)."""

    flags = 0

    def __init__(self, names: HeuristicNames):
        gap, ops, call = _write_parts(names)
        self.regexes = [re.compile(head + rb"\b(?P<gap>" + gap + rb")(?:(?::[^=\n]*)?"
                                   rb"(?P<op>" + ops + rb")?=(?!=)|(?P<call>" + call + rb"))")
                        for head in _name_heads(names)]  # one per head: see _name_heads
        self.pattern = b"<update>" + b"|".join(r.pattern for r in self.regexes)

    def search(self, data: bytes) -> "Optional[re.Match[bytes]]":
        return self.search_lowered(data, data.lower())

    def search_lowered(self, data: bytes, low: bytes) -> "Optional[re.Match[bytes]]":
        """`search`, given `data.lower()` (the engine's pre-filter makes it once per file)."""
        for regex in self.regexes:
            found = regex.search(low)
            while found is not None:
                if found.group("call") or found.group("op") or b"[" in found.group("gap"):
                    return found
                before = found.start() - 1
                while before >= 0 and low[before] in b" \t\r\n\f\\":
                    before -= 1
                if before >= 0 and low[before] == 0x2E:  # `.`: an attribute
                    return found
                found = regex.search(low, found.start() + 1)
        return None


@lru_cache(maxsize=8)
def kv_length_update_pattern(names: HeuristicNames) -> KvLengthUpdate:
    """KvLengthUpdate for these names (one object per configuration)."""
    return KvLengthUpdate(names)
