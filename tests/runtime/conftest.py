"""Runtime-guard tests run against kvlint.emulate's torch_npu and cann_ops_transformer (CPU
reference kernels); fixtures/ holds the sample decoder."""
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
for path in (ROOT / "fixtures", ROOT):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

torch = pytest.importorskip("torch")

import kvlint.emulate  # noqa: E402

kvlint.emulate.install(force=True)


@pytest.fixture
def collect():
    """A collect-mode guard; yields a function returning the codes a call produced."""
    import kvlint

    handle = kvlint.patch(mode="collect")

    def codes(fn):
        before = len(handle.findings)
        fn()
        return [f.code for f in handle.findings[before:]]
    codes.handle = handle
    yield codes
    handle.close()


@pytest.fixture(autouse=True)
def _no_guard_leaks():
    import kvlint.runtime as rt

    yield
    rt.unpatch()
