"""Rule fig_other_tasks_patching."""
from helixclock.pipeline import figure
from helixclock.plots import other_tasks_patching

figure(snakemake, other_tasks_patching)
