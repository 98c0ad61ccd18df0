#!/usr/bin/env bash
# One call on a lent GPU machine (docs/benchmarks.md, "On a GPU"): what no CPU can show, in one
# command that fits one call's limit.  Run from the repository root, with the wheels of the
# packages the machine's image lacks in .whl/ (the lock's versions for Python 3.12; nothing can be
# fetched there) and $OUT the folder whose files come back:
#   1. the embedded default's whole DAG with config key device: cuda (every model job loads its
#      toy on the GPU, claims its slot and logs its GPU peak), in the background;
#   2. benchmarks/gpu_probe.py: every model job's library calls on a tiny GPT-J on the GPU, then
#      at GPT-J-6B's shape with the config's counts (seconds, passes, GPU peak memory per job).
# What it writes under $OUT: gpu.txt (nvidia-smi, versions), probe.jsonl and probe.log, dag.log
# and dag.tgz (the DAG's logs, benchmark files and tables; no figures, no HDF5).
set -u
OUT=${OUT:-benchmarks/out/gpu}
mkdir -p "$OUT"
DAG_SECONDS=${DAG_SECONDS:-420}
PROBE_BUDGET=${PROBE_BUDGET:-300}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH="/tmp/site:$PWD/src" PYTHONUNBUFFERED=1 HDF5_USE_FILE_LOCKING=FALSE
{
  nvidia-smi
  python3 -c 'import torch, transformers, nnsight, snakemake, h5py; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0)); print("transformers", transformers.__version__, "nnsight", nnsight.__version__, "snakemake", snakemake.__version__, "h5py", h5py.__version__)'
  nproc
  free -g
} >"$OUT/gpu.txt" 2>&1
cat "$OUT/gpu.txt"

(
  timeout "$DAG_SECONDS" python3 -m snakemake --cores 8 --resources gpu=1 --config device=cuda --keep-going \
    >"$OUT/dag.log" 2>&1
  echo "snakemake exit status $?" >>"$OUT/dag.log"
  tar czf "$OUT/dag.tgz" --exclude='*.h5' --exclude='*.png' --exclude='*.pdf' logs results 2>/dev/null
) &
dag=$!

(cd benchmarks && python3 gpu_probe.py --budget "$PROBE_BUDGET" --out "$OUT/probe.jsonl") >"$OUT/probe.log" 2>&1
echo "probe exit status $?" >>"$OUT/probe.log"
grep -v -i warn "$OUT/probe.log" | tail -n 30

wait "$dag"
tail -n 15 "$OUT/dag.log"
grep -H "GPU memory peak" logs/*/*.log 2>/dev/null | head -n 40
ls -la "$OUT"
