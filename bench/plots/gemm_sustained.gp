# bench/plots/gemm_sustained.gp - GEMM under sustained load (gemm_sustained.csv from bench/gemm):
# per type and rung, TFLOP/s (top) and the mean SM clock (bottom) in each of the two rounds,
# round 2 beside round 1, so clocks that drop near the power limit show next to the speed they cost.
# csv: gemm_sustained
# Run: gnuplot -e "dir='bench/results/<gpu>'" bench/plots/gemm_sustained.gp   (scripts/plots.sh does this)
if (!exists("dir")) dir = "."
if (!exists("tagger")) tagger = "scripts/plots.sh --tag"
csv = dir."/gemm_sustained.csv"
# rows "type rung,tflops round 1,round 2,clock round 1,round 2" from metric gemm_sustained_<type>_<MxNxK>_<rung>_round<r>
table = "< awk -F, 'NR > 1 && match($1, /_round[0-9]+$/) { r = substr($1, RSTART + 6); split(substr($1, 1, RSTART - 1), p, \"_\"); " . \
        "rung = p[5]; for (i = 6; i in p; i++) rung = rung \"_\" p[i]; k = p[3] \" \" rung; " . \
        "if (!(k in seen)) { seen[k] = 1; order[++n] = k } v[k, r] = $2; c[k, r] = $7 } " . \
        "END { for (i = 1; i <= n; i++) { k = order[i]; print k \",\" v[k, 1] \",\" v[k, 2] \",\" c[k, 1] \",\" c[k, 2] } }' '" . csv . "'"
set datafile separator ","
set terminal pngcairo size 1200,760 noenhanced
set output dir."/gemm_sustained.png"
set multiplot title "GEMM under sustained load, two rounds back to back - ".system(tagger." ".csv)
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set grid ytics
set key outside right top
set lmargin 10
set rmargin 16
set size 1, 0.5
set origin 0, 0.45
set ylabel "TFLOP/s (log scale)"
set logscale y
set xtics format ""
plot table using 2:xtic("") lc rgb "#1f77b4" title "round 1", '' using 3 lc rgb "#aec7e8" title "round 2"
set size 1, 0.45
set origin 0, 0
unset logscale y
set ylabel "mean SM clock (MHz)"
set yrange [0:*]
set ytics 500
set xtics rotate by -35 format "% h"
plot table using 4:xtic(1) lc rgb "#d62728" title "round 1", '' using 5 lc rgb "#ff9896" title "round 2"
unset multiplot
