"""What a run ran on (docs/running.md, "Provenance of a run").

Rule ``provenance`` writes ``results/all/provenance.json`` (:func:`run_record`): helixclock's
version and git commit, Python, the versions of the packages that compute the numbers
(:data:`PACKAGES`), torch's CUDA, the device, whether the environment is the lock
(``requirements/lock.txt``), and the environment each model card recorded; beside it
``results/all/tables/provenance`` (:func:`provenance_table`), the report's table.  Each model
card records the environment of its model's jobs (:func:`environment`); a model job whose
installed versions differ from its card's says so in its log (:func:`warn_if_changed`), and
so does the provenance job, on the console too, for every card that differs
(:func:`changed_records`).

The rule's params are :func:`fingerprint`: what the record depends on, read in milliseconds at
DAG time from folder listings and git's files (no git process, no package's metadata opened, no
model card), so the record is rewritten when the versions, the commit or the lock change, and
only then.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import platform
import subprocess
import sys
from datetime import datetime, timezone
from importlib.metadata import PackageNotFoundError, distribution, version
from pathlib import Path

from .. import __version__
from ..project.io import write_json, write_table
from ..project.outputs import RECORD
from .lock import GGUF_LOCK, LOCK, TORCH_LOCK, environment_differences, installed_distributions, locked, read_lock

# the packages whose versions can change a number of the run, the first five first
PACKAGES = (
    "torch",
    "transformers",
    "nnsight",
    "snakemake",
    "numpy",
    "scipy",
    "scikit-learn",
    "pandas",
    "h5py",
    "tokenizers",
    "safetensors",
    "accelerate",
    "gguf",
)
log = logging.getLogger("helixclock")


def package_versions(names=PACKAGES) -> dict[str, str | None]:
    """Installed version of each package (None where it is not installed)."""
    out = {}
    for name in names:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def source(root: str | Path) -> dict:
    """helixclock's version, and the git commit of the checkout at ``root`` with whether
    tracked files had uncommitted changes (None for both outside a git checkout)."""

    def git(*args):
        try:
            proc = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return proc.stdout.strip() if proc.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no") if commit else None
    return {"version": __version__, "commit": commit, "dirty": None if status is None else bool(status)}


def installed_metadata(paths=None) -> list[str]:
    """The metadata folders of every installed distribution (``name-version.dist-info``, or
    ``.egg-info``) in the folders of ``paths`` (default ``sys.path``), sorted: each package's
    name and version, read from folder listings alone (no package's metadata is opened)."""
    found = set()
    for folder in sys.path if paths is None else paths:
        try:
            with os.scandir(folder or ".") as entries:
                found.update(e.name for e in entries if e.name.endswith((".dist-info", ".egg-info")))
        except OSError:  # a zip file, a folder that does not exist
            continue
    return sorted(found)


def git_commit(root: str | Path) -> str | None:
    """The commit checked out at ``root``, read from git's own files without running git: HEAD,
    and the branch it names as a loose ref or in packed-refs (in a worktree, its common folder's);
    None outside a git checkout.  Where the files say nothing (another ref storage), ``git
    rev-parse HEAD``."""
    dot_git = Path(root) / ".git"
    try:
        if dot_git.is_file():  # a worktree or a submodule: "gitdir: <its folder>"
            gitdir = (dot_git.parent / dot_git.read_text().split("gitdir:", 1)[1].strip()).resolve()
        elif dot_git.is_dir():
            gitdir = dot_git
        else:
            return None
        head = (gitdir / "HEAD").read_text().strip()
        if not head.startswith("ref:"):
            return head or None  # a detached HEAD holds the commit itself
        ref = head.split(":", 1)[1].strip()
        common = gitdir / "commondir"
        common = (gitdir / common.read_text().strip()).resolve() if common.is_file() else gitdir
        for folder in dict.fromkeys([gitdir, common]):
            if (folder / ref).is_file():
                return (folder / ref).read_text().strip()
        packed = common / "packed-refs"
        if packed.is_file():
            for line in packed.read_text().splitlines():
                if line.endswith(" " + ref) and not line.startswith(("#", "^")):
                    return line.split(" ", 1)[0]
    except (OSError, IndexError, ValueError):
        pass
    return source(root)["commit"]


def fingerprint(root: str | Path) -> dict:
    """What rule provenance's record depends on, read in milliseconds (the rule's params: a
    change reruns it, and Snakemake reads params as it builds the DAG): Python, the commit of
    ``root`` (helixclock's checkout; :func:`git_commit`), a digest of every installed
    distribution's name and version (:func:`installed_metadata`: a package installed, removed
    or at another version, torch's CUDA build included) and the lock files' digests
    (:func:`lock_digests`).  The record itself is the job's (:func:`write_provenance`)."""
    names = "\n".join(installed_metadata())
    return {
        "python": platform.python_version(),
        "commit": git_commit(root),
        "distributions": hashlib.sha256(names.encode()).hexdigest(),
        "lock": lock_digests(root),
    }


def lock_digests(root: str | Path) -> dict[str, str]:
    """SHA-256 of the lock files of helixclock's checkout at ``root`` (requirements/lock.txt,
    torch.txt and gguf.txt): part of :func:`fingerprint` (a new lock reruns rule provenance)."""
    files = {"lock": Path(root) / LOCK, "torch": Path(root) / TORCH_LOCK, "gguf": Path(root) / GGUF_LOCK}
    return {k: hashlib.sha256(p.read_bytes()).hexdigest() if p.exists() else "" for k, p in files.items()}


def environment() -> dict:
    """What a model card records of its job's environment: Python, the versions of
    :data:`PACKAGES`, the CUDA torch was built with (None for a CPU build)."""
    # deferred: torch stays out of the DAG's build and the table jobs, which import this module
    import torch

    return {"python": platform.python_version(), "packages": package_versions(), "torch_cuda": torch.version.cuda}


def torch_build() -> dict:
    """The torch wheel installed: the lock pins torch by version alone (requirements/torch.txt), so
    which build it is (CPU, or the CUDA one of a GPU machine) is recorded here: its full version
    with the local label, and the SHA-256 of its RECORD (the wheel's list of its files with each
    file's hash), which tells one build of a version from another."""
    try:
        dist = distribution("torch")
    except PackageNotFoundError:
        return {"version": None, "record_sha256": None}
    record = dist.read_text("RECORD") or ""
    return {"version": dist.version, "record_sha256": hashlib.sha256(record.encode()).hexdigest() if record else None}


def device(setting: str) -> dict:
    """The device model jobs get on this machine under config key ``device``: the setting, the
    device ``auto`` resolves to, and the GPUs torch sees."""
    # deferred: torch stays out of the DAG's build and the table jobs, which import this module
    import torch

    available = torch.cuda.is_available()
    gpus = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] if available else []
    resolved = ("cuda" if available else "cpu") if setting == "auto" else setting
    return {"setting": setting, "resolved": resolved, "gpus": gpus}


def run_record(
    root: str | Path, device_setting: str, lock: str | Path, gguf: str | Path, cards: dict[str, dict]
) -> dict:
    """results/all/provenance.json: the run's environment (:func:`environment`), helixclock's
    source, torch's build (:func:`torch_build`), the device, whether the installed distributions
    are the lock (``lock`` with torch.txt beside it, and the GGUF packages of ``gguf`` at their
    locked versions; the differences where not: torch is locked by version alone, so a CUDA
    build of that version is the lock's, while the CUDA libraries it brings show as packages
    the lock does not pin), and each model card's recorded environment (``cards``: model -> card)."""
    found = environment_differences(installed_distributions(), locked(lock), read_lock(gguf))
    return {
        "record": RECORD,
        "written": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "helixclock": source(root),
        **environment(),
        "torch_build": torch_build(),
        "platform": platform.platform(),
        "device": device(device_setting),
        "lock": {"file": LOCK, "matches": not found, "differences": found},
        "models": {m: card.get("environment") for m, card in cards.items()},
        # each model's weights: its source and, for a hub model, the registry revision and the commit
        # it resolved to (README, "Models from the hub")
        "weights": {
            m: {k: card[k] for k in ("source", "revision", "commit") if k in card} for m, card in cards.items()
        },
    }


UNRECORDED = "not recorded"  # a model card made before cards recorded their environment
SHOWN_DIFFERENCES = 5  # differences from the lock the report's table lists (the record has all)


def provenance_table(record: dict, lock_versions: dict[str, str]):
    """The report's table: one row per item (helixclock, its commit, Python, torch's CUDA and
    build, the device, each package, whether the environment is the lock) with the run's value, the
    lock's (``lock_versions``: package -> version) and each model card's."""
    # deferred: pandas stays out of the DAG's build, which imports this module
    import pandas as pd

    src, dev, models = record["helixclock"], record["device"], record["models"]
    commit = (src["commit"] or "not a git checkout") + (" (with uncommitted changes)" if src.get("dirty") else "")
    gpus = f" ({', '.join(dev['gpus'])})" if dev["gpus"] else ""
    rows = [
        {"item": "helixclock", "run": src["version"]},
        {"item": "commit", "run": commit},
        {"item": "python", "run": record["python"], **{m: e["python"] if e else UNRECORDED for m, e in models.items()}},
        {
            "item": "torch CUDA",
            "run": _cuda(record["torch_cuda"]),
            **{m: _cuda(e["torch_cuda"]) if e else UNRECORDED for m, e in models.items()},
        },
        {"item": "torch build", "run": _build(record.get("torch_build"))},
        {"item": "device", "run": f"{dev['resolved']}{gpus} (config key device: {dev['setting']})"},
        {"item": "weights", **{m: _weights(w) for m, w in record.get("weights", {}).items()}},
    ]
    for name, installed in record["packages"].items():
        cards = {m: (e["packages"].get(name) or "not installed") if e else UNRECORDED for m, e in models.items()}
        rows.append({"item": name, "run": installed or "not installed", "lock": lock_versions.get(name), **cards})
    found = record["lock"]["differences"]
    more = f"; and {len(found) - SHOWN_DIFFERENCES} more ({RECORD})" if len(found) > SHOWN_DIFFERENCES else ""
    matches = "yes" if not found else "no: " + "; ".join(found[:SHOWN_DIFFERENCES]) + more
    rows.append({"item": "environment is the lock", "run": matches, "lock": record["lock"]["file"]})
    return pd.DataFrame(rows, columns=["item", "run", "lock", *models]).fillna("")


def _weights(weights: dict) -> str:
    """A model's weights in the table: its source, and a hub model's commit and revision."""
    if "commit" not in weights and "revision" not in weights:
        return weights.get("source", UNRECORDED)
    revision = weights.get("revision") or "the default branch"
    return f"{weights['source']} at {weights.get('commit') or 'an unknown commit'} (revision {revision})"


def _build(build: dict | None) -> str:
    """torch's wheel in the table: its version with the build's label and its RECORD's digest."""
    if not build or not build.get("version"):
        return UNRECORDED
    return f"{build['version']} (RECORD sha256 {(build.get('record_sha256') or 'unknown')[:16]})"


def _cuda(version: str | None) -> str:
    return version or "none (CPU build)"


# ---------------------------------------------------------------- recorded vs installed


def differences(recorded: dict, installed: dict) -> list[str]:
    """Packages (and Python) whose recorded version is not the installed one: "transformers
    5.24.0 (recorded) vs 5.25.0 (installed)"."""
    out = []
    if recorded.get("python") and recorded["python"] != installed.get("python"):
        out.append(f"python {recorded['python']} (recorded) vs {installed.get('python')} (installed)")
    for name, was in (recorded.get("packages") or {}).items():
        now = installed.get("packages", {}).get(name)
        if was != now:
            out.append(f"{name} {was} (recorded) vs {now} (installed)")
    return out


def changed_records(cards: dict[str, str | Path], record: str | Path | None = None) -> list[str]:
    """One line for each existing record (each model card of ``cards``, and the run's ``record``
    where given) whose versions are not the installed ones: what the provenance job warns about."""
    installed = {"python": platform.python_version(), "packages": package_versions()}
    lines = []
    for path in [*([record] if record is not None else []), *cards.values()]:
        path = Path(path)
        if not path.exists():
            continue
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        data = data.get("environment", data) if str(path).endswith("model.json") else data
        changed = differences(data or {}, installed)
        if changed:
            lines.append(f"{path}: " + "; ".join(changed))
    return lines


def warn_if_changed(card: dict, what: str) -> list[str]:
    """A model job's check: log a warning when the installed versions are not those its model
    card recorded (the card's outputs and this job's may then differ by more than the run's
    settings); returns the differences."""
    recorded = card.get("environment")
    if not recorded:
        return []
    changed = differences(recorded, {"python": platform.python_version(), "packages": package_versions()})
    if changed:
        log.warning(
            "%s: this job runs on other versions than its model card recorded (%s); the card's "
            'environment is what the model\'s earlier jobs ran on (docs/running.md, "Provenance of a run")',
            what,
            "; ".join(changed),
        )
    return changed


def write_provenance(device_setting: str, root: str | Path, cards: dict[str, str], outputs) -> dict:
    """Rule provenance: the record (:func:`run_record` of helixclock's checkout at ``root`` and
    its lock files; the model cards at ``cards``: model -> path) to ``outputs[0]``, its table as
    CSV and Markdown to ``outputs[1:3]``; a warning in the log where the environment is not the
    lock."""
    lock, gguf = Path(root) / LOCK, Path(root) / GGUF_LOCK
    record = run_record(
        root, device_setting, lock, gguf, {m: json.loads(Path(p).read_text()) for m, p in cards.items()}
    )
    table = provenance_table(record, {name: pin.version for name, pin in locked(lock).items()})
    write_json(outputs[0], record)
    write_table(table, outputs[1], outputs[2])
    for line in record["lock"]["differences"]:
        log.warning("the environment is not the lock: %s", line)
    for line in changed_records(cards):
        message = (
            f"helixclock: recorded versions differ from the installed ones, {line}; jobs that run now use "
            'the installed ones (docs/running.md, "Provenance of a run")'
        )
        log.warning("%s", message)
        print(message, file=sys.__stderr__)  # the console as well as the log: the run's user sees it
    log.info("%s", record)
    return record
