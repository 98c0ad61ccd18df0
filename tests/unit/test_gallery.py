"""The site's figure gallery (docs/gallery.md, `make gallery`; helixclock.stages.report.gallery): a
finished run's figures of each named model, downsized, one row per figure and one column per
model, by the paper's sections in the compiled paper's numbering, each with the report's caption;
a figure a model lacks named as missing for that model; a line per model naming its run.  The
checker below reads a page as a reader would (every figure of a model either shown or named
missing, every image there and at most the width); it passes the writer's page and fails on a
page that drops a missing figure or keeps an image too wide, and it reads the committed page."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from helpers.dag import workflow_api
from helpers.paths import REPO
from PIL import Image

from helixclock.project import outputs
from helixclock.stages.report import gallery as G

CAPTIONS = REPO / "workflow" / "report"
DOCS = REPO / "docs"
WIDTH = 120  # the fake run's limit: its figures are 300 px wide, one 80 px
# the fake run: m1 has these four figures, m2 all but figD2 (and neither has the rest)
M1 = ("fig01_clock", "fig04_helix_patching", "figD2_head_patching", "figN1_number_bases")
M2 = ("fig01_clock", "fig04_helix_patching", "figN1_number_bases")


def fake_run(root: Path, figures: dict[str, tuple[str, ...]], commit: str, narrow: str = "fig01_clock") -> Path:
    """A finished project folder: a provenance record and each model's figure PNGs (300 x 100 px,
    ``narrow`` 80 x 60 px)."""
    record = root / outputs.RECORD
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(
        json.dumps({"written": "2026-11-28T03:42:54+00:00", "helixclock": {"commit": commit, "dirty": False}})
    )
    for model, ids in figures.items():
        for i, fig_id in enumerate(ids):
            png = root / outputs.figure(fig_id, model)[1]
            png.parent.mkdir(parents=True, exist_ok=True)
            size = (80, 60) if fig_id == narrow else (300, 100)
            Image.new("RGBA", size, (40 * i, 100, 200, 255)).save(png)
    return root


def page_models(page: str) -> list[str]:
    """The models of a gallery page, in column order: its provenance lines (``* `model`: ...``)."""
    return re.findall(r"^\* `([^`]+)`: `results/[^`]+/figures/` of the run ", page, re.M)


def gallery_problems(page: str, docs: Path, width: int) -> list[str]:
    """What a reader would find wrong with a gallery page written into ``docs``: a figure of a
    model (helixclock.stages.report.gallery.MODEL_FIGURES) whose row is not there, or whose cell for
    a model neither shows its image nor names it missing; an image link whose file is not there or
    is wider than ``width``; a model's line without a commit; figures out of the paper's order."""
    problems = []
    models = page_models(page)
    if not models:
        return ["no model's provenance line"]
    for line in page.splitlines():
        if line.startswith("* `") and not re.search(r"at commit `[0-9a-f]{7}`", line):
            problems.append(f"no commit: {line[:60]}")
    headings = re.findall(r"^### (?:Figure (\d+)(?: \(Fig\. \w+\))?|Fig\. \w+): `(\w+)`$", page, re.M)
    numbers = [int(n) for n, _ in headings if n]
    if numbers != sorted(numbers):
        problems.append(f"figures out of the paper's order: {numbers}")
    shown = [fig_id for _, fig_id in headings]
    for fig_id in G.MODEL_FIGURES:
        if fig_id not in shown:
            problems.append(f"{fig_id}: no row")
            continue
        block = page.split(f": `{fig_id}`\n", 1)[1].split("\n#", 1)[0]
        table = [line for line in block.splitlines() if line.startswith("|")]
        cells = [c.strip() for c in table[2].strip("|").split("|")] if len(table) == 3 else []
        if len(cells) != len(models):
            problems.append(f"{fig_id}: {len(cells)} cells for {len(models)} models")
            continue
        for model, cell in zip(models, cells):
            image = f"]({G.IMAGES}/{model}/{fig_id}.png)"
            if image not in cell and cell != f"**missing**: `{model}` has no `{fig_id}`":
                problems.append(f"{fig_id}: {model}'s cell neither shows it nor names it missing: {cell!r}")
    for link in sorted(set(re.findall(r"\]\((" + G.IMAGES + r"/[^)]+\.png)\)", page))):
        path = docs / link
        if not path.exists():
            problems.append(f"{link}: no such image")
        elif Image.open(path).width > width:
            problems.append(f"{link}: {Image.open(path).width} px wide, over {width}")
    return problems


@pytest.fixture
def written(tmp_path):
    project = fake_run(tmp_path / "run", {"m1": M1, "m2": M2}, "abc1234" + "0" * 33)
    docs = tmp_path / "docs"
    page, images = G.gallery({"m1": project, "m2": project}, docs, width=WIDTH, captions=CAPTIONS)
    return docs, page, images


def test_the_gallery_shows_every_figure_in_the_papers_order_with_its_number_and_caption(written):
    docs, page, images = written
    text = page.read_text()
    assert page == docs / "gallery.md" and gallery_problems(text, docs, WIDTH) == []
    assert page_models(text) == ["m1", "m2"]
    # every figure of a model, in the compiled paper's order, then helixclock's own
    positions = [text.index(f": `{fig_id}`\n") for fig_id in G.MODEL_FIGURES]
    assert positions == sorted(positions) and len(G.MODEL_FIGURES) == 42
    assert "### Figure 4: `fig04_helix_patching`" in text
    assert "### Figure 24 (Fig. D2): `figD2_head_patching`" in text
    assert "### Figure 11 (Fig. A1): `figA1_accuracy_heatmap`" in text
    assert "### Fig. N1: `figN1_number_bases`" in text.split("## helixclock's own figures")[1]
    assert text.index("## Appendix C") < text.index("### Figure 16 (Fig. C1)") < text.index("## Appendix D")
    # the two figures of the paper drawn as others of other models are named, not skipped
    assert "### Figure 19: not drawn here" in text and "### Figure 23: not drawn here" in text
    assert "`fig04_helix_patching` of Pythia-6.9B" in text.split("### Figure 19")[1].split("###")[0]
    # each with the report's caption, ``literal`` as `code`
    for fig_id in ("fig04_helix_patching", "figD2_head_patching", "fig10_neuron_trends"):
        first = " ".join((CAPTIONS / G.caption_file(fig_id)).read_text().split())[:60].replace("``", "`")
        assert first in text.split(f": `{fig_id}`\n")[1].split("\n### ")[0], fig_id
    assert "``" not in text and "`|c_T,a+b|`" in text
    # the cross-model figures are named as not here
    assert "`figAll_accuracy`, `figAll_ld_ratios`) compare all the" in text


def test_a_figure_a_model_lacks_is_named_missing_and_each_model_names_its_run(written):
    docs, page, images = written
    text = page.read_text()
    d2 = text.split(": `figD2_head_patching`\n")[1].split("\n### ")[0]
    assert "[![m1: figD2_head_patching](gallery/m1/figD2_head_patching.png)](gallery/m1/figD2_head_patching.png)" in d2
    assert "**missing**: `m2` has no `figD2_head_patching`" in d2
    f2 = text.split(": `fig02_fourier_pc1`\n")[1].split("\n### ")[0]  # neither model has it
    assert "**missing**: `m1` has no `fig02_fourier_pc1`" in f2 and "**missing**: `m2` has no `fig02_fourier_pc1`" in f2
    (m1, m2) = [line for line in text.splitlines() if line.startswith("* `")]
    assert "`m1`: `results/m1/figures/` of the run at commit `abc1234` on 2026-11-28, 4 of 42 figures;" in m1
    assert "`m2`: `results/m2/figures/` of the run at commit `abc1234` on 2026-11-28, 3 of 42 figures;" in m2
    assert "`figD2_head_patching`" in m2 and "`figD2_head_patching`" not in m1
    assert "`fig04_helix_patching`" not in m1 + m2 and "`fig02_fourier_pc1`" in m1 and "`fig02_fourier_pc1`" in m2


def test_the_images_are_downsized_copies_and_only_the_figures_a_model_has(written):
    docs, page, images = written
    assert sorted(p.relative_to(docs).as_posix() for p in images) == sorted(
        [f"gallery/m1/{f}.png" for f in M1] + [f"gallery/m2/{f}.png" for f in M2]
    )
    assert sorted(p.relative_to(docs).as_posix() for p in (docs / "gallery").rglob("*.png")) == sorted(
        p.relative_to(docs).as_posix() for p in images
    )
    for path, size in images.items():
        with Image.open(path) as image:
            assert path.stat().st_size == size and image.mode == "P"  # 256 colours
            if path.stem == "fig01_clock":
                assert image.size == (80, 60)  # narrower than the limit: not enlarged
            else:
                assert image.size == (WIDTH, 40)  # 300 x 100 -> the limit, the aspect kept


def test_the_checker_rejects_a_page_that_drops_a_missing_figure_or_keeps_an_image_too_wide(written):
    """The wrong arms: the same page with m2's missing D2 left blank, with D2's row gone, or with an
    image over the limit, fails the checker the committed page passes."""
    docs, page, images = written
    text = page.read_text()
    blank = text.replace("**missing**: `m2` has no `figD2_head_patching`", " ")
    assert gallery_problems(blank, docs, WIDTH) == [
        "figD2_head_patching: m2's cell neither shows it nor names it missing: ''"
    ]
    head, rest = text.split("### Figure 24 (Fig. D2)")
    dropped = head + "### Figure 25" + rest.split("### Figure 25", 1)[1]
    assert gallery_problems(dropped, docs, WIDTH) == ["figD2_head_patching: no row"]
    Image.new("RGB", (WIDTH + 1, 10), "white").save(docs / "gallery" / "m1" / "fig04_helix_patching.png")
    assert gallery_problems(text, docs, WIDTH) == [
        f"gallery/m1/fig04_helix_patching.png: {WIDTH + 1} px wide, over {WIDTH}"
    ]
    (docs / "gallery" / "m1" / "fig04_helix_patching.png").unlink()
    assert gallery_problems(text, docs, WIDTH) == ["gallery/m1/fig04_helix_patching.png: no such image"]


def test_a_gallery_rewrites_its_folder_reads_each_models_own_run_and_refuses_an_unfinished_one(tmp_path):
    toy = fake_run(tmp_path / "toy-run", {"toy": ("fig04_helix_patching",)}, "1111111" + "0" * 33)
    real = fake_run(tmp_path / "real-run", {"real": M1}, "2222222" + "0" * 33)
    docs = tmp_path / "docs"
    stale = docs / "gallery" / "old" / "fig04_helix_patching.png"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"an earlier gallery's")
    page, images = G.gallery({"toy": toy, "real": real}, docs, width=WIDTH, captions=CAPTIONS)
    text = page.read_text()
    assert not stale.exists() and gallery_problems(text, docs, WIDTH) == []
    assert "`toy`: `results/toy/figures/` of the run at commit `1111111` on" in text
    assert "`real`: `results/real/figures/` of the run at commit `2222222` on" in text
    assert page_models(text) == ["toy", "real"]  # the columns in the order given: the toy first
    with pytest.raises(FileNotFoundError, match="no figures of absent in"):
        G.gallery({"absent": real}, docs, captions=CAPTIONS)
    (real / outputs.RECORD).unlink()
    with pytest.raises(FileNotFoundError, match="no provenance record in"):
        G.gallery({"real": real}, docs, captions=CAPTIONS)


def test_the_command_writes_the_gallery_from_the_project_it_runs_in(tmp_path, capsys, monkeypatch):
    """`make gallery`: python -m helixclock.stages.report.gallery DEST MODEL[=PROJECT] ..., the
    captions read from the project's workflow/report."""
    project = fake_run(tmp_path / "run", {"m1": M1}, "abc1234" + "0" * 33)
    (project / "workflow").symlink_to(REPO / "workflow")
    other = fake_run(tmp_path / "other", {"m2": M2}, "def5678" + "0" * 33)
    monkeypatch.chdir(project)
    G.main(["docs", "m1", f"m2={other}", "--width", str(WIDTH)])
    text = (project / "docs" / "gallery.md").read_text()
    assert gallery_problems(text, project / "docs", WIDTH) == [] and page_models(text) == ["m1", "m2"]
    assert "* `m2`: `results/m2/figures/` of the run at commit `def5678` on 2026-11-28, 3 of 42" in text
    out = capsys.readouterr().out
    assert "m1: 4 images," in out and "m2: 3 images," in out and "7 images in docs/gallery," in out
    # the captions of another folder: here the other project, which has none of its own
    G.main(["docs", f"m2={other}", "--captions", str(CAPTIONS)])
    assert page_models((project / "docs" / "gallery.md").read_text()) == ["m2"]
    before = {p: p.read_bytes() for p in (project / "docs").rglob("*") if p.is_file()}
    with pytest.raises(FileNotFoundError, match="fig01.rst"):
        G.main(["docs", f"m2={other}"])
    assert {p: p.read_bytes() for p in (project / "docs").rglob("*") if p.is_file()} == before  # nothing changed


def test_each_figures_caption_is_the_one_the_report_gives_it(tmp_path):
    """gallery.caption_file names, for every figure of a model, the caption file its rule's report()
    names (workflow/rules/targets.smk, figure_files), read from the workflow through Snakemake's API."""
    captions = {}
    with workflow_api(tmp_path, REPO / "config" / "config.yaml") as workflow:
        for rule in workflow._workflow.rules:
            for output in rule.output:
                if "report" in output.flags and str(output).endswith(".png"):
                    caption = output.flags["report"].caption.get_path_or_uri(secret_free=True)
                    captions[Path(str(output)).stem] = Path(str(caption)).name
    assert set(G.MODEL_FIGURES) <= set(captions)
    for fig_id in G.MODEL_FIGURES:
        assert G.caption_file(fig_id) == captions[fig_id], fig_id
        assert (CAPTIONS / G.caption_file(fig_id)).exists()


def test_the_committed_gallery_links_only_images_that_are_there_and_shows_every_figure():
    """docs/gallery.md, written by `make gallery` from finished runs (never by hand): every image it
    links is committed and at most the gallery's width, every figure of a model is shown or named
    missing for each model, each model names its run's commit, and no image is left unlinked."""
    page = (DOCS / G.PAGE).read_text()
    assert gallery_problems(page, DOCS, G.WIDTH) == []
    linked = set(re.findall(r"\]\((" + G.IMAGES + r"/[^)]+\.png)\)", page))
    there = {p.relative_to(DOCS).as_posix() for p in (DOCS / G.IMAGES).rglob("*") if p.is_file()}
    assert there == linked
