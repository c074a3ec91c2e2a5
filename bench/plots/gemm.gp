# bench/plots/gemm.gp - TFLOP/s of every GEMM rung at 4096^3, per type (bench/gemm writes gemm_rungs.csv).
# Run: gnuplot -e "dir='bench/results/<gpu>'" bench/plots/gemm.gp   (scripts/plots.sh does this)
# csv: gemm_rungs
if (!exists("dir")) dir = "."
if (!exists("tagger")) tagger = "scripts/plots.sh --tag"
tag(f) = system(tagger." ".f)
set datafile separator ","
set datafile missing "NaN"
set terminal pngcairo size 1100,600 noenhanced
set output dir."/gemm_rungs.png"
set title "GEMM ladder at 4096x4096x4096: TFLOP/s per rung - ".tag(dir."/gemm_rungs.csv")
set ylabel "TFLOP/s (log scale)"
set logscale y
set yrange [0.1:*]
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set key outside right top
set grid ytics
set xtics rotate by -30
plot for [i=2:6] dir."/gemm_rungs.csv" using i:xtic(1) title columnheader(i)
