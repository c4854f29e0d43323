"""The bounded YAML reader (structbench.yamlsafe): alias bombs, deep nesting and duplicate keys refused while the
document is composed, each naming the source and line; every shipped config reads as PyYAML's SafeLoader reads it."""

import time
import tracemalloc

import pytest
import yaml
from conftest import REPO

from structbench.yamlsafe import (
    MAX_DEPTH,
    MAX_NODES,
    MAX_SCALAR_CHARS,
    BoundedBaseLoader,
    RefusedYAMLError,
    load_yaml,
    unbounded_value,
)


def laughs(levels: int = 9, width: int = 9, mapping: bool = False) -> str:
    """A "billion laughs": level i holds ``width`` aliases of level i-1 (``width ** levels`` leaves written out)."""
    lines = ["lol0: &lol0 lol"]
    for i in range(1, levels + 1):
        aliases = [f"k{j}: *lol{i - 1}" if mapping else f"*lol{i - 1}" for j in range(width)]
        lines.append(f"lol{i}: &lol{i} " + ("{%s}" if mapping else "[%s]") % ", ".join(aliases))
    return "\n".join(lines) + "\n"


def refusal(text: str, **options) -> RefusedYAMLError:
    with pytest.raises(RefusedYAMLError) as raised:
        load_yaml(text, "my.yaml", **options)
    return raised.value


@pytest.mark.parametrize("mapping", [False, True])
def test_an_alias_bomb_is_refused_at_the_alias_that_passes_the_bound_in_bounded_time_and_memory(mapping):
    text = laughs(mapping=mapping)
    assert len(text) < 1_100  # 387,420,489 leaves written out
    tracemalloc.start()
    started = time.perf_counter()
    error = refusal(text)
    seconds = time.perf_counter() - started
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    # written out, lol_i's list is 1 + 9 * lol_(i-1)'s nodes: lol5 is 66,430, 74,740 nodes stand before lol6's line
    # and its first alias passes 100,000; as mappings each alias comes with a key, and lol5's line passes it
    line = 6 if mapping else 7
    assert (error.source, error.line) == ("my.yaml", line)
    assert str(error).startswith(f"my.yaml:{line}: more than {MAX_NODES:,} YAML nodes with its aliases written out")
    assert seconds < 1 and peak < 5_000_000, (seconds, peak)


def test_a_few_anchors_and_merge_keys_load_as_safe_load_reads_them():
    text = (
        "defaults: &base {t_max: 300, t_min: 60}\n"
        "small:\n  <<: *base\n  t_max: 100\n"  # a merged key overridden by the mapping's own: no duplicate
        "sizes: &sizes [100, 200, 300]\n"
        "again: *sizes\n"
        "both:\n  <<: [*base, {extra: 1}]\n"
    )
    assert load_yaml(text, "my.yaml") == yaml.safe_load(text)
    assert load_yaml(text, "my.yaml")["small"] == {"t_max": 100, "t_min": 60}


def test_the_node_bound_counts_every_node_written_out():
    def written_out(extra: int) -> str:
        """The root list, a 1,000-node list and 98 aliases of it, then ``extra`` scalars on the next line."""
        return (
            "[&a [" + ", ".join(["x"] * 999) + "], " + ", ".join(["*a"] * 98) + ",\n" + ", ".join(["y"] * extra) + "]"
        )

    assert MAX_NODES == 1 + 1_000 + 98 * 1_000 + 999
    assert len(load_yaml(written_out(999), "my.yaml")) == 1 + 98 + 999
    error = refusal(written_out(1_000))
    assert error.line == 2 and f"more than {MAX_NODES:,} YAML nodes" in str(error)


def test_an_alias_to_a_long_string_is_bounded_by_the_characters_written_out():
    long = "a" * 99_900
    hundred = f"a: &a {long}\nb: [{', '.join(['*a'] * 99)}]\n"
    assert len(load_yaml(hundred, "my.yaml")["b"]) == 99  # 9,990,002 characters written out, the two keys included
    error = refusal(f"a: &a {long}\nb: [{', '.join(['*a'] * 100)}]\n")
    assert error.line == 2 and f"more than {MAX_SCALAR_CHARS:,} characters" in str(error)


def test_nesting_is_bounded_while_scanning_and_composing_before_python_recursion():
    assert load_yaml("[" * MAX_DEPTH + "]" * MAX_DEPTH, "my.yaml") is not None
    for text, line in [
        ("\n" + "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), 2),
        ("x: " + "[" * 50_000, 1),  # never closed: the scanner refuses it at the bound, not quadratic in the 50,000
        ("- " * 5_000 + "x", 1),
        ("".join(" " * i + "a:\n" for i in range(MAX_DEPTH + 1)) + " " * (MAX_DEPTH + 1) + "b: 1\n", MAX_DEPTH + 1),
    ]:
        started = time.perf_counter()
        error = refusal(text)
        assert time.perf_counter() - started < 1
        assert error.line == line and f"nested deeper than {MAX_DEPTH} levels" in str(error), str(error)


def test_nesting_is_counted_with_aliases_written_out():
    half = "[" * 60 + "]" * 60
    text = f"a: &a {half}\nb: {'[' * 45}*a{']' * 45}\n"  # 45 + 60 = 105 levels once *a is written out
    error = refusal(text)
    assert error.line == 2 and "nested deeper than 100 levels" in str(error)
    assert refusal("&a [1, *a]").problem.startswith("an alias inside the node it names")


def test_a_duplicate_key_is_named_with_both_lines_at_any_level():
    nested = "stats:\n  bootstrap_iters: 100\n  mixedlm: true\n  bootstrap_iters: 200\n"
    assert str(refusal(nested)) == (
        "my.yaml:4: duplicate key 'bootstrap_iters' (first at line 2, again at line 4); "
        "YAML would keep the last value silently: write each key once"
    )
    assert refusal("seed: 1\nresults: r\nseed: 2\n").problem.startswith("duplicate key 'seed' (first at line 1, again")
    assert refusal("chunking: {t_max: 1, t_max: 2}").problem.startswith("duplicate key 't_max' (first at line 1, again")
    assert refusal("a:\n  - {x: 1}\n  - {y: 1,\n     y: 2}\n").line == 4
    assert refusal("1: a\n0x1: b\n").problem.startswith("duplicate key 1 (first at line 1, again at line 2)")


def test_lines_count_from_first_line_and_values_python_cannot_hold_are_named():
    error = refusal("title: a\ntitle: b\n", first_line=2)  # front matter: its text starts on the file's line 2
    assert error.line == 3 and error.problem.startswith("duplicate key 'title' (first at line 2, again at line 3)")
    error = refusal("n: " + "1" * 5_000)
    assert error.line == 1 and error.problem.startswith("a value YAML cannot read: Exceeds the limit")
    with pytest.raises(yaml.YAMLError):  # text that is not YAML stays PyYAML's own error
        load_yaml("a: [1\n", "my.yaml")


def test_the_base_loader_keeps_strings_and_the_bounds():
    assert load_yaml("{a: 1, b: [true]}", "--config x=...", loader=BoundedBaseLoader) == {"a": "1", "b": ["true"]}
    error = refusal(laughs(), loader=BoundedBaseLoader)
    assert error.source == "my.yaml" and "more than 100,000 YAML nodes" in error.problem


def test_every_shipped_config_reads_as_safe_load_reads_it():
    for path in sorted((REPO / "config").glob("*.yaml")) + [REPO / "workflow/schemas/config.schema.yaml"]:
        assert load_yaml(path.read_text(), str(path)) == yaml.safe_load(path.read_text()), path


def test_an_unbounded_value_in_memory_is_found_in_bounded_steps():
    shared = ["lol"]
    for _ in range(9):
        shared = [shared] * 9  # what PyYAML builds from a billion laughs: one list held nine times per level
    started = time.perf_counter()
    path, problem = unbounded_value({"stats": {"x": shared}})
    assert time.perf_counter() - started < 1
    assert path[:2] == ("stats", "x") and problem.startswith(f"more than {MAX_NODES:,} values")
    looped: list = []
    looped.append(looped)
    path, problem = unbounded_value({"a": looped})
    assert len(path) == MAX_DEPTH + 1 and problem.startswith("nested deeper")
    assert unbounded_value(yaml.safe_load((REPO / "config/paper.yaml").read_text())) is None
