"""Loading models through nnsight.

A :class:`LoadedModel` is a Hugging Face causal LM, its nnsight wrapper, its tokenizer and
the :class:`~helixclock.lm.adapters.Adapter` that maps the hook-point vocabulary onto its
modules (see :mod:`helixclock.lm.adapters` for the vocabulary and the family table).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import logging
import shutil
import warnings
from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import torch

from ..project.outputs import CONVERTED_GGUF, INSTALLED_GGUF, MODEL_FILES
from ..prompts.layout import NumberTokens
from .adapters import Adapter, make_adapter
from .config import ConfigError, package_source
from .sources import TOY_SOURCE, model_files

log = logging.getLogger(__name__)

__all__ = ["LoadedModel", "load_model", "resolve_device", "wrap_model"]


def resolve_device(device: str = "auto") -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise RuntimeError(f"config key 'device' is {device!r} but CUDA is not available")
    return torch.device(device)


@dataclass
class LoadedModel:
    """An nnsight-wrapped causal LM with its adapter and tokenizer."""

    name: str
    lm: Any  # nnsight TransformersModel wrapping ``hf``
    hf: torch.nn.Module  # the Hugging Face model itself (plain forwards, weights)
    adapter: Adapter
    tokenizer: Any
    device: torch.device
    source: str = ""
    dtype: torch.dtype = torch.float32
    info: dict = field(default_factory=dict)  # registry keys number_tokens and answer_end
    attn_implementation: str = "sdpa"  # set by load_model (an experiment may switch it and back)

    @property
    def tokens(self) -> NumberTokens:
        """How this model writes numbers (registry key ``number_tokens``): the switch every
        rule's entry point reads (:class:`helixclock.prompts.layout.NumberTokens`)."""
        return NumberTokens.of(self.info)

    def envoy(self, path: str):
        node = self.lm
        for part in path.split("."):
            node = node[int(part)] if part.isdigit() else getattr(node, part)
        return node


def _quiet():
    # the engine hands the prefix cache through nnsight as past_key_values (see PatchingEngine.trace)
    warnings.filterwarnings("ignore", message="`past_key_values` is deprecated", category=FutureWarning)
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", message=".*LanguageModel is deprecated.*")
    # deferred: transformers and nnsight (about 2 s) stay out of the jobs that load no model (neuron_fits)
    import transformers

    transformers.logging.set_verbosity_error()


def _contiguous_unembedding(hf_model: torch.nn.Module) -> None:
    """Hand the unembedding a contiguous input.  With ``logits_to_keep`` (greedy decoding, and
    the answer positions of numbers of several tokens) the model slices the last positions out
    of the hidden states, and ``linear`` of such a slice by a weight that needs no gradient
    expands the weight along the batch and multiplies batch by batch (``bmm``), reading the
    whole [vocab, d] matrix once per row.  Measured on 2 CPU cores: Gemma-3-270M's unembedding
    (vocabulary 262,144) of 54 x 4 sliced rows took 3.35 s, of the same rows made contiguous
    0.74 s, with equal logits; its patched runs (benchmarks/unembedding.py's workload) 6.3 s
    before, 2.2 s after.  A contiguous input (every other run) passes unchanged."""
    head = hf_model.get_output_embeddings()
    if head is not None:
        head.register_forward_pre_hook(lambda module, args: (args[0].contiguous(), *args[1:]))


def _for_inference(hf_model: torch.nn.Module) -> None:
    """Inference only: no autograd graph over the weights (nnsight traces would build one),
    and the unembedding handed a contiguous input (:func:`_contiguous_unembedding`: with weights
    that need no grad, a sliced input is slow)."""
    hf_model.eval()
    for p in hf_model.parameters():
        p.requires_grad_(False)
    _contiguous_unembedding(hf_model)


def wrap_model(
    hf_model: torch.nn.Module,
    tokenizer,
    name: str = "model",
    family: str | None = None,
    source: str = "",
    number_tokens: str = "one",
    answer_end: str | None = None,
) -> LoadedModel:
    """Wrap an already-built Hugging Face model (tests build tiny random ones); ``number_tokens``
    and ``answer_end`` as the registry keys of those names."""
    # deferred: transformers and nnsight (about 2 s) stay out of the jobs that load no model (neuron_fits)
    from nnsight import TransformersModel

    _quiet()
    _for_inference(hf_model)
    attention = set_attention(hf_model)
    adapter = make_adapter(hf_model, family)
    lm = TransformersModel(hf_model, task="text-generation", tokenizer=tokenizer)
    p = next(hf_model.parameters())
    info = {"number_tokens": number_tokens, "answer_end": answer_end}
    return LoadedModel(name, lm, hf_model, adapter, tokenizer, p.device, source or name, p.dtype, info, attention)


def run_dtype(name: str, device: torch.device) -> torch.dtype:
    """The dtype a model runs in: the registry's, except float16 on the CPU (half matmuls are
    slow or missing there: float32) and bfloat16 on a GPU without it (before Ampere: float16)."""
    dtype = getattr(torch, name)
    if device.type == "cpu" and dtype == torch.float16:
        return torch.float32
    if device.type == "cuda" and dtype == torch.bfloat16 and not torch.cuda.is_bf16_supported():
        log.warning("this GPU has no bfloat16: running in float16")
        return torch.float16
    return dtype


def load_model(
    name: str,
    spec: dict,
    device: str = "auto",
    resources: str = MODEL_FILES,
    attn_implementation: str | None = None,
) -> LoadedModel:
    """Load a registered model through nnsight: hub id, local directory, trained toy or GGUF
    file (dequantised to ``dtype`` by transformers)."""
    # deferred: transformers and nnsight (about 2 s) stay out of the jobs that load no model (neuron_fits)
    from nnsight import TransformersModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    _quiet()
    path, files = model_files(name, spec, resources)  # files: gguf_file= for a GGUF source
    dev = resolve_device(device)
    dtype = run_dtype(spec.get("dtype", "float32"), dev)
    tokenizer = AutoTokenizer.from_pretrained(path, **files)
    kwargs = {"device_map": str(dev)} if dev.type == "cuda" else {}  # load straight onto the GPU
    hf_model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype, **files, **kwargs)
    hf_model.to(dev)
    _for_inference(hf_model)
    attention = set_attention(hf_model, attn_implementation)
    adapter = make_adapter(hf_model, spec.get("family"))
    lm = TransformersModel(hf_model, task="text-generation", tokenizer=tokenizer)
    source = spec["source"] if spec["source"] != TOY_SOURCE else path
    info = {"number_tokens": spec.get("number_tokens", "one"), "answer_end": spec.get("answer_end")}
    return LoadedModel(name, lm, hf_model, adapter, tokenizer, dev, source, dtype, info, attention)


# what download_model fetches of a hub model: its configuration and tokenizer files, and its
# weights as safetensors where the revision has them (else PyTorch's .bin files, not both)
HUB_FILES = (
    "config.json",
    "generation_config.json",
    "tokenizer*",
    "special_tokens_map.json",
    "added_tokens.json",
    "vocab*",
    "merges.txt",
    "*.model",
)
HUB_WEIGHTS = (("*.safetensors", "*.safetensors.index.json"), ("*.bin", "*.bin.index.json"))


def download_model(name: str, spec: dict, offline: bool = False) -> dict:
    """Rule download_model (a local job, on the submit host): fill the local Hugging Face cache
    (``HF_HUB_CACHE``, or ``HF_HOME``/hub) with a hub model at its registry ``revision``, so that
    every other job loads it with the hub offline.  With ``offline`` (the run was started with
    ``HF_HUB_OFFLINE=1``) only check that the cache holds it.  Returns the record the rule writes:
    the source, the revision asked for, the commit it resolved to, the snapshot folder, its files
    and their bytes."""
    # deferred: huggingface_hub's download machinery only in the one job that reaches the hub
    from huggingface_hub import HfApi, snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    repo, revision = spec["source"], spec.get("revision")
    try:
        if offline:
            folder = snapshot_download(repo, revision=revision, local_files_only=True)
        else:
            listed = HfApi().list_repo_files(repo, revision=revision)
            weights = next((p for p in HUB_WEIGHTS if any(fnmatch(f, p[0]) for f in listed)), HUB_WEIGHTS[-1])
            folder = snapshot_download(repo, revision=revision, allow_patterns=[*HUB_FILES, *weights])
    except LocalEntryNotFoundError as err:
        raise ConfigError(
            f"model {name!r}: {repo} at revision {revision or 'main'} is not in the local Hugging Face cache and "
            "the hub is offline (HF_HUB_OFFLINE=1 was set when the run started): fill the cache where the hub is "
            f"reached (`hf download {repo}{' --revision ' + revision if revision else ''}`, with HF_HOME the "
            "cluster's shared folder), or start the run without HF_HUB_OFFLINE"
        ) from err
    folder = Path(folder)
    files = sorted(str(f.relative_to(folder)) for f in folder.rglob("*") if f.is_file())
    return {
        "model": name,
        "source": repo,
        "revision": revision,
        "commit": folder.name,  # the cache's snapshots/<commit>/
        "snapshot": str(folder),
        "files": files,
        "bytes": sum((folder / f).stat().st_size for f in files),
    }


def hub_commit(source: str, revision: str | None) -> str | None:
    """The commit a hub model's ``revision`` resolves to in the local cache (its snapshot
    folder's name), without the hub; None where the cache does not hold it."""
    # deferred: huggingface_hub only where a hub model's card is made
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(source, "config.json", revision=revision)
    return Path(found).parent.name if isinstance(found, str) else None


def set_attention(hf_model: torch.nn.Module, wanted: str | None = None) -> str:
    """Set the model's attention implementation and return it: ``wanted``, or else PyTorch's
    scaled-dot-product attention, or eager attention for a family without it."""
    choices = [wanted] if wanted else ["sdpa", "eager"]
    for impl in choices:
        try:
            hf_model.set_attn_implementation(impl)
            return impl
        except (ValueError, ImportError):
            if impl == choices[-1]:
                raise
    raise AssertionError("unreachable")


def install_gguf(name: str, spec: dict, out_dir: str, published: str | None = None) -> dict:
    """Put the GGUF of a ``python-package:`` source in ``out_dir``/model.gguf (a link to the
    package's file, or the file its function writes), check the registry's ``sha256`` when given,
    and convert it where :func:`helixclock.lm.sources.model_files` loads it (:func:`convert_gguf`).
    Returns a record of what was installed (the rule writes it as ``source.json``), naming the
    files in ``published``, the folder they are moved to (the rule's job writes them in its
    staging folder, docs/running.md "When a run fails"), or in ``out_dir`` where that is None."""
    module, kind, what = package_source(name, spec["source"])
    found = importlib.util.find_spec(module)
    if found is None:
        raise ConfigError(
            f"registry key '{name}.source': package module {module!r} is not installed (`make real` installs the "
            "packages of the registered real models, without their dependencies)"
        )
    target = Path(out_dir) / INSTALLED_GGUF
    target.parent.mkdir(parents=True, exist_ok=True)
    target.unlink(missing_ok=True)
    if kind == "file":
        source = Path(found.submodule_search_locations[0]) / what  # the package is not imported
        if not source.is_file():
            raise ConfigError(f"registry key '{name}.source': package {module!r} has no file {what!r}")
        target.symlink_to(source.resolve())
    else:
        getattr(importlib.import_module(module), what)(target)
    digest = hashlib.sha256()
    with open(target, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 24), b""):
            digest.update(block)
    sha = digest.hexdigest()
    if spec.get("sha256") and spec["sha256"] != sha:
        raise ConfigError(f"registry key '{name}.sha256': {spec['sha256']} does not match the installed file's {sha}")
    converted = convert_gguf(target)
    final = Path(published if published is not None else out_dir)
    return {
        "model": name,
        "source": spec["source"],
        "file": str(final / target.name),
        "sha256": sha,
        "bytes": target.stat().st_size,
        "converted": str(final / converted.name),
    }


def convert_gguf(gguf: Path) -> Path:
    """The GGUF file ``gguf`` converted once to transformers' own files in the folder
    ``CONVERTED_GGUF`` beside it: the weights dequantised to float32 (exactly the values
    ``from_pretrained(..., gguf_file=)`` gives, as safetensors), the configuration, and the tokenizer
    as tokenizer.json.  Loading a GGUF rebuilds its tokenizer and dequantises every tensor in
    Python (Gemma-3-270M: about 50 s a job on 2 cores); the converted files load in about a
    second, to the same weights and token ids (tests/unit/test_real_model.py).  Returns the folder."""
    # deferred: transformers and nnsight (about 2 s) stay out of the jobs that load no model (neuron_fits)
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out = gguf.parent / CONVERTED_GGUF
    if out.exists():
        shutil.rmtree(out)
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    hf_model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    # dequantised already: the GGUF "quantizer" left on the model only refuses to save it
    hf_model.hf_quantizer = None
    hf_model.config.__dict__.pop("quantization_config", None)
    hf_model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out
