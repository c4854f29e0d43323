"""Each default is written once and checked where it is repeated: structbench.defaults holds the study's values,
the config schema's ``default:`` entries fill them in (tests/test_config.py checks the two agree), and
config/config.yaml, which shows a newcomer every knob, may repeat a schema default only with the same value."""

import yaml
from conftest import REPO

from structbench.config import load_schema

# Keys config/config.yaml sets to something other than the schema's default, each on purpose.
OVERRIDES = {
    ("contexts", "llm"): "the default run's situating contexts need an LLM; the schema's null means none",
    ("llm_shards",): "the default run's LLM steps in two document batches, one job per core side by side",
    ("subgroups", "moderators"): "the default run's report shows the subgroup table; the schema's empty list: none",
    ("subgroups", "contrasts"): "the default run splits C2 and G3-G2 by every moderator; the schema's empty list: none",
}


def schema_defaults(node: dict, path: tuple = ()):
    """``(key path, default)`` of every property of the schema with a ``default``, nested objects included."""
    if path and "default" in node:
        yield path, node["default"]
    for key, child in (node.get("properties") or {}).items():
        yield from schema_defaults(child, (*path, key))


def lookup(config: dict, path: tuple):
    for key in path:
        if not isinstance(config, dict) or key not in config:
            raise KeyError(path)
        config = config[key]
    return config


def test_config_yaml_repeats_schema_defaults_only_with_their_value():
    schema = load_schema(REPO / "workflow/schemas/config.schema.yaml")
    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    repeated, differing = [], {}
    for path, default in schema_defaults(schema):
        try:
            value = lookup(config, path)
        except KeyError:
            continue
        if isinstance(default, dict):  # an object's default is checked key by key, as its properties
            continue
        repeated.append(path)
        if value != default:
            differing[path] = (value, default)
    assert len(repeated) > 20  # the file does repeat most of them: the check is not vacuous
    assert set(differing) == set(OVERRIDES), {".".join(p): v for p, v in differing.items()}
