"""Scaffold a new static rule: `python scripts/new_rule.py KV123 short-rule-name`.

Writes the four hand-written files of a rule, each with a TODO where the rule's knowledge goes:

- kvlint/checks/kv123_short_rule_name.py   the rule (registered by its module name)
- rules/codes/KV123.toml                   its catalog entry and documentation
- fixtures/rules/KV123/bad.py              code it must report
- fixtures/rules/KV123/good.py             code it must not report

then generates what derives from them: docs/rules/KV123.md and the README rule table
(scripts/gen_docs.py) and fixtures/rules/KV123/bad.snap (scripts/update_snapshots.py).
Operator facts the rule needs go in rules/facts/*.toml, read through kvlint.facts. Refuses to
overwrite an existing file.
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

MODULE = '''"""{code}: TODO one line: what it detects (docs: rules/codes/{code}.toml)."""
from kvlint.checks import register
from kvlint.checks.base import FileContext, Rule
from kvlint.facts import load_facts
from kvlint.helpers.args import param_values

FACTS = load_facts()


@register
class {cls}(Rule):
    code = "{code}"
    # the operators (base names) whose calls check_call sees; also the pre-filter's words
    operators = FACTS.family("fused_attention")  # TODO: the family this rule is about

    def check_call(self, oc, ctx: FileContext):
        # TODO: the rule. Ask kvlint.helpers (args, roles, masks, sparse, tensors, results)
        # and FACTS; report with ctx.finding(self.code, node, message, fix, anchor=oc.call).
        for value in param_values(oc, ctx, "TODO_keyword"):
            yield ctx.finding(self.code, value, "TODO: what is wrong, why it is a bug, what to do",
                              anchor=oc.call)
'''

TOML = """code = '{code}'
name = '{name}'
severity = 'warning'
summary = 'TODO: one line, as the rule table shows it'
fix = 'none'            # 'safe' or 'unsafe' when check_call attaches a Fix
checked = ['static']

what = '''
TODO: exactly what the rule reports, and every named heuristic it relies on.
'''

why = '''
TODO: why it is a bug: what the operator does with such a call (cite the operator's docs).
'''

example = '''
TODO: a call the rule reports
'''

use_instead = '''
TODO: the same call, fixed
'''
"""

BAD = '''import torch_npu


def forward(q, k, v):
    # TODO: each case the rule must report, with a comment saying why
    return torch_npu.npu_fused_infer_attention_score(q, k, v, num_heads=8, scale=0.125, TODO_keyword=1)
'''

GOOD = '''import torch_npu


def forward(q, k, v):
    # TODO: the correct forms of the same calls; no rule may report anything here
    return torch_npu.npu_fused_infer_attention_score(q, k, v, num_heads=8, scale=0.125)
'''


def paths(code: str, name: str):
    module = f"kv{code[2:]}_{name.replace('-', '_')}.py"
    return {
        "module": ROOT / "kvlint" / "checks" / module,
        "toml": ROOT / "rules" / "codes" / f"{code}.toml",
        "bad": ROOT / "fixtures" / "rules" / code / "bad.py",
        "good": ROOT / "fixtures" / "rules" / code / "good.py",
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("code", help="KVnnn")
    parser.add_argument("name", help="short-rule-name (kebab case)")
    parser.add_argument("--no-generate", action="store_true", help="do not run gen_docs / update_snapshots")
    args = parser.parse_args(argv)
    code, name = args.code.upper(), args.name.lower()
    if not re.fullmatch(r"KV\d{3}", code):
        parser.error(f"{args.code!r} is not a rule code (KVnnn)")
    if not re.fullmatch(r"[a-z][a-z0-9]*(-[a-z0-9]+)*", name):
        parser.error(f"{args.name!r} is not a kebab-case name (e.g. mask-not-bool)")
    existing = sorted((ROOT / "kvlint" / "checks").glob(f"kv{code[2:]}_*.py")) + \
        [p for p in (ROOT / "rules" / "codes" / f"{code}.toml",) if p.exists()]
    if existing:
        print(f"{code} exists already: {', '.join(str(p.relative_to(ROOT)) for p in existing)}", file=sys.stderr)
        return 2
    cls = "".join(part.capitalize() for part in name.split("-"))
    files = paths(code, name)
    texts = {"module": MODULE.format(code=code, cls=cls), "toml": TOML.format(code=code, name=name),
             "bad": BAD, "good": GOOD}
    for path in files.values():
        if path.exists():
            print(f"{path.relative_to(ROOT)} exists already", file=sys.stderr)
            return 2
    for key, path in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(texts[key], encoding="utf-8")
        print(f"wrote {path.relative_to(ROOT)}")
    if not args.no_generate:
        for script in (["scripts/gen_docs.py"], ["scripts/update_snapshots.py", code]):
            subprocess.run([sys.executable, *script], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        print(f"generated docs/rules/{code}.md, the README rule table and fixtures/rules/{code}/bad.snap")
    print(f"next: fill in the TODOs, then `python scripts/update_snapshots.py {code}` and review the diff")
    return 0


if __name__ == "__main__":
    sys.exit(main())
