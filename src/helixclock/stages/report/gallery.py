"""The site's figure gallery (docs/gallery.md): every figure of each named model of a finished run,
one row per figure and one column per model, by the paper's sections in the compiled paper's
numbering (:data:`helixclock.project.outputs.PAPER_FIGURES`), each captioned as the HTML report captions
it (``workflow/report/<id's number>.rst``).  Each model's PNGs (``results/{model}/figures/``) are
copied downsized (at most :data:`WIDTH` pixels wide, 256 colours, optimized) into
``gallery/{model}/`` beside the page; a figure a model lacks is named on the page as missing for
that model, and each model's line names the run it came from (the commit and date of its
project's provenance record, ``results/all/provenance.json``), as the findings snapshot does
(:mod:`helixclock.stages.findings.snapshot`).

    python -m helixclock.stages.report.gallery DEST MODEL[=PROJECT] [MODEL[=PROJECT] ...] [--width PX] [--captions DIR]

run in the finished project (``make gallery`` after ``make run`` and ``make real``); a model
given as ``MODEL=PROJECT`` is read from the run in the folder PROJECT instead.  The captions are
the first model's project's (those of the code that drew its figures) unless ``--captions`` names
another folder of them.  DEST is the docs
folder: the page is ``DEST/gallery.md``, the images ``DEST/gallery/{model}/`` (the whole of
``DEST/gallery/`` is rewritten, so no image of an earlier gallery stays behind).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
from pathlib import Path
from typing import NamedTuple

from helixclock.project import outputs

WIDTH = 900  # pixels: the widest image the gallery keeps
PAGE = "gallery.md"
IMAGES = "gallery"  # beside the page: gallery/{model}/{fig_id}.png
CAPTIONS = "workflow/report"  # of the project: the report's captions, one .rst a figure
# a model's own figures, in the order the page shows them: the paper's, then helixclock's own
# figures of one model (figN1); the figAll_ figures are of results/all, the run's models together
MODEL_FIGURES = tuple(i.output for i in outputs.PAPER_FIGURES if i.output) + tuple(
    f for f in outputs.OWN_FIGURES if not f.startswith("figAll")
)
CROSS_MODEL = tuple(f for f in outputs.OWN_FIGURES if f.startswith("figAll"))


class Run(NamedTuple):
    """Where a model's figures come from: the project folder and its provenance record's commit
    (7 characters), date (YYYY-MM-DD) and whether tracked files had uncommitted changes."""

    project: Path
    commit: str | None  # None: the run was not of a git checkout
    date: str
    dirty: bool


def run_of(project: Path) -> Run:
    """The run of ``project``, read from its provenance record (written as a run finishes)."""
    record = project / outputs.RECORD
    if not record.exists():
        raise FileNotFoundError(f"no provenance record in {project} (finish its run first): {record}")
    run = json.loads(record.read_text())
    commit = run["helixclock"]["commit"]
    return Run(project, commit and commit[:7], run["written"][:10], bool(run["helixclock"].get("dirty")))


def caption_file(fig_id: str) -> str:
    """The report's caption file of a figure id, as workflow/rules/targets.smk's ``caption`` names
    it: by the id's number (``fig04_helix_patching`` -> ``fig04.rst``), else the whole id."""
    number = re.match(r"(fig|tab)[A-Z]?[0-9]+", fig_id)
    return f"{number.group(0) if number else fig_id}.rst"


def caption(fig_id: str, captions: Path) -> str:
    """A figure's report caption as one Markdown paragraph (reStructuredText's ``literal`` as `code`)."""
    text = " ".join((captions / caption_file(fig_id)).read_text().split())
    return re.sub(r"``([^`]+)``", r"`\1`", text)


def downsize(source: Path, target: Path, width: int = WIDTH) -> int:
    """``source`` written to ``target`` at most ``width`` pixels wide (aspect kept, never enlarged),
    on white, in 256 colours, optimized; the bytes written."""
    # deferred: only the gallery's images need Pillow (matplotlib's own dependency)
    from PIL import Image

    with Image.open(source) as image:
        image = image.convert("RGBA")
        flat = Image.new("RGB", image.size, "white")
        flat.paste(image, mask=image.getchannel("A"))
    flat.thumbnail((width, flat.height), Image.Resampling.LANCZOS)
    small = flat.quantize(colors=256, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE)
    target.parent.mkdir(parents=True, exist_ok=True)
    small.save(target, format="PNG", optimize=True)
    return target.stat().st_size


def _where(section: str) -> str:
    return f"Section {section}" if section.isdigit() else f"Appendix {section}"


def _figure_name(fig_id: str) -> str:
    """The id's own short name: Fig. 4, Fig. D2, Fig. N1 (as the captions begin)."""
    return "Fig. " + re.match(r"fig0*([A-Z]?[0-9]+)", fig_id).group(1)


def _heading(item: outputs.PaperItem) -> str:
    """Figure 4: `fig04_...`; an appendix's with its id's name: Figure 24 (Fig. D2): `figD2_...`."""
    name = _figure_name(item.output)
    also = "" if name == f"Fig. {item.number}" else f" ({name})"
    return f"### Figure {item.number}{also}: `{item.output}`"


def _row(fig_id: str, models: list[str], have: dict[str, set[str]]) -> list[str]:
    cells = []
    for model in models:
        if fig_id in have[model]:
            image = f"{IMAGES}/{model}/{fig_id}.png"
            cells.append(f"[![{model}: {fig_id}]({image})]({image})")
        else:
            cells.append(f"**missing**: `{model}` has no `{fig_id}`")
    return [
        "| " + " | ".join(f"`{m}`" for m in models) + " |",
        "|" + "---|" * len(models),
        "| " + " | ".join(cells) + " |",
    ]


def page_markdown(runs: dict[str, Run], have: dict[str, set[str]], captions: Path, width: int = WIDTH) -> str:
    """The gallery page: each model's run and the figures it lacks, then every figure of a model
    by the paper's sections (a figure of the paper that helixclock draws as another figure of
    other models named so), each with its compiled number, caption and one image a model."""
    models = list(runs)
    lines = [
        "# Figure gallery",
        "",
        "<!-- written by `python -m helixclock.stages.report.gallery` (`make gallery`); regenerate, do not edit -->",
        "",
        "Every figure helixclock draws of a model, by the paper's sections and in the compiled paper's",
        'numbering ([Outputs, "The paper\'s numbering"](outputs.md#the-papers-numbering)), each with the',
        "caption the HTML report gives it, one column a model in the order `make gallery` names them (by",
        "default the main job's toy `toy-gptj`, [The embedded default](embedded-default.md), beside the",
        "real models of `make real`, [Two real models](real-models.md)). The images are copies at most",
        f"{width} pixels wide (click one to open it alone); a run's own `results/{{model}}/figures/` holds",
        "each at full size and as a PDF. Where each model's figures come from:",
        "",
    ]
    for model, run in runs.items():
        dirty = " (with uncommitted changes)" if run.dirty else ""
        at = f"at commit `{run.commit}`{dirty}" if run.commit else "outside a git checkout"
        lacks = [f for f in MODEL_FIGURES if f not in have[model]]
        missing = f"; missing: {', '.join(f'`{f}`' for f in lacks)}" if lacks else ""
        lines.append(
            f"* `{model}`: `results/{model}/figures/` of the run {at} on {run.date},"
            f" {len(MODEL_FIGURES) - len(lacks)} of {len(MODEL_FIGURES)} figures{missing}."
        )
    lines += [
        "",
        f"helixclock's cross-model figures ({', '.join(f'`{f}`' for f in CROSS_MODEL)}) compare all the",
        "models of one run and are not here: they are in that run's `results/all/figures/` and its report",
        "([Running](running.md)).",
    ]
    section = None
    for item in outputs.PAPER_FIGURES:
        if item.section != section:
            section = item.section
            lines += ["", f"## {_where(section)}"]
        if item.output is None:
            drawn = outputs.PAPER_NOT_DRAWN[item.label]
            lines += [
                "",
                f"### Figure {item.number}: not drawn here",
                "",
                f"The paper's Figure {item.number} is `{drawn}` of Pythia-6.9B and Llama3.1-8B (the models",
                "`pythia` and `llama`), which the main job does not run ([Outputs](outputs.md#the-papers-numbering)).",
            ]
            continue
        lines += ["", _heading(item), ""]
        lines += [caption(item.output, captions), "", *_row(item.output, models, have)]
    lines += ["", "## helixclock's own figures", ""]
    lines.append("Figures of a model that the paper does not have ([Outputs](outputs.md#the-papers-numbering)).")
    for fig_id in MODEL_FIGURES:
        if outputs.paper_number(fig_id) is None:
            lines += ["", f"### {_figure_name(fig_id)}: `{fig_id}`", ""]
            lines += [caption(fig_id, captions), "", *_row(fig_id, models, have)]
    return "\n".join(lines) + "\n"


def gallery(
    runs: dict[str, Path], dest: Path, width: int = WIDTH, captions: Path | None = None
) -> tuple[Path, dict[Path, int]]:
    """The gallery of ``runs`` (model -> its finished project folder) written into the docs folder
    ``dest``: ``dest/gallery.md`` and each model's figures downsized into ``dest/gallery/{model}/``
    (the folder rewritten); captions from ``captions`` (the first project's ``workflow/report``
    unless given).  Returns the page and each image written with its bytes.  A model with no
    figures folder, or a project with no provenance record, is refused (FileNotFoundError)."""
    if not runs:
        raise ValueError("the gallery needs at least one model")
    projects = {project: run_of(project) for project in dict.fromkeys(runs.values())}
    folders = {}
    for model, project in runs.items():
        folders[model] = project / Path(outputs.figure("x", model)[1]).parent
        if not folders[model].is_dir():
            raise FileNotFoundError(f"no figures of {model} in {project} (run it first): {folders[model]}")
    have = {model: {f for f in MODEL_FIGURES if (folder / f"{f}.png").exists()} for model, folder in folders.items()}
    captions = captions or next(iter(runs.values())) / CAPTIONS
    # the page first: a caption not there stops the command before it changes anything in dest
    markdown = page_markdown({m: projects[p] for m, p in runs.items()}, have, captions, width)
    images = dest / IMAGES
    if images.exists():
        shutil.rmtree(images)
    written = {}
    for model, folder in folders.items():
        for fig_id in sorted(have[model]):
            target = images / model / f"{fig_id}.png"
            written[target] = downsize(folder / f"{fig_id}.png", target, width)
    page = dest / PAGE
    page.write_text(markdown)
    return page, written


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m helixclock.stages.report.gallery", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("dest", type=Path, help="the docs folder: DEST/gallery.md and DEST/gallery/{model}/")
    parser.add_argument("models", nargs="+", metavar="MODEL[=PROJECT]", help="a model of this run, or of PROJECT's")
    parser.add_argument("--width", type=int, default=WIDTH, help=f"the widest image kept, in pixels ({WIDTH})")
    parser.add_argument(
        "--captions", type=Path, help=f"the report's captions (default: the first model's project's {CAPTIONS})"
    )
    args = parser.parse_args(argv)
    runs = {}
    for spec in args.models:
        model, _, project = spec.partition("=")
        runs[model] = Path(project or ".").resolve()
    page, written = gallery(runs, args.dest, args.width, args.captions)
    for model in runs:
        mine = [n for p, n in written.items() if p.parent.name == model]
        print(f"{model}: {len(mine)} images, {sum(mine):,} bytes")
    print(f"{page}: {len(written)} images in {args.dest / IMAGES}, {sum(written.values()):,} bytes in all")


if __name__ == "__main__":
    main()
