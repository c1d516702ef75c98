"""Replacing a file whole: the bytes go to a temporary file in its folder, which is then
renamed over it (`os.replace`), so a reader (another run, an editor) sees the old file or the
new one, never a part, and a failure leaves the old one as it was. Used by `--fix`, the result
cache and the rules/ snapshots."""
from __future__ import annotations

import os
import tempfile
from typing import Optional


def replace_file(path: str, data: bytes, *, mode: Optional[int] = None, prefix: str = ".kvlint-",
                 suffix: str = ".tmp", sync: bool = False) -> None:
    """Write `data` to `path` atomically; `mode`: the new file's permission bits (default:
    mkstemp's 0o600); `sync`: on disk before the rename. The temporary file is removed on
    any failure, and the error raised."""
    fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=os.path.dirname(os.path.abspath(path)))
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            if sync:
                fh.flush()
                os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
