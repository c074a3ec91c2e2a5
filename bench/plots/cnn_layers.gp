# bench/plots/cnn_layers.gp - the CNNs' forward pass layer by layer against PALEO (paleo_gpu
# writes cnn_layers.csv): per layer of ResNet-18 and of the small CNN, the measured time alone
# beside PALEO's prediction (compute + memory term, log scale); per network, the layers' sum, the
# whole pass measured once and PALEO's network time.
# csv: cnn_layers
# Run: gnuplot -e "dir='bench/results/<gpu>'" bench/plots/cnn_layers.gp   (scripts/plots.sh does this)
if (!exists("dir")) dir = "."
if (!exists("tagger")) tagger = "scripts/plots.sh --tag"
csv = dir."/cnn_layers.csv"
layers(net) = "< awk -F, '$1 == \"" . net . "\" && $2 ~ /^[0-9]+$/ { print $2 \" \" $3 \",\" $9 \",\" $8 }' '" . csv . "'"
# rows "net,sum of layers,whole pass,PALEO"
totals = "< awk -F, '$2 == \"sum\" { s[$1] = $9; p[$1] = $8; order[++n] = $1 } $2 == \"whole\" { w[$1] = $9 } " . \
         "END { for (i = 1; i <= n; i++) print order[i] \",\" s[order[i]] \",\" w[order[i]] \",\" p[order[i]] }' '" . csv . "'"
set datafile separator ","
set terminal pngcairo size 1600,1000 noenhanced
set output dir."/cnn_layers.png"
set multiplot title "Forward pass layer by layer, f32 NHWC, measured alone against PALEO - " . system(tagger." ".csv)
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set grid ytics
set key outside below
set ylabel "ms (log scale)"
set logscale y
set xtics rotate by -60 font ",7"
set size 1, 0.52
set origin 0, 0.45
set title "ResNet-18, each layer"
plot layers("resnet18") using 2:xtic(1) lc rgb "#d62728" title "measured alone", \
     '' using 3 lc rgb "#1f77b4" title "PALEO"
set size 0.55, 0.45
set origin 0, 0
set title "small CNN, each layer"
set xtics rotate by -45 font ",9"
plot layers("small") using 2:xtic(1) lc rgb "#d62728" title "measured alone", \
     '' using 3 lc rgb "#1f77b4" title "PALEO"
set size 0.45, 0.45
set origin 0.55, 0
set title "whole network"
set xtics norotate font ",10"
plot totals using 2:xtic(1) lc rgb "#ff9896" title "sum of the layers alone", \
     '' using 3 lc rgb "#d62728" title "whole pass, measured once", \
     '' using 4 lc rgb "#1f77b4" title "PALEO (sum of layers)"
unset multiplot
