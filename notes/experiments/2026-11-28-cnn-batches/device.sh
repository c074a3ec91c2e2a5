#!/usr/bin/env bash
# bench/cnn resnet18 over a batch list (PyTorch in the same run), under $OUT in one archive.
set -u -o pipefail
export HPDL_COMMIT=${COMMIT}
B=build/h90; O=$OUT/r; mkdir -p $B/bench $O
gunzip -c build/carry/cnn.gz > $B/bench/cnn && chmod +x $B/bench/cnn
nvidia-smi --query-gpu=index,name,clocks.max.sm --format=csv,noheader
start=$SECONDS
timeout ${CNN_S:-330} $B/bench/cnn ${NET:-resnet18} --batch ${BATCHES:-32,128,512,2048,8192} --output $O > $O/cnn.log 2>&1
echo "rc=$?" >> $O/cnn.log; tail -22 $O/cnn.log
echo "== done ($((SECONDS - start)) s)"
tar czf /tmp/all.tgz -C $OUT . && rm -rf $OUT/* && mv /tmp/all.tgz $OUT/
