"""Phases on a circle: the differences the neuron fits' known-answer tests compare."""

from __future__ import annotations

import numpy as np


def circular(d1, d2, T):
    """Smallest signed difference of phases modulo T."""
    T = np.asarray(T, dtype=float)
    return (d1 - d2 + T / 2) % T - T / 2
