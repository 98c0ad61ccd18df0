# The functions the rules' params call, each called by more than one rule (those of several
# stages, then neuron_settings, of three rules of neurons.smk).  Params are rerun triggers: each
# holds exactly the config keys (and registry keys) its rule reads, so a changed key reruns only
# the jobs that read it.  What one rule alone reads is a lambda in that rule's params (heads of
# head_patching): a rule file defines no function (snakemake --lint, "Mixed rules and functions in
# same snakefile").  A model's registry entry, params spec of every model job, is common.smk's.


# what each job that loads a model reads (the rules of outputs.MODEL_JOBS but train_toy, which reads
# spec alone): the model's registry entry, the device and the batch size (`**MODEL_JOB_PARAMS` in
# its params)
MODEL_JOB_PARAMS = dict(
    spec=spec,
    device=config["device"],
    batch_size=config["batch_size"],
)


def minimum(*keys):
    """The keys of config key ``minimum`` a job's preconditions read (only those: a new
    minimum.pairs must not rerun the residual cache)."""
    return settled({k: config["minimum"][k] for k in keys})


def fit_settings(compat=False):
    """helixclock.fitting.bases.FitSettings from config key helix; with compat=True also config key
    compat, for the rules whose polynomial fits it changes."""
    settings = {k: config["helix"][k] for k in ("periods", "pca_components")}
    return settled({**settings, "compat": config["compat"]} if compat else settings)


def resampling():
    """helixclock.stats.statistics.Resampling from config keys helix.bootstrap and seed."""
    return settled({"bootstrap": config["helix"]["bootstrap"], "seed": config["seed"]})


def per_model(section, key):
    """Config key ``section.key`` for a model, overridden by its registry entry's (params)."""
    return lambda w: REGISTRY[w.model].get(section, {}).get(key, config[section][key])


def each_model(**values):
    """A params value: ``values``, those given as functions of the wildcards (per_model)
    evaluated for the job's model."""
    return lambda w: {k: v(w) if callable(v) else v for k, v in values.items()}


def layer_step():
    """Registry key layer_step of a model (1, every layer, where absent): the layer grid of its
    patching sweeps (helixclock.causal.experiments.layer_grid)."""
    return lambda w: REGISTRY[w.model].get("layer_step", 1)


def period_subsets():
    """Registry key period_subsets of a model (true where absent): whether helix_patching sweeps
    every subset of the periods or only the fits Fig. 4 and Table 1 plot."""
    return lambda w: REGISTRY[w.model].get("period_subsets", True)


def clock_pairs():
    """helixclock.causal.pairs.draw_pairs settings of the last-token experiments (config key clock; the
    registry's clock.n_pairs overrides the pairs per model)."""

    def pairs(wildcards):
        n = per_model("clock", "n_pairs")(wildcards)
        return settled({"n_pairs": n, "vary": config["clock"]["corrupt"], "seed": config["seed"]})

    return pairs


def selection_settings(screen=True):
    """helixclock.causal.pairs.Selection: config keys compat, clock.selection_pairs and (a job
    with an attribution ``screen``) clock.selection_attribution_pairs (the registry's clock
    overrides the last two per model): the draw of pairs on which a job chooses what it measures
    (docs/findings.md, "Findings")."""

    def selection(wildcards):
        keys = {k: per_model("clock", f"selection_{k}")(wildcards) for k in ("pairs", "attribution_pairs")}
        values = {"compat": config["compat"], "n_pairs": keys["pairs"]}
        if screen:
            values["attribution_pairs"] = keys["attribution_pairs"]
        return settled(values)

    return selection


def neuron_settings(*keys):
    """helixclock.stages.neurons.patching.NeuronSettings: config key neurons (the registry's
    neurons section overrides its keys per model) and the seed."""

    def settings(wildcards):
        values = {**config["neurons"], **REGISTRY[wildcards.model].get("neurons", {}), "seed": config["seed"]}
        return settled({k: values[k] for k in keys})

    return settings
