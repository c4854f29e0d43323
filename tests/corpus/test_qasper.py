"""QASPER loader on the real files: layouts, section trees, evidence mapping, funnel, bad input."""

import io
import json
import tarfile
import time

import pytest
from conftest import SHARED_DATA

from structbench.corpus import load_corpus
from structbench.corpus.corpus_stats import corpus_statistics
from structbench.corpus.qasper import EvidenceMapper, load_qasper, map_question, parse_paper
from structbench.corpus.verify import verify_corpus

DATA = SHARED_DATA / "qasper"
DEV = DATA / "qasper-dev-v0.3.rebuilt.json"
TRAIN = DATA / "qasper-train-v0.3.rebuilt.json"
OFFICIAL10 = DATA / "sample-train10" / "qasper-train-first10.official-format.json"
HF10 = DATA / "sample-train10" / "qasper-original-sample.hf.json"

pytestmark = pytest.mark.skipif(not DEV.exists(), reason="shared QASPER data not present")


def _funnel(tables):
    return {(r["unit"], r["step"], r["reason"]): r["count"] for r in tables.funnel.to_dicts()}


@pytest.fixture(scope="module")
def dev():
    started = time.perf_counter()
    tables = load_qasper([DEV])
    return tables, time.perf_counter() - started


def test_dev_split_funnel_and_speed(dev):
    tables, seconds = dev
    assert seconds < 10
    funnel = _funnel(tables)
    assert funnel[("documents", "in", "")] == funnel[("documents", "out", "")] == 281
    assert funnel[("questions", "in", "")] == 1005
    dropped = {
        reason: funnel[("questions", "dropped", reason)]
        for reason in ("malformed_question", "unanswerable", "no_evidence", "float_only", "unmappable")
    }
    assert dropped == {
        "malformed_question": 0,
        "unanswerable": 60,
        "no_evidence": 18,
        "float_only": 35,
        "unmappable": 2,
    }
    assert funnel[("questions", "out", "")] == tables.queries.height == 1005 - sum(dropped.values()) == 890
    matched = {step: funnel[("evidence", "matched", step)] for step in ("exact", "fuzzy", "section")}
    assert matched == {"exact": 1782, "fuzzy": 5, "section": 93}
    stats = corpus_statistics(tables)
    assert stats["exact_span_share"] > 0.95
    assert 0.40 < stats["multi_span_share"] < 0.50  # Kuehlkamp et al. report 43.9% over all splits
    json.dumps(stats)


def test_dev_invariants_on_every_document(dev):
    tables, _ = dev
    assert verify_corpus(tables) == []
    raw = json.loads(DEV.read_text())
    texts = dict(zip(tables.documents["doc_id"], tables.documents["text"]))
    paragraphs = tables.paragraphs.sort("doc_id", "para_idx")
    for (doc_id,), group in paragraphs.group_by("doc_id", maintain_order=True):
        expected = parse_paper(doc_id, raw[doc_id]).paragraphs
        assert [texts[doc_id][s:e] for s, e in zip(group["start"], group["end"])] == expected
        record = raw[doc_id]
        source = [record["abstract"].strip()] * bool(record["abstract"].strip()) + [
            p.strip() for section in record["full_text"] for p in section["paragraphs"] if p.strip()
        ]
        assert expected == source  # every non-empty paragraph, in reading order, nothing else


def test_exact_spans_are_the_evidence_paragraphs(dev):
    tables, _ = dev
    raw = json.loads(DEV.read_text())
    texts = dict(zip(tables.documents["doc_id"], tables.documents["text"]))
    evidence = {}
    for paper in raw.values():
        for qa in paper["qas"]:
            evidence[qa["question_id"]] = {e.strip() for a in qa["answers"] for e in a["answer"]["evidence"]}
    checked = 0
    for row in tables.queries.head(200).iter_rows(named=True):
        steps = json.loads(row["meta"])["span_steps"]
        for (start, end), step in zip(row["spans"], steps):
            if step == "exact":
                assert texts[row["doc_id"]][start:end] in evidence[row["qid"]]
                checked += 1
    assert checked > 300


def test_section_tree_from_names():
    record = {
        "title": " A Paper ",
        "abstract": "The abstract.",
        "full_text": [
            {"section_name": "Intro", "paragraphs": ["Intro text.", "  ", ""]},
            {"section_name": None, "paragraphs": ["Lost heading text."]},
            {"section_name": "Method ::: Data ::: Filtering", "paragraphs": ["Filter text."]},
            {"section_name": "Method ::: Model", "paragraphs": ["Model text."]},
            {"section_name": "Method :::  ::: Details.", "paragraphs": ["Detail text."]},
            {"section_name": "Results ::: ", "paragraphs": ["Result text."]},
        ],
    }
    doc = parse_paper("p1", record)
    assert doc.title == "A Paper"
    assert doc.paragraphs == [
        "The abstract.",
        "Intro text.",
        "Lost heading text.",
        "Filter text.",
        "Model text.",
        "Detail text.",
        "Result text.",
    ]
    assert [(s.title, s.level, s.para_start, s.para_end) for s in doc.sections] == [
        ("Abstract", 1, 0, 1),
        ("Intro", 1, 1, 3),  # the untitled section continues Intro
        ("Method", 1, 3, 3),  # missing ancestors become empty sections
        ("Data", 2, 3, 3),
        ("Filtering", 3, 3, 4),
        ("Model", 2, 4, 5),
        ("Details.", 2, 5, 6),  # empty middle part dropped
        ("Results", 1, 6, 7),  # trailing empty part dropped
    ]


def test_untitled_first_section_without_abstract_is_a_lead():
    doc = parse_paper(
        "p",
        {
            "title": "T",
            "abstract": "",
            "full_text": [
                {"section_name": "", "paragraphs": ["1.1em"]},
                {"section_name": "Intro", "paragraphs": ["x"]},
            ],
        },
    )
    assert [(s.title, s.level) for s in doc.sections] == [("", 1), ("Intro", 1)]


def _mapper():
    doc = parse_paper(
        "p",
        {
            "title": "T",
            "abstract": "Abstract text.",
            "full_text": [
                {"section_name": "Baselines", "paragraphs": ["We compare against two strong baselines here."]},
                {"section_name": "Baselines ::: LSTM", "paragraphs": ["The LSTM baseline has two layers."]},
                {"section_name": "Empty Heading", "paragraphs": []},
                {"section_name": "Conclusion", "paragraphs": ["We conclude."]},
            ],
        },
    )
    return doc, EvidenceMapper(doc, 90)


def _question(*annotations):
    return {"question": "Q?", "question_id": "q1", "answers": [{"answer": a} for a in annotations]}


def test_evidence_cascade_and_drop_reasons():
    doc, mapper = _mapper()
    text = "\n\n".join(doc.paragraphs)
    answer = {"unanswerable": False, "extractive_spans": ["x"], "free_form_answer": "", "yes_no": None}
    outcome, fields, counts = map_question(
        _question(
            {**answer, "evidence": ["The LSTM baseline has two layers.", "FLOAT SELECTED: Table 1"]},
            {**answer, "evidence": ["We compare against two strong baselines  here", "Baselines ::: LSTM", "Nowhere"]},
            {"unanswerable": True, "evidence": []},
        ),
        mapper,
    )
    assert outcome == "out"
    meta = fields["meta"]
    # the section span (Baselines ::: LSTM) coincides with the exact paragraph span: one span, exact wins the tie
    assert [text[s:e] for s, e in fields["spans"]] == [
        "We compare against two strong baselines here.",
        "The LSTM baseline has two layers.",
    ]
    assert meta["span_steps"] == ["fuzzy", "exact"]
    assert counts["exact"] == 1 and counts["fuzzy"] == 1 and counts["section"] == 1 and counts["unmapped"] == 1
    assert meta["float_selected_dropped"] == 1 and meta["n_annotators"] == 3
    assert fields["qtype"] == "extractive"
    section_only = map_question(_question({**answer, "evidence": ["baselines"]}), mapper)[1]
    assert [text[s:e] for s, e in section_only["spans"]] == [
        "We compare against two strong baselines here.\n\nThe LSTM baseline has two layers."
    ]  # with subsections
    assert section_only["meta"]["span_steps"] == ["section"]
    assert map_question(_question({"unanswerable": True, "evidence": []}), mapper)[0] == "unanswerable"
    assert map_question(_question({**answer, "evidence": []}), mapper)[0] == "no_evidence"
    assert map_question(_question({**answer, "evidence": ["FLOAT SELECTED: Figure 2"]}), mapper)[0] == "float_only"
    assert map_question(_question({**answer, "evidence": ["Empty Heading", "zzz"]}), mapper)[0] == "unmappable"
    assert map_question({"question": "no id"}, mapper)[0] == "malformed_question"


def test_hf_layout_gives_the_same_tables_as_the_official_sample():
    official = load_qasper([OFFICIAL10])
    hf = load_qasper([HF10])
    assert verify_corpus(hf) == []
    for name in ("documents", "paragraphs", "sections"):
        left = getattr(official, name).drop("meta") if name == "documents" else getattr(official, name)
        right = getattr(hf, name).drop("meta") if name == "documents" else getattr(hf, name)
        assert left.equals(right), name
    assert official.queries.drop("meta").equals(hf.queries.drop("meta"))
    assert _funnel(official) == _funnel(hf)
    assert _funnel(hf)[("questions", "in", "")] == 51
    # the official sample keeps empty paragraphs; they are skipped
    raw = json.loads(OFFICIAL10.read_text())
    n_nonempty = sum(bool(p.strip()) for paper in raw.values() for s in paper["full_text"] for p in s["paragraphs"])
    n_abstracts = sum(bool(paper["abstract"].strip()) for paper in raw.values())
    assert official.paragraphs.height == n_nonempty + n_abstracts


def _tarball(path, members):
    with tarfile.open(path, "w:gz") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def test_release_tarball_splits_merge_and_duplicates_are_counted(tmp_path):
    sample = json.loads(OFFICIAL10.read_text())
    ids = list(sample)
    train = {paper_id: sample[paper_id] for paper_id in ids[:6]}
    dev = {paper_id: sample[paper_id] for paper_id in ids[5:]}  # ids[5] appears in both
    tarball = _tarball(
        tmp_path / "qasper-train-dev-v0.3.tgz",
        {
            "qasper-train-v0.3.json": json.dumps(train).encode(),
            "qasper-dev-v0.3.json": json.dumps(dev).encode(),
            "README.md": b"not json",
        },
    )
    tables = load_corpus({"kind": "qasper", "paths": [str(tarball)]})
    assert verify_corpus(tables) == []
    assert tables.documents.height == 10
    assert tables.skipped.to_dicts() == [
        {"source": f"{tarball}:qasper-train-v0.3.json", "record": ids[5], "reason": "duplicate_paper"}
    ]
    splits = {json.loads(m)["split"] for m in tables.documents["meta"]}
    assert splits == {"train", "dev"}
    only_dev = load_qasper([tarball], splits=["dev"])
    assert only_dev.documents["doc_id"].to_list() == ids[5:]
    assert load_qasper([OFFICIAL10]).queries.sort("qid").equals(tables.queries.sort("qid"))


def test_malformed_json_names_file_and_record(tmp_path):
    broken = tmp_path / "broken.hf.json"
    text = HF10.read_text()
    second = text.index('"id"', text.index('"id"') + 1)
    broken.write_text(text[:second] + "{{" + text[second:])
    with pytest.raises(ValueError, match=r"broken\.hf\.json: malformed JSON in record 1 at line \d+, column \d+"):
        load_qasper([broken])
    truncated = tmp_path / "truncated.json"
    truncated.write_text(DEV.read_text()[:5000])
    with pytest.raises(ValueError, match=r"truncated\.json: malformed JSON in record 0"):
        load_qasper([truncated])


def test_malformed_records_and_paperless_records_are_counted_skips(tmp_path):
    sample = json.loads(OFFICIAL10.read_text())
    first_id = next(iter(sample))
    data = {
        first_id: sample[first_id],
        "bad-1": {"title": "No full text"},
        "bad-2": {"title": 7, "abstract": "x", "full_text": []},
        "bad-3": "not an object",
        "empty-1": {
            "title": "Empty",
            "abstract": "  ",
            "full_text": [{"section_name": "A", "paragraphs": ["", " "]}],
            "qas": [{"question": "?", "question_id": "e1", "answers": []}],
        },
    }
    path = tmp_path / "mixed.json"
    path.write_text(json.dumps(data))
    tables = load_qasper([path])
    assert tables.documents["doc_id"].to_list() == [first_id]
    reasons = {r["record"]: r["reason"] for r in tables.skipped.to_dicts()}
    assert reasons["empty-1"] == "no_paragraphs"
    assert all(reasons[key].startswith("malformed_record") for key in ("bad-1", "bad-2", "bad-3"))
    funnel = _funnel(tables)
    assert funnel[("documents", "skipped", "malformed_record")] == 3
    assert funnel[("documents", "skipped", "no_paragraphs")] == 1


def test_questions_without_text_are_counted_drops(tmp_path):
    """A question whose text is empty, whitespace, only zero-width characters (which ``str.strip`` keeps)
    or null is never embedded: it is dropped as
    ``empty_question``, counted in the funnel and listed in the skipped table by its question id."""
    sample = json.loads(OFFICIAL10.read_text())
    paper_id = next(iter(sample))
    record = sample[paper_id]
    kept = [q for q in record["qas"] if map_question(q, EvidenceMapper(parse_paper(paper_id, record), 90))[0] == "out"]
    template = kept[0]
    blank = [
        {**template, "question_id": f"blank-{i}", "question": text}
        for i, text in enumerate(["", " \t\n", None, "\u200b\u200b", "\ufeff \u200d"])
    ]
    record = {**record, "qas": [*record["qas"], *blank]}
    path = tmp_path / "blank.json"
    path.write_text(json.dumps({paper_id: record}))
    tables = load_qasper([path])
    funnel = _funnel(tables)
    assert funnel[("questions", "dropped", "empty_question")] == 5
    assert funnel[("questions", "out", "")] == tables.queries.height == len(kept)
    assert not set(tables.queries["qid"].to_list()) & {f"blank-{i}" for i in range(5)}
    assert all(text.strip() for text in tables.queries["text"].to_list())
    reasons = {r["record"]: r["reason"] for r in tables.skipped.to_dicts()}
    assert {reasons[f"blank-{i}"] for i in range(5)} == {"empty_question"}
    assert "empty_question" not in {reason for unit, _, reason in _funnel(tables) if unit == "documents"}


def test_a_question_id_that_is_not_one_trec_field_and_a_nul_question_are_counted_drops(tmp_path):
    """A ``question_id`` that is empty or holds whitespace could not be one field of a TREC run line: the
    question is dropped as ``malformed_question`` and listed as ``question_id_not_one_field``, never scored
    (``structbench export`` would refuse the run at the end). A question of a NUL is 0 tokens: ``empty_question``."""
    sample = json.loads(OFFICIAL10.read_text())
    paper_id = next(iter(sample))
    record = sample[paper_id]
    kept = [q for q in record["qas"] if map_question(q, EvidenceMapper(parse_paper(paper_id, record), 90))[0] == "out"]
    spaced = [{**kept[0], "question_id": qid} for qid in ("q 1", "", "q\n2", "q\u20283")]
    nul = {**kept[0], "question_id": "nul", "question": "\x00\u0301"}
    path = tmp_path / "ids.json"
    path.write_text(json.dumps({paper_id: {**record, "qas": [*record["qas"], *spaced, nul]}}))
    tables = load_qasper([path])
    funnel = _funnel(tables)
    assert funnel[("questions", "dropped", "malformed_question")] == 4
    assert funnel[("questions", "dropped", "empty_question")] == 1
    assert tables.queries.height == len(kept) and verify_corpus(tables) == []
    reasons = sorted((r["record"], r["reason"]) for r in tables.skipped.to_dicts())
    assert reasons == [
        ("", "question_id_not_one_field"),
        ("nul", "empty_question"),
        ("q\n2", "question_id_not_one_field"),
        ("q 1", "question_id_not_one_field"),
        ("q\u20283", "question_id_not_one_field"),
    ]
    assert {unit for unit, _, reason in funnel if reason == "question_id_not_one_field"} == set()


def test_non_utf8_file_is_an_error(tmp_path):
    path = tmp_path / "latin.json"
    path.write_bytes(b'{"p": {"title": "Caf\xe9"}}')
    with pytest.raises(ValueError, match=r"latin\.json: not valid UTF-8 \(byte 20\)"):
        load_qasper([path])


def test_huge_paragraph_is_kept_and_mapped(tmp_path):
    big = ("Long evidence sentence about weirs. " * 30000).strip()
    assert len(big) > 1_000_000
    record = {
        "title": "Big",
        "abstract": "Short abstract.",
        "full_text": [{"section_name": "Body", "paragraphs": [big, "Tail paragraph."]}],
        "qas": [
            {
                "question": "?",
                "question_id": "b1",
                "answers": [
                    {"answer": {"unanswerable": False, "evidence": [big, "Tail paragraph"], "extractive_spans": ["x"]}}
                ],
            }
        ],
    }
    path = tmp_path / "big.json"
    path.write_text(json.dumps({"big": record}))
    tables = load_qasper([path])
    assert verify_corpus(tables) == []
    text = tables.documents["text"][0]
    spans = tables.queries["spans"][0]
    assert [text[s:e] for s, e in spans] == [big, "Tail paragraph."]
    assert json.loads(tables.queries["meta"][0])["span_steps"] == ["exact", "fuzzy"]


@pytest.mark.skipif(not TRAIN.exists(), reason="train split not present")
def test_all_splits_merge_and_verify():
    tables = load_corpus({"kind": "qasper", "paths": [str(TRAIN), str(DEV)], "fuzzy_threshold": 90})
    assert verify_corpus(tables) == []
    funnel = _funnel(tables)
    assert tables.documents.height == 888 + 281
    assert funnel[("questions", "in", "")] == 2593 + 1005
    assert tables.queries["qid"].n_unique() == tables.queries.height
    capped = load_corpus({"kind": "qasper", "paths": [str(DEV)], "max_docs": 3})
    assert capped.documents.height == 3 and set(capped.queries["doc_id"]) <= set(capped.documents["doc_id"])
