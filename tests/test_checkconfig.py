"""`structbench check-config` runs the workflow's start-up checks (structbench.plan.study.start_up) on a config layered
as Snakemake layers it, and names the FILE:LINE of each problem (structbench.checkconfig, structbench.configfiles)."""

import copy
import io
from contextlib import redirect_stderr

import pytest
import yaml
from conftest import REPO
from snakemake.cli import parse_config
from snakemake.utils import update_config

from structbench import checkconfig
from structbench.cli import main
from structbench.config import ConfigError
from structbench.configfiles import (
    layer_configs,
    load_with_lines,
    named_key_path,
    parse_config_entries,
    snakemake_config_arguments,
)
from structbench.plan import study

SCHEMA = REPO / "workflow/schemas/config.schema.yaml"
DATA = REPO.parent / "shared" / "data"
# Every shipped config as its header comment runs it: the layers over config/config.yaml and the --config
# overrides (a data path only where a config leaves it to the command line).
SHIPPED = {
    "config.yaml": ([], []),
    "chroma.yaml": (["chroma.yaml"], []),
    "chunkers.yaml": (["chunkers.yaml"], []),
    "ladder.yaml": (["ladder.yaml"], []),
    "late.yaml": (["late.yaml"], []),
    "learned.yaml": (["qasper.yaml", "learned.yaml"], ["corpora={qasper: {max_docs: 50}}"]),
    "model_free.yaml": (["model_free.yaml"], []),
    "own_corpus.yaml": (
        ["own_corpus.yaml"],
        ["corpora={mydocs: {path: data/kb/docs, questions: data/kb/questions.jsonl}}"],
    ),
    "paper.yaml": (["paper.yaml"], []),
    "qasper.yaml": (["qasper.yaml"], []),
    "qasper_full.yaml": (["qasper_full.yaml"], []),
    "qasper_full_model_free.yaml": (["qasper_full_model_free.yaml"], []),
    "qasper_knobs.yaml": (["qasper.yaml", "sizes.yaml", "qasper_knobs.yaml"], ["corpora={qasper: {max_docs: 50}}"]),
    "readtime.yaml": (["readtime.yaml"], []),
    "sizes.yaml": (["sizes.yaml"], []),
    "wikitexts.yaml": (["wikitexts.yaml"], []),
    "wikitext.yaml": (
        ["wikitext.yaml"],
        [f"corpora={{wikitext: {{path: {DATA}/wikitext/wikitext-2-raw-test/wiki.test.raw}}}}"],
    ),
}


def check_config(*argv):
    """``structbench check-config`` in process: (exit status, stderr lines)."""
    err = io.StringIO()
    with redirect_stderr(err):
        status = main(["check-config", *map(str, argv)])
    return status, err.getvalue().splitlines()


def test_every_shipped_config_is_listed_and_passes():
    assert sorted(SHIPPED) == sorted(path.name for path in (REPO / "config").glob("*.yaml"))
    for name, (files, overrides) in SHIPPED.items():
        arguments = ["--configfile", *(REPO / "config" / f for f in files)] if files else []
        status, lines = check_config(
            "--snakemake-args", "-n", *arguments, *(["--config", *overrides] * bool(overrides))
        )
        assert status == 0, (name, lines)
        assert all(line.startswith("warning: ") for line in lines), (name, lines)


def test_contradictory_bounds_are_named_at_their_file_and_line(tmp_path):
    (tmp_path / "my.yaml").write_text("# sizes\nchunking: {t_max: 50, t_min: 200}\n")
    status, lines = check_config(tmp_path / "my.yaml")
    assert status == 1
    assert lines == [
        f"{tmp_path / 'my.yaml'}:2: chunking.t_min = 200 exceeds chunking.t_max = 50: "
        "no chunk could satisfy both bounds"
    ]


def test_schema_violations_are_each_named_at_their_line_and_a_default_by_its_key(tmp_path):
    (tmp_path / "a.yaml").write_text("retrieval:\n  top_k: many\nstats:\n  seed: -1.5\n")
    status, lines = check_config("--snakemake-args", "--configfile", tmp_path / "a.yaml", "--config", "seed=x")
    assert status == 1
    assert f"{tmp_path / 'a.yaml'}:2: retrieval.top_k: 'many' is not of type 'integer'" in lines
    assert f"{tmp_path / 'a.yaml'}:4: stats.seed: unknown key (config/README.md lists every key)" in lines
    assert any(line.startswith("--config seed=...: seed: 'x' is not of type 'integer'") for line in lines)
    # t_min filled from the schema's default: no file holds it, so its key path is named
    (tmp_path / "b.yaml").write_text("chunking:\n  t_max: 10\n")
    layered = layer_configs([REPO / "config/config.yaml", tmp_path / "b.yaml"])
    del layered.config["chunking"]["t_min"]
    del layered.origins[("chunking", "t_min")]
    with pytest.raises(ConfigError) as refused:
        study.start_up(layered.config, SCHEMA)
    assert checkconfig.located(refused.value, layered) == [
        "chunking.t_min (schema default) = 60 exceeds chunking.t_max = 10: no chunk could satisfy both bounds"
    ]


def test_later_layers_win_and_keep_their_own_lines(tmp_path):
    (tmp_path / "a.yaml").write_text("chunking:\n  t_max: 100\n  t_min: 10\n")
    (tmp_path / "b.yaml").write_text("\n\nchunking:\n  t_min: 120\n")
    status, lines = check_config(tmp_path / "a.yaml", tmp_path / "b.yaml")
    assert (status, lines) == (
        1,
        [
            f"{tmp_path / 'b.yaml'}:4: chunking.t_min = 120 exceeds chunking.t_max = 100: no chunk could satisfy "
            "both bounds"
        ],
    )
    layered = layer_configs([tmp_path / "a.yaml", tmp_path / "b.yaml"], ["chunking={t_max: 300}"])
    assert layered.config["chunking"] == {"t_max": "300", "t_min": 120}  # --config: strings, typed by the schema
    assert str(layered.origins[("chunking", "t_max")]) == "--config chunking=..."


def test_the_layering_is_snakemakes(tmp_path):
    (tmp_path / "a.yaml").write_text("chunking: {t_max: 100}\nselect: {corpora: [kb]}\nseed: 3\n")
    (tmp_path / "b.yaml").write_text("select: null\nchunking: {t_min: 5}\nlist: [1, {a: 2}]\n")
    entries = ["seed=4", "flag=True", "ratio=0.5", "nested={a: {b: 1}}", "name='x y'", "empty="]
    theirs = yaml.safe_load((REPO / "config/config.yaml").read_text())
    for path in (tmp_path / "a.yaml", tmp_path / "b.yaml"):
        update_config(theirs, yaml.safe_load(path.read_text()))
    update_config(theirs, parse_config(entries))
    mine = layer_configs([REPO / "config/config.yaml", tmp_path / "a.yaml", tmp_path / "b.yaml"], entries).config
    assert mine == theirs
    assert parse_config_entries(["seed=4"]) == [("seed", 4)]
    with pytest.raises(ValueError, match="KEY=VALUE"):
        parse_config_entries(["seed"])


def test_key_lines_and_the_key_a_message_names(tmp_path):
    (tmp_path / "c.yaml").write_text(
        "conditions:\n  G2-200:\n    t_max: 200\n  A.B: {prefix: none}\nl:\n  - 1\n  - 2\n"
    )
    config, lines = load_with_lines(tmp_path / "c.yaml")
    assert lines[("conditions", "G2-200", "t_max")] == 3 and lines[("conditions", "A.B", "prefix")] == 4
    assert lines[("l", 1)] == 7
    assert named_key_path("conditions.G2-200.t_max = 200 is too big", config) == ("conditions", "G2-200", "t_max")
    assert named_key_path("see conditions.A.B.prefix: bad", config) == ("conditions", "A.B", "prefix")
    assert named_key_path("no key here. none.", config) is None


def test_snakemake_arguments_name_their_files_and_entries():
    arguments = ["-n", "--configfile", "a.yaml", "b.yaml", "-C", "x=1", "y=2", "--cores", "2", "--configfile=c.yaml"]
    assert snakemake_config_arguments(arguments) == (["a.yaml", "b.yaml", "c.yaml"], ["x=1", "y=2"])
    assert snakemake_config_arguments(["--config=seed=3", "all"]) == ([], ["seed=3"])


# Configs the workflow refuses at start-up, one per kind of check: the schema, cross-key, per-condition, a library.
REFUSED = {
    "schema": lambda c: c["retrieval"].update(top_k=0),
    "cross-key": lambda c: c["chunking"].update(t_max=50, t_min=200),
    "per-condition": lambda c: c["conditions"]["G2"].update(t_max=30, t_min=40),
    "library": lambda c: c.update(
        chunkers={"lc": {"library": "langchain", "kind": "recursive", "options": {"no_such_option": 1}}},
        conditions=c["conditions"]
        | {"LC": {"boundaries": "external:lc", "structure": "gold", "prefix": "none", "retrieval": "flat"}},
    ),
}


@pytest.mark.parametrize("kind", sorted(REFUSED))
def test_a_config_the_workflow_refuses_is_refused_by_check_config_with_the_same_function(tmp_path, monkeypatch, kind):
    """The workflow (rules/common.smk) and the command call one function, structbench.plan.study.start_up: the command
    fails exactly where that function raises, and names the file."""
    assert "start_up(config, " in (REPO / "rules/common.smk").read_text()
    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    REFUSED[kind](config)
    with pytest.raises(ConfigError):
        study.start_up(copy.deepcopy(config), SCHEMA)
    calls, real_start_up = [], study.start_up
    monkeypatch.setattr(study, "start_up", lambda *arguments: calls.append(arguments) or real_start_up(*arguments))
    (tmp_path / "my.yaml").write_text(yaml.safe_dump(config))
    status, lines = check_config(tmp_path / "my.yaml")
    assert calls and status == 1 and lines[0].startswith(f"{tmp_path / 'my.yaml'}:"), lines


def test_a_missing_configfile_is_named_where_snakemake_gives_a_traceback(tmp_path):
    """Snakemake 9 reads ``--configfile`` before the Snakefile runs (a traceback ending in FileNotFoundError), so
    check-config, which ``make dryrun`` and ``make run`` call first, is where the file is named."""
    missing = tmp_path / "missing.yaml"
    status, lines = check_config("--snakemake-args", "-n", "--configfile", missing)
    assert (status, lines) == (1, [f"{missing}: no such file"])


def test_t_min_zero_is_a_named_error_not_a_division_by_zero(tmp_path):
    """``t_min: 0`` promises chunks of no tokens, so no ``top_k`` is sure to fill a token budget: the budget metric
    is named with the remedy (the message once divided by ``t_min``)."""
    (tmp_path / "zero.yaml").write_text("chunking: {t_max: 50, t_min: 0}\n")
    status, lines = check_config(tmp_path / "zero.yaml")
    assert status == 1 and len(lines) == 1, lines
    assert "chunking.t_min = 0 tokens" in lines[0] and "raise chunking.t_min above 0" in lines[0], lines
    # without a budget metric, t_min 0 loads
    (tmp_path / "plain.yaml").write_text("chunking: {t_max: 50, t_min: 0}\nmetrics: {budgets: []}\n")
    status, lines = check_config(tmp_path / "plain.yaml")
    assert status == 0, lines


def test_a_conditions_own_t_min_zero_is_named_at_its_own_key_and_line(tmp_path):
    """A budget metric cannot be promised by a condition's own ``t_min: 0``: the error names that key and the line
    that wrote it, not the run's ``chunking.t_min``."""
    (tmp_path / "own.yaml").write_text(
        "# one condition of small chunks\nconditions:\n  G2: {boundaries: structural, structure: gold, prefix: none,\n"
        "       retrieval: flat, t_min: 0}\n"
    )
    status, lines = check_config(tmp_path / "own.yaml")
    assert status == 1 and len(lines) == 1, lines
    assert lines[0].startswith(f"{tmp_path / 'own.yaml'}:4: conditions.G2.t_min = 0 tokens: metric budget_cov@"), lines
    assert "raise conditions.G2.t_min above 0" in lines[0] and "chunking.t_min" not in lines[0], lines


def test_an_unknown_top_level_key_is_named_at_its_line_with_the_key_it_may_mean(tmp_path):
    (tmp_path / "typo.yaml").write_text("chunking: {t_max: 300}\nretreival:\n  top_k: 10\n")
    status, lines = check_config(tmp_path / "typo.yaml")
    assert (status, lines) == (
        1,
        [
            f"{tmp_path / 'typo.yaml'}:2: retreival: unknown key; did you mean 'retrieval'? "
            "(config/README.md lists every key)"
        ],
    )


def billion_laughs(mapping: bool = False) -> str:
    """Nine levels of nine aliases (387,420,489 values written out) in under 1,100 bytes."""
    lines = ["lol0: &lol0 lol"]
    for i in range(1, 10):
        aliases = [f"k{j}: *lol{i - 1}" if mapping else f"*lol{i - 1}" for j in range(9)]
        lines.append(f"lol{i}: &lol{i} " + ("{%s}" if mapping else "[%s]") % ", ".join(aliases))
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_deep_nesting_and_a_duplicate_key_are_named_before_snakemake_reads_the_file(tmp_path):
    """Snakemake's own loader expands a mapping bomb key by key (``snakemake.utils.update_config``) before the
    Snakefile runs, overflows on deep nesting and keeps a duplicate key's last value: check-config, which ``make
    run`` calls first, names each at its FILE:LINE in bounded memory."""
    import tracemalloc

    files = {
        "laughs.yaml": (billion_laughs(), 7, "more than 100,000 YAML nodes with its aliases written out"),
        "mapbomb.yaml": (billion_laughs(mapping=True), 6, "more than 100,000 YAML nodes with its aliases written out"),
        "deep.yaml": ("seed: 1\nstats: " + "[" * 5000 + "]" * 5000 + "\n", 2, "nested deeper than 100 levels"),
        "nested.yaml": (
            "stats:\n  bootstrap_iters: 200\n  mixedlm: false\n  bootstrap_iters: 300\n",
            4,
            "duplicate key 'bootstrap_iters' (first at line 2, again at line 4)",
        ),
        "top.yaml": (
            "seed: 1\nresults: out\n\nseed: 2\n",
            4,
            "duplicate key 'seed' (first at line 1, again at line 4)",
        ),
    }
    for name, (text, line, problem) in files.items():
        (tmp_path / name).write_text(text)
        tracemalloc.start()
        status, lines = check_config("--snakemake-args", "-n", "--configfile", tmp_path / name)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert status == 1 and len(lines) == 1 and lines[0].startswith(f"{tmp_path / name}:{line}: {problem}"), lines
        assert peak < 20_000_000, (name, peak)


def test_a_config_with_anchors_and_merge_keys_passes(tmp_path):
    (tmp_path / "anchors.yaml").write_text(
        "chunking: &sizes {t_max: 200, t_min: 40}\n"
        "conditions:\n"
        "  G2: &gold {boundaries: structural, structure: gold, prefix: none, retrieval: flat}\n"
        "  G3:\n    <<: *gold\n    prefix: path:3\n"
        "  S2: {<<: [*gold, *sizes], t_max: 150}\n"
        "contrasts:\n  G3-G2: {treatment: G3, control: G2, family: primary}\n"
    )
    status, lines = check_config(tmp_path / "anchors.yaml")
    assert status == 0 and all(line.startswith("warning: ") for line in lines), lines
    layered = layer_configs([REPO / "config/config.yaml", tmp_path / "anchors.yaml"])
    assert layered.config["conditions"]["G3"]["prefix"] == "path:3"
    assert layered.config["conditions"]["G3"]["boundaries"] == "structural"
    assert layered.config["conditions"]["S2"] == {
        "boundaries": "structural",
        "structure": "gold",
        "prefix": "none",
        "retrieval": "flat",
        "t_max": 150,
        "t_min": 40,
    }


def test_an_alias_bomb_in_a_config_entry_is_named_by_its_key():
    bomb = "[&a0 [lol], &a1 [" + ", ".join(["*a0"] * 9) + "]"
    for i in range(2, 10):
        bomb += f", &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]"
    status, lines = check_config("--snakemake-args", "-n", "--config", f"stats={bomb}]")
    assert (status, lines) == (
        1,
        [
            "--config stats=...: more than 100,000 YAML nodes with its aliases written out (an alias bomb?); "
            "write the values out, or use fewer aliases"
        ],
    )


def test_the_workflow_start_up_reads_the_config_files_again_with_the_bounded_reader(tmp_path):
    """``rules/common.smk`` hands ``start_up`` the files Snakemake read (``workflow.configfiles``): a key Snakemake
    kept at its last value stops the workflow before any job."""
    assert "workflow.configfiles" in (REPO / "rules/common.smk").read_text()
    (tmp_path / "twice.yaml").write_text("stats:\n  bootstrap_iters: 200\n  bootstrap_iters: 300\n")
    snakemakes = yaml.safe_load((REPO / "config/config.yaml").read_text())
    update_config(snakemakes, yaml.safe_load((tmp_path / "twice.yaml").read_text()))
    assert snakemakes["stats"]["bootstrap_iters"] == 300  # what Snakemake's loader makes of it
    with pytest.raises(ConfigError) as refused:
        study.start_up(snakemakes, SCHEMA, [REPO / "config/config.yaml", tmp_path / "twice.yaml"])
    assert f"{tmp_path / 'twice.yaml'}:3: duplicate key 'bootstrap_iters' (first at line 2" in str(refused.value)
    assert study.start_up(
        yaml.safe_load((REPO / "config/config.yaml").read_text()), SCHEMA, [REPO / "config/config.yaml"]
    )


def test_the_seed_and_bootstrap_iters_are_refused_at_their_lines(tmp_path):
    (tmp_path / "big.yaml").write_text("seed: -1\nstats:\n  bootstrap_iters: 1000000000000\n")
    status, lines = check_config("--snakemake-args", "-n", "--configfile", tmp_path / "big.yaml")
    assert (status, lines) == (
        1,
        [
            f"{tmp_path / 'big.yaml'}:1: seed: -1 is less than the minimum of 0",
            f"{tmp_path / 'big.yaml'}:3: stats.bootstrap_iters: 1000000000000 is greater than the maximum of 1000000",
        ],
    )
    (tmp_path / "edge.yaml").write_text("seed: 4294967295\nstats:\n  bootstrap_iters: 1000000\n")
    status, lines = check_config(tmp_path / "edge.yaml")
    assert status == 0, lines
