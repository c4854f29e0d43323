"""Titles read by retrieval are held to the chunk prefixes' budget (structbench.prefixes.budget): TOC routing's
contents and title vectors (structbench.retrieval.routing.section_units, .toc) and the title chain
``query_titles:<d>`` puts before a query (structbench.retrieval.rescoring.title_blocks), at half of the
condition's own ``t_max`` (structbench.plan.study.Study.title_budget), shortened by the one rule that keeps the leaf.

The hand-worked case: a document title of 1,000 characters, "revenue growth" repeated (134 tokens of the
default tokenizer), over a section "Methods", at ``t_max`` 40, so a budget of 20 tokens. The TOC entry
renders "Document > Section": the separator " > " takes 1 token and each of the two elements' ellipsis marks
1, which leaves 17 tokens for the titles; "Methods" (1 token) stays whole and the document title keeps its
first 16 tokens, "revenue growth" eight times, then "…": 16 + 1 + 1 + 1 = 19 tokens."""

import copy

import numpy as np
import polars as pl
import yaml
from conftest import REPO
from llm_testing import ScriptedBackend

from structbench.datamodel import CHUNKS, QUERIES, SECTIONS
from structbench.llm import LLM, LLMSpec
from structbench.plan.study import start_up
from structbench.retrieval.rescoring import title_blocks
from structbench.retrieval.routing import section_units
from structbench.retrieval.toc import route_toc
from structbench.tokens import load_tokenizer

LONG = ("revenue growth " * 67)[:1000].strip()  # 1,000 characters
BUDGET = 40 // 2
CUT_ROOT = " ".join(["revenue growth"] * 8) + "…"
# doc a: lead [0,100) under the long title, Methods [102,200) with subsection Setup [202,300)
SECTIONS_TABLE = pl.DataFrame(
    [
        ("a", 0, "", 1, [LONG], 0, 1, 0, 100, 0),
        ("a", 1, "Methods", 1, [LONG, "Methods"], 1, 2, 102, 200, 1),
        ("a", 2, "Setup", 2, [LONG, "Methods", "Setup"], 2, 3, 202, 300, 1),
    ],
    schema=SECTIONS,
    orient="row",
)
CHUNKS_TABLE = pl.DataFrame(
    [
        (0, "a", 0, 100, 20, 0, [LONG], "section"),
        (1, "a", 102, 200, 20, 1, [LONG, "Methods"], "section"),
        (2, "a", 202, 300, 20, 2, [LONG, "Methods", "Setup"], "end"),
    ],
    schema=CHUNKS,
    orient="row",
)


def test_the_hand_worked_toc_entry_keeps_its_leaf_within_half_of_t_max():
    tokenizer = load_tokenizer()
    assert (len(LONG), tokenizer.count(LONG)) == (1000, 134)
    titles = section_units(SECTIONS_TABLE, max_title_tokens=BUDGET, tokenizer=tokenizer)["title"].to_list()
    assert titles[1] == f"{CUT_ROOT} > Methods"
    assert tokenizer.count(titles[1]) == 19
    assert titles[0].startswith("revenue growth") and titles[0].endswith("…")
    assert all(tokenizer.count(title) <= BUDGET for title in titles)
    # without a budget the titles are the whole paths, as before
    assert section_units(SECTIONS_TABLE)["title"].to_list() == [LONG, f"{LONG} > Methods"]


def test_the_toc_prompt_carries_the_bounded_titles():
    backend = ScriptedBackend(lambda request: '{"section": 2}')
    llm = LLM(backend, LLMSpec("transformers", "scripted"))
    queries = pl.DataFrame(
        [("q1", "c", "a", "How was it measured?", "factoid", [[102, 150]], "{}")], schema=QUERIES, orient="row"
    )
    vectors = np.eye(3, dtype=np.float32)
    routing = route_toc(
        vectors,
        vectors[1:2],
        queries,
        chunks=CHUNKS_TABLE,
        sections=SECTIONS_TABLE,
        title_vectors=np.eye(2, 3, dtype=np.float32),
        llm=llm,
        candidate_hits=3,
        max_title_tokens=BUDGET,
    )
    contents = backend.requests[0].messages[-1][1]
    assert f"2. {CUT_ROOT} > Methods" in contents and LONG not in contents
    assert routing["top_section_id"].to_list() == [1]


def test_query_side_title_chains_are_bounded_like_path_prefixes_and_keep_the_leaf():
    tokenizer = load_tokenizer()
    blocks = title_blocks(CHUNKS_TABLE, depth=3, max_tokens=BUDGET, tokenizer=tokenizer)
    assert all(tokenizer.count(block) <= BUDGET for block in blocks.values())
    assert blocks[2].startswith("[revenue growth") and blocks[2].endswith(" > Methods > Setup]\n\n")
    assert blocks[1].endswith(" > Methods]\n\n")
    # unbounded: the whole chain, as a path:3 prefix without a budget renders it
    assert title_blocks(CHUNKS_TABLE, depth=3)[2] == f"[{LONG} > Methods > Setup]\n\n"


def test_the_title_budget_is_half_of_the_conditions_own_t_max():
    config = copy.deepcopy(yaml.safe_load((REPO / "config/config.yaml").read_text()))
    config["retrieval"] = {"toc_llm": "smollm2"}
    axes = {"boundaries": "structural", "structure": "gold", "prefix": "none"}
    config["conditions"] = {
        "T": axes | {"retrieval": "toc", "t_max": 40, "t_min": 30},
        "T2": axes | {"retrieval": "toc", "t_max": 120},
        "Q": axes | {"retrieval": "query_titles:3"},
    }
    config["contrasts"], config["subgroups"] = {}, {}
    study = start_up(config, REPO / "workflow/schemas/config.schema.yaml").study
    run_t_max = config["chunking"]["t_max"]
    assert (study.title_budget("T"), study.title_budget("T2"), study.title_budget("Q")) == (20, 60, run_t_max // 2)
    assert study.structure_title_budget("gold") == 20  # the smallest of the TOC conditions reading its titles
    # every path passes the budget: the TOC router, the query-side titles, the title vectors
    rules = {name: (REPO / "rules" / name).read_text() for name in ("retrieve.smk", "embed.smk")}
    assert rules["retrieve.smk"].count("max_title_tokens=title_budget") == 2
    assert "max_title_tokens=structure_title_budget" in rules["embed.smk"]
