"""Reading a file the way Python would, without ever importing or running it."""
from __future__ import annotations

import io
import os
import stat
import tokenize
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Union


@dataclass
class SourceFile:
    path: str  # as given/displayed
    data: bytes
    text: str
    encoding: str

    @property
    def lines(self) -> List[str]:
        lines = getattr(self, "_lines", None)
        if lines is None:
            lines = self.text.splitlines()
            self._lines = lines
        return lines

    def line(self, lineno: int) -> str:
        lines = self.lines
        return lines[lineno - 1] if 0 < lineno <= len(lines) else ""


@dataclass
class ReadFailure:
    path: str
    reason: str


def read_bytes(path: Union[str, Path]) -> Union[bytes, ReadFailure]:
    """Read a regular file; anything else (FIFO, device, broken link, directory) is a failure."""
    p = str(path)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        if os.path.islink(p):
            return ReadFailure(p, "broken symbolic link")
        return ReadFailure(p, "no such file")
    except OSError as exc:
        return ReadFailure(p, f"cannot stat: {exc.strerror or exc}")
    if not stat.S_ISREG(st.st_mode):
        return ReadFailure(p, "not a regular file")
    try:
        with open(p, "rb") as fh:
            return fh.read()
    except OSError as exc:
        return ReadFailure(p, f"cannot read: {exc.strerror or exc}")


def decode(path: str, data: bytes) -> Union[SourceFile, ReadFailure]:
    """Decode as CPython does: a BOM or a PEP 263 coding cookie, else UTF-8."""
    if b"\x00" in data:
        return ReadFailure(path, "file contains NUL bytes (binary?)")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        return ReadFailure(path, f"bad encoding declaration: {exc}")
    try:
        text = data.decode(encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        return ReadFailure(path, f"cannot decode as {encoding}: {exc}")
    if text.startswith("\ufeff"):
        text = text[1:]
    return SourceFile(path, data, text, encoding)


def load(path: Union[str, Path], display: Optional[str] = None) -> Union[SourceFile, ReadFailure]:
    shown = display or str(path)
    data = read_bytes(path)
    if isinstance(data, ReadFailure):
        return ReadFailure(shown, data.reason)
    return decode(shown, data)
