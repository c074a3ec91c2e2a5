# bench/plots/paleo_gpu.gp - PALEO on this GPU (bench/paleo_gpu writes paleo_gpu.csv). Left: the
# platform percent of peak (PPP): measured GEMM f32 and device copy against the datasheet. Right:
# per MLP phase, the measured time beside PALEO's compute-only prediction and its sum
# (compute + memory); phases without a prediction show the measurement alone.
# csv: paleo_gpu
# Run: gnuplot -e "dir='bench/results/<gpu>'" bench/plots/paleo_gpu.gp   (scripts/plots.sh does this)
if (!exists("dir")) dir = "."
if (!exists("tagger")) tagger = "scripts/plots.sh --tag"
csv = dir."/paleo_gpu.csv"
# rows "phase,measured,predicted compute,predicted sum" from mlp_<phase>_ms rows (anchor predicted_compute,
# or not_measured) and mlp_<phase>_ms_vs_paleo_sum rows (anchor predicted_paleo_sum)
table = "< awk -F, 'NR > 1 && $1 ~ /^mlp_/ { k = $1; sub(/^mlp_/, \"\", k); sub(/_ms(_vs_paleo_sum)?$/, \"\", k); " . \
        "if (!(k in seen)) { seen[k] = 1; order[++n] = k; pc[k] = \"NaN\"; ps[k] = \"NaN\" } m[k] = $2; " . \
        "if ($4 == \"predicted_compute\") pc[k] = $5; if ($4 == \"predicted_paleo_sum\") ps[k] = $5 } " . \
        "END { for (i = 1; i <= n; i++) { k = order[i]; print k \",\" m[k] \",\" pc[k] \",\" ps[k] } }' '" . csv . "'"
ppp = "< awk -F, 'NR > 1 && $1 ~ /^ppp_/ { sub(/^ppp_/, \"\", $1); print $1 \",\" $6 }' '" . csv . "'"
set datafile separator ","
set datafile missing "NaN"
set terminal pngcairo size 1300,560 noenhanced
set output dir."/paleo_gpu.png"
set multiplot title "PALEO on the GPU: measured against predicted - ".system(tagger." ".csv)
set style fill solid 0.8 border -1
set grid ytics
set size 0.3, 0.92
set origin 0, 0
set title "platform percent of peak (PPP)"
set ylabel "measured / datasheet"
set yrange [0:1.1]
set boxwidth 0.6
unset key
plot ppp using 0:2:xtic(1) with boxes lc rgb "#4477aa", \
     ppp using 0:2:(sprintf("%.3f", $2)) with labels offset 0,0.8
set size 0.7, 0.92
set origin 0.3, 0
set title "MLP phases, one step"
set ylabel "ms"
set yrange [0:*]
set style data histograms
set style histogram clustered gap 1
set boxwidth 0.9
set key outside below
plot table using 2:xtic(1) lc rgb "#d62728" title "measured", \
     '' using 3 lc rgb "#1f77b4" title "PALEO compute", \
     '' using 4 lc rgb "#aec7e8" title "PALEO compute + memory"
unset multiplot
