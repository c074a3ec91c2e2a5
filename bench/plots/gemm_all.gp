# bench/plots/gemm_all.gp - roofline chart (roofline.png) with the measured points of the
# GEMM bench (gemm_all.csv) and the MLP bench (mlp_detail.csv, when present).
# Run: gnuplot -e "dir='bench/results/<gpu>'" bench/plots/gemm_all.gp   (scripts/plots.sh does this:
# it runs bench/plots/<name>.gp for folders with <name>.csv, hence the name gemm_all.gp).
#
# Roof (f32, SIMT, datasheet): attainable = min(peak, AI * bandwidth), hpdl_roofline_attainable in hpdl.h.
# H100 SXM: 67 TFLOP/s, 3.35 TB/s; a folder named h200* gets the H200 SXM's 4.8 TB/s (same 67 TFLOP/s).
#
# GEMM points: every f32 rung at 4096^3 with status ok; f32 rungs at the other sizes in gray.
#   AI = 2mnk / (4 (mk + kn + mn)) FLOP/byte: A and B read once, C written once (fewest bytes,
#   so the AI is an upper bound on what the kernel really streams); y = the row's TFLOP/s.
# MLP points (labelled H<hidden> B<batch>; H=512 on the right): 784-H-10 f32 epochs (60000 samples) from mlp_detail.csv (columns
#   gpu,hidden,batch,f32_graph_ms,f32_warptile_ms,...). Per training step of batch B the five GEMMs
#   (forward X.W1, A1.W2; backward A1^T.D2, D2.W2^T, X^T.D1) do 2*1598*B*H FLOPs and move, in the
#   same fewest-bytes model, 4*(5BH + 1598B + 1598H) bytes (1598 = 784+10+10+10+784), so
#   AI = 2*1598*B*H / (4*(5BH + 1598(B+H))); y = GEMM FLOPs of the epoch / whole epoch time, i.e.
#   the elementwise kernels, loss, update and gather count as time but not as FLOPs.
# csv: gemm_all
if (!exists("dir")) dir = "."
if (!exists("tagger")) tagger = "scripts/plots.sh --tag"
tag(f) = system(tagger." ".f)
set datafile separator ","
set datafile missing "NaN"
set terminal pngcairo size 1100,780 noenhanced
set output dir."/roofline.png"

is_h200 = strstrt(dir, "h200") > 0
peak = 67.0                        # TFLOP/s, f32 non-tensor
bw = is_h200 ? 4.8 : 3.35          # TB/s, so AI * bw is in TFLOP/s
gpu = is_h200 ? "H200 SXM datasheet" : "H100 SXM datasheet"
ridge = peak / bw
roof(x) = x * bw < peak ? x * bw : peak

gemm_ai(m, n, k) = 2.0 * m * n * k / (4.0 * (m * k + k * n + m * n))
mlp_flops(b, h) = 2.0 * 1598 * b * h
mlp_bytes(b, h) = 4.0 * (5.0 * b * h + 1598.0 * (b + h))
mlp_ai(b, h) = mlp_flops(b, h) / mlp_bytes(b, h)
mlp_tflops(b, h, ms) = 60000.0 / b * mlp_flops(b, h) / (ms * 1e-3) * 1e-12  # FLOPs per sample x 60000

set title sprintf("Roofline, f32: %s (%.0f TFLOP/s, %.2f TB/s, ridge %.0f FLOP/B) - %s", gpu, peak, bw, ridge, tag(dir."/gemm_all.csv"))
set xlabel "arithmetic intensity (FLOP/byte, fewest-bytes model)"
set ylabel "TFLOP/s"
set logscale xy
set xrange [1:5000]
set yrange [0.1:150]
set grid xtics ytics mxtics mytics lc rgb "#dddddd"
set key outside below
set samples 1000
set label 1 sprintf("ridge %.0f", ridge) at ridge, peak * 1.25 center

gemm = dir."/gemm_all.csv"
mlp = dir."/mlp_detail.csv"
f32_4096(c) = strcol(7) eq "f32" && $8 == 4096 && strcol(15) eq "ok" && $2 > 0 ? c : 1/0
f32_other(c) = strcol(7) eq "f32" && $8 != 4096 && strcol(15) eq "ok" && $2 > 0 ? c : 1/0
# rungs whose TFLOP/s nearly tie with another's get their label moved down a little
label_drop(r) = r eq "reg1d" || r eq "smem" ? 0.88 : 1.0
have_mlp = system("test -f ".mlp." && echo 1") eq "1"

plot roof(x) with lines lw 3 lc rgb "black" title "roof min(peak, AI x bandwidth)", \
     gemm using (f32_other(gemm_ai($8, $9, $10))):2 with points pt 7 ps 0.8 lc rgb "#aaaaaa" \
          title "GEMM f32 rungs, other sizes", \
     gemm using (f32_4096(gemm_ai($8, $9, $10))):2 with points pt 7 ps 1.5 lc rgb "#1f77b4" \
          title "GEMM f32 rungs at 4096^3", \
     gemm using (f32_4096(gemm_ai($8, $9, $10))):($2 * label_drop(strcol(11))):(strcol(11)) \
          with labels left offset 1.2,0 font ",9" notitle

# The MLP points go on in a second pass only when mlp_detail.csv exists (re-opening the
# output replaces the first image).
if (have_mlp) {
    set output dir."/roofline.png"
    replot \
         mlp using (mlp_ai($3, $2)):(mlp_tflops($3, $2, $4)) with points pt 5 ps 1.3 \
              lc rgb "#d62728" title "MLP epoch, f32 graph (cuBLAS)", \
         mlp using (mlp_ai($3, $2)):(mlp_tflops($3, $2, $5)) with points pt 9 ps 1.5 \
              lc rgb "#2ca02c" title "MLP epoch, f32 warptile", \
         mlp using (mlp_ai($3, $2)):($2 == 512 ? mlp_tflops($3, $2, $4) : 1/0): \
              (sprintf("H%d B%d", $2, $3)) with labels left offset 1,0 font ",8" notitle, \
         mlp using (mlp_ai($3, $2)):($2 != 512 ? mlp_tflops($3, $2, $4) : 1/0): \
              (sprintf("H%d B%d", $2, $3)) with labels right offset -1,0 font ",8" notitle
}
