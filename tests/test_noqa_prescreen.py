"""The `# noqa` pre-screen (kvlint.noqa.may_suppress) answers what tokenizing answers.

A file with findings is tokenized (NoqaIndex) only when a suppression comment could hide one
of them. Each source below is checked twice, with the pre-screen and with a pre-screen that
always says yes, and the findings must be the same; the sources where the pre-screen must let
the tokenizer decide (a `noqa` inside a string on the finding's line, other line breaks) are
shown to reach it."""
import textwrap

import pytest

import kvlint.engine as engine
from kvlint.config import load_settings
from kvlint.engine import Checker
from kvlint.noqa import may_suppress
from kvlint.source import decode

CALL = "    out, _ = torch_npu.npu_fused_infer_attention_score(q, k, v, num_heads=8, input_layout='BSH')"
HEAD = "import torch_npu\n\n\ndef f(q, k, v):\n"
TAIL = "\n    return out\n"

SOURCES = {
    "no noqa": HEAD + CALL + TAIL,
    "noqa comment on the finding's line": HEAD + CALL + "  # noqa: KV103" + TAIL,
    "blanket noqa on the finding's line": HEAD + CALL + "  # NOQA" + TAIL,
    "noqa of another code on the finding's line": HEAD + CALL + "  # noqa: KV101" + TAIL,
    "noqa on another line only": HEAD + "    x = 1  # noqa: E501\n" + CALL + TAIL,
    "noqa in a string on the finding's line": HEAD + CALL[:-1] + ", x='# noqa')" + TAIL,
    "file-level noqa": "# kvlint: noqa: KV103\n" + HEAD + CALL + TAIL,
    "file-level noqa in a string": "x = '# kvlint: noqa'\n" + HEAD + CALL + TAIL,
    "form feed before the call": HEAD + "    x = 1\f\n" + CALL + "  # noqa: KV103" + TAIL,
    "file separator in a string": HEAD + "    x = 'a\x1cb'  # noqa\n" + CALL + TAIL,
    "windows line ends": (HEAD + CALL + "  # noqa: KV103" + TAIL).replace("\n", "\r\n"),
}


def _check(text: str):
    checker = Checker(load_settings(None))
    data = text.encode()
    source = decode("m.py", data)
    result = checker.check_source(source, list(checker.rules))
    return [(f.code, f.line, f.column, f.message) for f in result.findings]


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_the_prescreen_changes_no_finding(name, monkeypatch):
    text = SOURCES[name]
    screened = _check(text)
    monkeypatch.setattr(engine, "may_suppress", lambda source, findings: True)
    assert _check(text) == screened


def test_a_suppressed_finding_stays_suppressed():
    assert "KV103" in {c for c, *_ in _check(SOURCES["no noqa"])}
    for name in ("noqa comment on the finding's line", "blanket noqa on the finding's line", "file-level noqa",
                 "windows line ends"):
        assert "KV103" not in {c for c, *_ in _check(SOURCES[name])}, name
    for name in ("noqa of another code on the finding's line", "noqa on another line only",
                 "noqa in a string on the finding's line", "file-level noqa in a string"):
        assert "KV103" in {c for c, *_ in _check(SOURCES[name])}, name


def _kv103_findings(text):
    checker = Checker(load_settings(None))
    source = decode("m.py", text.encode())
    found = checker.check_source(source, list(checker.rules)).findings
    return source, [f for f in found if f.code == "KV103"]


@pytest.mark.parametrize("name, tokenized", [
    ("no noqa", False),
    ("noqa on another line only", False),
    ("noqa comment on the finding's line", True),
    ("noqa in a string on the finding's line", True),  # only the tokenizer tells it is a string
    ("file-level noqa in a string", True),
    ("form feed before the call", True),  # str.splitlines would number the lines otherwise
    ("file separator in a string", True),
])
def test_which_files_are_tokenized(name, tokenized, monkeypatch):
    monkeypatch.setattr(engine, "may_suppress", lambda source, findings: False)  # see every finding
    source, findings = _kv103_findings(SOURCES[name])
    assert findings
    assert may_suppress(source, findings) is tokenized


def test_a_noqa_line_of_a_multi_line_statement_counts():
    text = HEAD + textwrap.indent(textwrap.dedent("""\
        out, _ = torch_npu.npu_fused_infer_attention_score(  # noqa: KV103
            q, k, v, num_heads=8, input_layout='BSH')"""), "    ") + TAIL
    assert "KV103" not in {c for c, *_ in _check(text)}
