"""How many files a one-line edit of a helper module re-checks (the cache's dependency keys).

    python benchmarks/recheck.py /tmp/eco/vllm-project+vllm-ascend vllm_ascend/attention/utils.py

Copies the code base's .py files to a temporary folder (the code base is never written),
checks it with a fresh cache, appends one comment line to HELPER (a path inside the code
base), checks again and prints how many files were re-checked, which ones, and the time of
each run. Without dependency keys only the edited file would be re-checked (and findings
computed from the helper's old content would be served stale); with them, the edited file
and the files whose findings used it.
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from kvlint import runner  # noqa: E402
from kvlint.cache import Cache  # noqa: E402
from kvlint.discovery import iter_python_files  # noqa: E402
from kvlint.settings import Settings  # noqa: E402


def main(base: str, helper: str) -> int:
    recheck(base, helper)
    return 0


def recheck(base: str, helper: str, quiet: bool = False):
    """(files re-checked after the edit, files in the code base); prints the runs unless quiet."""
    with tempfile.TemporaryDirectory(prefix="kvlint-recheck-") as tmp:
        root = Path(tmp) / Path(base).name
        for dirpath, _, names in os.walk(base):
            for name in names:
                if name.endswith(".py"):
                    src = Path(dirpath) / name
                    dst = root / src.relative_to(base)
                    dst.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(src, dst)
        old = time.time() - 60
        for p in root.rglob("*.py"):
            os.utime(p, (old, old))  # stat keys trusted (not racy)
        files, _ = iter_python_files([str(root)])
        checked = []
        real = runner.check_one

        def counting(checker, path, *rest):
            checked.append(path)
            return real(checker, path, *rest)

        runner.check_one = counting
        settings = Settings()
        timings = []
        for step in ("cold", "warm", "after edit"):
            if step == "after edit":
                target = root / helper
                target.write_text(target.read_text(encoding="utf-8") + "# one-line edit\n", encoding="utf-8")
                os.utime(target, (old + 30, old + 30))
            checked.clear()
            cache = Cache(str(Path(tmp) / "cache"), settings)
            t = time.perf_counter()
            runner.check_files(files, settings, jobs=1, cache=cache, roots=[str(root)])
            cache.save()
            timings.append((step, time.perf_counter() - t, len(checked), list(checked)))
        runner.check_one = real
        for step, seconds, n, _ in timings:
            print(f"{step:>10}: {seconds:6.2f} s, {n} of {len(files)} files checked")
        if not quiet:
            print("re-checked after the edit:", ", ".join(sorted(os.path.relpath(p, root) for p in timings[-1][3])))
    return timings[-1][2], len(files)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
