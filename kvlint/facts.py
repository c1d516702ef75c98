"""Operator facts, loaded from `rules/facts/*.toml`: the one place the static rules, the runtime
contracts and the docs learn what an operator accepts.

Everything here is typed and frozen, and importable without torch. The TOML files are merged
by top-level table (a table defined in two files is an error), so a new family of facts is a
new file or a new table; `tables` keeps every table as read-only data for contracts whose
facts have no typed view yet.

Typed views:
- `operator(name)`: role -> keyword per operator (`keyword("scale")`), its sparse modes
- `family(purpose)`: which operators a rule or contract talks about
- `versions`: FA v1 <-> v2 keyword renames; `keyword_hints`: habits with the keyword meant
- `fa`: layouts, dtypes, sparse-mode meanings, mask forms, block-size rules (incl. MLA)
- `namespaces`: qualified prefixes, operator packages, `_X_get_max_workspace` naming
- `epilog`: the kv_compress_epilog bindings and limits
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Any, Dict, Iterable, Mapping, Optional, Tuple

from kvlint import toml_snapshot

Shape = Tuple[int, ...]


def _freeze(value: Any) -> Any:
    if isinstance(value, dict):
        return MappingProxyType({k: _freeze(v) for k, v in value.items()})
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


def _ints(values: Iterable[Any]) -> Tuple[int, ...]:
    return tuple(int(v) for v in values)


@dataclass(frozen=True)
class OperatorFacts:
    """One operator (base name): which keyword plays which role, and its sparse modes."""

    name: str
    roles: Mapping[str, str]
    sparse_modes: Optional[Tuple[int, ...]]  # None: the operator has no sparse_mode
    # the mask dtypes the operator accepts; None: the FA ones ([fa.mask] dtypes)
    mask_dtypes: Optional[Tuple[str, ...]] = None
    # without a mask, sparse_mode and the token window do not take effect: full attention
    # (npu_fusion_attention) instead of an error for the modes that need one (FA, PFA)
    window_needs_mask: bool = False
    # sparse modes accepted only with a TND (varlen) layout, and those TND does not accept
    tnd_only_sparse_modes: Tuple[int, ...] = ()
    not_tnd_sparse_modes: Tuple[int, ...] = ()

    def keyword(self, role: str) -> Optional[str]:
        return self.roles.get(role)


@dataclass(frozen=True)
class Versions:
    """FA v1 <-> v2: the operator names and the keyword renames."""

    v1: str
    v2: str
    v1_to_v2: Mapping[str, str]

    @property
    def v2_to_v1(self) -> Mapping[str, str]:
        return MappingProxyType({v: k for k, v in self.v1_to_v2.items()})

    def other(self, name: str) -> Optional[str]:
        return self.v2 if name == self.v1 else self.v1 if name == self.v2 else None

    def label(self, name: str) -> str:
        """"FA v1" / "FA v2" for the two versions, else the operator name."""
        return "FA v1" if name == self.v1 else "FA v2" if name == self.v2 else name


@dataclass(frozen=True)
class KeywordHint:
    """A keyword written by habit (`scale_value` in FA v1) and the one the operator means."""

    use: str
    fix: bool  # the rename is offered as a safe fix


@dataclass(frozen=True)
class SparseModes:
    """What the sparse_mode values mean (shared by every FA-like operator)."""

    default_mask: int
    all_mask: int
    causal: Tuple[int, ...]
    left_up_causal: int
    right_down_causal: int
    band: Tuple[int, ...]
    reserved: Mapping[int, str]  # named in the docs, not implemented
    named: Mapping[int, str]
    unbounded_tokens: int

    @property
    def causal_or_band(self) -> frozenset:
        return frozenset(self.causal + self.band)


@dataclass(frozen=True)
class MaskForms:
    dtypes: Tuple[str, ...]
    compressed_modes: Tuple[int, ...]  # these modes take the compressed mask
    compressed_size: int
    compressed_shapes: Tuple[Shape, ...]
    tnd_modes_with_mask: Tuple[int, ...]

    def is_compressed_shape(self, shape: Iterable[int]) -> bool:
        return tuple(int(d) for d in shape) in self.compressed_shapes

    def shown_shapes(self, noun: str = "") -> str:
        """`2048x2048 <noun> (or 1x2048x2048, 1x1x2048x2048)`"""
        shown = ["x".join(map(str, s)) for s in self.compressed_shapes]
        head = f"{shown[0]} {noun}".rstrip()
        return f"{head} (or {', '.join(shown[1:])})" if len(shown) > 1 else head


@dataclass(frozen=True)
class BlockSizeRules:
    """block_size with a block_table: prefill (query length > 1), decode (one token), MLA."""

    max: int
    prefill_multiple: int
    decode_alignment: Mapping[str, int]  # by query dtype name
    decode_default_alignment: int
    mla: Tuple[int, ...]

    def allowed(self, size: int, *, prefill: bool, mla: bool = False, dtype: Optional[str] = None) -> bool:
        if mla:
            return size in self.mla
        if prefill:
            return self.prefill_multiple <= size <= self.max and size % self.prefill_multiple == 0
        align = self.decode_alignment.get(dtype or "", self.decode_default_alignment)
        return 0 < size <= self.max and size % align == 0

    def expected(self, *, prefill: bool, mla: bool = False, dtype: Optional[str] = None) -> str:
        if mla:
            return f"one of {list(self.mla)} (MLA, D=512)"
        if prefill:
            step = self.prefill_multiple
            return f"a multiple of {step} in [{step}, {self.max}] (query length > 1)"
        align = self.decode_alignment.get(dtype or "", self.decode_default_alignment)
        return f"a multiple of {align} <= {self.max} (decode)"


@dataclass(frozen=True)
class FaFacts:
    layout_rank: Mapping[str, int]
    head_axis: Mapping[str, int]
    query_dtypes: Tuple[str, ...]
    kv_dtypes: Tuple[str, ...]
    unjudged_dtype_prefixes: Tuple[str, ...]
    max_group: int
    paged_cache_ranks: Tuple[int, ...]
    paged_cache_block_axis: Mapping[int, int]
    mla_rope_dim: int
    mla_query_dims: Tuple[int, ...]
    mla_latent_dim: int
    sparse: SparseModes
    mask: MaskForms
    block_size: BlockSizeRules


@dataclass(frozen=True)
class Namespaces:
    prefixes: Mapping[str, str]  # qualified prefix -> catalog namespace
    packages: Tuple[str, ...]  # Python packages that register the operators
    shown: Mapping[str, str]  # catalog namespace -> how messages name it
    workspace_prefix: str
    workspace_suffix: str

    def is_workspace(self, name: str) -> bool:
        return (name.startswith(self.workspace_prefix) and name.endswith(self.workspace_suffix)
                and len(name) > len(self.workspace_prefix) + len(self.workspace_suffix))

    def workspace_base(self, name: str) -> Optional[str]:
        """`X` for `_X_get_max_workspace`, else None."""
        if not self.is_workspace(name):
            return None
        return name[len(self.workspace_prefix):len(name) - len(self.workspace_suffix)]

    def base_name(self, name: str) -> str:
        """The operator a name denotes: the workspace twin's base, else the name itself."""
        return self.workspace_base(name) or name

    def show(self, namespace: str) -> str:
        return self.shown.get(namespace, namespace)


@dataclass(frozen=True)
class EpilogFacts:
    """kv_compress_epilog: three same-named bindings; limits of the cann_ops_transformer kernel."""

    name: str
    limits_namespace: str
    bindings: Tuple[str, ...]
    same_concept: Tuple[Mapping[str, str], ...]
    string_mode_namespaces: Tuple[str, ...]
    mode_meaning: Mapping[str, str]
    quant_modes: Mapping[str, int]
    fp4_mode: str
    rope_cols: int
    d_multiple: int
    d_min_exclusive: int
    d_max: int
    mode2_groups: Tuple[int, ...]

    def takes_string_mode(self, namespace: str) -> bool:
        return namespace in self.string_mode_namespaces

    def head_dim_ok(self, d: int) -> bool:
        return d % self.d_multiple == 0 and self.d_min_exclusive < d <= self.d_max


@dataclass(frozen=True)
class Facts:
    operators: Mapping[str, OperatorFacts]
    families: Mapping[str, Tuple[str, ...]]
    versions: Versions
    keyword_hints: Mapping[str, Mapping[str, KeywordHint]]
    fa: FaFacts
    namespaces: Namespaces
    epilog: EpilogFacts
    tables: Mapping[str, Any]  # every top-level table, read-only, by name

    def operator(self, name: str) -> OperatorFacts:
        """The facts of operator `name`; an operator without any has no roles."""
        found = self.operators.get(name)
        return found if found is not None else OperatorFacts(name, MappingProxyType({}), None)

    def keyword(self, operator: str, role: str) -> Optional[str]:
        return self.operator(operator).keyword(role)

    def role(self, operator: str, role: str) -> str:
        """The keyword of a role the operator must have (a KeyError names what is missing)."""
        keyword = self.keyword(operator, role)
        if keyword is None:
            raise KeyError(f"rules/facts: {operator} has no role {role!r}")
        return keyword

    def keywords(self, operators: Iterable[str], role: str) -> Mapping[str, str]:
        """operator -> its keyword for `role`, for the operators that have one."""
        out = {}
        for name in operators:
            kw = self.keyword(name, role)
            if kw is not None:
                out[name] = kw
        return MappingProxyType(out)

    def family(self, purpose: str) -> Tuple[str, ...]:
        try:
            return self.families[purpose]
        except KeyError:
            raise KeyError(f"no operator family {purpose!r} in rules/facts (known: "
                           f"{', '.join(sorted(self.families))})") from None

    def table(self, name: str) -> Mapping[str, Any]:
        return self.tables[name]


def facts_dir(root: Optional[Path] = None) -> Path:
    if root is None:
        from kvlint.catalog import data_dir

        root = data_dir()
    return root / "facts"


def read_tables(folder: Path) -> Dict[str, Any]:
    """Every top-level table of `folder/*.toml`, merged; a table in two files is an error."""
    merged: Dict[str, Any] = {}
    origin: Dict[str, str] = {}
    for path, data in toml_snapshot.read_tables(folder, "*.toml"):
        for key, value in data.items():
            if key in merged:
                raise ValueError(f"{path.name}: table [{key}] is also defined in {origin[key]}")
            merged[key] = value
            origin[key] = path.name
    return merged


def _operators(raw: Mapping[str, Any]) -> Dict[str, OperatorFacts]:
    out = {}
    for name, spec in raw.items():
        roles = {k: v for k, v in spec.items() if isinstance(v, str)}
        modes = spec.get("sparse_modes")
        dtypes = spec.get("mask_dtypes")
        out[name] = OperatorFacts(name, MappingProxyType(roles), _ints(modes) if modes is not None else None,
                                  tuple(dtypes) if dtypes is not None else None,
                                  bool(spec.get("window_needs_mask", False)),
                                  _ints(spec.get("tnd_only_sparse_modes", ())),
                                  _ints(spec.get("not_tnd_sparse_modes", ())))
    return out


def build(tables: Mapping[str, Any]) -> Facts:
    fa, ns, ep = tables["fa"], tables["namespaces"], tables["kv_compress_epilog"]
    sparse, mask, bs = fa["sparse"], fa["mask"], fa["block_size"]
    versions = tables["versions"]
    return Facts(
        operators=MappingProxyType(_operators(tables["operators"])),
        families=MappingProxyType({k: tuple(v) for k, v in tables["families"].items()}),
        versions=Versions(versions["v1"], versions["v2"], MappingProxyType(dict(versions["renames"]))),
        keyword_hints=MappingProxyType({
            op: MappingProxyType({kw: KeywordHint(h["use"], bool(h.get("fix", False))) for kw, h in hints.items()})
            for op, hints in tables.get("keyword_hints", {}).items()}),
        fa=FaFacts(
            layout_rank=MappingProxyType(dict(fa["layout_rank"])),
            head_axis=MappingProxyType(dict(fa["head_axis"])),
            query_dtypes=tuple(fa["query_dtypes"]),
            kv_dtypes=tuple(fa["kv_dtypes"]),
            unjudged_dtype_prefixes=tuple(fa["unjudged_dtype_prefixes"]),
            max_group=int(fa["max_group"]),
            paged_cache_ranks=_ints(fa["paged_cache_ranks"]),
            paged_cache_block_axis=MappingProxyType({int(k): int(v) for k, v in fa["paged_cache_block_axis"].items()}),
            mla_rope_dim=int(fa["mla_rope_dim"]),
            mla_query_dims=_ints(fa["mla_query_dims"]),
            mla_latent_dim=int(fa["mla_latent_dim"]),
            sparse=SparseModes(
                default_mask=int(sparse["default_mask"]), all_mask=int(sparse["all_mask"]),
                causal=_ints(sparse["causal"]), left_up_causal=int(sparse["left_up_causal"]),
                right_down_causal=int(sparse["right_down_causal"]), band=_ints(sparse["band"]),
                reserved=MappingProxyType({int(k): v for k, v in sparse["reserved"].items()}),
                named=MappingProxyType({int(k): v for k, v in sparse["named"].items()}),
                unbounded_tokens=int(sparse["unbounded_tokens"])),
            mask=MaskForms(
                dtypes=tuple(mask["dtypes"]), compressed_modes=_ints(mask["compressed_modes"]),
                compressed_size=int(mask["compressed_size"]),
                compressed_shapes=tuple(_ints(s) for s in mask["compressed_shapes"]),
                tnd_modes_with_mask=_ints(mask["tnd_modes_with_mask"])),
            block_size=BlockSizeRules(
                max=int(bs["max"]), prefill_multiple=int(bs["prefill_multiple"]),
                decode_alignment=MappingProxyType({k: int(v) for k, v in bs["decode_alignment"].items()}),
                decode_default_alignment=int(bs["decode_default_alignment"]), mla=_ints(bs["mla"])),
        ),
        namespaces=Namespaces(
            prefixes=MappingProxyType(dict(ns["prefixes"])), packages=tuple(ns["packages"]),
            shown=MappingProxyType(dict(ns.get("shown", {}))),
            workspace_prefix=ns["workspace_prefix"], workspace_suffix=ns["workspace_suffix"]),
        epilog=EpilogFacts(
            name=ep["name"], limits_namespace=ep["limits_namespace"], bindings=tuple(ep["bindings"]),
            same_concept=tuple(MappingProxyType(dict(c)) for c in ep["same_concept"]),
            string_mode_namespaces=tuple(ep["string_mode_namespaces"]),
            mode_meaning=MappingProxyType(dict(ep["mode_meaning"])),
            quant_modes=MappingProxyType(dict(ep["quant_modes"])), fp4_mode=ep["fp4_mode"],
            rope_cols=int(ep["rope_cols"]), d_multiple=int(ep["d_multiple"]),
            d_min_exclusive=int(ep["d_min_exclusive"]), d_max=int(ep["d_max"]),
            mode2_groups=_ints(ep["mode2_groups"])),
        tables=_freeze(dict(tables)),
    )


def load_facts(root: Optional[Path] = None) -> Facts:
    """The facts under `root/facts` (default: the installed rules/ folder), cached."""
    return _load(facts_dir(root))


@lru_cache(maxsize=4)
def _load(folder: Path) -> Facts:
    return build(read_tables(folder))
