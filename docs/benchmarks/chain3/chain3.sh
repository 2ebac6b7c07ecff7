#!/bin/bash
# NOT RUN YET (h-gpu2, 2026-11-24): the clock hypothesis for the chain. SM clocks every 20 ms
# through: the probe's chain of 10,000 and of 100,000 (long enough for the clock to fall), and
# hat-bench's chain (this round's binary) three times; then the clock log's range per phase.
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
C=$OUT/c3; mkdir -p $C
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,utilization.gpu --format=csv,noheader -lms 20 > $C/clocks.csv &
SMI=$!
stamp() { date +%Y/%m/%d\ %H:%M:%S.%N | cut -c1-23 | sed "s/^/$1 /" >> $C/phases.txt; }
ARGS="gpu --parts dispatch --dispatches 1000,10000 --synced-dispatches 10 --repeat 5"
stamp probe10k; .gpubench/vkprobe --n 1M --reps 10 --dispatches 10000 --submits 100 > $C/probe-10k.jsonl 2> $C/probe-10k.err
stamp probe100k; .gpubench/vkprobe --n 1M --reps 10 --dispatches 100000 --submits 100 > $C/probe-100k.jsonl 2> $C/probe-100k.err
for i in 1 2 3; do stamp hat-$i; .gpubench/hat-bench-chain $ARGS > $C/hat-$i.json 2> $C/hat-$i.err; done
stamp end; sleep 0.2; kill $SMI
cat $C/phases.txt; grep -h "barrier" $C/probe-*.err; grep -h "chain: 10000" $C/hat-*.err
tar czf $OUT/c3.tar.gz -C $OUT c3
