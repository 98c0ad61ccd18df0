"""Rule tab_head_categories: Table D1, the top heads and their categories."""
import pandas as pd

from helixclock.heads import category_table
from helixclock.io import write_table
from helixclock.pipeline import start

start(snakemake)
write_table(category_table(pd.read_csv(snakemake.input[0])), *snakemake.output, floatfmt=".3f")
