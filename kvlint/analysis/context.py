"""Context heuristics: is this call on the prefill or the decode path, is this class an
attention layer, is this loop a per-layer loop.

Every heuristic is named, documented and configurable (`[tool.kvlint]` names in
`Settings`). Rules ask these functions; none of them re-implements a guess of its own.
"""
from __future__ import annotations

import ast
import re
import sys
from functools import lru_cache
from typing import Dict, Iterable, List, Optional, Tuple

from kvlint.analysis.module import FunctionNode, ModuleIndex, dotted_name, walk_in_order
from kvlint.settings import HeuristicNames

PREFILL, DECODE = "prefill", "decode"


def layer_class_words(names: HeuristicNames) -> Tuple[str, ...]:
    """LAYER_CLASS needs one of these in the class name."""
    return tuple(names.layer_class_words) + ("Attention", "Attn")


class LowercasePattern:
    """A byte pattern searched over the lowercased bytes: what an `re.IGNORECASE` pattern
    whose only letters are in its literal words finds, found about twice as fast (sre folds
    the case of every byte it compares otherwise). `pattern` is the lowercase pattern without
    the flag; the engine's pre-filter searches it over the file's lowercased bytes, which it
    computes once for the NoCase words too."""

    def __init__(self, pattern: "re.Pattern[bytes]"):
        assert not pattern.flags & re.IGNORECASE and pattern.pattern == pattern.pattern.lower()
        self.regex = pattern
        self.pattern = pattern.pattern
        self.flags = pattern.flags

    def search(self, data: bytes):
        return self.regex.search(data.lower())


def minimal_words(words) -> List[bytes]:
    """`words` without those holding another of them (a pre-filter searching for any of them
    need not search those), shortest first."""
    out: List[bytes] = []
    for w in sorted(set(words), key=lambda w: (len(w), w)):
        if not any(o in w for o in out):
            out.append(w)
    return out


class AnyOf:
    """A pre-filter word that is there when any of its parts (substrings, patterns) is: the
    engine tests the parts one by one, substrings first (a pattern whose alternatives start
    with different bytes is searched byte by byte; a substring test runs at memchr speed)."""

    def __init__(self, *parts):
        self.parts = parts
        self.pattern = b"|".join(p if isinstance(p, bytes) else p.pattern for p in parts)
        self.flags = 0

    def search(self, data: bytes):
        for p in self.parts:
            if (p in data) if isinstance(p, bytes) else p.search(data) is not None:
                return p
        return None


class Holding:
    """A pre-filter word: the bytes regex `regex`, every match of which holds the plain
    substring `literal`. The engine tests the literal first (a substring test, decided once
    for every word holding it) and searches the regex only where the literal is: worth it
    where the literal is rare and the regex's own scan slow (sre skips to its first byte, a
    substring test to a fit of the last)."""

    def __init__(self, literal: bytes, regex: "re.Pattern[bytes]"):
        self.literal, self.regex = literal, regex
        self.pattern, self.flags = regex.pattern, regex.flags
        self.search = regex.search


@lru_cache(maxsize=8)
def layer_class_pattern(names: HeuristicNames) -> "re.Pattern[bytes]":
    """For the byte pre-filter: a `class` statement whose name holds a LAYER_CLASS word (the
    heuristic looks at nothing else; it compares the words as written, so does this)."""
    words = b"|".join(re.escape(w.encode()) for w in sorted(set(layer_class_words(names))))
    # `class` then a look-behind for the word boundary before it (what `\bclass` means), so
    # that the search skips to each `class` at memchr speed: 10x faster than `\bclass...`
    return re.compile(rb"class(?<![A-Za-z0-9_]class)(?:\s|\\)+\w*(?:" + words + rb")")


@lru_cache(maxsize=8)
def layer_loop_pattern(names: HeuristicNames) -> AnyOf:
    """For the byte pre-filter: a `for ... in ...<loop word>` header (PER_LAYER_LOOP reads the
    loop's iterable only; `h` is in every file, a loop over a name `h` is not), or a loop
    word subscripted, as an attribute or a plain name (`layer = self.layers[i]` or
    `layers[i]` in a `for i in range(...)` loop; spaces and line continuations may come
    before the `[`). A header may span lines (parentheses, backslashes); its target and its
    iterable up to the loop word hold no `:`."""
    words = b"|".join(re.escape(w.encode()) for w in names.layer_loop_words)
    # the same as `\bfor\b[^:]*?\bin\b[^:]*?\b(?:words)\b|\b(?:words)(?:\s|\\)*\[`, written
    # to search fast: each boundary before a literal as a look-behind (a literal start), and
    # the first `in` of the header taken once and for all (an atomic group: when no loop word
    # follows the first `in` before the `:`, none follows a later one), where Python has
    # atomic groups
    first_in = rb"(?>[^:]*?\bin\b)" if sys.version_info >= (3, 11) else rb"[^:]*?\bin\b"
    header = LoopHeader(re.compile(rb"for\b(?<![A-Za-z0-9_]for)" + first_in + rb"[^:]*?\b(?:" + words + rb")\b"),
                        words)
    # a loop word subscripted holds the word: its regex runs only where the word is (`h` is
    # everywhere: its own regex)
    subscripts = (_subscript(x.encode()) for x in names.layer_loop_words)
    return AnyOf(*subscripts, header)


_FOR = re.compile(rb"for\b(?<![A-Za-z0-9_]for)")
_IN = re.compile(rb"in(?<![A-Za-z0-9_]in)(?![A-Za-z0-9_])")  # `\bin\b`, starting with its literal


class LoopHeader:
    """A pre-filter word: where `regex`, the `for ... in ...<loop word>` header of
    layer_loop_pattern, matches, found in fewer steps. Each `for` opens a stretch up to the
    next `:`; the first `in` after it, then a loop word after that, both in the stretch, make
    a header. Only the first `for` of a stretch is looked at: a later one's first `in` is no
    earlier, so a loop word after it follows the first one's too. The regex ran its lazy
    scans from every `for` (in prose and comments as well), and a `\bin\b` has no literal for
    sre to skip to: on the cann-recipes-infer + vllm-ascend files it took 2.2x the
    instructions."""

    flags = 0

    def __init__(self, regex: "re.Pattern[bytes]", words: bytes):
        self.regex, self.pattern = regex, regex.pattern
        self._word = re.compile(rb"\b(?:" + words + rb")\b")

    def search(self, data: bytes) -> "Optional[re.Match[bytes]]":
        """A loop word of a header (a match object), or None where `regex` finds nothing. The
        stretch ends at its `:`, a non-word byte, so `\b` at a search's end means the same as
        in the whole bytes."""
        size = len(data)
        f = _FOR.search(data)
        while f is not None:
            at = f.end()
            colon = data.find(b":", at)
            end = size if colon < 0 else colon
            found = _IN.search(data, at, end)
            if found is not None:
                word = self._word.search(data, found.end(), end)
                if word is not None:
                    return word
            if colon < 0:
                return None
            f = _FOR.search(data, colon + 1)  # the later `for`s of the stretch skipped
        return None


def _subscript(word: bytes):
    w = re.escape(word)
    regex = re.compile(w + rb"(?<![A-Za-z0-9_]" + w + rb")(?:\s|\\)*\[")
    return Holding(word, regex) if len(word) > 1 else regex


def _words_in(name: str, words: Iterable[str]) -> bool:
    low = name.lower()
    return any(w.lower() in low for w in words)


def _phase_words_in(name: str, words: Iterable[str]) -> bool:
    """FUNCTION_NAME_PHASE's test: `_words_in` on the function's name once the operator names
    it spells are taken out (`prompt_flash_attention_npu`, `testPromptFlashAttention`,
    `test_incre_flash_attention_int8` are named after an operator, not a phase)."""
    low = name.lower()
    for phrase in _operator_phrases():
        low = low.replace(phrase, " ")
    return _words_in(low, words)


@lru_cache(maxsize=1)
def _operator_phrases() -> Tuple[str, ...]:
    """The catalog's operator names without their `npu_` prefix, as written in snake case and
    in CamelCase lowercased (`prompt_flash_attention`, `promptflashattention`), longest first."""
    from kvlint.catalog import load_catalog

    phrases = set()
    for op in load_catalog().operator_names():
        base = op.lstrip("_")
        if base.startswith("npu_"):
            base = base[len("npu_"):]
        if "_" in base:
            phrases.update((base, base.replace("_", "")))
    return tuple(sorted(phrases, key=len, reverse=True))


DEFAULT_NAMES = HeuristicNames()


class Context:
    def __init__(self, index: ModuleIndex, names: HeuristicNames = DEFAULT_NAMES):
        self.index = index
        self.names = names
        self._range_loops: Dict[int, bool] = {}
        self._kv_length_names = frozenset(names.kv_length_names)

    # -- phase ------------------------------------------------------------------------------
    def phase(self, node: ast.AST) -> Optional[str]:
        """PREFILL, DECODE or None (unknown) for the code path holding `node`.

        Heuristics, first hit wins, innermost first:
        - BRANCH_FLAG_PHASE / BRANCH_QUERY_LENGTH on each enclosing `if`/ternary, taking the
          body or the else side into account, and `not`.
        - FUNCTION_NAME_PHASE on the enclosing function names (an operator's name spelled in
          one, `prompt_flash_attention_npu`, is no phase word).
        """
        child = node
        for anc in self.index.ancestors(node):
            if isinstance(anc, (ast.If, ast.IfExp, ast.While)):
                in_body = child in (anc.body if isinstance(anc.body, list) else [anc.body])
                in_else = child in (anc.orelse if isinstance(anc.orelse, list) else [anc.orelse])
                if in_body or in_else:
                    p = self.arm_phase(anc.test, in_body)
                    if p is not None:
                        return p
            if isinstance(anc, FunctionNode):
                if _phase_words_in(anc.name, self.names.past_context_function_words):
                    return None
                if _phase_words_in(anc.name, self.names.prefill_function_words):
                    return PREFILL
                if _phase_words_in(anc.name, self.names.decode_function_words):
                    return DECODE
            child = anc
        return None

    def arm_phase(self, test: ast.expr, in_body: bool) -> Optional[str]:
        """The phase of the `if`/`else` arm of `test` (body when `in_body`). An enum state
        names one phase; its negation does not name the other (ChunkedPrefill mixes both)."""
        state = self._state_test(test)
        if state is not None:
            phase, positive = state
            return phase if in_body == positive else None
        p = self.condition_phase(test)
        return p if in_body else _other(p)

    def condition_phase(self, test: ast.expr) -> Optional[str]:
        """The phase a condition being true implies, or None."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            p = self.condition_phase(test.operand)
            return _other(p) if p else None
        if isinstance(test, ast.BoolOp):
            phases = {self.condition_phase(v) for v in test.values} - {None}
            if isinstance(test.op, ast.And) and len(phases) == 1:
                return phases.pop()
            return None
        name = dotted_name(test)
        if name is not None:
            last = name.split(".")[-1].lower()
            if last in self.names.prefill_flags:
                return PREFILL
            if last in self.names.decode_flags:
                return DECODE
            return self._phase_count(name)
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            left, op, right = test.left, test.ops[0], test.comparators[0]
            state = self._state_test(test)
            if state is not None:
                return state[0] if state[1] else None
            # BRANCH_PHASE_COUNT: `num_decode_tokens > 0`, `decode_meta is not None`
            left_name = dotted_name(left)
            if left_name is not None and (
                    (isinstance(op, ast.Gt) and isinstance(right, ast.Constant) and right.value == 0)
                    or (isinstance(op, ast.IsNot) and isinstance(right, ast.Constant) and right.value is None)):
                phase = self._phase_count(left_name)
                if phase is not None:
                    return phase
            return self._length_compare(left, op, right)
        return None

    def single_query_arm(self, test: ast.expr, in_body: bool) -> bool:
        """BRANCH_QUERY_LENGTH alone: this arm of `test` says every query is one token
        (the body of `max_query_len == 1` / `q_len <= 1` / `q_len < 2`, the else of
        `q_len > 1` / `q_len >= 2` / `q_len != 1`). A flag, a state or a count naming the
        decode phase does not say it (a decode batch of MTP holds several tokens a request)."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return self.single_query_arm(test.operand, not in_body)
        if isinstance(test, ast.BoolOp):
            if isinstance(test.op, ast.And) == in_body:  # every operand holds on this arm
                return any(self.single_query_arm(v, in_body) for v in test.values)
            return False
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
            return False
        left, op, right = test.left, test.ops[0], test.comparators[0]
        if isinstance(left, ast.Constant):
            left, right = right, left
            op = {ast.Gt: ast.Lt(), ast.Lt: ast.Gt(), ast.GtE: ast.LtE(), ast.LtE: ast.GtE()}.get(type(op), op)
        if not (isinstance(right, ast.Constant) and type(right.value) is int) or not self._is_query_length(left):
            return False
        n = right.value
        if in_body:
            return (isinstance(op, (ast.Eq, ast.LtE)) and n == 1) or (isinstance(op, ast.Lt) and n == 2)
        return (isinstance(op, (ast.Gt, ast.NotEq)) and n == 1) or (isinstance(op, ast.GtE) and n == 2)

    def _state_test(self, test: ast.expr) -> Optional[Tuple[str, bool]]:
        """BRANCH_ENUM_STATE: (phase, positive) for `state == State.DecodeOnly` / `state in
        (State.A, State.B)` of one phase (positive) and their `!=` / `not in` forms."""
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
            return None
        op = test.ops[0]
        for member in (test.comparators[0], test.left):
            if isinstance(op, (ast.In, ast.NotIn)) and isinstance(member, (ast.Tuple, ast.List, ast.Set)):
                members = member.elts
            elif isinstance(op, (ast.Eq, ast.NotEq, ast.Is, ast.IsNot)):
                members = [member]
            else:
                return None
            phases = set()
            for m in members:
                if isinstance(m, ast.Attribute) and dotted_name(m) is not None and m.attr in self.names.prefill_states:
                    phases.add(PREFILL)
                elif isinstance(m, ast.Attribute) and dotted_name(m) is not None and m.attr in self.names.decode_states:
                    phases.add(DECODE)
                else:
                    phases.add(None)
            if len(phases) == 1 and None not in phases:
                return phases.pop(), not isinstance(op, (ast.NotEq, ast.NotIn, ast.IsNot))
        return None

    def _phase_count(self, name: str) -> Optional[str]:
        """BRANCH_PHASE_COUNT: a truthy count/metadata named after one phase (`num_decodes`,
        `attn_metadata.prefill`, `decode_meta`)."""
        last = name.split(".")[-1].lower()
        has_prefill = any(w in last for w in ("prefill", "prompt"))
        has_decode = "decode" in last
        if has_prefill and not has_decode:
            return PREFILL
        if has_decode and not has_prefill:
            return DECODE
        return None

    def _length_compare(self, left, op, right) -> Optional[str]:
        # normalise to `<length> OP <int>`
        if isinstance(left, ast.Constant) and not isinstance(right, ast.Constant):
            left, right = right, left
            op = {ast.Gt: ast.Lt(), ast.Lt: ast.Gt(), ast.GtE: ast.LtE(), ast.LtE: ast.GtE()}.get(type(op), op)
        if not (isinstance(right, ast.Constant) and isinstance(right.value, int)) or not self._is_query_length(left):
            return None
        n = right.value
        if isinstance(op, ast.Eq):
            return DECODE if n == 1 else (PREFILL if n > 1 else None)
        if isinstance(op, ast.NotEq) and n == 1:
            return PREFILL
        if isinstance(op, ast.Gt) and n >= 1:
            return PREFILL
        if isinstance(op, ast.GtE) and n >= 2:
            return PREFILL
        if isinstance(op, ast.LtE) and n == 1:
            return DECODE
        if isinstance(op, ast.Lt) and n == 2:
            return DECODE
        return None

    def _is_query_length(self, expr: ast.expr) -> bool:
        name = dotted_name(expr)
        if name is not None:
            return name.split(".")[-1].lower() in self.names.query_length_names
        # x.shape[1] / x.size(1) on a query-like tensor
        if isinstance(expr, ast.Subscript):
            base = dotted_name(expr.value) or ""
            return base.endswith(".shape") and re.search(r"(^|\.|_)(q|query|hidden_states|x)\b", base) is not None
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == "size":
            base = dotted_name(expr.func.value) or ""
            return re.search(r"(^|_)(q|query|hidden_states)$", base.split(".")[-1]) is not None
        return False

    # -- layers -----------------------------------------------------------------------------
    def layer_class(self, node: ast.AST) -> Optional[ast.ClassDef]:
        """LAYER_CLASS: the enclosing class when its name says it is an attention/decoder layer
        and it is not a `torch.autograd.Function` (whose `ctx` is per-call state, whatever the
        class is called)."""
        cls = self.index.enclosing_class(node)
        if cls is None or _words_in(cls.name, self.names.not_layer_class_words) or self.is_autograd_function(cls):
            return None
        name = re.sub(r"(V\d+|\d+)$", "", cls.name)
        if any(name.endswith(w) for w in self.names.layer_class_words) or "Attention" in name or "Attn" in name:
            return cls
        return None

    def is_autograd_function(self, cls: ast.ClassDef, depth: int = 0) -> bool:
        """AUTOGRAD_FUNCTION: `class F(torch.autograd.Function)` (through import aliases, or a
        base class of this module that is one). Its forward/backward run once per call on
        their own `ctx`: not a layer."""
        local = {c.name: c for c in self.index.classes}
        for base in cls.bases:
            name = dotted_name(base)
            if name is None:
                continue
            head, _, rest = name.partition(".")
            qualified = self.index.imports.get(head, head) + ("." + rest if rest else "")
            if qualified.startswith("torch.autograd.") and qualified.endswith(".Function"):
                return True
            if name in local and local[name] is not cls and depth < 5 \
                    and self.is_autograd_function(local[name], depth + 1):
                return True
        return False

    def per_layer_loop(self, node: ast.AST) -> Optional[ast.AST]:
        """PER_LAYER_LOOP: an enclosing loop over the layers whose body holds `node`:
        `for layer in self.layers`, `enumerate(...)`, a slice, `itertools.islice(self.layers,
        start, end)` (vLLM's pipeline stages), and `for i in range(start, end):` whose body
        reads `self.layers[i]`."""
        get = self.index.parent.get
        child, anc = node, get(id(node))
        while anc is not None:
            t = type(anc)
            if (t is ast.For or t is ast.AsyncFor) and child in anc.body:
                if self._layer_iterable(anc.iter) or self._indexes_layers(anc):
                    return anc
            child, anc = anc, get(id(anc))
        return None

    def _layer_iterable(self, it: ast.expr) -> bool:
        while isinstance(it, ast.Call) and it.args and (dotted_name(it.func) or "").split(".")[-1] in (
                "enumerate", "islice", "list", "tuple", "reversed"):
            it = it.args[0]
        if isinstance(it, ast.Subscript):
            it = it.value
        name = dotted_name(it)
        return bool(name) and name.split(".")[-1] in self.names.layer_loop_words

    def _indexes_layers(self, loop: ast.AST) -> bool:
        """`for i in range(...)` whose body subscripts a layer list with the loop variable."""
        it, target = loop.iter, loop.target
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
                and isinstance(target, ast.Name)):
            return False
        hit = self._range_loops.get(id(loop))
        if hit is None:
            hit = any(isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Name) and n.slice.id == target.id
                      and self._layer_iterable(n.value) for stmt in loop.body for n in walk_in_order(stmt))
            self._range_loops[id(loop)] = hit
        return hit

    def is_kv_length_name(self, name: str) -> bool:
        return name.lower() in self._kv_length_names


def _other(phase: Optional[str]) -> Optional[str]:
    return {PREFILL: DECODE, DECODE: PREFILL}.get(phase)
