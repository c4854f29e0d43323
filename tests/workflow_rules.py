"""A static reading of the workflow's rules (rules/*.smk), for tests that check what rules declare.

Conda itself cannot be installed here and the Snakemake API would plan a whole DAG, so the tests read
the rule files as text: each ``rule NAME:`` block's ``threads``, ``resources``, ``conda`` and
``script`` directives. The rule files follow one layout (snakefmt style), which this relies on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


@dataclass
class Rule:
    name: str
    file: str
    conda: str = ""  # the env file's name, e.g. "cpu.yaml"
    script: str = ""  # path relative to the repository
    threads: str = ""
    code: str = ""  # the params entry code=..., as written
    resources: dict[str, str] = field(default_factory=dict)


def _directives(block: list[str]) -> dict[str, list[str]]:
    directives: dict[str, list[str]] = {}
    current = None
    for line in block:
        match = re.match(r"^    (\w+):\s*(.*)$", line)
        if match:
            current = match.group(1)
            directives[current] = [match.group(2)] if match.group(2) else []
        elif current and line.startswith("        "):
            directives[current].append(line.strip())
    return directives


def parse_rules(rules_dir: Path = REPO / "rules") -> dict[str, Rule]:
    rules: dict[str, Rule] = {}
    for path in sorted(rules_dir.glob("*.smk")):
        lines = path.read_text().splitlines()
        starts = [(i, m.group(1)) for i, line in enumerate(lines) if (m := re.match(r"^rule (\w+):", line))]
        for (start, name), (end, _) in zip(starts, starts[1:] + [(len(lines), "")]):
            directives = _directives(lines[start + 1 : end])
            rule = Rule(name=name, file=path.name)
            if "conda" in directives:
                rule.conda = Path(directives["conda"][0].strip('"')).name
            if "script" in directives:
                rule.script = str((rules_dir / directives["script"][0].strip('"')).resolve().relative_to(REPO))
            rule.threads = " ".join(directives.get("threads", []))
            for entry in directives.get("params", []):
                if entry.startswith("code="):
                    rule.code = entry.removeprefix("code=").rstrip(",")
            for entry in directives.get("resources", []):
                key, _, value = entry.rstrip(",").partition("=")
                rule.resources[key.strip()] = value.strip()
            rules[name] = rule
    return rules
