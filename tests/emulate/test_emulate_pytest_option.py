"""`pytest --kvlint-emulate` installs the emulation for a session (before conftest files load),
and combines with `--kvlint`."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CONFTEST = "import torch_npu  # a conftest importing torch_npu at the top, as model test suites do\n"

TESTS = '''
import torch
import torch_npu


def _call(q_lens):
    q = torch.randn(5, 4, 16, dtype=torch.float16)
    kv = torch.randn(5, 2, 16, dtype=torch.float16)
    return torch_npu.npu_fused_infer_attention_score(
        q, kv, kv, num_heads=4, num_key_value_heads=2, scale=0.25, input_layout="TND",
        actual_seq_lengths=q_lens, actual_seq_lengths_kv=q_lens)[0]


def test_good():
    assert _call([3, 5]).shape == (5, 4, 16)


def test_per_request_lengths_in_tnd():
    _call([3, 2])  # silent on the NPU: the second request is cut
'''


def plugin_is_installed() -> bool:
    from importlib.metadata import entry_points

    eps = entry_points()
    group = eps.select(group="pytest11") if hasattr(eps, "select") else eps.get("pytest11", [])
    return any(ep.value == "kvlint.pytest_plugin" for ep in group)


def run(tmp_path, *options, quiet=True):
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_model.py").write_text(TESTS)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    load = [] if plugin_is_installed() else ["-p", "kvlint.pytest_plugin"]
    return subprocess.run([sys.executable, "-m", "pytest", *(["-q"] if quiet else []), *load, "-p", "no:cacheprovider", *options,
                           str(tmp_path)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)


def test_emulate_runs_the_suite_on_cpu(tmp_path):
    result = run(tmp_path, "--kvlint-emulate", quiet=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed" in result.stdout
    assert "kvlint: emulated torch_npu" in result.stdout


def test_emulate_with_the_guard_fails_the_silent_bug(tmp_path):
    result = run(tmp_path, "--kvlint-emulate", "--kvlint")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "1 failed, 1 passed" in result.stdout
    assert "KV315 npu_fused_infer_attention_score: actual_seq_lengths must be cumulative" in result.stdout


def test_without_the_option_there_is_no_torch_npu(tmp_path):
    result = run(tmp_path)
    assert result.returncode != 0
    assert "No module named 'torch_npu'" in result.stdout + result.stderr
