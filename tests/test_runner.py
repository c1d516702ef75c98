"""The runner: results in input order whatever the scheduling, --jobs, worker crashes."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from kvlint import runner
from kvlint.cli import main
from kvlint.settings import Settings

BAD = "import torch_npu\nout = torch_npu.npu_fused_infer_attention_score(q, k, v, num_heads={n})\n"  # KV103
CLEAN = "import os\nprint(os.sep)\n"


@pytest.fixture
def tree(tmp_path):
    paths = []
    for i in range(40):
        p = tmp_path / f"m{i:02d}.py"
        p.write_text(BAD.format(n=i) if i % 3 == 0 else CLEAN)
        paths.append(str(p))
    return paths


def summary(results):
    return [(r.path, [(f.line, f.column, f.code, f.message) for f in r.findings], r.errors) for r in results]


def test_results_follow_the_input_order_with_workers(tree, monkeypatch):
    monkeypatch.setattr(runner, "MIN_FILES_PER_WORKER", 1)
    shuffled = tree[::-1][:20] + tree[20:][::-1] + tree[:20]
    serial = runner.check_files(shuffled, Settings(), jobs=1)
    parallel = runner.check_files(shuffled, Settings(), jobs=2)
    assert [r.path for r in parallel] == shuffled
    assert summary(parallel) == summary(serial)
    assert sum(len(r.findings) for r in parallel) == len([p for p in shuffled if "num_heads" in open(p).read()])


def test_jobs_1_uses_no_pool(tree, monkeypatch):
    def no_pool(*args, **kwargs):
        raise AssertionError("a pool was started")

    monkeypatch.setattr(runner, "_pool", no_pool)
    assert len(runner.check_files(tree, Settings(), jobs=1)) == len(tree)


def test_few_files_stay_in_process(tree, monkeypatch):
    monkeypatch.setattr(runner, "_pool", lambda *a, **k: (_ for _ in ()).throw(AssertionError("pool")))
    assert len(runner.check_files(tree[:3], Settings(), jobs=8)) == 3


def test_chunks_cover_every_file_once():
    items = [(i, f"f{i}.py") for i in range(1001)]
    chunks = runner._chunks(items, 2)
    assert [x for c in chunks for x in c] == items
    assert max(len(c) for c in chunks) <= runner.MAX_CHUNK


def test_a_worker_that_dies_costs_only_its_file(tree, monkeypatch):
    """A file that kills its worker process (as a C-level crash would) gets a KV000; the
    other files of its chunk are retried and checked."""
    monkeypatch.setattr(runner, "MIN_FILES_PER_WORKER", 1)
    if "fork" not in __import__("multiprocessing").get_all_start_methods():
        pytest.skip("needs fork to inject the crash into workers")
    crash_on(monkeypatch, tree[4])
    only_the_victim_lost(runner.check_files(tree, Settings(), jobs=2), tree, tree[4])


def crash_on(monkeypatch, victim):
    """check_one kills its worker process on `victim` (as a C-level crash would); forked
    workers inherit the patch."""
    real = runner.check_one

    def crashing(checker, path, *rest):
        if path == victim:
            os._exit(3)
        return real(checker, path, *rest)

    monkeypatch.setattr(runner, "check_one", crashing)


def only_the_victim_lost(results, tree, victim):
    by_path = {r.path: r for r in results}
    assert [f.code for f in by_path[victim].findings] == ["KV000"]
    assert "crashed" in by_path[victim].findings[0].message
    assert [f.code for f in by_path[tree[3]].findings] == ["KV103"]  # same chunk, still checked
    assert [r.path for r in results] == tree


def test_cli_jobs_option(tree, capsys, tmp_path):
    assert main(["check", "--isolated", "--no-cache", "--jobs", "2", "--format", "concise", str(tmp_path)]) == 1
    two = capsys.readouterr().out
    assert main(["check", "--isolated", "--no-cache", "-j", "1", "--format", "concise", str(tmp_path)]) == 1
    assert capsys.readouterr().out == two
    assert main(["check", "--jobs", "0", str(tmp_path)]) == 2
    assert "at least 1" in capsys.readouterr().err


def test_no_process_support_falls_back_to_one_process(tree, monkeypatch):
    def unavailable(workers):
        raise OSError(38, "Function not implemented")  # what sem_open gives in some sandboxes

    monkeypatch.setattr(runner, "_pool", unavailable)
    monkeypatch.setattr(runner, "MIN_FILES_PER_WORKER", 1)
    results = runner.check_files(tree, Settings(), jobs=2)
    assert [r.path for r in results] == tree and sum(len(r.findings) for r in results) == 14


def test_collector_thresholds_are_raised_during_a_run_and_restored(tree, monkeypatch):
    import gc

    seen = []
    real = runner.check_one

    def spy(checker, path, hashed=True):
        seen.append((gc.get_threshold(), gc.get_freeze_count() > 0))
        return real(checker, path, hashed)

    monkeypatch.setattr(runner, "check_one", spy)
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    try:
        runner.check_files(tree[:3], Settings(), jobs=1)
        assert gc.get_threshold() == (700, 10, 10)
        assert gc.get_freeze_count() == 0  # what the run froze is unfrozen
    finally:
        gc.set_threshold(*before)
    assert seen and all(t == runner.COLLECTOR_THRESHOLDS and frozen for t, frozen in seen)


def test_a_host_freeze_is_left_as_the_host_made_it(tree):
    import gc

    gc.freeze()
    try:
        runner.check_files(tree[:2], Settings(), jobs=1)
        assert gc.get_freeze_count() > 0  # not unfrozen by the run
    finally:
        gc.unfreeze()


def _no_new_pool(*args, **kwargs):
    raise AssertionError("a new pool was started: the prestarted one was not used")


@pytest.mark.skipif("fork" not in __import__("multiprocessing").get_all_start_methods(), reason="needs fork")
def test_a_prestarted_pool_serves_the_batch(tree, monkeypatch):
    monkeypatch.setattr(runner, "MIN_FILES_PER_WORKER", 1)
    serial = runner.check_files(tree, Settings(), jobs=1)
    runner.prestart(2)
    try:
        assert len(runner._PRESTARTED) == 1
        monkeypatch.setattr(runner, "_pool", _no_new_pool)
        parallel = runner.check_files(tree, Settings(), jobs=2)
    finally:
        runner.stop_prestarted()
    assert runner._PRESTARTED == []  # taken by the batch
    assert summary(parallel) == summary(serial)


SRC_LAYOUT = {
    "src/pkg/__init__.py": "",
    "src/pkg/ops.py": "import torch_npu\nfia_op = torch_npu.npu_fused_infer_attention_score\n",
    # found only through the root `src` given on the command line (KV103 through the alias)
    "app/use.py": "# the npu_fused_infer_attention_score alias of pkg.ops\nfrom pkg.ops import fia_op\n\n\n"
                  "def run(q, k, v):\n    return fia_op(q, k, v, num_heads=8)\n",
}


@pytest.mark.skipif("fork" not in __import__("multiprocessing").get_all_start_methods(), reason="needs fork")
def test_prestarted_workers_get_the_import_roots(tmp_path, monkeypatch):
    """Workers forked before the checker was built get the import roots with their chunks."""
    for rel, text in SRC_LAYOUT.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    for i in range(8):
        (tmp_path / "app" / f"clean{i}.py").write_text(CLEAN)
    paths = sorted(str(p) for p in tmp_path.rglob("*.py"))
    roots = [str(tmp_path / "app"), str(tmp_path / "src")]
    monkeypatch.setattr(runner, "MIN_FILES_PER_WORKER", 1)
    monkeypatch.setattr(runner, "_CHECKERS", {})  # not a checker of an earlier test, with other roots
    runner.prestart(2)
    try:
        results = runner.check_files(paths, Settings(), jobs=2, roots=roots)
    finally:
        runner.stop_prestarted()
    found = [(os.path.relpath(r.path, tmp_path), f.line, f.code) for r in results for f in r.findings]
    assert found == [("app/use.py", 6, "KV103")]


def _checkers_here():
    return [(key, checker.project.roots) for key, checker in runner._CHECKERS.items()]


@pytest.mark.skipif("fork" not in __import__("multiprocessing").get_all_start_methods(), reason="needs fork")
def test_prestarted_workers_build_the_checker_for_the_settings_given(tmp_path, monkeypatch):
    """prestart(jobs, settings, roots): each worker builds that checker as it starts, before
    any chunk (the walk's first files then find it built); without settings, none."""
    monkeypatch.setattr(runner, "_CHECKERS", {})
    settings = Settings(select=("KV1",))
    runner.prestart(2, settings, [str(tmp_path)])
    try:
        built = runner._PRESTARTED[0].submit(_checkers_here).result()
    finally:
        runner.stop_prestarted()
    assert built == [(runner._settings_key(settings), [str(tmp_path)])]
    runner.prestart(2)
    try:
        assert runner._PRESTARTED[0].submit(_checkers_here).result() == []
    finally:
        runner.stop_prestarted()


def test_an_unused_prestarted_pool_is_stopped(tmp_path):
    runner.prestart(2)
    pool = runner._PRESTARTED[0]
    processes = list(pool._processes.values())
    runner.stop_prestarted()
    assert runner._PRESTARTED == [] and processes and not any(p.is_alive() for p in processes)


MAIN_LOADS = """
import sys
from kvlint.cli import main
code = main(["check", "--no-cache", "--jobs", "2", sys.argv[1]])
print("loaded:", sorted(m for m in ("kvlint.catalog", "kvlint.checks", "kvlint.engine") if m in sys.modules))
sys.exit(code)
"""


@pytest.mark.skipif("fork" not in __import__("multiprocessing").get_all_start_methods(), reason="needs fork")
def test_a_cold_parallel_run_loads_no_rules_in_the_main_process(tree):
    """The prestarted workers load the catalog and the rules; the main process, which only
    walks and writes the report, never does (it forks them before it would: runner.prestart)."""
    folder = os.path.dirname(tree[0])
    done = subprocess.run([sys.executable, "-c", MAIN_LOADS, folder], capture_output=True, text=True,
                          cwd=folder, timeout=120)
    assert done.returncode == 1, done.stderr  # findings: the workers checked the files
    assert "KV103" in done.stdout
    assert done.stdout.splitlines()[-1] == "loaded: []"


def test_prestart_with_one_job_starts_nothing():
    runner.prestart(1)
    assert runner._PRESTARTED == []


@pytest.mark.parametrize("argv, cache, expected", [
    (["--no-cache", "{dir}"], None, True),          # a folder, caching off
    (["{dir}"], "absent", True),                     # a folder, no cache folder yet
    (["{dir}"], "present", False),                   # a cached re-check
    (["--no-cache", "--jobs", "1", "{dir}"], None, False),
    (["--no-cache", "{file}"], None, False),         # files only (a pre-commit hook's run)
])
def test_cold_folders_heuristic(tmp_path, monkeypatch, argv, cache, expected):
    from kvlint.cli import build_parser
    from kvlint.commands.check import _cold_folders

    monkeypatch.delenv("KVLINT_NO_CACHE", raising=False)  # tests/conftest.py turns caching off
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text(CLEAN)
    cache_dir = tmp_path / "cache"
    if cache == "present":
        cache_dir.mkdir()
    words = [w.format(dir=tmp_path / "pkg", file=tmp_path / "pkg" / "m.py") for w in argv]
    args = build_parser().parse_args(["check", "--cache-dir", str(cache_dir), *words])
    assert _cold_folders(args) is expected


# -- the stream of a cold run: files go to the workers while the walk goes on --------------------
@pytest.fixture(autouse=True)
def _gates_released():
    """A test that fails while a RecordingPool's gate is closed must not hang the run (its
    threads would wait at the gate, and the interpreter waits for them at exit)."""
    yield
    while RecordingPool.gates_made:
        RecordingPool.gates_made.pop().set()


class RecordingPool:
    """A thread pool standing for the process pool: records each chunk sent and how many
    were out at that moment. With a `gate` (a threading.Event), no chunk is checked before
    it is set: what is sent during a walk then does not depend on the threads' timing."""

    gates_made: list = []  # the gates of every recorder: released after each test

    def __init__(self, workers=2, gate=None):
        from concurrent.futures import ThreadPoolExecutor

        self.pool = ThreadPoolExecutor(workers)
        self.sizes, self.out, self.futures, self.chunks = [], [], [], []
        self.shut = False
        self.gate = gate
        if gate is not None:
            RecordingPool.gates_made.append(gate)

    def submit(self, fn, settings, chunk, *rest):
        self.sizes.append(len(chunk))
        self.chunks.append([path for _, path in chunk])
        if self.gate is not None:
            fn = _after(self.gate, fn)
        future = self.pool.submit(fn, settings, chunk, *rest)
        self.out.append(sum(1 for f in self.futures if not f.done()) + 1)
        self.futures.append(future)
        return future

    def shutdown(self, wait=True, cancel_futures=False):
        self.shut = True
        self.pool.shutdown(wait=wait, cancel_futures=cancel_futures)


def _after(gate, fn):
    def gated(*args):
        gate.wait()
        return fn(*args)
    return gated


def test_a_stream_gives_every_file_the_serial_outcome(tree):
    pool = RecordingPool()
    stream = runner.Stream(pool, 2, hashed=False, roots=())
    other = Settings(ignore=("KV103",))
    for n, path in enumerate(tree):
        stream.add(path, other if n % 4 == 0 else Settings())
    mine = [p for n, p in enumerate(tree) if n % 4 != 0]
    theirs = [p for n, p in enumerate(tree) if n % 4 == 0]
    assert summary(runner.check_files(mine, Settings(), jobs=1, stream=stream)) == \
        summary(runner.check_files(mine, Settings(), jobs=1))
    assert summary(runner.check_files(theirs, other, jobs=1, stream=stream)) == \
        summary(runner.check_files(theirs, other, jobs=1))
    assert sum(pool.sizes) == len(tree) and max(pool.sizes) <= runner.MAX_CHUNK
    assert max(pool.out) <= 4  # at most two chunks per worker out at a time
    assert stream.outcome("never/added.py") is None
    stream.close()
    assert pool.shut


def test_a_stream_ends_with_small_chunks(tmp_path):
    paths = []
    for i in range(300):
        (tmp_path / f"c{i:03d}.py").write_text(CLEAN)
        paths.append(str(tmp_path / f"c{i:03d}.py"))
    import threading

    gate = threading.Event()  # no chunk ends during the walk: what goes out then is fixed
    pool = RecordingPool(gate=gate)
    stream = runner.Stream(pool, 2, hashed=False, roots=())
    sent_during_walk = []
    for path in paths:
        stream.add(path, Settings())
        sent_during_walk.append(len(pool.sizes))
    gate.set()
    runner.check_files(paths, Settings(), jobs=1, stream=stream)
    stream.close()
    assert sent_during_walk[0] == 1  # an idle worker gets the first file at once
    # each idle worker one file at once, then full chunks until two per worker are out
    assert pool.sizes[:sent_during_walk[-1]] == [1, 1, runner.MAX_CHUNK, runner.MAX_CHUNK]
    assert pool.sizes[-4:] == [1, 1, 1, 1]  # guided: the last chunks are single files
    assert sum(pool.sizes) == 300


@pytest.mark.skipif("fork" not in __import__("multiprocessing").get_all_start_methods(), reason="needs fork")
def test_a_worker_that_dies_in_a_stream_costs_only_its_file(tree, monkeypatch):
    crash_on(monkeypatch, tree[5])
    runner.prestart(2)
    stream = runner.open_stream(2, hashed=False)
    try:
        for path in tree:
            stream.add(path, Settings())
        results = runner.check_files(tree, Settings(), jobs=2, stream=stream)
    finally:
        runner.stop_prestarted()
    only_the_victim_lost(results, tree, tree[5])
    assert runner._STREAMS == []


@pytest.mark.skipif("fork" not in __import__("multiprocessing").get_all_start_methods(), reason="needs fork")
def test_a_cold_folder_run_streams_to_the_prestarted_workers(tree, tmp_path, capsys, monkeypatch):
    opened = []
    real = runner.open_stream
    monkeypatch.setattr(runner, "open_stream", lambda *a, **k: opened.append(real(*a, **k)) or opened[-1])
    assert main(["check", "--isolated", "--no-cache", "--jobs", "2", "--format", "concise", str(tmp_path)]) == 1
    streamed = capsys.readouterr().out
    assert opened and opened[0] is not None and opened[0]._pool is None  # used, then closed
    assert main(["check", "--isolated", "--no-cache", "-j", "1", "--format", "concise", str(tmp_path)]) == 1
    assert capsys.readouterr().out == streamed


def test_a_big_file_goes_alone(tmp_path):
    """Chunks are measured in bytes: a big model file is sent alone, not with the files
    around it (which would make one chunk, and one worker, the last to end)."""
    paths = []
    for i in range(60):
        p = tmp_path / f"f{i:02d}.py"
        p.write_text(CLEAN * (20000 if i in (30, 50) else 1))  # two files of ~340 KB
        paths.append(str(p))
    pool = RecordingPool()
    stream = runner.Stream(pool, 2, hashed=False, roots=())
    for path in paths:
        stream.add(path, Settings())
    results = runner.check_files(paths, Settings(), jobs=1, stream=stream)
    stream.close()
    assert [r.path for r in results] == paths
    for big in (paths[30], paths[50]):
        assert [c for c in pool.chunks if big in c] == [[big]]
    assert sorted(p for c in pool.chunks for p in c) == sorted(paths)


def test_after_the_walk_the_big_files_go_first(tmp_path):
    import threading

    gate = threading.Event()
    paths, sizes = [], {}
    for i in range(80):
        p = tmp_path / f"g{i:02d}.py"
        repeat = {40: 8000, 70: 12000, 75: 9000}.get(i, 1)  # three files of 150-210 KB, found late
        p.write_text(CLEAN * repeat)
        paths.append(str(p))
        sizes[str(p)] = p.stat().st_size
    pool = RecordingPool(gate=gate)
    stream = runner.Stream(pool, 2, hashed=False, roots=())
    for path in paths:
        stream.add(path, Settings())
    during_walk = len(pool.chunks)
    assert during_walk == 4  # two chunks per worker out; the others wait
    gate.set()
    runner.check_files(paths, Settings(), jobs=1, stream=stream)
    stream.close()
    after = pool.chunks[during_walk:]
    assert after[:3] == [[paths[70]], [paths[75]], [paths[40]]]  # the biggest first, each alone
    assert sorted(p for c in pool.chunks for p in c) == sorted(paths)
