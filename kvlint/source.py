"""Reading a file the way Python would, without ever importing or running it."""
from __future__ import annotations

import ast
import io
import os
import stat
import tokenize
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Tuple, Union

MAX_READ_BYTES = 64 * 2 ** 20  # not even read (the engine parses at most Checker.max_parse_bytes)


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


def read_file(path: str) -> Tuple[Optional[os.stat_result], Optional[bytes], str]:
    """(stat, bytes, "") or (stat or None, None, reason). Opens without blocking (a FIFO with
    no writer would block a plain open) and reads only regular files."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None, None, "broken symbolic link" if os.path.islink(path) else "no such file"
    except IsADirectoryError:
        return None, None, "not a regular file (a directory)"
    except OSError as exc:
        return None, None, f"cannot open: {exc.strerror or exc}"
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = "a directory" if stat.S_ISDIR(st.st_mode) else \
                "a FIFO" if stat.S_ISFIFO(st.st_mode) else "a device or socket"
            return st, None, f"not a regular file ({kind})"
        if st.st_size > MAX_READ_BYTES:
            return st, None, f"{st.st_size / 2 ** 20:.0f} MiB is over the {MAX_READ_BYTES // 2 ** 20} MiB limit; not read"
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        return st, b"".join(chunks), ""
    except OSError as exc:
        return None, None, f"{exc.strerror or exc}"
    finally:
        os.close(fd)


def file_stat(st: Optional[os.stat_result]) -> Optional[Tuple[int, int, int]]:
    """(size, mtime_ns, inode): what tells that a file changed since it was read."""
    return (st.st_size, st.st_mtime_ns, st.st_ino) if st is not None else None


def read_bytes(path: Union[str, Path]) -> Union[bytes, ReadFailure]:
    """Read a regular file; anything else (FIFO, device, broken link, directory) is a failure."""
    _, data, reason = read_file(str(path))
    return data if data is not None else ReadFailure(str(path), reason)


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


def load(path: Union[str, Path]) -> Union[SourceFile, ReadFailure]:
    data = read_bytes(path)
    if isinstance(data, ReadFailure):
        return data
    return decode(str(path), data)


def parse(source: SourceFile) -> ast.Module:
    """The module's tree, as `ast.parse(source.text)` gives it. Plain UTF-8 (no BOM, no other
    cookie) is parsed from the bytes: the same tree (every attribute, on the 9,108 UTF-8
    files of the ecosystem code bases), without the UTF-8 copy of a non-ASCII text. The same
    instructions (callgrind, the 124 files cri+va parses: 5.74 G either way), 4 % less wall
    time (median of 8 alternated runs; noisy). A SyntaxError is raised from the text, as its
    columns count characters where the bytes path counts bytes on some non-ASCII lines.
    Warnings of the checked code (invalid escape sequences, ...) are not shown."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if source.encoding == "utf-8":
            try:
                return ast.parse(source.data, filename=source.path)
            except SyntaxError:
                pass  # raised again below, with the text's columns
        return ast.parse(source.text, filename=source.path)
