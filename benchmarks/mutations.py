"""Mutation benchmark: inject the bugs kvlint exists for at their construction sites in real
code bases, run kvlint, and report recall per mutation kind and the misses.

    python benchmarks/mutations.py /tmp/eco/vllm-project+vllm-ascend /tmp/eco/hicann+cann-recipes-infer
    python benchmarks/mutations.py BASE... --kvlint /tmp/old-checkout --per-kind 12 --json out.json

Each code base's .py files (and pyproject.toml) are copied once into a temporary folder; the
code bases themselves are never written. One mutation at a time is applied to the copy,
kvlint checks the mutated file and the files of the code base that import its module
(`--no-cache`, one process), and the mutation counts as caught when a finding with one of the
kind's codes appears that the unmutated run of the same files did not have (findings are
compared by file, code and message: a mutation keeps the line count). The copy is restored
after each mutation.

Mutation kinds (each site is found with `ast`, rewritten as text on its own lines):

| kind | site | rewrite | caught by |
| --- | --- | --- | --- |
| block_table_int64 | an assignment to a `*block_table*` name/attribute built with int32 | int32 -> int64 (`.int()` -> `.long()`) | KV301 |
| mask_float | an assignment to a `*mask*` name/attribute built as bool (`torch.bool`, `.bool()`) | bool -> float16 (`.bool()` -> `.half()`) | KV205 |
| mask_dropped | `atten_mask=<x>` in a fused-attention call whose sparse_mode is 2/3/4 | `atten_mask=None` | KV201, KV203 |
| sparse_mode_change | a literal `sparse_mode=3` (keyword or assignment; not at an operator that rejects 2, REJECTS_SPARSE_MODE_2) | 3 -> 2 | KV202 |

A site counts only when its name (mask/block-table kinds) is used as an operator keyword
somewhere in the code base, so sites that never reach an operator are not counted as misses.
`--kvlint PATH` runs another checkout's kvlint (e.g. the code before a change) on the same
mutations. Sites are sampled evenly, at most `--per-kind` per kind and code base.
"""
from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence, Set, Tuple

REPO = Path(__file__).resolve().parent.parent
FA_OPERATORS = ("npu_fused_infer_attention_score", "npu_fused_infer_attention_score_v2",
                "npu_prompt_flash_attention", "npu_incre_flash_attention", "npu_fusion_attention",
                "npu_fusion_attention_v2")
# Operators whose own checks reject sparse_mode 2: a 3 -> 2 there is an error at the first
# call, not the silent bug KV202 exists for, so such a call is no sparse_mode_change site. The
# lightning indexers accept only 0 and 3 (vllm-ascend's csrc/attention: lightning_indexer,
# lightning_indexer_quant, lightning_indexer_vllm and vllm_quant_lightning_indexer
# op_host/*_tiling.cpp, "input attr sparse_mode only supported 0 or 3"; the
# vllm_quant_lightning_indexer_metadata AICPU kernel, "sparse_mode should be 0/3"). Heuristic
# by name (a benchmark's site filter, not a rule): any callee named `*lightning_indexer*`.
REJECTS_SPARSE_MODE_2 = re.compile(r"lightning_indexer")
KINDS = {
    "block_table_int64": ("KV301",),
    "mask_float": ("KV205",),
    "mask_dropped": ("KV201", "KV203"),
    "sparse_mode_change": ("KV202",),
}


@dataclass
class Mutation:
    kind: str
    path: str  # relative to the code base
    line: int  # first line of the rewritten statement
    old: str  # the rewritten lines, before
    new: str  # and after
    caught: Optional[bool] = None
    codes: List[str] = field(default_factory=list)

    def apply(self, text: str) -> str:
        """`text` (the file's) with this mutation's lines rewritten."""
        lines = text.splitlines(keepends=True)
        return "".join(lines[:self.line - 1]) + self.new + "".join(lines[self.line - 1 + len(self.old.splitlines()):])


# -- finding sites -------------------------------------------------------------------------
def _target_names(node: ast.AST) -> List[str]:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    out = []
    for t in targets:
        elts = t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t]
        for e in elts:
            if isinstance(e, ast.Name):
                out.append(e.id)
            elif isinstance(e, ast.Attribute):
                out.append(e.attr)
            elif isinstance(e, ast.Subscript) and isinstance(e.slice, ast.Constant) and isinstance(e.slice.value, str):
                out.append(e.slice.value)
    return out


def _callee(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def _keyword(call: ast.Call, name: str) -> Optional[ast.keyword]:
    return next((k for k in call.keywords if k.arg == name), None)


def _lines(text: str, node: ast.AST) -> Tuple[int, int]:
    return node.lineno, node.end_lineno or node.lineno


def find_sites(base: Path, rel: str, text: str, keyword_names: Dict[str, Set[str]]) -> Iterator[Mutation]:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return
    lines = text.splitlines(keepends=True)

    def rewrite(kind, first, last, pattern, repl, count=0):
        old = "".join(lines[first - 1:last])
        new = re.sub(pattern, repl, old, count=count)
        if new != old:
            yield Mutation(kind, rel, first, old, new)

    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            names = _target_names(node)
            first, last = _lines(text, node)
            segment = "".join(lines[first - 1:last])
            if any("block_table" in n and n in keyword_names["block_table"] for n in names):
                if "torch.int32" in segment:
                    yield from rewrite("block_table_int64", first, last, r"torch\.int32\b", "torch.int64")
                elif re.search(r"\.int\(\)", segment):
                    yield from rewrite("block_table_int64", first, last, r"\.int\(\)", ".long()")
            if any("mask" in n.lower() and n in keyword_names["atten_mask"] for n in names) and not re.search(
                    r"~|logical_not|masked_fill|\bwhere\b", segment):  # a float there raises: not a silent bug
                if "torch.bool" in segment:
                    yield from rewrite("mask_float", first, last, r"torch\.bool\b", "torch.float16")
                elif ".bool()" in segment:
                    yield from rewrite("mask_float", first, last, r"\.bool\(\)", ".half()")
            if "sparse_mode" in names and isinstance(node.value, ast.Constant) and node.value.value == 3:
                yield from rewrite("sparse_mode_change", first, last, r"=(\s*)3\b", r"=\g<1>2", 1)
        if isinstance(node, ast.Call):
            sm = _keyword(node, "sparse_mode")
            if sm is not None and isinstance(sm.value, ast.Constant) and sm.value.value == 3 \
                    and not REJECTS_SPARSE_MODE_2.search(_callee(node)):
                first, last = _lines(text, sm)
                yield from rewrite("sparse_mode_change", first, last, r"sparse_mode(\s*)=(\s*)3\b",
                                   r"sparse_mode\g<1>=\g<2>2", 1)
            mask = _keyword(node, "atten_mask")
            if _callee(node) in FA_OPERATORS and mask is not None and sm is not None and not (
                    isinstance(mask.value, ast.Constant) and mask.value.value is None) and (
                    not isinstance(sm.value, ast.Constant) or sm.value.value in (2, 3, 4)):
                first, last = _lines(text, mask)
                if first == last:
                    line = lines[first - 1]
                    start = len(line.encode()[:mask.value.col_offset].decode("utf-8", "replace"))
                    end = len(line.encode()[:mask.value.end_col_offset].decode("utf-8", "replace"))
                    new = line[:start] + "None" + line[end:]
                    yield Mutation("mask_dropped", rel, first, line, new)


def keyword_uses(texts: Dict[str, str]) -> Dict[str, Set[str]]:
    """Names used in `block_table=...` / `atten_mask=...` keywords anywhere in the code base."""
    uses: Dict[str, Set[str]] = {"block_table": set(), "atten_mask": set()}
    pattern = re.compile(r"\b(block_table|atten_mask)\s*=\s*([\w.\[\]: ]+)")
    for text in texts.values():
        for m in pattern.finditer(text):
            for word in re.findall(r"\w+", m.group(2)):
                uses[m.group(1)].add(word)
    return uses


def sample(items: List[Mutation], n: int) -> List[Mutation]:
    if len(items) <= n:
        return items
    step = len(items) / n
    return [items[int(i * step)] for i in range(n)]


# -- running kvlint ------------------------------------------------------------------------
# kvlint from the given checkout, whatever is installed (an editable install's import hook
# would otherwise win over PYTHONPATH)
RUN_FROM = (
    "import runpy, sys\n"
    "sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in repr(f).lower()]\n"
    "sys.path.insert(0, sys.argv.pop(1))\n"
    "sys.argv[0] = 'kvlint'\n"
    "runpy.run_module('kvlint', run_name='__main__', alter_sys=True)\n"
)


def run_kvlint(kvlint: Path, root: Path, files: Sequence[str]) -> List[Tuple[str, str, str]]:
    env = dict(os.environ, KVLINT_NO_CACHE="1")
    proc = subprocess.run([sys.executable, "-c", RUN_FROM, str(kvlint), "check", "--no-cache", "--exit-zero",
                           "--jobs", "1", "--format", "concise", *files],
                          cwd=root, env=env, capture_output=True, text=True)
    out = []
    for line in proc.stdout.splitlines():
        m = re.match(r"(.+?):\d+:\d+: (KV\d+) (.*)", line)
        if m:
            out.append((m.group(1), m.group(2), re.sub(r"\(line \d+\)", "", m.group(3))))
    return out


def dependents(root: Path, rel: str, texts: Dict[str, str]) -> List[str]:
    """The mutated file and the files that import its module by name."""
    module = Path(rel).with_suffix("").name
    if module == "__init__":
        module = Path(rel).parent.name
    pattern = re.compile(rf"^\s*(?:from\s+[\w.]*\b{re.escape(module)}\b[\w.]*\s+import|import\s+[\w., ]*\b{re.escape(module)}\b"
                         rf"|from\s+[\w.]+\s+import\s+[\w, ()]*\b{re.escape(module)}\b)", re.M)
    files = [rel] + sorted(p for p, t in texts.items() if p != rel and pattern.search(t))
    return files[:40]


def copy_base(base: Path, into: Path) -> Dict[str, str]:
    texts = {}
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for name in filenames:
            if name.endswith(".py") or name == "pyproject.toml":
                src = Path(dirpath) / name
                rel = str(src.relative_to(base))
                dst = into / rel
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, dst)
                if name.endswith(".py"):
                    try:
                        texts[rel] = src.read_text(encoding="utf-8")
                    except (UnicodeDecodeError, OSError):
                        pass
    return texts


def sampled_sites(root: Path, texts: Dict[str, str], per_kind: int) -> List[Mutation]:
    """The sites of the copied code base (`texts`: relative path -> text), at most `per_kind`
    of each kind sampled evenly, kind by kind in KINDS order."""
    uses = keyword_uses(texts)
    found: Dict[str, List[Mutation]] = defaultdict(list)
    for rel in sorted(texts):
        if any(w in texts[rel] for w in ("block_table", "mask", "sparse_mode")):
            for m in find_sites(root, rel, texts[rel], uses):
                found[m.kind].append(m)
    return [m for kind in KINDS for m in sample(found[kind], per_kind)]


def run(bases: Sequence[Path], kvlint: Path, per_kind: int) -> List[Mutation]:
    results: List[Mutation] = []
    for base in bases:
        with tempfile.TemporaryDirectory(prefix="kvlint-mut-") as tmp:
            root = Path(tmp) / base.name
            texts = copy_base(base, root)
            baseline: Dict[Tuple[str, ...], List[Tuple[str, str, str]]] = {}
            for m in sampled_sites(root, texts, per_kind):
                files = tuple(dependents(root, m.path, texts))
                if files not in baseline:
                    baseline[files] = run_kvlint(kvlint, root, files)
                path = root / m.path
                original = texts[m.path]
                path.write_text(m.apply(original), encoding="utf-8")
                try:
                    after = run_kvlint(kvlint, root, files)
                finally:
                    path.write_text(original, encoding="utf-8")
                new = list(after)
                for f in baseline[files]:
                    if f in new:
                        new.remove(f)
                m.codes = sorted({code for _, code, _ in new})
                m.caught = any(code in KINDS[m.kind] for code in m.codes)
                m.path = f"{base.name}/{m.path}"
                results.append(m)
    return results


def is_test_site(path: str) -> bool:
    parts = path.split("/")
    return any(p in ("tests", "test", "tests_extend") for p in parts[:-1]) or parts[-1].startswith("test_")


def report(results: List[Mutation]) -> str:
    """Recall per kind, over all sites and over product code only (test files' tensors often
    feed mocked operators or CPU references)."""
    rows = ["| kind | sites | caught | recall | product-code sites | caught | recall |",
            "| --- | --- | --- | --- | --- | --- | --- |"]

    def cells(ms):
        caught = sum(1 for m in ms if m.caught)
        return f"{len(ms)} | {caught} | {caught / len(ms):.0%}" if ms else "0 | 0 | -"

    for kind in list(KINDS) + ["all"]:
        ms = [m for m in results if kind == "all" or m.kind == kind]
        rows.append(f"| {kind} | {cells(ms)} | {cells([m for m in ms if not is_test_site(m.path)])} |")
    misses = [f"- {m.kind} {m.path}:{m.line}: `{m.old.strip()[:90]}`" + (f" (other findings: {', '.join(m.codes)})"
                                                                       if m.codes else "")
              for m in results if not m.caught]
    return "\n".join(rows) + ("\n\nmisses:\n" + "\n".join(misses) if misses else "")


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bases", nargs="+", type=Path)
    parser.add_argument("--kvlint", type=Path, default=REPO, help="checkout whose kvlint runs (default: this one)")
    parser.add_argument("--per-kind", type=int, default=10)
    parser.add_argument("--json", type=Path, help="write every mutation and its outcome here")
    args = parser.parse_args(argv)
    results = run([b.resolve() for b in args.bases], args.kvlint.resolve(), args.per_kind)
    print(report(results))
    if args.json:
        args.json.write_text(json.dumps([asdict(m) for m in results], indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
