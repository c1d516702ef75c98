"""kvlint.atomic.replace_file, the one atomic write of --fix, the result cache and the rules/
snapshots: all or nothing, the temporary file never left behind."""
from __future__ import annotations

import os
import stat

import pytest

from kvlint import atomic
from kvlint.atomic import replace_file


def test_replaces_the_file_whole_with_the_mode_asked_for(tmp_path):
    target = tmp_path / "f.txt"
    target.write_bytes(b"old")
    replace_file(str(target), b"new\r\n", mode=0o640, sync=True)
    assert target.read_bytes() == b"new\r\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert os.listdir(tmp_path) == ["f.txt"]


def test_creates_a_missing_file(tmp_path):
    target = tmp_path / "new.json"
    replace_file(str(target), b"{}", prefix=".tmp-", suffix=".json")
    assert target.read_bytes() == b"{}"
    assert os.listdir(tmp_path) == ["new.json"]


@pytest.mark.parametrize("step", ["fsync", "chmod", "replace"])
def test_a_failure_leaves_the_old_file_and_no_temporary_one(tmp_path, monkeypatch, step):
    target = tmp_path / "f.txt"
    target.write_bytes(b"old")

    def fail(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic.os, step, fail)
    with pytest.raises(OSError):
        replace_file(str(target), b"new", mode=0o644, sync=True)
    assert target.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["f.txt"]
