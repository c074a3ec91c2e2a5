# dp_scaling charts: gnuplot -e "dir='bench/results/h200'" bench/plots/dp_scaling.gp
# Reads dir/dp_scaling_all.csv (hidden,batch_per_gpu,overlap,gpus,steps,epoch_ms,compute_ms,comm_ms,
# comm_span_ms,grad_mb,busbw_gbs,bw_util,speedup,weak_eff); writes dp_scaling_eff.png, dp_scaling_time.png;
# and from dir/dp_scaling_acc.csv (run,hidden,batch_per_gpu,gpus,lr_scale,warmup_epochs,final_lr,
# epoch5_loss,epoch5_test_acc), when there, dp_scaling_acc.png; and from dir/dp_roofline_rates.csv and
# dir/dp_roofline_points.csv (runs on more than one GPU), when there, dp_roofline.png.
# csv: dp_scaling_all dp_scaling_acc dp_roofline_rates dp_roofline_points
if (!exists("dir")) dir = "."
if (!exists("tagger")) tagger = "scripts/plots.sh --tag"
tag(f) = system(tagger." ".f)
have(f) = system("test -f '".f."' && echo 1") eq "1"
f = dir."/dp_scaling_all.csv"
set datafile separator ","
set terminal pngcairo size 1000,540 noenhanced
set key outside right top
set grid
# rows of one series (hidden, overlap, gpus > 1 or == 1) by batch, header dropped: each series is one line
sel(h, o, multi) = sprintf("< awk -F, 'NR > 1 && $1 == %d && $3 == %d && %s' '%s' | sort -t, -k2,2n", h, o, multi ? "$4 > 1" : "$4 == 1", f)
if (have(f)) {
set logscale x 2
set offsets graph 0.03, graph 0.03, 0, 0

set output dir."/dp_scaling_eff.png"
set title "Weak-scaling efficiency E = T1/(P TP), epoch of 60000 samples - ".tag(f)
set xlabel "batch per GPU"
set ylabel "efficiency"
set yrange [0:1.1]
plot sel(2048, 1, 1) using 2:14 with linespoints pt 7 title "H 2048, overlap", \
     sel(2048, 0, 1) using 2:14 with linespoints pt 6 title "H 2048, no overlap", \
     sel(512, 1, 1) using 2:14 with linespoints pt 5 title "H 512, overlap", \
     sel(512, 0, 1) using 2:14 with linespoints pt 4 title "H 512, no overlap", \
     0.95 with lines dt 2 title "target 0.95 (b 3000)", 0.80 with lines dt 3 title "target 0.80 (b 512)"

set output dir."/dp_scaling_time.png"
set title "H 2048, P GPUs: compute vs waited-for communication per epoch - ".tag(f)
set ylabel "ms per epoch"
set autoscale y
set logscale y
plot sel(2048, 0, 1) using 2:7 with linespoints pt 7 title "compute, no overlap", \
     sel(2048, 0, 1) using 2:8 with linespoints pt 6 title "comm, no overlap", \
     sel(2048, 1, 1) using 2:8 with linespoints pt 5 title "comm waited, overlap", \
     sel(2048, 1, 0) using 2:6 with linespoints pt 4 title "1-GPU epoch"
unset logscale
}

# Accuracy after 5 epochs at the largest batch: plain, and with the learning rate
# scaled by the batch (linear scaling) after a warm-up; bars = test accuracy, the
# label above each bar gives the final learning rate and the training loss.
acc = dir."/dp_scaling_acc.csv"
if (have(acc)) {
    set output dir."/dp_scaling_acc.png"
    set title "Data-parallel MLP, 5 epochs: test accuracy by batch and learning-rate rule - ".tag(acc)
    unset logscale
    set xlabel ""
    set ylabel "test accuracy after epoch 5 (%)"
    set yrange [0:105]
    set style fill solid 0.7 border -1
    set boxwidth 0.6
    unset key
    bar(c) = sprintf("%s\nH %d, %d GPUs x batch %d\n%s", strcol(1), $2, $4, $3, \
                     $5 > 0 ? sprintf("lr x batch, %d warm-up epochs", $6) : "lr fixed")
    set bmargin 5
    plot acc using 0:(100 * $9):xtic(bar(0)) every ::1 with boxes lc rgb "#4477aa", \
         acc using 0:(100 * $9):(sprintf("%.2f%%  (lr %g, loss %.3g)", 100 * $9, $7, $8)) every ::1 with labels offset 0,1
}

# The course's roofline (CME 213 Q2.5, Q2.6): per H, from dp_roofline_rates.csv (hidden,gpus,allreduce,
# grad_bytes,p_flops_tflops,p_pci_gbs,p_mpi_busbw_gbs,p_mpi_algbw_gbs,ridge_flop_per_byte), the model
#   attainable(AI) = AI / (AI / P_flops + (1/P_pci + 1/P_mpi) / 2)
# as a line, and the measured points of dp_roofline_points.csv (hidden,batch_per_gpu,overlap,gpus,
# gemm_flops_per_step,grad_bytes,ai_flop_per_byte,attainable_tflops,measured_tflops,
# measured_over_attainable) in the line's colour: filled without overlap, hollow with it.
rates = dir."/dp_roofline_rates.csv"
points = dir."/dp_roofline_points.csv"
if (have(rates) && have(points)) {
    hiddens = system("awk -F, 'NR > 1 { print $1 }' '".rates."'")
    nh = words(hiddens)
    rate(h, col) = real(system(sprintf("awk -F, 'NR > 1 && $1 == %s { print $%d }' '%s'", h, col, rates)))
    array pf[nh]
    array pci[nh]
    array mpi[nh]
    do for [i = 1:nh] { pf[i] = rate(word(hiddens, i), 5); pci[i] = rate(word(hiddens, i), 6); mpi[i] = rate(word(hiddens, i), 7) }
    gpus = int(real(system("awk -F, 'NR == 2 { print $2 }' '".rates."'")))
    # TFLOP/s at ai FLOP/byte, the rates in TFLOP/s and GB/s
    model(ai, f, p, m) = ai / (ai / f + 0.5 * (1 / p + 1 / m) * 1e3)
    pts(h, o) = sprintf("< awk -F, 'NR > 1 && $1 == %s && $3 == %d' '%s'", h, o, points)
    set output dir."/dp_roofline.png"
    set title sprintf("Roofline, %d GPUs: model from measured P_flops, P_pci, P_mpi; points measured - %s", gpus, tag(points))
    set xlabel "AI: GEMM FLOPs per gradient byte (about the batch per GPU)"
    set ylabel "TFLOP/s per GPU (GEMM FLOPs / epoch time)"
    set key inside right bottom
    set logscale xy 10
    set autoscale
    set xrange [10:100000]
    set yrange [0.1:*]
    set samples 200
    plot for [i = 1:nh] model(x, pf[i], pci[i], mpi[i]) with lines lw 2 lc i \
             title sprintf("model, H %s (P_flops %.0f TFLOP/s)", word(hiddens, i), pf[i]), \
         for [i = 1:nh] pts(word(hiddens, i), 0) using 7:9 with points pt 7 ps 1.2 lc i \
             title sprintf("H %s, no overlap", word(hiddens, i)), \
         for [i = 1:nh] pts(word(hiddens, i), 1) using 7:9 with points pt 6 ps 1.2 lc i \
             title sprintf("H %s, overlap", word(hiddens, i))
}
