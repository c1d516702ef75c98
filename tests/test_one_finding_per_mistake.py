"""One mistake, one finding: a scale or head count passed under the other FA version's name
(or under a documented wrong spelling) is KV101's (KV102's) finding; KV103, KV104 and KV150
stay quiet about that parameter. Each combination runs `kvlint check` with every rule on."""
import json
import textwrap

import pytest

from kvlint.cli import main

CASES = {
    "v1 call, v2 scale name": ("""
        def f(q, k, v):
            return torch_npu.npu_fused_infer_attention_score(q, k, v, num_heads=8, softmax_scale=0.1)
        """, ["KV101"]),
    "v2 call, v1 scale name": ("""
        def f(q, k, v):
            return torch_npu.npu_fused_infer_attention_score_v2(q, k, v, num_query_heads=8, scale=0.1)
        """, ["KV101"]),
    "v1 call, v2 head-count name": ("""
        def f(q, k, v):
            return torch_npu.npu_fused_infer_attention_score(q, k, v, num_query_heads=8, scale=0.1)
        """, ["KV101"]),
    "v2 call, v1 head-count name": ("""
        def f(q, k, v):
            return torch_npu.npu_fused_infer_attention_score_v2(q, k, v, num_heads=8, softmax_scale=0.1)
        """, ["KV101"]),
    "v2 call, both under v1 names": ("""
        def f(q, k, v):
            return torch_npu.npu_fused_infer_attention_score_v2(q, k, v, num_heads=8, scale=0.1)
        """, ["KV101", "KV101"]),
    "**kwargs dict with the v2 scale name": ("""
        def f(q, k, v):
            extra = {"softmax_scale": 0.1}
            return torch_npu.npu_fused_infer_attention_score(q, k, v, num_heads=8, **extra)
        """, ["KV101"]),
    "dict() kwargs with the v1 names into v2": ("""
        def f(q, k, v):
            extra = dict(num_heads=8, scale=0.1)
            return torch_npu.npu_fused_infer_attention_score_v2(q, k, v, **extra)
        """, ["KV101", "KV101"]),
    "torch.ops v2 with v1 names": ("""
        def f(q, k, v):
            return torch.ops.npu.npu_fused_infer_attention_score_v2(q, k, v, num_heads=8, scale=0.1)
        """, ["KV101", "KV101"]),
    "torch.ops v1 .default with the v2 scale name": ("""
        def f(q, k, v):
            return torch.ops.npu.npu_fused_infer_attention_score.default(q, k, v, num_heads=8, softmax_scale=0.1)
        """, ["KV101"]),
    "wrapper passing its scale under the v2 name": ("""
        class Attention:
            def forward(self, q, k, v, scale, attn_mask):
                return torch_npu.npu_fused_infer_attention_score(
                    q, k, v, num_heads=8, softmax_scale=scale, atten_mask=attn_mask)
        """, ["KV101"]),
    "wrapper passing its scale under the v1 name to v2": ("""
        def attend(q, k, v, softmax_scale):
            return torch_npu.npu_fused_infer_attention_score_v2(q, k, v, num_query_heads=8, scale=softmax_scale)
        """, ["KV101"]),
    "documented wrong spelling (KV102 hint)": ("""
        def f(q, k, v):
            return torch_npu.npu_fused_infer_attention_score(q, k, v, num_heads=8, scale_value=0.1)
        """, ["KV102"]),
    # controls: the other rules still fire when nothing was passed for the parameter
    "control: no scale at all": ("""
        def f(q, k, v):
            return torch_npu.npu_fused_infer_attention_score(q, k, v, num_heads=8)
        """, ["KV103"]),
    "control: wrong head-count name, scale missing": ("""
        def f(q, k, v):
            return torch_npu.npu_fused_infer_attention_score(q, k, v, num_query_heads=8)
        """, ["KV103", "KV101"]),
    "control: wrapper dropping its scale": ("""
        def attend(q, k, v, scale):
            return torch_npu.npu_fused_infer_attention_score(q, k, v, num_heads=8, scale=0.125)
        """, ["KV150"]),
    "control: v2-only keyword has no v1 counterpart": ("""
        def f(q, k, v):
            return torch_npu.npu_fused_infer_attention_score(q, k, v, num_heads=8, scale=0.1, query_quant_mode=0)
        """, ["KV101"]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_one_mistake_one_finding(tmp_path, capsys, name):
    body, expected = CASES[name]
    path = tmp_path / "m.py"
    path.write_text("import torch\nimport torch_npu\n\n" + textwrap.dedent(body))
    main(["check", "--isolated", "--no-cache", "--extend-select", "ALL", "--format", "json", str(path)])
    findings = json.loads(capsys.readouterr().out)["findings"]
    assert [f["code"] for f in findings] == expected, [f["message"] for f in findings]


@pytest.mark.parametrize("selection, expected", [
    (["--select", "KV103"], ["KV103"]),  # KV101 not running: KV103 is not silenced
    (["--ignore", "KV101"], ["KV103"]),
    (["--select", "KV101,KV103"], ["KV101"]),
])
def test_nothing_is_subsumed_by_a_rule_that_does_not_run(tmp_path, capsys, selection, expected):
    path = tmp_path / "m.py"
    path.write_text("import torch_npu\n\n" + textwrap.dedent(CASES["v1 call, v2 scale name"][0]))
    main(["check", "--isolated", "--no-cache", "--format", "json", *selection, str(path)])
    assert [f["code"] for f in json.loads(capsys.readouterr().out)["findings"]] == expected
