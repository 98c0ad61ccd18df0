"""Rule fig_fourier_pc1: Fig. 2."""
from helixclock.pipeline import figure
from helixclock.plots import fourier_pc1

figure(snakemake, fourier_pc1, n=snakemake.params.n)
