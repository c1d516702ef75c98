"""[tool.kvlint]: discovery per file, --config, --isolated, validation (exit 2 naming the
key and the file), exclude, per-file-ignores, severity, heuristic names, --show-settings."""
import re
import shutil
import textwrap
from pathlib import Path

import pytest

from kvlint.cli import main
from kvlint.config import ConfigError, Resolver, find_config, glob_matches, load_settings

BAD = Path(__file__).resolve().parent.parent / "fixtures" / "fixes" / "kv205_bool_mask.in.py"  # 2x KV205


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


@pytest.fixture
def project(tmp_path, monkeypatch):
    for rel in ("app/model.py", "app/gen/model_pb.py", "tests/test_model.py", "sub/model.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(BAD, tmp_path / rel)
    write(tmp_path / "pyproject.toml", """
        [project]
        name = "x"
        [tool.kvlint]
        select = ["KV2"]
        extend-exclude = ["gen"]
        [tool.kvlint.per-file-ignores]
        "tests/*.py" = ["KV205"]
        [tool.kvlint.severity]
        KV205 = "warning"
    """)
    write(tmp_path / "sub" / "pyproject.toml", "[tool.kvlint]\nignore = ['KV205']\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def concise(capsys, *args):
    code = main(["check", "--format", "concise", *args])
    captured = capsys.readouterr()
    findings = [line for line in captured.out.splitlines() if re.match(r"\S+:\d+:\d+: ", line)]
    return code, [line.split(": ")[0] + " " + line.split(": ")[1].split()[0] for line in findings], captured.err


def test_discovery_exclude_per_file_ignores_and_nearest_config(project, capsys):
    code, lines, _ = concise(capsys, ".")
    # gen/ excluded, tests/ ignores KV205, sub/ has its own config ignoring KV205
    assert code == 1
    assert lines == ["app/model.py:6:12 KV205", "app/model.py:7:13 KV205"]


def test_severity_override(project, capsys):
    assert main(["check", "app/model.py", "--format", "json"]) == 1
    assert '"severity": "warning"' in capsys.readouterr().out


def test_isolated_and_config(project, capsys):
    code, lines, _ = concise(capsys, "--isolated", "--select", "KV205", ".")
    assert len(lines) == 8
    code, lines, _ = concise(capsys, "--config", "sub/pyproject.toml", ".")
    assert code == 0 and lines == []


def test_cli_select_overrides_config_select(project, capsys):
    code, lines, _ = concise(capsys, "--select", "KV101", "app")
    assert code == 0 and lines == []
    code, lines, _ = concise(capsys, "--ignore", "KV205", "app")
    assert code == 0


def test_pyproject_without_table_is_skipped(tmp_path):
    write(tmp_path / "pyproject.toml", "[tool.kvlint]\nignore = ['KV1']\n")
    write(tmp_path / "pkg" / "pyproject.toml", "[project]\nname = 'pkg'\n")
    assert find_config(str(tmp_path / "pkg" / "m.py")) == str(tmp_path / "pyproject.toml")


@pytest.mark.parametrize("body, message", [
    ("selec = ['KV1']", "[tool.kvlint] unknown key `selec` (did you mean `select`?)"),
    ("select = 'KV1'", "`select` must be a list of strings, got str 'KV1'"),
    ("ignore = ['KV999']", "`ignore`: unknown rule code or prefix: KV999"),
    ("severity = {KV101 = 'fatal'}", "`severity.KV101` must be one of error, warning, info, got 'fatal'"),
    ("[tool.kvlint.per-file-ignores]\n'a.py' = 'KV101'", "`per-file-ignores.a.py` must be a list of strings"),
    ("[tool.kvlint.heuristics]\nprefil-function-words = ['x']", "[tool.kvlint.heuristics] unknown key `prefil-function-words`"),
    ("select = [", "invalid TOML"),
])
def test_bad_config_exits_2_naming_key_and_file(tmp_path, capsys, body, message):
    cfg = write(tmp_path / "pyproject.toml", "[tool.kvlint]\n" + body + "\n")
    shutil.copy(BAD, tmp_path / "m.py")
    assert main(["check", str(tmp_path / "m.py")]) == 2
    err = capsys.readouterr().err
    assert str(cfg) in err and message in err


def test_heuristic_names_extend_the_defaults(tmp_path):
    cfg = write(tmp_path / "pyproject.toml", """
        [tool.kvlint.heuristics]
        prefill-function-words = ["encode_step"]
        layer-class-words = ["Mixer"]
    """)
    names = load_settings(str(cfg)).names
    assert names.prefill_function_words[-1] == "encode_step" and "prefill" in names.prefill_function_words
    assert "Mixer" in names.layer_class_words


def test_heuristic_names_reach_the_rules(tmp_path, capsys):
    # KV203 needs to know the call is on the prefill path; `encode_step` says nothing by default
    src = write(tmp_path / "m.py", """
        import torch_npu

        def encode_step(q, k, v):
            out, _ = torch_npu.npu_fused_infer_attention_score(
                q, k, v, num_heads=8, scale=0.125, input_layout="BSH")
            return out
    """)
    main(["check", str(src), "--isolated", "--select", "KV203", "--format", "concise"])
    assert capsys.readouterr().out == "All checks passed!\n"
    write(tmp_path / "pyproject.toml", "[tool.kvlint.heuristics]\nprefill-function-words = ['encode_step']\n")
    main(["check", str(src), "--select", "KV203", "--format", "concise"])
    assert "KV203" in capsys.readouterr().out


def test_show_settings(project, capsys):
    assert main(["check", "--show-settings", "app/model.py"]) == 0
    out = capsys.readouterr().out
    assert f"# config file: {project / 'pyproject.toml'}" in out
    assert 'select = ["KV2"]' in out and '"tests/*.py" = ["KV205"]' in out and 'KV205 = "warning"' in out
    assert "# enabled rules:" in out and "KV101" not in out.split("# enabled rules:")[1]
    main(["check", "--show-settings", "--isolated", "app/model.py"])
    assert "(none: defaults)" in capsys.readouterr().out


def test_glob_matching(tmp_path):
    root = str(tmp_path)
    assert glob_matches("gen", str(tmp_path / "a" / "gen" / "x.py"), root)
    assert glob_matches("*_pb2.py", str(tmp_path / "a" / "m_pb2.py"), root)
    assert glob_matches("a/gen", str(tmp_path / "a" / "gen" / "x.py"), root)
    assert glob_matches("./a/*.py", str(tmp_path / "a" / "x.py"), root)
    assert not glob_matches("b/*.py", str(tmp_path / "a" / "x.py"), root)


def test_missing_config_file(tmp_path):
    with pytest.raises(ConfigError, match="no such config file"):
        Resolver(str(tmp_path / "nope.toml"))
