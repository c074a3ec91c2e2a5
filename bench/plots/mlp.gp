# bench/plots/mlp.gp - MLP training charts from bench/mlp (mlp_detail.csv) and
# examples/mlp_train (mlp_curve_f32.csv, mlp_curve_f16.csv, when present).
# csv: mlp_detail mlp_curve_f32
# Run: gnuplot -e "dir='bench/results/<gpu>'" bench/plots/mlp.gp   (scripts/plots.sh does this)
if (!exists("dir")) dir = "."
if (!exists("tagger")) tagger = "scripts/plots.sh --tag"
tag(f) = system(tagger." ".f)
have(f) = system("test -f '".f."' && echo 1") eq "1"
set datafile separator ","
set datafile missing "NaN"
set terminal pngcairo size 1100,600 noenhanced
set grid
set key outside right top

# 1. Epoch time against batch size, hpdl and PyTorch eager, per hidden width.
detail = dir."/mlp_detail.csv"
if (have(detail)) {
set output dir."/mlp_epoch_time.png"
set title "784-H-10 MLP, one epoch of 60000 samples - ".tag(detail)
set xlabel "batch size"
set ylabel "epoch time (ms, log scale)"
set logscale xy
set xtics (32, 128, 512, 3000)
plot for [h in "512 2048"] detail using 3:($2 == h + 0 ? $4 : 1/0) with linespoints lw 2 title "hpdl f32 graph, H=".h, \
     for [h in "512 2048"] detail using 3:($2 == h + 0 ? $7 : 1/0) with linespoints lw 2 title "hpdl f16 graph, H=".h, \
     for [h in "512 2048"] detail using 3:($2 == h + 0 ? $9 : 1/0) with linespoints dt 2 title "PyTorch eager f32, H=".h, \
     for [h in "512 2048"] detail using 3:($2 == h + 0 ? $10 : 1/0) with linespoints dt 2 title "PyTorch AMP, H=".h
}

# 2. Training curves on Fashion-MNIST, if written: test accuracy above, training
#    loss below, f32 and f16 each with its own marker, set a little left (f32)
#    and right (f16) of its epoch so that where the two agree neither hides the other.
unset logscale
set xtics autofreq
curve32 = dir."/mlp_curve_f32.csv"
curve16 = dir."/mlp_curve_f16.csv"
if (have(curve32)) {
    set output dir."/mlp_curve.png"
    set multiplot layout 2,1 title "784-512-10 on Fashion-MNIST, batch 32: test accuracy and training loss per epoch - ".tag(curve32)
    unset title
    set rmargin 30
    set xrange [0.5:*]
    set xlabel ""
    set ylabel "test accuracy (%)"
    plot curve32 using ($2 - 0.12):(100 * $6) with linespoints lw 2 pt 7 ps 0.9 lc rgb "#9400d3" title "f32", \
         curve16 using ($2 + 0.12):(100 * $6) with linespoints lw 2 pt 6 ps 1.1 lc rgb "#009e73" title "f16 mixed", \
         88 with lines dt 2 lc rgb "gray" title "88% target"
    set xlabel "epoch"
    set ylabel "training loss"
    plot curve32 using ($2 - 0.12):3 with linespoints lw 2 pt 7 ps 0.9 lc rgb "#9400d3" title "f32", \
         curve16 using ($2 + 0.12):3 with linespoints lw 2 pt 6 ps 1.1 lc rgb "#009e73" title "f16 mixed"
    unset multiplot
}
