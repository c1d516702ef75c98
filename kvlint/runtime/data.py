"""The runtime contracts' data: rules/contracts.toml, read once."""
from __future__ import annotations

import sys
from functools import lru_cache

from kvlint.catalog import data_dir

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@lru_cache(maxsize=1)
def contracts_data() -> dict:
    return tomllib.loads((data_dir() / "contracts.toml").read_text(encoding="utf-8"))
