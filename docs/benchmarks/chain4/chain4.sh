#!/bin/bash
# h-chain2 (issue 10), command 1: which of hat's differences slows the device's chain?
# vkchain = a modified copy of ../shared/reference/vkprobe (built in /tmp, not in the project) whose
# --study runs the probe's chain of 10,000 (buffer barriers) with three shaders x four ways to submit:
#   shaders: tiny (the probe's tiny.comp), guard (hat's @bump: 3-D grid check on push constants),
#            noguard (hat's @bump with the check's branch removed)
#   modes: one (the probe's: one buffer of 10,000, recorded once, re-submitted), pre (40 buffers of 256
#          recorded once, each its own submit and fence), fresh_one_time (hat's: each buffer reset,
#          recorded ONE_TIME_SUBMIT and submitted at once while the device runs), fresh_reusable (same, no flag)
# --robust 1: the device created with robustBufferAccess, as hat creates it.
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
C=$OUT/c4; mkdir -p $C
nvidia-smi --query-gpu=timestamp,clocks.sm,utilization.gpu --format=csv,noheader -lms 50 > $C/clocks.csv &
SMI=$!
ST=.gpubench/c4
ARGS="gpu --parts dispatch --dispatches 1000,10000 --synced-dispatches 10 --repeat 5"
SH="tiny,guard=$ST/bump-guard.spv,noguard=$ST/bump-noguard.spv"
.gpubench/vkprobe --n 1M --reps 10 --dispatches 10000 --submits 100 > $C/probe-1.jsonl 2> $C/probe-1.err
for i in 1 2 3; do
  for r in 0 1; do $ST/vkchain --n 1M --reps 10 --dispatches 10000 --robust $r --study $SH >> $C/study.jsonl 2>> $C/study.err; done
  .gpubench/hat-bench-chain $ARGS > $C/hat-$i.json 2> $C/hat-$i.err
done
.gpubench/vkprobe --n 1M --reps 10 --dispatches 10000 --submits 100 > $C/probe-2.jsonl 2> $C/probe-2.err
sleep 0.2; kill $SMI
grep -h "barrier" $C/probe-*.err
for f in $C/hat-*.json; do python3 -c "import json,sys;w=json.load(open(sys.argv[1]))['dispatch']['without_timestamps']['chain_at']['10000'];print(sys.argv[1].split('/')[-1],'wall',w['wall_us_per_dispatch']['median'],'record',w['record_us_per_dispatch']['median'],'wait',w['wait_us_per_dispatch']['median'])" $f; done
python3 - $C/study.jsonl <<'PY'
import json,sys,collections
d=collections.defaultdict(list)
for l in open(sys.argv[1]):
    j=json.loads(l)
    if j.get("name")=="chain_study": d[(j["robust"],j["shader"],j["mode"])].append(j["wall_us_per_dispatch"])
for k,v in sorted(d.items()): print(k, " ".join("%.3f"%x for x in v))
PY
tar czf $OUT/c4.tar.gz -C $OUT c4
