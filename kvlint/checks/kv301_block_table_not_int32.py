"""KV301: a block_table built with a dtype other than int32 (docs: rules/codes/KV301.toml)."""
from __future__ import annotations

import ast
import re
from typing import Optional

from kvlint.analysis.dtypes import dtype_of_expr, receiver_is_module
from kvlint.analysis.findings import Edit, Fix
from kvlint.analysis.module import dotted_name
from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule, is_test_path
from kvlint.facts import load_facts

FACTS = load_facts()
PAGED_READERS = FACTS.family("paged_readers")
INT64_READERS = FACTS.family("int64_block_table_readers")

BLOCK_TABLE_NAMES = ("block_table", "block_tables")
# For the byte pre-filter: an assignment to one of those names, attributes or dict entries.
# (the word boundary before `block_table` as a look-behind after it: the search then skips to
# each `block_table` at memchr speed, ~35x faster than the look-behind first)
BLOCK_TABLE_WRITE = re.compile(
    rb"block_table(?<![A-Za-z0-9_]block_table)s?(?:[\"']\s*\])?(?:\s|\\|\))*(?::[^=\n]*)?=(?!=)")
# Heuristic INDEXING_ONLY_USES: an int64 table used only through these is an index, not an
# operator input (torch indexing wants int64).
INDEXING_USES = ("index_select", "gather", "take", "take_along_dim", "index_put", "index_put_", "scatter")
POSTFIX_SAFE = (ast.Call, ast.Name, ast.Attribute, ast.Subscript)


def is_test_file(path: str) -> bool:
    """Heuristic TEST_DOUBLES (kvlint.checks.base.is_test_path)."""
    return is_test_path(path)


def construction_dtype(site: ast.expr, ctx: FileContext) -> Optional[str]:
    dtype = ctx.dtypes.dtype_of_construction(site)
    if dtype is None and _is_untyped_tensor_call(site):
        # Heuristic TENSOR_FROM_PYTHON_INTS: torch.tensor(ids) without dtype holds int64
        return "int64"
    return dtype


def _is_untyped_tensor_call(site: ast.expr) -> bool:
    return (isinstance(site, ast.Call) and isinstance(site.func, ast.Attribute)
            and site.func.attr in ("tensor", "as_tensor") and receiver_is_module(site.func.value)
            and not any(k.arg == "dtype" for k in site.keywords))


def is_numpy_construction(value: ast.expr, ctx: FileContext) -> bool:
    """A numpy array (`np.array(..., dtype=np.int64)`, `np.zeros(...).astype(np.int64)`): no
    operator takes one, so an int64 array is no bug until a tensor is made of it; that tensor
    reaches the operator, and check_call follows its block_table there (`torch.from_numpy(x)`
    has x's dtype; `torch.tensor(x, dtype=torch.int32)` converts)."""
    node = value
    while isinstance(node, (ast.Call, ast.Attribute, ast.Subscript)):
        inner = node.func if isinstance(node, ast.Call) else node.value
        if isinstance(node, ast.Call) and isinstance(inner, ast.Attribute):
            head = dotted_name(inner.value)
            if head is not None and "." not in head and ctx.index.imports.get(head, "") == "numpy":
                return True
        node = inner
    return False


def int32_fix(site: ast.expr, ctx: FileContext) -> Optional[Fix]:
    """`.long()` -> `.int()`, `dtype=torch.long` -> `dtype=torch.int32`, else append
    `.to(torch.int32)`."""
    if isinstance(site, ast.Call):
        f = site.func
        if isinstance(f, ast.Attribute) and f.attr == "long" and not site.args:
            end_line = f.end_lineno
            end_col = ctx.index.char_col(end_line, f.end_col_offset)
            return Fix("use .int()", (Edit((end_line, end_col - 4), (end_line, end_col), "int"),))
        for kw in site.keywords:
            if kw.arg == "dtype" and dtype_of_expr(kw.value) in ("int64", "float"):
                head = (dotted_name(kw.value) or "torch.x").split(".")[0]
                return Fix("use dtype int32", (ctx.edit_replace(kw.value, f"{head}.int32"),))
        if isinstance(f, ast.Attribute) and f.attr in ("to", "type") and site.args \
                and dtype_of_expr(site.args[0]) in ("int64", "float"):
            head = (dotted_name(site.args[0]) or "torch.x").split(".")[0]
            return Fix("convert to int32", (ctx.edit_replace(site.args[0], f"{head}.int32"),))
    if isinstance(site, POSTFIX_SAFE):
        line, col, end_line, end_col = ctx.index.span(site)
        return Fix("append .to(torch.int32)", (Edit((end_line, end_col), (end_line, end_col), ".to(torch.int32)"),))
    return None


def feeds_int64_reader(site: ast.expr, ctx: FileContext) -> bool:
    """The table built at `site` is also handed, by the name it is assigned to and in the same
    function, to an INT64_READER (npu_advance_step_flashattn): converting it where it is built
    would break that call, so no fix is offered."""
    stmt = ctx.index.parent_of(site)
    if not isinstance(stmt, (ast.Assign, ast.AnnAssign)):
        return False
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
    names = {dotted_name(t) for t in targets} - {None}
    scope = ctx.index.enclosing_function(stmt)
    return any(dotted_name(a) in names for c in ctx.op_calls
               if c.name in INT64_READERS and ctx.index.enclosing_function(c.call) is scope
               for a in [*c.call.args, *(k.value for k in c.call.keywords)])


def message(dtype: str, where: str) -> str:
    got = "int64" if dtype == "int64" else "a floating dtype"
    return (f"this block_table is built as {got}{where}: the fused attention operators take "
            f"an int32 block table; convert it once where it is built with .to(torch.int32)")


def shared_message(dtype: str) -> str:
    got = "int64" if dtype == "int64" else "a floating dtype"
    return (f"this block_table is built as {got} and reaches a fused attention operator, which "
            f"takes an int32 block table; it also feeds {' / '.join(INT64_READERS)}, which takes "
            f"int64: pass an int32 copy (`.to(torch.int32)`) to the attention call")


def target_name(target: ast.expr) -> Optional[str]:
    if isinstance(target, ast.Name):
        return target.id
    if isinstance(target, ast.Attribute):
        return target.attr
    if isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Constant) \
            and isinstance(target.slice.value, str):
        return target.slice.value
    return None


@register
class BlockTableNotInt32(Rule):
    code = "KV301"
    operators = PAGED_READERS
    trigger_words = BLOCK_TABLE_NAMES

    def required_words(self, settings):
        # necessary: a paged operator call (check_call) or a block_table assignment (check_module)
        return ((*PAGED_READERS, BLOCK_TABLE_WRITE),)

    def required_words_in_tests(self, settings):
        return (PAGED_READERS,)  # check_module skips test files (TEST_DOUBLES)

    def check_call(self, oc, ctx: FileContext):
        for value in ctx.args(oc.call).values("block_table"):
            for site in ctx.dtypes.construction_sites(value, oc.call):
                dtype = construction_dtype(site, ctx)
                if dtype in ("int64", "float"):
                    yield self._finding(site, dtype, ctx)

    def _finding(self, site: ast.expr, dtype: str, ctx: FileContext):
        if feeds_int64_reader(site, ctx):  # no fix: converting at the construction breaks that call
            return ctx.finding(self.code, site, shared_message(dtype))
        return ctx.finding(self.code, site, message(dtype, ""), int32_fix(site, ctx))

    def check_module(self, ctx: FileContext):
        if is_test_file(ctx.source.path):
            return  # TEST_DOUBLES: tables there feed mocked operators; check_call still runs
        for node in ctx.index.assigns:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            value = node.value
            if value is None:
                continue
            for target in targets:
                name = target_name(target)
                if name not in BLOCK_TABLE_NAMES:
                    continue
                dtype = construction_dtype(value, ctx)
                if dtype not in ("int64", "float"):
                    continue
                if is_numpy_construction(value, ctx):
                    continue  # host metadata: judged where a tensor is made of it (check_call)
                if self._converted_or_index_only(target, node, ctx):
                    continue
                yield self._finding(value, dtype, ctx)

    def _converted_or_index_only(self, target: ast.expr, stmt: ast.AST, ctx: FileContext) -> bool:
        """VISIBLY_CONVERTED: a later `.int()` / `.to(torch.int32)` of the same target in the
        same function. LOCAL_ONLY: a plain local name that never leaves the function (not passed
        as `block_table=`, returned, stored or handed to a call) is a Python-side index table
        (CPU reference code, gathers), not an operator input."""
        want = dotted_name(target) if not isinstance(target, ast.Subscript) else None
        scope = ctx.index.enclosing_function(stmt) or ctx.index.tree
        escapes = not isinstance(target, ast.Name)
        # INT64_READER: an operator whose block table is int64 (npu_advance_step_flashattn)
        # takes the table as it is: handing it there is no escape to a paged reader
        int64_uses = {id(n) for c in ctx.op_calls if c.name in INT64_READERS for n in [c.call, *c.call.keywords]}
        for node in ast.walk(scope):
            if getattr(node, "lineno", 0) <= stmt.lineno:
                continue
            if id(node) in int64_uses:
                continue
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                if want and dotted_name(node.func.value) == want and (node.func.attr == "int" or (
                        node.func.attr in ("to", "type") and any(
                            dtype_of_expr(a) == "int32" for a in list(node.args) + [k.value for k in node.keywords]))):
                    return True
            if isinstance(target, ast.Name) and not escapes:
                escapes = self._escapes(node, target.id)
        return not escapes

    @staticmethod
    def _escapes(node: ast.AST, name: str) -> bool:
        def is_name(n):
            return isinstance(n, ast.Name) and n.id == name
        if isinstance(node, ast.keyword) and is_name(node.value):
            return True
        if isinstance(node, ast.Return) and node.value is not None and (
                is_name(node.value) or (isinstance(node.value, (ast.Tuple, ast.List))
                                        and any(is_name(e) for e in node.value.elts))):
            return True
        if isinstance(node, ast.Assign) and is_name(node.value) and any(
                not isinstance(t, ast.Name) for t in node.targets):
            return True
        if isinstance(node, ast.Call):
            func = node.func
            method = func.attr if isinstance(func, ast.Attribute) else ""
            if method not in INDEXING_USES and any(is_name(a) for a in node.args):
                return True
        return False


