"""The byte pre-filter's shortcuts (kvlint/engine.py: words behind shared anchors, words
holding a shorter word left out, a word skipped when a word it holds is absent (a Holding
regex's literal too), what the first level learned taken by the second) give the answers of
the plain definition: any word of a rule in the bytes, and for `rules_for`, a word of each of
its `required_words` groups."""
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvlint.analysis.context import Holding
from kvlint.checks.base import NoCase, Rule
from kvlint.engine import Checker, _NoCaseBytes, build_prefilter
from kvlint.settings import Settings

ALPHABET = b"npu_fsedkvlNPUK"
CODES = ("KV101", "KV102", "KV103", "KV104", "KV105")  # on by default: the checker keeps them
# words that hold each other and share 4-byte substrings, in both cases: every shortcut applies
STEMS = [b"npu_f", b"npu_fused", b"npu_fused_v2", b"npu_kv", b"npu_kv_len", b"kv_len", b"kv_lens", b"KV_Len",
         b"seq_kv_len", b"NPU_FUSED", b"_len", b"fuse", b"sed_", b"npu_q", b"npu_s", b"xnpu_t"]
WORDS = st.sampled_from(STEMS)
DATA = st.lists(st.one_of(st.sampled_from(STEMS), st.binary(max_size=3).map(
    lambda b: bytes(ALPHABET[c % len(ALPHABET)] for c in b))), max_size=6).map(b"".join)


def _word(draw_kind, w):
    if draw_kind == 0:
        return w.decode()
    if draw_kind == 1:
        return NoCase(w.decode())
    if draw_kind == 2:
        return re.compile(re.escape(w) + b"[ek]?")
    return Holding(w[len(w) // 2:], re.compile(re.escape(w) + b"[ek]?"))  # a part of w as its literal


def _holds(word, data: bytes) -> bool:
    if isinstance(word, NoCase):
        return word.lower().encode() in data.lower()
    if isinstance(word, str):
        return word.encode() in data
    return word.search(data) is not None


@st.composite
def rules(draw):
    out = []
    for k in range(draw(st.integers(1, 5))):
        words = tuple(_word(draw(st.integers(0, 3)), draw(WORDS)) for _ in range(draw(st.integers(1, 4))))
        groups = tuple(tuple(_word(draw(st.integers(0, 3)), draw(WORDS)) for _ in range(draw(st.integers(1, 3))))
                       for _ in range(draw(st.integers(0, 2))))
        rule = type(f"R{k}", (Rule,), {"code": CODES[k], "words": lambda self, s, w=words: w,
                                       "required_words": lambda self, s, g=groups: g,
                                       "check_module": lambda self, ctx: ()})
        out.append(rule())
    return out


@settings(max_examples=500, deadline=None)
@given(rs=rules(), data=DATA)
def test_shortcuts_give_the_plain_answers(rs, data):
    checker = Checker(rules=rs)
    assert [r.code for r in checker.rules] == [r.code for r in rs]
    expected = [r.code for r in rs if any(_holds(w, data) for w in r.words(None))
                and all(any(_holds(w, data) for w in g) for g in r.required_words(None))]
    assert [r.code for r in checker.rules_for(data)] == expected
    prefilter = build_prefilter([tuple(_as(w) for w in r.words(None)) for r in rs])
    assert prefilter.search(data) == any(_holds(w, data) for r in rs for w in r.words(None))
    # as check_bytes runs it: rules_for told where the first level stopped (what it knows then)
    found = checker.prefilter.find(data)
    assert (found is not None) == prefilter.search(data)
    if found is not None:
        assert _found(found, data)
        assert [r.code for r in checker.rules_for(data, found=found)] == expected


def _found(word, data: bytes) -> bool:
    if isinstance(word, _NoCaseBytes):
        return word in data.lower()
    return (word in data) if isinstance(word, bytes) else word.search(data) is not None


def _as(word):
    if isinstance(word, NoCase):
        return _NoCaseBytes(word.lower().encode())
    return word.encode() if isinstance(word, str) else word


LITERALS = [_as(_word(k, w)) for w in STEMS for k in (0, 1)]  # every plain and NoCase stem


@settings(max_examples=1000, deadline=None)
@given(chosen=st.sets(st.integers(0, len(LITERALS) - 1), min_size=1), data=DATA)
def test_what_the_first_level_tells_the_second(chosen, data):
    """Prefilter.known_after: when `find` stops at a word, every word it tried before is
    absent, so is a word holding one of those, and the word found and those it holds are
    there; nothing else is decided. The pre-filter's words are some of the words (the others
    stand for words of `required_words` only); every decision is checked against the plain
    answer."""
    prefilter = build_prefilter([[LITERALS[n] for n in sorted(chosen)]])
    order = prefilter.order()
    known = prefilter.known_after(LITERALS)
    assert set(known) == {id(w) for w in order}
    found = prefilter.find(data)
    if found is None:
        assert not any(_found(w, data) for w in order)
        return
    told = known[id(found)]
    for w in LITERALS:
        if id(w) in told:
            assert told[id(w)] == _found(w, data), w
    tried = order[:[id(w) for w in order].index(id(found))]
    assert all(told[id(w)] is False for w in tried)  # the search tried them: all decided
    assert told[id(found)] is True
    for w in LITERALS:  # a word the found one holds is known there (in any case, if NoCase)
        if (w in found.lower()) if isinstance(w, _NoCaseBytes) else (not isinstance(found, _NoCaseBytes) and w in found):
            assert told.get(id(w)) is True, w


@pytest.mark.parametrize("path, text, selected", [
    ("runner.py", "block_table = torch.arange(8)\n", True),
    ("tests/test_runner.py", "block_table = torch.arange(8)\n", False),  # check_module skips tests
    ("test_x.py", "block_tables = torch.zeros(2, 4)\n", False),
    ("tests/test_runner.py", "torch_npu.npu_fused_infer_attention_score(q, k, v, block_table=bt)\n", True),
])
def test_kv301_in_test_files_needs_a_paged_operator(path, text, selected):
    checker = Checker(Settings(select=("KV301",)))
    assert bool(checker.rules_for(text.encode(), path)) is selected
