/* Tests of the performance models in hpdl.h: layer FLOPs/params, network
   totals against published numbers, PALEO times, roofline, collective costs. */
#include "hpdl.h"
#include "tests/hpdl_test.h"

static hpdl_layer poisoned_layer(void) {
    hpdl_layer l;
    memset(&l, 0x5a, sizeof l);
    return l;
}

static int layer_untouched(const hpdl_layer *l) {
    hpdl_layer p = poisoned_layer();
    return memcmp(l, &p, sizeof p) == 0;
}

static int rand_int(hpdl_rng *r, int lo, int hi) { return lo + (int)hpdl_rng_below(r, (uint64_t)(hi - lo + 1)); }

/* ---- single layers -------------------------------------------------------- */

/* A hand-computed case per feature, then random shapes against the formulas. */
static void test_conv2d_counts(void) {
    hpdl_layer l;
    hpdl_rng r;
    int t;
    /* torchvision AlexNet conv1: 3x224x224, 64 filters 11x11, stride 4, pad 2 */
    HPDL_EXPECT(hpdl_layer_conv2d(&l, "conv1", hpdl_shape_make(3, 224, 224), 64, 11, 4, 2, 1, 1) == HPDL_OK);
    HPDL_EXPECT(l.out.c == 64 && l.out.h == 55 && l.out.w == 55);
    HPDL_EXPECT(l.macs == 70276800.0);          /* 64*55*55 * 3*11*11 */
    HPDL_EXPECT(l.flops == 2 * 70276800.0 + 64 * 55 * 55);
    HPDL_EXPECT(l.params == 23296.0);           /* 64*3*121 + 64 */
    HPDL_EXPECT(l.in_elems == 3 * 224 * 224 && l.out_elems == 64 * 55 * 55);
    HPDL_EXPECT(strcmp(l.name, "conv1") == 0 && l.kind == HPDL_LAYER_CONV2D);
    /* original AlexNet conv2: two groups of 48 -> 128 channels, 5x5, pad 2 */
    HPDL_EXPECT(hpdl_layer_conv2d(&l, "conv2", hpdl_shape_make(96, 27, 27), 256, 5, 1, 2, 2, 1) == HPDL_OK);
    HPDL_EXPECT(l.out.h == 27 && l.macs == 256.0 * 27 * 27 * 48 * 25 && l.params == 307456.0);
    /* depthwise 3x3 stride 2, no bias: 32x15x15 -> 32x7x7 */
    HPDL_EXPECT(hpdl_layer_conv2d(&l, "dw", hpdl_shape_make(32, 15, 15), 32, 3, 2, 0, 32, 0) == HPDL_OK);
    HPDL_EXPECT(l.out.h == 7 && l.out.w == 7 && l.macs == 32.0 * 49 * 9 && l.params == 288.0 &&
                l.flops == 2 * l.macs);
    hpdl_rng_seed(&r, 9);
    for (t = 0; t < 500; t++) {
        int g = rand_int(&r, 1, 4), cin = g * rand_int(&r, 1, 16), cout = g * rand_int(&r, 1, 16);
        int k = rand_int(&r, 1, 7), s = rand_int(&r, 1, 3), p = rand_int(&r, 0, 3), bias = rand_int(&r, 0, 1);
        int h = rand_int(&r, 1, 40), w = rand_int(&r, 1, 40), ho, wo;
        hpdl_status st = hpdl_layer_conv2d(&l, "c", hpdl_shape_make(cin, h, w), cout, k, s, p, g, bias);
        if (k > h + 2 * p || k > w + 2 * p) { HPDL_EXPECT(st == HPDL_ERR_INVALID); continue; }
        ho = (h + 2 * p - k) / s + 1;
        wo = (w + 2 * p - k) / s + 1;
        HPDL_EXPECT(st == HPDL_OK && l.out.c == cout && l.out.h == ho && l.out.w == wo);
        HPDL_EXPECT(l.macs == (double)cout * ho * wo * (cin / g) * k * k);
        HPDL_EXPECT(l.flops == 2.0 * l.macs + (bias ? (double)cout * ho * wo : 0.0));
        HPDL_EXPECT(l.params == (double)cout * (cin / g) * k * k + (bias ? cout : 0));
    }
}

static void test_pool_fc_elementwise_counts(void) {
    hpdl_layer l;
    hpdl_shape branches[3];
    HPDL_EXPECT(hpdl_layer_pool(&l, "p", HPDL_LAYER_MAXPOOL, hpdl_shape_make(64, 55, 55), 3, 2, 0, 0) == HPDL_OK);
    HPDL_EXPECT(l.out.c == 64 && l.out.h == 27 && l.flops == 64.0 * 27 * 27 * 9 && l.params == 0.0);
    /* GoogLeNet pool1: 112 -> 56 with ceil mode, 55 with floor */
    HPDL_EXPECT(hpdl_layer_pool(&l, "p", HPDL_LAYER_MAXPOOL, hpdl_shape_make(64, 112, 112), 3, 2, 0, 1) == HPDL_OK);
    HPDL_EXPECT(l.out.h == 56);
    HPDL_EXPECT(hpdl_layer_pool(&l, "p", HPDL_LAYER_MAXPOOL, hpdl_shape_make(64, 112, 112), 3, 2, 0, 0) == HPDL_OK);
    HPDL_EXPECT(l.out.h == 55);
    /* ceil mode never starts a window in the right padding: 5, k2, s2, p1 -> 3 */
    HPDL_EXPECT(hpdl_layer_pool(&l, "p", HPDL_LAYER_AVGPOOL, hpdl_shape_make(2, 5, 5), 2, 2, 1, 1) == HPDL_OK);
    HPDL_EXPECT(l.out.h == 3 && l.kind == HPDL_LAYER_AVGPOOL);
    HPDL_EXPECT(hpdl_layer_fc(&l, "fc6", hpdl_shape_make(256, 6, 6), 4096, 1) == HPDL_OK);
    HPDL_EXPECT(l.macs == 9216.0 * 4096 && l.params == 37752832.0 && l.out.c == 4096 && l.out.h == 1);
    HPDL_EXPECT(l.flops == 2.0 * 9216 * 4096 + 4096);
    HPDL_EXPECT(hpdl_layer_elementwise(&l, "bn", HPDL_LAYER_BATCHNORM, hpdl_shape_make(64, 7, 5)) == HPDL_OK);
    HPDL_EXPECT(l.params == 128.0 && l.flops == 2.0 * 64 * 35 && l.out_elems == 64 * 35);
    HPDL_EXPECT(hpdl_layer_elementwise(&l, "r", HPDL_LAYER_RELU, hpdl_shape_make(3, 4, 5)) == HPDL_OK);
    HPDL_EXPECT(l.flops == 60.0 && l.params == 0.0);
    HPDL_EXPECT(hpdl_layer_elementwise(&l, "s", HPDL_LAYER_SOFTMAX, hpdl_shape_make(1000, 1, 1)) == HPDL_OK);
    HPDL_EXPECT(l.flops == 3000.0);
    branches[0] = hpdl_shape_make(64, 28, 28);
    branches[1] = hpdl_shape_make(128, 28, 28);
    branches[2] = hpdl_shape_make(32, 28, 28);
    HPDL_EXPECT(hpdl_layer_concat(&l, "cat", 3, branches) == HPDL_OK);
    HPDL_EXPECT(l.out.c == 224 && l.flops == 0.0 && l.in_elems == 224.0 * 784 && l.out_elems == l.in_elems);
    HPDL_EXPECT(hpdl_layer_add(&l, "add", branches[1], branches[1]) == HPDL_OK);
    HPDL_EXPECT(l.flops == 128.0 * 784 && l.in_elems == 2 * 128.0 * 784);
}

/* Every bad descriptor gets HPDL_ERR_INVALID and leaves the layer as it was. */
static void test_bad_descriptors(void) {
    hpdl_layer l = poisoned_layer();
    hpdl_shape in = hpdl_shape_make(6, 10, 10), bad[2];
    HPDL_EXPECT(hpdl_layer_conv2d(&l, "c", hpdl_shape_make(0, 10, 10), 4, 3, 1, 1, 1, 1) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_layer_conv2d(&l, "c", in, 0, 3, 1, 1, 1, 1) == HPDL_ERR_INVALID);       /* no outputs */
    HPDL_EXPECT(hpdl_layer_conv2d(&l, "c", in, 4, 13, 1, 1, 1, 1) == HPDL_ERR_INVALID);      /* 13 > 10+2 */
    HPDL_EXPECT(hpdl_layer_conv2d(&l, "c", in, 4, 3, 0, 1, 1, 1) == HPDL_ERR_INVALID);       /* stride 0 */
    HPDL_EXPECT(hpdl_layer_conv2d(&l, "c", in, 4, 3, 1, -1, 1, 1) == HPDL_ERR_INVALID);      /* pad < 0 */
    HPDL_EXPECT(hpdl_layer_conv2d(&l, "c", in, 4, 3, 1, 1, 4, 1) == HPDL_ERR_INVALID);       /* 4 !| 6 */
    HPDL_EXPECT(hpdl_layer_conv2d(&l, "c", in, 8, 3, 1, 1, 3, 1) == HPDL_ERR_INVALID);       /* 3 !| 8 */
    HPDL_EXPECT(hpdl_layer_conv2d(&l, "c", in, 8, 3, 1, 1, 0, 1) == HPDL_ERR_INVALID);       /* groups 0 */
    HPDL_EXPECT(hpdl_layer_conv2d(&l, "c", in, 8, 0, 1, 0, 1, 1) == HPDL_ERR_INVALID);       /* kernel 0 */
    HPDL_EXPECT(hpdl_layer_pool(&l, "p", HPDL_LAYER_MAXPOOL, in, 11, 1, 0, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_layer_pool(&l, "p", HPDL_LAYER_MAXPOOL, in, 3, 1, 2, 0) == HPDL_ERR_INVALID); /* pad > k/2 */
    HPDL_EXPECT(hpdl_layer_pool(&l, "p", HPDL_LAYER_RELU, in, 3, 1, 0, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_layer_fc(&l, "f", in, 0, 1) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_layer_fc(&l, "f", hpdl_shape_make(5, 0, 1), 3, 1) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_layer_elementwise(&l, "e", HPDL_LAYER_CONV2D, in) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_layer_elementwise(&l, "e", HPDL_LAYER_RELU, hpdl_shape_make(-1, 2, 2)) == HPDL_ERR_INVALID);
    bad[0] = in;
    bad[1] = hpdl_shape_make(6, 10, 9);
    HPDL_EXPECT(hpdl_layer_concat(&l, "cat", 2, bad) == HPDL_ERR_INVALID); /* widths differ */
    HPDL_EXPECT(hpdl_layer_concat(&l, "cat", 0, bad) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_layer_concat(&l, "cat", 2, NULL) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_layer_add(&l, "add", bad[0], bad[1]) == HPDL_ERR_INVALID);
    HPDL_EXPECT(layer_untouched(&l));
    HPDL_EXPECT(hpdl_layer_conv2d(NULL, "c", in, 4, 3, 1, 1, 1, 1) == HPDL_ERR_INVALID);
    /* the edges of validity: groups dividing both counts, kernel == padded input */
    HPDL_EXPECT(hpdl_layer_conv2d(&l, "c", in, 9, 3, 1, 1, 3, 1) == HPDL_OK);
    HPDL_EXPECT(hpdl_layer_conv2d(&l, "c", in, 4, 12, 1, 1, 1, 1) == HPDL_OK && l.out.h == 1);
    HPDL_EXPECT(hpdl_layer_pool(&l, "p", HPDL_LAYER_MAXPOOL, in, 4, 1, 2, 0) == HPDL_OK && l.out.h == 11);
}

/* ---- networks ------------------------------------------------------------- */

static double conv_mac_share(const hpdl_net *net) {
    double conv = 0.0, all = 0.0;
    int i;
    for (i = 0; i < net->count; i++) {
        all += net->layers[i].macs;
        if (net->layers[i].kind == HPDL_LAYER_CONV2D) conv += net->layers[i].macs;
    }
    return conv / all;
}

static hpdl_net_totals built_totals(hpdl_status (*build)(hpdl_net *, hpdl_layer *, int), hpdl_net *net) {
    hpdl_net_totals t;
    memset(&t, 0, sizeof t);
    HPDL_EXPECT(build(net, NULL, 0) == HPDL_OK);
    HPDL_EXPECT(net->owns_layers && net->count > 0);
    HPDL_EXPECT(hpdl_net_summarize(net, &t) == HPDL_OK);
    HPDL_EXPECT(net->layers[net->count - 1].out.c == 1000 && net->layers[net->count - 1].kind == HPDL_LAYER_SOFTMAX);
    return t;
}

/* References:
   - torchvision model cards (pytorch.org/vision/stable/models): parameters
     AlexNet 61,100,840; VGG16 138,357,544; VGG19 143,667,240; ResNet-50
     25,557,032; "GFLOPS" (multiply-adds) 0.71, 15.47, 19.63, 4.09.
   - GoogLeNet: Szegedy et al. 2015, table 1 (1.5 G multiply-adds, column sums
     ~1.59 G; ~6.8M weights in the rounded column); the exact count of the
     paper's network without auxiliary heads is 6,990,272 weights + 8,280
     biases = 6,998,552 (Caffe bvlc_googlenet, and several re-implementations). */
static void test_network_totals_match_published(void) {
    hpdl_net net;
    hpdl_net_totals t;
    t = built_totals(hpdl_net_alexnet, &net);
    HPDL_EXPECT(t.params == 61100840.0);
    HPDL_EXPECT_NEAR(t.macs / 1e9, 0.714, 0.01);
    hpdl_net_free(&net);
    t = built_totals(hpdl_net_vgg16, &net);
    HPDL_EXPECT(t.params == 138357544.0);
    HPDL_EXPECT(fabs(t.macs / 15.47e9 - 1.0) < 0.005);
    HPDL_EXPECT(fabs(t.flops / 30.94e9 - 1.0) < 0.01);
    hpdl_net_free(&net);
    t = built_totals(hpdl_net_vgg19, &net);
    HPDL_EXPECT(t.params == 143667240.0);
    HPDL_EXPECT(fabs(t.macs / 19.63e9 - 1.0) < 0.005);
    HPDL_EXPECT_NEAR(conv_mac_share(&net), 0.994, 0.001); /* issue 9: convolutions ~99.4% */
    HPDL_EXPECT(t.conv_share > 0.99 && t.conv_share < conv_mac_share(&net));
    hpdl_net_free(&net);
    t = built_totals(hpdl_net_resnet50, &net);
    HPDL_EXPECT(t.params == 25557032.0);
    HPDL_EXPECT(fabs(t.macs / 4.09e9 - 1.0) < 0.01);
    hpdl_net_free(&net);
    t = built_totals(hpdl_net_googlenet, &net);
    HPDL_EXPECT(t.params == 6998552.0);
    HPDL_EXPECT(fabs(t.params / 6.8e6 - 1.0) < 0.03); /* the paper's rounded figure */
    HPDL_EXPECT(fabs(t.macs / 1.5e9 - 1.0) < 0.06);   /* "1.5 billion multiply-adds" */
    HPDL_EXPECT(fabs(t.macs / 1.586e9 - 1.0) < 0.01); /* table 1's ops column summed */
    hpdl_net_free(&net);
    HPDL_EXPECT(net.layers == NULL && net.count == 0);
}

/* Caller storage: too small is refused with the array untouched; big enough
   is used and not freed. Names and shapes chain from layer to layer. */
static void test_network_storage_and_chaining(void) {
    hpdl_net net, owned;
    hpdl_layer small[10], *big;
    int i, n;
    for (i = 0; i < 10; i++) small[i] = poisoned_layer();
    memset(&net, 0x5a, sizeof net);
    HPDL_EXPECT(hpdl_net_vgg16(&net, small, 10) == HPDL_ERR_INVALID);
    for (i = 0; i < 10; i++) HPDL_EXPECT(layer_untouched(&small[i]));
    HPDL_EXPECT(hpdl_net_vgg16(NULL, NULL, 0) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_net_vgg16(&net, small, -1) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_net_vgg16(&owned, NULL, 0) == HPDL_OK);
    n = owned.count;
    HPDL_EXPECT(n == 13 * 2 + 5 + 3 + 2 + 1); /* conv+relu, pools, fc, relu, softmax */
    big = (hpdl_layer *)hpdl_alloc((size_t)n, sizeof *big);
    HPDL_EXPECT(big != NULL);
    if (!big) return;
    HPDL_EXPECT(hpdl_net_vgg16(&net, big, n) == HPDL_OK);
    HPDL_EXPECT(net.layers == big && !net.owns_layers && net.count == n && strcmp(net.name, "VGG16") == 0);
    HPDL_EXPECT(memcmp(big, owned.layers, (size_t)n * sizeof *big) == 0);
    HPDL_EXPECT(strcmp(big[0].name, "conv1_1") == 0 && strcmp(big[n - 2].name, "fc8") == 0);
    for (i = 1; i < n; i++) /* a chain: each layer reads what the previous wrote */
        HPDL_EXPECT(big[i].in.c == big[i - 1].out.c && big[i].in.h == big[i - 1].out.h);
    hpdl_net_free(&net); /* does not free caller storage */
    HPDL_EXPECT(net.layers == NULL);
    HPDL_FREE(big);
    hpdl_net_free(&owned);
}

/* The table names every layer and ends with the convolution share. */
static void test_print_table(void) {
    hpdl_net net;
    FILE *f = tmpfile();
    char line[256], last[256] = "";
    int lines = 0, saw_conv = 0;
    HPDL_EXPECT(f != NULL);
    if (!f) return;
    HPDL_EXPECT(hpdl_net_vgg19(&net, NULL, 0) == HPDL_OK);
    HPDL_EXPECT(hpdl_net_print_table(f, &net) == HPDL_OK);
    HPDL_EXPECT(hpdl_net_print_table(NULL, &net) == HPDL_ERR_INVALID);
    rewind(f);
    while (fgets(line, sizeof line, f)) {
        lines++;
        saw_conv |= strstr(line, "conv5_4") != NULL;
        strcpy(last, line);
    }
    HPDL_EXPECT(lines == net.count + 3 && saw_conv);
    HPDL_EXPECT(strstr(last, "convolutions 99.3") != NULL);
    fclose(f);
    hpdl_net_free(&net);
}

/* ---- PALEO ------------------------------------------------------------------- */

static void test_paleo_estimate_by_hand(void) {
    hpdl_paleo_time t, poison;
    hpdl_device_model k80;
    hpdl_layer fc;
    hpdl_net net;
    hpdl_status s;
    double bytes;
    memset(&net, 0, sizeof net);
    /* 2 TFLOP and 1 GB at 8 TFLOP/s, 500 GB/s, PPP 0.5 */
    HPDL_EXPECT(hpdl_paleo_estimate(2e12, 1e9, 8e12, 5e11, 0.5, &t) == HPDL_OK);
    HPDL_EXPECT_NEAR(t.compute_s, 0.5, 1e-15);
    HPDL_EXPECT_NEAR(t.memory_s, 0.004, 1e-15);
    HPDL_EXPECT_NEAR(t.sum_s, 0.504, 1e-15);
    HPDL_EXPECT_NEAR(t.max_s, 0.5, 1e-15);
    /* fc 4096 -> 1000 at batch 128 on a K80 in double precision */
    HPDL_EXPECT(hpdl_paleo_device(HPDL_DEVICE_K80, &k80) == HPDL_OK);
    HPDL_EXPECT(k80.peak_f32 == 8.73e12 && k80.peak_f64 == 2.91e12 && k80.mem_bw == 480e9);
    HPDL_EXPECT(hpdl_layer_fc(&fc, "fc", hpdl_shape_make(4096, 1, 1), 1000, 1) == HPDL_OK);
    HPDL_EXPECT(hpdl_paleo_layer_time(&fc, 128, &k80, HPDL_PREC_F64, 1.0, &t) == HPDL_OK);
    bytes = 8.0 * (128.0 * (4096 + 1000) + 4097000.0);
    HPDL_EXPECT_NEAR(t.compute_s, 128.0 * (2.0 * 4096 * 1000 + 1000) / 2.91e12, 1e-15);
    HPDL_EXPECT_NEAR(t.memory_s, bytes / 480e9, 1e-15);
    /* the network time is the sum of its layers' */
    HPDL_EXPECT(hpdl_net_resnet50(&net, NULL, 0) == HPDL_OK);
    {
        hpdl_paleo_time total, one;
        double sum = 0.0;
        int i;
        memset(&total, 0, sizeof total);
        memset(&one, 0, sizeof one);
        HPDL_EXPECT(hpdl_paleo_net_time(&net, 16, &k80, HPDL_PREC_F32, 0.5, &total) == HPDL_OK);
        for (i = 0; i < net.count; i++) {
            HPDL_EXPECT(hpdl_paleo_layer_time(&net.layers[i], 16, &k80, HPDL_PREC_F32, 0.5, &one) == HPDL_OK);
            sum += one.sum_s;
        }
        HPDL_EXPECT_NEAR(total.sum_s / sum, 1.0, 1e-12);
        HPDL_EXPECT(total.max_s <= total.sum_s && total.max_s >= total.compute_s);
    }
    /* bad arguments: error, output untouched */
    memset(&poison, 0x5a, sizeof poison);
    t = poison;
    HPDL_EXPECT(hpdl_paleo_estimate(1e9, 1e6, 1e12, 1e11, 0.0, &t) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_paleo_estimate(1e9, 1e6, 1e12, 1e11, 1.5, &t) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_paleo_estimate(-1.0, 1e6, 1e12, 1e11, 1.0, &t) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_paleo_estimate(1e9, 1e6, 0.0, 1e11, 1.0, &t) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_paleo_estimate(1e9, 1e6, 1e12, NAN, 1.0, &t) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_paleo_layer_time(&fc, 0, &k80, HPDL_PREC_F32, 1.0, &t) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_paleo_layer_time(&fc, 1, NULL, HPDL_PREC_F32, 1.0, &t) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_paleo_net_time(&net, 1, &k80, HPDL_PREC_F32, -0.5, &t) == HPDL_ERR_INVALID);
    HPDL_EXPECT(memcmp(&t, &poison, sizeof t) == 0);
    s = hpdl_paleo_estimate(1e9, 1e6, 1e12, 1e11, 1.0, NULL);
    HPDL_EXPECT(s == HPDL_ERR_INVALID);
    hpdl_net_free(&net);
}

static void test_devices(void) {
    static const double f32[5] = {8.73e12, 15.7e12, 19.5e12, 67e12, 67e12};
    static const double bw[5] = {480e9, 900e9, 1555e9, 3350e9, 4800e9};
    hpdl_device_model d, poison;
    int i;
    for (i = 0; i < 5; i++) {
        HPDL_EXPECT(hpdl_paleo_device((hpdl_device_id)i, &d) == HPDL_OK);
        HPDL_EXPECT(d.peak_f32 == f32[i] && d.mem_bw == bw[i] && d.peak_f64 < d.peak_f32 && d.name[0]);
    }
    HPDL_EXPECT(hpdl_paleo_device(HPDL_DEVICE_H200, &d) == HPDL_OK && d.peak_f64 == 34e12);
    HPDL_EXPECT(hpdl_paleo_device_custom("mine", 1e12, 5e11, 1e11, &d) == HPDL_OK);
    HPDL_EXPECT(strcmp(d.name, "mine") == 0 && d.peak_f64 == 5e11);
    memset(&poison, 0x5a, sizeof poison);
    d = poison;
    HPDL_EXPECT(hpdl_paleo_device_custom("bad", 0.0, 5e11, 1e11, &d) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_paleo_device_custom("bad", 1e12, 5e11, -1.0, &d) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_paleo_device_custom(NULL, 1e12, 5e11, 1e11, &d) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_paleo_device((hpdl_device_id)99, &d) == HPDL_ERR_INVALID);
    HPDL_EXPECT(memcmp(&d, &poison, sizeof d) == 0);
}

/* PPP from a measurement, and the predicted-vs-measured table. */
static void test_ppp_and_comparison(void) {
    static const char *const phases[2] = {"forward GEMMs", "backward GEMMs"};
    const double pred[2] = {1e-3, 2e-3}, meas[2] = {1.25e-3, 1.6e-3}, bad[2] = {1e-3, 0.0};
    double ppp = -1.0;
    FILE *f = tmpfile();
    char line[256];
    int saw_minus20 = 0, saw_plus25 = 0;
    HPDL_EXPECT(hpdl_paleo_ppp_from_measured(2e12, 0.5, 8e12, &ppp) == HPDL_OK);
    HPDL_EXPECT_NEAR(ppp, 0.5, 1e-15);
    HPDL_EXPECT(hpdl_paleo_ppp_from_measured(2e12, 0.0, 8e12, &ppp) == HPDL_ERR_INVALID && ppp == 0.5);
    HPDL_EXPECT(f != NULL);
    if (!f) return;
    HPDL_EXPECT(hpdl_paleo_print_comparison(f, 2, phases, pred, meas) == HPDL_OK);
    HPDL_EXPECT(hpdl_paleo_print_comparison(f, 2, phases, pred, bad) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_paleo_print_comparison(f, 0, phases, pred, meas) == HPDL_ERR_INVALID);
    rewind(f);
    while (fgets(line, sizeof line, f)) {
        saw_minus20 |= strstr(line, "forward GEMMs") && strstr(line, "-20.0%");
        saw_plus25 |= strstr(line, "backward GEMMs") && strstr(line, "+25.0%");
    }
    HPDL_EXPECT(saw_minus20 && saw_plus25);
    fclose(f);
}

/* ---- roofline and collectives ------------------------------------------------------ */

static void test_roofline(void) {
    double v = -1.0;
    HPDL_EXPECT(hpdl_roofline_attainable(2.0, 10e12, 1e12, &v) == HPDL_OK && v == 2e12); /* memory bound */
    HPDL_EXPECT(hpdl_roofline_attainable(100.0, 10e12, 1e12, &v) == HPDL_OK && v == 10e12); /* compute bound */
    HPDL_EXPECT(hpdl_roofline_ridge(10e12, 1e12, &v) == HPDL_OK && v == 10.0);
    /* 10 / (10/1e12 + (1/1e10 + 1/1e9)/2) = 10 / 5.6e-10 */
    HPDL_EXPECT(hpdl_roofline_combined(10.0, 1e12, 1e10, 1e9, &v) == HPDL_OK);
    HPDL_EXPECT_NEAR(v / (10.0 / 5.6e-10), 1.0, 1e-12);
    v = -1.0;
    HPDL_EXPECT(hpdl_roofline_attainable(0.0, 10e12, 1e12, &v) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_roofline_combined(10.0, 1e12, 0.0, 1e9, &v) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_roofline_ridge(10e12, -1.0, &v) == HPDL_ERR_INVALID && v == -1.0);
    HPDL_EXPECT(hpdl_roofline_ridge(10e12, 1e12, NULL) == HPDL_ERR_INVALID);
}

static void test_allreduce_costs(void) {
    double v = -1.0, ring = 0.0, tree = 0.0;
    hpdl_bw_report rep;
    hpdl_rng r;
    int t;
    /* 100 MB on 4 ranks, 10 us latency, 10 GB/s: 6e-5 + 1.5 * 0.01 */
    HPDL_EXPECT(hpdl_cost_allreduce_ring(1e8, 4, 1e-5, 1e-10, &v) == HPDL_OK);
    HPDL_EXPECT_NEAR(v, 0.01506, 1e-15);
    HPDL_EXPECT(hpdl_cost_allreduce_tree(1e8, 4, 1e-5, 1e-10, &v) == HPDL_OK);
    HPDL_EXPECT_NEAR(v, 4 * 0.01001, 1e-15);
    HPDL_EXPECT(hpdl_cost_allreduce_tree(1e8, 5, 1e-5, 1e-10, &v) == HPDL_OK); /* ceil(log2 5) = 3 */
    HPDL_EXPECT_NEAR(v, 6 * 0.01001, 1e-15);
    HPDL_EXPECT(hpdl_cost_allreduce_one_to_all(1e8, 4, 1e-5, 1e-10, &v) == HPDL_OK);
    HPDL_EXPECT_NEAR(v, 6 * 0.01001, 1e-15);
    HPDL_EXPECT(hpdl_cost_allreduce_ring(1e8, 1, 1e-5, 1e-10, &v) == HPDL_OK && v == 0.0);
    /* without latency the ring moves the least data for every p >= 2 */
    hpdl_rng_seed(&r, 17);
    for (t = 0; t < 200; t++) {
        int p = rand_int(&r, 2, 1024);
        double n = 1.0 + 1e9 * hpdl_rng_uniform(&r), beta = 1e-11 * (1.0 + hpdl_rng_uniform(&r)), o2a = 0.0;
        HPDL_EXPECT(hpdl_cost_allreduce_ring(n, p, 0.0, beta, &ring) == HPDL_OK);
        HPDL_EXPECT(hpdl_cost_allreduce_tree(n, p, 0.0, beta, &tree) == HPDL_OK);
        HPDL_EXPECT(hpdl_cost_allreduce_one_to_all(n, p, 0.0, beta, &o2a) == HPDL_OK);
        HPDL_EXPECT(ring < tree && tree <= o2a && ring < 2.0 * n * beta);
    }
    /* 1 GB in 0.1 s on 8 ranks: algbw 10 GB/s, busbw 17.5 GB/s, 70% of 25 GB/s */
    HPDL_EXPECT(hpdl_cost_allreduce_utilisation(1e9, 8, 0.1, 25e9, &rep) == HPDL_OK);
    HPDL_EXPECT_NEAR(rep.algbw, 1e10, 1e-15);
    HPDL_EXPECT_NEAR(rep.busbw, 1.75e10, 1e-15);
    HPDL_EXPECT_NEAR(rep.utilisation, 0.7, 1e-15);
    v = -1.0;
    HPDL_EXPECT(hpdl_cost_allreduce_ring(1e8, 0, 1e-5, 1e-10, &v) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cost_allreduce_ring(-1.0, 4, 1e-5, 1e-10, &v) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cost_allreduce_tree(1e8, 4, -1e-5, 1e-10, &v) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cost_allreduce_one_to_all(1e8, 4, 1e-5, NAN, &v) == HPDL_ERR_INVALID);
    HPDL_EXPECT(v == -1.0);
    HPDL_EXPECT(hpdl_cost_allreduce_ring(1e8, 4, 1e-5, 1e-10, NULL) == HPDL_ERR_INVALID);
    HPDL_EXPECT(hpdl_cost_allreduce_utilisation(1e9, 8, 0.0, 25e9, &rep) == HPDL_ERR_INVALID);
    HPDL_EXPECT(rep.algbw == 1e10);
}

int main(int argc, char **argv) {
    static const hpdl_test tests[] = {
        HPDL_TEST(test_conv2d_counts),
        HPDL_TEST(test_pool_fc_elementwise_counts),
        HPDL_TEST(test_bad_descriptors),
        HPDL_TEST(test_network_totals_match_published),
        HPDL_TEST(test_network_storage_and_chaining),
        HPDL_TEST(test_print_table),
        HPDL_TEST(test_paleo_estimate_by_hand),
        HPDL_TEST(test_devices),
        HPDL_TEST(test_ppp_and_comparison),
        HPDL_TEST(test_roofline),
        HPDL_TEST(test_allreduce_costs),
    };
    return hpdl_test_main(argc, argv, tests, HPDL_COUNT(tests));
}
