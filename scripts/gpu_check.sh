#!/usr/bin/env bash
# The GPU checks of issue 23 in one run, from the repository root on a CUDA machine (what session 20 ran on its
# H200 leases): the CUDA-aware test files, then benchmarks/constrained_gpu.py, step_phases.py and gpu.py, their
# tables and logs written under $OUT (default /tmp/formwork-gpu). Without an installed formwork it builds the C
# extensions in place and imports the checkout as `formwork`; cp312 wheels of missing pure-Python dependencies
# may lie in .whl/ (installed into /tmp/site, no index needed). BENCHES picks the benchmarks, LIMIT their timeout,
# PYTHON the interpreter (python3).
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/formwork-gpu}
PYTHON=${PYTHON:-python3}
mkdir -p "$OUT"
if ls .whl/*.whl > /dev/null 2>&1; then
  "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
fi
"$PYTHON" -c "from setuptools import setup; setup()" build_ext --inplace -q > "$OUT/build.log" 2>&1 || { tail -20 "$OUT/build.log"; exit 1; }
mkdir -p /tmp/pkg && ln -sfn "$PWD" /tmp/pkg/formwork
export PYTHONPATH=/tmp/pkg:/tmp/site PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.used --format=csv,noheader
T0=$(date +%s)
timeout 150 "$PYTHON" -m pytest -q -x -p no:cacheprovider tests/test_device_copies.py tests/test_sampler_graphs.py 2>&1 | tail -4
echo "tests done at +$(( $(date +%s) - T0 ))s"
for b in ${BENCHES:-constrained_gpu step_phases gpu}; do
  timeout "${LIMIT:-200}" "$PYTHON" "benchmarks/$b.py" --out "$OUT/$b.md" > "$OUT/$b.log" 2>&1
  echo "$b rc=$? at +$(( $(date +%s) - T0 ))s"
  tail -"${TAILN:-12}" "$OUT/$b.log"
done
