#!/bin/bash
# h-chain2 (issue 10), command 2: the chain with pipelines specialised for whole grids (hat-bench
# built at h-chain2), each invocation beside the probe's chain; the same binary with
# HAT_VULKAN_ALWAYS_CHECK_GRID=1 (the check kept, as before); Life both ways (coarsened kernels
# use the constant too).
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
C=$OUT/c5; mkdir -p $C
nvidia-smi --query-gpu=timestamp,clocks.sm,utilization.gpu --format=csv,noheader -lms 50 > $C/clocks.csv &
SMI=$!
HB=.gpubench/c5/hat-bench
PROBE="--n 1M --reps 10 --dispatches 10000 --submits 100"
ARGS="gpu --parts dispatch --dispatches 1000,10000 --synced-dispatches 10 --repeat 5"
for i in 1 2 3 4 5 6 7 8; do
  .gpubench/vkprobe $PROBE > $C/probe-$i.jsonl 2> $C/probe-$i.err
  $HB $ARGS > $C/hat-$i.json 2> $C/hat-$i.err
  if [ $i -le 4 ]; then HAT_VULKAN_ALWAYS_CHECK_GRID=1 $HB $ARGS > $C/checked-$i.json 2> $C/checked-$i.err; fi
done
.gpubench/vkprobe $PROBE > $C/probe-9.jsonl 2> $C/probe-9.err
for v in 0 1; do
  HAT_VULKAN_ALWAYS_CHECK_GRID=$v $HB gpu --parts life --repeat 3 --life-generations 100,1000 --jic-generations 2,3 > $C/life-check$v.json 2> $C/life-check$v.err
done
sleep 0.2; kill $SMI
python3 - $C <<'PY'
import json,sys,glob,os
C=sys.argv[1]
def probe(i):
    for l in open(f"{C}/probe-{i}.jsonl"):
        j=json.loads(l)
        if j.get("name")=="dispatch_overhead" and j.get("mode")=="barrier": return j["wall_us_per_dispatch"]
def hat(f):
    w=json.load(open(f))['dispatch']['without_timestamps']['chain_at']['10000']
    return w['wall_us_per_dispatch'], w['record_us_per_dispatch']['median'], w['wait_us_per_dispatch']['median']
for i in range(1,10): print("probe",i,probe(i))
for kind in ["hat","checked"]:
    for i in range(1,9):
        f=f"{C}/{kind}-{i}.json"
        if not os.path.exists(f): continue
        w,r,wt=hat(f); p=probe(i); p2=probe(i+1)
        print(kind,i,"median %.4f"%w['median'],"all",w['all'],"record %.3f wait %.3f"%(r,wt),"probe before %.3f after %.3f"%(p,p2),"ratio %.3f / %.3f"%(w['median']/p,w['median']/p2))
for v in [0,1]:
    try:
        j=json.load(open(f"{C}/life-check{v}.json"))
        l=j["comparison"]["life"]; print("life check",v,"1000 gens end to end ms",l["hat_end_to_end_ms"],"device ms",l["hat_device_ms"])
    except Exception as e: print("life",v,e)
PY
tar czf $OUT/c5.tar.gz -C $OUT c5
