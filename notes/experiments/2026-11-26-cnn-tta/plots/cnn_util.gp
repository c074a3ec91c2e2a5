# bench/plots/cnn_util.gp - NVML samples while the small CNN trains at batch 32, steps launched
# kernel by kernel against one CUDA graph replay per step (scripts/gpu_cnn_util.sh writes
# cnn_util_eager.csv and cnn_util_graphs.csv, cnn_train --util-csv): GPU utilisation (the share of
# time a kernel ran), memory-controller utilisation and power over time; means in the key.
# csv: cnn_util_eager cnn_util_graphs
# Run: gnuplot -e "dir='results/<gpu>'" bench/plots/cnn_util.gp   (scripts/plots.sh does this)
if (!exists("dir")) dir = "."
if (!exists("tagger")) tagger = "scripts/plots.sh --tag"
eager = dir."/cnn_util_eager.csv"
graphs = dir."/cnn_util_graphs.csv"
mean(file, col) = real(system("awk -F, 'NR > 1 { s += $" . col . "; n++ } END { printf \"%.1f\", n ? s / n : 0 }' '" . file . "'"))
set datafile separator ","
set terminal pngcairo size 1200,760 noenhanced
set output dir."/cnn_util.png"
set multiplot layout 3,1 title "Small CNN training, batch 32: NVML every 100 ms, eager against CUDA graphs - " . \
    system(tagger." ".graphs)
set grid
set key outside right
set lmargin 10
set rmargin 32
set ylabel "GPU util %"
set yrange [0:105]
plot eager using 1:2 with lines lc rgb "#d62728" title sprintf("eager (mean %.1f)", mean(eager, 2)), \
     graphs using 1:2 with lines lc rgb "#1f77b4" title sprintf("graphs (mean %.1f)", mean(graphs, 2))
set ylabel "memory util %"
plot eager using 1:3 with lines lc rgb "#d62728" title sprintf("eager (mean %.1f)", mean(eager, 3)), \
     graphs using 1:3 with lines lc rgb "#1f77b4" title sprintf("graphs (mean %.1f)", mean(graphs, 3))
set ylabel "power W"
set yrange [0:*]
set xlabel "seconds since the sampler started"
plot eager using 1:6 with lines lc rgb "#d62728" title sprintf("eager (mean %.0f)", mean(eager, 6)), \
     graphs using 1:6 with lines lc rgb "#1f77b4" title sprintf("graphs (mean %.0f)", mean(graphs, 6))
unset multiplot
