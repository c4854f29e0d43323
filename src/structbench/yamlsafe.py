"""The one YAML reader for files a user hands the study: config files and Markdown front matter, bounded.

PyYAML's ``safe_load`` is safe from code execution but not from size: an alias names a node already read,
and the constructor hands back the same object each time, so a few hundred bytes of nested aliases (a
"billion laughs") load in microseconds as a graph whose every later walk (a schema check, a merge, a JSON
dump) visits billions of values; a few thousand nested brackets overflow the composer's recursion; and a
key written twice keeps its last value without a word. :class:`BoundedSafeLoader` is PyYAML's Python
``SafeLoader`` (libyaml's composer cannot be bounded from Python, so ``CSafeLoader`` is not used) that
refuses, while it composes and before anything walks the result:

- more than :data:`MAX_NODES` nodes, or :data:`MAX_SCALAR_CHARS` characters of scalars, as the document
  reads with every alias written out (each alias adds the whole of the node it names), and an alias inside
  the node it names (a recursive value every walk loops on);
- nesting deeper than :data:`MAX_DEPTH` collections, aliases written out, checked as each collection
  opens, so the limit is met far below Python's recursion limit;
- a mapping key written twice in one mapping, at any level, naming the key and both lines (a ``<<`` merge
  key's entries may still be overridden by the mapping's own keys, as YAML's merge key says).

Each refusal is a :class:`RefusedYAMLError` naming the source (the file) and the line. A config with a few
anchors (``defaults: &base {...}``, ``<<: *base``) is far inside every bound.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from yaml.events import AliasEvent, CollectionStartEvent

MAX_DEPTH = 100  # nested collections; a config nests under 10, front matter fewer
MAX_NODES = 100_000  # nodes with aliases written out; the largest shipped config has under 2,000
MAX_SCALAR_CHARS = 10_000_000  # characters of scalars with aliases written out (an alias to a long string)
MERGE_TAG = "tag:yaml.org,2002:merge"


class RefusedYAMLError(ValueError):
    """A YAML document the bounded reader refuses (too large once its aliases are written out, too deep, a
    duplicate key, a value no Python type holds): ``source`` (a file), 1-based ``line`` (None where no line
    applies) and the ``problem``; the message is ``SOURCE:LINE: problem``."""

    def __init__(self, source: str, line: int | None, problem: str):
        super().__init__(f"{source}:{line}: {problem}" if line is not None else f"{source}: {problem}")
        self.source, self.line, self.problem = source, line, problem


class _Bounds:
    """The bounds, mixed into a PyYAML loader ahead of its composer and constructor (see the module docstring).

    Counting works on running totals: a node's expanded size is the growth of the totals while it is
    composed, kept for anchored nodes, so an alias adds its node's size in one step and a bomb is refused
    at the first alias that crosses a bound, having built nothing larger than the file."""

    def __init__(self, stream, source: str = "<string>", first_line: int = 1):
        super().__init__(stream)
        self.source, self.first_line = source, first_line
        self._reset_bounds()

    def _reset_bounds(self) -> None:
        self._nodes = self._chars = self._depth = self._deepest = 0
        self._expanded: dict[int, tuple[int, int, int]] = {}  # id(anchored node) -> (nodes, chars, height)

    def _line(self, mark) -> int | None:
        return None if mark is None else mark.line + self.first_line

    def _refuse(self, mark, problem: str):
        return RefusedYAMLError(self.source, self._line(mark), problem)

    def fetch_flow_collection_start(self, token_class):
        """The scanner keeps every open ``[`` or ``{`` as a possible key and rescans them all at each new one,
        so a long run of them is quadratic before the composer sees the first: bounded here."""
        if self.flow_level >= MAX_DEPTH:
            raise self._refuse(self.get_mark(), _too_deep())
        super().fetch_flow_collection_start(token_class)

    def add_indent(self, column):
        if len(self.indents) >= MAX_DEPTH:
            raise self._refuse(self.get_mark(), _too_deep())
        return super().add_indent(column)

    def compose_document(self):
        self._reset_bounds()
        return super().compose_document()

    def compose_node(self, parent, index):
        if self.check_event(AliasEvent):
            mark = self.peek_event().start_mark
            node = super().compose_node(parent, index)
            if id(node) not in self._expanded:
                raise self._refuse(mark, "an alias inside the node it names (a value that contains itself)")
            nodes, chars, height = self._expanded[id(node)]
            self._add(nodes, chars, mark)
            self._reach(self._depth + height, mark)
            return node
        event = self.peek_event()
        depth_before, deepest_before = self._depth, self._deepest
        nodes_before, chars_before = self._nodes, self._chars
        self._deepest = depth_before
        if isinstance(event, CollectionStartEvent):
            self._depth += 1
            self._reach(self._depth, event.start_mark)
            self._add(1, 0, event.start_mark)
        node = super().compose_node(parent, index)
        if isinstance(node, yaml.ScalarNode):
            self._add(1, len(node.value), node.start_mark)
        self._depth = depth_before
        if event.anchor is not None:
            self._expanded[id(node)] = (
                self._nodes - nodes_before,
                self._chars - chars_before,
                self._deepest - depth_before,
            )
        self._deepest = max(deepest_before, self._deepest)
        return node

    def _add(self, nodes: int, chars: int, mark) -> None:
        self._nodes += nodes
        self._chars += chars
        if self._nodes > MAX_NODES:
            raise self._refuse(
                mark,
                f"more than {MAX_NODES:,} YAML nodes with its aliases written out (an alias bomb?); "
                "write the values out, or use fewer aliases",
            )
        if self._chars > MAX_SCALAR_CHARS:
            raise self._refuse(
                mark,
                f"more than {MAX_SCALAR_CHARS:,} characters of values with its aliases written out; "
                "write the values out, or use fewer aliases",
            )

    def _reach(self, depth: int, mark) -> None:
        if depth > MAX_DEPTH:
            raise self._refuse(mark, _too_deep())
        self._deepest = max(self._deepest, depth)

    def construct_object(self, node, deep=False):
        try:
            return super().construct_object(node, deep=deep)
        except RefusedYAMLError:
            raise
        except ValueError as error:  # e.g. an integer of more digits than Python converts
            raise self._refuse(node.start_mark, f"a value YAML cannot read: {error}") from None

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            self._refuse_duplicate_keys(node)
        return super().construct_mapping(node, deep=deep)

    def _refuse_duplicate_keys(self, node: yaml.MappingNode) -> None:
        """A key written twice in ``node``'s own entries (merged ``<<`` entries aside): refused at both lines."""
        first_lines: dict = {}
        for key_node, _ in node.value:
            if key_node.tag == MERGE_TAG:
                continue
            key, line = self.construct_object(key_node, deep=True), self._line(key_node.start_mark)
            try:
                seen = key in first_lines
            except TypeError:
                continue  # an unhashable key: the constructor names it
            if seen:
                raise self._refuse(
                    key_node.start_mark,
                    f"duplicate key {key!r} (first at line {first_lines[key]}, again at line {line}); "
                    "YAML would keep the last value silently: write each key once",
                )
            first_lines[key] = line


def _too_deep() -> str:
    return f"nested deeper than {MAX_DEPTH} levels (aliases written out)"


class BoundedSafeLoader(_Bounds, yaml.SafeLoader):
    """PyYAML's ``SafeLoader`` with the module's bounds; ``source`` names the file in errors, ``first_line`` is
    the file line of the text's first line (front matter starts on line 2)."""


class BoundedBaseLoader(_Bounds, yaml.BaseLoader):
    """PyYAML's ``BaseLoader`` (every scalar a string: how Snakemake reads a ``--config`` value) with the bounds."""


def load_yaml(text: str, source: str, first_line: int = 1, loader: type[_Bounds] = BoundedSafeLoader):
    """The value of the one YAML document in ``text`` (None when empty), read with the bounds.

    Raises :class:`RefusedYAMLError` naming ``source`` and the line for what the bounds refuse, and PyYAML's
    ``yaml.YAMLError`` (marks relative to ``text``) for text that is not YAML."""
    reader = loader(text, source=source, first_line=first_line)
    try:
        return reader.get_single_data()
    finally:
        reader.dispose()


def load_yaml_file(path: str | Path):
    """:func:`load_yaml` of a UTF-8 file, errors naming the file."""
    return load_yaml(Path(path).read_text(encoding="utf-8"), str(path))


def unbounded_value(value) -> tuple[tuple, str] | None:
    """``(key path, problem)`` where a loaded value passes the bounds with its shared parts written out, else None.

    For a value that reached the caller without this module's reader: Snakemake parses ``--config`` values
    with PyYAML itself, so an alias there arrives as one list or mapping object held in many places (or
    holding itself), which every later walk would visit once per place. This walk stops at the bounds, so it
    costs at most :data:`MAX_NODES` steps whatever the value would be written out."""
    stack: list[tuple[tuple, object]] = [((), value)]
    visited = 0
    while stack:
        path, item = stack.pop()
        visited += 1
        if visited > MAX_NODES:
            return path, f"more than {MAX_NODES:,} values with its aliases written out (an alias bomb?)"
        if len(path) > MAX_DEPTH:
            return path, _too_deep()
        if isinstance(item, dict):
            stack.extend(reversed([((*path, key), child) for key, child in item.items()]))  # in document order
        elif isinstance(item, list):
            stack.extend(reversed([((*path, index), child) for index, child in enumerate(item)]))
    return None
