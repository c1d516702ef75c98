"""Find the user's frame: the first one outside kvlint, torch and the operator packages."""
from __future__ import annotations

import os
import sys
from typing import Optional, Tuple

from torch.nn import Module

from kvlint.facts import load_facts

# the operator packages (rules/facts/operators.toml) and what wraps them
_SKIP_PACKAGES = ("kvlint", "torch", *load_facts().namespaces.packages, "torchair", "functools",
                  "contextlib", "_pytest", "pluggy")
_skip_dirs: Optional[Tuple[str, ...]] = None


def _dirs() -> Tuple[str, ...]:
    global _skip_dirs
    if _skip_dirs is None:
        dirs = []
        for name in _SKIP_PACKAGES:
            module = sys.modules.get(name)
            path = getattr(module, "__file__", None)
            if path:
                dirs.append(os.path.dirname(os.path.abspath(path)) + os.sep)
        _skip_dirs = tuple(dirs)
    return _skip_dirs


def reset() -> None:
    """Forget the cached package folders (after torch_npu / cann_ops_transformer get imported)."""
    global _skip_dirs
    _skip_dirs = None


def user_frame(depth: int = 2):
    """The first frame outside the skipped packages, or None."""
    skip = _skip_dirs or _dirs()
    frame = sys._getframe(depth)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith(skip) and not filename.startswith("<frozen"):
            return frame
        frame = frame.f_back
    return None


def display_path(filename: str) -> str:
    """`filename` relative to the working directory when it lies below it, else as given."""
    try:
        cwd = os.getcwd()
    except OSError:  # the working directory was removed
        return filename
    path = os.path.abspath(filename)
    if path.startswith(cwd.rstrip(os.sep) + os.sep):
        return os.path.relpath(path, cwd)
    return filename


def describe(frame) -> str:
    """The call site as `path:line`, the path relative to the working directory."""
    if frame is None:
        return ""
    return f"{display_path(frame.f_code.co_filename)}:{frame.f_lineno}"


def layer_key(frame, limit: int = 8):
    """What identifies "one layer" for the kv_len discipline: the nearest calling torch.nn.Module
    (its `self`), else the call site. Walks at most `limit` user frames; reads `f_locals` only
    of frames whose first argument is `self`."""
    site = frame
    while frame is not None and limit:
        code = frame.f_code
        if code.co_argcount and code.co_varnames[0] == "self":
            owner = frame.f_locals.get("self")
            if isinstance(owner, Module):
                return ("module", id(owner))
        frame = frame.f_back
        limit -= 1
    return ("site", (site.f_code.co_filename, site.f_lineno) if site is not None else None)
