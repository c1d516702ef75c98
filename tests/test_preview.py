"""Stable and preview rules and heuristic branches: the catalog fields, `--preview`,
`preview = true`, `kvlint rule`, and the branch severity."""
import dataclasses
import json
import textwrap

import pytest

from kvlint.catalog import Catalog, load_catalog
from kvlint.cli import main
from kvlint.config import ConfigError, load_settings
from kvlint.engine import Checker
from kvlint.settings import Settings
from kvlint.testing import FIXTURES

KV150_BAD = FIXTURES / "KV150" / "bad.py"
KV221_BAD = FIXTURES / "KV221" / "bad.py"


def kv150_lines(settings: Settings):
    result = Checker(settings).check_path(str(KV150_BAD))
    return {f.line: f for f in result.findings if f.code == "KV150"}


def test_preview_branch_runs_only_with_preview():
    stable = kv150_lines(Settings())
    preview = kv150_lines(Settings(preview=True))
    assert 36 in stable and 36 in preview  # PER_CALL_SCALE: stable
    assert 39 not in stable and 39 in preview  # PER_CALL_MASK: preview
    assert set(stable) == set(preview) - {39}


def test_branch_severity_applies_and_config_severity_wins():
    assert kv150_lines(Settings())[36].severity == "warning"
    assert kv150_lines(Settings(severity={"KV150": "error"}))[36].severity == "error"


def test_a_preview_rule_is_off_without_preview_however_selected():
    catalog = Catalog()
    catalog.rules["KV221"] = dataclasses.replace(catalog.rules["KV221"], preview=True)

    def codes(settings):
        return {f.code for f in Checker(settings, catalog).check_path(str(KV221_BAD)).findings}

    assert "KV221" not in codes(Settings())
    assert "KV221" not in codes(Settings(select=("KV221",)))
    assert "KV221" in codes(Settings(select=("KV221",), preview=True))
    assert "KV221" in codes(Settings(preview=True))


def test_catalog_preview_fields_are_booleans_and_branches_named():
    for info in load_catalog().rules.values():
        assert isinstance(info.preview, bool)
        for name, branch in info.branches.items():
            assert name == branch.name and branch.summary and branch.severity in ("error", "warning", "info")
            assert isinstance(branch.preview, bool)


def test_preview_config_key_and_flag(tmp_path, capsys):
    cfg = tmp_path / "pyproject.toml"
    cfg.write_text("[tool.kvlint]\npreview = true\n")
    assert load_settings(str(cfg)).preview is True
    cfg.write_text("[tool.kvlint]\npreview = \"yes\"\n")
    with pytest.raises(ConfigError, match="preview"):
        load_settings(str(cfg))
    target = tmp_path / "m.py"
    target.write_text(KV150_BAD.read_text())
    for extra, present in (([], False), (["--preview"], True)):
        code = main(["check", "--isolated", "--no-cache", "--format", "json", "--select", "KV150", *extra, str(target)])
        assert code == 1
        lines = {f["line"] for f in json.loads(capsys.readouterr().out)["findings"]}
        assert (39 in lines) is present
    cfg.write_text("[tool.kvlint]\npreview = true\n")
    main(["check", "--no-cache", "--format", "json", "--select", "KV150", str(target)])
    findings = {f["line"]: f for f in json.loads(capsys.readouterr().out)["findings"]}
    assert findings[39]["branch"] == "PER_CALL_MASK" and findings[36]["branch"] == "PER_CALL_SCALE"
    assert "branch" not in findings[7]  # the rule's own finding names no branch


def test_kvlint_rule_says_stable_or_preview(capsys):
    main(["rule", "KV150"])
    out = capsys.readouterr().out
    assert "Status: stable" in out and "`PER_CALL_MASK` runs only with `--preview`" in out
    assert "`PER_CALL_MASK` (warning, preview)" in out
    main(["rule", "--all"])
    assert "| status |" in capsys.readouterr().out


def test_show_settings_prints_preview(tmp_path, capsys):
    (tmp_path / "pyproject.toml").write_text(textwrap.dedent("""
        [tool.kvlint]
        preview = true
    """))
    main(["check", "--show-settings", str(tmp_path)])
    assert "preview = true" in capsys.readouterr().out
