"""Property tests. Whatever the input, the engine returns a result: no exception, no
internal error in a rule, findings inside the file, the same findings twice.

Sources are generated from a small grammar of the code the rules look at (operator calls
reached through the namespaces and aliases the resolver knows, with catalog keywords, masks,
block tables, kv lengths, `**kwargs` dicts, layer classes, per-layer loops, prefill/decode
branches), and random bytes are fed behind an operator name so they reach the decoder and
the parser instead of being dropped by the pre-filter.
"""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kvlint.catalog import load_catalog
from kvlint.engine import Checker
from kvlint.settings import Settings
from kvlint.source import SourceFile

CHECKER = Checker(Settings(select=("ALL",)))
CATALOG = load_catalog()
OPERATORS = sorted(CATALOG.operator_names())
KEYWORDS = sorted({p.name for op in CATALOG.operators for p in op.params})
NAMES = ["q", "k", "v", "mask", "atten_mask", "block_table", "block_tables", "kv_len", "seq_lens",
         "actual_seq_lengths_kv", "slot_mapping", "kw", "scale", "x", "self.mask", "self.kv_len",
         "attn_metadata.block_tables", "self.fa_ops"]
SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])

names = st.sampled_from(NAMES)
ints = st.sampled_from(["0", "1", "2", "3", "4", "-1", "2048", "128", "65535", "True", "None"])
dtypes = st.sampled_from(["torch.int32", "torch.int64", "torch.long", "torch.bool", "torch.float16",
                          "torch.int8", "torch.uint8", "torch.float32"])


@st.composite
def values(draw, depth=0):
    choices = [
        names, ints, st.sampled_from(["0.125", "1.0 / 8 ** 0.5", "'BNSD'", "'TND'", "'BSH'", "[1, 2, 3]"]),
        st.builds("torch.ones(2048, 2048, dtype={}).triu(1)".format, dtypes),
        st.builds("torch.tensor([[0, 1]], dtype={})".format, dtypes),
        st.builds("{}.to({})".format, names, dtypes),
        st.builds("{}.int()".format, names), st.builds("{}.long()".format, names),
        st.builds("{}.bool()".format, names), st.builds("{}.float()".format, names),
        st.builds("torch.full((2048, 2048), float('-inf'))".format),
    ]
    if depth < 2:
        inner = values(depth + 1)
        choices += [st.builds("{} if is_prefill else {}".format, inner, inner),
                    st.builds("{} + {}".format, inner, inner),
                    st.builds("self._build({})".format, inner)]
    return draw(st.one_of(*choices))


@st.composite
def callees(draw):
    op = draw(st.sampled_from(OPERATORS))
    return draw(st.sampled_from([
        f"torch_npu.{op}", f"torch.ops.npu.{op}", f"torch.ops.npu.{op}.default", f"torch_npu.{op}.out",
        f"fa_ops.{op}", f"self.fa_ops.{op}", f"tng.ops.{op}", f"torch_npu.atb.{op}", "fa", op,
        f"DeviceOperator.{op}", f"torch.ops.npu._{op}_get_max_workspace",
    ]))


@st.composite
def calls(draw):
    callee = draw(callees())
    positional = draw(st.lists(values(), max_size=4))
    keywords = draw(st.lists(st.tuples(st.sampled_from(KEYWORDS + ["bogus_kw"]), values()), max_size=6,
                             unique_by=lambda kv: kv[0]))
    parts = positional + [f"{k}={v}" for k, v in keywords]
    if draw(st.booleans()):
        parts.append("**kw")
    if draw(st.booleans()):
        parts.insert(0, "*args")
    return f"{callee}({', '.join(parts)})"


@st.composite
def statements(draw, indent="        "):
    kind = draw(st.integers(0, 9))
    if kind == 0:
        return f"{indent}{draw(names)} = {draw(values())}"
    if kind == 1:
        return f"{indent}{draw(names)} += {draw(values())}"
    if kind == 2:
        return f"{indent}{draw(names)}.{draw(st.sampled_from(['add_', 'copy_', 'fill_', 'append']))}({draw(values())})"
    if kind == 3:
        kv = draw(st.lists(st.tuples(st.sampled_from(KEYWORDS), values()), max_size=4))
        return f"{indent}kw = {{{', '.join(f'{k!r}: {v}' for k, v in kv)}}}"
    if kind == 4:
        return f"{indent}kw[{draw(st.sampled_from(KEYWORDS))!r}] = {draw(values())}"
    if kind == 5:
        return f"{indent}if is_prefill:\n{indent}    out = {draw(calls())}\n{indent}else:\n{indent}    out = {draw(calls())}"
    if kind == 6:
        return f"{indent}for layer in self.layers:\n{indent}    {draw(names)} = {draw(values())}\n" \
               f"{indent}    out = {draw(calls())}"
    if kind == 7:
        return f"{indent}out, lse = {draw(calls())}"
    if kind == 8:
        return f"{indent}fa = {draw(callees())}"
    return f"{indent}out = {draw(calls())}"


@st.composite
def modules(draw):
    header = ["import torch", "import torch_npu", "import torchair as tng",
              "from torch_npu import npu_fused_infer_attention_score as fa"]
    cls = draw(st.sampled_from(["Attention", "DecoderLayer", "MLAAttention", "Helper", "MetadataBuilder"]))
    body = draw(st.lists(statements(), min_size=1, max_size=8))
    init = draw(st.lists(statements(), max_size=3))
    module_level = draw(st.lists(statements(indent=""), max_size=3))
    lines = header + ["fa_ops = torch.ops.npu"] + module_level + [
        f"class {cls}:", "    def __init__(self):", "        self.fa_ops = torch.ops.npu"] + init + [
        "    def _build(self, x):", "        return x.to(torch.int64)",
        f"    def {draw(st.sampled_from(['forward', 'prefill', 'decode', 'forward_decode']))}(self, q, k, v, kv_len, is_prefill, *args, **kw):"
    ] + body + ["        return out"]
    return "\n".join(lines) + "\n"


def check_text(text: str):
    data = text.encode()
    return CHECKER.check_source(SourceFile("gen.py", data, text, "utf-8"))


def assert_sane(result, text: str):
    assert result.errors == [], result.errors
    n_lines = max(1, len(text.splitlines()))
    for f in result.findings:
        assert 1 <= f.line <= f.end_line <= n_lines + 1, f
        assert f.column >= 1 and f.end_column >= 1
        if f.fix is not None:
            for e in f.fix.edits:
                assert 1 <= e.start[0] <= e.end[0] <= n_lines + 1 and e.start[1] >= 0


def findings_of(result):
    return [(f.line, f.column, f.end_line, f.end_column, f.code, f.message, repr(f.fix)) for f in result.findings]


@SETTINGS
@given(modules())
def test_generated_modules_never_raise_and_are_deterministic(text):
    first = check_text(text)
    assert_sane(first, text)
    assert findings_of(check_text(text)) == findings_of(first)


@SETTINGS
@given(modules(), st.integers(min_value=0))
def test_truncated_modules_never_raise(text, cut):
    text = text[: cut % (len(text) + 1)]
    result = CHECKER.check_bytes("gen.py", text.encode())
    assert_sane(result, text)


@SETTINGS
@given(st.binary(max_size=2000), st.sampled_from(OPERATORS))
def test_random_bytes_never_raise(data, op):
    for blob in (data, f"torch_npu.{op}(".encode() + data, b"\xef\xbb\xbf" + f"{op}\n".encode() + data,
                 b"# coding: latin-1\n" + op.encode() + data):
        result = CHECKER.check_bytes("blob.py", blob)
        assert result.errors == []
        assert result.checked or all(f.code == "KV000" for f in result.findings)  # unread: only KV000


@SETTINGS
@given(st.text(max_size=400), st.sampled_from(OPERATORS))
def test_random_text_never_raises(text, op):
    text = f"import torch_npu\ntorch_npu.{op}(q)\n" + text
    result = CHECKER.check_bytes("text.py", text.encode("utf-8", "surrogatepass"))
    assert result.errors == []
