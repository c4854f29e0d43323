"""An OpenAI-compatible server that ignores ``response_format`` (a scripted one on 127.0.0.1): its answers
are held to the request's schema all the same, and an induced title over the schema's bound goes through
the correction round and the repair, never reaching sections as ``usable``."""

import json
import re
from http.server import BaseHTTPRequestHandler

from endpoint_testing import local_server, read_json, send_json

from structbench.corpus.build import build_tables
from structbench.datamodel import ParsedDocument, SectionSpec
from structbench.llm import load_llm
from structbench.structure.induction import TITLE_CHARS, induce_structure

RAMBLING_TITLE = "Bees " + "and more bees " * 77  # 1,083 characters: what a schema-blind model wrote


def schema_blind_server(bodies: list[dict]) -> type[BaseHTTPRequestHandler]:
    """Answers every chat request with two sections, the second titled :data:`RAMBLING_TITLE`, whatever
    ``response_format`` asked; records each request body in ``bodies``."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = read_json(self)
            bodies.append(body)
            first, last = map(int, re.search(r"paragraphs (\d+) to (\d+)", body["messages"][1]["content"]).groups())
            sections = [
                {"title": "Opening", "level": 1, "first": first, "last": first},
                {"title": RAMBLING_TITLE, "level": 1, "first": first + 1, "last": last},
            ]
            content = json.dumps({"sections": sections})
            send_json(self, {"choices": [{"message": {"content": content}, "finish_reason": "stop"}], "usage": {}})

        def log_message(self, *args):
            pass

    return Handler


def test_over_long_titles_from_a_schema_blind_server_are_corrected_then_cut_never_usable():
    docs = [
        ParsedDocument("hive", "The hive", [f"Paragraph {i} about bees." for i in range(4)], [SectionSpec("", 1, 0, 4)])
    ]
    documents, paragraphs, _ = build_tables("test", docs)
    bodies: list[dict] = []
    with local_server(schema_blind_server(bodies)) as base_url:
        entry = {"backend": "openai", "model": "blind", "base_url": base_url, "context_tokens": 4096}
        llm = load_llm({**entry, "response_format": "json_schema", "max_new_tokens": 128, "max_retries": 0})
        sections, status = induce_structure(documents, paragraphs, llm)
    asked = bodies[0]["response_format"]["json_schema"]["schema"]
    assert asked["properties"]["sections"]["items"]["properties"]["title"]["maxLength"] == TITLE_CHARS
    assert len(bodies) == 2  # round 1, then the correction round quoting the breach
    assert "sections/1/title" in bodies[1]["messages"][-1]["content"]
    row = status.row(0, named=True)
    assert (row["status"], row["rounds"], row["shortened_titles"]) == ("repaired", 2, 1)
    titles = sections["title"].to_list()
    assert all(len(title) <= TITLE_CHARS for title in titles) and titles[1].endswith("…")
    assert all(len(part) <= TITLE_CHARS for path in sections["path"].to_list() for part in path[1:])
