"""What the cluster tests share (docs/gpus-and-clusters.md): a model of GPT-J-6B's shape without its
weights, and the jobs a dry run prints with their resources."""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from transformers import GPTJConfig

from helixclock.project.outputs import MODEL_JOBS
from helpers.dag import workflow_rules
from helpers.gpt2_tokenizer import gpt2_tokenizer
from helpers.paths import REPO

PROFILE = REPO / "profiles" / "slurm"
CONFIG = REPO / "config" / "config.yaml"
GPTJ_PARAMETERS = 6_050_882_784  # GPT-J-6B's, counted on the meta device (its model card's)
GPTJ_LONGEST_PROMPT = "Output ONLY a number.\n361 modulo 2="  # GPT-J's longest template, numbers of 3 digits
# the model jobs of a one-token model that is not a toy (train_toy: toys; answer_scores: several tokens)
ONE_TOKEN_MODEL_JOBS = set(MODEL_JOBS) - {"train_toy", "answer_scores"}


def gptj_shaped_model(root: Path) -> Path:
    """A registry entry with GPT-J-6B's shape in ``root``: a local directory with its config.json
    (transformers' GPTJConfig defaults: the hub model's) and its tokenizer (GPT-2's BPE), no
    weights; the paper's config with this model alone (``root/config.yaml``)."""
    folder = root / "gpt-j-6B"
    GPTJConfig().save_pretrained(folder)
    gpt2_tokenizer().save_pretrained(folder)
    registry = yaml.safe_load((REPO / "config" / "models.yaml").read_text())
    entry = {k: v for k, v in registry["gptj"].items() if k not in ("revision", "parameters")}
    (root / "models.yaml").write_text(yaml.safe_dump({"gptj-shape": {**entry, "source": str(folder)}}))
    config = yaml.safe_load(CONFIG.read_text()) | {"models": ["gptj-shape"], "registry": str(root / "models.yaml")}
    (root / "config.yaml").write_text(yaml.safe_dump(config))
    return root


def dry_run_jobs(output: str, local: set[str]) -> list[tuple[str, bool, dict[str, str]]]:
    """(rule, whether it is a local rule, resources) of every job a dry run prints."""
    jobs = []
    for block in re.split(r"\n(?=(?:local)?rule \w+:\n)", output):
        head = re.match(r"(?:local)?rule (\w+):\n", block)
        found = re.search(r"^\s+resources: (.*)$", block, re.M)
        if head and found:
            resources = dict(item.split("=", 1) for item in found.group(1).split(", "))
            jobs.append((head.group(1), head.group(1) in local, resources))
    return jobs


def local_rules(workdir: Path, configfile: Path) -> set[str]:
    """The rules whose jobs run on the submit host (localrule: True)."""
    rules = workflow_rules(workdir, configfile)
    return {name for name, rule in rules.items() if name in rule.workflow._localrules}
