"""Both HTML reports open in a real browser (headless Chromium) with every figure loaded: the standalone
``results/report/index.html`` and the one ``snakemake --report`` bundles. One tiny run of the default
workflow also checks the end-of-run summary line, that the default run writes every table and figure
its config has input for (and states why the others are omitted), and that rerunning the report gives
byte-identical figures.

The decisive questions' collapsible sections open in the browser with their question and chunk texts on the page,
on the synthetic inputs and on the default run, whose shown wins and losses are recomputed from its per-query
scores and whose questions ``structbench show`` prints the same way.

Without Chromium these tests skip, saying so; under ``.ci/run`` (which installs Debian's ``chromium``
and sets ``STRUCTBENCH_REQUIRE_BROWSER=1``) a missing browser is a failure.
"""

import json
import os
import re
from pathlib import Path

import polars as pl
import pytest
from browser import DECISIVE_OF_PAGE, IMAGES_OF_PAGE, PNG_RESULTS_OF_SNAKEMAKE_REPORT, Browser, chromium_binary
from conftest import REPO, run_snakemake
from report_testing import synthetic_inputs

from structbench.cli import main
from structbench.export import run_study
from structbench.report.bundle import ReportPaths, write_report_bundle
from structbench.report.catalog import TABLES
from structbench.report.figures import FIGURES


@pytest.fixture(scope="module")
def chromium():
    binary = chromium_binary()
    if binary is None:
        if os.environ.get("STRUCTBENCH_REQUIRE_BROWSER"):
            pytest.fail(
                "STRUCTBENCH_REQUIRE_BROWSER is set but no Chromium is installed (.ci/run installs Debian's chromium)"
            )
        pytest.skip(
            "no headless browser: install Debian's chromium (apt-get install chromium) to open the HTML reports"
        )
    with Browser(binary) as browser:
        yield browser


def loaded_images(browser: Browser, page: Path) -> list[dict]:
    return browser.open(page).evaluate(IMAGES_OF_PAGE)


def test_standalone_page_loads_every_figure(chromium, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_report_bundle(synthetic_inputs(), ReportPaths.under("report"))
    images = loaded_images(chromium, tmp_path / "report/index.html")
    # every figure but the size curve, which the synthetic inputs do not declare (tests/test_sizes.py draws it)
    drawn = sorted(f"figures/{name}.png" for name in FIGURES if name != "size_curve")
    assert sorted(image["src"] for image in images) == drawn
    assert all(image["width"] > 0 and image["height"] > 0 for image in images), images


def test_a_missing_figure_is_caught(chromium, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_report_bundle(synthetic_inputs(), ReportPaths.under("report"))
    (tmp_path / "report/figures/forest_contrasts.png").write_bytes(b"not a png")
    broken = [i for i in loaded_images(chromium, tmp_path / "report/index.html") if i["width"] == 0]
    assert [i["src"] for i in broken] == ["figures/forest_contrasts.png"]


def test_the_decisive_questions_open_from_disk_with_their_texts(chromium, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_report_bundle(synthetic_inputs(), ReportPaths.under("report"))
    shown = chromium.open(tmp_path / "report/index.html").evaluate(DECISIVE_OF_PAGE)
    # one contrast, two wins and two losses (decisive_testing's cell): closed until clicked, no script
    assert shown["details"] == 1 + 4 and shown["closed"] and not shown["visibleClosed"] and shown["visibleOpen"]
    assert shown["summaries"][1].startswith("Win 1 · Δ +0.500 · q1 (factoid): Where is <b>q1</b>'s evidence?")
    assert shown["bold"] == 0  # the question's markup is text, never markup
    for text in ("Evidence: 1c02 abc", "[Doc d1 > Section 0]", "d1c02 abc.", "first evidence · relevant: 80%"):
        assert text in shown["text"], text


SUMMARY = re.compile(
    r"^structbench report: results/report/index\.html \(Markdown: results/report/report\.md\); "
    r"4 cells \(1 corpus × 4 conditions × 1 embedder × 1 reranker\); (\d+) tables and (\d+) figures written, "
    r"(\d+) tables and (\d+) figures? omitted \(reasons in the report\); served from cache: (\d+) of (\d+) embedded "
    # the gold arm alone leaves the default's other contrasts out, and the summary says which
    r"texts, no LLM requests; not run: \d+ declared contrasts \(C1 \(missing A3, A1\), .*\)$",
    re.M,
)
# The default config's gold arm (G2, G3, G4 on the KB: conftest.kb_config) plus fixed windows on gold (F0) has
# no LLM step: these have no input.
OMITTED_BY_DEFAULT = {
    "induction": "no induced structure in this config",
    "situating_contexts": "no situating-context prefix in this config",
    "llm_calls": "no LLM step in this config",
    "query_generation": "no corpus with queries: generated in this config",
    # G2 and G3 are two depths: a contrast, not a slope (a dose-response needs three levels).
    "dose_response": "no dose-response contrast and no three or more conditions that differ only in "
    "heading-path depth in this config",
    "size_curve": "no size curve (a contrast with sizes) in this config",
    "span_rules": "no span metric is scored under Chroma's sum rule (metrics.extra: span_IoU_sum@k, "
    "span_precision_sum@k)",
}


@pytest.mark.workflow
def test_default_run_writes_the_report_and_both_html_reports_show_every_figure(chromium, tmp_path, request):
    # The run: conftest's session run of the gold arm with F0 from a fresh cache (test_workflow reads it too),
    # asked for once the browser is there (a session fixture named in the signature would run before the skip).
    gold_run = request.getfixturevalue("gold_run")
    workdir, config, result = gold_run.workdir, gold_run.config, gold_run.result
    summary = SUMMARY.search(result.stdout)
    assert summary, result.stdout[-2000:]
    assert (workdir / "results/report/summary.txt").read_text().strip() == summary.group(0)
    tables, figures, omitted_tables, omitted_figures, from_cache, texts = map(int, summary.groups())
    assert (tables + omitted_tables, figures + omitted_figures) == (len(TABLES), len(FIGURES))
    assert texts == 35 + 89 + 90 + 90 and 0 <= from_cache < texts  # queries + F0, G2, G3 (G4 ranks G3's), fresh cache

    report = workdir / "results/report"
    manifest = json.loads((report / "manifest.json").read_text())
    omitted = {item["name"]: item["reason"] for item in manifest["tables"] + manifest["figures"] if not item["written"]}
    assert omitted == OMITTED_BY_DEFAULT
    for item in manifest["tables"] + manifest["figures"]:
        for path in item.get("files", []):
            assert (workdir / path).stat().st_size > 0, path
    written_figures = sorted(item["name"] for item in manifest["figures"] if item["written"])
    # G4 is routed: section recall is drawn too; two depths draw no dose-response (test_figures draws it)
    assert written_figures == sorted(set(FIGURES) - {"dose_response", "size_curve"})

    # The report again, from the same inputs: the same bytes, figures included (so the shared run is left as
    # it was).
    before = {p: p.read_bytes() for p in sorted(report.rglob("*")) if p.is_file()}
    again = run_snakemake(workdir, "--cores", "2", "--configfile", str(config), "--forcerun", "report")
    assert again.returncode == 0, again.stderr[-4000:]
    assert re.search(r"^report\s+1$", again.stdout + again.stderr, re.M) and SUMMARY.search(again.stdout)
    assert {p: p.read_bytes() for p in sorted(report.rglob("*")) if p.is_file()} == before

    images = loaded_images(chromium, report / "index.html")
    assert sorted(Path(i["src"]).stem for i in images) == written_figures
    assert all(i["width"] > 0 and i["height"] > 0 for i in images), images

    bundled = run_snakemake(workdir, "--configfile", str(config), "--report", str(tmp_path / "report.html"))
    assert bundled.returncode == 0, bundled.stderr[-4000:]
    pngs = chromium.open(tmp_path / "report.html").evaluate(PNG_RESULTS_OF_SNAKEMAKE_REPORT)
    assert sorted(Path(png["name"]).stem for png in pngs) == written_figures
    assert all(png["width"] > 0 and png["height"] > 0 for png in pngs), pngs
    captions = {Path(png["name"]).stem: png["caption"] for png in pngs}
    assert (
        "Holm-significant" in captions["forest_contrasts"]
        and "tables/table1_contrasts.csv" in captions["forest_contrasts"]
    )


def decisive_choice(scores: dict[str, pl.DataFrame], treatment: str, control: str, per_side: int) -> list[tuple]:
    """The wins and losses recomputed from two conditions' per-query scores: (outcome, qid, delta), the largest
    per side, equal deltas by qid."""
    metric = "cov_nDCG@10"
    paired = (
        scores[treatment]
        .select("qid", pl.col(metric).alias("t"))
        .join(scores[control].select("qid", pl.col(metric).alias("c")), on="qid")
        .filter(pl.col("t").is_not_nan() & pl.col("c").is_not_nan())
        .with_columns(delta=pl.col("t") - pl.col("c"))
    )
    wins = sorted((-d, q) for q, d in paired.select("qid", "delta").rows() if d > 0)[:per_side]
    losses = sorted((d, q) for q, d in paired.select("qid", "delta").rows() if d < 0)[:per_side]
    return [("win", q, -d) for d, q in wins] + [("loss", q, d) for d, q in losses]


@pytest.mark.workflow
def test_the_default_run_shows_its_decisive_questions_and_any_question(chromium, request, capsys):
    gold_run = request.getfixturevalue("gold_run")
    workdir, config = gold_run.workdir, gold_run.config
    report = workdir / "results/report"
    questions = pl.read_parquet(report / "tables/decisive_questions.parquet")
    scores = {
        path.stem: pl.read_parquet(path)
        for path in sorted((workdir / "results/kb/scores/minilm/none").glob("*.parquet"))
    }
    study = run_study([config], REPO, str(workdir / "results"))
    contrasts = study.decisive_contrasts()
    assert {spec["name"] for spec in contrasts} == {"G3-G2", "G4-G3", "G3-F0"}
    assert sorted(questions["contrast"].unique().to_list()) == sorted(spec["name"] for spec in contrasts)
    for spec in contrasts:
        rows = questions.filter(pl.col("contrast") == spec["name"])
        shown = rows.select("outcome", "qid", "delta").unique(maintain_order=True).rows()
        assert shown == decisive_choice(scores, spec["treatment"], spec["control"], 5), spec["name"]
        # bounded: per_side × 2 sides × 2 arms × top_k chunk rows at most, excerpts capped
        assert rows.height <= 5 * 2 * 2 * 5 and rows["content"].str.len_chars().max() <= 300

    # the counts above the questions are Table 1's: the same pairs
    flips = pl.read_parquet(workdir / "results/kb/diagnostics/minilm/none/decisive_flips.parquet")
    table1 = pl.read_parquet(workdir / "results/contrasts/kb/minilm/none/contrasts.parquet")
    counts = ["contrast", "n_queries", "wins", "ties", "losses"]
    primary = table1.filter(pl.col("metric") == "cov_nDCG@10")
    assert flips.select(counts).sort("contrast").equals(primary.select(counts).sort("contrast"))

    page = chromium.open(report / "index.html").evaluate(DECISIVE_OF_PAGE)
    assert page["details"] == len(contrasts) + questions.select("contrast", "qid").unique().height
    assert page["closed"] and not page["visibleClosed"] and page["visibleOpen"]
    first = questions.row(0, named=True)
    for text in (first["question"], first["evidence"], first["content"]):
        assert " ".join(text.split()) in " ".join(page["text"].split()), text

    # structbench show: the same question, the same rankings and first-evidence ranks as the report's rows
    where = ["--configfile", str(config), "--results", str(workdir / "results"), "--workflow", str(REPO)]
    arguments = [first["qid"], first["treatment"], "--against", first["control"], "--top-k", "5", "--json"]
    assert main(["show", *arguments, *where]) == 0
    view = json.loads(capsys.readouterr().out)
    rows = questions.filter((pl.col("contrast") == first["contrast"]) & (pl.col("qid") == first["qid"]))
    for ranking, arm in zip(view["rankings"], ("treatment", "control")):
        assert [chunk["chunk_id"] for chunk in ranking["chunks"]] == rows.filter(pl.col("arm") == arm)[
            "chunk_id"
        ].to_list()
        assert ranking["first_evidence"] == first[f"first_evidence_{arm}"]
    assert main(["show", "kb-999", "G3", *where]) == 2
    assert "question 'kb-999' is not a scored question of corpus kb" in capsys.readouterr().err
    assert main(["show", first["qid"], "G5", *where]) == 2
    error = capsys.readouterr().err
    assert "condition 'G5' is not in this run" in error and all(f"'{name}'" in error for name in ("G2", "G3", "F0"))
