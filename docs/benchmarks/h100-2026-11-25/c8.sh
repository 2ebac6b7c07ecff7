#!/bin/bash
# Lead, 2026-11-25: the dispatch chain ten times, each beside the probe's chain, with the CPU
# time of hat's thread per dispatch (cpu_us_per_dispatch), no clock logging. hat-bench at 4bba81e
# plus that diagnostic.
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
C=$OUT/c8; mkdir -p $C
B=.gpubench/c8/hat-bench
PROBE="--n 1M --reps 10 --dispatches 10000 --submits 100"
ARGS="gpu --parts dispatch --dispatches 1000,10000 --synced-dispatches 10 --repeat 5"
nproc > $C/host.txt; lscpu >> $C/host.txt 2>&1
for i in 1 2 3 4 5 6 7 8 9 10; do
  .gpubench/vkprobe $PROBE > $C/probe-$i.jsonl 2> $C/probe-$i.err
  $B $ARGS > $C/hat-$i.json 2> $C/hat-$i.err
done
.gpubench/vkprobe $PROBE > $C/probe-11.jsonl 2> $C/probe-11.err
python3 - $C <<'PY' | tee $C/summary.txt
import json,sys
C=sys.argv[1]
def probe(i):
    for l in open(f"{C}/probe-{i}.jsonl"):
        j=json.loads(l)
        if j.get("name")=="dispatch_overhead" and j.get("mode")=="barrier": return j["wall_us_per_dispatch"]
for i in range(1,12): print("probe",i,probe(i))
for i in range(1,11):
    w=json.load(open(f"{C}/hat-{i}.json"))['dispatch']['without_timestamps']['chain_at']['10000']
    print("hat",i,"wall",w['wall_us_per_dispatch']['all'],"record",w['record_us_per_dispatch']['all'],"wait",w['wait_us_per_dispatch']['all'],"cpu",w['cpu_us_per_dispatch']['all'])
PY
tar czf $OUT/c8.tar.gz -C $OUT c8 && rm -r $C
