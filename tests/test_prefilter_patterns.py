"""The byte patterns that let KV301/KV401/KV402 skip a file before parsing it: every write the
rules report must match, reads must not (or the pre-filter saves nothing)."""
import pytest

from kvlint.checks.kv301_block_table_not_int32 import BLOCK_TABLE_WRITE
from kvlint.helpers.lengths import kv_length_update_pattern, kv_length_write_pattern
from kvlint.settings import HeuristicNames

WRITE = kv_length_write_pattern(HeuristicNames())
UPDATE = kv_length_update_pattern(HeuristicNames())


@pytest.mark.parametrize("text", [
    "kv_len += 1", "self.kv_len = self.kv_len + 1", "m.seq_lens[i] = x", "seq_lens [0][1] = 2",
    "self.kv_len: int = 3", "kv_len.add_(1)", "kv_len[0].add_(1)", "slot_mapping.copy_ (x)",
    "KV_LEN = 2", "attn_metadata.actual_seq_lengths_kv //= 2", "context_lens.append(3)",
    "meta.Seq_Lens += 1", "kv_len[x[1]] = 0", "(kv_len) += 1", "kv_len[\n    i] = 0", "kv_len \\\n    += 1",
])
def test_kv_length_writes_match(text):
    assert WRITE.search(text.encode())


@pytest.mark.parametrize("text", [
    "x = kv_len + 1", "if kv_len == 1:", "my_kv_len = 1", "kv_len_total = 3", "f(kv_len)",
    "kv_len.clone()",
])
def test_kv_length_reads_do_not_match(text):
    assert not WRITE.search(text.encode())
    assert not UPDATE.search(text.encode())


@pytest.mark.parametrize("text, hit", [
    ("kv_len += 1", True), ("self.kv_len = self.kv_len + 1", True), ("m.seq_lens[i] = x", True),
    ("seq_lens [0][1] = 2", True), ("self.kv_len: int = 3", True), ("kv_len.add_(1)", True),
    ("kv_len[0].add_(1)", True), ("slot_mapping.copy_ (x)", True), ("attn_metadata.actual_seq_lengths_kv //= 2", True),
    ("context_lens.append(3)", True), ("meta.Seq_Lens += 1", True), ("kv_len[x[1]] = 0", True),
    ("(kv_len) += 1", True), ("kv_len[\n    i] = 0", True), ("kv_len \\\n    += 1", True),
    ("self . kv_len = 1", True), ("self.\\\n    kv_len = 1", True), ("(self.seq_lens) = x", True),
    ("kv_len[0]: int = 1", True), ("x = kv_len[0] = 1", True), ("kv_len: int; self.kv_len += 1", True),
    ("seq_lens: T = 0; kv_len[0] = 1", True), ("kv_len = seq_lens.add_(1)", True),
    # a plain name's store: KV401 reports it only inside a per-layer loop
    ("kv_len = 1", False), ("KV_LEN = 2", False), ("seq_lens: List[int] = []", False), ("(kv_len) = 3", False),
    ("my.kv_len_total = 1", False),
])
def test_kv_length_updates(text, hit):
    """Every write KV401 reports outside a per-layer loop matches (a plain local's store
    only counts inside one)."""
    assert bool(UPDATE.search(text.encode())) == hit
    assert WRITE.search(text.encode()) or not hit


@pytest.mark.parametrize("text, hit", [
    ("block_table = x", True), ("self.block_tables: T = x", True), ('md["block_table"] = x', True),
    ("d['block_tables']=x", True), ("if block_table == x:", False), ("block_table.to(x)", False),
    ("my_block_table = 1", False),
])
def test_block_table_writes(text, hit):
    assert bool(BLOCK_TABLE_WRITE.search(text.encode())) is hit


@pytest.mark.parametrize("text, hit", [
    ("class DecoderLayer(nn.Module):", True), ("class Qwen3MoeAttention:", True),
    ("class TransformerBlockV2(Base):", True), ("class  MyAttn:", True),
    ("class Runner:", False), ("layer = Layer()", False), ("# the Attention class", False),
])
def test_layer_class_statement(text, hit):
    from kvlint.analysis.context import layer_class_pattern

    assert bool(layer_class_pattern(HeuristicNames()).search(text.encode())) is hit


@pytest.mark.parametrize("text, hit", [
    ("for layer in self.layers:", True), ("for i, layer in enumerate(self.model.layers):", True),
    ("for blk in self.blocks[1:]:", True), ("for block in h:", True),
    ("h = x + 1", False), ("self.layers = nn.ModuleList()", False), ("for x in items:", False),
    # a layer list subscripted, by attribute or as a plain name (a `for i in range(...)` body)
    ("layer = self.layers[i]", True), ("layer = layers[i]", True), ("layers [i](x)", True),
    ("self.blocks \\\n    [i]", True), ("h[i]", True),
    ("mylayers[i]", False), ("layers_cfg[i]", False), ("layers = self.model.layers", False),
])
def test_per_layer_loop_header(text, hit):
    from kvlint.analysis.context import layer_loop_pattern

    assert bool(layer_loop_pattern(HeuristicNames()).search(text.encode())) is hit


@pytest.mark.parametrize("text, hit", [
    ("attn_mask *= -10000", True), ("swa_mask  += bias", True), ("mask //= 2", True),
    ("attn_mask.masked_fill_(m, 0)", True), ("MASK.fill_ (1)", True), ("self.mask.mul_(2)", True),
    ("masks += [m]", False), ("attn_mask = attn_mask * 2", False), ("mask.masked_fill(m, 0)", False),
    ("if attn_mask == 1:", False),
])
def test_kv224_in_place_mask_change_pattern(text, hit):
    from kvlint.checks.kv224_getter_mask_mutated import MUTATION_PATTERN
    assert bool(MUTATION_PATTERN.search(text.encode())) is hit


@pytest.mark.parametrize("text", ["attn_mask **= 2", "attn_mask \\\n    *= 2", "mask . fill_(0)", "Mask |= m"])
def test_kv224_pattern_spacing_and_every_augmented_operator(text):
    from kvlint.checks.kv224_getter_mask_mutated import MUTATION_PATTERN
    assert MUTATION_PATTERN.search(text.encode())


@pytest.mark.parametrize("module, pattern, text", [
    ("kv109_head_dim_divided_twice", "LAST_DIM_PATTERN", "q.shape[ -1 ]"),
    ("kv109_head_dim_divided_twice", "LAST_DIM_PATTERN", "q.size(\n-1)"),
    ("kv223_mask_cast_to_int", "INT_CAST_PATTERN", "m.byte ()"),
    ("kv223_mask_cast_to_int", "INT_CAST_PATTERN", "m.to(torch.uint8)"),
])
def test_new_rule_patterns_allow_spacing(module, pattern, text):
    import importlib
    assert getattr(importlib.import_module(f"kvlint.checks.{module}"), pattern).search(text.encode())


def test_fast_prefilter_patterns_answer_as_the_plain_regexes():
    """The pre-filter patterns written for speed (LowercasePattern, AnyOf, the look-behind
    after the literal, KV223's groups) find what the plain regexes they replace find."""
    import random
    import re

    from kvlint.analysis.context import layer_loop_pattern
    from kvlint.checks.kv223_mask_cast_to_int import INT_CAST_PATTERN, PREFILTER_GROUPS
    from kvlint.checks.kv224_getter_mask_mutated import _INPLACE_NAMES, MUTATION_PATTERN
    from kvlint.helpers.lengths import INPLACE_METHODS

    names = HeuristicNames()
    words = b"|".join(re.escape(w.encode()) for w in sorted(set(names.kv_length_names), key=len, reverse=True))
    methods = b"|".join(re.escape(m.encode()) for m in sorted(INPLACE_METHODS))
    inner = rb"[^\[\]]*"
    for _ in range(2):
        inner = rb"(?:[^\[\]]|\[" + inner + rb"\])*"
    write = re.compile(rb"\b(?:" + words + rb")\b(?:\s|\\|\)|\[" + inner + rb"\])*(?:(?::[^=\n]*)?"
                       rb"(?:\*\*|//|>>|<<|[-+*/%&|^@])?=(?!=)|\.\s*(?:" + methods + rb")\s*\()", re.IGNORECASE)
    loop_words = b"|".join(re.escape(w.encode()) for w in names.layer_loop_words)
    loop = re.compile(rb"for\b(?<![A-Za-z0-9_]for)(?>[^:]*?\bin\b)[^:]*?\b(?:" + loop_words
                      + rb")\b|\b(?:" + loop_words + rb")(?:\s|\\)*\[")
    table = re.compile(rb"(?<![A-Za-z0-9_])block_tables?(?:[\"']\s*\])?(?:\s|\\|\))*(?::[^=\n]*)?=(?!=)")
    mask = re.compile(rb"(?i)mask[\s\\]*(?:\*\*|//|>>|<<|[*+/%@&|^-])=|mask[\s\\]*\.[\s\\]*(?-i:"
                      + _INPLACE_NAMES.encode() + rb")[\s\\]*\(")

    def groups(data):
        return all(any((w.encode() in data) if isinstance(w, str) else w.search(data) for w in g)
                   for g in PREFILTER_GROUPS)

    pairs = [(write.search, kv_length_write_pattern(names).search), (loop.search, layer_loop_pattern(names).search),
             (table.search, BLOCK_TABLE_WRITE.search), (mask.search, MUTATION_PATTERN.search),
             (INT_CAST_PATTERN.search, groups)]
    tokens = [b"kv_len", b"KV_Len", b"Seq_Lens", b"block_table", b"block_tables", b"xblock_table", b"_", b"for",
              b" in ", b"layers", b".layers[", b"xlayers", b"layers [", b":", b" ", b"\\\n", b"(", b")", b"[", b"]", b"=", b"+=", b"==",
              b".", b"add_", b"ADD_", b"fill_", b"mask", b"MASK", b"\"", b"'", b"a", b"*=", b"int8", b"byte",
              b"char", b".to"]
    rng = random.Random(7)
    for _ in range(20000):
        data = b"".join(rng.choice(tokens) for _ in range(rng.randint(1, 9)))
        for old, new in pairs:
            assert (old(data) is None) == (not new(data)), data


@pytest.mark.parametrize("text, hit", [
    ("x += 1", True), ("x+=1", True), ("(x) -= y", True), ("x \\\n    *= 2", True), ("λ += 1", True),
    ("x1 /= 3", True), ("self . x += 1", True), ("for i in r: q += i", True),
    ("a.b += 1", False), ("a[0] += 1", False), ("a //= 2", False), ("a **= 2", False), ("x != 3", False),
    ("a <= b", False), ("1 += 2", False), ("f(x)[0] *= 2", False),
])
def test_kv403_plain_name_augmented_store(text, hit):
    """KV403 reports `name += ...` on a plain name only (its pre-filter's last group)."""
    from kvlint.checks.kv403_tensor_param_augmented_in_layer import AUGMENTED_NAME_STORE

    assert (AUGMENTED_NAME_STORE.search(text.encode()) is not None) == hit


@pytest.mark.parametrize("text, hit", [
    ("def forward(self, x):\n    x += 1\n", True),
    ("def forward(self, hidden):\n    out = hidden\n    out += 1\n", False),  # a local
    ("def f(a=')', x=2):\n    x *= 2\n", True),              # a string with a bracket in a default
    ("def f(a, # x is not a parameter\n      b):\n    x += 1\n", False),
    ("def f(a=(1, [2]), *, x: 'T' = {}):\n    x -= 1\n", True),
    ("def f[T: (int, str)](x: T):\n    x += 1\n", True),     # type parameters (3.12)
    ("async def f(\n    self,\n    x,\n):\n    x /= 2\n", True),
    ("def función(x):\n    x += 1\n", True),                  # a non-ASCII function name
    ("def \\\n    f(x):\n    x += 1\n", True),
    ("def f(a=\"\"\"(\"\"\", x=1):\n    x += 1\n", True),      # unreadable signature: admitted
    ("# the def keyword is (x)\nx += 1\n", False),            # prose, not a signature
    ("def f(self):\n    pass\nx = 0\nx += 1\n", False),
])
def test_kv403_parameter_augmented_store(text, hit):
    """KV403 reports an augmented store of a parameter of the enclosing function: its
    pre-filter admits a file only if the stored name is in some `def` signature."""
    from kvlint.checks.kv403_tensor_param_augmented_in_layer import AUGMENTED_PARAMETER_STORE

    assert (AUGMENTED_PARAMETER_STORE.search(text.encode()) is not None) == hit


def test_layer_loop_subscripts_hold_their_word():
    """A loop word's subscript pattern is a Holding: every match holds the word, so the
    engine may search it only where the word is (a one-letter word, `h`, keeps a plain
    regex: it is everywhere)."""
    import dataclasses
    import random

    from kvlint.analysis.context import Holding, layer_loop_pattern

    names = dataclasses.replace(HeuristicNames(), layer_loop_words=HeuristicNames().layer_loop_words + ("stages",))
    parts = layer_loop_pattern(names).parts
    held = [p for p in parts if isinstance(p, Holding)]
    assert sorted(p.literal for p in held) == sorted(w.encode() for w in names.layer_loop_words if len(w) > 1)
    tokens = [b"layers", b"decoder_layers", b"layer_list", b"blocks", b"stages", b"h", b"x", b"_", b".", b" ",
              b"\\\n", b"[", b"]", b"(", b"self", b"for", b" in ", b":"]
    rng = random.Random(11)
    for _ in range(5000):
        data = b"".join(rng.choice(tokens) for _ in range(rng.randint(1, 8)))
        for p in held:
            found = p.regex.search(data)
            assert found is None or p.literal in found.group(), (p.literal, data)


def test_loop_header_finds_what_its_regex_finds():
    """LoopHeader (the `for ... in ...<loop word>` part of PER_LAYER_LOOP's pre-filter word)
    answers as the regex it stands for: stretches to a `:`, the first `in`, word boundaries
    at the ends of a stretch, several `for`s in one stretch, a header over lines."""
    import dataclasses
    import random

    from kvlint.analysis.context import LoopHeader, layer_loop_pattern

    names = dataclasses.replace(HeuristicNames(), layer_loop_words=HeuristicNames().layer_loop_words + ("stages",))
    header = [p for p in layer_loop_pattern(names).parts if isinstance(p, LoopHeader)][0]
    tokens = [b"for", b"for ", b" in ", b"in", b"int", b"in:", b"layers", b"stages", b"h", b"_h", b"xlayers", b":",
              b" ", b"\n", b"(", b")", b"self.", b"blocks", b"\xc3\xa9", b"decoder_layers", b"layer_list", b"a", b"_",
              b"forin", b"1", b"\\\n", b"#", b"enumerate("]
    rng = random.Random(5)
    for _ in range(30000):
        data = b"".join(rng.choice(tokens) for _ in range(rng.randint(1, 12)))
        assert (header.search(data) is None) == (header.regex.search(data) is None), data
    for text, hit in [(b"for layer in self.layers:", True), (b"for x in y: layers", False),
                      (b"# for the model\nfor i in range(3):\n    h[i]", False), (b"for a, b in zip(\n  self.h, c):", True),
                      (b"for layers in x:", False), (b"before in layers", False), (b"for i in xlayers, h_:", False)]:
        assert (header.search(text) is not None) is hit, text
        assert (header.regex.search(text) is not None) is hit, text


def _signature_identifiers(kv403, data):
    """The identifiers of every signature of `data` (kv403.signature_spans), or None where
    one cannot be read: what the pre-filter's store must agree with."""
    out = set()
    for span in kv403.signature_spans(data):
        if span is None:
            return None
        out.update(kv403._IDENTIFIER.findall(data, *span))
    return out


def test_kv403_signature_shortcuts_answer_as_the_full_reading(monkeypatch):
    """signature_spans reads a plain signature (no bracket, string or comment inside) in one
    step, and AugmentedParameterStore reads a signature's identifiers only where a stored
    name is in its text: both give what the full reading of every signature gives."""
    import random
    import re

    import kvlint.checks.kv403_tensor_param_augmented_in_layer as kv403

    tokens = [b"def ", b"def", b"async ", b"f", b"g", b"(", b")", b"x", b"y", b"xy", b" += 1", b"\n", b"x += 2\n",
              b"y *= 3\n", b"#", b"'", b'"', b'"""', b"[", b"]", b"{", b"}", b":", b"=", b",", b"\\\n", b" ", b"self",
              b"\v", b"\t", b"-> T", b"def f", b"\v(", b" (", b"\\\n(", b"(x)", b"(x, y)", b"(x #y\n)", b"#y"]
    rng = random.Random(13)
    cases = [b"".join(rng.choice(tokens) for _ in range(rng.randint(1, 14))) for _ in range(20000)]
    fast = [(_signature_identifiers(kv403, d), kv403.AUGMENTED_PARAMETER_STORE.search(d) is None) for d in cases]
    monkeypatch.setattr(kv403, "_PLAIN_SIGNATURE", re.compile(rb"(?!)"))  # every signature read in full
    for data, (identifiers, none) in zip(cases, fast):
        full = _signature_identifiers(kv403, data)
        assert identifiers == full, data
        names = kv403.AUGMENTED_NAME_STORE.names(data)
        assert none is not (bool(names) and (full is None or bool(names & full))), data
