"""The project's registry (config/models.yaml) with a few values changed, written to a scratch
folder: what the config tests and the command-line refusals read."""

from __future__ import annotations

from pathlib import Path

import yaml

from helixclock.lm.config import load_yaml
from helpers.paths import REPO


def registry_with(tmp_path: Path, **changes) -> str:
    """The registry file with ``changes`` applied: ``{"toy-gptj.prompts.add": "{a}+="}``-style
    dotted keys given as keyword arguments with "__" for the dots.  (The toys share their
    prompts with gptj and llama through YAML anchors: a change to one is a change to both.)"""
    reg = load_yaml(REPO / "config/models.yaml")
    for dotted, value in changes.items():
        *parents, last = dotted.split("__")
        node = reg
        for key in parents:
            node = node[key]
        node[last] = value
    path = tmp_path / "models.yaml"
    path.write_text(yaml.safe_dump(reg))
    return str(path)
