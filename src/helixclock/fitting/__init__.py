"""Fits of numbers and residuals: the helix, circle and polynomial bases (``bases``), the fits and
the PCA (``fits``), spectra along the number axis (``fourier``) and the helix fits' HDF5
files (``helix_files``).
"""
