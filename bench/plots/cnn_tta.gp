# bench/plots/cnn_tta.gp - time to accuracy of the small CNN over seeds (cnn_train --target-acc,
# scripts/gpu_cnn_tta.sh write cnn_tta.csv): each seed's training seconds to the target (grey: did
# not reach it, its seconds are the whole run), the mean as a line, epochs above each bar; the
# title gives the mean, std and coefficient of variation from the CSV's summary rows.
# csv: cnn_tta
# Run: gnuplot -e "dir='results/<gpu>'" bench/plots/cnn_tta.gp   (scripts/plots.sh does this)
if (!exists("dir")) dir = "."
if (!exists("tagger")) tagger = "scripts/plots.sh --tag"
csv = dir."/cnn_tta.csv"
runs = "< awk -F, 'NR > 1 && $1 ~ /^[0-9]+$/' '" . csv . "'"
stat(row, col) = system("awk -F, '$1 == \"" . row . "\" { print $" . col . " }' '" . csv . "'")
mean_s = stat("mean", 5)
summary = mean_s eq "" ? "no seed reached the target" : \
          sprintf("mean %.2f s, std %.2f s, CV %.1f %% over %s seeds; epochs: mean %.1f, CV %.1f %%", \
                  real(mean_s), real(stat("std", 5)), 100 * real(stat("cv", 5)), stat("mean", 3), \
                  real(stat("mean", 4)), 100 * real(stat("cv", 4)))
set datafile separator ","
set terminal pngcairo size 900,520 noenhanced
set output dir."/cnn_tta.png"
set title "Small CNN, Fashion-MNIST: training time to the target accuracy per seed - " . system(tagger." ".csv) . \
          "\n" . summary
set xlabel "seed"
set ylabel "seconds of training (evaluation excluded)"
set yrange [0:*]
set offsets 0.5, 0.5, graph 0.1, 0
set style fill solid 0.8 border -1
set boxwidth 0.6
set grid ytics
set key outside below
plot runs using 0:($3 == 1 ? $5 : 1/0):xtic(2) with boxes lc rgb "#1f77b4" title "reached the target", \
     runs using 0:($3 == 0 ? $5 : 1/0) with boxes lc rgb "#bbbbbb" title "did not reach it", \
     runs using 0:5:(sprintf("%d ep", $4)) with labels offset 0,0.8 notitle, \
     (mean_s eq "" ? 1/0 : real(mean_s)) with lines dt 2 lw 2 lc rgb "#d62728" title "mean"
