# vecadd charts from <dir>/vecadd_times.csv (written by bench/vecadd).
#   vecadd.png     without unified memory: whole program (copies in and out,
#                  pageable solid, pinned dashed) | kernel only
#   vecadd_um.png  with unified memory: managed | managed + prefetch
# Log-log, x = K (million float32 elements), y = time in ms; the CPU on every panel.
# Run: gnuplot -e "dir='bench/results/<gpu>'" bench/plots/vecadd.gp
# csv: vecadd_times
if (!exists("dir")) dir = "."
if (!exists("tagger")) tagger = "scripts/plots.sh --tag"
tag(f) = system(tagger." ".f)
data = dir."/vecadd_times.csv"
set datafile separator ","
set terminal pngcairo size 1400,680 font ",10"
set logscale xy
set xlabel "K (million elements)"
set ylabel "time (ms)"
set grid
set key outside below
set xrange [0.8:125]

configs = "one-thread one-block many-blocks grid-stride"
# the column of rows from one series (config, memory), undefined elsewhere
pick(config, memory, col) = (strcol(1) eq config && strcol(2) eq memory) ? column(col) : 1/0
# markers of config i a little left or right of K, so that equal times stay visible
sh(i) = 1 + (i - 2.5) * 0.04
cpu_line = "using 3:(pick('cpu', 'host', 5)) with linespoints lc rgb 'black' lw 2 pt 7 title 'CPU'"

set output dir."/vecadd.png"
set multiplot layout 1,2 title "vecadd c = a + b (float32): without unified memory - ".tag(data)
set title "whole program: copy a, b in, launch, copy c out"
plot data @cpu_line, \
     for [i=1:4] data using ($3 * sh(i)):(pick(word(configs, i), "pageable", 5)) with linespoints lc i lw 2 pt 7 \
         title word(configs, i)." (pageable)", \
     for [i=1:4] data using ($3 * sh(i)):(pick(word(configs, i), "pinned", 5)) with linespoints lc i lw 1 dt 2 pt 6 \
         title word(configs, i)." (pinned)"
set title "kernel only (CUDA events, median)"
plot data @cpu_line, \
     for [i=1:4] data using ($3 * sh(i)):(pick(word(configs, i), "pageable", 4)) with linespoints lc i lw 2 pt 7 \
         title word(configs, i)
unset multiplot

set output dir."/vecadd_um.png"
set multiplot layout 1,2 title "vecadd c = a + b (float32): unified memory (cudaMallocManaged), pages start on the host - ".tag(data)
set title "managed: pages migrate on first touch"
plot data @cpu_line, \
     for [i=1:4] data using ($3 * sh(i)):(pick(word(configs, i), "managed", 5)) with linespoints lc i lw 2 pt 7 \
         title word(configs, i)
set title "managed + cudaMemPrefetchAsync to the GPU (time includes the prefetch)"
plot data @cpu_line, \
     for [i=1:4] data using ($3 * sh(i)):(pick(word(configs, i), "managed_prefetch", 5)) with linespoints lc i lw 2 pt 7 \
         title word(configs, i)
unset multiplot
