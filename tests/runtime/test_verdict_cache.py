"""The verdict cache (kvlint.runtime.registry: shape-only contracts run once per call signature)
never changes a verdict: with and without it, check_call() and the guard report the same
findings; a call with the signature of a cached one but other values (lengths, block ids) or
another shape still gets its own verdict; the shape-only contracts read no values."""
import re
import warnings

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from test_conformance import ACCEPTED, REJECTED, gqa_tnd_paged, mla_tnd

import kvlint
from kvlint.runtime import call as call_module
from kvlint.runtime import check_call, registry
from kvlint.runtime.registry import signature

H = torch.float16
FIA = "npu_fused_infer_attention_score"
POSITIONAL = ("query", "key", "value", "head_num", "input_layout")
CASES = {**ACCEPTED, **{name: case for name, (case, _, _) in REJECTED.items()}}


def bound(case):
    op_name, args, kwargs = case
    return op_name, dict(zip(POSITIONAL, args), **kwargs)


def verdict(findings):
    return [(f.code, f.argument, f.expected, f.given, f.consequence, f.severity, f.site) for f in findings]


def guarded(case, mode="collect"):
    op_name, args, kwargs = case
    with kvlint.patch(mode=mode) as handle:
        try:
            getattr(torch.ops.npu, op_name)(*args, **kwargs)
        except Exception:  # noqa: BLE001 - meta tensors: the stand-in may not run them
            pass
    return handle.findings


@pytest.mark.parametrize("name", sorted(CASES))
def test_check_call_same_verdict_with_and_without_the_cache(name):
    op_name, args = bound(CASES[name])
    registry.clear_verdicts()
    # one line, so one call site: without the cache, filling it, replaying it
    plain, first, hit = (verdict(check_call(op_name, args, cache=cache)) for cache in (False, True, True))
    assert first == hit == plain


@pytest.mark.parametrize("name", sorted(CASES))
def test_guard_agrees_with_check_call(name):
    op_name, args = bound(CASES[name])
    expected = [(f.code, f.argument, f.given) for f in check_call(op_name, args, cache=False)]
    for _ in range(2):  # the second call replays the cached shape verdict
        findings = guarded(CASES[name])
        assert [(f.code, f.argument, f.given) for f in findings if f.code != "KV401"] == expected


def test_a_replayed_finding_names_its_own_call_site():
    q, k, v = torch.randn(2, 3, 64).to(H), torch.randn(2, 5, 32).to(H), torch.randn(2, 5, 32).to(H)
    fn = torch.ops.npu.npu_fused_infer_attention_score
    with kvlint.patch(mode="collect") as handle:
        for line in range(2):  # the emulated operator then rejects the call, as the NPU would
            with pytest.raises(RuntimeError):
                if line == 0:
                    fn(q, k, v, num_heads=4, num_key_value_heads=3, scale=0.25, input_layout="BSH")
                else:
                    fn(q, k, v, num_heads=4, num_key_value_heads=3, scale=0.25, input_layout="BSH")
    first, second = handle.findings
    assert (first.code, first.given) == (second.code, second.given) == ("KV112", "3")
    line_one, line_two = (int(f.site.rsplit(":", 1)[1]) for f in (first, second))
    assert line_two == line_one + 2


def test_replayed_warnings_follow_the_once_per_site_rules():
    q, k, v = torch.randn(2, 3, 64).to(H), torch.randn(2, 5, 32).to(H), torch.randn(2, 5, 32).to(H)
    fn = torch.ops.npu.npu_fused_infer_attention_score

    def run():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("default")
            for _ in range(3):  # one site, three calls: one warning
                fn(q, k, v, num_heads=4, num_key_value_heads=2, scale=1.0, input_layout="BSH")
            fn(q, k, v, num_heads=4, num_key_value_heads=2, scale=1.0, input_layout="BSH")  # another site
        return [(str(w.message).split(" (")[0], w.lineno) for w in caught if issubclass(w.category, kvlint.ContractWarning)]
    with kvlint.patch(mode="raise"):
        cached = run()
    with kvlint.patch(mode="raise"):
        plan = registry.plan_named(FIA)
        plan.verdicts.clear()
        saved, registry.VERDICTS_PER_OPERATOR = registry.VERDICTS_PER_OPERATOR, 0  # every call misses
        try:
            uncached = run()
        finally:
            registry.VERDICTS_PER_OPERATOR = saved
    assert len(cached) == 2 and cached[0][1] != cached[1][1]
    assert [c[0] for c in cached] == [u[0] for u in uncached]


# ------------------------------------------------------------------ values are never cached
def _paged_call(lens, ids=None, b=2, width=2):
    q, cache = torch.randn(b, 1, 64).to(H), torch.randn(b * width, 128, 32).to(H)
    tab = torch.tensor(ids, dtype=torch.int32) if ids is not None else torch.arange(b * width, dtype=torch.int32
                                                                                     ).reshape(b, width)
    return dict(query=q, key=cache, value=cache, num_heads=4, num_key_value_heads=2, scale=0.25, input_layout="BSH",
                block_table=tab, block_size=128, actual_seq_lengths_kv=torch.tensor(lens))


@pytest.mark.parametrize("cache", [True, False])
def test_same_signature_other_lengths_and_ids_gets_its_own_verdict(cache):
    codes = lambda args: [f.code for f in check_call(FIA, args, cache=cache)]  # noqa: E731
    assert codes(_paged_call([3, 130])) == []
    assert codes(_paged_call([3, 300])) == ["KV314"]                       # past the 2 blocks of the request
    assert codes(_paged_call([3, 130], ids=[[0, 1], [2, 99]])) == ["KV313"]  # a used id outside the cache
    assert codes(_paged_call([3, 130])) == []
    args = _paged_call([3, 130])
    assert signature((), args) == signature((), _paged_call([3, 300]))      # one signature for all of them


def test_same_signature_other_list_values_tnd():
    def lens(q_lens, kv_lens=None):
        return bound(gqa_tnd_paged(actual_seq_lengths=q_lens, lens=kv_lens))[1]
    good, unsorted = lens([1, 2, 3, 4]), lens([1, 3, 2, 4])
    assert signature((), good) == signature((), unsorted)
    assert check_call(FIA, good) == []
    assert [f.code for f in check_call(FIA, unsorted)] == ["KV315"]
    assert [f.code for f in check_call(FIA, lens([1, 2, 3, 4], [300, 300, 300, 10 ** 6]))] == ["KV314"]
    assert check_call(FIA, good) == []


def test_same_signature_more_mla_query_tokens_than_allowed():
    def tnd(ends):
        op_name, args = bound(mla_tnd(per_request=(6, 6, 6)))  # 18 query tokens
        args["actual_seq_lengths"] = ends
        return args
    assert signature((), tnd([6, 12, 18])) == signature((), tnd([1, 1, 18]))
    errors = lambda args: [f.code for f in check_call(FIA, args) if f.severity == "error"]  # noqa: E731
    assert errors(tnd([6, 12, 18])) == []
    assert errors(tnd([1, 1, 18])) == ["KV315"]  # 17 tokens in the last request: more than 16
    assert errors(tnd([6, 12, 18])) == []


def test_other_shape_other_verdict():
    ok = _paged_call([3, 130])
    assert check_call(FIA, ok) == []
    wrong_heads = dict(ok, key=torch.randn(4, 128, 48).to(H), value=torch.randn(4, 128, 48).to(H))
    assert [f.code for f in check_call(FIA, wrong_heads)] == ["KV112"]
    strided = dict(ok, query=torch.randn(2, 1, 128).to(H)[..., ::2])
    assert signature((), strided) != signature((), ok)
    assert [f.code for f in check_call(FIA, strided)] == ["KV114"]
    assert check_call(FIA, ok) == []


def test_scalars_are_keyed_by_type_and_value():
    assert signature((), {"sparse_mode": 1}) != signature((), {"sparse_mode": True})
    assert signature((), {"scale": 1.0}) != signature((), {"scale": 1})
    assert signature((), {"num_heads": 4}) != signature((4,), {})             # positional vs keyword
    assert signature((), {"x": [torch.ones(1)]}) is None                        # a tensor list: not cached


def test_a_crash_is_not_cached(monkeypatch):
    """A shape contract that crashes is reported per call site, cache or not."""
    from kvlint.runtime.families.fa import contracts as fa_contracts

    q, k, v = torch.randn(2, 3, 64).to(H), torch.randn(2, 5, 32).to(H), torch.randn(2, 5, 32).to(H)
    fn = torch.ops.npu.npu_fused_infer_attention_score
    with kvlint.patch():
        monkeypatch.setattr(fa_contracts, "QUERY_DTYPES", None)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fn(q, k, v, num_heads=4, num_key_value_heads=2, scale=0.25, input_layout="BSH")
            fn(q, k, v, num_heads=4, num_key_value_heads=2, scale=0.25, input_layout="BSH")
    crashes = [w for w in caught if "could not check" in str(w.message)]
    assert len(crashes) == 2  # two call sites, one warning each
    assert not registry.plan_named(FIA).verdicts


# ------------------------------------------------------------------ the shape contracts read no values
def test_shape_contracts_never_read_values(monkeypatch):
    def no_values(*args, **kwargs):
        raise AssertionError("a shape-only contract read values")
    for case in CASES.values():
        op_name, args = bound(case)
        plan = registry.plan_named(op_name)
        call = _call(op_name, args)
        monkeypatch.setattr(call_module.Call, "int_list", no_values)
        monkeypatch.setattr(call_module.Call, "readable", no_values)
        for fn in plan.pure:
            fn(call)  # no try: an AssertionError fails the test
        monkeypatch.undo()


def _call(op_name, args):
    op = registry._catalog_operator(op_name, None)
    full = {p.name: p.default for p in op.params if not p.required}
    full.update(args)
    return call_module.Call(op, registry.base_name(op.name), full, dict(args), (), 0, False)


# ------------------------------------------------------------------ property: random calls, cache or not
def _mostly(valid, *others):
    """Mostly the valid choice, sometimes a broken one."""
    return st.sampled_from([valid] * 4 + list(others))


@st.composite
def one_signature(draw):
    """Paged FA calls sharing one signature (shapes, dtypes, scalars) with values (KV lengths,
    block ids, query lengths) drawn per call: cache hits with other values."""
    b, width = draw(st.sampled_from([1, 2, 3])), draw(st.sampled_from([1, 2]))
    n, kv = draw(_mostly((4, 2), (4, 4), (8, 2), (4, 3)))
    d = draw(st.sampled_from([16, 32]))
    layout = draw(st.sampled_from(["BSH", "BSND", "BNSD", "TND"]))
    bs = draw(_mostly(128, 16))
    nb = draw(_mostly(b * width, b * width + 1))
    cache_h = draw(_mostly(kv * d, (kv + 1) * d))
    q = {"BSH": (b, 1, n * d), "BSND": (b, 1, n, d), "BNSD": (b, n, 1, d), "TND": (b, n, d)}[layout]
    base = dict(query=torch.zeros(q, dtype=H), key=torch.zeros(nb, bs, cache_h, dtype=H),
                value=torch.zeros(nb, bs, cache_h, dtype=H), num_heads=n, num_key_value_heads=kv,
                scale=draw(_mostly(0.25, 1.0)), input_layout=layout, block_size=bs)
    if draw(st.booleans()):
        base["sparse_mode"] = draw(st.sampled_from([0, 3]))
        base["atten_mask"] = torch.zeros(draw(_mostly((2048, 2048), (b, 1, 1, width * bs))), dtype=torch.bool)
    n_lens = draw(_mostly(b, 1, b + 1))
    calls = []
    for _ in range(draw(st.integers(1, 4))):
        args = dict(base)
        args["actual_seq_lengths_kv"] = draw(st.lists(st.integers(-1, width * bs + 2), min_size=n_lens,
                                                      max_size=n_lens))
        ids = draw(st.lists(_mostly(0, -1, nb), min_size=b * width, max_size=b * width))
        args["block_table"] = torch.tensor([i or k % nb for k, i in enumerate(ids)], dtype=torch.int32).reshape(
            b, width)
        if layout == "TND":
            steps = draw(st.lists(_mostly(1, 0, 2), min_size=b, max_size=b))
            args["actual_seq_lengths"] = [sum(steps[:k + 1]) for k in range(b)]
        calls.append(args)
    return calls


@settings(max_examples=200, deadline=None)
@given(st.lists(one_signature(), min_size=1, max_size=3))
def test_property_cache_never_changes_a_verdict(groups):
    registry.clear_verdicts()
    calls = [args for group in groups for args in group]
    for args in calls + calls[::-1]:  # each signature seen again, after others
        cached, plain = (verdict(check_call(FIA, args, cache=cache)) for cache in (True, False))
        assert cached == plain


# ------------------------------------------------------------------ the guard's key functions
_PLAN = registry.Plan(())  # the key functions' patterns are per plan (per operator)


def _key(args, kwargs):
    """The guard's verdict key of a call."""
    return _PLAN.key(args, kwargs)


def _sorted_signature(args, kwargs):
    return signature(args, dict(sorted(kwargs.items())))


def _changed_calls(q, cache, rest):
    """Calls that differ from `(q, cache, cache), rest` in one item of its signature."""
    return {
        "a shape": ((q[:1], cache, cache), rest),
        "a dtype": ((q.float(), cache, cache), rest),
        "contiguity": ((torch.randn(2, 1, 128).to(H)[..., ::2], cache, cache), rest),
        "an int": ((q, cache, cache), dict(rest, num_key_value_heads=3)),
        "int -> bool": ((q, cache, cache), dict(rest, num_key_value_heads=True)),
        "float -> int": ((q, cache, cache), dict(rest, scale=1)),
        "a float": ((q, cache, cache), dict(rest, scale=0.5)),
        "a string": ((q, cache, cache), dict(rest, input_layout="BSND")),
        "tensor -> None": ((q, cache, cache), dict(rest, block_table=None)),
        "tensor -> list": ((q, cache, cache), dict(rest, actual_seq_lengths_kv=[3, 130])),
        "one keyword more": ((q, cache, cache), dict(rest, sparse_mode=0)),
        "one keyword less": ((q, cache, cache), {k: v for k, v in rest.items() if k != "scale"}),
        "positional -> keyword": ((q, cache), dict(rest, value=cache)),
    }


def test_key_function_keys_what_the_signature_keys():
    ok = _paged_call([3, 130])
    q, cache = ok["query"], ok["key"]
    rest = {k: v for k, v in ok.items() if k not in ("query", "key", "value")}
    base = _key((q, cache, cache), rest)
    assert base is not None and base == _key((q, cache, cache), dict(rest))
    changed = _changed_calls(q, cache, rest)
    for what, (args, kwargs) in changed.items():
        assert _key(args, kwargs) != base, what
        assert _sorted_signature(args, kwargs) != _sorted_signature((q, cache, cache), rest), what
    # keyword order is not a verdict's input (contracts read arguments by name): the last
    # pattern's function answers the same call with its keywords in another order
    _key((q, cache, cache), rest)
    assert _key((q, cache, cache), dict(reversed(list(rest.items())))) == base


def test_key_function_lists_by_length_and_only_of_ints():
    plan = registry.Plan(())
    key = lambda lens: plan.key((), {"actual_seq_lengths": lens})  # noqa: E731
    assert key([1, 2]) == key([5, 9]) != key([1, 2, 3])
    assert key([1, 2.0]) is None and key([torch.ones(1)]) is None  # not cached, like signature()
    assert key((1, 2)) != key([1, 2])
    assert key([1, 2]) == key([7, 8])  # the pattern still answers after the uncached calls
    assert plan.key((), {"x": torch.float16}) is None  # a value no key function reads: signature() says None


@settings(max_examples=100, deadline=None)
@given(st.lists(one_signature(), min_size=2, max_size=4))
def test_property_equal_keys_mean_equal_signatures(groups):
    plan = registry.Plan(())
    calls = [args for group in groups for args in group]
    keys = [plan.key((), args) for args in calls]
    for i, a in enumerate(calls):
        for j, b in enumerate(calls):
            if keys[i] == keys[j]:
                assert _sorted_signature((), a) == _sorted_signature((), b)
            else:
                assert _sorted_signature((), a) != _sorted_signature((), b)


def test_guard_hit_with_a_verdict_changing_value_gets_its_own_verdict():
    """On the guard's path (key functions): the layers' calls hit, and a call of the same
    pattern with one value that changes the verdict gets that verdict, then the good one again."""
    ok = _paged_call([3, 130])
    q, cache = ok["query"], ok["key"]
    rest = {k: v for k, v in ok.items() if k not in ("query", "key", "value")}
    fn = torch.ops.npu.npu_fused_infer_attention_score
    variants = [
        ({}, []),
        ({"num_key_value_heads": 3}, ["KV112"]),
        ({"scale": 1.0}, ["KV103"]),  # KV103: a scale of 1.0
        ({"block_size": 16}, ["KV312"]),
        ({"input_layout": "BNSD"}, ["KV110"]),
        ({"query": torch.randn(2, 1, 128).to(H)[..., ::2]}, ["KV114"]),
        ({"query": q.float()}, ["KV115"]),
        ({"block_table": ok["block_table"].long()}, ["KV301"]),
        ({}, []),
    ]
    registry.clear_verdicts()
    with kvlint.patch(mode="collect") as handle:
        for change, expected in variants:
            args = dict(rest, **{k: v for k, v in change.items() if k != "query"})
            before = len(handle.findings)
            for _ in range(2):  # a miss, then a hit
                try:
                    fn(change.get("query", q), cache, cache, **args)
                except Exception:  # noqa: BLE001 - the emulated operator rejects what the NPU rejects
                    pass
            codes = [f.code for f in handle.findings[before:] if f.code != "KV401"]
            assert codes == expected * 2, (change, codes)
            plain = [f.code for f in check_call(FIA, dict(args, query=change.get("query", q), key=cache,
                                                           value=cache), cache=False)]
            assert plain == expected


def test_binder_binds_like_the_schema():
    from kvlint.runtime.guard import _binder

    bind = _binder(("query", "key", "value"), {"scale": 1.0, "num_heads": 1})
    assert bind((1, 2, 3), {"scale": 0.5}) == {"scale": 0.5, "num_heads": 1, "query": 1, "key": 2, "value": 3}
    assert bind((1,), {"key": 2}) == {"scale": 1.0, "num_heads": 1, "query": 1, "key": 2}
    assert bind((), {}) == {"scale": 1.0, "num_heads": 1}
    assert bind((1, 2, 3, 4), {}) == {"scale": 1.0, "num_heads": 1, "query": 1, "key": 2, "value": 3}
    assert _binder((), {"x": None})((), {"y": 2}) == {"x": None, "y": 2}


# ------------------------------------------------------------------ the guard's entry functions
def _spec(op_name=FIA):
    from kvlint.runtime.guard import _Spec

    return _Spec(registry._catalog_operator(op_name, None))


def _entry_key(spec, args, kwargs):
    """The verdict key the guard computes for a call: its pattern's entry function's."""
    found = spec.entry(args, kwargs, False) or spec.enter(args, kwargs, False)
    return found[1]


def test_entry_builds_the_call_the_constructor_builds():
    from kvlint.runtime.call import Call
    from kvlint.runtime.guard import _entry_function

    ok = _paged_call([3, 130])
    q, cache = ok["query"], ok["key"]
    rest = {k: v for k, v in ok.items() if k not in ("query", "key", "value")}
    spec = _spec()
    for args, kwargs in [((q, cache, cache), rest), ((q,), dict(rest, key=cache, value=cache.clone())),
                         ((), dict(ok)), ((q, cache, cache), dict(rest, value=q)),  # given twice: the keyword's
                         ((q, cache, cache), dict(rest, **{"not-a-name": 1, "lambda": 2}))]:
        entry = _entry_function(spec, registry.pattern_of(args, kwargs))
        for full in (False, True):
            call, key = entry(args, kwargs, full)
            plain = Call(spec.op, spec.name, spec.bind(args, kwargs), kwargs, spec.positional, len(args), full)
            for slot in Call.__slots__:
                assert getattr(call, slot) == getattr(plain, slot), slot
            assert key[1:] == registry.key_function(registry.pattern_of(args, kwargs))(args, kwargs)[1:]
        assert entry(args, dict(kwargs, extra=1), False) is None  # another pattern: not this entry's call


def test_entry_keys_what_the_signature_keys():
    """A value that changes the verdict changes the guard's key (or its pattern)."""
    ok = _paged_call([3, 130])
    q, cache = ok["query"], ok["key"]
    rest = {k: v for k, v in ok.items() if k not in ("query", "key", "value")}
    spec = _spec()
    base = _entry_key(spec, (q, cache, cache), rest)
    assert base is not None and _entry_key(spec, (q, cache, cache), dict(rest)) == base
    copy = cache.clone()
    assert _entry_key(spec, (q.clone(), copy, copy), dict(rest, block_table=ok["block_table"].clone(),
                                                          actual_seq_lengths_kv=torch.tensor([5, 9]))) \
        == base  # other tensors and values, the same shapes: one verdict
    other_cache = torch.randn(4, 128, 32).to(H)
    changed = dict(_changed_calls(q, cache, rest), **{
        "the table's dtype": ((q, cache, cache), dict(rest, block_table=ok["block_table"].long())),
        "the table's shape": ((q, cache, cache), dict(rest, block_table=ok["block_table"][:1])),
        "the value, not an alias, of another shape": ((q, cache, torch.randn(4, 128, 48).to(H)), rest),
        "the value, not an alias, of another dtype": ((q, cache, cache.float()), rest),
    })
    for what, (args, kwargs) in changed.items():
        assert _entry_key(spec, args, kwargs) != base, what
        assert _sorted_signature(args, kwargs) != _sorted_signature((q, cache, cache), rest), what
    # the key passed as the value (MLA's calls) is read once: another pattern than two tensors
    # of the same metadata, with the same signature, each its own key
    two = _entry_key(spec, (q, cache, other_cache), rest)
    assert two != base and _sorted_signature((q, cache, other_cache), rest) == _sorted_signature((q, cache, cache),
                                                                                                   rest)
    # the last pattern's entry takes any call it can key: an aliased call after the unaliased
    # pattern gets that pattern's (full) key, a key of its own, hence a verdict of its own
    assert _entry_key(spec, (q, other_cache, other_cache), rest) == two
    assert _entry_key(_spec(), (q, other_cache, other_cache), rest)[1:] == base[1:]  # a fresh guard: aliased


def test_a_tensor_subclass_takes_the_generic_path():
    """Parameters and traced tensors (FakeTensor, FunctionalTensor) never take an entry function."""
    ok = _paged_call([3, 130])
    q, cache = ok["query"], ok["key"]
    rest = {k: v for k, v in ok.items() if k not in ("query", "key", "value")}
    spec = _spec()
    spec.enter((torch.nn.Parameter(q, requires_grad=False), cache, cache), rest, False)
    assert list(spec.entries.values()) == [None]


def _guard_findings(calls):
    """Each call through the guard (collect mode): its findings but KV401's."""
    fn = torch.ops.npu.npu_fused_infer_attention_score
    results = []
    with kvlint.patch(mode="collect") as handle:
        for args in calls:
            before = len(handle.findings)
            positional = (args["query"], args["key"], args["value"])
            try:
                fn(*positional, **{k: v for k, v in args.items() if k not in ("query", "key", "value")})
            except Exception:  # noqa: BLE001 - the emulated operator rejects what the NPU rejects
                pass
            results.append([(f.code, f.argument, f.given) for f in handle.findings[before:] if f.code != "KV401"])
    return results


def _guard_mismatches(calls):
    registry.clear_verdicts()
    plain = [[(f.code, f.argument, f.given) for f in check_call(FIA, args, cache=False)] for args in calls]
    return [(i, got, want) for i, (got, want) in enumerate(zip(_guard_findings(calls), plain)) if got != want]


def _aliased(calls, draw):
    """Some calls with the key cache passed as the value too (one object), others with a copy."""
    for args in calls:
        if draw(st.booleans()) and args["key"].shape == args["value"].shape:
            args["value"] = args["key"]
    return calls


@settings(max_examples=60, deadline=None)
@given(st.lists(one_signature(), min_size=1, max_size=3), st.data())
def test_property_guard_hits_give_the_plain_verdict(groups, data):
    """Calls sharing patterns through the guard (its entry functions, hits, skipped contracts and
    detached views) get exactly check_call(cache=False)'s findings."""
    calls = _aliased([args for group in groups for args in group], data.draw)
    assert _guard_mismatches(calls + calls[::-1]) == []


def _loose_cases():
    """Per item a key could leave out: calls of one pattern that differ only in that item, the
    later ones with another verdict, and the calls that would replay a wrong verdict without it."""
    ok = _paged_call([3, 130])
    wide = dict(ok, block_table=ok["block_table"].long())                               # KV301
    wider = torch.randn(4, 128, 48).to(H)
    heads = dict(ok, key=wider, value=wider)                                            # KV112
    strided = dict(ok, query=torch.randn(2, 1, 128).to(H)[..., ::2])                    # KV114
    return {
        "dtypes": (lambda key: key.replace(".dtype", ".dim()"), [ok, ok, wide, wide, ok], [2, 3]),
        "shapes": (lambda key: key.replace(".shape", ".dim()"), [ok, heads, heads, ok], [1, 2]),
        "contiguity": (lambda key: re.sub(r"\((\w+)\.is_contiguous\(\) or \w+\.stride\(\)\)", "True", key),
                       [ok, strided, ok], [1]),
    }


@pytest.mark.parametrize("item", sorted(_loose_cases()))
def test_guard_mismatches_would_catch_a_key_too_loose(item, monkeypatch):
    """The comparison above is sensitive: with a key that leaves out dtypes, shapes or contiguity,
    a call replays the verdict of one that differs only there, and the mismatch shows."""
    loosen, calls, wrong = _loose_cases()[item]
    assert _guard_mismatches(calls) == []
    real = registry.key_source

    def loose(pattern, env):
        lines, key = real(pattern, env)
        return lines, loosen(key)
    from kvlint.runtime import guard

    monkeypatch.setattr(guard, "key_source", loose)
    assert [i for i, _, _ in _guard_mismatches(calls)] == wrong


# ------------------------------------------------------------------ what a hit skips
def test_a_contract_without_work_returns_at_once(monkeypatch):
    """For every conformance case, the per-call contracts that say (`works`) they have nothing to
    check in calls with its verdict add no finding and read no value on the miss call itself."""
    def no_values(*args, **kwargs):
        raise AssertionError("a contract without work read values")
    idle_seen = set()
    for name, case in CASES.items():
        op_name, args = bound(case)
        plan = registry.plan_named(op_name)
        call = _call(op_name, args)
        for fn in plan.pure:
            try:
                fn(call)
            except Exception:  # noqa: BLE001 - a crash is not cached; nothing to compare
                break
        else:
            idle = plan.idle(call)
            idle_seen |= {fn.__name__ for fn in idle}
            before = len(call.findings)
            monkeypatch.setattr(call_module.Call, "int_list", no_values)
            monkeypatch.setattr(call_module.Call, "readable", no_values)
            for fn in idle:
                fn(call)
            monkeypatch.undo()
            assert len(call.findings) == before, name
    assert {"lengths", "fa_paged_values", "mla_query_tokens"} <= idle_seen


def test_hits_with_a_detached_view_still_read_the_values_and_leave_the_verdict_alone():
    """A paged decode hit (its per-call contracts handed the verdict's detached view) reads the
    call's own table and lengths; the cached view keeps no tensor and its numbers."""
    fn = torch.ops.npu.npu_fused_infer_attention_score
    ok = _paged_call([3, 130])
    q, cache = ok["query"], ok["key"]
    rest = {k: v for k, v in ok.items() if k not in ("query", "key", "value")}
    registry.clear_verdicts()
    with kvlint.patch(mode="collect") as handle:
        def codes(**change):
            before = len(handle.findings)
            try:
                fn(q, cache, cache, **dict(rest, **change))
            except Exception:  # noqa: BLE001
                pass
            return [f.code for f in handle.findings[before:] if f.code != "KV401"]
        assert codes() == codes() == []
        template = registry.plan_named(FIA).verdicts.last[1][0]
        numbers = template.numbers
        assert codes(actual_seq_lengths_kv=torch.tensor([3, 300])) == ["KV314"]
        assert codes(block_table=torch.tensor([[0, 1], [2, 99]], dtype=torch.int32)) == ["KV313"]
        assert codes() == []
    assert registry.plan_named(FIA).verdicts.last[1][0] is template and template.numbers is numbers
    assert all(getattr(template, name) is None for name in ("q", "k", "v", "mask", "block_table", "query_rope",
                                                           "key_rope"))
