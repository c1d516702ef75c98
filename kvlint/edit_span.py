"""The part of a text an edit really changes (shared by the libcst edits and the
position-exact ones, so that both report the same edit)."""
from __future__ import annotations

from typing import Tuple


def changed_part(old: str, new: str) -> Tuple[int, int, int]:
    """(head, old_end, new_end): `old[head:old_end]` becomes `new[head:new_end]`, the rest is
    common, widened to whole names (`softmax_scale` -> `scale` edits the name, not
    `oftmax_`), so several fixes on one call do not overlap and reports show the real
    change."""
    head = 0
    while head < min(len(old), len(new)) and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < min(len(old), len(new)) - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1

    def word(ch: str) -> bool:
        return ch.isalnum() or ch == "_"

    while head and word(old[head - 1]):
        head -= 1
    while tail and word(old[len(old) - tail]):
        tail -= 1
    return head, len(old) - tail, len(new) - tail


def position(text: str, line: int, col: int, offset: int) -> Tuple[int, int]:
    """An offset into `text`, which starts at (line, col) of the file -> (line, col) there."""
    before = text[:offset]
    newlines = before.count("\n")
    if newlines == 0:
        return line, col + offset
    return line + newlines, offset - before.rindex("\n") - 1
