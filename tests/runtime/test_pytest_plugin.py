"""`pytest --kvlint` runs a session under the guard (mode raise); without it nothing is guarded."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

TEST_FILE = '''
import torch
import torch_npu


def test_per_request_lengths_in_tnd():
    q, kv = torch.randn(5, 4, 16).half(), torch.randn(5, 2, 16).half()
    torch_npu.npu_fused_infer_attention_score(
        q, kv, kv, num_heads=4, num_key_value_heads=2, scale=0.25, input_layout="TND",
        actual_seq_lengths=[3, 2], actual_seq_lengths_kv=[3, 2])
'''


def plugin_is_installed() -> bool:
    """An installed kvlint registers the plugin through its `pytest11` entry point; loading it
    again with `-p` would register it twice."""
    from importlib.metadata import entry_points

    eps = entry_points()
    group = eps.select(group="pytest11") if hasattr(eps, "select") else eps.get("pytest11", [])
    return any(ep.value == "kvlint.pytest_plugin" for ep in group)


def run(tmp_path, *options):
    (tmp_path / "test_model.py").write_text(TEST_FILE)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    load = [] if plugin_is_installed() else ["-p", "kvlint.pytest_plugin"]
    return subprocess.run([sys.executable, "-m", "pytest", "-q", *load, "-p", "no:cacheprovider",
                           "--kvlint-emulate", *options, str(tmp_path)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)


def test_kvlint_option_fails_the_bad_test(tmp_path):
    result = run(tmp_path, "--kvlint")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "KV315 npu_fused_infer_attention_score: actual_seq_lengths must be cumulative" in result.stdout
    assert "(test_model.py:" in result.stdout


def test_without_the_option_nothing_is_guarded(tmp_path):
    result = run(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
