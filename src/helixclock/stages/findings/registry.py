"""The registry of findings (docs/findings.md, "Findings"): ``config/findings.yaml``, checked against
``workflow/schemas/findings.schema.yaml`` and against the tables the findings job reads.

A finding names a table (:data:`TABLES`: which saved table, of which model job, with which table
of prompts for its clusters), the rows of its quantity (x, and y for a difference or a ratio), how
any object in it is chosen, its family for multiplicity and the models it applies to.  The file
is the one place a claim is declared; the findings job computes every declared finding from the
tables and nothing else, so a claim the file lacks cannot reach the page.

The registry is a YAML file rather than a table in the library because it is what a reader
changes (a claim, its expected sign, its family), and a file validated by a schema states it
without code; the schema and :func:`check` reject a finding that names an unknown table, family
or column before any job runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ...lm.config import REPO, SCHEMAS, ConfigError, load_yaml, validate
from ...project import outputs

REGISTRY = REPO / "config" / "findings.yaml"


@dataclass(frozen=True)
class Table:
    """A saved table a finding reads: its path (``{model}``), the job that wrote its pair
    columns (x and y of one finding must come from one job: the same pairs), the table of that
    job's prompts (clusters; None where the job records none) and what a row is: ``pairs``
    (a raw table, one column per pair), ``units`` (one row per unit, e.g. a neuron), ``list``
    (rows that name objects, read by ``each``), ``tested`` (one row per test its stage made with
    a resampling this job cannot redo, e.g. a bootstrap over the numbers of a held-out R^2, or
    an exact null: the row's estimate, p and interval are read as they are, and the findings
    job applies the family's multiplicity and the verdict; quantity ``tested``), ``selection``
    (a raw table of the job's selection draw, read only to choose a ``select`` object: the
    table named by ``selection`` of the table the finding reads)."""

    path: str
    job: str
    prompts: str | None = None
    kind: str = "pairs"
    selection: str | None = None


HEADS_PAIRS, MLPS_PAIRS = outputs.HEADS_RAW["pairs"], outputs.MLPS_RAW["pairs"]
LAST_TOKEN_PAIRS = outputs.LAST_TOKEN_RAW["pairs"]
# A job's prompts table (helixclock.causal.pairs.job_pairs) holds its measuring pairs (draw "measure", the
# raw tables' pair columns) and, where it chose on one, its selection draw; a list table's prompts
# table says how the run chose its rows (column split). Every table of pairs is resampled pair by
# pair (contrasts.Tables.clusters): the pair is the unit the design samples (clean prompts without
# replacement, each corrupted partner independently given its clean one, over a deterministic
# model), so two pairs that share a prompt by chance are no more alike than any two, and the pair
# bootstrap, with no finite-population correction, is conservative. Table 1's other tasks: their
# prompts table (outputs.OTHER_TASKS_RAW_PAIRS) numbers each task's pairs from pair_0 and is not
# read (the same unit: the pair).
TABLES: dict[str, Table] = {
    "helix_sweep": Table(
        outputs.HELIX_RAW["sweep"], "helix_patching", outputs.HELIX_RAW["pairs"], selection="helix_sweep_selection"
    ),
    "helix_sweep_selection": Table(outputs.HELIX_RAW["sweep_selection"], "helix_patching", kind="selection"),
    "other_tasks": Table(outputs.OTHER_TASKS_RAW, "other_tasks_patching"),
    "last_token_fits": Table(
        outputs.LAST_TOKEN_RAW["fits"], "last_token_patching", LAST_TOKEN_PAIRS, selection="last_token_fits_selection"
    ),
    "last_token_fits_selection": Table(
        outputs.LAST_TOKEN_RAW["fits_selection"], "last_token_patching", kind="selection"
    ),
    "layer_effects": Table(outputs.LAST_TOKEN_RAW["layer_effects"], "last_token_patching", LAST_TOKEN_PAIRS),
    "head_effects": Table(outputs.HEADS_RAW["effects"], "head_patching", HEADS_PAIRS),
    "head_fits": Table(outputs.HEADS_RAW["fits"], "head_patching", HEADS_PAIRS),
    "head_categories": Table(outputs.HEADS_RAW["categories"], "head_patching", HEADS_PAIRS, kind="list"),
    "mlp_effects": Table(outputs.MLPS_RAW["effects"], "mlp_patching", MLPS_PAIRS),
    "mlp_fits": Table(outputs.MLPS_RAW["fits"], "mlp_patching", MLPS_PAIRS),
    "mlp_stages": Table(outputs.MLPS_SUMMARY["mlp_stages"], "mlp_summary", MLPS_PAIRS, kind="list"),
    "neuron_fits": Table(outputs.NEURON_FITS["table"], "neuron_fits", kind="units"),
    "neuron_bases": Table(outputs.NEURON_BASES["bases"], "neuron_bases", kind="units"),
    "number_bases_nested": Table(outputs.NUMBER_BASES["nested"], "number_bases", kind="tested"),
    "helix_nested": Table(outputs.HELIX_SUMMARY["nested"], "helix_summary", kind="tested"),
    "logit_lens_null": Table(outputs.LOGIT_LENS["null"], "neuron_logit_lens", kind="tested"),
}
RESERVED = ("label", "table", "combine", "column")  # keys of a row spec that are not label filters


@dataclass(frozen=True)
class Registry:
    """The validated registry: alpha, power, families (id -> kind, title, optionally its own
    ``min_pairs``), the findings (the file's dicts, defaults filled) and ``min_pairs``, the fewest
    pairs a row of a confirmatory or screening family needs to count in the family's m
    (:meth:`minimum`; 0 in a registry built without one)."""

    alpha: float
    power: float
    families: dict
    findings: list
    min_pairs: int = 0

    def minimum(self, family: str) -> int:
        """The declared minimum of pairs of ``family``: its own ``min_pairs``, else the file's."""
        return int(self.families.get(family, {}).get("min_pairs", self.min_pairs))

    def applying(self, several: bool) -> list[dict]:
        """The findings that apply to a model of numbers of one token, or of several."""
        kind = "several-token" if several else "one-token"
        return [f for f in self.findings if f["models"] in ("both", kind)]

    def tables(self, several: bool) -> list[str]:
        """Every table the applying findings read (their rows, selections, ``each`` lists), and the
        prompts tables of those that have one, in a fixed order."""
        names = set()
        for f in self.applying(several):
            names |= set(tables_of(f))
        return sorted(names)


def params(registry: Registry, several: bool) -> dict:
    """What the findings job of a model reads of the registry (its rule's params, so that a
    changed finding reruns the jobs of the models it applies to, and no other)."""
    findings = registry.applying(several)
    used = {f["family"] for f in findings}
    families = {k: v for k, v in registry.families.items() if k in used}
    return {
        "alpha": registry.alpha,
        "power": registry.power,
        "families": families,
        "findings": findings,
        "min_pairs": registry.min_pairs,
    }


def inputs(registry: Registry, several: bool, model: str) -> dict[str, str]:
    """The findings job's inputs for ``model``: each table its findings read, by registry name,
    and the prompts table of each that has one, as ``prompts_<name>``."""
    out = {}
    for name in registry.tables(several):
        out[name] = TABLES[name].path.format(model=model)
        if TABLES[name].prompts:
            out[f"prompts_{name}"] = TABLES[name].prompts.format(model=model)
    return out


def tables_of(finding: Mapping) -> list[str]:
    """The tables one finding reads."""
    names = [finding["table"]]
    for side in ("x", "y"):
        if side in finding:
            names.append(finding[side].get("table", finding["table"]))
    by = finding.get("select", {}).get("by")
    if isinstance(by, Mapping):
        names.append(by.get("table", finding["table"]))
    if "select" in finding and TABLES.get(finding["table"], Table("", "")).selection:
        names.append(TABLES[finding["table"]].selection)  # where the job's selection draw chooses it
    if "each" in finding:
        names.append(finding["each"]["table"])
    if finding["quantity"] == "category":
        names.append("head_fits")  # the fits of the paper's rule (section 5.2)
    return list(dict.fromkeys(names))


def load(path: str | Path = REGISTRY) -> Registry:
    """Read, validate (schema and :func:`check`) and return the registry."""
    raw = validate(load_yaml(path), SCHEMAS / "findings.schema.yaml", f"findings registry {Path(path).name}")
    findings = [{"reading": "last token", "term": "ld", **f} for f in raw["findings"]]  # the schema's defaults
    registry = Registry(raw["alpha"], raw["power"], raw["families"], findings, raw["min_pairs"])
    check(registry)
    return registry


def check(registry: Registry) -> None:
    """What the schema cannot say: unique ids, known families and tables, x and y of one job,
    the quantity's sides and expected sign, ``$`` values that ``each`` fills, a selection only
    of a difference or a mean of pairs (the schema bounds ``min_pairs``)."""
    seen = set()
    for f in registry.findings:
        where = f"findings registry: finding {f['id']!r}"
        if f["id"] in seen:
            raise ConfigError(f"{where}: the id is used twice")
        seen.add(f["id"])
        if f["family"] not in registry.families:
            declared = ", ".join(registry.families)
            raise ConfigError(f"{where}: family {f['family']!r} is not declared; declared: {declared}")
        unknown = [t for t in tables_of(f) if t not in TABLES]
        if unknown:
            raise ConfigError(f"{where}: table(s) {', '.join(unknown)} unknown; allowed: {', '.join(TABLES)}")
        q = f["quantity"]
        tested = TABLES[f["table"]].kind == "tested"
        if tested != (q == "tested") or tested != ("test" in f):
            raise ConfigError(
                f"{where}: quantity tested, a `test` and a table of kind tested go together "
                f"(quantity {q}, table {f['table']} of kind {TABLES[f['table']].kind}, "
                f"{'a' if 'test' in f else 'no'} test)"
            )
        if tested:
            test = f["test"]
            if "select" in f or f.get("each", {}).get("by"):
                raise ConfigError(f"{where}: a tested finding reads its stage's test as it is: no select, no each.by")
            if len({k for k in ("low", "high", "level") if k in test}) not in (0, 3):
                raise ConfigError(f"{where}: test names its interval by low, high and level together, or not at all")
            if "df" in test and "se" not in test:
                raise ConfigError(f"{where}: test.df gives the minimal detectable effect with test.se: name both")
            if ("detectable" in test) != ("detectable_of" in test):
                raise ConfigError(f"{where}: test.detectable and test.detectable_of go together")
            if "detectable_power" in test and "detectable" not in test:
                raise ConfigError(f"{where}: test.detectable_power belongs to test.detectable's amplitude: name both")
            if "detectable_share" in test and "detectable" not in test:
                raise ConfigError(f"{where}: test.detectable_share belongs to test.detectable's amplitude: name both")
            if registry.families[f["family"]]["kind"] == "estimate" or (
                f.get("expect") != "positive" and test["sided"] == "greater"
            ):
                raise ConfigError(
                    f"{where}: a tested finding is a claim with an expected sign in a confirmatory or screening "
                    "family (sided: greater is the side expect: positive names)"
                )
        two = q in ("difference", "ratio", "share_below")
        if two != ("y" in f) and q not in ("category", "tested"):
            raise ConfigError(f"{where}: quantity {q} {'needs' if two else 'takes no'} y")
        jobs = {TABLES[t].job for t in tables_of(f) if TABLES[t].kind != "list"}
        if len(jobs) > 1:
            names = ", ".join(sorted(jobs))
            raise ConfigError(f"{where}: x and y come from different jobs ({names}), not the same pairs")
        kind = registry.families[f["family"]]["kind"]
        if (kind != "estimate") != ("expect" in f):
            need = "needs an expected sign (expect)" if kind != "estimate" else "is an estimate: no expect"
            raise ConfigError(f"{where}: family {f['family']!r} is {kind}: the finding {need}")
        if "select" in f and (q not in ("mean", "difference") or TABLES[f["table"]].kind != "pairs"):
            raise ConfigError(f"{where}: a selection applies to a mean or a difference of pairs, not {q}")
        each = f.get("each", {})
        filled = set(each.get("columns", [])) | set(each.get("by", [])) | set(each.get("names", []))
        if set(each.get("names", [])) & set(each.get("columns", [])):
            raise ConfigError(f"{where}: each.names and each.columns name one column twice")
        for side in ("x", "y"):
            for key, value in f.get(side, {}).items():
                if isinstance(value, str) and value.startswith("$") and value[1:] not in filled:
                    raise ConfigError(f"{where}: {side}.{key} = {value!r}, but `each` fills no column {value[1:]!r}")
        if q == "category" and f["table"] != "head_effects":
            raise ConfigError(f"{where}: a category reads head_effects (with head_fits)")
