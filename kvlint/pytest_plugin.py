"""pytest plugin: `pytest --kvlint` runs the whole session under kvlint's runtime guard.

Options: `--kvlint` (mode "raise"), `--kvlint-checks=meta|full`. Operators registered after the
session starts (a conftest importing torch_npu) are picked up before each test. Registered
through the `pytest11` entry point; without an installed kvlint use `-p kvlint.pytest_plugin`."""
from __future__ import annotations

_HANDLE = "_kvlint_guard_handle"


def pytest_addoption(parser):
    group = parser.getgroup("kvlint", "kvlint runtime guard")
    group.addoption("--kvlint", action="store_true", default=False,
                    help="check Ascend attention / KV-cache operator contracts on every call (mode raise)")
    group.addoption("--kvlint-checks", choices=("meta", "full"), default="meta",
                    help="meta: shapes, dtypes and host values only; full: also read device tensor values")


def pytest_configure(config):
    if config.getoption("--kvlint"):
        from kvlint.runtime import patch

        setattr(config, _HANDLE, patch(mode="raise", checks=config.getoption("--kvlint-checks")))


def pytest_runtest_setup(item):
    handle = getattr(item.config, _HANDLE, None)
    if handle is not None and handle.active:
        from kvlint.runtime.guard import refresh

        refresh()  # operators registered since (a conftest importing torch_npu)


def pytest_report_header(config):
    handle = getattr(config, _HANDLE, None)
    if handle is None:
        return None
    if not handle.guarded:
        return f"kvlint: runtime guard on but guarding no operator: {handle.reason}"
    return f"kvlint: runtime guard on (mode raise, checks {handle.checks}, {handle.guarded} operator entry points)"


def pytest_unconfigure(config):
    handle = getattr(config, _HANDLE, None)
    if handle is not None:
        handle.close()
