"""The figures' shared look (``style``), how every figure is laid out (``figure_layout``), and
``sns``: the seaborn every figure module draws with, imported here first.

seaborn imports ``scipy.stats`` and ``scipy.cluster`` at its own import, for kernel density
estimates (without them it uses the copy of ``gaussian_kde`` it carries) and clustered heatmaps
(``clustermap``).  No figure here draws either, and the two imports are about 0.5 of the 2.7 CPU
seconds of a figure job, whose interpreter draws one figure (the tiny run has 84 of them:
docs/benchmarks.md, "The suite").  So where a process has not imported them already, seaborn is
imported with them hidden; a process that has (a test, a notebook) gets seaborn as usual.
"""

from __future__ import annotations

import sys

import matplotlib

matplotlib.use("Agg")  # figures are written to files; no display is needed or wanted


# seaborn with scipy.stats and scipy.cluster hidden from it where this process has not imported
# them (a None in sys.modules makes their import fail, and seaborn's own try/except takes its
# fallback); the entries go again after, so a later import of either works as usual
_HIDDEN = [name for name in ("scipy.stats", "scipy.cluster") if name not in sys.modules]
sys.modules.update(dict.fromkeys(_HIDDEN))
try:
    import seaborn as sns
finally:
    for _name in _HIDDEN:
        if _name in sys.modules and sys.modules[_name] is None:
            del sys.modules[_name]

__all__ = ["sns"]
