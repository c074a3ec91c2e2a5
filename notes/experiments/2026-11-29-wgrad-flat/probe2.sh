#!/bin/bash
# Where a backward-filter call's time goes at the GPU's own clocks: wgrad_probe.cu (403a9d2's header)
# timed with events, then every kernel of one call per layer under ncu --clock-control none.
set -u
C=build/carry9
gunzip -f $C/*.gz
mkdir -p $OUT/p2
$C/probe_before > $OUT/p2/probe.txt 2>&1
ncu --profile-from-start off --clock-control none --csv --metrics gpu__time_duration.sum,launch__grid_size \
    $C/probe_before > $OUT/p2/ncu_times.csv 2>&1
ncu --profile-from-start off --clock-control none --csv --section SpeedOfLight --section WarpStateStats \
    --section SchedulerStats --section InstructionStats -k regex:wgrad $C/probe_before > $OUT/p2/ncu_wgrad.csv 2>&1
tar czf $OUT/p2.tgz -C $OUT p2 && rm -rf $OUT/p2
