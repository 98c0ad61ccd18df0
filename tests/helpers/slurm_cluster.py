"""A single-node Slurm cluster on localhost for the tests.

Installs Slurm and munge from the distribution's packages when they are missing, writes a
minimal slurm.conf in a temporary directory (no accounting database; two GPUs backed by
/dev/null and /dev/zero so that jobs asking for GPUs are schedulable; the partitions of
profiles/slurm/partitions.yaml, cpu and gpu, both on the one node), starts munged, slurmctld
and slurmd, and stops every daemon it started by process id.

Two things such a cluster needs beyond the profile: status queries through squeue (with a
MinJobAge long enough for finished jobs to stay visible) and no account; and, since the
config is not at /etc/slurm/slurm.conf, the client commands are wrapped so that the srun
the jobstep executor runs inside each job (which drops SLURM_* variables) still finds it.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

PACKAGES = ["slurmctld", "slurmd", "slurm-client", "munge"]
CLIENTS = ["sbatch", "squeue", "scancel", "srun", "sinfo", "scontrol", "sacct"]


def _sudo() -> list[str]:
    return [] if os.geteuid() == 0 else ["sudo", "-n"]


def ensure_installed(log) -> float:
    """Install the packages when a daemon is missing; return the seconds it took."""
    if all(
        shutil.which(b) or Path(f"/usr/sbin/{b}").exists() for b in ("slurmctld", "slurmd", "munged")
    ) and shutil.which("sbatch"):
        return 0.0
    t0 = time.time()
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    cmd = _sudo() + ["apt-get", "install", "-y", "--no-install-recommends", *PACKAGES]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        subprocess.run(_sudo() + ["apt-get", "update"], capture_output=True, text=True, env=env)
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    log.write(proc.stdout[-3000:] + proc.stderr[-3000:])
    if proc.returncode != 0:
        raise RuntimeError(f"could not install {PACKAGES}: {proc.stderr[-2000:]}")
    return time.time() - t0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _daemon(name: str) -> str:
    return shutil.which(name) or f"/usr/sbin/{name}"


class LocalSlurm:
    def __init__(self, root: Path):
        self.root = Path(root)
        self.host = socket.gethostname().split(".")[0]
        self.conf = self.root / "slurm.conf"
        self.bin = self.root / "bin"
        self.pidfiles = [self.root / "slurmd.pid", self.root / "slurmctld.pid", self.root / "munge" / "munged.pid"]

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.conf), "PATH": f"{self.bin}:{os.environ['PATH']}"}

    def _write_config(self) -> None:
        r = self.root
        for d in ("state", "spool", "munge", "bin"):
            (r / d).mkdir(parents=True, exist_ok=True)
        key = r / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        self.conf.write_text(f"""ClusterName=helixclock
SlurmctldHost={self.host}(127.0.0.1)
SlurmUser={os.environ.get("USER", "root") if os.geteuid() != 0 else "root"}
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
AuthType=auth/munge
AuthInfo=socket={r}/munge/munge.socket
CredType=cred/munge
StateSaveLocation={r}/state
SlurmdSpoolDir={r}/spool
SlurmctldPidFile={r}/slurmctld.pid
SlurmdPidFile={r}/slurmd.pid
SlurmctldLogFile={r}/slurmctld.log
SlurmdLogFile={r}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SlurmdParameters=config_overrides
MinJobAge=900
ReturnToService=2
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MpiDefault=none
GresTypes=gpu
NodeName={self.host} NodeAddr=127.0.0.1 CPUs=16 RealMemory=200000 Gres=gpu:2 State=UNKNOWN
PartitionName=cpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP
PartitionName=gpu Nodes=ALL MaxTime=INFINITE State=UP
""")
        (r / "gres.conf").write_text(
            f"AutoDetect=off\nNodeName={self.host} Name=gpu File=/dev/null\n"
            f"NodeName={self.host} Name=gpu File=/dev/zero\n"
        )
        for c in CLIENTS:
            wrapper = self.bin / c
            wrapper.write_text(f'#!/bin/sh\nSLURM_CONF={self.conf} exec {shutil.which(c) or "/usr/bin/" + c} "$@"\n')
            wrapper.chmod(0o755)

    def start(self, timeout: float = 60) -> None:
        self._write_config()
        r = self.root
        subprocess.run(
            _sudo()
            + [
                _daemon("munged"),
                "--force",
                f"--key-file={r}/munge/munge.key",
                f"--socket={r}/munge/munge.socket",
                f"--pid-file={r}/munge/munged.pid",
                f"--log-file={r}/munge/munged.log",
                f"--seed-file={r}/munge/munged.seed",
            ],
            check=True,
            capture_output=True,
        )
        for daemon in ("slurmctld", "slurmd"):
            subprocess.run(
                _sudo() + [_daemon(daemon), "-f", str(self.conf)], check=True, capture_output=True, env=self.env
            )
        deadline = time.time() + timeout
        state = ""
        while time.time() < deadline:
            state = subprocess.run(
                ["sinfo", "-h", "-o", "%t"], capture_output=True, text=True, env=self.env
            ).stdout.strip()
            if state == "idle":
                return
            time.sleep(0.5)
        raise RuntimeError(f"the Slurm node did not come up (state {state!r}); see {r}/slurmctld.log, {r}/slurmd.log")

    def job(self, jobid: str) -> dict[str, str]:
        """``scontrol show job``'s fields of a job (finished jobs stay MinJobAge seconds)."""
        out = subprocess.run(["scontrol", "show", "job", jobid], capture_output=True, text=True, env=self.env).stdout
        return dict(item.split("=", 1) for item in out.split() if "=" in item)

    def submissions(self) -> int:
        log = self.root / "slurmctld.log"
        return log.read_text().count("_slurm_rpc_submit_batch_job") if log.exists() else 0

    def stop(self) -> None:
        """Stop every daemon this cluster started, by the process ids in their pid files."""
        pids = []
        for f in self.pidfiles:
            try:
                pids.append(int(f.read_text().split()[0]))
            except (OSError, ValueError, IndexError):
                continue
        for pid in pids:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.time() + 15
        for pid in pids:
            while time.time() < deadline:
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.2)
            else:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
