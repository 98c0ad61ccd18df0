"""Where the repository is, whatever the working directory of the tests."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]  # the repository root (config, workflow, committed toys)
