# bench/plots/model_parallel.gp - pipeline model parallelism (bench/model_parallel writes
# model_parallel.csv). Left: step time against the number of micro-batches m (m = 1: the
# naive split) per depth d, with the 1-GPU step as a dashed line. Right: the measured idle
# fraction against GPipe's bubble (g-1)/(m+g-1) (the rows' anchor gpipe_bubble).
# Writes model_parallel.png.
# csv: model_parallel
# Run: gnuplot -e "dir='bench/results/<gpu>'" bench/plots/model_parallel.gp   (scripts/plots.sh does this)
if (!exists("dir")) dir = "."
if (!exists("tagger")) tagger = "scripts/plots.sh --tag"
csv = dir."/model_parallel.csv"
# rows d,g,m,step_ms,single_ms,idle,bubble from the metric names <naive|pipelined>_d<D>_g<G>_m<M>_step_time
# and idle_fraction_d<D>_g<G>_m<M>
table = "< awk -F, 'NR > 1 && match($1, /_d[0-9]+_g[0-9]+_m[0-9]+/) { split(substr($1, RSTART + 2, RLENGTH - 2), p, /_[gm]/); " . \
        "k = p[1] \",\" p[2] \",\" p[3]; if ($1 ~ /step_time$/) { step[k] = $2; one[k] = $5 } " . \
        "if ($1 ~ /^idle_fraction/) { idle[k] = $2; bub[k] = $5 } } " . \
        "END { for (k in step) print k \",\" step[k] \",\" one[k] \",\" (k in idle ? idle[k] : \"NaN\") \",\" (k in bub ? bub[k] : \"NaN\") }' '" . csv . "' | sort -t, -k1,1n -k3,3n"
depths = system("awk -F, 'NR > 1 && match($1, /_d[0-9]+_/) { print substr($1, RSTART + 2, RLENGTH - 3) }' '" . csv . "' | sort -un | tr '\\n' ' '")
of(d) = sprintf("< awk -F, '$1 == %s' ", d)
set datafile separator ","
set datafile missing "NaN"
set terminal pngcairo size 1300,560 noenhanced
set output dir."/model_parallel.png"
set multiplot layout 1,2 title "Pipeline model parallelism, g GPUs, m micro-batches per step - ".system(tagger." ".csv)
set grid
set logscale x 2
set xlabel "micro-batches m (1: naive split, no pipelining)"
set offsets graph 0.03, graph 0.03, graph 0.05, graph 0.05
set key outside below
colors = "#1f77b4 #d62728 #2ca02c #9467bd"
set title "step time"
set ylabel "ms per step"
plot for [i=1:words(depths)] table using ($1 == word(depths, i) + 0 ? $3 : 1/0):4 with linespoints lw 2 pt 7 \
         lc rgb word(colors, i) title sprintf("depth %s, %s", word(depths, i), "g GPUs"), \
     for [i=1:words(depths)] table using ($1 == word(depths, i) + 0 ? $3 : 1/0):5 with lines dt 2 \
         lc rgb word(colors, i) title sprintf("depth %s, 1 GPU", word(depths, i))
set title "idle fraction of the GPUs"
set ylabel "fraction of the step"
set yrange [0:*]
plot for [i=1:words(depths)] table using ($1 == word(depths, i) + 0 ? $3 : 1/0):6 with linespoints lw 2 pt 7 \
         lc rgb word(colors, i) title sprintf("depth %s, measured", word(depths, i)), \
     table using ($1 == word(depths, 1) + 0 ? $3 : 1/0):7 with linespoints dt 2 pt 6 lc rgb "black" \
         title "GPipe bubble (g-1)/(m+g-1)"
unset multiplot
