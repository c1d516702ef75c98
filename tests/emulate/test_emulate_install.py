"""install()/uninstall(): sys.modules, nesting, the context manager, force, the real package;
every catalog operator under its real namespace and schema; what is not emulated."""
import subprocess
import sys
import textwrap

import pytest
import torch

import kvlint.emulate
from kvlint.catalog import load_catalog

CATALOG = load_catalog().operators


def test_installed_modules_expose_the_packets_like_the_real_packages():
    import cann_ops_transformer
    import torch_npu

    assert torch_npu.npu_fused_infer_attention_score is torch.ops.npu.npu_fused_infer_attention_score
    assert torch_npu._npu_reshape_and_cache is torch.ops.atb._npu_reshape_and_cache
    assert torch_npu.atb.npu_ring_mla is torch.ops.atb.npu_ring_mla
    assert cann_ops_transformer.ops.kv_compress_epilog is torch.ops.cann_ops_transformer.kv_compress_epilog
    assert torch_npu.npu.is_available() is False
    assert torch_npu.__version__.endswith("+kvlint.emulate")


@pytest.mark.parametrize("op", CATALOG, ids=lambda o: o.qualified)
def test_every_catalog_operator_has_its_real_schema(op):
    packet = getattr(getattr(torch.ops, op.namespace), op.name)
    overload = getattr(packet, op.overload or "default")
    assert overload._schema == torch._C.parse_schema(f"{op.namespace}::{op.schema}")


def test_wrong_keyword_and_arity_fail_in_the_dispatcher():
    import torch_npu

    q = torch.randn(1, 2, 32, dtype=torch.float16)
    with pytest.raises(RuntimeError, match="scale_value"):
        torch_npu.npu_fused_infer_attention_score(q, q, q, num_heads=2, scale_value=0.25)
    with pytest.raises(RuntimeError, match="softmax_scale"):  # a v2 keyword on v1
        torch_npu.npu_fused_infer_attention_score(q, q, q, num_heads=2, softmax_scale=0.25)
    with pytest.raises(RuntimeError):  # a 4th positional argument
        torch_npu.npu_fused_infer_attention_score(q, q, q, q)
    with pytest.raises(RuntimeError, match="axis"):  # scatter_update_'s keyword is axis, not dim
        torch_npu.scatter_update_(q, torch.zeros(1, dtype=torch.int64), q, dim=-2)


@pytest.mark.parametrize("op", [o for o in CATALOG if (o.namespace, o.name, o.overload) not in
                                kvlint.emulate.kernels.KERNELS], ids=lambda o: o.qualified)
def test_operators_without_a_kernel_raise_not_implemented(op):
    packet = getattr(getattr(torch.ops, op.namespace), op.name)
    args = []
    for p in op.positional_params:
        args.append({"Tensor": torch.zeros(1), "int": 1, "SymInt": 1, "bool": True, "float": 1.0, "str": "BSH"}
                    .get(p.type.rstrip("?"), None))
    with pytest.raises(NotImplementedError, match=op.qualified.replace(".", r"\.") + ".*only the attention and KV-cache"):
        getattr(packet, op.overload or "default")(*args)


def test_arguments_the_reference_does_not_compute_raise_not_implemented():
    import torch_npu

    q = torch.randn(1, 2, 32, dtype=torch.float16)
    with pytest.raises(NotImplementedError, match="antiquant_scale"):
        torch_npu.npu_fused_infer_attention_score(q, q, q, num_heads=2, scale=0.25, antiquant_scale=torch.ones(1))
    with pytest.raises(NotImplementedError, match="keep_prob"):
        torch_npu.npu_fusion_attention(q, q, q, 2, "BSH", scale=0.25, keep_prob=0.9)
    # precision knobs are accepted: the reference math is float32 whatever they say
    torch_npu.npu_fused_infer_attention_score(q, q, q, num_heads=2, scale=0.25, inner_precise=1)


def test_other_torch_npu_attributes_say_they_are_not_emulated():
    import torch_npu

    assert not hasattr(torch_npu, "npu_rms_norm")
    with pytest.raises(AttributeError, match="emulates only the attention and KV-cache operators"):
        torch_npu.npu_format_cast  # noqa: B018 (the attribute look-up is what raises)


def test_uninstall_restores_sys_modules_and_install_is_idempotent():
    sentinel = object()
    kvlint.emulate.uninstall()
    assert "torch_npu" not in sys.modules and not kvlint.emulate.is_installed()
    sys.modules["cann_ops_transformer"] = sentinel
    try:
        first = kvlint.emulate.install(force=True)
        second = kvlint.emulate.install(force=True)
        assert first.active and second.active and kvlint.emulate.is_installed()
        first.close()
        assert kvlint.emulate.is_installed()  # the other handle still holds it
        second.close()
        assert sys.modules["cann_ops_transformer"] is sentinel and "torch_npu" not in sys.modules
        kvlint.emulate.uninstall()  # nothing installed: does nothing
    finally:
        sys.modules.pop("cann_ops_transformer", None)


def test_context_manager():
    kvlint.emulate.uninstall()
    with kvlint.emulate.install(force=True) as emulation:
        import torch_npu

        assert emulation.active and torch_npu.__kvlint_emulated__
    assert "torch_npu" not in sys.modules
    kvlint.emulate.install(force=True)
    import torch_npu as again

    assert again.npu_fused_infer_attention_score is torch.ops.npu.npu_fused_infer_attention_score


def test_real_package_importable_is_left_alone(tmp_path, monkeypatch):
    """Without force, an importable torch_npu wins; force=True emulates regardless."""
    kvlint.emulate.uninstall()
    (tmp_path / "torch_npu").mkdir()
    (tmp_path / "torch_npu" / "__init__.py").write_text("REAL = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    handle = kvlint.emulate.install()
    assert not handle.active and "real torch_npu is importable" in handle.reason
    assert sys.modules["torch_npu"].REAL
    del sys.modules["torch_npu"]
    assert kvlint.emulate.install(force=True).active and kvlint.emulate.is_installed()


def test_broken_real_package_is_emulated(tmp_path, monkeypatch):
    kvlint.emulate.uninstall()
    (tmp_path / "torch_npu").mkdir()
    (tmp_path / "torch_npu" / "__init__.py").write_text("raise ImportError('libascend_hal.so not found')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert kvlint.emulate.install().active and kvlint.emulate.is_installed()


def test_a_guard_patched_before_install_guards_the_emulated_operators():
    script = textwrap.dedent("""
        import torch, kvlint, kvlint.emulate
        handle = kvlint.patch(mode="collect")
        kvlint.emulate.install(force=True)
        import torch_npu
        q = torch.randn(1, 2, 64, dtype=torch.float16)
        torch_npu.npu_fused_infer_attention_score(q, q, q, num_heads=4, scale=0.125)
        print(sorted({f.code for f in handle.findings}))
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
    script_bad = script.replace("num_heads=4, scale=0.125", "num_heads=4, num_key_value_heads=3, scale=0.125")
    result = subprocess.run([sys.executable, "-c", script_bad.replace('mode="collect"', 'mode="raise"')],
                            capture_output=True, text=True, timeout=120)
    assert "KV112" in result.stderr and "ContractError" in result.stderr
