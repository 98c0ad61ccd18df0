"""Percentile-bootstrap intervals of many rows: helixclock's against scipy.stats.bootstrap.

Workload: a raw per-pair table as the model jobs write it (Fig. 4's sweep of GPT-J: 28 layers
x 39 fits = 1,092 rows of 100 pairs), 1,000 resamples, 95% percentile intervals.

* ours: :func:`helixclock.stats.statistics.bootstrap_ci`, one draw of resampled pair indices shared
  by every row, means and quantiles as tensor operations;
* scipy: ``scipy.stats.bootstrap(..., method="percentile", vectorized=True, axis=-1)``, the
  library's own (it draws per call, so rows are resampled independently).

Both give the same kind of interval; the last line is JSON with ``speedup_vs_scipy`` and the
largest difference of the interval bounds (in units of the rows' standard error).
"""

from __future__ import annotations

import time

import numpy as np
from common import emit
from scipy import stats

from helixclock.stats.statistics import bootstrap_ci


def main() -> None:
    rng = np.random.default_rng(0)
    values = rng.normal(1.0, 2.0, (1092, 100)) + rng.normal(0, 1, (1092, 1))
    t = time.perf_counter()
    mean, lo, hi = bootstrap_ci(values, 1000, seed=0)
    ours = time.perf_counter() - t
    t = time.perf_counter()
    res = stats.bootstrap((values,), np.mean, n_resamples=1000, method="percentile", vectorized=True, axis=-1,
                          random_state=0)  # fmt: skip
    scipy_s = time.perf_counter() - t
    se = values.std(-1) / np.sqrt(values.shape[-1])
    gap = max(np.abs(lo.numpy() - res.confidence_interval.low).max() / se.mean(),
              np.abs(hi.numpy() - res.confidence_interval.high).max() / se.mean())  # fmt: skip
    print(f"ours {ours:.3f} s, scipy {scipy_s:.3f} s; largest bound difference {gap:.2f} standard errors")
    emit({"benchmark": "bootstrap", "rows": values.shape[0], "pairs": values.shape[1], "resamples": 1000,
          "ours_s": round(ours, 3), "scipy_s": round(scipy_s, 3), "speedup_vs_scipy": round(scipy_s / ours, 1),
          "max_bound_difference_in_se": round(float(gap), 2)})  # fmt: skip


if __name__ == "__main__":
    main()
