/* paleo - predict before you measure.

   Prints VGG19's per-layer FLOPs with each layer's share and the share of
   the convolutions, then PALEO-style inference-time estimates for VGG16,
   GoogLeNet and ResNet-50 on a K80 (single and double precision, batch 1
   and 128) and, for comparison, on the other datasheet devices.

       make build/examples/paleo && build/examples/paleo [PPP]
       flags: --ppp X (the same as a bare PPP), --output DIR, --help, --version

   PPP ("platform percent of peak", default 1.0) scales both the peak FLOP
   rate and the memory bandwidth. A measured PPP comes from a kernel's
   achieved rate: hpdl_paleo_ppp_from_measured(flops, seconds, peak, &ppp)
   (the GEMM bench's TFLOP/s on the GPU at hand). Predicted vs measured
   phase times print with hpdl_paleo_print_comparison; the GPU part of this
   example feeds both from its own measurements.

   CSVs (into --output DIR, else $HPDL_RESULTS, else the current folder): paleo_vgg19.csv, one
   row per VGG19 layer (MACs, FLOPs, parameters, share of the FLOPs) and two
   summary rows (the convolutions, the whole network); paleo_estimates.csv,
   every estimate printed below. */
#include "hpdl.h"

typedef hpdl_status (*net_builder)(hpdl_net *, hpdl_layer *, int);

/* PPP from the command line (--ppp X or a bare X), and --output. */
static double parse_ppp(int argc, char **argv) {
    double ppp = 1.0;
    const char *output = NULL;
    hpdl_cli_option opts[2];
    opts[0] = hpdl_cli_positional(hpdl_cli_f64("ppp", 0, &ppp, DBL_MIN, 1.0, "platform percent of peak, in (0, 1]"));
    opts[1] = hpdl_cli_string("output", 0, &output, "DIR", "folder for the CSVs ($HPDL_RESULTS, else .)");
    hpdl_cli_parse(argc, argv, "paleo", "PALEO FLOPs and inference-time estimates of VGG, GoogLeNet, ResNet-50.",
                   opts, 2);
    hpdl_csv_set_dir(output);
    return ppp;
}

/* The per-layer table as a CSV, with the convolutions' and the network's totals. */
static void write_layers_csv(const hpdl_net *net) {
    FILE *f = hpdl_csv_open_with_header(".", "paleo_vgg19", "layer,kind,macs,flops,params,flops_share");
    hpdl_net_totals t;
    int i;
    if (!f) return;
    HPDL_CHECK(hpdl_net_summarize(net, &t));
    for (i = 0; i < net->count; i++) {
        const hpdl_layer *l = &net->layers[i];
        fprintf(f, "%s,%s,%.0f,%.0f,%.0f,%.6f\n", l->name, hpdl_layer_kind_name(l->kind), l->macs, l->flops,
                l->params, l->flops / t.flops);
    }
    fprintf(f, "convolutions,conv,,%.0f,,%.6f\n", t.conv_flops, t.conv_share);
    fprintf(f, "total,all,%.0f,%.0f,%.0f,1\n", t.macs, t.flops, t.params);
    fclose(f);
}

/* One row: a network on a device at one precision and batch size (also to csv). */
static void print_estimate(const hpdl_net *net, const hpdl_device_model *dev, hpdl_precision prec,
                           int batch, double ppp, FILE *csv) {
    hpdl_paleo_time t;
    HPDL_CHECK(hpdl_paleo_net_time(net, batch, dev, prec, ppp, &t));
    if (csv)
        fprintf(csv, "%s,%s,%s,%d,%.2f,%.6g,%.6g,%.6g,%.6g,%.6g\n", net->name, dev->name,
                prec == HPDL_PREC_F64 ? "f64" : "f32", batch, ppp, 1e3 * t.compute_s, 1e3 * t.memory_s,
                1e3 * t.sum_s, 1e3 * t.max_s, batch / t.sum_s);
    printf("%-10s %-15s %-4s %6d %12.3f %12.3f %12.3f %12.3f %10.1f\n", net->name, dev->name,
           prec == HPDL_PREC_F64 ? "f64" : "f32", batch, 1e3 * t.compute_s, 1e3 * t.memory_s,
           1e3 * t.sum_s, 1e3 * t.max_s, batch / t.sum_s);
}

static void print_estimate_header(void) {
    printf("%-10s %-15s %-4s %6s %12s %12s %12s %12s %10s\n", "network", "device", "prec", "batch",
           "compute ms", "memory ms", "sum ms", "max ms", "img/s(sum)");
}

int main(int argc, char **argv) {
    static const net_builder builders[3] = {hpdl_net_vgg16, hpdl_net_googlenet, hpdl_net_resnet50};
    static const int batches[2] = {1, 128};
    double ppp = parse_ppp(argc, argv);
    hpdl_net vgg19, nets[3];
    hpdl_device_model k80, dev;
    FILE *csv;
    int n, p, b, d;

    HPDL_CHECK(hpdl_net_vgg19(&vgg19, NULL, 0));
    HPDL_CHECK(hpdl_net_print_table(stdout, &vgg19));
    write_layers_csv(&vgg19);
    hpdl_net_free(&vgg19);
    csv = hpdl_csv_open_with_header(".", "paleo_estimates",
                                    "network,device,precision,batch,ppp,compute_ms,memory_ms,sum_ms,max_ms,images_per_s");

    for (n = 0; n < 3; n++) HPDL_CHECK(builders[n](&nets[n], NULL, 0));
    HPDL_CHECK(hpdl_paleo_device(HPDL_DEVICE_K80, &k80));
    printf("\nInference (forward) time estimates, PALEO style, PPP = %.2f\n"
           "compute = FLOPs/(peak*PPP), memory = bytes/(bandwidth*PPP), per layer, summed;\n"
           "sum = no overlap (PALEO), max = compute and memory overlapped within each layer.\n"
           "K80: %.2f TFLOP/s f32, %.2f TFLOP/s f64, %.0f GB/s\n\n",
           ppp, k80.peak_f32 * 1e-12, k80.peak_f64 * 1e-12, k80.mem_bw * 1e-9);
    print_estimate_header();
    for (n = 0; n < 3; n++)
        for (p = 0; p < 2; p++)
            for (b = 0; b < 2; b++) print_estimate(&nets[n], &k80, (hpdl_precision)p, batches[b], ppp, csv);

    printf("\nThe same networks at batch 128, f32, on the datasheet devices\n\n");
    print_estimate_header();
    for (n = 0; n < 3; n++)
        for (d = HPDL_DEVICE_K80; d <= HPDL_DEVICE_H200; d++) {
            HPDL_CHECK(hpdl_paleo_device((hpdl_device_id)d, &dev));
            print_estimate(&nets[n], &dev, HPDL_PREC_F32, 128, ppp, csv);
        }
    if (csv) fclose(csv);
    for (n = 0; n < 3; n++) hpdl_net_free(&nets[n]);
    return 0;
}
