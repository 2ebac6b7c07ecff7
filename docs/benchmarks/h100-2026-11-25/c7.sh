#!/bin/bash
# Lead, 2026-11-25 (after merging h-chain2 at 4bba81e): every issue-10 target with one binary.
# The references and hat-bench's full run (as .gpubench/run.sh, without its coarsening loop),
# then the dispatch chain six more times, each beside the probe's chain. SM clock logged every 100 ms.
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
C=$OUT/c7; mkdir -p $C
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,utilization.gpu --format=csv,noheader -lms 100 > $C/clocks.csv &
SMI=$!
B=.gpubench/c7/hat-bench
.gpubench/vkprobe --n 256M --reps 10 --life 8192x8192 --gens 1000 --dispatches 10000 --submits 1000 > $C/probe.jsonl 2> $C/probe.err
python3 .gpubench/cuda_ref.py --n 256M --reps 10 --life 8192x8192 --gens 1000 --dispatches 10000 --submits 1000 > $C/cuda.jsonl 2> $C/cuda.err
$B gpu --life-variant-workgroup 16x16 --probe $C/probe.jsonl --cuda $C/cuda.jsonl \
  --iree .gpubench/iree-recorded.jsonl --measured probe,cuda --svg $C/gpu.svg > $C/gpu.json 2> $C/gpu.err
PROBE="--n 1M --reps 10 --dispatches 10000 --submits 100"
ARGS="gpu --parts dispatch --dispatches 1000,10000 --synced-dispatches 10 --repeat 5"
for i in 1 2 3 4 5 6; do
  .gpubench/vkprobe $PROBE > $C/probe-$i.jsonl 2> $C/probe-$i.err
  $B $ARGS > $C/hat-$i.json 2> $C/hat-$i.err
done
.gpubench/vkprobe $PROBE > $C/probe-7.jsonl 2> $C/probe-7.err
sleep 0.2; kill $SMI
python3 - $C <<'PY'
import json,sys
C=sys.argv[1]
g=json.load(open(f"{C}/gpu.json"))
print(json.dumps(g.get("comparison",{}).get("targets"),indent=1)[:3000])
def probe(i):
    for l in open(f"{C}/probe-{i}.jsonl"):
        j=json.loads(l)
        if j.get("name")=="dispatch_overhead" and j.get("mode")=="barrier": return j["wall_us_per_dispatch"]
for i in range(1,8): print("probe",i,probe(i))
for i in range(1,7):
    w=json.load(open(f"{C}/hat-{i}.json"))['dispatch']['without_timestamps']['chain_at']['10000']
    print("hat",i,w['wall_us_per_dispatch'],w['record_us_per_dispatch']['median'],w['wait_us_per_dispatch']['median'])
PY
