"""The quantization conformance tests' shared checks (test_post_quant, test_quant_*): an accepted
case passes the guard in collect mode, a rejected one raises KV518 naming `words` under patch(),
and check_call() agrees on both. Cases are (operator, positional args, keyword args)."""
import pytest
from test_conformance import _collect, _op  # the same replay helpers (meta tensors, collect mode)

import kvlint
from kvlint.runtime import check_call


def passes(case) -> None:
    findings = [f for f in _collect(case) if f.severity == "error"]
    assert findings == [], [f.message for f in findings]


def raises_kv518(case, words: str) -> None:
    op_name, args, kwargs = case
    with kvlint.patch(), pytest.raises(kvlint.ContractError) as info:
        _op(op_name)(*args, **kwargs)
    assert info.value.code == "KV518", str(info.value)
    assert words in str(info.value), str(info.value)


def _bound(args, kwargs):
    return dict(zip(("query", "key", "value"), args), **kwargs)


def check_call_agrees(accepted: dict, rejected: dict) -> None:
    for name, (op_name, args, kwargs) in accepted.items():
        assert [f for f in check_call(op_name, _bound(args, kwargs)) if f.severity == "error"] == [], name
    for name, ((op_name, args, kwargs), _) in rejected.items():
        assert [f.code for f in check_call(op_name, _bound(args, kwargs))][:1] == ["KV518"], name
