# bench/plots/cnn.gp - CNN training epoch time (bench/cnn writes cnn.csv): per net and batch,
# hpdl's variants (rows epoch_ms_<net>_b<batch>_<type>_<variant>) beside PyTorch eager f32 and
# AMP (the rows' anchors pytorch_eager_f32 and pytorch_eager_amp). Writes cnn.png.
# csv: cnn
# Run: gnuplot -e "dir='bench/results/<gpu>'" bench/plots/cnn.gp   (scripts/plots.sh does this)
if (!exists("dir")) dir = "."
if (!exists("tagger")) tagger = "scripts/plots.sh --tag"
csv = dir."/cnn.csv"
# the series: hpdl's <type>_<variant> in order of appearance, then the two PyTorch anchors
series = system("awk -F, 'NR > 1 && match($1, /^epoch_ms_[^_]+_b[0-9]+_/) { s = substr($1, RLENGTH + 1); " . \
                "if (!(s in seen)) { seen[s] = 1; printf \"%s \", s } }' '" . csv . "'") . "pytorch_eager_f32 pytorch_eager_amp"
# one row per "net b<batch>": the milliseconds of each series (NaN where missing)
table = "< awk -F, -v series='" . series . "' 'BEGIN { ns = split(series, s, \" \") } " . \
        "NR > 1 && match($1, /^epoch_ms_[^_]+_b[0-9]+_/) { g = substr($1, 10, RLENGTH - 10); sub(/_/, \" \", g); " . \
        "if (!(g in seen)) { seen[g] = 1; order[++n] = g } v[g, substr($1, RLENGTH + 1)] = $2; v[g, $4] = $5 } " . \
        "END { for (i = 1; i <= n; i++) { line = order[i]; for (j = 1; j <= ns; j++) line = line \",\" ((order[i], s[j]) in v ? v[order[i], s[j]] : \"NaN\"); print line } }' '" . csv . "'"
label(s) = strstrt(s, "pytorch_") == 1 ? "PyTorch " . s[9:] : "hpdl " . s
set datafile separator ","
set datafile missing "NaN"
set terminal pngcairo size 1200,600 noenhanced
set output dir."/cnn.png"
set title "CNN training, one epoch per net and batch (lower is better) - ".system(tagger." ".csv)
set ylabel "epoch time (ms, log scale)"
set logscale y
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set grid ytics
set key outside right top
colors = "#1f77b4 #6baed6 #c6dbef #08519c #9ecae1 #d62728 #ff9896"
nh = words(series) - 2
plot for [i=1:words(series)] table using (column(i + 1)):xtic(1) \
     lc rgb (i <= nh ? word(colors, i) : word(colors, 5 + i - nh)) title label(word(series, i))
