#!/usr/bin/env bash
# A short GPU check for a device with little time left (the full one is gpu_check.sh): the
# GPU tests, and memprobe on the GPU leak and clean scripts, four at once; records to $OUT.
#   OUT=/tmp/gpu STEPS=15000 bash benchmarks/gpu_quick.sh
set -u
OUT=${OUT:-/tmp/gpu_quick}
PY=${PY:-python3}
STEPS=${STEPS:-15000}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
timeout 200 $PY -m pytest -q -p no:cacheprovider -p no:benchmark -n 7 tests/test_gpu.py > "$OUT/pytest_gpu.txt" 2>&1 &
run() {
    local name=$1; shift
    timeout 200 $PY -m memprobe run --no-live -o "$OUT/$name.json" "$@" > "$OUT/$name.log" 2>&1
    echo "$name rc=$?"; grep -m2 "verdict\|•" "$OUT/$name.log" | cut -c1-300
}
run leak_list sample_scripts/gpu_leak_tensor_list.py --steps "$STEPS" &
run leak_local sample_scripts/gpu/leak_local_losses.py --steps "$STEPS" &
run clean sample_scripts/gpu_clean.py --steps "$STEPS" &
run frag sample_scripts/gpu_fragmentation.py --steps 3000 &
wait
tail -2 "$OUT/pytest_gpu.txt"
