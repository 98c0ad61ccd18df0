"""Every plotting rule: tables in, params.function draws, PDF and PNG out (see figure_rule)."""

from helixclock.pipeline import figure

figure(snakemake)
