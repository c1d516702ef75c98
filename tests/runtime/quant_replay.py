"""The quantization conformance tests' shared checks (test_post_quant, test_quant_*): an accepted
case passes the guard in collect mode, a rejected one raises KV518 naming `words` under patch(),
and check_call() agrees on both. Cases are (operator, positional args, keyword args)."""
import warnings

import pytest
from test_conformance import _collect, _op  # the same replay helpers (meta tensors, collect mode)

import kvlint
from kvlint.runtime import call as call_module
from kvlint.runtime import check_call, registry


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


def conformance_tests(accepted: dict, rejected: dict) -> tuple:
    """The three tests of a quant conformance module, for `test_accepted_..., test_rejected_...,
    test_check_call_... = conformance_tests(ACCEPTED, REJECTED)`: every accepted case passes,
    every rejected one raises KV518 with its words, check_call agrees."""
    @pytest.mark.parametrize("name", sorted(accepted))
    def test_accepted_by_the_operator_passes_the_guard(name):
        passes(accepted[name])

    @pytest.mark.parametrize("name", sorted(rejected))
    def test_rejected_by_the_operator_raises_kv518(name):
        raises_kv518(*rejected[name])

    def test_check_call_agrees_with_the_guard():
        check_call_agrees(accepted, rejected)

    return (test_accepted_by_the_operator_passes_the_guard, test_rejected_by_the_operator_raises_kv518,
            test_check_call_agrees_with_the_guard)


def unchecked_test(cases: dict):
    """`test_... = unchecked_test(NOT_CHECKED)`: calls outside what these contracts mirror (another
    tiling route, the empty-tensor path, an override) get no KV518 from them, whatever the
    operator makes of them (so they are not claimed as accepted)."""
    @pytest.mark.parametrize("name", sorted(cases))
    def test_outside_the_mirrored_checks_is_not_reported(name):
        findings = [f.message for f in _collect(cases[name]) if f.code == "KV518"]
        assert findings == [], findings

    return test_outside_the_mirrored_checks_is_not_reported


def bare_call(op_name: str, args: dict):
    """A Call of `op_name` with the bound `args` (schema defaults filled in), for running contracts
    directly, outside the guard."""
    op = registry._catalog_operator(op_name, None)
    full = {p.name: p.default for p in op.params if not p.required}
    full.update(args)
    return call_module.Call(op, registry.base_name(op.name), full, dict(args), (), 0, False)


def coded_conformance_tests(accepted: dict, rejected: dict) -> tuple:
    """Like conformance_tests, for rejects of any code: `rejected` maps a name to (case, code,
    words). Returns (accepted passes the guard, check_call accepts it, rejected raises `code` with
    `words` under patch(), check_call reports `code` as its first error)."""
    @pytest.mark.parametrize("name", sorted(accepted))
    def test_accepted_by_the_operator_passes_the_guard(name):
        passes(accepted[name])

    @pytest.mark.parametrize("name", sorted(accepted))
    def test_check_call_accepts_it_too(name):
        op_name, args, kwargs = accepted[name]
        assert [f.message for f in check_call(op_name, _bound(args, kwargs)) if f.severity == "error"] == []

    @pytest.mark.parametrize("name", sorted(rejected))
    def test_rejected_by_the_operator_raises_with_its_code(name):
        (op_name, args, kwargs), code, words = rejected[name]
        # a unit test's scale 1.0 warns KV103 before the reject: the warning is not the subject
        with warnings.catch_warnings(), kvlint.patch(), pytest.raises(kvlint.ContractError) as info:
            warnings.simplefilter("ignore", kvlint.ContractWarning)
            _op(op_name)(*args, **kwargs)
        assert (info.value.code, words in str(info.value)) == (code, True), str(info.value)

    @pytest.mark.parametrize("name", sorted(rejected))
    def test_check_call_reports_the_same_code_first(name):
        """(the first error: a warning such as KV103 for a unit test's scale 1.0 does not raise)"""
        (op_name, args, kwargs), code, _ = rejected[name]
        found = check_call(op_name, _bound(args, kwargs))
        assert [f.code for f in found if f.severity == "error"][:1] == [code]

    return (test_accepted_by_the_operator_passes_the_guard, test_check_call_accepts_it_too,
            test_rejected_by_the_operator_raises_with_its_code, test_check_call_reports_the_same_code_first)
