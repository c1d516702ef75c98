"""Fixes as libcst transformations of the finding's node.

A rule names the `ast` call it wants changed; this module finds the same call in the libcst
tree of the file (by position, through libcst's `PositionProvider` metadata), transforms that
node (add a keyword argument, keeping the call's layout: one argument per line stays one
argument per line, a trailing comma and a comment after it stay where they are) and returns
one `Edit` replacing the call's text with the transformed node's code. Everything outside the
call is untouched, and kvlint/fix.py still verifies the whole result (libcst round trip,
compile). The libcst tree is built once per file, and only for files where a rule builds
such a fix (the analysis stays on `ast`, see docs/design.md).
"""
from __future__ import annotations

from typing import Dict, Optional, Tuple

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from kvlint.analysis.findings import Edit

Span = Tuple[int, int, int, int]  # line, col, end_line, end_col (1-based lines, 0-based char columns)


class CstIndex:
    """The libcst calls of one source text, by position."""

    def __init__(self, text: str):
        self.calls: Dict[Span, cst.Call] = {}
        self.module: Optional[cst.Module] = None
        try:
            wrapper = MetadataWrapper(cst.parse_module(text), unsafe_skip_copy=True)
        except Exception:  # syntax libcst does not know, or recursion: no CST fix for this file
            return
        self.module = wrapper.module
        positions = wrapper.resolve(PositionProvider)
        for node, where in positions.items():
            if isinstance(node, cst.Call):
                self.calls[(where.start.line, where.start.column, where.end.line, where.end.column)] = node

    def call_at(self, span: Span) -> Optional[cst.Call]:
        return self.calls.get(span)

    def replacement(self, span: Span, old: cst.CSTNode, new: cst.CSTNode) -> Edit:
        """The edit turning `old` (at `span`) into `new`: the module is rendered with the node
        replaced (so block indentation inside the node is right) and the changed stretch cut
        out of it."""
        text = self.module.code
        changed = self.module.deep_replace(old, new).code
        line, col, end_line, end_col = span
        starts = _line_starts(text)
        a, b = starts[line - 1] + col, starts[end_line - 1] + end_col
        return Edit((line, col), (end_line, end_col), changed[a:len(changed) - (len(text) - b)])


def _has_newline(ws) -> bool:
    return isinstance(ws, cst.ParenthesizedWhitespace)


def with_keyword(call: cst.Call, name: str, value: str) -> Optional[cst.Call]:
    """`call` with `name=value` added after its last argument, in the call's own layout."""
    args = list(call.args)
    if not args:
        return None
    try:
        expr = cst.parse_expression(value)
    except Exception:
        return None
    new = cst.Arg(value=expr, keyword=cst.Name(name),
                  equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")))
    last = args[-1]
    separator = args[-2].comma.whitespace_after if len(args) > 1 and isinstance(args[-2].comma, cst.Comma) \
        else call.whitespace_before_args
    one_per_line = _has_newline(separator)
    trailing = last.comma if isinstance(last.comma, cst.Comma) else None
    if trailing is None:  # what stood between the last argument and `)` now follows the new one
        new = new.with_changes(whitespace_after_arg=last.whitespace_after_arg)
        last = last.with_changes(whitespace_after_arg=cst.SimpleWhitespace(""))
    if one_per_line:
        # the new argument on its own line, indented as the others; what followed the last
        # argument (its trailing comma, a comment, the line break before `)`) follows the new one
        indent = separator.last_line
        if trailing is not None and _has_newline(trailing.whitespace_after):
            after_last = trailing.whitespace_after.with_changes(last_line=indent, empty_lines=())
            last = last.with_changes(comma=trailing.with_changes(whitespace_after=after_last))
            closing = cst.ParenthesizedWhitespace(first_line=cst.TrailingWhitespace(), empty_lines=(),
                                                  indent=trailing.whitespace_after.indent,
                                                  last_line=trailing.whitespace_after.last_line)
            new = new.with_changes(comma=cst.Comma(whitespace_after=closing))
        else:
            last = last.with_changes(comma=cst.Comma(whitespace_after=separator))
            if trailing is not None:
                new = new.with_changes(comma=trailing)
    else:
        last = last.with_changes(comma=cst.Comma(whitespace_before=trailing.whitespace_before if trailing
                                                 else cst.SimpleWhitespace(""),
                                                 whitespace_after=cst.SimpleWhitespace(" ")))
        if trailing is not None:
            new = new.with_changes(comma=trailing)
    return call.with_changes(args=[*args[:-1], last, new])


def add_keyword_edit(index: CstIndex, span: Span, name: str, value: str) -> Optional[Edit]:
    """The edit adding `name=value` to the call at `span` (the `ast` call's span), or None
    when libcst does not see that call."""
    call = index.call_at(span)
    if call is None:
        return None
    changed = with_keyword(call, name, value)
    if changed is None:
        return None
    return index.replacement(span, call, changed)


def _line_starts(text: str):
    starts, pos = [], 0
    for line in text.splitlines(keepends=True):
        starts.append(pos)
        pos += len(line)
    starts.append(pos)
    return starts
