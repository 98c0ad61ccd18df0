"""Rule fig_fourier_360_vs_361: Fig. B1."""
from helixclock.pipeline import figure
from helixclock.plots import fourier_360_vs_361

figure(snakemake, fourier_360_vs_361, n=snakemake.params.n)
