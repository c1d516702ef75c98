"""kvlint.toml_snapshot: the rules/ TOML tables kept parsed in a marshal snapshot, served only
while the folder holds exactly the files it was made from."""
from __future__ import annotations

import marshal
import os
import shutil
import sys
import time
from pathlib import Path

import pytest

from kvlint import toml_snapshot
from kvlint.catalog import Catalog
from kvlint.data import data_dir
from kvlint.facts import read_tables as read_fact_tables

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.9/3.10 only
    import tomli as tomllib

OLD_NS = 1_600_000_000 * 10 ** 9  # 2020: long settled


def _write(path: Path, text: str, mtime_ns: int = OLD_NS) -> Path:
    path.write_text(text, encoding="utf-8")
    os.utime(path, ns=(mtime_ns, mtime_ns))
    return path


@pytest.fixture
def folder(tmp_path):
    d = tmp_path / "codes"
    d.mkdir()
    _write(d / "a.toml", 'name = "a"\nlist = [1, 2]\n[sub]\nx = 1.5\n')
    _write(d / "b.toml", 'name = "b"\nflag = true\n')
    return d


def _plain(folder: Path):
    return [(p, tomllib.loads(p.read_text(encoding="utf-8"))) for p in sorted(folder.glob("*.toml"))]


def _no_parse(monkeypatch):
    def refuse(path):
        raise AssertionError(f"parsed {path.name}, the snapshot should have served it")
    monkeypatch.setattr(toml_snapshot, "_parse", refuse)


def test_round_trip_equals_tomllib_and_is_served_from_the_snapshot(folder, tmp_path, monkeypatch):
    snap = tmp_path / "snap.marshal"
    first = toml_snapshot.read_tables(folder, "*.toml", snap, write=True)
    assert first == _plain(folder)
    assert snap.is_file()
    _no_parse(monkeypatch)
    assert toml_snapshot.read_tables(folder, "*.toml", snap, write=True) == first


def test_without_a_snapshot_path_the_files_are_parsed(folder):
    assert toml_snapshot.read_tables(folder, "*.toml") == _plain(folder)


@pytest.mark.parametrize("change", ["edit_same_size", "edit_longer", "add", "remove"])
def test_a_changed_folder_is_parsed_again(folder, tmp_path, change):
    snap = tmp_path / "snap.marshal"
    toml_snapshot.read_tables(folder, "*.toml", snap, write=True)
    if change == "edit_same_size":  # same size, another (old) time
        _write(folder / "a.toml", 'name = "A"\nlist = [1, 2]\n[sub]\nx = 1.5\n', OLD_NS + 10 ** 9)
    elif change == "edit_longer":  # another size, the same time
        _write(folder / "a.toml", 'name = "aa"\nlist = [1, 2]\n[sub]\nx = 1.5\n')
    elif change == "add":
        _write(folder / "c.toml", 'name = "c"\n')
    else:
        (folder / "b.toml").unlink()
    assert toml_snapshot.read_tables(folder, "*.toml", snap, write=True) == _plain(folder)


def test_a_file_changed_within_the_settling_time_gets_no_snapshot(folder, tmp_path):
    snap = tmp_path / "snap.marshal"
    _write(folder / "a.toml", 'name = "young"\n', time.time_ns())
    assert toml_snapshot.read_tables(folder, "*.toml", snap, write=True) == _plain(folder)
    assert not snap.exists()


def test_write_false_reads_but_does_not_write(folder, tmp_path, monkeypatch):
    snap = tmp_path / "snap.marshal"
    toml_snapshot.read_tables(folder, "*.toml", snap, write=False)
    assert not snap.exists()
    toml_snapshot.read_tables(folder, "*.toml", snap, write=True)
    _no_parse(monkeypatch)
    toml_snapshot.read_tables(folder, "*.toml", snap, write=False)


def test_by_default_no_snapshot_is_written_where_python_writes_no_bytecode(folder, tmp_path, monkeypatch):
    snap = tmp_path / "snap.marshal"
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    toml_snapshot.read_tables(folder, "*.toml", snap)
    assert not snap.exists()
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    toml_snapshot.read_tables(folder, "*.toml", snap)
    assert snap.exists()


@pytest.mark.parametrize("blob", [
    b"", b"not marshal", marshal.dumps(42), marshal.dumps((99, [], {})),
    marshal.dumps((toml_snapshot.FORMAT, [1, 2], {})),
    marshal.dumps((toml_snapshot.FORMAT, "stamps", {})),
])
def test_a_corrupt_or_foreign_snapshot_is_ignored_and_replaced(folder, tmp_path, blob):
    snap = tmp_path / "snap.marshal"
    snap.write_bytes(blob)
    assert toml_snapshot.read_tables(folder, "*.toml", snap, write=True) == _plain(folder)
    assert snap.read_bytes() != blob


def test_stamps_that_match_but_tables_that_do_not_are_ignored(folder, tmp_path):
    snap = tmp_path / "snap.marshal"
    stamps = toml_snapshot._stamps(sorted(folder.glob("*.toml")))
    snap.write_bytes(marshal.dumps((toml_snapshot.FORMAT, stamps, {"a.toml": {}})))  # b.toml missing
    assert toml_snapshot.read_tables(folder, "*.toml", snap, write=False) == _plain(folder)


def test_a_table_marshal_cannot_hold_is_parsed_each_time(folder, tmp_path):
    snap = tmp_path / "snap.marshal"
    _write(folder / "a.toml", "when = 2026-12-06T10:00:00Z\n")
    assert toml_snapshot.read_tables(folder, "*.toml", snap, write=True) == _plain(folder)
    assert not snap.exists()


def test_an_unwritable_place_parses_without_complaint(folder, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    snap = blocker / "sub" / "snap.marshal"  # a folder under a regular file cannot be made
    assert toml_snapshot.read_tables(folder, "*.toml", snap, write=True) == _plain(folder)


def test_only_the_installed_rules_folders_get_a_snapshot(folder):
    assert toml_snapshot.default_snapshot(folder, "*.toml") is None
    for sub, pattern in (("codes", "KV*.toml"), ("facts", "*.toml")):
        path = toml_snapshot.default_snapshot(data_dir() / sub, pattern)
        assert path is not None and path.parent.name == "__pycache__"
        assert path.parent.parent == Path(toml_snapshot.__file__).resolve().parent
    assert (toml_snapshot.default_snapshot(data_dir() / "codes", "KV*.toml")
            != toml_snapshot.default_snapshot(data_dir() / "facts", "*.toml"))


def test_the_catalog_and_facts_are_the_same_with_and_without_snapshots(tmp_path, monkeypatch):
    real = tmp_path / "rules"  # a settled copy of the rules/ folder (a fresh clone's files are young)
    shutil.copytree(data_dir(), real)
    for path in real.rglob("*"):
        os.utime(path, ns=(OLD_NS, OLD_NS))
    monkeypatch.setattr(toml_snapshot, "default_snapshot", lambda folder, pattern: None)
    fresh_facts = read_fact_tables(real / "facts")
    without = Catalog(real)

    def into_tmp(folder, pattern):
        return tmp_path / f"{folder.name}.marshal" if folder.parent == real else None

    monkeypatch.setattr(toml_snapshot, "default_snapshot", into_tmp)
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    assert read_fact_tables(real / "facts") == fresh_facts and Catalog(real).rules == without.rules
    assert (tmp_path / "facts.marshal").is_file() and (tmp_path / "codes.marshal").is_file()
    _no_parse(monkeypatch)
    assert read_fact_tables(real / "facts") == fresh_facts and Catalog(real).rules == without.rules
