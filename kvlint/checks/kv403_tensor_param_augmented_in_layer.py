"""KV403: `+=` (or another augmented assignment) on a tensor parameter inside a layer method
(docs: rules/codes/KV403.toml)."""
import ast
import re
from typing import Iterator, List, Optional, Set, Tuple, cast

from kvlint.analysis.context import layer_class_pattern
from kvlint.analysis.module import named_parameters, parameter_defaults
from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule

SCALAR_ANNOTATIONS = ("int", "float", "bool", "str", "complex")
# TENSOR_PARAM: a name that reads like a tensor...
_TENSOR_NAME = re.compile(
    r"(^|_)(x|q|k|v|hidden|states|query|key|value|residual|tensor|output|out|logits|cache|"
    r"embeds?|emb|weights?|bias|scores?|lse|mask)($|_|s$)", re.IGNORECASE)
# ...or is used like one in the function.
TENSOR_METHODS = frozenset({
    "view", "reshape", "shape", "size", "dim", "dtype", "device", "contiguous", "transpose",
    "permute", "unsqueeze", "squeeze", "to", "npu", "float", "half", "bfloat16", "numel", "flatten",
    "copy_", "add_", "mul_", "clone", "detach", "new_zeros", "new_empty", "expand", "narrow",
})


# Heuristic ASCEND_MODEL_FILE: the rule looks only at files that mention one of these (Ascend
# model code, not every file with a `+=`). Also its pre-filter words.
ASCEND_FILE_WORDS = ("torch_npu", "torch.ops.npu", "kv_len", "seq_len", "slot_mapping")
AUGMENTED_OPERATORS = (b"+=", b"-=", b"*=", b"/=")


class AugmentedNameStore:
    """A pre-filter word: `name += ...` (also -=, *=, /=) on a plain name, the only target the
    rule reports; not an attribute's or a subscript's (`x.n += 1`, `shape[-1] //= 2`), nor
    `**=` / `//=`. Between the name and the operator: spaces, line continuations, closing
    parentheses. A name is what is not after a `.` and does not start with a digit; bytes
    from 0x80 count as name characters (non-ASCII names). `names(data)`: every such name."""

    pattern = b"<a plain name's +=, -=, *= or /=>"
    flags = 0
    _NAME = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") | frozenset(range(0x80, 0x100))
    _GAP = frozenset(b" \t\r\n\f\\)")

    def search(self, data: bytes) -> Optional[int]:
        for at, _ in self._stores(data):
            return at
        return None

    def names(self, data: bytes) -> Set[bytes]:
        return {name for _, name in self._stores(data)}

    def _stores(self, data: bytes) -> Iterator[Tuple[int, bytes]]:
        name, gap = self._NAME, self._GAP
        for op in AUGMENTED_OPERATORS:
            at = data.find(op)
            while at != -1:
                end = at - 1
                while end >= 0 and data[end] in gap:
                    end -= 1
                start = end
                while start >= 0 and data[start] in name:
                    start -= 1
                if start < end and (start < 0 or data[start] != 0x2E) and not 0x30 <= data[start + 1] <= 0x39:
                    yield at, data[start + 1:end + 1]
                at = data.find(op, at + 2)


AUGMENTED_NAME_STORE = AugmentedNameStore()

# `def` (a word), then the function's name (bytes from 0x80 are name characters)
_DEF = re.compile(rb"def(?<![A-Za-z0-9_\x80-\xff]def)(?:\s|\\)+[A-Za-z0-9_\x80-\xff]+")
_IDENTIFIER = re.compile(rb"[A-Za-z_\x80-\xff][A-Za-z0-9_\x80-\xff]*")
_SIGNATURE_STOP = re.compile(rb"[#\"'()\[\]{}]")  # what a signature's reading stops at


class AugmentedParameterStore:
    """A pre-filter word: an AugmentedNameStore whose name is among the identifiers of the
    file's `def` signatures (the rule reports a parameter of the enclosing function only):
    model files augment locals (`hidden += residual`, `i += 1`), and this skips them unparsed.
    A signature is read to its closing parenthesis (brackets nested, one-line strings and
    comments skipped); one it cannot read (a triple-quoted or unclosed string) counts as
    holding every name."""

    pattern = b"<a function parameter's +=, -=, *= or /=>"
    flags = 0

    def search(self, data: bytes) -> Optional[bytes]:
        """A stored name found in a signature (or any stored name where a signature cannot
        be read), else None. The identifiers of a signature are read only where one of the
        names is in its text."""
        names = AUGMENTED_NAME_STORE.names(data)
        if not names:
            return None
        for span in signature_spans(data):
            if span is None:
                return next(iter(names))
            a, b = span
            if any(data.find(name, a, b) >= 0 for name in names):
                for identifier in _IDENTIFIER.findall(data, a, b):
                    if identifier in names:
                        return identifier
        return None


# a signature without brackets, strings or comments inside its parentheses (most are)
_PLAIN_SIGNATURE = re.compile(rb"[ \t\r\n\f\\]*\([^#\"'()\[\]{}]*\)")


def signature_spans(data: bytes) -> Iterator[Optional[Tuple[int, int]]]:
    """The stretches of signature text between every `def name` of `data` and the
    parenthesis closing its parameters (type parameters `[T]` included: their identifiers
    are a superset of the parameters), the strings and comments in them left out; None, and
    no more, at a signature it cannot read. A `def` whose name is not followed by a bracket
    is prose."""
    size = len(data)
    for m in _DEF.finditer(data):
        i = start = m.end()
        plain = _PLAIN_SIGNATURE.match(data, i)
        if plain is not None:  # what the reading below finds for it, in one step
            yield start, plain.end() - 1
            continue
        depth, params = 0, False
        spans: List[Tuple[int, int]] = []
        while True:
            hit = _SIGNATURE_STOP.search(data, i)
            if hit is None:
                yield None
                return
            j = hit.start()
            if depth == 0 and data[i:j].strip(b" \t\r\n\f\\"):
                spans = []
                break  # words after the name: not a signature
            c = data[j]
            if c == 0x23:  # `#`: a comment to the end of the line
                spans.append((start, j))
                k = data.find(b"\n", j)
                i = start = size if k < 0 else k
                continue
            if c == 0x22 or c == 0x27:  # a quote: a one-line string
                spans.append((start, j))
                if data[j:j + 3] in (b'"""', b"'''"):
                    yield None
                    return
                k = j + 1
                while k < size and data[k] != c and data[k] != 0x0A:
                    k += 2 if data[k] == 0x5C else 1
                if k >= size or data[k] != c:
                    yield None
                    return
                i = start = k + 1
                continue
            i = j + 1
            if c in b"([{":
                depth += 1
                params = params or (c == 0x28 and depth == 1)
            else:
                depth -= 1
                if depth <= 0 and params:
                    spans.append((start, j))
                    break
        yield from spans


AUGMENTED_PARAMETER_STORE = AugmentedParameterStore()


@register
class TensorParamAugmentedInLayer(Rule):
    code = "KV403"
    trigger_words = ASCEND_FILE_WORDS

    def required_words(self, settings):
        # necessary conditions (the engine skips a file missing one group): a LAYER_CLASS
        # name (see Context.layer_class), and a `+= -= *= /=` on a plain name that some
        # function of the file takes as a parameter. In this order: on the cann-recipes-infer
        # + vllm-ascend files the class regex (13 us a file) rejects five in six; the store
        # takes 160 us, and the four substring tests for the operators alone took 90 us (a
        # group of them would add nothing: the store finds them)
        return ((layer_class_pattern(settings.names),), (AUGMENTED_PARAMETER_STORE,))

    def check_module(self, ctx: FileContext):
        if not any(w.encode() in ctx.source.data for w in ASCEND_FILE_WORDS):
            return
        for node in ctx.index.aug_assigns:
            target = node.target
            if not isinstance(target, ast.Name) or ctx.context.is_kv_length_name(target.id):
                continue  # kv_len and friends are KV401's
            func = cast(Optional[ast.FunctionDef], ctx.index.enclosing_function(node))
            layer = ctx.context.layer_class(node)
            if func is None or func.name in ("__init__", "__post_init__") or layer is None:
                continue
            if not isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.Div)):
                continue
            param = self._param(target.id, func)
            if param is None or not self._tensor(param, func, ctx) or self._rebound_before(target.id, node, func, ctx):
                continue
            sym = {ast.Add: "+=", ast.Sub: "-=", ast.Mult: "*=", ast.Div: "/="}[type(node.op)]
            yield ctx.finding(self.code, target,
                              f"`{target.id} {sym} ...` on the parameter `{target.id}` of "
                              f"{layer.name}.{func.name} changes the caller's "
                              f"tensor in place (a tensor `{sym}` does not rebind, unlike "
                              f"`{target.id} = {target.id} {sym[0]} ...`): the caller, and every "
                              f"later layer that shares it, sees the modified value")

    @staticmethod
    def _param(name: str, func) -> Optional[ast.arg]:
        for p in named_parameters(func):
            if p.arg == name and p.arg not in ("self", "cls"):
                return p
        return None

    @staticmethod
    def _tensor(param: ast.arg, func, ctx: FileContext) -> bool:
        ann = param.annotation
        if ann is not None:
            text = ast.unparse(ann)
            if any(re.search(rf"\b{s}\b", text) for s in SCALAR_ANNOTATIONS) and "Tensor" not in text:
                return False
            if "Tensor" in text:
                return True
        if _default_is_number(param, func):
            return False
        if _TENSOR_NAME.search(param.arg):
            return True
        for n in ast.walk(func):
            if isinstance(n, ast.Attribute) and n.attr in TENSOR_METHODS and \
                    isinstance(n.value, ast.Name) and n.value.id == param.arg:
                return True
        return False

    @staticmethod
    def _rebound_before(name: str, node, func, ctx: FileContext) -> bool:
        """The parameter was reassigned before (`x = x.clone()`, `x = x + y`): now a local."""
        return any(cast(ast.stmt, stmt).lineno < node.lineno for stmt, _ in ctx.values.assignments(func).get(name, []))


def _default_is_number(param: ast.arg, func) -> bool:
    d = parameter_defaults(func).get(param.arg)
    return isinstance(d, ast.Constant) and isinstance(d.value, (int, float)) and not isinstance(d.value, bool)
