"""Rule fig_distance_similarity: Fig. B2."""
from helixclock.pipeline import figure
from helixclock.plots import distance_similarity

figure(snakemake, distance_similarity, layer=snakemake.params.layer)
