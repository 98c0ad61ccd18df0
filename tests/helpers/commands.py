"""The commands the README and the docs document, read from their Markdown: each Snakemake
command line, whether written out (a shell block, an inline code span), given as an option to add
to one (an inline ``--config ...``), run by a ``make`` target whose recipe calls Snakemake, or
wrapped by ``sbatch --wrap``.  tests/dag/test_documented_commands.py dry-runs them."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from helpers.paths import REPO

DOCUMENTS = ("README.md", "config/README.md", "docs/*.md")
SHELL_BLOCKS = ("sh", "bash", "shell", "console")
FENCE = re.compile(r"^ *```(\w*)")
SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.S)
OPERATORS = ("&&", "||", ";", "|")
PROGRAMS = ("snakemake", "make", "sbatch")  # what a command must start with to be read here
# inline spans that name a placeholder for the reader's own value, not a command to run
PLACEHOLDERS = {
    "--config key=value": "any key of config/config.yaml",
    "--config models=...": "the models of a run",
    "--config models='[\"yours\"]'": "the reader's own model (README, 'Adding a model')",
}


@dataclass(frozen=True)
class Command:
    """A documented Snakemake command: where it is written, as written, and Snakemake's arguments."""

    where: str  # "README.md:121"
    text: str
    args: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.where}: {self.text}"


def _expand(text: str, variables: dict[str, str]) -> str:
    """``$(VAR)`` of a Makefile replaced by its value, again until none is left; ``$$`` is ``$``."""
    for _ in range(10):
        new = re.sub(r"\$\((\w+)\)", lambda m: variables.get(m.group(1), ""), text)
        if new == text:
            break
        text = new
    return text.replace("$$", "$")


def make_recipes(makefile: Path = REPO / "Makefile") -> dict[str, list[str]]:
    """Each target of the Makefile with the command lines of its own recipe (not its
    prerequisites'), its variables expanded as the Makefile assigns them."""
    variables: dict[str, str] = {}
    recipes: dict[str, list[str]] = {}
    target = None
    for line in makefile.read_text().splitlines():
        if line.startswith("\t") and target:
            recipes[target].append(line.strip())
            continue
        assignment = re.match(r"^(\w+)\s*(?::=|\?=|=)\s*(.*)$", line)
        rule = re.match(r"^([\w.$()/-]+)\s*:(?!=)", line)
        if assignment:
            variables[assignment.group(1)] = assignment.group(2).strip()
            target = None
        elif rule:
            target = rule.group(1)
            recipes[target] = []
        elif not line.startswith("#"):
            target = None
    return {t: [_expand(c, variables) for c in lines] for t, lines in recipes.items()}


def _words(text: str) -> list[list[str]]:
    """A shell line's commands (split at ``&&``, ``||``, ``;`` and ``|``), each as its words."""
    lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    commands: list[list[str]] = [[]]
    for word in lexer:
        if word in OPERATORS:
            commands.append([])
        else:
            commands[-1].append(word)
    return [c for c in commands if c]


def snakemake_args(line: str, recipes: dict[str, list[str]], copies: dict[str, str]) -> list[tuple[str, ...]]:
    """Snakemake's arguments of each Snakemake command ``line`` runs: itself, a make target's
    recipe or an sbatch's ``--wrap``.  ``copies`` maps a file a ``cp`` of the same block wrote to
    its source (a config copied to be edited); it is updated by the ``cp`` commands of ``line``."""
    out = []
    for words in _words(line):
        program = Path(words[0]).name
        if program == "snakemake":
            out.append(tuple(copies.get(w, w) for w in words[1:]))
        elif program == "cp" and len(words) == 3:
            copies[words[2]] = words[1]
        elif program == "make":
            for target in (w for w in words[1:] if "=" not in w and not w.startswith("-")):
                for recipe in recipes.get(target, []):
                    if re.search(r"(^|/)snakemake\s", recipe):
                        out += snakemake_args(recipe, recipes, copies)
        elif program == "sbatch":
            for i, w in enumerate(words):
                if w.startswith("--wrap="):
                    out += snakemake_args(w.removeprefix("--wrap="), recipes, copies)
                elif w == "--wrap" and i + 1 < len(words):
                    out += snakemake_args(words[i + 1], recipes, copies)
    return out


def snakemake_options() -> set[str]:
    """The options Snakemake's command line knows (its executor plugins' included)."""
    from snakemake.cli import get_argument_parser

    return set(get_argument_parser()._option_string_actions)


def commands_of(
    text: str, name: str, recipes: dict[str, list[str]] | None = None, options: set[str] | None = None
) -> list[Command]:
    """The Snakemake commands of a Markdown document ``text`` (called ``name`` in ``where``): every
    line of its shell blocks, then every inline code span that is a command (it starts with one
    of :data:`PROGRAMS`) or options of one (``--config ...``, ``--forcerun ...``: its first word is
    a long option of Snakemake's ``options``; added to a plain ``snakemake``), less an option's bare name and
    the :data:`PLACEHOLDERS`."""
    recipes = make_recipes() if recipes is None else recipes
    options = snakemake_options() if options is None else options
    found: list[Command] = []
    lines = text.splitlines()
    prose = list(lines)  # the text with its fenced blocks blanked, for the inline spans
    block, copies = None, {}
    for number, line in enumerate(lines, 1):
        fence = FENCE.match(line)
        if fence:
            block = None if block is not None else fence.group(1)
            copies = {}
            prose[number - 1] = ""
            continue
        if block is None:
            continue
        prose[number - 1] = ""
        if block in SHELL_BLOCKS and line.strip():
            for args in snakemake_args(line, recipes, copies):
                found.append(Command(f"{name}:{number}", line.strip(), args))
    joined = "\n".join(prose)
    for span in SPAN.finditer(joined):
        code = " ".join(span.group(2).split())
        number = joined.count("\n", 0, span.start()) + 1
        if code in PLACEHOLDERS or " " not in code:  # a placeholder, an option's name, a word
            continue
        if code.startswith("--") and code.split()[0] in options:
            code_line = f"snakemake {code}"
        elif Path(code.split()[0]).name in PROGRAMS:
            code_line = code
        else:
            continue
        for args in snakemake_args(code_line, recipes, {}):
            found.append(Command(f"{name}:{number}", code, args))
    return found


def documented_commands() -> list[Command]:
    """Every documented Snakemake command of the README and the docs (:data:`DOCUMENTS`)."""
    recipes, options = make_recipes(), snakemake_options()
    paths = [p for pattern in DOCUMENTS for p in sorted(REPO.glob(pattern))]
    return [c for p in paths for c in commands_of(p.read_text(), str(p.relative_to(REPO)), recipes, options)]
