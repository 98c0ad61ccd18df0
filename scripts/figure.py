"""Every figure rule (use rule figure as fig_...): tables in, params.function draws, PDF and PNG out."""

from helixclock.jobs.pipeline import plot_job

plot_job(snakemake)
