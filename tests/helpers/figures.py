"""Saving the figures a test draws."""

from __future__ import annotations

import os
from pathlib import Path


def save(fig, tmp_path: Path, name: str) -> Path:
    """Save a test figure as the pipeline does (also under $HELIXCLOCK_TEST_FIGURES when set, to
    look at) and check that it holds a drawing (over 10 kB)."""
    from helixclock.io import save_figure

    paths = [tmp_path / f"{name}.png"]
    if os.environ.get("HELIXCLOCK_TEST_FIGURES"):
        paths.append(Path(os.environ["HELIXCLOCK_TEST_FIGURES"]) / f"{name}.png")
    save_figure(fig, paths)
    assert paths[0].stat().st_size > 10_000
    return paths[0]
