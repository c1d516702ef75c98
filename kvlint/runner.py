"""Check many files: the cache first, then a process pool over the rest; results come back
in the order of the input paths whatever the scheduling.

- `jobs`: worker processes (default: the CPUs this process may use); `jobs=1`, or too few
  files to repay starting workers, checks in this process.
- Each worker builds one `Checker` per settings and keeps it (rules, catalog and pre-filter
  are built once per process, not per file). Files go out in chunks; each result comes back
  as findings only (no tree, no source text), so memory stays bounded by the largest file.
- Reading never blocks and never crashes: a FIFO, a device, a directory named `x.py`, a
  broken link or an unreadable file is a KV000 finding (`cannot read: ...`), and the run goes
  on. A worker that dies (e.g. the interpreter's C stack on absurd input) costs only its
  chunk's files, which are retried one by one in fresh workers; a file that kills a worker
  again gets a KV000 finding.
- `prestart(jobs)`: a cold run (no cache) starts its workers before discovery and
  configuration; each loads the catalog and imports the rules itself while this process
  walks (this process needs neither: a text or JSON report is written from the findings),
  and the first parallel batch uses them (`stop_prestarted()` ends them if none does).
  `open_stream()` turns them into a Stream: `kvlint check` adds each file as the walk finds
  it, so the workers start checking before the walk ends, and the last chunks are small so
  that they end together.
"""
from __future__ import annotations

import gc
import os
from contextlib import contextmanager
from typing import TYPE_CHECKING, Dict, Iterable, List, Optional, Sequence, Tuple

from kvlint.analysis.findings import FileResult
from kvlint.cache import Cache, digest
from kvlint.settings import Settings
from kvlint.source import read_file

if TYPE_CHECKING:
    from concurrent.futures import Future, ProcessPoolExecutor

    from kvlint.engine import Checker

MIN_FILES_PER_WORKER = 8  # below this, starting workers costs more than it saves
MAX_CHUNK = 16

Outcome = Tuple[FileResult, Optional[os.stat_result], Optional[str]]  # result, stat, content hash


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _job_count(jobs: Optional[int]) -> int:
    """`--jobs` as given (at least 1), or the CPUs this process may run on when not given."""
    return default_jobs() if jobs is None else max(1, jobs)


def check_files(paths: Sequence[str], settings: Settings, jobs: Optional[int] = None,
                cache: Optional[Cache] = None, roots: Sequence[str] = (),
                stream: Optional["Stream"] = None) -> List[FileResult]:
    """One FileResult per path, in the order of `paths`. `roots`: the folders and files given
    on the command line (import roots of the checked project). `stream`: a Stream these
    paths were added to (with these settings), whose outcomes are taken for the files the
    cache does not hold."""
    with collector_tuned():
        return _check_files(paths, settings, jobs, cache, roots, stream)


def _check_files(paths: Sequence[str], settings: Settings, jobs: Optional[int], cache: Optional[Cache],
                 roots: Sequence[str], stream: Optional["Stream"] = None) -> List[FileResult]:
    results: List[Optional[FileResult]] = [None] * len(paths)
    todo: List[int] = []
    for i, path in enumerate(paths):
        hit = cache.get(path) if cache is not None else None
        if hit is not None:
            results[i] = hit
        else:
            outcome = stream.outcome(path) if stream is not None else None
            if outcome is None:
                todo.append(i)
                continue
            results[i] = outcome[0]
            if cache is not None:
                cache.put(path, outcome[1], outcome[2], outcome[0])
    if todo:
        jobs = _job_count(jobs)
        workers = min(jobs, len(todo) // MIN_FILES_PER_WORKER)
        pending = [(i, paths[i]) for i in todo]
        hashed = cache is not None
        if workers > 1:
            outcomes = _check_parallel(pending, settings, workers, hashed, tuple(roots))
        else:
            checker = _checker(settings, roots)
            _freeze_setup()  # (again, for a second batch with the same checker)
            outcomes = ((i, check_one(checker, path, hashed)) for i, path in pending)
        for i, (result, st, content_hash) in outcomes:
            results[i] = result
            if cache is not None:
                cache.put(paths[i], st, content_hash, result)
    return results  # type: ignore[return-value]


# The cyclic garbage collector, by default, runs every 700 net allocations and walks the
# whole heap every ~70,000 young collections' worth: a check allocates millions of short-lived
# AST nodes, so at the defaults the collector took a fifth of a cold scan (cann-recipes-infer +
# vllm-ascend, --jobs 1, best of 5: 4.47 s CPU at the defaults, 3.52 s with these; 3.51 s with
# no collector at all, at 23% more memory). Trees and indexes hold no reference cycles, so
# reference counting frees them; raised thresholds still collect the cycles there are.
COLLECTOR_THRESHOLDS = (50_000, 20, 100)


# glibc's malloc serves a block above its mmap threshold (128 KiB at first) with a fresh
# mmap, and gives the top of its heap back to the system whenever more than its trim
# threshold (128 KiB too) is free there: a check reads files and builds dict and list tables
# of that size and frees them after each file, so the next file's page faults zero the same
# memory again. Freeing one block of KEEP_FREED_BYTES raises both thresholds (glibc's dynamic
# threshold: to that block's size, and the trim threshold to twice it), so freed memory up to
# that size is reused. The block is allocated by calloc from a fresh mapping and never touched
# (no page is faulted in). The thresholds stay raised in the process (at most 8 MiB of freed
# heap kept). cann-recipes-infer + vllm-ascend, 2 workers, 6 alternated pairs: 54,000 ->
# 31,600 minor page faults, 0.43 -> 0.30 s of system time, about 5 % of the wall time. Other
# allocators ignore it.
KEEP_FREED_BYTES = 4 << 20
_freed_memory_kept = False


def _keep_freed_memory() -> None:
    """Once per process (a worker forked after it inherits it): see KEEP_FREED_BYTES."""
    global _freed_memory_kept
    if not _freed_memory_kept:
        _freed_memory_kept = True
        block = bytes(KEEP_FREED_BYTES)
        del block


@contextmanager
def collector_tuned():
    """Raise the collector's thresholds for a batch of files; `_freeze_setup()` inside it
    freezes the objects built before the files (catalog, rules, pre-filter: never garbage,
    then never scanned, and forked workers do not copy their pages by touching them). The
    thresholds are restored afterwards, and what was frozen unfrozen, unless the host process
    had frozen objects of its own (then they stay as it left them)."""
    old = gc.get_threshold()
    host_froze = gc.get_freeze_count() > 0
    _keep_freed_memory()
    gc.set_threshold(*COLLECTOR_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*old)
        if not host_froze:
            gc.unfreeze()


def _freeze_setup() -> None:
    if gc.get_freeze_count() == 0:
        gc.freeze()


def _worker_init() -> None:  # a spawned worker (no fork) starts with the default thresholds
    gc.set_threshold(*COLLECTOR_THRESHOLDS)
    _keep_freed_memory()


def _worker_warm(settings: Optional[Settings] = None, roots: Sequence[str] = ()) -> None:
    """A prestarted worker: the catalog and the rules are loaded now (`prestart` forks it
    before they are loaded); with `settings`, the Checker for them is built now (while the
    walk finds the first files), else on the first chunk, then frozen."""
    _worker_init()
    _load_setup()
    if settings is not None:
        _checker(settings, roots)


def _load_setup() -> None:
    from kvlint.catalog import load_catalog
    from kvlint.checks import all_rules

    load_catalog()
    all_rules()


# -- one file --------------------------------------------------------------------------------
def check_one(checker, path: str, hashed: bool = True) -> Outcome:
    """Check one file; with `hashed`, also its stat and content hash (for the cache; without,
    neither: a stat_result doubles the pickled outcome a worker sends back)."""
    st, data, reason = read_file(path)
    if data is None:
        return checker._failure(path, reason), None, None
    result = checker.check_bytes(path, data)
    return (result, st, digest(data)) if hashed else (result, None, None)


# -- workers -----------------------------------------------------------------------------------
_CHECKERS: Dict[object, "Checker"] = {}  # by _settings_key


def _checker(settings: Settings, roots: Sequence[str] = ()) -> "Checker":
    """The Checker for these settings in this process, built once (then the setup objects are
    frozen for the collector: in a batch, see collector_tuned, or in a worker); `roots`:
    import roots its project gains."""
    key = _settings_key(settings)
    checker = _CHECKERS.get(key)
    if checker is None:
        from kvlint.engine import Checker

        checker = _CHECKERS[key] = Checker(settings)
        checker.project.add_roots(roots)
        _freeze_setup()
    elif roots:
        checker.project.add_roots(roots)
    return checker


def _settings_key(settings: Settings):
    try:
        hash(settings)
        return settings
    except TypeError:  # a dict field (severity): fall back to its repr
        return repr(settings)


def _check_chunk(settings: Settings, chunk: List[Tuple[int, str]], hashed: bool = True,
                 roots: Sequence[str] = ()) -> List[Tuple[int, Outcome]]:
    checker = _checker(settings, roots)
    return [(i, check_one(checker, path, hashed)) for i, path in chunk]


def _pool(workers: int, initializer=_worker_init, initargs: tuple = ()) -> "ProcessPoolExecutor":
    import multiprocessing  # here, not at the top: a run served from the cache never pools
    from concurrent.futures import ProcessPoolExecutor

    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    return ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=initializer,
                               initargs=initargs)


_PRESTARTED: List["ProcessPoolExecutor"] = []  # at most one: started by prestart(), taken by a batch


def prestart(jobs: Optional[int] = None, settings: Optional[Settings] = None, roots: Sequence[str] = ()) -> None:
    """Start the workers of a coming parallel batch now (a cold scan's serial start: the
    folders are walked while the workers build their checkers, for `settings` and `roots`
    when given: the settings most files will have). The workers are forked before the
    catalog and the rules are loaded, and each loads them (`_worker_warm`): loaded here
    first, they were shared, but the fork came about 100 ms later and this process, which
    never uses them, spent about 120 ms more CPU; a cold run on cann-recipes-infer and
    vllm-ascend took 0.924x and 0.910x the time without it (medians of 15 and 12 alternated
    rounds). Does nothing with `jobs` 1 or where no pool can be made; the first
    `_check_parallel` or `open_stream` takes the pool, `stop_prestarted()` ends it if none
    did."""
    jobs = _job_count(jobs)
    if jobs < 2 or _PRESTARTED:
        return
    try:
        pool = _pool(jobs, initializer=_worker_warm, initargs=(settings, tuple(roots)))
        pool.submit(int)  # a fork-context pool starts all its workers at its first task
    except (OSError, ImportError, NotImplementedError, RuntimeError):
        return
    _PRESTARTED.append(pool)


def stop_prestarted() -> None:
    """End a prestarted pool no batch took, and the pool of an open Stream."""
    while _PRESTARTED:
        _PRESTARTED.pop().shutdown(wait=True)
    while _STREAMS:
        _STREAMS.pop().close()


# -- a cold run's stream -----------------------------------------------------------------------
_STREAMS: List["Stream"] = []
WALK_CHUNK_BYTES = 256 * 1024  # a chunk sent during the walk: about 16 files of model code
BIG_FILE_BYTES = 64 * 1024  # after the walk, the waiting files this big are sent first
POLL_EVERY = 8  # while every worker has two chunks, finished ones are looked for every 8 files


def open_stream(jobs: Optional[int], hashed: bool, roots: Sequence[str] = ()) -> Optional["Stream"]:
    """A Stream over the pool `prestart(jobs)` started (None when there is none: prestart()
    was not called, or could make no pool)."""
    if not _PRESTARTED:
        return None
    pool = _PRESTARTED.pop()
    stream = Stream(pool, _job_count(jobs), hashed, roots)
    _STREAMS.append(stream)
    return stream


class Stream:
    """The files of a cold run, handed to the prestarted workers while the folders are still
    walked (`kvlint check` adds each file as discovery finds it), so that no worker waits for
    the end of the walk. At most two chunks per worker are out at a time and the other files
    wait here. Chunks are measured in bytes (a file's size stands for its cost: the few big
    model files take most of a scan): during the walk a chunk goes out when full
    (WALK_CHUNK_BYTES or MAX_CHUNK files), or at once while fewer chunks than workers are out;
    once the walk is over, the big files still waiting go first, biggest first (BIG_FILE_BYTES:
    a 240 KB model runner found last was the last to end), and a chunk holds at most the
    waiting bytes over twice the workers, so the last chunks are small and the workers end
    together (guided self-scheduling; a big file goes alone). `outcome(path)` waits for a
    file's outcome. A worker that dies breaks the pool: the chunks it failed, and the files
    still waiting, are checked as `_check_parallel` retries them. `hashed`: outcomes carry the
    content hash (for a cache)."""

    def __init__(self, pool: "ProcessPoolExecutor", workers: int, hashed: bool, roots: Sequence[str]):
        self._pool: Optional["ProcessPoolExecutor"] = pool
        self.workers = max(1, workers)
        self.hashed = hashed
        self.roots = tuple(roots)
        # per settings, in order of arrival: (settings, [(path, size)])
        self._waiting: Dict[object, Tuple[Settings, List[Tuple[str, int]]]] = {}
        self._bytes = 0  # waiting
        self._out: Dict["Future", Tuple[Settings, List[str]]] = {}  # future -> its chunk
        self._done: Dict[str, Outcome] = {}
        self._broken: List[Tuple[Settings, List[str]]] = []  # chunks to retry
        self._walked = False
        self._last: Tuple[Optional[Settings], object] = (None, None)
        self._added = 0

    def add(self, path: str, settings: Settings) -> None:
        if settings is not self._last[0]:  # the resolver hands out one object per configuration
            self._last = (settings, _settings_key(settings))
        key = self._last[1]
        entry = self._waiting.get(key)
        if entry is None:
            entry = self._waiting[key] = (settings, [])
        try:
            size = os.stat(path).st_size
        except OSError:
            size = 0  # the worker reports it
        entry[1].append((path, size))
        self._bytes += size
        self._added += 1
        if len(self._out) < 2 * self.workers or self._added % POLL_EVERY == 0:
            self._pump(block=False)  # (asking each future whether it is done costs)

    def outcome(self, path: str) -> Optional[Outcome]:
        """The outcome of a file added before (None for one never added): the first call ends
        the stream (every waiting file is sent) and waits for the chunk holding it."""
        if path not in self._done:
            self._finish()
        return self._done.pop(path, None)

    def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)

    # -- scheduling ------------------------------------------------------------------------
    def _budget(self) -> int:
        if not self._walked:
            return WALK_CHUNK_BYTES
        return self._bytes // (2 * self.workers)

    def _pump(self, block: bool) -> None:
        """Collect the finished chunks (with `block`, wait for one first), then send waiting
        files while fewer than two chunks per worker are out."""
        if self._out and (block or len(self._out) >= 2 * self.workers):
            done: Iterable["Future"]
            if block:
                from concurrent.futures import FIRST_COMPLETED, wait

                done = wait(list(self._out), return_when=FIRST_COMPLETED)[0]
            else:
                done = [f for f in self._out if f.done()]
            for future in done:
                self._collect(future)
        while self._pool is not None and self._waiting and len(self._out) < 2 * self.workers:
            key = next(iter(self._waiting))
            settings, files = self._waiting[key]
            budget, taken, n = self._budget(), 0, 0
            while n < len(files) and n < MAX_CHUNK and (n == 0 or taken + files[n][1] <= budget):
                taken += files[n][1]
                n += 1
            full = n == MAX_CHUNK or n < len(files)
            if not self._walked and not full and len(self._out) >= self.workers:
                break  # every worker has work: wait for a full chunk
            if n < len(files):
                self._waiting[key] = (settings, files[n:])
            else:
                del self._waiting[key]
            self._bytes -= taken
            self._send(settings, [path for path, _ in files[:n]])

    def _send(self, settings: Settings, chunk: List[str]) -> None:
        assert self._pool is not None
        try:
            future = self._pool.submit(_check_chunk, settings, list(enumerate(chunk)), self.hashed, self.roots)
        except RuntimeError:  # BrokenProcessPool (a RuntimeError), or a pool shut down
            self._broken.append((settings, chunk))
            self._break()
            return
        self._out[future] = (settings, chunk)

    def _collect(self, future: "Future") -> None:
        from concurrent.futures.process import BrokenProcessPool

        entry = self._out.pop(future, None)
        if entry is None:
            return  # collected already (by _break, while a batch of finished chunks was collected)
        settings, chunk = entry
        try:
            outcomes = future.result()
        except BrokenProcessPool:
            self._broken.append((settings, chunk))
            self._break()
            return
        except Exception as exc:  # an unpicklable result or the like: report, go on
            for path in chunk:
                self._done[path] = (_internal_error(path, exc), None, None)
            return
        for i, outcome in outcomes:
            self._done[chunk[i]] = outcome

    def _break(self) -> None:
        """The pool is broken: what is out fails (or has finished), what waits is retried."""
        if self._pool is None:
            return
        pool, self._pool = self._pool, None
        for future in list(self._out):
            self._collect(future)
        self._retry_waiting()
        pool.shutdown(wait=True)

    def _retry_waiting(self) -> None:
        """The files still waiting go to the retries (the pool is broken or closed)."""
        self._broken.extend((settings, [p for p, _ in files]) for settings, files in self._waiting.values())
        self._waiting.clear()
        self._bytes = 0

    def _finish(self) -> None:
        if not self._walked:
            self._walked = True
            # the big files still waiting go first (longest first, as in LPT scheduling, so
            # that none is left for the end), each settings' others after them in their order
            waiting = self._waiting.items()
            big = [(("big", k), (st, sorted((f for f in fs if f[1] >= BIG_FILE_BYTES), key=lambda f: -f[1])))
                   for k, (st, fs) in waiting]
            rest = [(("rest", k), (st, [f for f in fs if f[1] < BIG_FILE_BYTES])) for k, (st, fs) in waiting]
            self._waiting = {k: v for k, v in big + rest if v[1]}
        while self._pool is not None and (self._waiting or self._out):
            self._pump(block=True)
        self._retry_waiting()  # (files left only when the pool was closed before the end)
        while self._broken:
            settings, chunk = self._broken.pop(0)
            for i, outcome in _retried(settings, list(enumerate(chunk)), self.hashed, self.roots):
                self._done[chunk[i]] = outcome


def _chunks(items: List[Tuple[int, str]], workers: int) -> List[List[Tuple[int, str]]]:
    # ~8 chunks per worker balances the few slow files against the per-task overhead
    size = max(1, min(MAX_CHUNK, len(items) // (workers * 8) or 1))
    return [items[k:k + size] for k in range(0, len(items), size)]


def _check_parallel(items: List[Tuple[int, str]], settings: Settings, workers: int,
                    hashed: bool = True, roots: Sequence[str] = ()) -> Iterable[Tuple[int, Outcome]]:
    """Yield (index, outcome) as chunks finish (the caller puts them in order). A dead worker
    breaks the whole pool, failing the chunks still queued: each of those is retried in a
    pool of its own, and the files of a chunk that breaks that one too, one by one."""
    from concurrent.futures.process import BrokenProcessPool

    retry: List[List[Tuple[int, str]]] = []
    pool = _PRESTARTED.pop() if _PRESTARTED else None
    if pool is None:
        _checker(settings, roots)  # built before the fork: forked workers inherit it instead of each loading the catalog
        _freeze_setup()
        try:
            pool = _pool(workers)
        except (OSError, ImportError, NotImplementedError):  # no semaphores here (some sandboxes)
            checker = _checker(settings, roots)
            for i, path in items:
                yield i, check_one(checker, path, hashed)
            return
    with pool:
        futures = [(chunk, pool.submit(_check_chunk, settings, chunk, hashed, roots)) for chunk in _chunks(items, workers)]
        for chunk, future in futures:
            try:
                yield from future.result()
            except BrokenProcessPool:
                retry.append(chunk)
            except Exception as exc:  # an unpicklable result or the like: report, go on
                for i, path in chunk:
                    yield i, (_internal_error(path, exc), None, None)
    for chunk in retry:
        yield from _retried(settings, chunk, hashed, roots)


def _retried(settings: Settings, chunk: List[Tuple[int, str]], hashed: bool,
             roots: Sequence[str]) -> List[Tuple[int, Outcome]]:
    """A chunk whose pool broke, in a pool of its own; if that one breaks too, file by file."""
    from concurrent.futures.process import BrokenProcessPool

    try:
        with _pool(1) as pool:
            return pool.submit(_check_chunk, settings, chunk, hashed, roots).result()
    except BrokenProcessPool:
        return [(i, _isolated(settings, path, roots)) for i, path in chunk]


def _isolated(settings: Settings, path: str, roots: Sequence[str] = ()) -> Outcome:
    from concurrent.futures.process import BrokenProcessPool

    try:
        with _pool(1) as pool:
            return pool.submit(_check_chunk, settings, [(0, path)], True, roots).result()[0][1]
    except BrokenProcessPool:
        checker = _checker(settings)
        return checker._failure(path, "the checker process crashed on this file"), None, None


def _internal_error(path: str, exc: BaseException) -> FileResult:
    return FileResult(path, errors=[f"{path}: internal error: {type(exc).__name__}: {exc}"])


__all__ = ["check_files", "check_one", "default_jobs", "open_stream", "prestart", "stop_prestarted", "read_file"]  # read_file: kvlint.source
