"""The rule interface and the per-file context every rule receives."""
from __future__ import annotations

import ast
import os
from typing import Dict, Iterable, List, Optional, Pattern, Sequence, Tuple, Union

from kvlint.analysis.context import Context
from kvlint.analysis.dtypes import DtypeInference
from kvlint.analysis.findings import Edit, Finding, Fix
from kvlint.analysis.module import ModuleIndex, dotted_name
from kvlint.analysis.resolve import OperatorCall, OperatorResolver
from kvlint.analysis.summaries import AdapterResolver, operator_words
from kvlint.analysis.values import CallArgs, ValueTracer
from kvlint.catalog import Catalog
from kvlint.settings import Settings

FAKE_TENSOR_MODE = b"FakeTensorMode"  # a file without it has no FAKE_TENSOR_CONTEXT


def is_test_path(path: str) -> bool:
    """Heuristic TEST_DOUBLES: test_*.py, *_test.py, conftest.py or a file under tests/."""
    parts = path.replace("\\", "/").split("/")
    name = parts[-1]
    return (name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"
            or any(p in ("tests", "test") for p in parts[:-1]))


class FileContext:
    """Everything a rule may ask about one file; each piece computed once."""

    def __init__(self, index: ModuleIndex, catalog: Catalog, settings: Settings, project=None):
        self.index = index
        self.source = index.source
        self.catalog = catalog
        self.settings = settings
        self.values = ValueTracer(index, project)
        self.resolver = OperatorResolver(index, catalog, self.values)
        self.dtypes = DtypeInference(self.values)
        self.context = Context(index, settings.names)
        self._op_calls: Optional[List[OperatorCall]] = None
        self._checked_calls: Optional[List[OperatorCall]] = None
        self.current_call: Optional[ast.Call] = None  # the operator call a rule is checking
        self.adapter_calls: set = set()  # ids of the synthetic calls standing for adapter calls
        self.adapters = AdapterResolver(self.resolver, operator_words(catalog))
        self._args: Dict[int, CallArgs] = {}

    @property
    def op_calls(self) -> List[OperatorCall]:
        """The file's direct operator calls (what module-level rules enumerate)."""
        if self._op_calls is None:
            self._op_calls = [oc for oc in map(self.resolver.resolve, self.index.calls) if oc is not None]
        return self._op_calls

    @property
    def checked_calls(self) -> List[OperatorCall]:
        """What `check_call` rules run on: the direct operator calls, and calls of adapters
        (functions that forward their parameters to an operator, kvlint/analysis/summaries.py)
        as synthetic calls of the operator placed at the call site, in source order."""
        if self._checked_calls is None:
            direct = {id(oc.call) for oc in self.op_calls}
            names = self.catalog.operator_names()
            # TEST_DOUBLES: tests patch adapters (`@patch("...DeviceOperator.X")`), so their
            # calls there are not taken for the operator
            adapters = not is_test_path(self.source.path)
            calls: List[OperatorCall] = []
            for call in self.index.calls:
                if id(call) in direct:
                    resolved = self.resolver.resolve(call)
                    if resolved is not None:
                        calls.append(resolved)
                elif adapters and self.adapters.candidate(call, names):
                    oc = self.adapters.resolve(call)
                    if oc is not None:
                        self.adapter_calls.add(id(oc.call))
                        calls.append(oc)
            if FAKE_TENSOR_MODE in self.source.data:
                calls = [oc for oc in calls if not self.under_fake_tensors(oc.call)]
            self._checked_calls = calls
        return self._checked_calls

    def under_fake_tensors(self, node: ast.AST) -> bool:
        """Heuristic FAKE_TENSOR_CONTEXT: `node` is written inside `with FakeTensorMode(...):`
        (however qualified). Its operator calls run on tensors without data: only the meta
        function runs (shapes and dtypes), so what the operator would compute or its tiling
        would reject is not decided there, and a test's own assertions show what is."""
        for anc in self.index.ancestors(node):
            if isinstance(anc, (ast.With, ast.AsyncWith)):
                for item in anc.items:
                    expr = item.context_expr
                    if isinstance(expr, ast.Call):
                        expr = expr.func
                    name = dotted_name(expr) or ""
                    if name.rsplit(".", 1)[-1] == "FakeTensorMode":
                        return True
        return False

    def args(self, call: ast.Call) -> CallArgs:
        a = self._args.get(id(call))
        if a is None:
            a = self._args[id(call)] = self.values.call_args(call)
            for partial in self.resolver.partials.get(id(call), ()):
                # functools.partial(op, k=v): k=v is the call's keyword too
                bound = self.values.call_args(partial)
                for name, items in bound.keywords.items():
                    if name not in a.keywords:
                        a.keywords[name] = items
                if len(partial.args) > 1 or not bound.complete:
                    a.complete = False  # bound positionals shift the call's own: not modelled
        return a

    def finding(self, code: str, node: ast.AST, message: str, fix: Optional[Fix] = None,
                anchor: Optional[ast.AST] = None, branch: Optional[str] = None) -> Finding:
        """A finding at `node`. `# noqa` works on the node's line and on the first line of the
        statement holding `anchor` (default: `node`). `branch`: the heuristic branch of the
        rule that found it (`[branches.NAME]` in the rule's TOML), whose severity applies.

        A node of another module (a value built in a builder module) is reported at the
        operator call being checked, naming where the value is built; its fix, an edit of the
        other file, is dropped."""
        if self.current_call is not None and id(self.current_call) in self.adapter_calls:
            fix = None  # the call's arguments were mapped through an adapter: no edit is safe
        if not self.values.owns(node):
            where = self._foreign_place(node)
            node = anchor = self.current_call if self.current_call is not None else self.index.tree.body[0]
            message = f"{message} [built at {where}]" if where else message
            fix = None
        line, col, end_line, end_col = self.index.span(node)
        stmt = self.index.statement_of(anchor if anchor is not None else node)
        noqa = tuple(sorted({line, getattr(stmt, "lineno", line)}))
        info = self.catalog.rules.get(code)
        default = info.severity if info else "error"
        if info is not None and branch is not None:
            default = info.branches[branch].severity
        severity = self.settings.severity.get(code, default)
        return Finding(self.source.path, line, col + 1, end_line, end_col + 1, code, message,
                       severity, fix, noqa, self.source.line(line), branch or "")

    def branch_on(self, code: str, branch: str) -> bool:
        """Whether heuristic branch `branch` of rule `code` runs: a preview branch only with
        `--preview` / `preview = true`."""
        info = self.catalog.rules.get(code)
        return info is None or not info.branches[branch].preview or self.settings.preview

    def _foreign_place(self, node: ast.AST) -> str:
        tracer = self.values.tracer_for(node)
        if tracer is self.values or not hasattr(node, "lineno"):
            return ""
        path = tracer.index.source.path
        try:
            path = os.path.relpath(path)
        except ValueError:  # another drive
            pass
        return f"{path}:{node.lineno}"

    def edit_replace(self, node: ast.AST, text: str) -> Edit:
        line, col, end_line, end_col = self.index.span(node)
        return Edit((line, col), (end_line, end_col), text)

    def text(self, node: ast.AST) -> str:
        line, col, end_line, end_col = self.index.span(node)
        if line == end_line:
            return self.source.line(line)[col:end_col]
        parts = [self.source.line(line)[col:]]
        parts += [self.source.line(n) for n in range(line + 1, end_line)]
        parts.append(self.source.line(end_line)[:end_col])
        return "\n".join(parts)


class NoCase(str):
    """A pre-filter word matched in any case (for names a rule compares lowercased)."""


Word = Union[str, NoCase, "Pattern[bytes]"]


class Rule:
    """A static rule. Set `code`; implement `check_call` (called once per resolved operator
    call whose base name is in `operators`) and/or `check_module`.

    `words(settings)` feeds the byte pre-filter: a file that contains none of the words of
    any enabled rule is not parsed, and a rule runs on a parsed file only when one of its own
    words is in the file's bytes. A rule declaring no word runs on every parsed file (and
    then every file is parsed). The default words are `operators` and `trigger_words`; a rule
    whose words depend on the configured heuristic names overrides `words`.

    `required_words(settings)` narrows that further: groups of words of which each must have
    one in the file (e.g. `(("+=", "-="), ("Attention", "Layer"))`: an augmented assignment
    and a layer class name). `required_words_in_tests(settings)`, when not None, replaces it
    for test files (TEST_DOUBLES, `is_test_path`), for a rule that reports less there.

    A word is a substring (matched as written), a `NoCase` substring (matched in any case,
    for names the rule lowercases), a compiled bytes regex, or in `required_words` an object
    with the regex's `search(data)`, `pattern` and `flags` (AnyOf, KV403's
    AugmentedNameStore). Only necessary conditions belong in either:
    a rule must never be able to report on a file that lacks its words or one of its groups,
    under the same settings; tests/test_prefilter_property.py checks that the findings with
    and without the pre-filter are the same.
    """

    code: str = ""
    operators: Tuple[str, ...] = ()
    trigger_words: Tuple[str, ...] = ()

    def words(self, settings: Settings) -> Sequence[Word]:
        return (*self.operators, *self.trigger_words)

    def required_words(self, settings: Settings) -> Sequence[Sequence[Word]]:
        return ()

    def required_words_in_tests(self, settings: Settings) -> Optional[Sequence[Sequence[Word]]]:
        return None  # as in other files

    def check_call(self, oc: OperatorCall, ctx: FileContext) -> Iterable[Finding]:
        return ()

    def check_module(self, ctx: FileContext) -> Iterable[Finding]:
        return ()

    @property
    def wants_calls(self) -> bool:
        return type(self).check_call is not Rule.check_call

    @property
    def wants_module(self) -> bool:
        return type(self).check_module is not Rule.check_module
