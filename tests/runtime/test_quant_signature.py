"""The quantization contracts are pure (their verdict is cached per call signature: shapes,
dtypes, scalars, list lengths): run on every quant conformance case, none reads a tensor's or a
list's values (registry.signature covers what they read), and every one of them is registered
pure."""
import pytest
import test_post_quant
import test_quant_antiquant
import test_quant_gqa_nz
import test_quant_int4
import test_quant_mla
import test_quant_mla_misc
import test_quant_prefill
import test_quant_split
import test_quant_tnd_prefill
import torch
from quant_replay import bare_call

from kvlint.runtime import call as call_module
from kvlint.runtime import registry
from kvlint.runtime.families.fa import quant_in, quant_out

MODULES = (test_post_quant, test_quant_antiquant, test_quant_gqa_nz, test_quant_int4, test_quant_mla, test_quant_mla_misc, test_quant_prefill,
           test_quant_split, test_quant_tnd_prefill)
CASES = {}
for module in MODULES:
    for table in ("ACCEPTED", "REJECTED", "NOT_CHECKED"):
        for name, case in getattr(module, table, {}).items():
            CASES[f"{module.__name__}: {name}"] = case[0] if table == "REJECTED" else case


def _bound(case):
    op_name, args, kwargs = case
    return op_name, dict(zip(("query", "key", "value"), args), **kwargs)


def test_the_quant_contracts_are_registered_pure():
    contracts = [fn for module in (quant_in, quant_out) for fn in vars(module).values()
                 if callable(fn) and hasattr(fn, "kvlint_pure")]
    assert {fn.__name__ for fn in contracts} == {"antiquant_split", "fia_route_quant", "prefill_bmm_factors",
                                                  "mla_antiquant", "mla_full_quant", "post_quant_ifa",
                                                  "post_quant_pfa", "post_quant_mla", "tnd_prefill_io", "gqa_kv_nz", "int4_cache"}
    assert all(fn.kvlint_pure for fn in contracts), [fn.__name__ for fn in contracts if not fn.kvlint_pure]


@pytest.mark.parametrize("name", sorted(CASES))
def test_no_quant_contract_reads_values(name, monkeypatch):
    def no_values(*args, **kwargs):
        raise AssertionError("a shape-only contract read values")
    op_name, args = _bound(CASES[name])
    plan = registry.plan_named(op_name)
    call = bare_call(op_name, args)
    for target, attr in ((call_module.Call, "int_list"), (call_module.Call, "readable"), (torch.Tensor, "tolist"),
                         (torch.Tensor, "item")):
        monkeypatch.setattr(target, attr, no_values)
    for fn in plan.pure:
        fn(call)  # an AssertionError fails the test
