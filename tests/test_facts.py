"""The operator facts (rules/facts/*.toml, kvlint/facts.py): loadable without torch, frozen, and
consistent with the operator schemas in rules/operators.json."""
from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from kvlint.catalog import load_catalog
from kvlint.facts import build, load_facts, read_tables

FACTS = load_facts()
CATALOG = load_catalog()


def _schema_keywords(name: str) -> frozenset:
    names: set = set()
    for op in CATALOG.operators:
        if op.name == name:
            names |= op.keyword_names
    return frozenset(names)


def test_importable_without_torch():
    code = ("import sys; sys.modules['torch'] = None\n"
            "from kvlint.facts import load_facts\n"
            "f = load_facts(); assert f.family('fa')\n"
            "assert 'torch' not in [m for m in sys.modules if sys.modules[m] is not None]")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_facts_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        FACTS.versions.v1 = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        FACTS.operator(FACTS.versions.v1).roles["scale"] = "x"  # type: ignore[index]
    with pytest.raises(TypeError):
        FACTS.table("writers")["x"] = {}  # type: ignore[index]


def test_every_family_member_is_a_catalog_operator():
    known = CATALOG.operator_names()
    for purpose, members in FACTS.families.items():
        assert members, purpose
        missing = [m for m in members if m not in known]
        assert not missing, f"family {purpose!r} names unknown operators {missing}"


@pytest.mark.parametrize("name", sorted(FACTS.operators))
def test_every_role_keyword_is_in_the_operators_schema(name):
    keywords = _schema_keywords(name)
    assert keywords, f"{name} is not in rules/operators.json"
    wrong = {role: kw for role, kw in FACTS.operator(name).roles.items() if kw not in keywords}
    assert not wrong, f"{name}: roles name keywords its schema lacks: {wrong}"


def test_sparse_modes_exactly_for_operators_with_a_sparse_mode_keyword():
    for name, op in FACTS.operators.items():
        assert (op.sparse_modes is not None) == (op.keyword("sparse_mode") is not None), name
    for name in FACTS.family("sparse_mode_readers"):
        assert FACTS.operator(name).sparse_modes, name


def test_renames_map_v1_keywords_to_v2_keywords():
    v1, v2 = _schema_keywords(FACTS.versions.v1), _schema_keywords(FACTS.versions.v2)
    for old, new in FACTS.versions.v1_to_v2.items():
        assert old in v1 and old not in v2, old
        assert new in v2 and new not in v1, new


def test_keyword_hints_name_a_keyword_the_operator_lacks_and_one_it_has():
    for name, hints in FACTS.keyword_hints.items():
        keywords = _schema_keywords(name)
        for wrong, hint in hints.items():
            assert wrong not in keywords and hint.use in keywords, (name, wrong)


def test_namespaces_and_workspace_naming():
    ns = FACTS.namespaces
    assert ns.workspace_base("_npu_fused_infer_attention_score_get_max_workspace") == \
        "npu_fused_infer_attention_score"
    assert ns.base_name("npu_fused_infer_attention_score") == "npu_fused_infer_attention_score"
    assert ns.workspace_base("_get_max_workspace") is None
    assert set(ns.prefixes.values()) <= {op.namespace for op in CATALOG.operators}


def test_block_size_rules():
    rules = FACTS.fa.block_size
    assert rules.allowed(128, prefill=True) and not rules.allowed(64, prefill=True)
    assert rules.allowed(64, prefill=False) and not rules.allowed(48, prefill=False, dtype="int8")
    assert rules.allowed(16, prefill=True, mla=True) and not rules.allowed(64, prefill=False, mla=True)


def test_mask_forms():
    mask = FACTS.fa.mask
    assert mask.is_compressed_shape((2048, 2048)) and mask.is_compressed_shape([1, 1, 2048, 2048])
    assert not mask.is_compressed_shape((4096, 4096)) and not mask.is_compressed_shape((2, 2048, 2048))


def test_a_table_defined_twice_is_an_error(tmp_path):
    (tmp_path / "a.toml").write_text("[x]\nv = 1\n")
    (tmp_path / "b.toml").write_text("[x]\nv = 2\n")
    with pytest.raises(ValueError, match=r"\[x\]"):
        read_tables(tmp_path)


def test_a_new_table_needs_no_code(tmp_path):
    from kvlint.facts import facts_dir

    tables = read_tables(facts_dir())
    tables["new_family_facts"] = {"limit": 3}
    assert build(tables).table("new_family_facts")["limit"] == 3
