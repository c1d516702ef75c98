"""docs/emulate.md's end-to-end example runs as written (`pytest --kvlint-emulate --kvlint`), and
the mistake the page describes is caught: silently wrong numbers under the emulation alone, KV315
under the guard."""
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "emulate.md"


def example_files() -> dict:
    text = PAGE.read_text(encoding="utf-8")
    return dict(re.findall(r"<!-- file: (\S+) -->\n```python\n(.*?)```", text, flags=re.S))


def run(folder, *options):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *options, str(folder)],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=300)


def write(folder, files):
    for name, body in files.items():
        (folder / name).write_text(body)


def test_the_page_has_the_two_files():
    assert sorted(example_files()) == ["model.py", "test_model.py"]


def test_example_passes_under_emulation_and_guard(tmp_path):
    write(tmp_path, example_files())
    result = run(tmp_path, "--kvlint-emulate", "--kvlint")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout


def test_per_request_lengths_are_wrong_numbers_then_kv315(tmp_path):
    files = example_files()
    assert "prefill_ends=ends)" in files["test_model.py"]
    files["test_model.py"] = files["test_model.py"].replace("prefill_ends=ends)", "prefill_ends=lengths)")
    write(tmp_path, files)
    silent = run(tmp_path, "--kvlint-emulate")
    assert silent.returncode == 1 and "assert" in silent.stdout and "KV315" not in silent.stdout
    guarded = run(tmp_path, "--kvlint-emulate", "--kvlint")
    assert guarded.returncode == 1
    assert "KV315 npu_fused_infer_attention_score: actual_seq_lengths must be cumulative" in guarded.stdout
    assert "(model.py:" in guarded.stdout
