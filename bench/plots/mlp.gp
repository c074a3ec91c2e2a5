# bench/plots/mlp.gp - MLP training charts from bench/mlp (mlp_detail.csv) and
# examples/mlp_train (mlp_curve_f32.csv, mlp_curve_f16.csv, when present).
# Run: gnuplot -e "dir='bench/results/<gpu>'" bench/plots/mlp.gp   (scripts/plots.sh does this)
if (!exists("dir")) dir = "."
set datafile separator ","
set datafile missing "NaN"
set terminal pngcairo size 1100,600 noenhanced
set grid
set key top right

# 1. Epoch time against batch size, hpdl and PyTorch eager, per hidden width.
detail = dir."/mlp_detail.csv"
set output dir."/mlp_epoch_time.png"
set title "784-H-10 MLP, one epoch of 60000 samples (".dir.")"
set xlabel "batch size"
set ylabel "epoch time (ms, log scale)"
set logscale xy
set xtics (32, 128, 512, 3000)
plot for [h in "512 2048"] detail using 3:($2 == h + 0 ? $4 : 1/0) with linespoints lw 2 title "hpdl f32 graph, H=".h, \
     for [h in "512 2048"] detail using 3:($2 == h + 0 ? $7 : 1/0) with linespoints lw 2 title "hpdl f16 graph, H=".h, \
     for [h in "512 2048"] detail using 3:($2 == h + 0 ? $9 : 1/0) with linespoints dt 2 title "PyTorch eager f32, H=".h, \
     for [h in "512 2048"] detail using 3:($2 == h + 0 ? $10 : 1/0) with linespoints dt 2 title "PyTorch AMP, H=".h

# 2. Training curves on Fashion-MNIST (test accuracy per epoch), if written.
unset logscale
set xtics autofreq
curve32 = dir."/mlp_curve_f32.csv"
curve16 = dir."/mlp_curve_f16.csv"
if (system("test -f ".curve32." && echo 1") eq "1") {
    set output dir."/mlp_curve.png"
    set title "784-512-10 on Fashion-MNIST, batch 32: test accuracy and training loss per epoch (".dir.")"
    set xlabel "epoch"
    set ylabel "test accuracy (%)"
    set y2label "training loss"
    set y2tics
    set ytics nomirror
    set key bottom right
    plot curve32 using 2:(100 * $6) with linespoints lw 2 title "f32 test accuracy", \
         curve16 using 2:(100 * $6) with linespoints lw 2 title "f16 mixed test accuracy", \
         curve32 using 2:3 axes x1y2 with lines dt 2 title "f32 training loss", \
         curve16 using 2:3 axes x1y2 with lines dt 2 title "f16 training loss", \
         88 with lines lc rgb "gray" title "88% target"
}
