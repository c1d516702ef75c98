"""The guard never changes what the program does: operator identity, torch.compile with dynamic
shapes, inference_mode / no_grad, graph capture, handles per thread and context, a guard with
nothing to guard, a crashing contract."""
import os
import subprocess
import sys
import threading
import types
import warnings
from pathlib import Path

import pytest
import torch
import torch_npu

import kvlint
from kvlint.runtime import call as call_module
from kvlint.runtime import guard

ROOT = Path(__file__).resolve().parents[2]
H = torch.float16
FA = torch_npu.npu_fused_infer_attention_score
GOOD = dict(num_heads=4, num_key_value_heads=2, scale=0.25, input_layout="BSH")


def qkv(batch=2):
    return torch.randn(batch, 3, 64).to(H), torch.randn(batch, 5, 32).to(H), torch.randn(batch, 5, 32).to(H)


def packets():
    packet = torch.ops.npu.npu_fused_infer_attention_score
    return [packet, packet.default, packet.out, torch.ops.npu.npu_scatter_pa_kv_cache.default,
            torch.ops.atb._npu_reshape_and_cache]


# ------------------------------------------------------------------ 1. operator identity
def test_hash_and_equality_of_guarded_operators_are_unchanged():
    ops = packets()
    hashes = [hash(op) for op in ops]
    table = {op: i for i, op in enumerate(ops)}  # e.g. inductor's lowerings, keyed before patch()
    with kvlint.patch():
        assert all(isinstance(op._op, guard._Guarded) for op in ops)
        assert [hash(op) for op in ops] == hashes
        assert [table.get(op) for op in ops] == list(range(len(ops)))
        assert all(op == op and op in table for op in ops)
        assert {op: 1 for op in ops}.keys() == table.keys()
    assert [hash(op) for op in ops] == hashes


def test_inductor_lowering_registered_before_patch_is_still_found():
    lowering = pytest.importorskip("torch._inductor.lowering")
    op = torch.ops.npu.npu_scatter_pa_kv_cache.default
    marker = object()
    lowering.lowerings[op] = marker
    try:
        with kvlint.patch():
            assert lowering.lowerings.get(op) is marker
    finally:
        del lowering.lowerings[op]


# ------------------------------------------------------------------ 2. torch.compile, dynamic shapes
def attn(q, k, v):
    out, _ = FA(q, k, v, **GOOD)
    return out * 2


def bad_attn(q, k, v):
    out, _ = FA(q, k, v, **dict(GOOD, num_key_value_heads=3))
    return out


@pytest.fixture
def dynamo():
    from torch._dynamo.testing import CompileCounterWithBackend

    torch._dynamo.reset()
    yield lambda: CompileCounterWithBackend("aot_eager")
    torch._dynamo.reset()


def attention_graphs(counter) -> int:
    """How many graphs holding the attention call were compiled (dynamo may add empty ones)."""
    return sum("npu_fused_infer_attention_score" in g.code for g in counter.graphs)


def _compile_over_batches(fn, counter, batches, **options):
    compiled = torch.compile(fn, backend=counter, fullgraph=True, **options)
    results = []
    for batch in batches:
        q, k, v = qkv(batch)
        results.append((compiled(q, k, v), fn(q, k, v)))
    return results


def test_dynamic_compile_over_several_shapes_compiles_once(dynamo):
    counter = dynamo()
    with kvlint.patch(mode="collect") as handle:
        results = _compile_over_batches(attn, counter, (2, 3, 5), dynamic=True)
    assert attention_graphs(counter) == 1
    assert all(torch.equal(got, expected) for got, expected in results)
    assert handle.findings == []


def test_mark_dynamic_batch_compiles(dynamo):
    counter = dynamo()
    compiled = torch.compile(attn, backend=counter, fullgraph=True)
    with kvlint.patch(mode="collect") as handle:
        for batch in (2, 4, 6):
            q, k, v = qkv(batch)
            for t in (q, k, v):
                torch._dynamo.mark_dynamic(t, 0)
            assert torch.equal(compiled(q, k, v), attn(q, k, v))
    assert attention_graphs(counter) == 1
    assert handle.findings == []


def test_dynamic_compile_still_reports_a_broken_call(dynamo):
    with kvlint.patch(), pytest.raises(Exception) as info:
        torch.compile(bad_attn, backend=dynamo(), fullgraph=True, dynamic=True)(*qkv(3))
    chain, exc = [], info.value
    while exc is not None:
        chain.append(exc)
        exc = exc.__cause__ or exc.__context__
    assert any(isinstance(e, kvlint.ContractError) and e.code == "KV112" for e in chain)


def test_the_compiled_graph_is_the_same_with_and_without_the_guard(dynamo):
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(str(gm.graph))
        return gm.forward
    for guarded in (False, True):
        torch._dynamo.reset()
        with kvlint.patch(mode="collect") if guarded else _nothing():
            torch.compile(attn, backend=backend, fullgraph=True, dynamic=True)(*qkv(3))
    assert len(graphs) == 2 and graphs[0] == graphs[1]


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None


# ------------------------------------------------------------------ 3. inference_mode / no_grad
def paged_layers(lengths_factory, bump_between_layers):
    """Two layers of paged decode over their own caches; lengths made by `lengths_factory`."""
    q = torch.randn(2, 1, 64).to(H)
    caches = [torch.randn(4, 128, 32).to(H) for _ in range(2)]
    table = torch.arange(4, dtype=torch.int32).reshape(2, 2)
    kv_len = lengths_factory()

    def step():
        for i, cache in enumerate(caches):
            FA(q, cache, cache, **GOOD, block_table=table, block_size=128, actual_seq_lengths_kv=kv_len)
            if bump_between_layers and i == 0:
                kv_len.add_(1)
    for _ in range(3):
        step()
        kv_len.add_(1)  # the runner advances kv_len between steps: fine


@pytest.mark.parametrize("context", ["inference_mode", "no_grad"])
def test_valid_calls_raise_no_warning_under_inference_mode(context):
    ctx = torch.inference_mode if context == "inference_mode" else torch.no_grad
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # as under python -W error
        with ctx(), kvlint.patch(mode="collect") as handle:
            paged_layers(lambda: torch.tensor([3, 5]), bump_between_layers=False)
            out, _ = FA(*qkv(), **GOOD)
    assert handle.findings == []
    assert out.shape == (2, 3, 64)


@pytest.mark.parametrize("context", ["inference_mode", "no_grad"])
def test_kv401_is_alive_under_inference_mode(context):
    ctx = torch.inference_mode if context == "inference_mode" else torch.no_grad
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with ctx(), kvlint.patch(mode="collect") as handle:
            paged_layers(lambda: torch.tensor([3, 5]), bump_between_layers=True)
    assert {f.code for f in handle.findings} == {"KV401"}


# ------------------------------------------------------------------ 4. graph capture
def test_no_value_is_read_while_a_stream_is_captured(monkeypatch):
    key = torch.randn(4, 2, 16).to(H)
    cache = torch.zeros(2, 128, 2, 16, dtype=H)
    slots = torch.tensor([0, 0, 1, 2], dtype=torch.int32)   # duplicates: KV319 when read
    capturing = {"on": True}
    monkeypatch.setattr(torch, "npu", types.SimpleNamespace(is_current_stream_capturing=lambda: capturing["on"]),
                        raising=False)
    monkeypatch.setattr(call_module, "HOST_DEVICES", frozenset())  # pretend CPU is a device
    read = []
    original = torch.Tensor.tolist
    monkeypatch.setattr(torch.Tensor, "tolist", lambda self: read.append(1) or original(self))
    with kvlint.patch(mode="collect", checks="full") as handle:
        torch_npu.npu_scatter_pa_kv_cache(key, key, cache, cache.clone(), slots, cache_mode="Norm")
        assert handle.findings == [] and read == []
        capturing["on"] = False
        torch_npu.npu_scatter_pa_kv_cache(key, key, cache, cache.clone(), slots, cache_mode="Norm")
    assert [f.code for f in handle.findings] == ["KV319"]


def test_capture_probe_on_a_machine_without_devices():
    assert call_module.capturing() is False


# ------------------------------------------------------------------ 5. handles per thread and context
def test_collect_thread_is_not_affected_by_a_raise_guard_in_another_thread():
    q, k, v = qkv()
    bad = dict(GOOD, num_key_value_heads=3)
    opened, done = threading.Event(), threading.Event()
    seen = {}

    def worker():
        with kvlint.patch(mode="collect") as handle:
            opened.set()
            done.wait(10)
            try:
                torch_npu.npu_fused_infer_attention_score(q, k, v, **bad)
            except kvlint.ContractError as exc:  # pragma: no cover - the failure this test guards against
                seen["raised"] = exc
            except RuntimeError:
                pass  # collect mode lets the call through; the stand-in then fails on the head count
            seen["codes"] = [f.code for f in handle.findings]
    thread = threading.Thread(target=worker)
    thread.start()
    opened.wait(10)
    with kvlint.patch(mode="raise"):
        done.set()
        thread.join(10)
        with pytest.raises(kvlint.ContractError):
            FA(q, k, v, **bad)
    assert "raised" not in seen and seen["codes"] == ["KV112"]


def test_unpatch_closes_only_the_callers_handles():
    main = kvlint.patch(mode="raise")
    other = {}

    def worker():
        other["handle"] = kvlint.patch(mode="collect")
        kvlint.unpatch()  # closes the worker's handle only
        other["main_active"] = main.active
    thread = threading.Thread(target=worker)
    thread.start()
    thread.join(10)
    assert other["main_active"] and main.active and not other["handle"].active
    assert guard.is_patched()
    kvlint.unpatch()
    assert not main.active and not guard.is_patched()


def test_a_thread_without_its_own_handle_is_guarded_by_the_process_guard():
    q, k, v = qkv()
    result = {}

    def worker():
        try:
            FA(q, k, v, **dict(GOOD, num_key_value_heads=3))
        except kvlint.ContractError as exc:
            result["code"] = exc.code
    with kvlint.patch():
        thread = threading.Thread(target=worker)
        thread.start()
        thread.join(10)
    assert result == {"code": "KV112"}


def test_contextvars_copy_sees_its_own_handle():
    import contextvars

    q, k, v = qkv()
    with kvlint.patch(mode="raise"):
        def in_context():
            with kvlint.patch(mode="collect") as inner:
                FA(q, k, v, **dict(GOOD, scale=1.0))
            return [f.code for f in inner.findings]
        assert contextvars.copy_context().run(in_context) == ["KV103"]
        with pytest.warns(kvlint.ContractWarning, match="KV103"):  # back in the raise-mode context
            FA(q, k, v, **dict(GOOD, scale=1.0))


# ------------------------------------------------------------------ 6. nothing to guard, no torch
def _python(code, *, fixtures=False, cwd=None):
    paths = [str(ROOT)] + ([str(ROOT / "fixtures")] if fixtures else [])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(paths))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=cwd or ROOT,
                          timeout=120)


def test_patch_guarding_nothing_warns_once_with_the_reason(tmp_path):
    code = ("import sys, warnings, torch; sys.modules['torch_npu'] = None; sys.modules['cann_ops_transformer'] = None\n"
            "import kvlint\n"
            "with warnings.catch_warnings(record=True) as caught:\n"
            "    warnings.simplefilter('always')\n"
            "    a = kvlint.patch(); b = kvlint.patch(mode='collect')\n"
            "print(a.guarded, len(caught)); print(caught[0].message); print(a.reason == b.reason != '')\n")
    result = _python(code, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    first, message, same = result.stdout.splitlines()
    assert first == "0 1"
    assert message.startswith("kvlint.patch(): guarding no operator: torch_npu is not importable (")
    assert same == "True"


def test_pytest_header_says_the_guard_guards_nothing(tmp_path):
    (tmp_path / "conftest.py").write_text("import sys\nsys.modules['torch_npu'] = None\n"
                                          "sys.modules['cann_ops_transformer'] = None\n")
    (tmp_path / "test_x.py").write_text("def test_x():\n    pass\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    from test_pytest_plugin import plugin_is_installed

    load = [] if plugin_is_installed() else ["-p", "kvlint.pytest_plugin"]
    result = subprocess.run([sys.executable, "-m", "pytest", *load, "-p", "no:cacheprovider", "--kvlint",
                             str(tmp_path)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "kvlint: runtime guard on but guarding no operator: torch_npu is not importable" in result.stdout


def test_without_torch_the_error_says_how_to_install_it():
    result = _python("import sys; sys.modules['torch'] = None\nimport kvlint\nkvlint.patch()\n")
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: kvlint's runtime guard (kvlint.patch(), pytest --kvlint) needs PyTorch")
    assert "pip install torch==" in last


# ------------------------------------------------------------------ 7. a crashing contract
def test_a_crashing_contract_warns_once_per_call_site(monkeypatch):
    from kvlint.runtime.families.fa import contracts as fa

    monkeypatch.setattr(fa, "QUERY_DTYPES", None)  # the dtypes contract now raises TypeError
    monkeypatch.setattr(guard, "_crashes", set())
    q, k, v = qkv()
    with kvlint.patch(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(5):
            FA(q, k, v, **GOOD)   # one call site
        for _ in range(3):
            FA(q, k, v, **GOOD)   # another
    crashes = [w for w in caught if "could not check" in str(w.message)]
    assert len(crashes) == 2
    assert {w.filename for w in crashes} == {__file__}
    assert "contract dtypes" in str(crashes[0].message)
