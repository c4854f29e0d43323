"""Read-time structure (docs/method.md §18): hand-worked expansions, merges, windows and the placebo tree."""

from __future__ import annotations

import pytest

from structbench.retrieval import readtime as rt

# One 100-character document, sections (start, level):
#   A   level 1 at 0   (its own intro 0-10)
#   A.1 level 2 at 10, A.2 level 2 at 30
#   B   level 1 at 50  (no subsections)
#   C   level 1 at 80  (its own intro 80-90), C.1 level 2 at 90
N = 100
CUTS = rt.section_cuts([0, 10, 30, 50, 80, 90], [1, 2, 2, 1, 1, 2], N, max_level=3)
TREES = {"d": (CUTS, N)}


def test_level_partition_nests_and_tiles():
    assert CUTS[0] == (0, 50, 80)
    assert CUTS[1] == (0, 10, 30, 50, 80, 90)
    assert CUTS[2] == CUTS[1]  # no level-3 sections: level 3 is level 2
    assert rt.blocks(CUTS[0], N) == [(0, 50), (50, 80), (80, 100)]
    # a section at offset 0 or at the end adds no cut; an empty section's cut is its successor's
    assert rt.section_cuts([0, 40, 40, 100], [1, 1, 2, 1], N, max_level=2) == ((0, 40), (0, 40))


def test_parent_nested_sections():
    # a hit inside A.2 (level 2): parent:1 is all of A with its subsections, parent:2 is A.2 itself
    assert rt.expand_parent([("d", 35, 40)], TREES, 1) == [("d", 0, 50)]
    assert rt.expand_parent([("d", 35, 40)], TREES, 2) == [("d", 30, 50)]
    # a hit in C's intro at level 2 is the intro block (80-90), not C.1
    assert rt.expand_parent([("d", 82, 86)], TREES, 2) == [("d", 80, 90)]


def test_parent_hit_spanning_two_sections_and_duplicates():
    # a hit across A.1/A.2 returns both level-2 blocks as one span; a later hit inside A.2 is a duplicate
    # (dropped); a hit in B stays its own unit; a hit in A.1 afterwards is inside the first span too
    hits = [("d", 25, 35), ("d", 40, 45), ("d", 60, 70), ("d", 12, 14)]
    assert rt.expand_parent(hits, TREES, 2) == [("d", 10, 50), ("d", 50, 80)]


def test_parent_overlapping_hits_join_the_earlier_rank():
    # rank 1 in A.2, rank 2 spans A.1/A.2 (its parent span 10-50 overlaps rank 1's 30-50): they join at rank 1
    assert rt.expand_parent([("d", 35, 40), ("d", 20, 32), ("d", 55, 60)], TREES, 2) == [
        ("d", 10, 50),
        ("d", 50, 80),
    ]


def test_parent_keeps_other_documents_apart():
    trees = TREES | {"e": (rt.section_cuts([0, 20], [1, 1], 40), 40)}
    assert rt.expand_parent([("e", 25, 30), ("d", 55, 60), ("e", 0, 5)], trees, 1) == [
        ("e", 20, 40),
        ("d", 50, 80),
        ("e", 0, 20),
    ]


def test_merge_ranked_chains_and_touching():
    # rank 3 bridges ranks 1 and 2: all three become one span at rank 1
    assert rt.merge_ranked([("d", 0, 10), ("d", 20, 30), ("d", 8, 22)]) == [("d", 0, 30)]
    # adjacent spans stay apart unless touching is asked for (windows)
    assert rt.merge_ranked([("d", 0, 10), ("d", 10, 20)]) == [("d", 0, 10), ("d", 10, 20)]
    assert rt.merge_ranked([("d", 0, 10), ("d", 10, 20)], touching=True) == [("d", 0, 20)]
    assert rt.merge_ranked([("d", 0, 10), ("e", 0, 10)], touching=True) == [("d", 0, 10), ("e", 0, 10)]


# Chunks of the document: two in A.1 (10-20, 20-30), two in A.2 (30-40, 40-50), three in B, two in C
CHUNKS = [(0, 10), (10, 20), (20, 30), (30, 40), (40, 50), (50, 60), (60, 70), (70, 80), (80, 90), (90, 100)]


def test_automerge_bottom_up():
    # hits: both chunks of A.2 and one of A.1. Level 2: A.2 (2/2) merges at rank 1; A.1 (1/2 = 0.5) merges
    # at 0.5 too. Level 1: A holds 5 chunks, of which 4 are now retrieved (A.1 and A.2 merged) -> 4/5 >= 0.5.
    hits = {3: 1, 4: 3, 1: 2}
    assert rt.automerge_document(CHUNKS, hits, CUTS, N, 0.5) == [(0, 50, 1)]
    # at 0.6, A.1 (1/2) stays a chunk; A.2 merges; A: chunks retrieved = A.2's two + chunk 1 = 3/5 = 0.6 merges
    assert rt.automerge_document(CHUNKS, hits, CUTS, N, 0.6) == [(0, 50, 1)]
    # at 0.8: A.2 merges (2/2); A has 3/5 < 0.8, so A.1's hit stays a chunk
    assert rt.automerge_document(CHUNKS, hits, CUTS, N, 0.8) == [(30, 50, 1), (10, 20, 2)]


def test_automerge_counts_merged_children_whole():
    # one hit per A.1 and A.2 chunk pair: at 0.5 both level-2 blocks merge, so A counts 4 of 5 chunks
    # retrieved (bottom-up); read top-down, A would hold only 2 hits of 5 and stay split
    assert rt.automerge_document(CHUNKS, {1: 1, 3: 2}, CUTS, N, 0.5) == [(0, 50, 1)]
    assert rt.automerge_document(CHUNKS, {1: 1, 3: 2}, CUTS, N, 0.9) == [(10, 20, 1), (30, 40, 2)]


def test_automerge_block_with_one_chunk_and_other_documents():
    # B (50-80) holds three chunks; two hits of three at 0.6 merge it; C untouched
    assert rt.automerge_document(CHUNKS, {5: 2, 6: 1, 9: 3}, CUTS, N, 0.6) == [(50, 80, 1), (90, 100, 3)]
    # a hit in a block of one chunk (C.1 at level 2) merges into the block: the same span, not duplicated
    assert rt.automerge_document(CHUNKS, {9: 1}, CUTS, N, 0.5) == [(80, 100, 1)]
    spans = rt.expand_automerge(
        [("d", 6), ("e", 0), ("d", 5)], {"d": CHUNKS, "e": [(0, 5), (5, 10)]}, TREES | {"e": (((0,),), 10)}, 0.6
    )
    assert spans == [("d", 50, 80), ("e", 0, 5)]


def test_window_grows_and_merges_where_touching():
    starts = list(range(0, 100, 5))  # a token every 5 characters: 20 tokens
    n_chars = {"d": 100}
    # hit 40-45 is one token; window 5 adds 2 left and 2 right -> 30-55
    assert rt.window_span(starts, 100, 40, 45, 5) == (30, 55)
    # 4 missing: even split; 3 missing: the odd one to the right
    assert rt.window_span(starts, 100, 40, 45, 4) == (35, 55)
    # at the left edge the left share goes right
    assert rt.window_span(starts, 100, 0, 5, 5) == (0, 25)
    assert rt.window_span(starts, 100, 95, 100, 3) == (85, 100)
    # a hit already long enough is kept; 0 keeps every hit as it is
    assert rt.window_span(starts, 100, 10, 40, 3) == (10, 40)
    # windows 30-55 and 55-80 touch: one span at rank 1
    assert rt.expand_window([("d", 40, 45), ("d", 65, 70)], {"d": starts}, n_chars, 5) == [("d", 30, 80)]
    assert rt.expand_window([("d", 40, 45), ("d", 65, 70)], {"d": starts}, n_chars, 3) == [
        ("d", 35, 50),
        ("d", 60, 75),
    ]


def test_matched_window_returns_the_parent_amount():
    starts = {"d": list(range(0, 100, 5))}
    hits = [("d", 40, 45), ("d", 85, 90)]
    parent = rt.expand_parent(hits, TREES, 1)  # 40-45 lies in A (0-50), 85-90 in C (80-100)
    assert parent == [("d", 0, 50), ("d", 80, 100)]
    target = rt.span_tokens(parent, starts)  # 10 + 4 = 14 tokens
    assert target == 14
    matched = rt.expand_matched_window(hits, starts, {"d": 100}, target)
    assert rt.span_tokens(matched, starts) <= target
    # one token more per window would pass the target: the window is the largest that fits
    wider = rt.expand_window(hits, starts, {"d": 100}, 8)
    assert rt.span_tokens(matched, starts) == 14 and rt.span_tokens(wider, starts) > 14
    # 7 tokens each: 3 + 1 + 3 around token 8; around token 17 the right edge gives its share to the left
    assert matched == [("d", 25, 60), ("d", 65, 100)]


def test_largest_fitting_steps_down_when_the_estimate_undercounts():
    def build(size):
        return [("d", 0, 5 * size)]

    def estimate(spans):  # one token per 5 characters
        return sum((end - start) // 5 for _, start, end in spans)

    def count(spans):  # the recorded count: one token more (a span cut inside a word)
        return estimate(spans) + 1

    # the search on the estimate stops at size 10 (10 tokens); counted, that is 11 > 10: one size down
    assert rt.largest_fitting(build, 10, 40, estimate) == [("d", 0, 50)]
    assert rt.largest_fitting(build, 10, 40, count, estimate) == [("d", 0, 45)]
    assert rt.largest_fitting(build, 0, 40, count, estimate) == [("d", 0, 0)]  # nothing fits: size 0


def test_matched_window_is_counted_as_the_units_table_counts():
    # words of 10 characters, two tokens each (a piece at 0 and one at 5): a span starting at a piece
    # re-tokenizes to one token more than the token starts inside it
    starts = {"d": list(range(0, 100, 5))}

    def count(spans):
        return rt.span_tokens(spans, starts) + sum(start % 10 != 0 for _, start, _ in spans)

    hits = [("d", 40, 50)]
    # target 5: window 5 is 35-60 (5 token starts) but counts 6; window 4 is 35-55, counted 4 + 1 = 5
    assert rt.expand_matched_window(hits, starts, {"d": 100}, 5) == [("d", 35, 60)]
    assert rt.expand_matched_window(hits, starts, {"d": 100}, 5, count) == [("d", 35, 55)]


def test_window_in_block_stops_at_the_block_edges():
    starts = list(range(0, 100, 5))
    # hit 40-45 in block 30-50 grown to 6 tokens: 2 left, 3 right would pass 50; the right share goes left
    assert rt.window_in_block(starts, (30, 50), 40, 45, 6) == (30, 50)
    assert rt.window_in_block(starts, (30, 50), 40, 45, 3) == (35, 50)
    assert rt.window_in_block(starts, (30, 50), 40, 45, 99) == (30, 50)  # the whole block
    assert rt.window_in_block(starts, (30, 50), 30, 50, 2) == (30, 50)  # a hit longer than the window: kept


def test_matched_placebo_cut_to_the_parent_tokens_inside_its_blocks():
    starts = {"d": list(range(0, 100, 5))}
    placebo = {"d": (rt.section_cuts([0, 30, 60], [1, 1, 1], N, max_level=1), N)}  # blocks 0-30, 30-60, 60-100
    hits = [("d", 40, 45), ("d", 90, 95)]
    assert rt.expand_parent(hits, placebo, 1) == [("d", 30, 60), ("d", 60, 100)]  # 6 + 8 = 14 tokens
    # within the target: the placebo parent unchanged
    assert rt.expand_matched_placebo(hits, placebo, 1, starts, 14) == [("d", 30, 60), ("d", 60, 100)]
    # target 8: windows of 4 tokens, 1 left and 2 right of 40-45 (35-55), 1 left and 2 right of 90-95,
    # whose right share is stopped at 100 and goes left (80-100): the two windows never cross 60
    matched = rt.expand_matched_placebo(hits, placebo, 1, starts, 8)
    assert matched == [("d", 35, 55), ("d", 80, 100)] and rt.span_tokens(matched, starts) == 8


def test_placebo_tree_same_lengths_nesting_and_no_real_block():
    # A (0-45: intro 0-7, A.1 7-20, A.2 20-45), B (45-71: intro, B.1 52-71), C (71-100: intro, C.1 83-100)
    cuts = rt.section_cuts([0, 7, 20, 45, 52, 71, 83], [1, 2, 2, 1, 2, 1, 2], N, max_level=3)
    placebo, equal = rt.placebo_cuts(cuts, N, "d", seed=7)
    assert equal == 0
    real_blocks = {span for level in cuts for span in rt.blocks(level, N)}
    for real_level, fake_level in zip(cuts, placebo):
        real_lengths = sorted(e - s for s, e in rt.blocks(real_level, N))
        fake = rt.blocks(fake_level, N)
        assert sorted(e - s for s, e in fake) == real_lengths  # same section lengths at every level
        assert fake[0][0] == 0 and fake[-1][1] == N  # it tiles the document
    for coarse, fine in zip(placebo, placebo[1:]):
        assert set(coarse) <= set(fine)  # still nested
    # every placebo level-2 block lies inside one placebo level-1 block of the right length group
    for start, end in rt.blocks(placebo[1], N):
        parent = rt.block_at(placebo[0], N, start)
        assert parent[0] <= start and end <= parent[1]
    placebo_blocks = {span for level in placebo for span in rt.blocks(level, N)}
    assert not placebo_blocks & real_blocks  # no section equal to a real one, at any level
    # seeded: the same seed and document give the same tree
    assert rt.placebo_cuts(cuts, N, "d", seed=7) == (placebo, 0)
    assert len({rt.placebo_cuts(cuts, N, "d", seed=s)[0] for s in range(6)}) > 1


def test_placebo_reports_blocks_it_cannot_move():
    # CUTS: C's two level-2 blocks have one length (10), and any order of A, B, C ends in a block of
    # 10 or 20 characters at 90 or 80, both real blocks: at least one equal block is unavoidable
    placebo, equal = rt.placebo_cuts(CUTS, N, "d", seed=7)
    real_blocks = {span for level in CUTS for span in rt.blocks(level, N)}
    assert equal == len({span for level in placebo for span in rt.blocks(level, N)} & real_blocks) >= 1


def test_placebo_counts_what_it_cannot_avoid():
    # one section only: its block is the whole document in any order
    one = rt.section_cuts([0], [1], 50, max_level=2)
    assert rt.placebo_cuts(one, 50, "x", seed=1) == (one, 1)


@pytest.mark.parametrize("level", [1, 2])
def test_parent_spans_are_real_blocks(level):
    spans = rt.expand_parent([("d", s, e) for s, e in CHUNKS], TREES, level)
    assert sorted((s, e) for _, s, e in spans) == rt.blocks(CUTS[level - 1], N)
