"""The byte pre-filter drops nothing: for generated modules, every fixture, and a run with
configured heuristic names, the findings with the pre-filter equal the findings without it
(`Checker.check_bytes(..., prefilter=False)` parses every file and runs every enabled rule).

KV000 is left out of the comparison: a file the pre-filter skips is not parsed, so it gets no
parse error, by design (README: files that mention no operator are not read further).
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_property import calls, modules, values

from kvlint.engine import Checker
from kvlint.settings import HeuristicNames, Settings

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = HeuristicNames()
# names a project adds through [tool.kvlint.heuristics]: a kv length, a layer class word, a loop word
CONFIGURED = dataclasses.replace(
    DEFAULT, kv_length_names=DEFAULT.kv_length_names + ("tokens_done", "ctx_lens"),
    layer_class_words=DEFAULT.layer_class_words + ("Stage",),
    layer_loop_words=DEFAULT.layer_loop_words + ("stages",))
CHECKERS = {
    "default": Checker(Settings(extend_select=("ALL",))),
    "configured": Checker(Settings(extend_select=("ALL",), names=CONFIGURED)),
}
PROPERTY = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def findings(checker: Checker, data: bytes, prefilter: bool, path: str = "gen.py"):
    result = checker.check_bytes(path, data, prefilter=prefilter)
    assert result.errors == [], result.errors
    return [(f.line, f.column, f.code, f.message) for f in result.findings if f.code != "KV000"]


def assert_same(checker: Checker, data: bytes, path: str = "gen.py"):
    assert findings(checker, data, True, path) == findings(checker, data, False, path)


TEST_PATH = "tests/test_gen.py"  # TEST_DOUBLES: rules may report less there, and so skip more


def _cases(word: str):
    return st.sampled_from([word, word.upper(), word.title(), word[:1].upper() + word[1:]])


kv_names = st.sampled_from(sorted(CONFIGURED.kv_length_names)).flatmap(_cases)
subscripts = st.sampled_from(["", "[0]", "[i][j]", "[x[1]]", "[\n    i]", "[a[b[c]]]", "[:, -1]"])
stores = st.sampled_from([" = {}", " += {}", " -= {}", ": int = {}", ".add_({})", ".copy_({})",
                          " .fill_({})", ".append({})", " //= {}"])


@st.composite
def length_writes(draw, indent="        "):
    base = draw(st.sampled_from(["", "self.", "meta.", "attn_metadata.", "self.meta."]))
    target = f"{base}{draw(kv_names)}{draw(subscripts)}"
    if draw(st.booleans()) and not base:
        target = f"({target})"
    store = draw(stores)
    if store.startswith(": ") and ("[" in target or "(" in target):
        store = " = {}"  # an annotated target is a plain name or attribute
    return indent + target + store.format(draw(values()))


@st.composite
def prefilter_statements(draw, indent="        "):
    kind = draw(st.integers(0, 6))
    if kind <= 2:
        return draw(length_writes(indent))
    if kind == 3:
        loop = draw(st.sampled_from(["self.layers", "self.stages", "self.model.blocks[1:]", "h",
                                     "(\n            self.layers)", "enumerate(self.layers)", "range(3)"]))
        return f"{indent}for layer in {loop}:\n{draw(length_writes(indent + '    '))}"
    if kind == 4:
        code = draw(st.sampled_from(["KV101", "KV4", "KV900", "E501", ""]))
        comment = draw(st.sampled_from(["# noqa", "# NoQA", "# NOQA", "#noqa"]))
        return f"{indent}out = {draw(calls())}  {comment}{': ' + code if code else ''}"
    if kind == 5:
        target = draw(st.sampled_from(["block_table", "self.block_tables", "md['block_table']", "(block_table)"]))
        return f"{indent}{target} = torch.tensor([[0, 1]], dtype=torch.int64)"
    return f"{indent}{draw(st.sampled_from(['residual', 'x', 'self.mask', 'mask']))} += {draw(values())}"


@st.composite
def prefilter_modules(draw):
    header = draw(st.lists(st.sampled_from(["import torch", "import torch_npu", "import torchair as tng"]),
                           unique=True))
    cls = draw(st.sampled_from(["Attention", "DecoderLayer", "PipelineStage", "Helper", "MetadataBuilder",
                                "\\\n    QwenAttention", "Model"]))
    body = draw(st.lists(prefilter_statements(), min_size=1, max_size=6))
    lines = header + [f"class {cls}:",
                      "    def forward(self, q, k, v, kv_len, residual, mask, is_prefill, i, j, a, b, c, x):"]
    lines += body + ["        return q"]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("name", sorted(CHECKERS))
@PROPERTY
@given(text=st.one_of(prefilter_modules(), modules()))
def test_generated_modules(name, text):
    assert_same(CHECKERS[name], text.encode())
    assert_same(CHECKERS[name], text.encode(), TEST_PATH)


FIXTURES = sorted(p for p in (ROOT / "fixtures").rglob("*.py"))


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_fixture(path):
    data = path.read_bytes()
    for checker in CHECKERS.values():
        assert_same(checker, data)
        assert_same(checker, data, TEST_PATH)


@pytest.mark.parametrize("text, code", [
    ("class DecoderLayer:\n    def forward(self, meta):\n        meta.Seq_Lens += 1\n", "KV401"),
    ("class PipelineStage:\n    def forward(self, m):\n        m.tokens_done += 1\n", "KV401"),
    ("import torch_npu\nx = 1  # NoQA: KV101\n", "KV900"),
])
def test_the_measured_misses_are_reported(text, code):
    checker = CHECKERS["configured"]
    assert code in [c for _, _, c, _ in findings(checker, text.encode(), True)]
    assert_same(checker, text.encode())


def test_a_rule_without_words_runs_on_every_parsed_file():
    from kvlint.checks.base import Rule

    class Everywhere(Rule):
        code = "KV999"

        def check_module(self, ctx):
            yield ctx.finding(self.code, ctx.index.tree.body[0], "seen")

    checker = Checker(Settings(), rules=[Everywhere()])
    result = checker.check_bytes("plain.py", b"x = 1\n")
    assert [f.code for f in result.findings] == ["KV999"]
