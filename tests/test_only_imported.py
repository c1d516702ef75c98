"""project.only_imported (what a module's text alone shows about one name: neither defined
nor assigned there, only imported from the modules it lists) agrees with the parse, and
Project answers an imported name the same with it as without it.

Soundness: whenever only_imported answers, the parsed module has no definition and no
module-level assignment of the name, and each `from` import binding it is among the listed
ones (checked on every fixture and every word in it, on hand-written forms, and on random
texts). Tightness: the forms that bind the name are refused, the forms real code uses to
merely read a re-exported class are answered."""
import ast
import glob
import os
import re
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvlint.analysis.module import ModuleIndex
from kvlint.analysis.project import Project, only_imported
from kvlint.analysis.values import ValueTracer
from kvlint.engine import Checker
from kvlint.settings import Settings
from kvlint.source import ReadFailure, decode, parse

HERE = os.path.dirname(os.path.abspath(__file__))
FILES = sorted(glob.glob(os.path.join(HERE, "..", "fixtures", "**", "*.py"), recursive=True))
WORD = re.compile(rb"[A-Za-z_]\w*")


def truth(data: bytes, word: str):
    """(defined or assigned at module level, {(level, module, name) of its from imports}) as
    the parse gives them; None when the text does not parse."""
    source = decode("m.py", data)
    if isinstance(source, ReadFailure):
        return None
    try:
        tree = parse(source)
    except (SyntaxError, ValueError):
        return None
    tracer = ValueTracer(ModuleIndex(source, tree))
    bound = word in tracer.definitions() or bool(tracer.assignments(tree).get(word))
    froms = {(n.level or 0, n.module or "", a.name) for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
             for a in n.names if (a.asname or a.name) == word}
    return bound, froms


def check_sound(data: bytes, word: str) -> None:
    answer = only_imported(data, word)
    if answer is None:
        check_sound_classes(data, word)
        return
    t = truth(data, word)
    if t is None:
        return  # a module that does not parse answers nothing: any answer is the same
    bound, froms = t
    assert not bound, (data, word)
    assert froms <= set(answer), (data, word, answer, froms)
    assert only_imported(data, word, classes=True) == answer  # allowing classes allows more


def check_sound_classes(data: bytes, word: str) -> None:
    """With `classes`: whenever it answers, the parse binds `word` at module level by class
    statements only (a ClassDef or nothing: no function, no assignment), and each `from`
    import binding it is listed."""
    answer = only_imported(data, word, classes=True)
    if answer is None:
        return
    source = decode("m.py", data)
    if isinstance(source, ReadFailure):
        return
    try:
        tree = parse(source)
    except (SyntaxError, ValueError):
        return
    tracer = ValueTracer(ModuleIndex(source, tree))
    d = tracer.definitions().get(word)
    assert d is None or isinstance(d, ast.ClassDef), (data, word)
    assert not tracer.assignments(tree).get(word), (data, word)
    froms = {(n.level or 0, n.module or "", a.name) for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
             for a in n.names if (a.asname or a.name) == word}
    assert froms <= set(answer), (data, word, answer, froms)


@pytest.mark.parametrize("path", FILES, ids=lambda p: os.path.relpath(p, HERE))
def test_sound_on_every_word_of_every_fixture(path):
    with open(path, "rb") as fh:
        data = fh.read()
    for word in sorted({w.decode() for w in WORD.findall(data)}):
        check_sound(data, word)


READS = textwrap.dedent("""
    from vllm.v1.kv_cache_interface import (  # noqa: F401
        FullAttentionSpec,
        Spec,
    )
    from vllm.config import a, \\
        Spec as Alias
    import Spec.sub
    x = Spec(1)
    y = Spec.from_specs([]) + Spec [0]
    if isinstance(x, Spec):
        z = "Spec" + 'Spec' + obj.Spec
    def f(a: Spec) -> Spec:
        return Spec
""")


def test_answers_a_class_only_read_after_its_import():
    data = READS.encode()
    # `def f(a: Spec) -> Spec:` and `return Spec` read it, but the text alone cannot tell
    assert only_imported(data, "Spec") is None
    data = data[:data.index(b"def f")]
    assert only_imported(data, "Spec") == ((0, "vllm.v1.kv_cache_interface", "Spec"),)
    assert only_imported(data, "Alias") == ((0, "vllm.config", "Spec"),)
    assert only_imported(data, "FullAttentionSpec") == ((0, "vllm.v1.kv_cache_interface", "FullAttentionSpec"),)
    assert only_imported(data, "absent") == ()
    check_sound(data, "Spec")


@pytest.mark.parametrize("text", [
    "from m import W\ndef W(x):\n    pass\n",
    "from m import W\nasync def W(x):\n    pass\n",
    "from m import W\nclass W(Base):\n    pass\n",
    "from m import W\nclass W:\n    pass\n",
    "from m import W\ndef \\\n  W():\n    pass\n",
    "from m import W\nW = 1\n",
    "from m import W\nW: int = 1\n",
    "from m import W\n(W): int = 1\n",
    "from m import W\na, W = 1, 2\n",
    "from m import W\n(a, W) = 1, 2\n",
    "from m import W\n[a, W] = 1, 2\n",
    "from m import W\nW, *a = 1, 2\n",
    "from m import W\nfor a, W in x:\n    pass\n",
    "from m import W\nfor (a, W) in x:\n    pass\n",
    "from m import W\nif (W := f()):\n    pass\n",
    "from m import W\ntry:\n    W = 2\nexcept E:\n    pass\n",
    "from m import W\nW \\\n  = 1\n",
    "from m import W\n(\n  a, W) = 1, 2\n",
    "from m import (a, # )\n  W)\nW = 1\n",
    "from m import a; W = 1\n",
    "from m import a  # \\\nW = 1\n",
    # a docstring line that looks like an import, its string closed on that line
    'doc = """\nfrom m import (a, # """ ; W = (1\n)\n',
    # NFKC: the fullwidth spelling is the same identifier
    "from m import W\n\uff37 = 1\n",
    "from m import W\nfrom . import W\nW = 2\n",
])
def test_refuses_every_form_that_binds_the_name(text):
    data = text.encode("utf-8")
    assert only_imported(data, "W") is None
    t = truth(data, "W")
    assert t is not None and t[0], text  # each form binds W


@pytest.mark.parametrize("text", [
    "from m import W\nif isinstance(x, W):\n    pass\n",
    "from m import (\n    W,\n)\nW(1)\nW.f()\nW[0]\n",
    "from m import a, \\\n    W\ny = x.W\n",
    "from m import b as W\ns = 'W'\n",
    "import a.W as W\nfrom q import W\n",
])
def test_answers_the_forms_that_only_read_it(text):
    data = text.encode()
    assert only_imported(data, "W") is not None
    check_sound(data, "W")


@pytest.mark.parametrize("text", [
    "class W(Base):\n    pass\nW(1)\n",
    "class W:\n    pass\n",
    "@dataclass\nclass  W  :\n    x: int = 0\n",
    "class \\\n  W(\n  Base):\n    pass\n",
    "def f():\n    class W:\n        pass\n    return W()\n",
    "# the class W: a comment\nx = 1\n",
])
def test_classes_answers_class_statements(text):
    data = text.encode()
    assert only_imported(data, "W") is None  # a definition: refused without `classes`
    assert only_imported(data, "W", classes=True) == ()
    check_sound_classes(data, "W")


@pytest.mark.parametrize("text", [
    "class W:\n    pass\ndef W():\n    pass\n",
    "class W:\n    pass\nW = make(W)\n",
    "class W:\n    pass\nasync def W():\n    pass\n",
    "class W[T]:\n    pass\n",  # a generic class (3.12): not read as a class statement
    "myclass W:\n",
])
def test_classes_refuses_functions_and_assignments(text):
    assert only_imported(text.encode(), "W", classes=True) is None


def test_classes_lists_an_import_of_the_name():
    data = b"from .impl import W\nx = W(1)\n"
    assert only_imported(data, "W", classes=True) == ((1, "impl", "W"),)


FRAGMENTS = ["W", "W", "W", "from m import ", "from . import ", "import ", " as ", "def ", "class ", " = ", ": ",
             ":= ", ", ", "(", ")", "[", "]", ".", "\n", "\n    ", "\\\n", "for ", " in ", "#", "'", '"', '"""',
             "x", "f", "isinstance", "1", "if ", "pass", ";", "*"]


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=30))
def test_sound_on_random_texts(parts):
    check_sound("".join(parts).encode(), "W")


# -- Project: the same answers with and without the shortcut ----------------------------------

LAYOUT = {
    "pkg/__init__.py": "",
    # reads a class it re-exports from outside the project: nothing to find
    "pkg/outside.py": "from vllm.spec import Spec, Other\n\ndef f(x):\n    if isinstance(x, Spec):\n        return Spec.of(x)\n",
    # binds it too
    "pkg/bound.py": "from vllm.spec import Spec\nSpec = torch_npu.npu_fused_infer_attention_score\n",
    # re-exports it from a module of the project
    "pkg/inner.py": "from .impl import Spec\n",
    "pkg/impl.py": "import torch_npu\nSpec = torch_npu.npu_fused_infer_attention_score\n",
    # re-exports it from a project package whose submodule is named like it
    "pkg/sub.py": "from pkg.impl import Spec\n",
    # a package re-exporting from outside the project a name that is also its submodule:
    # the parse answers None, a failed parse would answer the submodule (so it is parsed)
    "pkg2/__init__.py": "from vllm.x import impl\n",
    "pkg2/impl.py": "import torch_npu\nimpl = torch_npu.npu_fused_infer_attention_score\n",
}
USERS = {
    "outside": "from pkg.outside import Spec\nSpec(1)\n",
    "bound": "from pkg.bound import Spec\nSpec(1)\n",
    "inner": "from pkg.inner import Spec\nSpec(1)\n",
    "sub": "from pkg.sub import Spec\nSpec(1)\n",
    "pkg_impl": "from pkg import impl\nimpl(1)\n",
    "pkg2": "from pkg2 import impl\nimpl(1)\n",
}


def _answers(tmp_path, shortcut: bool):
    for rel, text in LAYOUT.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    out = {}
    for key, text in USERS.items():
        use = tmp_path / f"use_{key}.py"
        use.write_text(text)
        project = Project([str(tmp_path)])
        if not shortcut:
            project._leads_nowhere = lambda *a: False
        source = decode(str(use), text.encode())
        tracer = ValueTracer(ModuleIndex(source, parse(source)), project)
        project.begin(tracer)
        name = "impl" if key in ("pkg_impl", "pkg2") else "Spec"
        values = [ast.dump(v) for v in project.imported_values(tracer, name, name)]
        parsed = sorted(os.path.relpath(p, tmp_path) for p, m in project._modules.items() if m is not None)
        out[key] = (values, sorted(os.path.relpath(p, tmp_path) for p in project.end()), parsed)
    return out


def test_project_answers_the_same_with_and_without_the_shortcut(tmp_path):
    fast, slow = _answers(tmp_path, True), _answers(tmp_path, False)
    for key in USERS:
        assert fast[key][:2] == slow[key][:2], key  # the same values, the same modules touched
    assert fast["outside"] == ([], ["pkg/outside.py"], [])  # not parsed, recorded in touched
    assert slow["outside"][2] == ["pkg/outside.py"]
    assert fast["bound"][0] and fast["inner"][0] and fast["sub"][0]
    assert fast["pkg2"] == slow["pkg2"] and fast["pkg2"][2] == ["pkg2/__init__.py"]


# -- Project: a name that can only be a class is not looked for where a function is wanted ----

CLASS_LAYOUT = {
    "pkg/__init__.py": "",
    # makes operator calls (so the bytes pre-screen passes it), binds Indexer as a class only
    "pkg/models.py": textwrap.dedent("""
        import torch_npu

        class Indexer:
            def forward(self, q, k, v):
                return torch_npu.npu_fused_infer_attention_score(q, k, v, num_heads=8, scale=0.1)
    """),
    # an adapter: forwards its mask to the operator
    "pkg/ops.py": textwrap.dedent("""
        import torch_npu

        def fia(q, k, v, mask):
            return torch_npu.npu_fused_infer_attention_score(q, k, v, num_heads=8, scale=0.1,
                                                             atten_mask=mask, sparse_mode=3)
    """),
}
CLASS_USER = textwrap.dedent("""
    import torch
    from pkg.models import Indexer
    from pkg.ops import fia

    def run(q, k, v):
        idx = Indexer()
        mask = torch.ones(2048, 2048).float()
        return idx, fia(q, k, v, mask)
""")


def _check_class_user(tmp_path, shortcut: bool):
    for rel, text in CLASS_LAYOUT.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    use = tmp_path / "use.py"
    use.write_text(CLASS_USER)
    checker = Checker(Settings(), roots=[str(tmp_path)])
    if not shortcut:
        checker.project._class_at_most = lambda *a: False
    result = checker.check_bytes(str(use), use.read_bytes(), prefilter=False)  # (no operator name in it)
    parsed = sorted(os.path.relpath(p, tmp_path) for p, m in checker.project._modules.items() if m is not None)
    deps = sorted(os.path.relpath(p, tmp_path) for p in result.dependencies)
    return [(f.code, f.line, f.message) for f in result.findings], deps, parsed


def test_a_class_is_not_parsed_for_an_adapter_call(tmp_path):
    fast, slow = _check_class_user(tmp_path, True), _check_class_user(tmp_path, False)
    assert fast[0] == slow[0] and any(code == "KV205" for code, _, _ in fast[0])  # the adapter's mask
    assert fast[1] == slow[1] == ["pkg/models.py", "pkg/ops.py"]  # both recorded for the cache
    assert fast[2] == ["pkg/ops.py"]  # models.py not parsed
    assert slow[2] == ["pkg/models.py", "pkg/ops.py"]


@pytest.mark.parametrize("extra", [
    "\ndef Indexer():\n    return None\n",
    "\nIndexer = make()\n",
    "\nfrom .ops import fia as Indexer\n",  # a re-export of a function
])
def test_a_name_that_may_be_a_function_is_parsed(tmp_path, extra):
    kept = dict(CLASS_LAYOUT)
    try:
        CLASS_LAYOUT["pkg/models.py"] += extra
        fast, slow = _check_class_user(tmp_path, True), _check_class_user(tmp_path, False)
    finally:
        CLASS_LAYOUT.clear()
        CLASS_LAYOUT.update(kept)
    assert "pkg/models.py" in fast[2]
    assert fast == slow
    # the question itself (other paths of a check may parse the module anyway)
    project = Project([str(tmp_path)])
    source = decode(str(tmp_path / "use.py"), CLASS_USER.encode())
    tracer = ValueTracer(ModuleIndex(source, parse(source)), project)
    project.begin(tracer)
    assert not project._class_at_most(tracer, "Indexer", re.compile(rb"npu_fused_infer_attention_score"))
    assert not project._modules  # nothing parsed to answer it


def test_the_question_skips_only_a_class(tmp_path):
    _check_class_user(tmp_path, True)  # writes the layout
    project = Project([str(tmp_path)])
    source = decode(str(tmp_path / "use.py"), CLASS_USER.encode())
    tracer = ValueTracer(ModuleIndex(source, parse(source)), project)
    project.begin(tracer)
    words = re.compile(rb"npu_fused_infer_attention_score")
    assert project.imported_definition(tracer, "Indexer", words, functions_only=True) is None
    assert not project._modules and sorted(os.path.relpath(p, tmp_path) for p in project.end()) == ["pkg/models.py"]
    project.begin(tracer)
    found = project.imported_definition(tracer, "Indexer", words)  # a class is what a parse finds
    assert isinstance(found[1], ast.ClassDef)
    assert not project._class_at_most(tracer, "fia", words)  # a function: parsed
