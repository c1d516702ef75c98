"""A checked file that another file's check already parsed on demand (an imported builder
or adapter module) is not parsed again, and its findings are the same."""
import ast
import os

from kvlint.engine import Checker

HERE = os.path.dirname(os.path.abspath(__file__))
PROJECT = os.path.join(HERE, "..", "fixtures", "projects", "adapters")
REAL_PARSE = ast.parse


def _files():
    out = []
    for dirpath, _, names in os.walk(PROJECT):
        out += [os.path.join(dirpath, n) for n in sorted(names) if n.endswith(".py")]
    return sorted(out)


def _check_all(monkeypatch, share: bool):
    parsed = []
    checker = Checker(roots=[PROJECT])
    root = os.path.abspath(PROJECT)

    def counting(source, filename="<unknown>", *args, **kwargs):
        if os.path.abspath(filename).startswith(root):
            parsed.append(os.path.abspath(filename))
        return REAL_PARSE(source, filename, *args, **kwargs)

    monkeypatch.setattr(ast, "parse", counting)
    if not share:
        monkeypatch.setattr(checker.project, "parsed_tree", lambda path, data: None)
    results = {}
    for path in _files():
        r = checker.check_path(path)
        results[path] = ([(f.line, f.column, f.code, f.message) for f in r.findings], sorted(r.dependencies))
    return results, parsed


def test_a_module_parsed_for_an_importer_is_not_parsed_again(monkeypatch):
    shared, parsed = _check_all(monkeypatch, share=True)
    unshared, parsed_twice = _check_all(monkeypatch, share=False)
    assert shared == unshared
    assert len(parsed) < len(parsed_twice)  # ops/device_op.py is loaded for attention.py first


def test_parsed_tree_only_for_the_same_bytes(tmp_path):
    mod = tmp_path / "helpers.py"
    mod.write_text("def build():\n    return 1\n")
    checker = Checker(roots=[str(tmp_path)])
    tracer = checker.project.load(str(mod))
    assert checker.project.parsed_tree(str(mod), mod.read_bytes()) is tracer.index.tree
    assert checker.project.parsed_tree(str(mod), b"def build():\n    return 2\n") is None
    assert checker.project.parsed_tree(str(tmp_path / "other.py"), mod.read_bytes()) is None


MASKS = ("import torch\nimport torch_npu\n\n\ndef build(n):\n    return torch.ones(n, n).{cast}()\n\n\n"
         "def reference(q, k, v, n):\n    return torch_npu.npu_fused_infer_attention_score(q, k, v, num_heads=n, scale=0.1)\n")


def test_a_checked_file_is_parsed_again_for_a_later_importer(tmp_path, monkeypatch):
    """A checked file's tree is not kept for a later importer (keeping two dozen trees of
    model files cost more in page faults than the parses it saved): the importer parses the
    module on demand, with the same findings, and sees an edit made after the check."""
    masks = tmp_path / "masks.py"
    masks.write_text(MASKS.format(cast="float"))
    user = tmp_path / "user.py"
    user.write_text("import torch_npu\nfrom masks import build\n\n\ndef f(q, k, v, n):\n"
                    "    return torch_npu.npu_fused_infer_attention_score(q, k, v, num_heads=n, scale=0.1,\n"
                    "        atten_mask=build(8), sparse_mode=3, input_layout='BSND')\n")
    parsed = []

    def counting(source, filename="<unknown>", *args, **kwargs):
        parsed.append(os.path.basename(filename))
        return REAL_PARSE(source, filename, *args, **kwargs)

    monkeypatch.setattr(ast, "parse", counting)
    checker = Checker(roots=[str(tmp_path)])
    first = checker.check_path(str(masks))
    kept = checker.check_path(str(user))
    assert parsed == ["masks.py", "user.py", "masks.py"]  # masks.py again, for the importer
    assert [f.code for f in kept.findings] == ["KV205"]  # the float mask built in masks.py
    assert str(masks) in kept.dependencies and not first.findings

    # an edit after the check: the importer parses the module again, with the new bytes
    parsed.clear()
    masks.write_text(MASKS.format(cast="bool") + "\n")
    again = checker.check_path(str(user))
    assert parsed == ["user.py", "masks.py"]
    assert "KV205" not in [f.code for f in again.findings]


def test_an_edit_between_two_checks_is_seen_by_the_byte_test(tmp_path):
    """Project.mentions reads a module's stat once per file checked, not once per process: a
    module that gains the alias an importer uses is loaded at the next check."""
    ops = tmp_path / "ops.py"
    ops.write_text("x = 1\n")
    user = tmp_path / "user.py"
    user.write_text("from ops import fia  # npu_fused_infer_attention_score\n\n\ndef f(q, k, v):\n"
                    "    return fia(q, k, v, num_heads=8, input_layout='BSND')\n")
    checker = Checker(roots=[str(tmp_path)])
    before = checker.check_path(str(user))
    assert not before.findings and str(ops) in before.dependencies  # looked at, no alias
    ops.write_text("import torch_npu\n\nfia = torch_npu.npu_fused_infer_attention_score\n")
    after = checker.check_path(str(user))
    assert "KV103" in [f.code for f in after.findings]  # the alias now resolves: no scale passed
    assert checker.check_path(str(user)).findings == after.findings  # asked again: the same answer


def test_a_module_read_to_look_for_a_word_is_not_read_again_to_parse_it(monkeypatch):
    """Project.mentions reads a module's bytes before a load parses it: the parse takes those
    bytes (same stat) instead of opening the file again."""
    import builtins

    from kvlint.analysis import project as project_module

    opened = []
    real_open = builtins.open

    def counting(file, *args, **kwargs):
        opened.append(os.path.abspath(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(project_module, "open", counting, raising=False)
    checker = Checker(roots=[PROJECT])
    for path in _files():
        checker.check_path(path)
    assert opened, "no module was read on demand"
    assert len(opened) == len(set(opened)), sorted(opened)
