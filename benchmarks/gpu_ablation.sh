#!/usr/bin/env bash
# Where memprobe's time goes on a GPU loop: plain, memprobe at defaults, and memprobe with
# fewer censuses and no tracemalloc window, one after the other, ROUNDS rounds; and what a
# USS/PSS read costs on a CUDA process.   STEPS=10000 ROUNDS=3 bash benchmarks/gpu_ablation.sh
set -u
PY=${PY:-python3}
STEPS=${STEPS:-10000}
ROUNDS=${ROUNDS:-3}
W=$(mktemp -d)
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" OMP_NUM_THREADS=1 PYTHONUNBUFFERED=1
$PY benchmarks/gpu_smaps_cost.py
script=sample_scripts/gpu_clean.py
for r in $(seq "$ROUNDS"); do
    /usr/bin/time -o "$W/t" -f "%e" $PY $script --steps "$STEPS" >/dev/null; plain=$(cat "$W/t")
    /usr/bin/time -o "$W/t" -f "%e" $PY -m memprobe run --no-live -o "$W/d.json" $script --steps "$STEPS" >/dev/null 2>&1; dflt=$(cat "$W/t")
    /usr/bin/time -o "$W/t" -f "%e" $PY -m memprobe run --no-live --budget 0.005 --tracemalloc off -o "$W/l.json" $script --steps "$STEPS" >/dev/null 2>&1; lean=$(cat "$W/t")
    echo "round $r: plain $plain s, memprobe $dflt s, memprobe --budget 0.005 --tracemalloc off $lean s"
    for f in d l; do
        $PY -c "import json, sys; r = json.load(open(sys.argv[1])); print(' ', sys.argv[1][-6:], 'target', round(r['duration_s'], 1), 's', *[e['message'].split(': ')[-1] for e in r['events'] if e['kind'] == 'agent_cost'])" "$W/$f.json"
    done
done
