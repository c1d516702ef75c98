"""`pytest --kvlint` runs a session under the guard (mode raise); without it nothing is guarded."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

TEST_FILE = '''
import torch
import torch_npu


def test_int64_block_table():
    q, cache = torch.randn(2, 1, 64).half(), torch.randn(4, 128, 32).half()
    torch_npu.npu_fused_infer_attention_score(
        q, cache, cache, num_heads=4, num_key_value_heads=2, scale=0.25, input_layout="BSH",
        block_table=torch.arange(4).reshape(2, 2), block_size=128, actual_seq_lengths_kv=[3, 5])
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
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "fixtures"), str(ROOT)]))
    load = [] if plugin_is_installed() else ["-p", "kvlint.pytest_plugin"]
    return subprocess.run([sys.executable, "-m", "pytest", "-q", *load, "-p", "no:cacheprovider",
                           *options, str(tmp_path)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)


def test_kvlint_option_fails_the_bad_test(tmp_path):
    result = run(tmp_path, "--kvlint")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "KV301 npu_fused_infer_attention_score: block_table must be int32, got int64 (test_model.py:" in result.stdout


def test_without_the_option_nothing_is_guarded(tmp_path):
    result = run(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
