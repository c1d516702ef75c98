"""Where kvlint's rules/ data lives (a module of its own: the result cache asks for it
without loading the catalog)."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path


@lru_cache(maxsize=1)
def data_dir() -> Path:
    """`kvlint/_rules` in an installed wheel, the repository's `rules/` in a checkout (looked
    for once: every rule module's facts ask, 40 look-ups of about 8 stats each)."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "_rules", here.parent / "rules"):
        if (candidate / "operators.json").is_file():
            return candidate
    raise FileNotFoundError("kvlint's rules/ data folder is missing from this installation")
