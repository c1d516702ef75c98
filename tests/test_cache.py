"""The result cache: hits without reading, misses on any change of content, code or
settings, atomic and corruption-tolerant."""
from __future__ import annotations

import json
import os
import time

import pytest

from kvlint import cache as cache_module
from kvlint import runner
from kvlint.cache import Cache
from kvlint.cli import main
from kvlint.settings import Settings

BAD = "import torch_npu\nout = torch_npu.npu_fused_infer_attention_score(q, k, v, num_heads=8)\n"


@pytest.fixture
def counted(monkeypatch):
    """Counts the files the runner really checks (cache misses)."""
    seen = []
    real = runner.check_one

    def counting(checker, path, *rest):
        seen.append(os.path.basename(path))
        return real(checker, path, *rest)

    monkeypatch.setattr(runner, "check_one", counting)
    return seen


def age(path, seconds=60):
    """Make a file look old enough for its stat to be trusted (not racy)."""
    t = time.time() - seconds
    os.utime(path, (t, t))


def run(paths, cache_dir, settings=Settings()):
    c = Cache(str(cache_dir), settings)
    results = runner.check_files([str(p) for p in paths], settings, jobs=1, cache=c)
    c.save()
    return results


@pytest.fixture
def files(tmp_path):
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text(BAD)
    b.write_text("print('clean')\n")
    age(a)
    age(b)
    return a, b


def test_second_run_checks_nothing_and_returns_the_same_findings(files, tmp_path, counted):
    first = run(files, tmp_path / "c")
    assert counted == ["a.py", "b.py"]
    second = run(files, tmp_path / "c")
    assert counted == ["a.py", "b.py"]  # no new checks
    assert [(f.path, f.line, f.column, f.code, f.message, f.source_line) for r in second for f in r.findings] == \
        [(f.path, f.line, f.column, f.code, f.message, f.source_line) for r in first for f in r.findings]
    assert [f.code for f in second[0].findings] == ["KV103"]


def test_fixes_survive_the_cache(tmp_path, counted):
    p = tmp_path / "mask.py"
    p.write_text("import torch, torch_npu\n\n\nclass Attention:\n    def __init__(self):\n"
                 "        self.mask = torch.triu(torch.ones(2048, 2048), diagonal=1)\n\n"
                 "    def prefill(self, q, k, v):\n"
                 "        return torch_npu.npu_fused_infer_attention_score(q, k, v, num_heads=8, scale=0.1, "
                 "sparse_mode=3, atten_mask=self.mask)\n")
    age(p)
    first = run([p], tmp_path / "c")
    second = run([p], tmp_path / "c")
    assert len(counted) == 1
    assert any(f.fix for f in first[0].findings)
    assert [f.fix for f in second[0].findings] == [f.fix for f in first[0].findings]


def test_changed_content_is_checked_again(files, tmp_path, counted):
    a, b = files
    run(files, tmp_path / "c")
    a.write_text(BAD.replace("num_heads=8", "num_heads=8, scale=0.1"))
    age(a, 30)
    results = run(files, tmp_path / "c")
    assert counted == ["a.py", "b.py", "a.py"]
    assert results[0].findings == []


def test_touched_but_same_bytes_is_hashed_not_checked(files, tmp_path, counted):
    a, _ = files
    run(files, tmp_path / "c")
    age(a, 10)  # a new mtime, same bytes (a checkout, `touch`)
    assert [f.code for f in run(files, tmp_path / "c")[0].findings] == ["KV103"]
    assert counted == ["a.py", "b.py"]


def test_a_just_written_file_keeps_only_its_hash(tmp_path):
    p = tmp_path / "fresh.py"
    p.write_text(BAD)  # mtime = now: a write in the same tick could go unseen by stat
    run([p], tmp_path / "c")
    (data,) = [json.load(open(tmp_path / "c" / n)) for n in os.listdir(tmp_path / "c") if n.endswith(".json")]
    stat, hashed, _, dependencies = data["files"][str(p)]
    assert stat is None and hashed == cache_module.digest(p.read_bytes()) and dependencies == []


def test_settings_code_and_python_change_the_cache_file(files, tmp_path, counted, monkeypatch):
    run(files, tmp_path / "c")
    run(files, tmp_path / "c", Settings(ignore=("KV103",)))
    assert counted == ["a.py", "b.py", "a.py", "b.py"]
    monkeypatch.setattr(cache_module, "_CODE_FINGERPRINT", "0" * 32)  # kvlint's code changed
    run(files, tmp_path / "c")
    assert len(counted) == 6


def test_code_fingerprint_covers_sources_and_rules_data():
    fp = cache_module.code_fingerprint()
    assert len(fp) == 32 and fp == cache_module.code_fingerprint()


def test_files_fingerprint_changes_with_an_edit_a_touch_or_a_new_file(tmp_path):
    pkg, data = tmp_path / "pkg", tmp_path / "rules"
    (pkg / "sub").mkdir(parents=True)
    data.mkdir()
    (pkg / "a.py").write_text("x = 1\n")
    (pkg / "sub" / "b.py").write_text("y = 2\n")
    (data / "ops.toml").write_text("[a]\n")
    roots = (str(pkg), str(data))

    def fp():
        return cache_module.files_fingerprint("head", roots)

    first = fp()
    assert fp() == first and len(first) == 32
    assert cache_module.files_fingerprint("other head", roots) != first
    (pkg / "__pycache__").mkdir()
    (pkg / "__pycache__" / "a.py").write_text("compiled\n")  # never part of it
    (pkg / "notes.txt").write_text("not code\n")
    assert fp() == first
    (pkg / "sub" / "b.py").write_text("y = 3\n")  # an edit of the same size: its mtime moves
    os.utime(pkg / "sub" / "b.py", ns=(1, 1))
    edited = fp()
    assert edited != first
    os.utime(pkg / "sub" / "b.py", ns=(2, 2))  # a touch
    assert fp() != edited
    (data / "new.json").write_text("{}")
    assert len({first, edited, fp()}) == 3


@pytest.mark.parametrize("garbage", [b"", b"{", b"\xff\xfe", b"[1, 2]", b'{"format": 1, "files": []}',
                                     b'{"format": 1, "files": {"x": 1}}'])
def test_corrupt_cache_is_ignored(files, tmp_path, counted, garbage):
    run(files, tmp_path / "c")
    (name,) = [n for n in os.listdir(tmp_path / "c") if n.endswith(".json")]
    (tmp_path / "c" / name).write_bytes(garbage)
    results = run(files, tmp_path / "c")
    assert [f.code for f in results[0].findings] == ["KV103"]


def test_entries_for_the_wrong_shape_are_misses(files, tmp_path):
    c = Cache(str(tmp_path / "c"), Settings())
    c._load()[os.path.abspath(files[0])] = ["nonsense"]
    assert c.get(str(files[0])) is None


def test_concurrent_writers_leave_a_valid_file(files, tmp_path):
    one, two = Cache(str(tmp_path / "c"), Settings()), Cache(str(tmp_path / "c"), Settings())
    for c in (one, two):
        runner.check_files([str(p) for p in files], Settings(), jobs=1, cache=c)
    assert one.save() is None and two.save() is None
    (name,) = [n for n in os.listdir(tmp_path / "c") if n.endswith(".json")]
    assert set(json.load(open(tmp_path / "c" / name))["files"]) == {str(p) for p in files}
    assert not [n for n in os.listdir(tmp_path / "c") if n.startswith(".tmp-")]


def test_unwritable_cache_dir_is_a_warning_not_a_failure(files, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    c = Cache(str(blocker / "c"), Settings())
    runner.check_files([str(p) for p in files], Settings(), jobs=1, cache=c)
    assert "cannot write the cache" in c.save()


def test_results_with_internal_errors_or_read_failures_are_not_cached(tmp_path):
    from kvlint.analysis.findings import FileResult

    c = Cache(str(tmp_path / "c"), Settings())
    c.put("x.py", None, "h", FileResult("x.py", errors=["boom"]))
    c.put("y.py", None, "h", FileResult("y.py", checked=False))
    assert c._load() == {}


def test_cli_cache_options(files, tmp_path, counted, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("KVLINT_NO_CACHE", raising=False)
    monkeypatch.delenv("KVLINT_CACHE_DIR", raising=False)
    args = ["check", "--isolated", "--format", "concise"] + [str(p) for p in files]
    assert main(args) == 1
    assert os.path.isfile(tmp_path / ".kvlint_cache" / "CACHEDIR.TAG")
    assert main(args) == 1 and len(counted) == 2  # default cache in the current folder
    assert main(args + ["--no-cache"]) == 1 and len(counted) == 4
    assert main(args + ["--cache-dir", str(tmp_path / "elsewhere")]) == 1 and len(counted) == 6
    assert os.listdir(tmp_path / "elsewhere")
    out = capsys.readouterr().out
    assert out.count("KV103") == 4
    monkeypatch.setenv("KVLINT_NO_CACHE", "1")
    assert main(args) == 1 and len(counted) == 8
    monkeypatch.delenv("KVLINT_NO_CACHE")
    monkeypatch.setenv("KVLINT_CACHE_DIR", str(tmp_path / "from_env"))
    assert main(args) == 1 and len(counted) == 10 and os.listdir(tmp_path / "from_env")


# -- dependencies: a file's findings computed from another module --------------------------
USER = ("import torch_npu\nfrom pkg.masks import build_mask\n"
        "def f(q, k, v):\n"
        "    return torch_npu.npu_fused_infer_attention_score(q, k, v, num_heads=8, scale=0.1,\n"
        "                                                     atten_mask=build_mask(), sparse_mode=3)\n")
BUILDER = "import torch\ndef build_mask():\n    return torch.triu(torch.ones(2048, 2048, dtype=torch.bool), 1)\n"
OTHER = "import torch_npu\ndef g(q, k, v):\n    return torch_npu.npu_fused_infer_attention_score(q, k, v, num_heads=8)\n"


@pytest.fixture
def project(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    paths = {"user": pkg / "attn.py", "builder": pkg / "masks.py", "other": pkg / "other.py"}
    for name, text in (("user", USER), ("builder", BUILDER), ("other", OTHER)):
        paths[name].write_text(text)
        age(paths[name])
    age(pkg / "__init__.py")
    return paths


def test_editing_a_builder_module_rechecks_only_its_dependents(project, tmp_path, counted):
    order = [project["user"], project["builder"], project["other"]]
    first = run(order, tmp_path / "c")
    assert [f.code for f in first[0].findings] == []  # a bool mask: fine
    assert counted == ["attn.py", "masks.py", "other.py"]
    counted.clear()
    project["builder"].write_text(BUILDER.replace("dtype=torch.bool", "dtype=torch.float16"))
    age(project["builder"], 5)
    second = run(order, tmp_path / "c")
    assert sorted(counted) == ["attn.py", "masks.py"]  # other.py does not use masks.py
    assert [f.code for f in second[0].findings] == ["KV205"]
    assert "[built at" in second[0].findings[0].message
    counted.clear()
    assert [f.code for f in run(order, tmp_path / "c")[0].findings] == ["KV205"]
    assert counted == []  # warm again


def test_a_deleted_dependency_rechecks_the_file(project, tmp_path, counted):
    run([project["user"]], tmp_path / "c")
    project["builder"].unlink()
    counted.clear()
    run([project["user"]], tmp_path / "c")
    assert counted == ["attn.py"]


def test_fixing_a_dependency_that_did_not_parse_rechecks_the_file(project, tmp_path, counted):
    """A module the analysis could not parse decided the findings too (by what it could not
    say): once its syntax error is fixed, the files that import it are checked again."""
    project["builder"].write_text(BUILDER.replace("dtype=torch.bool", "dtype=torch.float16") + "def broken(:\n")
    age(project["builder"])
    first = run([project["user"]], tmp_path / "c")
    assert [f.code for f in first[0].findings] == []  # the builder is unknown: nothing said
    project["builder"].write_text(BUILDER.replace("dtype=torch.bool", "dtype=torch.float16"))
    age(project["builder"], 5)
    counted.clear()
    second = run([project["user"]], tmp_path / "c")
    assert counted == ["attn.py"]
    assert [f.code for f in second[0].findings] == ["KV205"]


def test_one_checker_sees_a_dependency_fixed_between_two_checks(project):
    """A long-lived process (the pytest plugin, an editor) re-parses a module that failed
    to parse once its bytes change."""
    from kvlint.engine import Checker

    project["builder"].write_text(BUILDER.replace("dtype=torch.bool", "dtype=torch.float16") + "def broken(:\n")
    age(project["builder"])
    checker = Checker(Settings(), roots=[str(project["user"].parent.parent)])
    assert [f.code for f in checker.check_path(str(project["user"])).findings] == []
    project["builder"].write_text(BUILDER.replace("dtype=torch.bool", "dtype=torch.float16"))
    age(project["builder"], 5)
    assert [f.code for f in checker.check_path(str(project["user"])).findings] == ["KV205"]


# -- dependencies of a kept answer: what a loaded module's memo was computed from -------------
ALIAS = "import torch_npu\n\nfia = torch_npu.npu_fused_infer_attention_score\n"
ADAPTER = ("from pkg.ops import fia\n\n\n"
           "def npu_fused_infer_attention_score(q, k, v, **kwargs):\n"
           "    return fia(q, k, v, **kwargs)\n")
SITE = ("from pkg.adapter import npu_fused_infer_attention_score\n\n\n"
        "def forward(q, k, v):\n"
        "    return npu_fused_infer_attention_score(q, k, v, num_heads=8, input_layout=\"BSND\")\n")


@pytest.fixture
def adapter_project(tmp_path):
    """Two files call one adapter whose operator call goes through an alias of a third
    module: the second file's check is served the adapter's summary the first one computed."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    paths = {"init": pkg / "__init__.py", "ops": pkg / "ops.py", "adapter": pkg / "adapter.py",
             "b": pkg / "b.py", "c": pkg / "c.py"}
    for name, text in (("init", ""), ("ops", ALIAS), ("adapter", ADAPTER), ("b", SITE), ("c", SITE)):
        paths[name].write_text(text)
        age(paths[name])
    return paths


def test_a_file_served_a_kept_summary_depends_on_what_it_was_computed_from(adapter_project, tmp_path, counted):
    sites = [adapter_project["b"], adapter_project["c"]]
    first = run(sites, tmp_path / "c")
    assert [[f.code for f in r.findings] for r in first] == [["KV103"], ["KV103"]]
    ops = os.path.abspath(adapter_project["ops"])
    for result in first:  # c.py's check read nothing of ops.py itself: b.py's check had
        assert ops in result.dependencies, result.path
    adapter_project["ops"].write_text(ALIAS.replace("torch_npu.npu_fused_infer_attention_score", "print"))
    age(adapter_project["ops"], 5)
    counted.clear()
    second = run(sites, tmp_path / "c")
    assert counted == ["b.py", "c.py"]
    assert [[f.code for f in r.findings] for r in second] == [[], []]


def test_the_kept_dependencies_of_a_reparsed_module_are_its_new_ones(adapter_project):
    """A long-lived checker re-parses a changed module: what its old tracer read is dropped
    with it, and what the new one reads is recorded."""
    from kvlint.engine import Checker

    checker = Checker(Settings(), roots=[str(adapter_project["init"].parent.parent)])
    b, c = str(adapter_project["b"]), str(adapter_project["c"])
    ops = os.path.abspath(adapter_project["ops"])
    assert ops in checker.check_path(b).dependencies
    adapter_project["adapter"].write_text(ADAPTER.replace("from pkg.ops import fia", "import torch_npu\n"
                                                          "fia = torch_npu.npu_fused_infer_attention_score"))
    age(adapter_project["adapter"], 5)
    result = checker.check_path(c)
    assert [f.code for f in result.findings] == ["KV103"]
    assert ops not in result.dependencies


def test_one_checker_drops_a_kept_summary_whose_alias_module_changed(adapter_project):
    """A long-lived checker served c.py the adapter summary b.py's check computed; once the
    alias module it was computed from changes, the adapter is analysed again."""
    from kvlint.engine import Checker

    checker = Checker(Settings(), roots=[str(adapter_project["init"].parent.parent)])
    assert [f.code for f in checker.check_path(str(adapter_project["b"])).findings] == ["KV103"]
    adapter_project["ops"].write_text(ALIAS.replace("torch_npu.npu_fused_infer_attention_score", "print"))
    age(adapter_project["ops"], 5)
    assert [f.code for f in checker.check_path(str(adapter_project["c"])).findings] == []
