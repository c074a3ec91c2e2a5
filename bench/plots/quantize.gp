# quantize charts from the CSVs of bench/quantize and examples/quantize in <dir>:
#   quantize_gemm.png       GEMM TOPS vs size: int8 mma / dp4a / cuBLASLt, f16 hpdl / cuBLAS (quantize_gemm.csv)
#   quantize_mlp.png        MLP inference samples/s, int8 vs float, per model (quantize_mlp.csv)
#   quantize_accuracy.png   test accuracy: float, int8 weights, + activations, integer-only (quantize_accuracy.csv)
#   quantize_hist_<x>.png   weight (w<l>) and activation (a<l>) histograms (quantize_hist_<x>.csv)
#   quantize_cnn.png        the small CNN's accuracy through the same steps (quantize_cnn.csv, examples/quantize_cnn)
#   quantize_cnn_hist_w<l>.png  its weight histograms (quantize_cnn_hist_w<l>.csv)
# Each chart is drawn only when its CSV is there.
# Run: gnuplot -e "dir='bench/results/<gpu>'" bench/plots/quantize.gp
# csv: quantize_gemm quantize_mlp quantize_accuracy quantize_hist_w0
if (!exists("dir")) dir = "."
if (!exists("tagger")) tagger = "scripts/plots.sh --tag"
tag(f) = system(tagger." ".f)
set datafile separator ","
set terminal pngcairo size 900,560 font ",10" noenhanced
set grid
exists_file(f) = system("test -s '".f."' && echo 1 || echo 0") + 0
pick(col_key, key, col) = (strcol(col_key) eq key) ? column(col) : 1/0

gemm = dir."/quantize_gemm.csv"
if (exists_file(gemm)) {
    variants = "int8_mma int8_dp4a int8_cublaslt f16_hpdl_auto f16_cublas"
    set output dir."/quantize_gemm.png"
    set title "GEMM M = N = K: int8 (int32 accumulation) vs f16 (f32 accumulation) - ".tag(gemm)
    set logscale x 2
    set xlabel "n"
    set ylabel "TOPS (2n^3 / median time)"
    set key outside right top
    set xrange [768:10922]
    rows(v) = sprintf("< grep ',%s,' '%s'", v, gemm)   # one variant's rows: one line each
    plot for [i=1:5] rows(word(variants, i)) using 1:3 with linespoints lw 2 pt (i + 3) title word(variants, i)
    unset logscale x
    unset xrange
}

mlp = dir."/quantize_mlp.csv"
if (exists_file(mlp)) {
    set output dir."/quantize_mlp.png"
    set title "MLP inference at batch 10000: forward to logits - ".tag(mlp)
    set logscale y
    set ylabel "samples/s"
    set xlabel ""
    set style fill solid 0.7 border -1
    set boxwidth 0.7
    set xtics rotate by -30
    unset key
    plot mlp using 0:4:xtic(strcol(1)." ".strcol(2)) every ::1 with boxes lc rgb "#4477aa"
    unset logscale y
    set xtics norotate
}

acc = dir."/quantize_accuracy.csv"
if (exists_file(acc)) {
    set output dir."/quantize_accuracy.png"
    set title "Fashion-MNIST test accuracy through post-training int8 quantization - ".tag(acc)
    set ylabel "test accuracy (%)"
    set xlabel ""
    set style fill solid 0.7 border -1
    set boxwidth 0.7
    set xtics rotate by -30
    stats acc using (strcol(3) eq "%" ? $2 : 1/0) every ::1 nooutput
    set yrange [STATS_min - 1 : STATS_max + 0.5]
    unset key
    plot acc using 0:(strcol(3) eq "%" ? $2 : 1/0):xtic(strcol(3) eq "%" ? strcol(1) : "") every ::1 with boxes lc rgb "#228833", \
         acc using 0:(strcol(3) eq "%" ? $2 : 1/0):(sprintf("%.2f", $2)) every ::1 with labels offset 0,0.7
    set xtics norotate
    set autoscale y
}

cnn = dir."/quantize_cnn.csv"
if (exists_file(cnn)) {
    set output dir."/quantize_cnn.png"
    set title "Small CNN, Fashion-MNIST test accuracy through int8 quantization - ".tag(cnn)
    set ylabel "test accuracy (%)"
    set xlabel ""
    set style fill solid 0.7 border -1
    set boxwidth 0.7
    set xtics rotate by -30
    stats cnn using (100 * $2) every ::1 nooutput
    set yrange [STATS_min - 1 : STATS_max + 0.5]
    unset key
    plot cnn using 0:(100 * $2):xtic(strcol(1)[17:strlen(strcol(1)) - 9]) every ::1 with boxes lc rgb "#228833", \
         cnn using 0:(100 * $2):(sprintf("%.2f", 100 * $2)) every ::1 with labels offset 0,0.7
    set xtics norotate
    set autoscale y
}

hists = system("ls ".dir."/quantize_hist_*.csv ".dir."/quantize_cnn_hist_*.csv 2>/dev/null")
do for [f in hists] {
    name = system("basename ".f." .csv")
    set output dir."/".name.".png"
    is_act = strstrt(name, "_hist_a") > 0
    set title (is_act ? "activations (input of layer ".name[strlen(name):]."), log counts" : "weights of layer ".name[strlen(name):]) . " - " . tag(f)
    set xlabel "value"
    set ylabel "count"
    if (is_act) { set logscale y } else { unset logscale y }
    set style fill solid 0.6 border -1
    set boxwidth 0.9 relative
    unset key
    set xtics norotate
    plot f using (($1 + $2) / 2):($3 > 0 ? $3 : 1/0) every ::1 with boxes lc rgb "#aa3377"
}
