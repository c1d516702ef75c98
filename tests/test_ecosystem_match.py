"""The ecosystem check's matching of findings with triage entries (benchmarks/ecosystem.py).
The check itself needs the code bases and is not part of the suite; its matching is."""
import importlib.util
import sys
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "ecosystem", Path(__file__).resolve().parent.parent / "benchmarks" / "ecosystem.py")
eco = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("ecosystem", eco)  # dataclasses look their module up
_spec.loader.exec_module(eco)


def found(line, text, code="KV150", path="a+b/m.py"):
    return eco.Found(path, line, 1, code, "error", "msg", text)


def entry(line, text, verdict="FALSE", code="KV150", path="a+b/m.py"):
    return eco.Entry(path, line, code, verdict, "why", text)


def test_same_line_and_text_match():
    cmp = eco.compare([found(10, "x = 1")], [entry(10, "x = 1")])
    assert len(cmp.matched) == 1 and not cmp.new and not cmp.vanished


def test_moved_line_matches_by_text_nearest_first():
    # two identical lines: the finding that moved from 10 to 13 takes the entry of line 10
    cmp = eco.compare([found(13, "kv_len += 1"), found(43, "kv_len += 1")],
                      [entry(10, "kv_len += 1", "TRUE"), entry(40, "kv_len += 1", "FALSE")])
    assert [(f.line, e.line, e.verdict) for f, e in cmp.matched] == [(13, 10, "TRUE"), (43, 40, "FALSE")]


def test_edited_line_matches_by_line():
    cmp = eco.compare([found(10, "x = 2")], [entry(10, "x = 1", "JUSTIFIED")])
    assert [e.verdict for _, e in cmp.matched] == ["JUSTIFIED"]


def test_new_and_vanished_and_other_code_never_match():
    cmp = eco.compare([found(10, "x = 1", code="KV401"), found(5, "y")], [entry(10, "x = 1"), entry(99, "z")])
    assert sorted(f.line for f in cmp.new) == [5, 10]
    assert sorted(e.line for e in cmp.vanished) == [10, 99]


def test_precision_counts_triaged_only():
    cmp = eco.compare([found(1, "a"), found(2, "b"), found(3, "c")],
                      [entry(1, "a", "TRUE"), entry(2, "b", "FALSE")])
    (rule,) = eco.per_rule(cmp)
    assert (rule.findings, rule.triaged, rule.precision) == (3, 2, 0.5)
    assert rule.counts[eco.UNTRIAGED] == 1


def test_committed_triage_is_complete():
    entries = eco.load_triage()
    assert entries and all(e.verdict in eco.VERDICTS and e.reason for e in entries)
    assert all(e.path.split("/")[0] in {s.folder for s in eco.SNAPSHOTS} for e in entries)


def test_branch_rows_are_counted_in_their_rule_once():
    f1, f2 = found(1, "a"), found(2, "b")
    f2.branch = "PER_CALL_SCALE"
    cmp = eco.compare([f1, f2], [entry(1, "a", "TRUE"), entry(2, "b", "FALSE")])
    rows = {r.code: r for r in eco.per_rule(cmp)}
    assert set(rows) == {"KV150", "KV150/PER_CALL_SCALE"}
    assert rows["KV150"].findings == 2 and rows["KV150/PER_CALL_SCALE"].counts["FALSE"] == 1
    table = eco.precision_table(list(rows.values()), {})
    assert table[-1].startswith("| all | | 2 |")


def _doc_examples():
    spec = importlib.util.spec_from_file_location(
        "doc_examples", Path(__file__).resolve().parent.parent / "benchmarks" / "doc_examples.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_doc_examples_keep_the_blocks_that_call_torch_npu_and_compile():
    markdown = "\n".join([
        "# op", "```python", "import torch_npu", "out = torch_npu.npu_op(x)", "```",
        "```", "torch_npu.npu_op(Tensor x) -> Tensor", "```",  # a signature: does not compile
        "```python", "import torch", "y = torch.ones(2)", "```",  # no torch_npu call
        "```python", ">>> import torch_npu", ">>> y = torch_npu.npu_op(", "...     x)", "tensor([1.])", "```",
    ])
    blocks = list(_doc_examples().python_blocks(markdown))
    assert [n for n, _ in blocks] == [0, 3]
    assert blocks[1][1] == "import torch_npu\ny = torch_npu.npu_op(\n    x)"
    assert _doc_examples().file_name("docs/zh/torch_npu-npu_op.md", 3) == "torch_npu_npu_op__3.py"
