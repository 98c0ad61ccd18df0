"""GPU slots: one device per running model job.

Snakemake counts GPUs (``--resources gpu=N``) but never says which device a job should
use, so two GPU jobs started together would both land on GPU 0.  Each model job therefore
claims a slot before CUDA starts: it takes an exclusive, non-blocking ``flock`` on
``slot-<device>.lock`` in a directory shared by the jobs of the machine and sets
``CUDA_VISIBLE_DEVICES`` to that device.  The kernel drops the lock when the process ends,
however it ends, so a crashed job never keeps a slot.  With no GPU the job runs on the CPU
and claims nothing.

The devices are, in order of precedence: ``HELIXCLOCK_GPUS`` (a count or a comma list, used
to simulate devices in tests), ``CUDA_VISIBLE_DEVICES`` (a user's restriction, or what Slurm
gave the job), and the GPUs ``nvidia-smi -L`` lists.  Where exactly one is visible the job uses
it and takes no lock: a job the Slurm executor submitted has its own GPU (with device cgroups
every job sees it as device 0).  Where several are visible the job locks one of them, Slurm or
not: inside one allocation of four GPUs (``sbatch --gpus=4 --wrap 'snakemake --resources
gpu=4'``, or ``salloc``) ``CUDA_VISIBLE_DEVICES`` is ``0,1,2,3`` for every job, and without the
lock all four jobs would run on GPU 0.  The lock directory is ``HELIXCLOCK_GPU_LOCKS`` or
``<tmp>/helixclock-gpu-slots-<uid>``.

A job that declares a GPU where one is required (config key ``device`` is ``cuda`` or
``cuda:N``, as the Slurm profile sets it) and whose torch sees no CUDA device stops in its first
seconds, before it loads anything, naming the torch build it found (:func:`require_cuda`): a CUDA
job run on two CPU cores would run to its time limit and be retried at twice and three times it.
Where a job ran on a GPU, its peak GPU memory is logged as it ends (:func:`log_gpu_peak`).
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

log = logging.getLogger("helixclock")


class NoCudaError(RuntimeError):
    """A job that needs a GPU found no CUDA device: a retry on the same build cannot mend it."""


def torch_build() -> str:
    """The installed torch in words: its version and the CUDA it was built with, if any
    (imports torch: call it only where a job runs a model)."""
    # deferred: torch only in jobs that run a model (table jobs import this module too)
    import torch

    cuda = torch.version.cuda
    return f"torch {torch.__version__} ({'built with CUDA ' + cuda if cuda else 'a CPU build, without CUDA'})"


def require_cuda(rule: str, setting: str) -> None:
    """Stop the job (:class:`NoCudaError`) unless torch sees a CUDA device: rule ``rule`` needs a
    GPU under config key device ``setting``."""
    # deferred: torch only in jobs that run a model (after claim_gpu has narrowed the devices)
    import torch

    if torch.cuda.is_available():
        return
    build = torch_build()
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    why = (
        "install a CUDA build of torch in the jobs' environment (docs/gpus-and-clusters.md)"
        if torch.version.cuda is None
        else f"it sees no GPU (CUDA_VISIBLE_DEVICES={visible!r}): run the job where the driver and a GPU are"
    )
    raise NoCudaError(
        f"rule {rule} runs a model and config key device is {setting!r}, but {build} finds no CUDA device: {why}"
    )


def log_gpu_peak() -> None:
    """Log the GPU memory this process held at its peak (allocated by tensors and reserved by
    torch's caching allocator), where it used a GPU: what the job's GPU must hold."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return
    log.info(
        "GPU memory peak: %.0f MB allocated, %.0f MB reserved (torch.cuda.max_memory_allocated/reserved)",
        torch.cuda.max_memory_allocated() / 1e6,
        torch.cuda.max_memory_reserved() / 1e6,
    )


_held: dict[str, object] = {}  # device -> open lock file, kept for the process lifetime


def available_devices() -> list[str]:
    sim = os.environ.get("HELIXCLOCK_GPUS", "").strip()
    if sim:
        return [str(i) for i in range(int(sim))] if sim.isdigit() else [d.strip() for d in sim.split(",") if d.strip()]
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return [d.strip() for d in visible.split(",") if d.strip() and d.strip() != "-1"]
    if shutil.which("nvidia-smi"):
        try:
            out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20).stdout
        except (OSError, subprocess.SubprocessError):
            return []
        return [str(i) for i, line in enumerate(l for l in out.splitlines() if l.startswith("GPU "))]
    return []


def lock_dir() -> Path:
    default = Path(tempfile.gettempdir()) / f"helixclock-gpu-slots-{os.getuid()}"
    path = Path(os.environ.get("HELIXCLOCK_GPU_LOCKS") or default)
    path.mkdir(parents=True, exist_ok=True)
    return path


def claim_gpu(timeout: float = 24 * 3600, poll: float = 2.0) -> str | None:
    """Claim a free device for this process and make it the only visible one.

    Returns the device id, or None when the machine has no GPU.  Waits (logging once) while
    every device is taken, e.g. when more GPU jobs run than ``--resources gpu`` allows.
    """
    if _held:
        return next(iter(_held))
    devices = available_devices()
    if not devices:
        return None
    if len(devices) == 1:  # the job's own GPU (a Slurm job's, or the machine's only one): no lock
        _held[devices[0]] = None
        slurm = os.environ.get("SLURM_JOB_ID")
        log.info("using the only visible GPU %s%s (no lock)", devices[0], f" of Slurm job {slurm}" if slurm else "")
        return devices[0]
    directory = lock_dir()
    start, told = time.monotonic(), False
    while True:
        for device in devices:
            fh = open(directory / f"slot-{device}.lock", "a+")
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                fh.close()
                continue
            fh.seek(0)
            fh.truncate()
            fh.write(f"{os.getpid()}\n")
            fh.flush()
            _held[device] = fh
            os.environ["CUDA_VISIBLE_DEVICES"] = device
            log.info("claimed GPU slot %s (CUDA_VISIBLE_DEVICES=%s, locks in %s)", device, device, directory)
            return device
        if time.monotonic() - start > timeout:
            raise TimeoutError(f"no free GPU slot among {devices} after {timeout:.0f} s (locks in {directory})")
        if not told:
            log.info("all GPU slots %s are taken; waiting for one", devices)
            told = True
        time.sleep(poll)
