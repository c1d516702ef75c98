"""`--format text` without colour is printed without rich when it can be (kvlint/report/
text_format.py): the output must be what rich prints, byte for byte."""
import pytest

from kvlint.analysis.findings import Edit, Finding, Fix
from kvlint.report import Report, text_format

TEXTS = ["plain", "block_table[:n] is int64", "x[bold]y[/bold]", "[*]", "[red]", "中文注释 and é", "trail  ",
         "  lead", "emoji 🙂", ":smile:", "a; pass `scale=head_dim ** -0.5`", "[link=x]y", "[#fff]", "[@click]"]


def _report(text: str, fix: bool, unsafe: bool) -> Report:
    f = Finding(f"dir/{text[:4]}.py", 12, 5, 12, 9, "KV101", f"reason {text}", "error",
                Fix(f"use {text}", (Edit((12, 4), (12, 8), "x"),), safe=not unsafe) if fix else None,
                (), f"    call({text})", "")
    report = Report(files=1, unsafe_fixes=unsafe)
    report.findings = [f]
    report.errors = [f"err {text}"]
    return report


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize("fix", [False, True])
@pytest.mark.parametrize("show_source", [False, True])
def test_plain_text_is_what_rich_prints(monkeypatch, text, fix, show_source):
    for unsafe in (False, True):
        report = _report(text, fix, unsafe)
        assert all(text_format._plain(t) for line in text_format._lines(report, show_source, True)
                   for t in line[1::2])
        plain = text_format.render(report, show_source=show_source)
        with monkeypatch.context() as m:
            m.setattr(text_format, "_plain", lambda t: False)  # through rich
            assert text_format.render(report, show_source=show_source) == plain


def test_backslashes_and_tabs_go_through_rich():
    assert not text_format._plain("a\\[b")
    assert not text_format._plain("a\tb")
    assert not text_format._plain("a\x1bb")
