"""Every plotting rule: tables in, params.function draws, PDF and PNG out (see figure_rule)."""

from helixclock.pipeline import plot_job

plot_job(snakemake)
