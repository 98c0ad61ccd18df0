"""Every Snakemake command the README and the docs document runs (issue 56: the README's rerun
section gave ``--config clock.head_threshold=0.9``, which Snakemake refuses before any job).

The commands are read from the Markdown (tests/helpers/commands.py): each line of a shell block,
each inline code span that is a command, an inline option such as ``--config compat=authors``
added to a plain ``snakemake``, the ``make`` targets whose own recipe calls Snakemake (``run``,
``real``, ``lint``) and ``sbatch --wrap``.  Each is parsed by Snakemake's own command line
(``snakemake.cli.parse_args``, which reads the workflow profile the command names, or
profiles/default; ``--config`` by ``snakemake.cli.parse_config``), then dry-run through Snakemake's
API in this process against the tiny config (tests/configs/tiny.yaml) with the command's
``--configfile`` files (its profile's included), ``--config``, targets and ``--forcerun`` on top.

To stay within seconds, commands that share their config are one dry run over the union of their
targets (a command without targets asks for rule ``all``), and commands whose configs differ only
in the ``models`` they name are one dry run over the union of those models (commands that name
none keep the tiny config's): when written, 67 commands in 8 dry runs, about 10 s on one core.
Models the tiny registry lacks (the paper's hub models ``gptj``, ``pythia`` and ``llama``; ``toy-llama``, ``smollm2-135m`` and
``gemma3-270m`` of ``make real``) are dry-run with the project's registry, config/models.yaml: a
plan reads no weights, so their jobs are planned here as on a GPU box or a cluster.  Not checked by
a dry run: the executor (Slurm's profile is planned locally), cores and resources, and what the
modes ``--lint``, ``--list-rules``, ``--report``, ``--unlock`` and ``--cleanup-metadata`` do besides
reading the config and planning the targets.

It reads no whole-DAG run (no ``tiny_run``): it runs beside the background run."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import pytest
import yaml
from helpers.commands import PLACEHOLDERS, Command, commands_of, documented_commands
from helpers.dag import PROFILE, TINY, workflow_api
from helpers.paths import REPO

TINY_REGISTRY = set(yaml.safe_load((TINY.parent / "models.yaml").read_text()))
PROJECT_REGISTRY = REPO / "config" / "models.yaml"


def parsed(command: Command) -> tuple[dict, tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """What Snakemake's command line makes of ``command`` in the repository: its ``--config``
    (parsed as Snakemake parses it), its config files (absolute), its targets and its forced rules.
    An AssertionError names the command and what Snakemake said."""
    from snakemake.cli import parse_args, parse_config

    with contextlib.chdir(REPO), contextlib.redirect_stderr(io.StringIO()) as said:
        try:
            _, args = parse_args(list(command.args))
            config = parse_config(args.config)
        except SystemExit:
            raise AssertionError(f"{command}: Snakemake's command line refuses it: {said.getvalue()[-500:]}") from None
        except ValueError as err:
            raise AssertionError(f"{command}: {err}") from None
    configfiles = tuple(str((REPO / f).resolve()) for f in args.configfile or ())
    return config, configfiles, tuple(args.targets or ()), tuple(args.forcerun or ())


def dry_run(workdir: Path, config: dict, configfiles, targets, forcerun) -> dict[str, int]:
    """Jobs a dry run of the workflow in ``workdir`` plans, by rule: the tiny config, then
    ``configfiles``, then ``config``; its targets (rule all where none) and forced rules."""
    from snakemake.settings.types import DAGSettings

    with workflow_api(workdir, TINY, config=config, configfiles=configfiles) as workflow:
        dag = workflow.dag(
            DAGSettings(
                targets=frozenset(targets),
                forcerun=frozenset(forcerun),
                force_incomplete=PROFILE.get("rerun-incomplete", False),
            )
        )
        dag.execute_workflow(executor="dryrun")
        _, counts = dag.workflow_api._workflow.dag.stats()
    return {rule: n for rule, n in counts.items() if rule != "total"}


def grouped(commands: list[Command]) -> dict[str, dict]:
    """The dry runs that cover ``commands``: by config less ``models`` and config files, with the
    union of their models (kept apart from those that name none), targets and forced rules."""
    groups: dict[str, dict] = {}
    for command in commands:
        config, configfiles, targets, forcerun = parsed(command)
        rest = {k: v for k, v in config.items() if k != "models"}
        key = json.dumps([rest, configfiles, "models" in config], sort_keys=True)
        group = groups.setdefault(
            key, {"config": rest, "configfiles": configfiles, "models": [], "targets": set(), "forcerun": set()}
        )
        group.setdefault("commands", []).append(command)
        group["models"] += [m for m in config.get("models", []) if m not in group["models"]]
        group["targets"] |= set(targets) or {"all"}
        group["forcerun"] |= set(forcerun)
    return groups


def run_group(workdir: Path, group: dict) -> dict[str, int]:
    config = dict(group["config"])
    if group["models"]:
        config["models"] = group["models"]
        if not set(group["models"]) <= TINY_REGISTRY:
            config["registry"] = str(PROJECT_REGISTRY)
    try:
        return dry_run(workdir, config, group["configfiles"], sorted(group["targets"]), sorted(group["forcerun"]))
    except Exception as err:
        listed = "\n".join(f"  {c}" for c in group["commands"])
        raise AssertionError(f"the dry run of these documented commands fails: {err}\n{listed}") from err


def test_every_documented_snakemake_command_plans_its_jobs(tmp_path):
    commands = documented_commands()
    groups = grouped(commands)  # each parsed by Snakemake's command line first
    where = {c.where.split(":")[0] for c in commands}
    assert len(commands) > 50 and {"README.md", "docs/running.md", "docs/gpus-and-clusters.md"} <= where
    # the command issue 56 found broken, in the form that works, is among them
    assert any('clock={"head_threshold": 0.9}' in c.args and c.where.startswith("README.md") for c in commands)
    assert not any("clock.head_threshold" in c.text for c in commands)
    assert len(groups) <= 10, "more dry runs than the test's time allows: group the commands"
    planned = {}
    for i, group in enumerate(groups.values()):
        planned[i] = run_group(tmp_path / f"g{i}", group)
        assert planned[i], [str(c) for c in group["commands"]]
    by_args = {c.args: planned[i] for i, g in enumerate(groups.values()) for c in g["commands"]}
    # what each group planned is what its commands ask for: rerunning one figure after editing its
    # plotting function reruns that figure's rule; make real plans the real models' model jobs
    assert by_args[("--forcerun", "fig_helix_patching")].get("fig_helix_patching", 0) >= 1
    real = next(c for c in commands if c.text == "make real")
    assert by_args[real.args]["install_gguf"] == 2 and by_args[real.args]["download_model"] == 3


def test_the_old_dotted_config_and_a_target_no_rule_makes_fail_it(tmp_path):
    """The wrong arms: README's old ``--config clock.head_threshold=0.9`` is refused by Snakemake's
    parser with the message issue 56 quotes; a threshold the config's schema refuses and a
    figure no rule makes fail the dry run."""
    (old,) = commands_of("Ask again (`--config clock.head_threshold=0.9`).\n", "old README")
    assert old.args == ("--config", "clock.head_threshold=0.9")
    with pytest.raises(AssertionError, match="Config entry must start with a valid identifier"):
        grouped([old])
    block = (
        "```sh\n.venv/bin/snakemake --cores 1 --config 'clock={\"head_threshold\": 1.5}'\n"
        ".venv/bin/snakemake --cores 1 results/toy-gptj/figures/fig99_none.pdf\n```\n"
    )
    wrong_value, wrong_target = commands_of(block, "a page")
    said = {
        wrong_value: "fails: config key 'clock.head_threshold': value 1.5 violates maximum 1",
        wrong_target: "fails: No rule to produce results/toy-gptj/figures/fig99_none.pdf",
    }
    for i, (command, message) in enumerate(said.items()):
        (group,) = grouped([command]).values()
        with pytest.raises(AssertionError, match=re.escape(message)):
            run_group(tmp_path / str(i), group)


def test_placeholders_left_out_are_still_placeholders_of_the_docs():
    """The spans the extraction leaves out as placeholders are in the docs (none listed in vain)."""
    text = "\n".join(p.read_text() for pattern in ("README.md", "docs/*.md") for p in REPO.glob(pattern))
    for placeholder in PLACEHOLDERS:
        assert f"`{placeholder}`" in text, placeholder
