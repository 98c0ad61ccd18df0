# The base rules of the rule files: each is used only as `use rule <base> as <name> with:`, which
# keeps every rule's name, inputs and outputs in its own file and shares the rest.  A base rule's
# output is its wildcard `never`, which matches no path (NEVER): it is never a job itself.  Each
# derived rule says `localrule: True` itself: Snakemake's `with:` resets it (as of Snakemake 9.27).


rule figure:
    """Base of every figure rule (use rule figure as fig_...): scripts/figure.py draws params.function; never a job."""
    output:
        "{never}",
    log:
        "{never}.log",
    wildcard_constraints:
        never=NEVER,
    conda:
        ENV
    params:
        # "helixclock.stages.<stage>.figures:<function>", called with the input tables, the model
        # and kwargs (helixclock.jobs.pipeline.plot_job)
        function=None,
        kwargs={},
    script:
        "../../scripts/figure.py"


rule publish:
    """Base of every publish_<rule>: moves a staged job's outputs into place once it has succeeded; never a job."""
    output:
        "{never}",
    log:
        "{never}.log",
    wildcard_constraints:
        never=NEVER,
    conda:
        ENV
    # each staged file to the path it stands for, its own path less .staging/<rule>/<params hash>/: a
    # rename on one file system (no copy, even of a cache of many GB).  A shell job runs in Snakemake's
    # own process (a run: block would start a new Snakemake for each).  The command's text is a rerun
    # trigger and a publish job's rerun means its work job's (the staged files are temporary and
    # gone): change it only when a rerun of every staged job is acceptable.
    shell:
        '(for staged in {input.staged:q}; do mv -fv "$staged" "${{staged#*/*/*/}}"; done) > {log} 2>&1'


rule publish_folder:
    """Base of the publish rules of a staged folder: its files beside output.record, the record last; never a job."""
    output:
        "{never}",
    log:
        "{never}.log",
    wildcard_constraints:
        never=NEVER,
    conda:
        ENV
    # a toy model: weights and tokenizer, then training.json; a package's GGUF: model.gguf and the
    # converted model, then source.json (Snakemake removes the outputs, the folder converted/ too,
    # before the job)
    shell:
        "(record=$(basename {output.record:q}); find {input.staged:q} -mindepth 1 -maxdepth 1 ! -name $record "
        "! -name .snakemake_timestamp -exec mv -fv -t $(dirname {output.record:q}) {{}} + "
        "&& mv -fv {input.staged:q}/$record {output.record:q}) > {log} 2>&1"
