"""The run's artifact keys (structbench.artifacts.keys), on hand-written conditions: which chunk sets a run builds,
which are size-matched and to what, which text sets are embedded, which inducers and chunkers run."""

from structbench.artifacts import keys
from structbench.conditions import parse_conditions
from structbench.defaults import T_MAX, T_MIN

CHUNKING = {"t_max": T_MAX, "t_min": T_MIN}
CHUNKERS = {"lc": {"library": "langchain", "kind": "recursive", "size_match": False}}
CHUNKERS["lc_matched"] = {**CHUNKERS["lc"], "size_match": True}


def conditions(**entries):
    flat = {"structure": "gold", "prefix": "none", "retrieval": "flat"}
    return parse_conditions({name: flat | entry for name, entry in entries.items()}, CHUNKING, CHUNKERS).values()


def test_size_matched_follows_the_boundaries_kind_and_the_chunkers_entry():
    parsed = conditions(
        G2={"boundaries": "structural"},
        F0={"boundaries": "fixed"},
        F0o={"boundaries": "fixed_overlap:0.5"},
        LC={"boundaries": "external:lc"},
        LCm={"boundaries": "external:lc_matched"},
        S2={"boundaries": "semantic"},
    )
    assert {c.name: keys.size_matched(c, CHUNKERS) for c in parsed} == {
        "G2": False,
        "F0": True,
        "F0o": True,
        "LC": False,
        "LCm": True,
        "S2": False,
    }
    assert keys.matched_chunk_sets(parsed, CHUNKERS) == [
        ("external-lc_matched/gold", "chunker"),
        ("fixed/gold", "size_match"),
        ("fixed_overlap-0.5/gold", "size_match"),
    ]
    assert keys.semantic_chunk_sets(parsed) == ["semantic/gold"]
    assert keys.external_chunkers(parsed) == ["lc", "lc_matched"]


def test_a_sized_fixed_set_brings_the_structural_set_of_its_own_size():
    # F0-200 alone: its windows are matched to structural chunks at t_max 200, which no condition ranks
    parsed = conditions(F0_200={"boundaries": "fixed", "t_max": 200}, G2={"boundaries": "structural"})
    assert [keys.size_reference(c) for c in parsed] == ["structural-t200/gold", "structural/gold"]
    assert keys.used_chunk_sets(parsed) == ["fixed-t200/gold", "structural/gold"]
    assert keys.chunk_sets(parsed, CHUNKERS) == ["fixed-t200/gold", "structural-t200/gold", "structural/gold"]


def test_text_sets_embedders_inducers_and_contexts():
    parsed = conditions(
        G2={"boundaries": "structural"},
        G3={"boundaries": "structural", "prefix": "path:3"},
        B2={"boundaries": "structural", "retrieval": "bm25"},
        M2={"boundaries": "structural", "structure": "induced:tiling"},
        I4={"boundaries": "structural", "structure": "induced:llm", "prefix": "context"},
        GL={"boundaries": "structural", "prefix": "late"},
    )
    assert keys.text_sets(parsed) == [
        "structural/gold/late",
        "structural/gold/none",
        "structural/gold/path-3",
        "structural/induced-llm/context",
        "structural/induced-tiling/none",
    ]
    # B2 ranks structural/gold/none by BM25, but G2 embeds that text set: only a set no dense condition uses is
    # left out
    assert keys.embedded_text_sets(parsed) == keys.text_sets(parsed)
    assert keys.embedded_text_sets(conditions(B2={"boundaries": "structural", "retrieval": "bm25"})) == []
    assert keys.used_inducers(parsed) == ["llm", "tiling"]
    assert keys.context_chunk_sets(parsed) == ["structural/induced-llm"]
    assert keys.used_chunk_sets(parsed) == ["structural/gold", "structural/induced-llm", "structural/induced-tiling"]


def test_prefixed_bm25_conditions_key_a_bm25_run_per_text_set_and_embed_nothing():
    parsed = conditions(
        B2={"boundaries": "structural", "retrieval": "bm25"},
        B3={"boundaries": "structural", "prefix": "path:3", "retrieval": "bm25"},
        B3b={"boundaries": "structural", "prefix": "path:3", "retrieval": "bm25"},
        BC={"boundaries": "fixed", "prefix": "context", "retrieval": "bm25"},
        G3={"boundaries": "structural", "prefix": "path:3"},
    )
    # one run per text set (B3 and B3b share theirs); B2's is the chunk set's own run, keyed by the chunk set
    assert keys.prefixed_lexical_text_sets(parsed) == ["fixed/gold/context", "structural/gold/path-3"]
    # G3 embeds structural/gold/path-3; the context text set only BM25 ranks is rendered, never embedded
    assert keys.text_sets(parsed) == ["fixed/gold/context", "structural/gold/none", "structural/gold/path-3"]
    assert keys.embedded_text_sets(parsed) == ["structural/gold/path-3"]
    assert keys.context_chunk_sets(parsed) == ["fixed/gold"]
