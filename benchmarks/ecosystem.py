"""The ecosystem check: kvlint on pinned public Ascend code bases, against a committed triage.

    python benchmarks/ecosystem.py /tmp/eco                # compare, print, regenerate docs/precision.md
    python benchmarks/ecosystem.py /tmp/eco --update-triage # also rewrite triage.toml (see below)

ROOT holds one folder per snapshot, named `<owner>+<name>` (extract each pinned commit with
`git -C <mirror> archive <commit> | tar -x -C ROOT/<owner>+<name>`; see benchmarks/README.md).
The code bases are never part of this repository.

kvlint runs from this checkout on every snapshot with every rule on (`--select ALL
--preview`, `--isolated`, no cache) but KV900 (a report on kvlint's own `# noqa` comments,
which these code bases never wrote). Each finding is matched with an entry of
`benchmarks/ecosystem/triage.toml` (path, line, code, the stripped source line, verdict
TRUE / JUSTIFIED / FALSE, a one-line reason): first by path + code + line + source text,
then by path + code + source text (the nearest line: the code or kvlint moved the report),
then by path + code + line (the line's text changed). What stays unmatched is printed: *new*
findings (no triage yet) and *vanished* entries (triaged, no longer reported). Then the
precision per rule (TRUE + JUSTIFIED over triaged findings), and docs/precision.md is
rewritten from it (everything from its "## History" heading down is kept as written).

`--update-triage` rewrites triage.toml for the current findings: matched entries keep their
verdict and reason with the current line and text, vanished entries are dropped (and
listed), new findings get `verdict = "UNTRIAGED"` for a person to fill in by reading the code.

Exit status: 0 when every finding is triaged and nothing vanished, 1 otherwise, 2 on a usage
error (a missing snapshot folder). Not part of the test suite: run it before you change a rule.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPO = Path(__file__).resolve().parent.parent
TRIAGE = REPO / "benchmarks" / "ecosystem" / "triage.toml"
PRECISION_DOC = REPO / "docs" / "precision.md"
VERDICTS = ("TRUE", "JUSTIFIED", "FALSE")
UNTRIAGED = "UNTRIAGED"
STABLE_BAR = 0.90  # a rule is stable only while >= 90% of its corpus findings are TRUE or JUSTIFIED


@dataclass(frozen=True)
class Snapshot:
    owner: str
    name: str
    commit: str
    note: str = ""
    examples: str = ""  # "docs": the Python examples of its Markdown docs (doc_examples.py)

    @property
    def folder(self) -> str:
        return f"{self.owner}+{self.name}" + ("+doc-examples" if self.examples == "docs" else "")

    def how_to_extract(self, root: Path) -> str:
        if self.examples == "docs":
            return (f"python benchmarks/doc_examples.py <mirror of {self.owner}/{self.name}> {self.commit} "
                    f"{root / self.folder}")
        return f"git -C <mirror of {self.owner}/{self.name}> archive {self.commit} | tar -x -C {root / self.folder}"

    @property
    def pin(self) -> str:
        return f"{self.owner}/{self.name}@{self.commit}"


SNAPSHOTS: Tuple[Snapshot, ...] = (
    Snapshot("hicann", "cann-recipes-infer", "fbc225d2de3157a093a2e7dfc2b23086d23ed8f9",
             "inference recipes: LLM, diffusion, video"),
    Snapshot("vllm-project", "vllm-ascend", "182b75ea84ff13ece27b57391331ef8935410aea", "serving engine"),
    Snapshot("Ascend", "sglang", "bf186cf8fc05b687c9f00e47f283760d2996b244",
             "serving engine (python/sglang/srt/hardware_backend/npu, models)"),
    Snapshot("omni-ai-npu", "omni-infer", "c8bc2bbbaa1084139a8e70405c4873632c0dab79",
             "serving engine (the .py files)"),
    Snapshot("Ascend", "MindSpeed", "028de58ca629d035185b00ff7d1eb7eff4f7fd48",
             "training: context parallel, fused attention"),
    Snapshot("Ascend", "MindSpeed-LLM", "c77308a14bfcb1aa7ca61da9c1aa24a893cb1b91",
             "LLM training: FSDP2 models, ulysses/ring context parallel"),
    Snapshot("Ascend", "MindSpeed-MM", "57069cd55a8ab16d5affe379a2e2c5f0a4d962b9",
             "multimodal and diffusion training/inference (the .py files)"),
    Snapshot("DeepLink-org", "dlinfer", "a50184e3734e5799bd4cec484d3a2ac46a36ae86",
             "LMDeploy's Ascend vendor ops"),
    Snapshot("PKU-YuanGroup", "Open-Sora-Plan", "f7fa604f4e3a523d6b973e4c89a5620ed1aff65a",
             "video diffusion with an NPU attention path (the .py files)"),
    Snapshot("hicann", "cann-recipes-embodied-intelligence", "aed7a4788dfe94f6b90084f16ce493f9969471b1",
             "embodied-AI recipes: VLA, world models, 3-D vision (the .py files)"),
    Snapshot("hicann", "cann-recipes-train", "93819a74531c19c5c6089a5a916519ae20cf28fb",
             "training recipes (the .py files)"),
    Snapshot("hicann", "cann-recipes-spatial-intelligence", "71eb882bf34b90b297834b82c3693eb021c454bb",
             "spatial-intelligence recipes (the .py files)"),
    Snapshot("Ascend", "op-plugin", "517f2e7d0f202f38b76310706cb977ca2388ad21",
             "torch_npu's operator plug-in: the operator team's own Python tests (the .py files)"),
    Snapshot("Ascend", "op-plugin", "517f2e7d0f202f38b76310706cb977ca2388ad21",
             "torch_npu's operator documentation: the Python examples of docs/ (doc_examples.py)",
             examples="docs"),
    Snapshot("Ascend", "ModelZoo-PyTorch", "6a2804a358a5b18e3dac1ab902f41f88e240b00f",
             "Ascend's model zoo, 50,733 .py files of ported models (the .py files; the newest "
             "snapshot to be had here is of 2023-12-15)"),
    Snapshot("Ascend", "torchair", "fced8842d149f16b587c2c867d427e4b766831ca",
             "torch.compile's Ascend graph back end: fx passes, graph-mode operator tests (the .py files)"),
    Snapshot("Ascend", "MindSpeed-RL", "05a90d77cb6cfad8999e2aee21068284db959579",
             "reinforcement-learning post-training (the .py files)"),
    Snapshot("volcengine", "verl", "b178a3cd56f58b2d502255daba591e92833930a7",
             "RL post-training with an NPU path (transformers patches, attention utilities; the .py files)"),
    Snapshot("huggingface", "diffusers", "58eb52c0803ea9af3abec60841c2a093bdf1f951",
             "diffusion pipelines with an NPU attention back end (attention_dispatch; the .py files)"),
    Snapshot("Ascend", "MindIE-SD", "3066189522a6296b00344f1504457bcf50b858d9",
             "diffusion inference: attention back ends over FA, PFA and sparse attention (the .py files)"),
    Snapshot("Ascend", "MindIE-LLM", "8b4871ad31f592aa863f6255760e4934484d78e4",
             "LLM serving: runner, FIA and sparse attention back ends, ATB model examples (the .py files)"),
    Snapshot("sgl-project", "sgl-kernel-npu", "f425bdf1e191a7682296d3b2ed0b927d4e37d671",
             "SGLang's NPU kernels: attention wrappers and their tests (the .py files)"),
    Snapshot("Ascend", "msmodeling", "84fec853d6708256ca4fecf143d8b656a3a3496e",
             "performance modelling of LLM serving on Ascend (the .py files)"),
    Snapshot("vllm-ascend", "vllm-ascend-recipes", "3767fe3f01f0b9be1803aede6a79e75c673efc2c",
             "vllm-ascend deployment recipes (the .py files)"),
    Snapshot("Ascend", "DrivingSDK", "e667017eb751b614c128c9c81812634cae362ee4",
             "autonomous-driving models ported to Ascend: attention monkey-patches (the .py files)"),
    Snapshot("Ascend", "pytorch", "9e73e708ab9350d203475609f36f8a43f6a0c2ab",
             "torch_npu itself: its Python tests, graph capture and update of FIA (the .py files)"),
    Snapshot("modelscope", "ms-swift", "3602360a562313afbf2ef6065fdf61f271a2c5b9",
             "fine-tuning framework: zigzag ring attention over npu_fusion_attention (the .py files)"),
    Snapshot("kvcache-ai", "ktransformers", "95009ea6856c0799e517e93cb12be5e8494bc7ce",
             "CPU/GPU hybrid inference: its Ascend MLA and Qwen3 attention, paged KV (the .py files)"),
    Snapshot("hpcaitech", "ColossalAI", "4f9953be335ef371b3848719ddafe596c01ecd37",
             "training framework: its NPU flash-attention kernel over npu_fusion_attention (the .py files)"),
    Snapshot("xdit-project", "xDiT", "175e0bfec974d0b44a0be9fa511df2f9f5ead080",
             "parallel DiT inference: its NPU attention back end and ring attention (the .py files)"),
    Snapshot("Ascend", "msprobe", "8ff00da37660ef42e2ba945a2ec349b6f85314e1",
             "accuracy tools: a CPU npu_fusion_attention of its own, called by that name (the .py files)"),
    Snapshot("LMCache", "LMCache-Ascend", "169ee7283de1f8ce3b26149f5bc1399fc45b2373",
             "KV-cache offload on Ascend: its blend attention with a position mask (the .py files)"),
)


# -- findings and triage entries ---------------------------------------------------------------
@dataclass
class Found:
    path: str  # relative to ROOT, starting with the snapshot folder
    line: int
    column: int
    code: str
    severity: str
    message: str
    text: str  # the stripped source line
    branch: str = ""  # the rule's heuristic branch, when kvlint names one


@dataclass
class Entry:
    path: str
    line: int
    code: str
    verdict: str
    reason: str
    text: str = ""


@dataclass
class Comparison:
    matched: List[Tuple[Found, Entry]] = field(default_factory=list)
    new: List[Found] = field(default_factory=list)
    vanished: List[Entry] = field(default_factory=list)


_SOURCE_LINES: Dict[str, List[str]] = {}  # path -> its lines, read once


def source_line(root: Path, path: str, line: int) -> str:
    _files = _SOURCE_LINES
    lines = _files.get(path)
    if lines is None:
        try:
            lines = (root / path).read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            lines = []
        _files[path] = lines
    return lines[line - 1].strip() if 0 < line <= len(lines) else ""


def run_kvlint(root: Path, folders: Sequence[str], python: str = sys.executable) -> List[Found]:
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               KVLINT_NO_CACHE="1", NO_COLOR="1")
    # KV900 (unused noqa) reports the suppressions of a kvlint user; these code bases never
    # used kvlint, so their flake8/ruff noqa comments are not findings on their code
    cmd = [python, "-m", "kvlint", "check", "--format", "json", "--exit-zero", "--no-cache", "--isolated",
           "--select", "ALL", "--ignore", "KV900"]
    if "--preview" in subprocess.run([python, "-m", "kvlint", "check", "--help"], capture_output=True,
                                     text=True, env=env, cwd=root).stdout:
        cmd.append("--preview")
    proc = subprocess.run(cmd + list(folders), capture_output=True, text=True, env=env, cwd=root)
    if proc.returncode not in (0, 1):
        sys.exit(f"ecosystem: kvlint failed ({proc.returncode}):\n{proc.stderr}")
    data = json.loads(proc.stdout)
    found, unread = [], []
    for f in data["findings"]:
        if f["code"] == "KV000":  # unreadable / unparsable file: not a finding on the code
            unread.append(f["path"])
            continue
        path = f["path"].replace(os.sep, "/")
        found.append(Found(path, f["line"], f["column"], f["code"], f["severity"], f["message"],
                           source_line(root, path, f["line"]), f.get("branch", "")))
    found.sort(key=lambda f: (f.path, f.line, f.column, f.code))
    if unread or data.get("errors"):
        print(f"note: {len(unread)} file(s) kvlint could not read or parse (KV000), "
              f"{len(data.get('errors', []))} internal error(s)", file=sys.stderr)
        for e in data.get("errors", [])[:20]:
            print(f"  error: {e}", file=sys.stderr)
    return found


def load_triage(path: Path = TRIAGE) -> List[Entry]:
    if not path.is_file():
        return []
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    entries = []
    for i, e in enumerate(data.get("finding", [])):
        verdict = e.get("verdict", "")
        if verdict not in VERDICTS + (UNTRIAGED,):
            sys.exit(f"ecosystem: {path}: finding #{i + 1} ({e.get('path')}:{e.get('line')}): "
                     f"verdict {verdict!r} is not one of {', '.join(VERDICTS)}")
        entries.append(Entry(e["path"], int(e["line"]), e["code"], verdict, e.get("reason", ""), e.get("text", "")))
    return entries


def compare(found: Iterable[Found], entries: Iterable[Entry]) -> Comparison:
    """Pair findings and triage entries of the same path and code: same line and text, then
    same text (nearest line), then same line. Robust to edits elsewhere in the file and to a
    rule that reports one line up or down."""
    result = Comparison()
    by_key: Dict[Tuple[str, str], Tuple[List[Found], List[Entry]]] = defaultdict(lambda: ([], []))
    for f in found:
        by_key[(f.path, f.code)][0].append(f)
    for e in entries:
        by_key[(e.path, e.code)][1].append(e)
    for key in sorted(by_key):
        fs, es = by_key[key]
        fs, es = list(fs), list(es)
        for same in (lambda f, e: f.line == e.line and f.text == e.text,
                     lambda f, e: bool(e.text) and f.text == e.text,
                     lambda f, e: f.line == e.line):
            for f in list(fs):
                candidates = [e for e in es if same(f, e)]
                if candidates:
                    e = min(candidates, key=lambda e: abs(e.line - f.line))
                    result.matched.append((f, e))
                    fs.remove(f)
                    es.remove(e)
        result.new.extend(fs)
        result.vanished.extend(es)
    result.matched.sort(key=lambda p: (p[0].path, p[0].line, p[0].code))
    return result


# -- precision -----------------------------------------------------------------------------------
@dataclass
class RuleCount:
    code: str
    counts: Counter = field(default_factory=Counter)
    severities: Counter = field(default_factory=Counter)

    @property
    def findings(self) -> int:
        return sum(self.counts.values())

    @property
    def triaged(self) -> int:
        return sum(self.counts[v] for v in VERDICTS)

    @property
    def precision(self) -> Optional[float]:
        return (self.counts["TRUE"] + self.counts["JUSTIFIED"]) / self.triaged if self.triaged else None


def per_rule(cmp: Comparison) -> List[RuleCount]:
    """One row per rule, then one per named heuristic branch of it (`KV150/PER_CALL_SCALE`)."""
    rules: Dict[str, RuleCount] = {}
    items = [(f, e.verdict) for f, e in cmp.matched] + [(f, UNTRIAGED) for f in cmp.new]
    for f, verdict in items:
        for key in (f.code, f"{f.code}/{f.branch}") if f.branch else (f.code,):
            r = rules.setdefault(key, RuleCount(key))
            r.counts[verdict] += 1
            r.severities[f.severity] += 1
    return [rules[c] for c in sorted(rules)]


def percent(p: Optional[float]) -> str:
    return "-" if p is None else f"{100 * p:.0f}%"


def precision_table(rules: Sequence[RuleCount], preview: Dict[str, bool]) -> List[str]:
    rows = ["| rule | status | findings | TRUE | JUSTIFIED | FALSE | untriaged | TRUE+JUSTIFIED |",
            "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    total = RuleCount("all")
    for r in rules:
        if "/" not in r.code:  # a branch row is part of its rule's row
            total.counts.update(r.counts)
        status = "preview" if preview.get(r.code) else "stable"
        rows.append(f"| {r.code} | {status} | {r.findings} | {r.counts['TRUE']} | {r.counts['JUSTIFIED']} | "
                    f"{r.counts['FALSE']} | {r.counts[UNTRIAGED]} | {percent(r.precision)} |")
    rows.append(f"| all | | {total.findings} | {total.counts['TRUE']} | {total.counts['JUSTIFIED']} | "
                f"{total.counts['FALSE']} | {total.counts[UNTRIAGED]} | {percent(total.precision)} |")
    return rows


def rule_status() -> Dict[str, bool]:
    """code (and code/branch) -> preview? from the catalog of this checkout."""
    sys.path.insert(0, str(REPO))
    from kvlint.catalog import load_catalog

    status = {}
    for code, info in load_catalog().rules.items():
        status[code] = bool(getattr(info, "preview", False))
        for name, branch in getattr(info, "branches", {}).items():
            status[f"{code}/{name}"] = status[code] or branch.preview
    return status


def false_errors(cmp: Comparison) -> List[Tuple[Found, Entry]]:
    return [(f, e) for f, e in cmp.matched if e.verdict == "FALSE" and f.severity == "error"]


def render_doc(cmp: Comparison, rules: Sequence[RuleCount], preview: Dict[str, bool], history: str) -> str:
    pins = "\n".join(f"- `{s.pin}` ({s.note})" for s in SNAPSHOTS)
    lines = [
        "# Precision on code kvlint has never seen",
        "",
        "Generated by `python benchmarks/ecosystem.py ROOT` (do not edit above the History heading).",
        "Every finding kvlint reports (every rule, preview included) on these pinned public code",
        "bases was triaged by reading the code (`benchmarks/ecosystem/triage.toml`):",
        "TRUE = a real bug, JUSTIFIED = not a bug here but the warning is reasonable to read,",
        "FALSE = wrong. A rule is stable only while at least 90% of its findings here are TRUE or",
        "JUSTIFIED; otherwise it ships as preview (`--preview` / `preview = true`).",
        "",
        pins,
        "",
        *precision_table(rules, preview),
        "",
        f"FALSE findings at error severity: {len(false_errors(cmp))}.",
        "",
        "Rules with no finding on the corpus are not listed; their precision here is unmeasured.",
        "",
    ]
    doc = "\n".join(lines)
    return doc + ("\n" + history.strip("\n") + "\n" if history else "")


def kept_history(path: Path = PRECISION_DOC) -> str:
    if not path.is_file():
        return ""
    text = path.read_text(encoding="utf-8")
    at = text.find("\n## History")
    return text[at + 1:] if at >= 0 else ""


# -- triage file ---------------------------------------------------------------------------------
def _toml_str(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)  # a JSON string is a valid TOML basic string


def write_triage(cmp: Comparison, path: Path = TRIAGE) -> None:
    rows: List[Entry] = []
    for f, e in cmp.matched:
        rows.append(Entry(f.path, f.line, f.code, e.verdict, e.reason, f.text))
    for f in cmp.new:
        rows.append(Entry(f.path, f.line, f.code, UNTRIAGED, f.message, f.text))
    rows.sort(key=lambda e: (e.path, e.line, e.code))
    out = ["# The triage of every finding kvlint reports on the ecosystem corpus (benchmarks/ecosystem.py).",
           "# verdict: TRUE (a real bug), JUSTIFIED (not a bug here, but the warning is reasonable),",
           "# FALSE (wrong). text: the stripped source line, to re-find the finding when lines move.",
           "# `python benchmarks/ecosystem.py ROOT --update-triage` refreshes lines and adds new findings",
           "# as UNTRIAGED; replace each with a verdict and a one-line reason after reading the code.", ""]
    for e in rows:
        out += ["[[finding]]", f"path = {_toml_str(e.path)}", f"line = {e.line}", f"code = {_toml_str(e.code)}",
                f"text = {_toml_str(e.text)}", f"verdict = {_toml_str(e.verdict)}",
                f"reason = {_toml_str(e.reason)}", ""]
    tmp = path.with_suffix(".toml.tmp")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp.write_text("\n".join(out), encoding="utf-8")
    os.replace(tmp, path)


# -- main ----------------------------------------------------------------------------------------
def report(cmp: Comparison, rules: Sequence[RuleCount], preview: Dict[str, bool]) -> None:
    for f in cmp.new:
        print(f"new       {f.path}:{f.line}:{f.column}: {f.code} [{f.severity}] {f.message}")
    for e in cmp.vanished:
        print(f"vanished  {e.path}:{e.line}: {e.code} (was {e.verdict}: {e.reason})")
    for f, e in false_errors(cmp):
        print(f"FALSE at error severity: {f.path}:{f.line}: {f.code}: {e.reason}")
    print(f"\n{len(cmp.matched)} triaged, {len(cmp.new)} new, {len(cmp.vanished)} vanished\n")
    print("\n".join(precision_table(rules, preview)))
    below = [r.code for r in rules if not preview.get(r.code) and r.precision is not None and r.precision < STABLE_BAR]
    if below:
        print(f"\nstable rules below {STABLE_BAR:.0%} TRUE+JUSTIFIED (make them preview or fix them): "
              + ", ".join(below))


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", help="the folder holding <owner>+<name> of each pinned snapshot")
    parser.add_argument("--update-triage", action="store_true",
                        help="rewrite triage.toml: refresh lines, drop vanished, add new as UNTRIAGED")
    parser.add_argument("--no-doc", action="store_true", help="do not rewrite docs/precision.md")
    parser.add_argument("--python", default=sys.executable, help="the interpreter that runs kvlint")
    args = parser.parse_args(argv)
    root = Path(args.root)
    missing = [s for s in SNAPSHOTS if not (root / s.folder).is_dir()]
    for s in missing:
        print(f"ecosystem: {root / s.folder} is missing: extract {s.pin} there ({s.how_to_extract(root)})",
              file=sys.stderr)
    if missing:
        return 2
    found = run_kvlint(root, [s.folder for s in SNAPSHOTS], args.python)
    cmp = compare(found, load_triage())
    preview = rule_status()
    rules = per_rule(cmp)
    report(cmp, rules, preview)
    if args.update_triage:
        write_triage(cmp)
        print(f"\nwrote {TRIAGE.relative_to(REPO)}")
    if not args.no_doc:
        PRECISION_DOC.write_text(render_doc(cmp, rules, preview, kept_history()), encoding="utf-8")
        print(f"wrote {PRECISION_DOC.relative_to(REPO)}")
    return 0 if not cmp.new and not cmp.vanished else 1


if __name__ == "__main__":
    sys.exit(main())
