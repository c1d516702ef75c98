"""Regenerate rules/operators.json from a torch_npu wheel's schema file.

Usage:
    pip download --no-deps torch-npu==2.14.0 -d /tmp/wheel
    python scripts/gen_operators.py /tmp/wheel/torch_npu-2.14.0-*.whl

The wheel's ``torch_npu/csrc/aten/npu_native_functions_by_codegen.yaml`` holds one
``func:`` schema line per operator. Operators that live outside torch_npu (the
cann_ops_transformer extension, vLLM-Ascend's and cann-recipes-infer's custom bindings)
are not in the wheel; their schemas are written below with the source they come from.
The output is committed; kvlint reads it, never the wheel.
"""
from __future__ import annotations

import json
import re
import sys
import zipfile
from pathlib import Path

SCHEMA_MEMBER = "torch_npu/csrc/aten/npu_native_functions_by_codegen.yaml"
OUTPUT = Path(__file__).resolve().parent.parent / "rules" / "operators.json"

# Operators kvlint knows, by base name; their overloads (.out) and
# _<name>_get_max_workspace twins are picked up with them.
WHEEL_OPERATORS = [
    "npu_fused_infer_attention_score",
    "npu_fused_infer_attention_score_v2",
    "npu_incre_flash_attention",
    "npu_prompt_flash_attention",
    "npu_fusion_attention",
    "npu_fusion_attention_v2",
    "npu_fusion_attention_v3",
    "scatter_update_",
    "npu_scatter_nd_update_",
    "npu_scatter_pa_kv_cache",
    "npu_kv_rmsnorm_rope_cache",
    "npu_kv_rmsnorm_rope_cache_v2",
    "npu_advance_step_flashattn",
]

# ATB operators (`torch.ops.atb`, re-exported as `torch_npu.X` / `torch_npu.atb.X`, see the
# wheel's op_plugin/atb/_atb_ops.py). Their schema strings are read from the wheel: the
# registered schema text in lib/libop_plugin_atb.so when it is there (npu_ring_mla), else the
# C++ declaration in the shipped AtbOpsInterface.h, converted by `cpp_to_schema` (the names and
# types are the wheel's; trailing c10::optional arguments get the usual `=None` default).
ATB_OPERATORS = [
    "npu_ring_mla",
    "_npu_reshape_and_cache",
    "_npu_paged_attention",
]
ATB_SO_MEMBER = "torch_npu/lib/libop_plugin_atb.so"
ATB_HEADER_MEMBER = "torch_npu/include/third_party/op-plugin/op_plugin/include/AtbOpsInterface.h"

# Schemas not in the torch_npu wheel: (namespace, schema, source).
EXTRA_SCHEMAS = [
    ("cann_ops_transformer",
     "scatter_pa_kv_cache_with_k_scale(Tensor key, Tensor value, Tensor(a!) key_cache, "
     "Tensor(b!) value_cache, Tensor slot_mapping, Tensor key_scale, Tensor(c!) key_scale_cache, "
     "*, str cache_layout=\"BNBD\") -> ()",
     "seed 002: cann/ops-transformer scatter_pa_kv_cache_with_k_scale"),
    ("cann_ops_transformer",
     "kv_compress_epilog(Tensor(a!) cache, Tensor x, Tensor slot_mapping, *, "
     "int quant_group_size=64, str quant_mode=\"fp8_e8m0\", bool round_scale=True, "
     "float x_scale=1.0) -> ()",
     "seed 004: cann/ops-transformer aclnnKvCompressEpilog, Python binding"),
    ("_C_ascend",
     "kv_compress_epilog(Tensor(a!) kv_compress_cache, Tensor x, Tensor slot_mapping, "
     "int quant_group_size, int quant_mode, bool round_scale_flag, int layout) -> ()",
     "vllm-ascend csrc/torch_binding.cpp"),
    ("custom",
     "kv_compress_epilog(Tensor(a!) kv_compress_cache, Tensor x, Tensor slot_mapping, *, "
     "int quant_group_size=64, int quant_mode=2, bool round_scale_flag=True, float scale=1.0) -> ()",
     "cann-recipes-infer ops/ascendc/torch_ops_extension ops_def_registration.cpp"),
]


def split_top_level(text: str) -> list[str]:
    parts, depth, current = [], 0, []
    for ch in text:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
    if "".join(current).strip():
        parts.append("".join(current).strip())
    return parts


def parse_default(text: str):
    if text == "None":
        return None
    if text in ("True", "False"):
        return text == "True"
    if text[:1] in "\"'":
        return text[1:-1]
    try:
        return int(text)
    except ValueError:
        return float(text)


def parse_schema(schema: str) -> dict:
    match = re.fullmatch(r"\s*([\w.]+)\((.*)\)\s*->\s*(.+?)\s*", schema)
    if not match:
        raise ValueError(f"unparsable schema: {schema}")
    full_name, arg_text, returns = match.groups()
    name, _, overload = full_name.partition(".")
    params, keyword_only = [], False
    for arg in split_top_level(arg_text):
        if arg == "*":
            keyword_only = True
            continue
        decl, _, default = arg.partition("=")
        type_text, pname = decl.rsplit(" ", 1)
        param = {"name": pname, "type": type_text, "kind": "keyword" if keyword_only else "positional"}
        if default:
            param["default"] = parse_default(default.strip())
        else:
            param["required"] = True
        if "!" in type_text:
            param["mutated"] = True
        params.append(param)
    returns = returns.strip()
    if returns == "()":
        n_returns = 0
    elif returns.startswith("("):
        n_returns = len(split_top_level(returns[1:-1]))
    else:
        n_returns = 1
    return {"name": name, "overload": overload, "schema": schema.strip(),
            "params": params, "returns": n_returns}


def wheel_schemas(wheel: Path) -> dict[str, str]:
    with zipfile.ZipFile(wheel) as zf:
        text = zf.read(SCHEMA_MEMBER).decode()
    found: dict[str, str] = {}
    for line in text.splitlines():
        m = re.match(r"\s*-?\s*func:\s*(.+)$", line)
        if not m:
            continue
        schema = m.group(1)
        full = schema.split("(", 1)[0]
        found.setdefault(full, schema)  # first definition wins (the file repeats a few)
    return found


_CPP_TYPES = [
    (r"const at::Tensor&", "Tensor"),
    (r"at::Tensor&", "Tensor(!)"),
    (r"const c10::optional<at::Tensor>&", "Tensor?"),
    (r"c10::optional<c10::string_view>", "str?"),
    (r"c10::SymIntArrayRef", "SymInt[]"),
    (r"c10::OptionalArrayRef<c10::SymInt>", "SymInt[]?"),
    (r"int64_t", "int"),
    (r"double", "float"),
    (r"bool", "bool"),
]


def cpp_to_schema(name: str, declaration: str) -> str:
    """`void f(const at::Tensor&a, at::Tensor&b, ...)` -> `f(Tensor a, Tensor(a!) b, ...) -> ()`."""
    match = re.search(r"(\S+)\s+" + re.escape(name) + r"\((.*)\);", declaration)
    if not match:
        raise ValueError(f"no C++ declaration of {name}")
    ret, arg_text = match.groups()
    args, alias = [], iter("abcdefgh")
    for arg in split_top_level(arg_text):
        arg = arg.replace("const int64_t", "int64_t").replace("const double", "double")
        for cpp, schema_type in _CPP_TYPES:
            if arg.startswith(cpp):
                pname = arg[len(cpp):].strip()
                if pname.endswith("_opt"):
                    pname = pname[:-4]
                if schema_type == "Tensor(!)":
                    schema_type = f"Tensor({next(alias)}!)"
                default = "=None" if schema_type.endswith("?") else ""
                args.append(f"{schema_type} {pname}{default}")
                break
        else:
            raise ValueError(f"{name}: unknown C++ parameter type in {arg!r}")
    if ret == "void":
        returns = "()"
    elif ret.startswith("std::tuple"):
        returns = "(" + ", ".join("Tensor" for _ in split_top_level(ret[11:-1])) + ")"
    else:
        returns = "Tensor"
    return f"{name}({', '.join(args)}) -> {returns}"


def atb_schemas(wheel: Path) -> list[tuple[str, str]]:
    """(schema, source) for every ATB_OPERATORS entry, from the .so strings or the header."""
    with zipfile.ZipFile(wheel) as zf:
        so_text = zf.read(ATB_SO_MEMBER).decode("latin-1")
        header = zf.read(ATB_HEADER_MEMBER).decode()
    found = []
    for name in ATB_OPERATORS:
        m = re.search(re.escape(name) + r"\((?:Tensor|int|SymInt)[ -~]*?\) -> [ -~]*?(?=\x00)", so_text)
        if m:
            found.append((m.group(0), f"{wheel.name}:{ATB_SO_MEMBER}"))
            continue
        for line in header.splitlines():
            if re.search(r"\s" + re.escape(name) + r"\(", line):
                found.append((cpp_to_schema(name, line), f"{wheel.name}:{ATB_HEADER_MEMBER}"))
                break
        else:
            raise ValueError(f"{name}: no schema in {ATB_SO_MEMBER} nor {ATB_HEADER_MEMBER}")
    return found


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__)
        return 2
    wheel = Path(argv[1])
    schemas = wheel_schemas(wheel)
    operators = []
    for base in WHEEL_OPERATORS:
        for full in (base, f"{base}.out", f"_{base}_get_max_workspace"):
            if full in schemas:
                op = parse_schema(schemas[full])
                op["namespace"] = "npu"
                op["source"] = f"{wheel.name}:{SCHEMA_MEMBER}"
                operators.append(op)
    for schema, source in atb_schemas(wheel):
        op = parse_schema(schema)
        op["namespace"] = "atb"
        op["source"] = source
        operators.append(op)
    for namespace, schema, source in EXTRA_SCHEMAS:
        op = parse_schema(schema)
        op["namespace"] = namespace
        op["source"] = source
        operators.append(op)
    data = {"generated_from": wheel.name, "operators": operators}
    OUTPUT.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {len(operators)} operator schemas to {OUTPUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
