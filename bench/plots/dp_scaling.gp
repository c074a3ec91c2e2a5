# dp_scaling charts: gnuplot -e "dir='bench/results/h200'" bench/plots/dp_scaling.gp
# Reads dir/dp_scaling_all.csv (hidden,batch_per_gpu,overlap,gpus,steps,epoch_ms,compute_ms,comm_ms,
# comm_span_ms,grad_mb,busbw_gbs,bw_util,speedup,weak_eff); writes dp_scaling_eff.png, dp_scaling_time.png.
if (!exists("dir")) dir = "."
f = dir."/dp_scaling_all.csv"
set datafile separator ","
set terminal pngcairo size 900,540 noenhanced
set logscale x 2
set key left top
set grid

set output dir."/dp_scaling_eff.png"
set title "Weak-scaling efficiency E = T1/(P TP), epoch of 60000 samples"
set xlabel "batch per GPU"
set ylabel "efficiency"
set yrange [0:1.1]
plot f using ($1==2048 && $3==1 && $4>1 ? $2 : 1/0):14 every ::1 with linespoints title "H 2048, overlap", \
     f using ($1==2048 && $3==0 && $4>1 ? $2 : 1/0):14 every ::1 with linespoints title "H 2048, no overlap", \
     f using ($1==512 && $3==1 && $4>1 ? $2 : 1/0):14 every ::1 with linespoints title "H 512, overlap", \
     f using ($1==512 && $3==0 && $4>1 ? $2 : 1/0):14 every ::1 with linespoints title "H 512, no overlap", \
     0.95 with lines dt 2 title "target 0.95 (b 3000)", 0.80 with lines dt 3 title "target 0.80 (b 512)"

set output dir."/dp_scaling_time.png"
set title "H 2048, P GPUs: compute vs waited-for communication per epoch"
set ylabel "ms per epoch"
set autoscale y
set logscale y
plot f using ($1==2048 && $3==0 && $4>1 ? $2 : 1/0):7 every ::1 with linespoints title "compute, no overlap", \
     f using ($1==2048 && $3==0 && $4>1 ? $2 : 1/0):8 every ::1 with linespoints title "comm, no overlap", \
     f using ($1==2048 && $3==1 && $4>1 ? $2 : 1/0):8 every ::1 with linespoints title "comm waited, overlap", \
     f using ($1==2048 && $3==1 && $4==1 ? $2 : 1/0):6 every ::1 with linespoints title "1-GPU epoch"
