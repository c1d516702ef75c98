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
        return
    t = truth(data, word)
    if t is None:
        return  # a module that does not parse answers nothing: any answer is the same
    bound, froms = t
    assert not bound, (data, word)
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
