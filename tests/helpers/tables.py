"""Tables the tests plant: accuracy tables of correct a+b prompts (the pairs' source) and the
helix stage's pairs table of a seeded draw."""

from __future__ import annotations

import numpy as np
import pandas as pd

from helixclock.prompts.sampling import pair_indices


def correct_table(rows) -> pd.DataFrame:
    """An accuracy table whose rows, the (a, b) of ``rows``, are all 'correct'."""
    a, b = np.array(rows).T
    return pd.DataFrame({"a": a, "b": b, "answer": a + b, "answer_token": 0, "correct": True})


def sampled_correct(per_b: int = 20, n_b: int = 40, seed: int = 0) -> pd.DataFrame:
    """A table of correct a+b prompts: ``per_b`` distinct a (of 0..99, drawn seeded) for each of
    the ``n_b`` values b = 0..n_b-1."""
    rng = np.random.default_rng(seed)
    rows = [(int(a), b) for b in range(n_b) for a in rng.choice(100, per_b, replace=False)]
    df = pd.DataFrame(rows, columns=["a", "b"])
    return df.assign(answer=df["a"] + df["b"], correct=True)


def pairs_table(correct: pd.DataFrame, n: int, seed: int, vary=("a",)) -> pd.DataFrame:
    """The pairs :func:`helixclock.prompts.sampling.pair_indices` draws from ``correct``, as the helix
    stage's pairs table (clean and corrupted a and b)."""
    clean, corrupted = pair_indices(correct, n, seed, vary=vary)
    c, k = correct.iloc[clean], correct.iloc[corrupted]
    return pd.DataFrame(
        {
            "clean_a": c["a"].to_numpy(),
            "corrupted_a": k["a"].to_numpy(),
            "clean_b": c["b"].to_numpy(),
            "corrupted_b": k["b"].to_numpy(),
        }
    )
