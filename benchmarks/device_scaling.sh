#!/usr/bin/env bash
# The device check: build the kernels, then run bench_scaling.py (J = 1, 2, 4, ... up to
# the cores present), the same as whole `fastspectral parse` processes at J=1 and all cores
# (WHOLE_LIMIT sentences, default 300) and, with PROFILE=1, profile_parse.py at all cores (time
# inside / outside the kernels) and the L-PCFG models' stages by the wall clock at J=1 and all
# cores (`--stages --clock wall`: a stage whose wall time does not fall with J leaves threads
# waiting).  DATA: a folder with wsj-sample.mrg and wsj22.trees; OUT: where the tables go.
# Usage: benchmarks/device_scaling.sh DATA OUT [LIMIT]
set -u
DATA=$1; OUTDIR=$2; LIMIT=${3:-800}
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
PY=${PYTHON:-python3}
mkdir -p "$OUTDIR"
{ uname -a; nproc; lscpu | grep -E "Model name|Socket|Core|Thread|NUMA node\(s\)|L3"; \
  $PY -c "import sys, numpy, scipy, numba, Cython; print(sys.version.split()[0], numpy.__version__, scipy.__version__, numba.__version__, Cython.__version__)"; } 2>&1 | tee "$OUTDIR/machine.txt"
t0=$(date +%s)
$PY setup.py build_ext --inplace -q -j "$(nproc)" > "$OUTDIR/build.log" 2>&1 || { tail -20 "$OUTDIR/build.log"; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"
CACHE=${TMPDIR:-/tmp}/fs-bench-cache
$PY benchmarks/bench_scaling.py --train "$DATA/wsj-sample.mrg" --test "$DATA/wsj22.trees" \
    --limit "$LIMIT" --f1 --cache "$CACHE" 2>&1 | tee "$OUTDIR/scaling.txt"
$PY benchmarks/bench_scaling.py --train "$DATA/wsj-sample.mrg" --test "$DATA/wsj22.trees" \
    --limit "${WHOLE_LIMIT:-300}" --whole-process --jobs 1 "$(nproc)" --cache "$CACHE" 2>&1 \
    | tee "$OUTDIR/whole.txt"
if [ -n "${PROFILE:-}" ]; then
  for m in "$CACHE"/pivot-em-*.fsm "$CACHE"/spectral-*.fsm "$CACHE"/pcfg-*.fsm; do
    $PY benchmarks/profile_parse.py "$m" --test "$DATA/wsj22.trees" --limit "$LIMIT" \
        --jobs "$(nproc)" --top 0
  done 2>&1 | tee "$OUTDIR/profile.txt"
  for m in "$CACHE"/pivot-em-*.fsm "$CACHE"/spectral-*.fsm; do
    $PY benchmarks/profile_parse.py "$m" --test "$DATA/wsj22.trees" --limit "$LIMIT" \
        --stages --clock wall --jobs 1 "$(nproc)"
  done 2>&1 | tee "$OUTDIR/stages.txt"
fi
