# bench/plots/matpow.gp - A^n + B^n on 1 and all GPUs (bench/matpow writes matpow.csv):
# time per mode (f32, tf32, f16) for hpdl's squaring and naive products and PyTorch,
# each on 1 GPU and on all GPUs, read from the rows' metric/value and anchor/anchor_value
# pairs (names <variant>_<mode>_<g>gpu_time). Writes matpow.png.
# csv: matpow
# Run: gnuplot -e "dir='bench/results/<gpu>'" bench/plots/matpow.gp   (scripts/plots.sh does this)
if (!exists("dir")) dir = "."
if (!exists("tagger")) tagger = "scripts/plots.sh --tag"
csv = dir."/matpow.csv"
# one row per mode: mode, then the seconds of each series below (NaN where the CSV has none)
series = "squaring_1 squaring_2 naive_1 naive_2 pytorch_1 pytorch_2"
names = "'hpdl squaring, 1 GPU' 'hpdl squaring, all GPUs' 'hpdl naive, 1 GPU' 'hpdl naive, all GPUs' 'PyTorch, 1 GPU' 'PyTorch, all GPUs'"
table = "< awk -F, 'NR > 1 { t[$1] = $2; if ($4 != \"\") t[$4] = $5 } END { n = split(\"f32 tf32 f16\", m, \" \"); " . \
        "split(\"squaring_1 squaring_2 naive_1 naive_2 pytorch_1 pytorch_2\", s, \" \"); " . \
        "for (i = 1; i <= n; i++) { line = m[i]; for (j = 1; j <= 6; j++) { split(s[j], p, \"_\"); " . \
        "k = p[1] \"_\" m[i] \"_\" p[2] \"gpu_time\"; line = line \",\" (k in t ? t[k] : \"NaN\") } print line } }' '" . csv . "'"
set datafile separator ","
set datafile missing "NaN"
set terminal pngcairo size 1100,600 noenhanced
set output dir."/matpow.png"
set title "Matrix power sum A^n + B^n (bench/matpow): time per mode, 1 GPU and all GPUs (lower is better) - ".system(tagger." ".csv)
set ylabel "seconds (log scale)"
set logscale y
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set key outside right top
set grid ytics
colors = "#1f77b4 #aec7e8 #d62728 #ff9896 #2ca02c #98df8a"
plot for [i=2:7] table using i:xtic(1) lc rgb word(colors, i - 1) title word(names, i - 1)
