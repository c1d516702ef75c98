"""Fixes as libcst transformations of the finding's node.

A rule names the `ast` call it wants changed. This module parses that call's own source text
with libcst (wrapped in parentheses, so a call spread over several lines parses alone and its
continuation lines keep their exact whitespace), finds the nodes to change through libcst's
`PositionProvider` metadata, transforms the call node (add, rename or set a keyword argument)
and returns one `Edit` replacing the call's text with the transformed call's code.

Layout: a call with one argument per line gets the new argument on its own line, indented as
the others; a trailing comma and a comment after the last argument stay where they are; a
one-line call stays one line. Everything outside the call is untouched, and kvlint/fix.py
still verifies the whole result (libcst round trip, compile).

Only the call is parsed, never the module: libcst takes about 30x longer than `ast` to read a
whole file (1.6 s for a 2,200-line file here), and a finding's fix is built at check time.
"""
from __future__ import annotations

from typing import Dict, Optional, Tuple

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from kvlint.analysis.findings import Edit
from kvlint.edit_span import changed_part, position

Span = Tuple[int, int, int, int]  # line, col, end_line, end_col (1-based lines, 0-based char columns)
Pos = Tuple[int, int]


class CallFragment:
    """One call's source text as a libcst tree, with file positions for its nodes."""

    def __init__(self, text: str, span: Span):
        self.span = span
        self.text = text
        self.call: Optional[cst.Call] = None
        self._module: Optional[cst.Module] = None
        self._positions: Dict[cst.CSTNode, Pos] = {}
        try:
            wrapper = MetadataWrapper(cst.parse_module(f"({text})\n"), unsafe_skip_copy=True)
        except Exception:  # syntax libcst does not know: no CST fix (the rule gets None)
            return
        module = wrapper.module
        stmt = module.body[0] if module.body else None
        expr = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and stmt.body else None
        if not isinstance(expr, cst.Expr) or not isinstance(expr.value, cst.Call):
            return
        self._module, self.call = module, expr.value
        for node, where in wrapper.resolve(PositionProvider).items():
            self._positions[node] = self._to_file(where.start.line, where.start.column)

    def _to_file(self, line: int, column: int) -> Pos:
        """Fragment position -> file position (the fragment starts with the added `(`)."""
        if line == 1:
            return self.span[0], self.span[1] + column - 1
        return self.span[0] + line - 1, column

    def keyword_arg_at(self, pos: Pos) -> Optional[cst.Arg]:
        """The keyword argument whose name starts at file position `pos`."""
        for arg in self.call.args if self.call is not None else ():
            if arg.keyword is not None and self._positions.get(arg.keyword) == pos:
                return arg
        return None

    def keyword_arg(self, name: str) -> Optional[cst.Arg]:
        for arg in self.call.args if self.call is not None else ():
            if arg.keyword is not None and arg.keyword.value == name:
                return arg
        return None

    def edit(self, new_call: cst.Call) -> Edit:
        """The edit turning the call's text into `new_call`'s code, cut down to the part that
        differs (a rename edits the keyword's name only), so that several fixes on one call
        do not overlap and reports show the real change."""
        new = self._module.deep_replace(self.call, new_call).code[1:-2]  # drop the added `(`, `)\n`
        head, old_end, new_end = changed_part(self.text, new)
        return Edit(self._file_pos(head), self._file_pos(old_end), new[head:new_end])

    def _file_pos(self, offset: int) -> Pos:
        """An offset into the call's text -> (line, column) in the file."""
        return position(self.text, self.span[0], self.span[1], offset)


def _has_newline(ws) -> bool:
    return isinstance(ws, cst.ParenthesizedWhitespace)


def _keyword_arg(name: str, value: str) -> Optional[cst.Arg]:
    try:
        expr = cst.parse_expression(value)
    except Exception:
        return None
    return cst.Arg(value=expr, keyword=cst.Name(name),
                   equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")))


def with_keyword(call: cst.Call, name: str, value: str) -> Optional[cst.Call]:
    """`call` with `name=value` added after its last argument, in the call's own layout."""
    args = list(call.args)
    new = _keyword_arg(name, value)
    if not args or new is None:
        return None
    last = args[-1]
    separator = args[-2].comma.whitespace_after if len(args) > 1 and isinstance(args[-2].comma, cst.Comma) \
        else call.whitespace_before_args
    trailing = last.comma if isinstance(last.comma, cst.Comma) else None
    if trailing is None:  # what stood between the last argument and `)` now follows the new one
        new = new.with_changes(whitespace_after_arg=last.whitespace_after_arg)
        last = last.with_changes(whitespace_after_arg=cst.SimpleWhitespace(""))
    if _has_newline(separator):  # one argument per line: the new one gets its own line
        if trailing is not None and _has_newline(trailing.whitespace_after):
            # `last,  # comment` + newline + `)`: the comment stays after `last`, the new
            # argument and a trailing comma go on the next line, `)` stays where it was
            after_last = trailing.whitespace_after.with_changes(last_line=separator.last_line, empty_lines=())
            last = last.with_changes(comma=trailing.with_changes(whitespace_after=after_last))
            closing = cst.ParenthesizedWhitespace(first_line=cst.TrailingWhitespace(), empty_lines=(),
                                                  indent=trailing.whitespace_after.indent,
                                                  last_line=trailing.whitespace_after.last_line)
            new = new.with_changes(comma=cst.Comma(whitespace_after=closing))
        else:  # a line break and the others' indentation, without a comment the separator had
            fresh = separator.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=())
            last = last.with_changes(comma=cst.Comma(whitespace_after=fresh))
            if trailing is not None:
                new = new.with_changes(comma=trailing)
    else:
        last = last.with_changes(comma=cst.Comma(
            whitespace_before=trailing.whitespace_before if trailing else cst.SimpleWhitespace(""),
            whitespace_after=cst.SimpleWhitespace(" ")))
        if trailing is not None:
            new = new.with_changes(comma=trailing)
    return call.with_changes(args=[*args[:-1], last, new])


def add_keyword_edit(fragment: CallFragment, name: str, value: str) -> Optional[Edit]:
    """Add `name=value` to the call."""
    if fragment.call is None:
        return None
    changed = with_keyword(fragment.call, name, value)
    return fragment.edit(changed) if changed is not None else None


def set_keyword_edit(fragment: CallFragment, name: str, value: str) -> Optional[Edit]:
    """`name=value` on the call: the argument's value replaced if it is passed, else added."""
    if fragment.call is None:
        return None
    arg = fragment.keyword_arg(name)
    if arg is None:
        return add_keyword_edit(fragment, name, value)
    try:
        expr = cst.parse_expression(value)
    except Exception:
        return None
    new_args = [a.with_changes(value=expr) if a is arg else a for a in fragment.call.args]
    return fragment.edit(fragment.call.with_changes(args=new_args))


def rename_keyword_edit(fragment: CallFragment, at: Pos, old: str, new: str) -> Optional[Edit]:
    """Rename the keyword argument `old` whose name is at file position `at` to `new`."""
    if fragment.call is None:
        return None
    arg = fragment.keyword_arg_at(at)
    if arg is None or arg.keyword.value != old:
        return None
    new_args = [a.with_changes(keyword=a.keyword.with_changes(value=new)) if a is arg else a
                for a in fragment.call.args]
    return fragment.edit(fragment.call.with_changes(args=new_args))
