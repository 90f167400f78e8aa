#!/usr/bin/env bash
# The GPU checks, for a machine with a CUDA GPU (CI has none; tests/test_gpu.py skips there).
# Runs the GPU tests, memprobe on the GPU sample scripts (records kept), the in-process
# track() on a device leak, the CUDA sample's cost, and plain-vs-memprobe side by side.
#   OUT=/tmp/gpu STEPS=30000 bash benchmarks/gpu_check.sh     (everything lands in $OUT/gpu.tgz)
set -u
OUT=${OUT:-/tmp/gpu_check}
PY=${PY:-python3}
STEPS=${STEPS:-30000}
W=$(mktemp -d)
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" OMP_NUM_THREADS=1 PYTHONUNBUFFERED=1
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
$PY -c "import sys, torch, pynvml, scipy, typer, rich; print(sys.version.split()[0], torch.__version__, torch.cuda.is_available())"
$PY benchmarks/gpu_sample_cost.py

# 1. the tests and the records, side by side (16 cores there)
timeout 300 $PY -m pytest -q -p no:cacheprovider -p no:benchmark -n 7 tests/test_gpu.py > "$W/pytest_gpu.txt" 2>&1 &
run() {
    local name=$1; shift
    timeout 300 $PY -m memprobe run -o "$W/$name.json" "$@" > "$W/$name.log" 2>&1
    echo "$name rc=$?: $(grep -m1 'verdict' "$W/$name.log")"
}
run leak_list sample_scripts/gpu_leak_tensor_list.py --steps "$STEPS" &
run clean sample_scripts/gpu_clean.py --steps "$STEPS" &
run frag sample_scripts/gpu_fragmentation.py --steps 3000 &
run leak_local sample_scripts/gpu/leak_local_losses.py --steps "$STEPS" &
run ok_varlen sample_scripts/gpu/ok_trainer_varlen.py --steps "$STEPS" &
timeout 300 $PY benchmarks/gpu_track.py "$STEPS" "$W/track.json" > "$W/track.log" 2>&1 &
wait
tail -3 "$W/pytest_gpu.txt"; tail -4 "$W/track.log"
# the fix, as memprobe diff reads it: every growing GPU signal should be "fixed"
$PY -m memprobe diff "$W/leak_list.json" "$W/clean.json" > "$W/diff.txt" 2>&1
echo "diff leak_list -> clean: rc=$?"; grep -E "^ main +(cuda|nvml|tensors)" "$W/diff.txt"

# 2. overhead, plain against memprobe, one after the other, 2 rounds
for r in 1 2; do
    /usr/bin/time -f "round $r plain: %e s" $PY sample_scripts/gpu_clean.py --steps "$STEPS" >/dev/null
    /usr/bin/time -o "$W/time$r" -f "round $r memprobe: %e s" $PY -m memprobe run -o "$W/ovh$r.json" sample_scripts/gpu_clean.py --steps "$STEPS" > "$W/ovh$r.log" 2>&1
    cat "$W/time$r"; $PY -c "import json, sys; r = json.load(open(sys.argv[1])); print('target', round(r['duration_s'], 1), 's;', *[e['message'] for e in r['events'] if e['kind'] == 'agent_cost'])" "$W/ovh$r.json"
done
tar czf "$OUT/gpu.tgz" -C "$W" .
