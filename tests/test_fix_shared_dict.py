"""A `**dict` shared by calls of both FA versions has no right rename; and fixes that undo each
other must not send --fix round in circles."""
from kvlint.analysis.findings import Edit, FileResult, Finding, Fix
from kvlint.engine import Checker
from kvlint.fix import fix_source
from kvlint.source import decode

SHARED = '''\
import torch_npu


def forward(q, k, v, prefill):
    common = {"num_heads": 8, "scale": 0.1, "input_layout": "BSH"}
    if prefill:
        out, _ = torch_npu.npu_fused_infer_attention_score(q, k, v, **common)
    else:
        out, _ = torch_npu.npu_fused_infer_attention_score_v2(q, k, v, **common)
    return out
'''


def test_shared_dict_gets_the_finding_but_no_fix():
    result = Checker().check_source(decode("m.py", SHARED.encode()))
    kv101 = [f for f in result.findings if f.code == "KV101"]
    assert [(f.line, f.fix) for f in kv101] == [(5, None), (5, None)]


def test_a_dict_feeding_one_call_keeps_its_safe_fix():
    text = SHARED.replace("    if prefill:\n        out, _ = torch_npu.npu_fused_infer_attention_score(q, k, v, **common)\n    else:\n    ",
                          "    if True:\n    ")
    result = Checker().check_source(decode("m.py", text.encode()))
    fixes = [f.fix for f in result.findings if f.code == "KV101"]
    assert len(fixes) == 2 and all(f is not None and f.safe for f in fixes)


class FlipFlop:
    """A checker whose fix turns `a` into `b` and `b` back into `a`."""

    def check_source(self, source):
        text = source.text
        target = "b" if "x = a" in text else "a"
        col = text.index("x = ") + 4
        fix = Fix("flip", (Edit((1, col), (1, col + 1), target),), safe=True)
        return FileResult(source.path, [Finding(source.path, 1, col + 1, 1, col + 2, "KV999", "flip",
                                                fix=fix)])


def test_fixes_that_undo_each_other_stop_at_the_first_repeat():
    outcome = fix_source(FlipFlop(), decode("m.py", b"x = a\n"))
    assert outcome.text == "x = b\n"
    assert any("undo each other" in e for e in outcome.errors)
