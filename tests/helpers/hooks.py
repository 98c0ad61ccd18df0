"""A plain PyTorch forward-hook implementation of activation patching, one forward pass
per variant, written the straightforward way.  The engine must agree with it."""

from __future__ import annotations

import torch


def replace_io(module: torch.nn.Module, io: str, fn):
    """Register a hook that replaces the module's input (first arg) or output by fn(x)."""
    if io == "input":

        def pre(mod, args, kwargs):
            if args:
                return (fn(args[0]),) + tuple(args[1:]), kwargs
            key = next(iter(kwargs))
            kwargs = dict(kwargs)
            kwargs[key] = fn(kwargs[key])
            return args, kwargs

        return module.register_forward_pre_hook(pre, with_kwargs=True)

    def post(mod, args, out):
        if isinstance(out, tuple):
            return (fn(out[0]),) + tuple(out[1:])
        return fn(out)

    return module.register_forward_hook(post)


def capture(hf, module_path: str, io: str, ids: torch.Tensor) -> torch.Tensor:
    store = {}

    def keep(x):
        store["x"] = x.detach().clone()
        return x

    handle = replace_io(hf.get_submodule(module_path), io, keep)
    try:
        with torch.no_grad():
            hf(ids)
    finally:
        handle.remove()
    return store["x"]


def patched_logits(
    hf,
    module_path: str,
    io: str,
    ids: torch.Tensor,
    position: int,
    value: torch.Tensor,
    head: int | None = None,
    n_heads: int | None = None,
) -> torch.Tensor:
    """Last-token logits of ``ids`` with the module's input/output at ``position`` set to value."""

    def put(x):
        y = x.clone()
        if head is None:
            y[:, position] = value
        else:
            d_head = y.shape[-1] // n_heads
            y[:, position, head * d_head : (head + 1) * d_head] = value
        return y

    handle = replace_io(hf.get_submodule(module_path), io, put)
    try:
        with torch.no_grad():
            return hf(ids).logits[:, -1]
    finally:
        handle.remove()


def logit_difference(patched: torch.Tensor, corrupted: torch.Tensor, answer: torch.Tensor) -> torch.Tensor:
    idx = answer[:, None]
    return (patched.gather(1, idx) - corrupted.gather(1, idx))[:, 0]
