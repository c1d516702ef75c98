"""The emulation tests run with kvlint.emulate installed for the whole session (forced: these
tests are about the emulation even on a machine with the real torch_npu)."""
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import kvlint.emulate  # noqa: E402

kvlint.emulate.install(force=True)


@pytest.fixture(autouse=True)
def _emulation_stays_installed():
    """A test that uninstalls the emulation gets it back afterwards."""
    yield
    if not kvlint.emulate.is_installed():
        kvlint.emulate.install(force=True)
