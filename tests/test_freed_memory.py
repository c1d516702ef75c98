"""runner._keep_freed_memory: after it, a block the size of a file's tables that is freed and
allocated again reuses the same memory instead of a fresh mapping the kernel must zero (glibc's
malloc; other allocators ignore the call). Counted in page faults, in a fresh interpreter."""
import os
import platform
import subprocess
import sys

import pytest

PROBE = """
import resource, sys
sys.path.insert(0, {root!r})
from kvlint import runner
if {keep}:
    runner._keep_freed_memory()
    runner._keep_freed_memory()  # once per process: the second call does nothing
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):
    block = bytearray(b"x" * (1 << 20))  # 1 MiB, written: above glibc's first mmap threshold
    del block
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(keep: bool) -> int:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, "-c", PROBE.format(root=root, keep=keep)],
                         capture_output=True, text=True, check=True)
    return int(out.stdout)


@pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc",
                    reason="the thresholds are glibc's")
def test_freed_blocks_are_reused_instead_of_mapped_again():
    fresh, kept = _faults(False), _faults(True)
    assert fresh > 20 * 200  # each 1 MiB block (256 pages) faulted in again
    assert kept < fresh / 4  # the first block's pages, then the same memory each time


def test_it_runs_once_per_process(monkeypatch):
    from kvlint import runner

    made = []
    monkeypatch.setattr(runner, "_freed_memory_kept", False)
    monkeypatch.setattr(runner, "KEEP_FREED_BYTES", 1 << 20)
    real_bytes = bytes
    monkeypatch.setitem(runner.__dict__, "bytes", lambda n: made.append(n) or real_bytes(n))
    runner._keep_freed_memory()
    runner._keep_freed_memory()
    with runner.collector_tuned():
        pass
    assert made == [1 << 20]
