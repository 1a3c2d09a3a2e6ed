#!/usr/bin/env bash
# The Cuda device's checks on a machine with an NVIDIA GPU (issue 31): the GPU test suite, the
# numba-cuda kernels under the simulator, the digits example on the GPU, and workload 13.
# Logs go to $OUT (default /tmp/gradtape-gpu). Run from the repository root:
#   bash scripts/gpu_check.sh            # QUICK=1: 3 digits epochs and a quick benchmark
set -uo pipefail
OUT=${OUT:-/tmp/gradtape-gpu}
mkdir -p "$OUT"
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
EPOCHS=(); BENCH=()
if [ "${QUICK:-0}" = 1 ]; then EPOCHS=(--epochs 3); BENCH=(--quick); fi
nvidia-smi -L
python3 -c "import cupy, numba, torch; from importlib.metadata import version as v; \
print('cupy', cupy.__version__, 'numba', numba.__version__, 'numba-cuda', v('numba-cuda'), 'torch', torch.__version__)"
timeout "${TEST_TIMEOUT:-300}" python3 -m pytest -q -p no:cacheprovider --tb=line -rf tests/test_cuda.py \
  --junitxml="$OUT/gpu_tests.xml" 2>&1 | tee "$OUT/gpu_tests.log" | tail -60
timeout 120 python3 -m pytest -q -p no:cacheprovider tests/test_cuda_kernels.py 2>&1 | tail -3
timeout 120 python3 -m gradtape.examples.digits --device cuda --no-save --no-progress "${EPOCHS[@]}" 2>&1 \
  | tee "$OUT/digits_cuda.log" | tail -6
timeout "${BENCH_TIMEOUT:-300}" python3 benchmarks/run.py --only gpu "${BENCH[@]}" --json "$OUT/gpu_bench.json" 2>&1 \
  | tee "$OUT/gpu_bench.log" | tail -25
