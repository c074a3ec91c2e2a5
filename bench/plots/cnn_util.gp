# bench/plots/cnn_util.gp - NVML utilisation while the small CNN trains (scripts/gpu_cnn_util.sh
# writes cnn_util_eager.csv and cnn_util_graphs.csv, one sample every 100 ms over 3 minutes):
# the GPU's utilisation (time with a kernel running) of each series over time, its mean in the
# key; below, the board's power, which follows the work the SMs do more closely.
# csv: cnn_util_eager cnn_util_graphs
# Run: gnuplot -e "dir='results/<gpu>'" bench/plots/cnn_util.gp   (scripts/plots.sh does this)
if (!exists("dir")) dir = "."
if (!exists("tagger")) tagger = "scripts/plots.sh --tag"
eager = dir."/cnn_util_eager.csv"
graphs = dir."/cnn_util_graphs.csv"
set datafile separator ","
stats eager using 2 name "E" nooutput
stats graphs using 2 name "G" nooutput
stats eager using 6 name "EP" nooutput
stats graphs using 6 name "GP" nooutput
set terminal pngcairo size 900,640 noenhanced
set output dir."/cnn_util.png"
set multiplot layout 2,1 title "Small CNN, batch 32, Fashion-MNIST: NVML samples while training - " . \
    system(tagger." ".eager)
set key outside right
set grid
set xlabel "seconds"
set ylabel "GPU utilisation (%)"
set yrange [0:105]
plot eager using 1:2 with lines lc rgb "#ff7f0e" title sprintf("eager, mean %.1f %%", E_mean), \
     graphs using 1:2 with lines lc rgb "#1f77b4" title sprintf("CUDA graphs, mean %.1f %%", G_mean)
set ylabel "power (W)"
set yrange [0:*]
plot eager using 1:6 with lines lc rgb "#ff7f0e" title sprintf("eager, mean %.0f W", EP_mean), \
     graphs using 1:6 with lines lc rgb "#1f77b4" title sprintf("CUDA graphs, mean %.0f W", GP_mean)
unset multiplot
