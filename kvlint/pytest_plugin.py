"""pytest plugin: `pytest --kvlint` runs the whole session under kvlint's runtime guard;
`pytest --kvlint-emulate` runs it with the emulated torch_npu (kvlint.emulate) where the real
one is not importable. The two combine: `pytest --kvlint-emulate --kvlint`.

Options: `--kvlint` (mode "raise"), `--kvlint-checks=meta|full`, `--kvlint-emulate`. The
emulation is installed before the conftest files are imported (a conftest may `import
torch_npu`), the guard at configure time. Operators registered after the session starts (a
conftest importing torch_npu) are picked up before each test. Registered through the `pytest11`
entry point; without an installed kvlint use `-p kvlint.pytest_plugin`."""
from __future__ import annotations

import pytest

_HANDLE = "_kvlint_guard_handle"
_EMULATION = "_kvlint_emulation_handle"
_early_emulation = None


def pytest_addoption(parser):
    group = parser.getgroup("kvlint", "kvlint runtime guard")
    group.addoption("--kvlint", action="store_true", default=False,
                    help="check Ascend attention / KV-cache operator contracts on every call (mode raise)")
    group.addoption("--kvlint-checks", choices=("meta", "full"), default="meta",
                    help="meta: shapes, dtypes and host values only; full: also read device tensor values")
    group.addoption("--kvlint-emulate", action="store_true", default=False,
                    help="run with kvlint's emulated torch_npu / cann_ops_transformer (CPU reference kernels) "
                         "when the real torch_npu is not importable")


def _install_emulation():
    from kvlint.emulate import install

    return install()


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args):
    """Install the emulation before conftest.py files (which may import torch_npu) load."""
    global _early_emulation
    if getattr(early_config.known_args_namespace, "kvlint_emulate", False) and _early_emulation is None:
        _early_emulation = _install_emulation()


def pytest_configure(config):
    global _early_emulation
    if config.getoption("--kvlint-emulate"):
        handle, _early_emulation = _early_emulation, None
        setattr(config, _EMULATION, handle if handle is not None else _install_emulation())
    if config.getoption("--kvlint"):
        from kvlint.runtime import patch

        setattr(config, _HANDLE, patch(mode="raise", checks=config.getoption("--kvlint-checks")))


def pytest_runtest_setup(item):
    handle = getattr(item.config, _HANDLE, None)
    if handle is not None and handle.active:
        from kvlint.runtime.guard import refresh

        refresh()  # operators registered since (a conftest importing torch_npu)


def pytest_report_header(config):
    lines = []
    emulation = getattr(config, _EMULATION, None)
    if emulation is not None:
        lines.append("kvlint: emulated torch_npu (CPU reference kernels)" if emulation.active
                     else f"kvlint: emulation not installed: {emulation.reason}")
    handle = getattr(config, _HANDLE, None)
    if handle is not None:
        if not handle.guarded:
            lines.append(f"kvlint: runtime guard on but guarding no operator: {handle.reason}")
        else:
            lines.append(f"kvlint: runtime guard on (mode raise, checks {handle.checks}, {handle.guarded} "
                         "operator entry points)")
    return lines or None


def pytest_unconfigure(config):
    handle = getattr(config, _HANDLE, None)
    if handle is not None:
        handle.close()
    emulation = getattr(config, _EMULATION, None)
    if emulation is not None:
        emulation.close()
