"""Rule fig_last_token_helix."""
from helixclock.pipeline import figure
from helixclock.plots import last_token_helix

figure(snakemake, last_token_helix)
