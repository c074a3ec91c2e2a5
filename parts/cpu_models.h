/* Performance models, placement, quantization (spliced into hpdl.h). */
#include <limits.h>
/* ------------------------------------------------------------------------ */
/* Performance models: layer FLOPs, networks, PALEO, roofline, collectives   */
/* ------------------------------------------------------------------------ */

/* Counting rules (per sample, forward pass, inference):
   - a multiply-add is 2 FLOPs; `macs` counts multiply-adds of convolutions
     and fully connected layers only, the number papers and torchvision quote
     as "GMACs" (often loosely called GFLOPs);
   - conv2d: macs = C_out*H_out*W_out * (C_in/groups)*k*k; flops = 2*macs, plus
     one add per output element when the layer has a bias;
   - fully connected: macs = in*out; flops = 2*macs (+ out with a bias);
   - max/avg pooling: k*k operations per output element (comparisons or adds);
   - ReLU 1, batch-norm 2 (inference: y = a*x + b), softmax 3 (exp, sum,
     divide), add 1 FLOP per output element; concat 0 (it only moves data);
   - params: learned parameters (conv and fc weights and biases, batch-norm
     gamma and beta; running statistics are buffers, not parameters);
   - in_elems / out_elems: activations read / written (all inputs summed for
     concat and add); bytes = elements * element size.
   Dropout and LRN are left out: no FLOPs at inference worth counting, no
   parameters. Shapes are per sample, channels x height x width. */

typedef enum hpdl_layer_kind {
    HPDL_LAYER_CONV2D,
    HPDL_LAYER_MAXPOOL,
    HPDL_LAYER_AVGPOOL,
    HPDL_LAYER_FC,
    HPDL_LAYER_RELU,
    HPDL_LAYER_SOFTMAX,
    HPDL_LAYER_BATCHNORM,
    HPDL_LAYER_CONCAT,
    HPDL_LAYER_ADD
} hpdl_layer_kind;

typedef struct hpdl_shape { int c, h, w; } hpdl_shape;

typedef struct hpdl_layer {
    char name[40];
    hpdl_layer_kind kind;
    hpdl_shape in, out;              /* in: the first input */
    int kernel, stride, pad, groups; /* conv and pooling (square kernels); else 0 */
    double macs, flops, params;      /* per sample, see the counting rules above */
    double in_elems, out_elems;      /* activations read and written per sample */
} hpdl_layer;

HPDL_API const char *hpdl_layer_kind_name(hpdl_layer_kind kind) {
    switch (kind) {
    case HPDL_LAYER_CONV2D: return "conv";
    case HPDL_LAYER_MAXPOOL: return "maxpool";
    case HPDL_LAYER_AVGPOOL: return "avgpool";
    case HPDL_LAYER_FC: return "fc";
    case HPDL_LAYER_RELU: return "relu";
    case HPDL_LAYER_SOFTMAX: return "softmax";
    case HPDL_LAYER_BATCHNORM: return "batchnorm";
    case HPDL_LAYER_CONCAT: return "concat";
    case HPDL_LAYER_ADD: return "add";
    }
    return "?";
}

HPDL_API hpdl_shape hpdl_shape_make(int c, int h, int w) {
    hpdl_shape s;
    s.c = c; s.h = h; s.w = w;
    return s;
}

static inline double hpdl__shape_elems(hpdl_shape s) { return (double)s.c * s.h * s.w; }

static inline int hpdl__shape_valid(hpdl_shape s) { return s.c > 0 && s.h > 0 && s.w > 0; }

/* Appends src to the name in dst (length `at`, capacity size), truncating;
   returns the new length. (Not snprintf: gcc's -Wformat-truncation would
   object to every fixed-size name buffer.) */
static inline size_t hpdl__name_append(char *dst, size_t size, size_t at, const char *src) {
    while (src && *src && at + 1 < size) dst[at++] = *src++;
    dst[at] = '\0';
    return at;
}

/* dst = a "." b, or b alone when a is empty. */
static inline void hpdl__name_join(char *dst, size_t size, const char *a, const char *b) {
    size_t at = hpdl__name_append(dst, size, 0, a);
    if (at > 0) at = hpdl__name_append(dst, size, at, ".");
    hpdl__name_append(dst, size, at, b);
}

/* Every descriptor starts from this: name copied (truncated), counts zero. */
static inline void hpdl__layer_start(hpdl_layer *l, const char *name, hpdl_layer_kind kind,
                                     hpdl_shape in, hpdl_shape out) {
    memset(l, 0, sizeof *l);
    hpdl__name_append(l->name, sizeof l->name, 0, name);
    l->kind = kind;
    l->in = in;
    l->out = out;
    l->in_elems = hpdl__shape_elems(in);
    l->out_elems = hpdl__shape_elems(out);
}

/* Output size of a sliding window: floor((n + 2p - k) / s) + 1, or with
   ceil_mode the PyTorch/Caffe rule (round up, but the last window must start
   inside the input or its left padding). 0 when the window does not fit. */
static inline int hpdl__window_out(int n, int k, int s, int p, int ceil_mode) {
    int span = n + 2 * p - k, out;
    if (span < 0) return 0;
    out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
    if (ceil_mode && (out - 1) * s >= n + p) out--;
    return out;
}

/* The window fits the padded input; no overflow in n + 2p. */
static inline int hpdl__window_valid(hpdl_shape in, int k, int s, int p) {
    return hpdl__shape_valid(in) && k > 0 && s > 0 && p >= 0 && p <= (INT_MAX - in.h) / 2 &&
           p <= (INT_MAX - in.w) / 2 && k <= in.h + 2 * p && k <= in.w + 2 * p;
}

/* 2-D convolution, square k x k kernel, same stride and padding on both axes,
   groups dividing both channel counts (groups == in.c: depthwise). */
HPDL_API hpdl_status hpdl_layer_conv2d(hpdl_layer *l, const char *name, hpdl_shape in, int out_c,
                                       int k, int stride, int pad, int groups, int bias) {
    hpdl_shape out;
    double taps;
    if (!l || !hpdl__window_valid(in, k, stride, pad) || out_c <= 0 || groups <= 0 ||
        in.c % groups || out_c % groups)
        return HPDL_ERR_INVALID;
    out = hpdl_shape_make(out_c, hpdl__window_out(in.h, k, stride, pad, 0),
                          hpdl__window_out(in.w, k, stride, pad, 0));
    hpdl__layer_start(l, name, HPDL_LAYER_CONV2D, in, out);
    l->kernel = k; l->stride = stride; l->pad = pad; l->groups = groups;
    taps = (double)(in.c / groups) * k * k;
    l->macs = l->out_elems * taps;
    l->flops = 2.0 * l->macs + (bias ? l->out_elems : 0.0);
    l->params = (double)out_c * taps + (bias ? out_c : 0);
    return HPDL_OK;
}

/* Max or average pooling; ceil_mode rounds the output size up (Caffe,
   torchvision's GoogLeNet). Padding is at most half the window (PyTorch's
   rule: every window must see some of the input). */
HPDL_API hpdl_status hpdl_layer_pool(hpdl_layer *l, const char *name, hpdl_layer_kind kind,
                                     hpdl_shape in, int k, int stride, int pad, int ceil_mode) {
    hpdl_shape out;
    if (!l || (kind != HPDL_LAYER_MAXPOOL && kind != HPDL_LAYER_AVGPOOL) ||
        !hpdl__window_valid(in, k, stride, pad) || 2 * pad > k)
        return HPDL_ERR_INVALID;
    out = hpdl_shape_make(in.c, hpdl__window_out(in.h, k, stride, pad, ceil_mode),
                          hpdl__window_out(in.w, k, stride, pad, ceil_mode));
    hpdl__layer_start(l, name, kind, in, out);
    l->kernel = k; l->stride = stride; l->pad = pad;
    l->flops = l->out_elems * k * k;
    return HPDL_OK;
}

/* Fully connected: the input is flattened to in.c*in.h*in.w features; the
   output has shape out_features x 1 x 1. */
HPDL_API hpdl_status hpdl_layer_fc(hpdl_layer *l, const char *name, hpdl_shape in,
                                   int out_features, int bias) {
    if (!l || !hpdl__shape_valid(in) || out_features <= 0) return HPDL_ERR_INVALID;
    hpdl__layer_start(l, name, HPDL_LAYER_FC, in, hpdl_shape_make(out_features, 1, 1));
    l->macs = l->in_elems * out_features;
    l->flops = 2.0 * l->macs + (bias ? out_features : 0);
    l->params = l->macs + (bias ? out_features : 0);
    return HPDL_OK;
}

/* Element-wise layers: ReLU, softmax (over channels), batch-norm. */
HPDL_API hpdl_status hpdl_layer_elementwise(hpdl_layer *l, const char *name, hpdl_layer_kind kind,
                                            hpdl_shape in) {
    double flops_per_elem;
    switch (kind) {
    case HPDL_LAYER_RELU: flops_per_elem = 1.0; break;
    case HPDL_LAYER_SOFTMAX: flops_per_elem = 3.0; break;
    case HPDL_LAYER_BATCHNORM: flops_per_elem = 2.0; break;
    default: return HPDL_ERR_INVALID;
    }
    if (!l || !hpdl__shape_valid(in)) return HPDL_ERR_INVALID;
    hpdl__layer_start(l, name, kind, in, in);
    l->flops = l->out_elems * flops_per_elem;
    if (kind == HPDL_LAYER_BATCHNORM) l->params = 2.0 * in.c;
    return HPDL_OK;
}

/* Concatenation along channels of n >= 1 inputs of equal height and width. */
HPDL_API hpdl_status hpdl_layer_concat(hpdl_layer *l, const char *name, int n, const hpdl_shape *in) {
    hpdl_shape out;
    int i;
    if (!l || !in || n < 1) return HPDL_ERR_INVALID;
    out = hpdl_shape_make(0, in[0].h, in[0].w);
    for (i = 0; i < n; i++) {
        if (!hpdl__shape_valid(in[i]) || in[i].h != out.h || in[i].w != out.w || in[i].c > INT_MAX - out.c)
            return HPDL_ERR_INVALID;
        out.c += in[i].c;
    }
    hpdl__layer_start(l, name, HPDL_LAYER_CONCAT, in[0], out);
    l->in_elems = l->out_elems;
    return HPDL_OK;
}

/* Element-wise sum of two tensors of the same shape (residual connection). */
HPDL_API hpdl_status hpdl_layer_add(hpdl_layer *l, const char *name, hpdl_shape a, hpdl_shape b) {
    if (!l || !hpdl__shape_valid(a) || a.c != b.c || a.h != b.h || a.w != b.w) return HPDL_ERR_INVALID;
    hpdl__layer_start(l, name, HPDL_LAYER_ADD, a, a);
    l->in_elems = 2.0 * l->out_elems;
    l->flops = l->out_elems;
    return HPDL_OK;
}

/* ---- networks ----------------------------------------------------------- */

/* A network: its layers in execution order. The builders below either fill a
   caller's array (storage, capacity) or allocate one (storage NULL);
   hpdl_net_free releases only what a builder allocated. A user-defined
   network is just a hpdl_net pointing at the caller's own layer array. */
typedef struct hpdl_net {
    char name[32];
    hpdl_layer *layers;
    int count;
    int owns_layers;
} hpdl_net;

HPDL_API void hpdl_net_free(hpdl_net *net) {
    if (!net) return;
    if (net->owns_layers) HPDL_FREE(net->layers);
    net->layers = NULL;
    net->count = 0;
    net->owns_layers = 0;
}

/* Builder state: appends layers while tracking the current activation shape.
   With capacity 0 it only counts, so a network can be sized before it is
   stored. The first error sticks and turns every later step into a no-op. */
typedef struct hpdl__netb {
    hpdl_layer *layers;
    int count, capacity;
    hpdl_status status;
    hpdl_shape cur;
    char prefix[32]; /* prepended to layer names ("inception3a", "layer2.0") */
} hpdl__netb;

static inline void hpdl__netb_push(hpdl__netb *b, hpdl_status s, const hpdl_layer *l) {
    if (b->status != HPDL_OK) return;
    b->status = s;
    if (s != HPDL_OK) return;
    if (b->count < b->capacity) b->layers[b->count] = *l;
    b->count++;
    b->cur = l->out;
}

static inline const char *hpdl__netb_name(hpdl__netb *b, const char *name, char *buf, size_t size) {
    hpdl__name_join(buf, size, b->prefix, name);
    return buf;
}

static inline void hpdl__netb_conv(hpdl__netb *b, const char *name, int out_c, int k, int stride,
                                   int pad, int bias) {
    hpdl_layer l;
    char buf[64];
    hpdl_status s = hpdl_layer_conv2d(&l, hpdl__netb_name(b, name, buf, sizeof buf), b->cur, out_c,
                                      k, stride, pad, 1, bias);
    hpdl__netb_push(b, s, &l);
}

static inline void hpdl__netb_pool(hpdl__netb *b, const char *name, hpdl_layer_kind kind, int k,
                                   int stride, int pad, int ceil_mode) {
    hpdl_layer l;
    char buf[64];
    hpdl_status s = hpdl_layer_pool(&l, hpdl__netb_name(b, name, buf, sizeof buf), kind, b->cur, k,
                                    stride, pad, ceil_mode);
    hpdl__netb_push(b, s, &l);
}

static inline void hpdl__netb_fc(hpdl__netb *b, const char *name, int out_features) {
    hpdl_layer l;
    char buf[64];
    hpdl_status s = hpdl_layer_fc(&l, hpdl__netb_name(b, name, buf, sizeof buf), b->cur, out_features, 1);
    hpdl__netb_push(b, s, &l);
}

static inline void hpdl__netb_elementwise(hpdl__netb *b, const char *name, hpdl_layer_kind kind) {
    hpdl_layer l;
    char buf[64];
    hpdl_status s = hpdl_layer_elementwise(&l, hpdl__netb_name(b, name, buf, sizeof buf), kind, b->cur);
    hpdl__netb_push(b, s, &l);
}

/* conv + ReLU, the unit of AlexNet, VGG and GoogLeNet (all with biases). */
static inline void hpdl__netb_conv_relu(hpdl__netb *b, const char *name, int out_c, int k,
                                        int stride, int pad) {
    char relu[48];
    hpdl__netb_conv(b, name, out_c, k, stride, pad, 1);
    hpdl__name_join(relu, sizeof relu, name, "relu");
    hpdl__netb_elementwise(b, relu, HPDL_LAYER_RELU);
}

/* fc (+ ReLU unless last) + softmax after the last: the classifier heads. */
static inline void hpdl__netb_classifier(hpdl__netb *b, int n, const int *widths) {
    int i;
    for (i = 0; i < n; i++) {
        char name[16];
        if (n > 1) snprintf(name, sizeof name, "fc%d", i + 6); /* AlexNet/VGG: fc6..fc8 */
        else snprintf(name, sizeof name, "fc");
        hpdl__netb_fc(b, name, widths[i]);
        if (i + 1 < n) {
            char relu[24];
            hpdl__name_join(relu, sizeof relu, name, "relu");
            hpdl__netb_elementwise(b, relu, HPDL_LAYER_RELU);
        }
    }
    hpdl__netb_elementwise(b, "softmax", HPDL_LAYER_SOFTMAX);
}

static const int hpdl__imagenet_head[3] = {4096, 4096, 1000};

/* torchvision's AlexNet (the one-tower variant of "One weird trick", 61.1M
   parameters): chosen over the original two-tower net (groups of 2, 227x227
   input, 60.97M) because its totals are published exactly and it runs at
   224x224 like the others. Its adaptive 6x6 average pool is an identity at
   224 and is left out. */
static inline void hpdl__build_alexnet(hpdl__netb *b) {
    hpdl__netb_conv_relu(b, "conv1", 64, 11, 4, 2);
    hpdl__netb_pool(b, "pool1", HPDL_LAYER_MAXPOOL, 3, 2, 0, 0);
    hpdl__netb_conv_relu(b, "conv2", 192, 5, 1, 2);
    hpdl__netb_pool(b, "pool2", HPDL_LAYER_MAXPOOL, 3, 2, 0, 0);
    hpdl__netb_conv_relu(b, "conv3", 384, 3, 1, 1);
    hpdl__netb_conv_relu(b, "conv4", 256, 3, 1, 1);
    hpdl__netb_conv_relu(b, "conv5", 256, 3, 1, 1);
    hpdl__netb_pool(b, "pool5", HPDL_LAYER_MAXPOOL, 3, 2, 0, 0);
    hpdl__netb_classifier(b, 3, hpdl__imagenet_head);
}

/* VGG (Simonyan & Zisserman, configurations D and E): five stages of 3x3
   convolutions (2, 2, then deep_stages layers each), each followed by a
   2x2 max pool. */
static inline void hpdl__build_vgg(hpdl__netb *b, int deep_stages) {
    static const int widths[5] = {64, 128, 256, 512, 512};
    int stage, i;
    for (stage = 0; stage < 5; stage++) {
        int convs = stage < 2 ? 2 : deep_stages;
        char name[32];
        for (i = 0; i < convs; i++) {
            snprintf(name, sizeof name, "conv%d_%d", stage + 1, i + 1);
            hpdl__netb_conv_relu(b, name, widths[stage], 3, 1, 1);
        }
        snprintf(name, sizeof name, "pool%d", stage + 1);
        hpdl__netb_pool(b, name, HPDL_LAYER_MAXPOOL, 2, 2, 0, 0);
    }
    hpdl__netb_classifier(b, 3, hpdl__imagenet_head);
}

static inline void hpdl__build_vgg16(hpdl__netb *b) { hpdl__build_vgg(b, 3); }
static inline void hpdl__build_vgg19(hpdl__netb *b) { hpdl__build_vgg(b, 4); }

/* One Inception module: 1x1 | 1x1->3x3 | 1x1->5x5 | 3x3 max pool->1x1,
   concatenated. w = {1x1, 3x3 reduce, 3x3, 5x5 reduce, 5x5, pool proj}. */
static inline void hpdl__netb_inception(hpdl__netb *b, const char *name, const int w[6]) {
    hpdl_shape in = b->cur, outs[4];
    hpdl_layer l;
    hpdl__name_append(b->prefix, sizeof b->prefix, 0, name);
    hpdl__netb_conv_relu(b, "1x1", w[0], 1, 1, 0);
    outs[0] = b->cur;
    b->cur = in;
    hpdl__netb_conv_relu(b, "3x3_reduce", w[1], 1, 1, 0);
    hpdl__netb_conv_relu(b, "3x3", w[2], 3, 1, 1);
    outs[1] = b->cur;
    b->cur = in;
    hpdl__netb_conv_relu(b, "5x5_reduce", w[3], 1, 1, 0);
    hpdl__netb_conv_relu(b, "5x5", w[4], 5, 1, 2);
    outs[2] = b->cur;
    b->cur = in;
    hpdl__netb_pool(b, "pool", HPDL_LAYER_MAXPOOL, 3, 1, 1, 0);
    hpdl__netb_conv_relu(b, "pool_proj", w[5], 1, 1, 0);
    outs[3] = b->cur;
    b->prefix[0] = '\0';
    {
        char buf[48];
        hpdl__name_join(buf, sizeof buf, name, "concat");
        hpdl__netb_push(b, hpdl_layer_concat(&l, buf, 4, outs), &l);
    }
}

/* GoogLeNet as in the paper (Szegedy et al. 2015, table 1): 5x5 branches
   (torchvision's port has 3x3 there), no batch-norm, Caffe's ceil-mode
   pooling, without the two auxiliary classifiers and LRN. */
static inline void hpdl__build_googlenet(hpdl__netb *b) {
    static const int modules[9][6] = {
        {64, 96, 128, 16, 32, 32},     {128, 128, 192, 32, 96, 64},  /* 3a 3b */
        {192, 96, 208, 16, 48, 64},    {160, 112, 224, 24, 64, 64},  /* 4a 4b */
        {128, 128, 256, 24, 64, 64},   {112, 144, 288, 32, 64, 64},  /* 4c 4d */
        {256, 160, 320, 32, 128, 128}, {256, 160, 320, 32, 128, 128}, /* 4e 5a */
        {384, 192, 384, 48, 128, 128}};                              /* 5b */
    static const char *names[9] = {"inception3a", "inception3b", "inception4a", "inception4b",
                                   "inception4c", "inception4d", "inception4e", "inception5a",
                                   "inception5b"};
    static const int classes = 1000;
    int i;
    hpdl__netb_conv_relu(b, "conv1", 64, 7, 2, 3);
    hpdl__netb_pool(b, "pool1", HPDL_LAYER_MAXPOOL, 3, 2, 0, 1);
    hpdl__netb_conv_relu(b, "conv2_reduce", 64, 1, 1, 0);
    hpdl__netb_conv_relu(b, "conv2", 192, 3, 1, 1);
    hpdl__netb_pool(b, "pool2", HPDL_LAYER_MAXPOOL, 3, 2, 0, 1);
    for (i = 0; i < 9; i++) {
        hpdl__netb_inception(b, names[i], modules[i]);
        if (i == 1 || i == 6) /* after 3b and 4e */
            hpdl__netb_pool(b, i == 1 ? "pool3" : "pool4", HPDL_LAYER_MAXPOOL, 3, 2, 0, 1);
    }
    hpdl__netb_pool(b, "pool5", HPDL_LAYER_AVGPOOL, 7, 1, 0, 0);
    hpdl__netb_classifier(b, 1, &classes);
}

/* conv (no bias) + batch-norm (+ ReLU): ResNet's unit. */
static inline void hpdl__netb_conv_bn(hpdl__netb *b, const char *conv, const char *bn, int out_c,
                                      int k, int stride, int pad, const char *relu) {
    hpdl__netb_conv(b, conv, out_c, k, stride, pad, 0);
    hpdl__netb_elementwise(b, bn, HPDL_LAYER_BATCHNORM);
    if (relu) hpdl__netb_elementwise(b, relu, HPDL_LAYER_RELU);
}

/* ResNet bottleneck (torchvision v1.5: the stride sits on the 3x3 conv):
   1x1 -> 3x3 -> 1x1 (x4 channels), plus a 1x1 projection when the shape
   changes, added, then ReLU. */
static inline void hpdl__netb_bottleneck(hpdl__netb *b, int layer, int block, int width, int stride) {
    hpdl_shape in = b->cur, main_out, skip = b->cur;
    hpdl_layer l;
    snprintf(b->prefix, sizeof b->prefix, "layer%d.%d", layer, block);
    hpdl__netb_conv_bn(b, "conv1", "bn1", width, 1, 1, 0, "relu1");
    hpdl__netb_conv_bn(b, "conv2", "bn2", width, 3, stride, 1, "relu2");
    hpdl__netb_conv_bn(b, "conv3", "bn3", 4 * width, 1, 1, 0, NULL);
    main_out = b->cur;
    if (block == 0) {
        b->cur = in;
        hpdl__netb_conv_bn(b, "downsample.conv", "downsample.bn", 4 * width, 1, stride, 0, NULL);
        skip = b->cur;
    }
    {
        char buf[64];
        hpdl__netb_push(b, hpdl_layer_add(&l, hpdl__netb_name(b, "add", buf, sizeof buf), main_out, skip), &l);
    }
    hpdl__netb_elementwise(b, "relu", HPDL_LAYER_RELU);
    b->prefix[0] = '\0';
}

/* ResNet-50 (He et al. 2016) as in torchvision: 25,557,032 parameters. */
static inline void hpdl__build_resnet50(hpdl__netb *b) {
    static const int blocks[4] = {3, 4, 6, 3};
    static const int classes = 1000;
    int layer, block;
    hpdl__netb_conv_bn(b, "conv1", "bn1", 64, 7, 2, 3, "relu");
    hpdl__netb_pool(b, "maxpool", HPDL_LAYER_MAXPOOL, 3, 2, 1, 0);
    for (layer = 0; layer < 4; layer++)
        for (block = 0; block < blocks[layer]; block++)
            hpdl__netb_bottleneck(b, layer + 1, block, 64 << layer, block == 0 && layer > 0 ? 2 : 1);
    hpdl__netb_pool(b, "avgpool", HPDL_LAYER_AVGPOOL, 7, 1, 0, 0);
    hpdl__netb_classifier(b, 1, &classes);
}

/* Runs a builder twice: once to count, once to store into the caller's array
   (when large enough) or a new one. Nothing is written on an error. */
static inline hpdl_status hpdl__net_make(hpdl_net *net, const char *name, void (*build)(hpdl__netb *),
                                         hpdl_layer *storage, int capacity) {
    hpdl__netb b;
    hpdl_layer *layers = storage;
    if (!net || capacity < 0) return HPDL_ERR_INVALID;
    memset(&b, 0, sizeof b);
    b.cur = hpdl_shape_make(3, 224, 224);
    build(&b);
    if (b.status != HPDL_OK) return b.status;
    if (storage && capacity < b.count) return HPDL_ERR_INVALID;
    if (!storage) {
        layers = (hpdl_layer *)hpdl_alloc((size_t)b.count, sizeof *layers);
        if (!layers) return HPDL_ERR_NOMEM;
    }
    b.layers = layers;
    b.capacity = b.count;
    b.count = 0;
    b.cur = hpdl_shape_make(3, 224, 224);
    build(&b);
    hpdl__name_append(net->name, sizeof net->name, 0, name);
    net->layers = layers;
    net->count = b.count;
    net->owns_layers = storage == NULL;
    return HPDL_OK;
}

/* Network builders at 224x224x3 input. storage NULL: allocate (free with
   hpdl_net_free); else storage must hold the whole network (capacity too
   small: HPDL_ERR_INVALID; pass storage NULL once to learn the count). */
HPDL_API hpdl_status hpdl_net_alexnet(hpdl_net *net, hpdl_layer *storage, int capacity) {
    return hpdl__net_make(net, "AlexNet", hpdl__build_alexnet, storage, capacity);
}
HPDL_API hpdl_status hpdl_net_vgg16(hpdl_net *net, hpdl_layer *storage, int capacity) {
    return hpdl__net_make(net, "VGG16", hpdl__build_vgg16, storage, capacity);
}
HPDL_API hpdl_status hpdl_net_vgg19(hpdl_net *net, hpdl_layer *storage, int capacity) {
    return hpdl__net_make(net, "VGG19", hpdl__build_vgg19, storage, capacity);
}
HPDL_API hpdl_status hpdl_net_googlenet(hpdl_net *net, hpdl_layer *storage, int capacity) {
    return hpdl__net_make(net, "GoogLeNet", hpdl__build_googlenet, storage, capacity);
}
HPDL_API hpdl_status hpdl_net_resnet50(hpdl_net *net, hpdl_layer *storage, int capacity) {
    return hpdl__net_make(net, "ResNet-50", hpdl__build_resnet50, storage, capacity);
}

/* Whole-network totals per sample; conv_share = convolution FLOPs / FLOPs. */
typedef struct hpdl_net_totals {
    double macs, flops, params, act_elems, conv_flops, conv_share;
} hpdl_net_totals;

HPDL_API hpdl_status hpdl_net_summarize(const hpdl_net *net, hpdl_net_totals *out) {
    hpdl_net_totals t;
    int i;
    if (!net || !out || net->count <= 0 || !net->layers) return HPDL_ERR_INVALID;
    memset(&t, 0, sizeof t);
    for (i = 0; i < net->count; i++) {
        const hpdl_layer *l = &net->layers[i];
        t.macs += l->macs;
        t.flops += l->flops;
        t.params += l->params;
        t.act_elems += l->out_elems;
        if (l->kind == HPDL_LAYER_CONV2D) t.conv_flops += l->flops;
    }
    t.conv_share = t.flops > 0.0 ? t.conv_flops / t.flops : 0.0;
    *out = t;
    return HPDL_OK;
}

/* Per-layer table: output shape, GFLOPs and share of the total, parameters,
   activation MB (f32, one sample); then totals and the convolution share. */
HPDL_API hpdl_status hpdl_net_print_table(FILE *f, const hpdl_net *net) {
    hpdl_net_totals t;
    int i;
    hpdl_status s = hpdl_net_summarize(net, &t);
    if (s != HPDL_OK) return s;
    if (!f) return HPDL_ERR_INVALID;
    fprintf(f, "%s, per sample at 224x224 (a multiply-add = 2 FLOPs)\n", net->name);
    fprintf(f, "%4s  %-28s %-9s %15s %10s %7s %11s %8s\n", "#", "layer", "kind", "output", "GFLOPs",
            "share", "params", "act MB");
    for (i = 0; i < net->count; i++) {
        const hpdl_layer *l = &net->layers[i];
        char shape[32];
        snprintf(shape, sizeof shape, "%dx%dx%d", l->out.c, l->out.h, l->out.w);
        fprintf(f, "%4d  %-28s %-9s %15s %10.4f %6.2f%% %11.0f %8.3f\n", i, l->name,
                hpdl_layer_kind_name(l->kind), shape, l->flops * 1e-9, 100.0 * l->flops / t.flops,
                l->params, l->out_elems * 4.0 / 1e6);
    }
    fprintf(f, "total: %.3f GFLOPs (%.3f GMACs), %.2fM params, %.1f MB activations (f32); "
               "convolutions %.2f%% of FLOPs\n",
            t.flops * 1e-9, t.macs * 1e-9, t.params * 1e-6, t.act_elems * 4.0 / 1e6, 100.0 * t.conv_share);
    return HPDL_OK;
}

/* ---- PALEO time estimates --------------------------------------------------- */

/* PALEO (Qi, Sparks, Talwalkar, ICLR 2017) estimates a layer's time from its
   FLOPs and the bytes it moves, each at a fraction PPP ("platform percent of
   peak", 0 < PPP <= 1) of the device's peak:
       compute = FLOPs / (peak * PPP),   memory = bytes / (bandwidth * PPP),
   and reports their sum (no overlap, PALEO's choice) and their max (perfect
   overlap, the roofline's view). Bytes for a layer at batch B and element
   size e: e * (B * (in_elems + out_elems) + params), weights read once. */

typedef enum hpdl_precision { HPDL_PREC_F32, HPDL_PREC_F64 } hpdl_precision;

typedef enum hpdl_device_id {
    HPDL_DEVICE_K80,  /* Tesla K80 board (two GK210), boost clock */
    HPDL_DEVICE_V100, /* V100 SXM2 */
    HPDL_DEVICE_A100, /* A100 SXM4 40GB */
    HPDL_DEVICE_H100, /* H100 SXM5, non-tensor-core rates */
    HPDL_DEVICE_H200  /* H200 SXM, non-tensor-core rates */
} hpdl_device_id;

typedef struct hpdl_device_model {
    char name[32];
    double peak_f32, peak_f64; /* FLOP/s */
    double mem_bw;             /* bytes/s */
} hpdl_device_model;

/* A user-defined device: rates must be positive and finite. */
HPDL_API hpdl_status hpdl_paleo_device_custom(const char *name, double peak_f32, double peak_f64,
                                              double mem_bw, hpdl_device_model *out) {
    if (!name || !out || !(peak_f32 > 0.0 && peak_f32 < HUGE_VAL) || !(peak_f64 > 0.0 && peak_f64 < HUGE_VAL) ||
        !(mem_bw > 0.0 && mem_bw < HUGE_VAL))
        return HPDL_ERR_INVALID;
    hpdl__name_append(out->name, sizeof out->name, 0, name);
    out->peak_f32 = peak_f32;
    out->peak_f64 = peak_f64;
    out->mem_bw = mem_bw;
    return HPDL_OK;
}

/* Vendor datasheet figures. */
HPDL_API hpdl_status hpdl_paleo_device(hpdl_device_id id, hpdl_device_model *out) {
    switch (id) {
    case HPDL_DEVICE_K80: return hpdl_paleo_device_custom("K80", 8.73e12, 2.91e12, 480e9, out);
    case HPDL_DEVICE_V100: return hpdl_paleo_device_custom("V100-SXM2", 15.7e12, 7.8e12, 900e9, out);
    case HPDL_DEVICE_A100: return hpdl_paleo_device_custom("A100-SXM4-40GB", 19.5e12, 9.7e12, 1555e9, out);
    case HPDL_DEVICE_H100: return hpdl_paleo_device_custom("H100-SXM5", 67e12, 34e12, 3350e9, out);
    case HPDL_DEVICE_H200: return hpdl_paleo_device_custom("H200-SXM", 67e12, 34e12, 4800e9, out);
    }
    return HPDL_ERR_INVALID;
}

typedef struct hpdl_paleo_time {
    double compute_s, memory_s; /* FLOPs and bytes at PPP of peak */
    double sum_s, max_s;        /* no overlap / perfect overlap */
} hpdl_paleo_time;

static inline int hpdl__positive(double x) { return x > 0.0 && x < HUGE_VAL; }
static inline int hpdl__nonnegative(double x) { return x >= 0.0 && x < HUGE_VAL; }

/* The estimate for `flops` FLOPs and `bytes` bytes. */
HPDL_API hpdl_status hpdl_paleo_estimate(double flops, double bytes, double peak_flops,
                                         double mem_bw, double ppp, hpdl_paleo_time *out) {
    hpdl_paleo_time t;
    if (!out || !hpdl__nonnegative(flops) || !hpdl__nonnegative(bytes) || !hpdl__positive(peak_flops) ||
        !hpdl__positive(mem_bw) || !(ppp > 0.0 && ppp <= 1.0))
        return HPDL_ERR_INVALID;
    t.compute_s = flops / (peak_flops * ppp);
    t.memory_s = bytes / (mem_bw * ppp);
    t.sum_s = t.compute_s + t.memory_s;
    t.max_s = t.compute_s > t.memory_s ? t.compute_s : t.memory_s;
    *out = t;
    return HPDL_OK;
}

static inline double hpdl__elem_bytes(hpdl_precision p) { return p == HPDL_PREC_F64 ? 8.0 : 4.0; }

/* Bytes a layer moves at batch `batch` (see above). */
static inline double hpdl__paleo_layer_bytes(const hpdl_layer *l, int batch, hpdl_precision prec) {
    return hpdl__elem_bytes(prec) * ((double)batch * (l->in_elems + l->out_elems) + l->params);
}

/* One layer's forward time at batch `batch`. */
HPDL_API hpdl_status hpdl_paleo_layer_time(const hpdl_layer *l, int batch, const hpdl_device_model *dev,
                                           hpdl_precision prec, double ppp, hpdl_paleo_time *out) {
    if (!l || !dev || batch <= 0 || (prec != HPDL_PREC_F32 && prec != HPDL_PREC_F64))
        return HPDL_ERR_INVALID;
    return hpdl_paleo_estimate(l->flops * batch, hpdl__paleo_layer_bytes(l, batch, prec),
                               prec == HPDL_PREC_F64 ? dev->peak_f64 : dev->peak_f32, dev->mem_bw, ppp, out);
}

/* A network's forward (inference) time: the per-layer estimates summed, so
   max_s overlaps compute and memory within each layer, not across layers. */
HPDL_API hpdl_status hpdl_paleo_net_time(const hpdl_net *net, int batch, const hpdl_device_model *dev,
                                         hpdl_precision prec, double ppp, hpdl_paleo_time *out) {
    hpdl_paleo_time total, t;
    int i;
    if (!net || !net->layers || net->count <= 0 || !out) return HPDL_ERR_INVALID;
    memset(&total, 0, sizeof total);
    for (i = 0; i < net->count; i++) {
        hpdl_status s = hpdl_paleo_layer_time(&net->layers[i], batch, dev, prec, ppp, &t);
        if (s != HPDL_OK) return s;
        total.compute_s += t.compute_s;
        total.memory_s += t.memory_s;
        total.sum_s += t.sum_s;
        total.max_s += t.max_s;
    }
    *out = total;
    return HPDL_OK;
}

/* PPP measured: the fraction of peak a kernel reached, flops / (s * peak);
   e.g. from the GEMM bench's TFLOP/s on the GPU at hand. */
HPDL_API hpdl_status hpdl_paleo_ppp_from_measured(double flops, double seconds, double peak_flops,
                                                  double *ppp) {
    if (!ppp || !hpdl__positive(flops) || !hpdl__positive(seconds) || !hpdl__positive(peak_flops))
        return HPDL_ERR_INVALID;
    *ppp = flops / (seconds * peak_flops);
    return HPDL_OK;
}

/* Predicted vs measured, one row per phase (e.g. the MLP step's forward
   GEMMs, backward GEMMs, copies, allreduce), error = (pred - meas) / meas. */
HPDL_API hpdl_status hpdl_paleo_print_comparison(FILE *f, int n, const char *const *phase,
                                                 const double *predicted_s, const double *measured_s) {
    int i;
    double pred = 0.0, meas = 0.0;
    if (!f || n <= 0 || !phase || !predicted_s || !measured_s) return HPDL_ERR_INVALID;
    for (i = 0; i < n; i++)
        if (!phase[i] || !hpdl__nonnegative(predicted_s[i]) || !hpdl__positive(measured_s[i]))
            return HPDL_ERR_INVALID;
    fprintf(f, "%-24s %14s %14s %9s\n", "phase", "predicted ms", "measured ms", "error");
    for (i = 0; i < n; i++) {
        fprintf(f, "%-24s %14.4f %14.4f %+8.1f%%\n", phase[i], 1e3 * predicted_s[i], 1e3 * measured_s[i],
                100.0 * (predicted_s[i] - measured_s[i]) / measured_s[i]);
        pred += predicted_s[i];
        meas += measured_s[i];
    }
    fprintf(f, "%-24s %14.4f %14.4f %+8.1f%%\n", "total", 1e3 * pred, 1e3 * meas, 100.0 * (pred - meas) / meas);
    return HPDL_OK;
}

/* ---- roofline ------------------------------------------------------------------ */

/* Attainable FLOP/s at arithmetic intensity ai (FLOP/byte):
   min(peak, ai * bandwidth). */
HPDL_API hpdl_status hpdl_roofline_attainable(double ai, double peak_flops, double mem_bw, double *out) {
    if (!out || !hpdl__positive(ai) || !hpdl__positive(peak_flops) || !hpdl__positive(mem_bw))
        return HPDL_ERR_INVALID;
    *out = ai * mem_bw < peak_flops ? ai * mem_bw : peak_flops;
    return HPDL_OK;
}

/* The ridge point: the intensity above which a kernel is compute bound. */
HPDL_API hpdl_status hpdl_roofline_ridge(double peak_flops, double mem_bw, double *out) {
    if (!out || !hpdl__positive(peak_flops) || !hpdl__positive(mem_bw)) return HPDL_ERR_INVALID;
    *out = peak_flops / mem_bw;
    return HPDL_OK;
}

/* The course's combined model for distributed training: each byte crosses
   PCIe and the MPI network (half the traffic on each, on average), so time
   per byte = ai/P_flops + (1/P_pci + 1/P_mpi)/2, and
       attainable = ai / (ai/P_flops + (1/P_pci + 1/P_mpi) / 2). */
HPDL_API hpdl_status hpdl_roofline_combined(double ai, double peak_flops, double pci_bw, double mpi_bw,
                                            double *out) {
    if (!out || !hpdl__positive(ai) || !hpdl__positive(peak_flops) || !hpdl__positive(pci_bw) ||
        !hpdl__positive(mpi_bw))
        return HPDL_ERR_INVALID;
    *out = ai / (ai / peak_flops + 0.5 * (1.0 / pci_bw + 1.0 / mpi_bw));
    return HPDL_OK;
}

/* ---- collective costs (alpha-beta model) ----------------------------------------- */

/* n bytes on each of p ranks; alpha = latency per message (s), beta = time
   per byte (s/B, 1 / link bandwidth). p == 1 costs nothing. */
static inline int hpdl__alpha_beta_valid(double n, int p, double alpha, double beta, const double *out) {
    return out && p >= 1 && hpdl__nonnegative(n) && hpdl__nonnegative(alpha) && hpdl__nonnegative(beta);
}

/* Ring (reduce-scatter then allgather): 2(p-1) steps of n/p bytes each,
       2(p-1)*alpha + 2(p-1)/p * n * beta. */
HPDL_API hpdl_status hpdl_cost_allreduce_ring(double n, int p, double alpha, double beta, double *out) {
    if (!hpdl__alpha_beta_valid(n, p, alpha, beta, out)) return HPDL_ERR_INVALID;
    *out = 2.0 * (p - 1) * alpha + 2.0 * (p - 1) / p * n * beta;
    return HPDL_OK;
}

/* Binary tree: reduce up then broadcast down, whole message per level,
       2 * ceil(log2 p) * (alpha + n*beta). */
HPDL_API hpdl_status hpdl_cost_allreduce_tree(double n, int p, double alpha, double beta, double *out) {
    int levels = 0;
    if (!hpdl__alpha_beta_valid(n, p, alpha, beta, out)) return HPDL_ERR_INVALID;
    while ((1L << levels) < (long)p) levels++;
    *out = 2.0 * levels * (alpha + n * beta);
    return HPDL_OK;
}

/* One-to-all through a root (parameter-server style): p-1 sequential
   messages into the root (reduce), p-1 out of it (broadcast),
       2(p-1)(alpha + n*beta). */
HPDL_API hpdl_status hpdl_cost_allreduce_one_to_all(double n, int p, double alpha, double beta, double *out) {
    if (!hpdl__alpha_beta_valid(n, p, alpha, beta, out)) return HPDL_ERR_INVALID;
    *out = 2.0 * (p - 1) * (alpha + n * beta);
    return HPDL_OK;
}

/* Bandwidth from a measured allreduce of n bytes on p ranks in `seconds`
   (nccl-tests' definitions): algbw = n / t; busbw = algbw * 2(p-1)/p, the
   rate each link sustained in a ring; utilisation = busbw / link_bw. */
typedef struct hpdl_bw_report { double algbw, busbw, utilisation; } hpdl_bw_report;

HPDL_API hpdl_status hpdl_cost_allreduce_utilisation(double n, int p, double seconds, double link_bw,
                                                     hpdl_bw_report *out) {
    hpdl_bw_report r;
    if (!out || p < 1 || !hpdl__positive(n) || !hpdl__positive(seconds) || !hpdl__positive(link_bw))
        return HPDL_ERR_INVALID;
    r.algbw = n / seconds;
    r.busbw = r.algbw * 2.0 * (p - 1) / p;
    r.utilisation = r.busbw / link_bw;
    *out = r;
    return HPDL_OK;
}

/* ------------------------------------------------------------------------ */
/* Layer -> device placement (model parallelism)                             */
/* ------------------------------------------------------------------------ */

/* A placement of L layers on G devices is contiguous: device d owns layers
   [first[d], first[d+1]), with first[0] = 0, first[G] = L, and every device
   owns at least one layer (so G <= L). `first` has G+1 entries. On a bad
   argument nothing is written. */
static inline int hpdl__place_valid(int n_layers, int n_devices, const int *first) {
    return first && n_layers > 0 && n_devices > 0 && n_devices <= n_layers;
}

/* Even split. Write L = q*G + r with 0 <= r < G: the first r devices get
   q+1 layers and the other G-r get q, so sizes differ by at most one. No
   split does better, since the largest part holds at least ceil(L/G)
   layers, which is exactly what the first devices get. */
HPDL_API hpdl_status hpdl_place_even(int n_layers, int n_devices, int *first) {
    int d, q, r;
    if (!hpdl__place_valid(n_layers, n_devices, first)) return HPDL_ERR_INVALID;
    q = n_layers / n_devices;
    r = n_layers % n_devices;
    for (d = 0; d <= n_devices; d++) first[d] = d * q + (d < r ? d : r);
    return HPDL_OK;
}

/* The DP table of hpdl_place_balanced: best[g][i] = the smallest possible
   largest load when layers [0, i) go to g devices; cut[g][i] = where the
   g-th device's layers start in that optimum. */
static inline void hpdl__place_dp(int n_layers, int n_devices, const double *prefix, double *best, int *cut) {
    int g, i, j, stride = n_layers + 1;
    for (i = 1; i <= n_layers; i++) {
        best[stride + i] = prefix[i];
        cut[stride + i] = 0;
    }
    for (g = 2; g <= n_devices; g++)
        for (i = g; i <= n_layers - (n_devices - g); i++) {
            double best_load = HUGE_VAL;
            int best_j = g - 1;
            for (j = g - 1; j < i; j++) { /* device g takes layers [j, i) */
                double prev = best[(g - 1) * stride + j], last = prefix[i] - prefix[j];
                double load = prev > last ? prev : last;
                if (load < best_load) { best_load = load; best_j = j; }
            }
            best[g * stride + i] = best_load;
            cut[g * stride + i] = best_j;
        }
}

/* Cost-balanced contiguous split minimising the largest per-device load
   (sum of cost[] over a device's layers; costs finite and >= 0, e.g. FLOPs
   or measured times). Exact, by dynamic programming over prefix sums:
   best[g][i] = min over j of max(best[g-1][j], cost of layers [j, i)),
   O(G*L^2) time and O(G*L) memory (L in the hundreds takes microseconds).
   Binary search on the answer with a greedy check is faster but only exact
   for integer costs; the DP is exact for any costs. Ties go to the first
   (smallest) cut found. HPDL_ERR_NOMEM if the table cannot be allocated. */
HPDL_API hpdl_status hpdl_place_balanced(int n_layers, const double *cost, int n_devices, int *first) {
    double *prefix, *best;
    int *cut, g, i;
    size_t cells;
    if (!hpdl__place_valid(n_layers, n_devices, first) || !cost) return HPDL_ERR_INVALID;
    for (i = 0; i < n_layers; i++)
        if (!(cost[i] >= 0.0 && cost[i] < HUGE_VAL)) return HPDL_ERR_INVALID;
    cells = ((size_t)n_devices + 1) * ((size_t)n_layers + 1);
    prefix = (double *)hpdl_alloc((size_t)n_layers + 1, sizeof *prefix);
    best = (double *)hpdl_alloc(cells, sizeof *best);
    cut = (int *)hpdl_alloc(cells, sizeof *cut);
    if (!prefix || !best || !cut) {
        HPDL_FREE(prefix); HPDL_FREE(best); HPDL_FREE(cut);
        return HPDL_ERR_NOMEM;
    }
    prefix[0] = 0.0;
    for (i = 0; i < n_layers; i++) prefix[i + 1] = prefix[i] + cost[i];
    hpdl__place_dp(n_layers, n_devices, prefix, best, cut);
    first[n_devices] = n_layers;
    for (g = n_devices, i = n_layers; g >= 1; g--) {
        i = cut[g * (n_layers + 1) + i];
        first[g - 1] = i;
    }
    HPDL_FREE(prefix); HPDL_FREE(best); HPDL_FREE(cut);
    return HPDL_OK;
}

/* An explicit map: device_of_layer[l] for each layer. Valid when it starts
   at device 0, ends at G-1 and each step stays on the device or moves to
   the next one: contiguous, non-decreasing, every device used, ids in range. */
HPDL_API hpdl_status hpdl_place_from_map(int n_layers, const int *device_of_layer, int n_devices, int *first) {
    int l;
    if (!hpdl__place_valid(n_layers, n_devices, first) || !device_of_layer) return HPDL_ERR_INVALID;
    if (device_of_layer[0] != 0 || device_of_layer[n_layers - 1] != n_devices - 1) return HPDL_ERR_INVALID;
    for (l = 1; l < n_layers; l++) {
        int prev = device_of_layer[l - 1], cur = device_of_layer[l]; /* prev is in range */
        if (cur != prev && cur != prev + 1) return HPDL_ERR_INVALID;
    }
    first[0] = 0;
    for (l = 1; l < n_layers; l++)
        if (device_of_layer[l] != device_of_layer[l - 1]) first[device_of_layer[l]] = l;
    first[n_devices] = n_layers;
    return HPDL_OK;
}

/* ------------------------------------------------------------------------ */
/* int8 quantization (post-training, gemmlowp / TFLite scheme)               */
/* ------------------------------------------------------------------------ */

/* Affine quantization (Jacob et al., CVPR 2018): real = scale * (q - zero_point)
   with q an int8 in [-128, 127]. Ranges are first widened to include 0, so
   that 0 (padding, ReLU output) is exact.
   - asymmetric: [lo, hi] onto [-128, 127]: scale = (hi - lo) / 255,
     zero_point = round(-128 - lo / scale) clamped to [-128, 127];
   - symmetric:  zero_point = 0, scale = max(|lo|, |hi|) / 127, so values use
     [-127, 127] (-128 only by saturation) and weights need no zero-point terms.
   Integer semantics, everywhere below:
   - round() is round-half-away-from-zero, evaluated in double;
   - quantize:   q = clamp(round(x / scale) + zero_point, -128, 127), +-inf
     saturate, NaN is an error (HPDL_ERR_NUMERIC, nothing written);
   - dequantize: x = (float)(scale * (q - zero_point)) in double;
   - per-channel: one (scale, zero point) per output channel; for a weight
     matrix W (in x out, row-major, as hpdl's MLP stores it) the output
     channels are its columns (axis 1); for PyTorch's (out x in), rows (axis 0). */
#define HPDL_QUANT_QMIN (-128)
#define HPDL_QUANT_QMAX 127

typedef struct hpdl_quant_params {
    float scale;        /* > 0 */
    int32_t zero_point; /* in [-128, 127] */
} hpdl_quant_params;

static inline int hpdl__quant_params_valid(hpdl_quant_params p) {
    return p.scale > 0.0f && p.scale <= FLT_MAX && p.zero_point >= HPDL_QUANT_QMIN &&
           p.zero_point <= HPDL_QUANT_QMAX;
}

/* Parameters for the range [min, max]. Errors: min > max, a non-finite end,
   or a range that is zero (or so small that the scale underflows). */
HPDL_API hpdl_status hpdl_quant_params_from_range(double min, double max, int symmetric,
                                                  hpdl_quant_params *out) {
    double lo = min < 0.0 ? min : 0.0, hi = max > 0.0 ? max : 0.0, zp;
    hpdl_quant_params p;
    if (!out || !(min <= max) || !(fabs(min) <= DBL_MAX) || !(fabs(max) <= DBL_MAX)) return HPDL_ERR_INVALID;
    if (symmetric) {
        p.scale = (float)((-lo > hi ? -lo : hi) / HPDL_QUANT_QMAX);
        p.zero_point = 0;
    } else {
        p.scale = (float)((hi - lo) / (HPDL_QUANT_QMAX - HPDL_QUANT_QMIN));
        zp = round(HPDL_QUANT_QMIN - lo / (double)p.scale);
        p.zero_point = (int32_t)(zp < HPDL_QUANT_QMIN ? HPDL_QUANT_QMIN : zp > HPDL_QUANT_QMAX ? HPDL_QUANT_QMAX : zp);
    }
    if (!hpdl__quant_params_valid(p)) return HPDL_ERR_INVALID;
    *out = p;
    return HPDL_OK;
}

/* Minimum and maximum of n floats with stride `stride`; 0 if one is NaN. */
static inline int hpdl__minmax_f32(const float *x, int64_t n, int64_t stride, double *lo, double *hi) {
    int64_t i;
    double a = HUGE_VAL, b = -HUGE_VAL;
    for (i = 0; i < n; i++) {
        double v = x[i * stride];
        if (v != v) return 0;
        if (v < a) a = v;
        if (v > b) b = v;
    }
    *lo = a;
    *hi = b;
    return 1;
}

/* Per-tensor parameters from the data's own range. */
HPDL_API hpdl_status hpdl_quant_params_f32(const float *x, int64_t n, int symmetric, hpdl_quant_params *out) {
    double lo, hi;
    if (!x || n <= 0 || !out) return HPDL_ERR_INVALID;
    if (!hpdl__minmax_f32(x, n, 1, &lo, &hi)) return HPDL_ERR_NUMERIC;
    return hpdl_quant_params_from_range(lo, hi, symmetric, out);
}

/* Channel c of a rows x cols matrix along `axis` (0: rows are channels,
   1: columns are): its first element, length and stride. */
static inline const float *hpdl__channel(const float *w, int rows, int cols, int ld, int axis, int c,
                                         int64_t *len, int64_t *stride) {
    *len = axis == 0 ? cols : rows;
    *stride = axis == 0 ? 1 : ld;
    return axis == 0 ? w + (int64_t)c * ld : w + c;
}

/* Per-channel parameters: out gets rows (axis 0) or cols (axis 1) entries.
   Every channel is checked before any is written. */
HPDL_API hpdl_status hpdl_quant_params_per_channel_f32(const float *w, int rows, int cols, int ld, int axis,
                                                       int symmetric, hpdl_quant_params *out) {
    int c, channels = axis == 0 ? rows : cols, pass;
    if (!out || !w || rows <= 0 || cols <= 0 || (axis != 0 && axis != 1) ||
        hpdl__check_matrix(w, rows, cols, ld) != HPDL_OK)
        return HPDL_ERR_INVALID;
    for (pass = 0; pass < 2; pass++) /* pass 0 validates, pass 1 writes */
        for (c = 0; c < channels; c++) {
            int64_t len, stride;
            const float *ch = hpdl__channel(w, rows, cols, ld, axis, c, &len, &stride);
            double lo, hi;
            hpdl_quant_params p;
            hpdl_status s;
            if (!hpdl__minmax_f32(ch, len, stride, &lo, &hi)) return HPDL_ERR_NUMERIC;
            s = hpdl_quant_params_from_range(lo, hi, symmetric, &p);
            if (s != HPDL_OK) return s;
            if (pass == 1) out[c] = p;
        }
    return HPDL_OK;
}

static inline int8_t hpdl__quantize_one(float x, hpdl_quant_params p) {
    double q = round((double)x / p.scale) + p.zero_point;
    return (int8_t)(q < HPDL_QUANT_QMIN ? HPDL_QUANT_QMIN : q > HPDL_QUANT_QMAX ? HPDL_QUANT_QMAX : q);
}

static inline int hpdl__has_nan_f32(const float *x, int64_t n) {
    int64_t i;
    for (i = 0; i < n; i++)
        if (x[i] != x[i]) return 1;
    return 0;
}

HPDL_API hpdl_status hpdl_quant_quantize_f32(const float *x, int64_t n, hpdl_quant_params p, int8_t *q) {
    int64_t i;
    if (!x || !q || n < 0 || !hpdl__quant_params_valid(p)) return HPDL_ERR_INVALID;
    if (hpdl__has_nan_f32(x, n)) return HPDL_ERR_NUMERIC;
    for (i = 0; i < n; i++) q[i] = hpdl__quantize_one(x[i], p);
    return HPDL_OK;
}

HPDL_API hpdl_status hpdl_quant_dequantize_i8(const int8_t *q, int64_t n, hpdl_quant_params p, float *x) {
    int64_t i;
    if (!x || !q || n < 0 || !hpdl__quant_params_valid(p)) return HPDL_ERR_INVALID;
    for (i = 0; i < n; i++) x[i] = (float)((double)p.scale * (q[i] - p.zero_point));
    return HPDL_OK;
}

/* Quantizes a rows x cols matrix (leading dimensions ld, ldq) with one
   parameter set per channel along `axis`. */
HPDL_API hpdl_status hpdl_quant_quantize_channels_f32(const float *w, int rows, int cols, int ld, int axis,
                                                      const hpdl_quant_params *p, int8_t *q, int ldq) {
    int i, j, channels = axis == 0 ? rows : cols;
    if (!p || (axis != 0 && axis != 1) || hpdl__check_matrix(w, rows, cols, ld) != HPDL_OK ||
        hpdl__check_matrix(q, rows, cols, ldq) != HPDL_OK)
        return HPDL_ERR_INVALID;
    for (i = 0; i < channels; i++)
        if (!hpdl__quant_params_valid(p[i])) return HPDL_ERR_INVALID;
    for (i = 0; i < rows; i++)
        if (hpdl__has_nan_f32(w + (int64_t)i * ld, cols)) return HPDL_ERR_NUMERIC;
    for (i = 0; i < rows; i++)
        for (j = 0; j < cols; j++)
            q[(int64_t)i * ldq + j] = hpdl__quantize_one(w[(int64_t)i * ld + j], p[axis == 0 ? i : j]);
    return HPDL_OK;
}

/* ---- fixed-point requantization (gemmlowp) ----------------------------------- */

/* A real multiplier M in (0, 1) as M ~= M0 * 2^-31 * 2^-shift, with M0 in
   [2^30, 2^31) and shift in [0, 31] (M >= 2^-32 or so; smaller multipliers
   would round every int32 to 0 and are refused). M0 = round(frac * 2^31)
   where M = frac * 2^e, frac in [0.5, 1): relative error <= 2^-31. */
HPDL_API hpdl_status hpdl_quant_multiplier(double real, int32_t *m0, int *shift) {
    int e;
    double frac;
    int64_t m;
    if (!m0 || !shift || !(real > 0.0 && real < 1.0)) return HPDL_ERR_INVALID;
    frac = frexp(real, &e);
    m = (int64_t)round(frac * 2147483648.0);
    if (m == ((int64_t)1 << 31)) { m /= 2; e++; } /* frac rounded up to 1 */
    if (e > 0) { m = INT32_MAX; e = 0; }           /* M within 2^-32 of 1 */
    if (-e > 31) return HPDL_ERR_INVALID;
    *m0 = (int32_t)m;
    *shift = -e;
    return HPDL_OK;
}

/* gemmlowp's SaturatingRoundingDoublingHighMul: a * b / 2^31 rounded to
   nearest with ties upwards (floor(a*b / 2^31 + 1/2): gemmlowp adds a nudge
   of +-2^30 and truncates), saturating the one overflow, INT32_MIN^2. */
HPDL_API int32_t hpdl_quant_sat_rounding_doubling_high_mul(int32_t a, int32_t b) {
    int64_t ab = (int64_t)a * b, nudge = ab >= 0 ? ((int64_t)1 << 30) : 1 - ((int64_t)1 << 30);
    if (a == INT32_MIN && b == INT32_MIN) return INT32_MAX;
    return (int32_t)((ab + nudge) / ((int64_t)1 << 31)); /* C99 '/' truncates toward zero */
}

/* floor(x / 2^e) without relying on >> of a negative number (which C99
   leaves implementation-defined): for x < 0, ~x >= 0 and ~(~x >> e) is the
   floor. */
static inline int32_t hpdl__floor_shift(int32_t x, int e) { return x >= 0 ? x >> e : ~(~x >> e); }

/* gemmlowp's RoundingDivideByPOT: x / 2^e rounded to nearest, ties away from
   zero; e in [0, 31]. */
HPDL_API int32_t hpdl_quant_rounding_divide_by_pot(int32_t x, int e) {
    int32_t mask = (int32_t)(((int64_t)1 << e) - 1);
    int32_t remainder = x & mask; /* int32_t is two's complement: x mod 2^e */
    int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
    return hpdl__floor_shift(x, e) + (remainder > threshold ? 1 : 0);
}

/* One int32 accumulator to int8: clamp(zero_point + RDBPOT(SRDHM(acc, M0),
   shift), lo, 127), with lo = -128, or zero_point for a fused ReLU.
   Preconditions (checked by the callers): M0 in [2^30, 2^31), shift in [0, 31]. */
static inline int8_t hpdl__requantize(int32_t acc, int32_t m0, int shift, int32_t zero_point, int32_t lo) {
    int64_t v = (int64_t)hpdl_quant_rounding_divide_by_pot(hpdl_quant_sat_rounding_doubling_high_mul(acc, m0), shift) +
                zero_point;
    return (int8_t)(v < lo ? lo : v > HPDL_QUANT_QMAX ? HPDL_QUANT_QMAX : v);
}

static inline int hpdl__multiplier_valid(int32_t m0, int shift) {
    return m0 >= ((int32_t)1 << 30) && shift >= 0 && shift <= 31;
}

HPDL_API hpdl_status hpdl_quant_requantize(int32_t acc, int32_t m0, int shift, int32_t zero_point, int8_t *out) {
    if (!out || !hpdl__multiplier_valid(m0, shift) || zero_point < HPDL_QUANT_QMIN || zero_point > HPDL_QUANT_QMAX)
        return HPDL_ERR_INVALID;
    *out = hpdl__requantize(acc, m0, shift, zero_point, HPDL_QUANT_QMIN);
    return HPDL_OK;
}

/* Multipliers of a layer y = x W: M[j] = s_x * s_w[j] / s_y for n weight
   parameter sets (n = 1 per tensor, n = out channels per channel). */
HPDL_API hpdl_status hpdl_quant_layer_multipliers(float input_scale, const hpdl_quant_params *weight, int n,
                                                  float output_scale, int32_t *m0, int *shift) {
    int j, pass;
    if (!weight || n <= 0 || !m0 || !shift || !(input_scale > 0.0f && input_scale <= FLT_MAX) ||
        !(output_scale > 0.0f && output_scale <= FLT_MAX))
        return HPDL_ERR_INVALID;
    for (pass = 0; pass < 2; pass++) /* pass 0 validates, pass 1 writes */
        for (j = 0; j < n; j++) {
            int32_t m;
            int s;
            hpdl_status st;
            if (!hpdl__quant_params_valid(weight[j])) return HPDL_ERR_INVALID;
            st = hpdl_quant_multiplier((double)input_scale * weight[j].scale / output_scale, &m, &s);
            if (st != HPDL_OK) return st;
            if (pass == 1) { m0[j] = m; shift[j] = s; }
        }
    return HPDL_OK;
}

/* int32 biases at scale s_x * s_w[j] (zero point 0), so they add straight
   into the accumulators: q = round(b / (s_x * s_w)), saturated to int32. */
HPDL_API hpdl_status hpdl_quant_bias_f32(const float *bias, int n, float input_scale,
                                         const hpdl_quant_params *weight, int per_channel, int32_t *out) {
    int j;
    if (!bias || n <= 0 || !weight || !out || !(input_scale > 0.0f && input_scale <= FLT_MAX)) return HPDL_ERR_INVALID;
    for (j = 0; j < (per_channel ? n : 1); j++)
        if (!hpdl__quant_params_valid(weight[j])) return HPDL_ERR_INVALID;
    if (hpdl__has_nan_f32(bias, n)) return HPDL_ERR_NUMERIC;
    for (j = 0; j < n; j++) {
        double q = round((double)bias[j] / ((double)input_scale * weight[per_channel ? j : 0].scale));
        out[j] = (int32_t)(q < INT32_MIN ? INT32_MIN : q > INT32_MAX ? INT32_MAX : q);
    }
    return HPDL_OK;
}

/* ---- int8 GEMM ---------------------------------------------------------------- */

/* Each product (a - za)(b - zb) is at most 255^2 in magnitude, so K up to
   this bound keeps the int32 accumulator exact (255^2 * 33025 < 2^31). */
#define HPDL_QUANT_MAX_K 33025

static inline int32_t hpdl__dot_i8(int K, const int8_t *a, int32_t za, const int8_t *b, int ldb, int32_t zb) {
    int32_t acc = 0;
    int k;
    for (k = 0; k < K; k++) acc += ((int32_t)a[k] - za) * ((int32_t)b[(int64_t)k * ldb] - zb);
    return acc;
}

static inline int hpdl__gemm_i8_valid(int M, int N, int K, const int8_t *A, int lda, int32_t za,
                                      const int8_t *B, int ldb, int32_t zb, const void *C, int ldc) {
    return K <= HPDL_QUANT_MAX_K && za >= HPDL_QUANT_QMIN && za <= HPDL_QUANT_QMAX && zb >= HPDL_QUANT_QMIN &&
           zb <= HPDL_QUANT_QMAX && hpdl__check_matrix(A, M, K, lda) == HPDL_OK &&
           hpdl__check_matrix(B, K, N, ldb) == HPDL_OK && hpdl__check_matrix(C, M, N, ldc) == HPDL_OK;
}

/* C (M x N, int32) = (A - za)(B - zb): A is M x K, B is K x N, row-major
   with leading dimensions, like hpdl_gemm. Exact for K <= HPDL_QUANT_MAX_K. */
HPDL_API hpdl_status hpdl_quant_gemm_i8(int M, int N, int K, const int8_t *A, int lda, int32_t za,
                                        const int8_t *B, int ldb, int32_t zb, int32_t *C, int ldc) {
    int i, j;
    if (!hpdl__gemm_i8_valid(M, N, K, A, lda, za, B, ldb, zb, C, ldc)) return HPDL_ERR_INVALID;
    for (i = 0; i < M; i++)
        for (j = 0; j < N; j++) C[(int64_t)i * ldc + j] = hpdl__dot_i8(K, A + (int64_t)i * lda, za, B + j, ldb, zb);
    return HPDL_OK;
}

/* What happens to the int32 accumulators of a quantized layer. */
typedef struct hpdl_quant_output {
    const int32_t *bias;       /* N int32 biases (hpdl_quant_bias_f32), or NULL */
    const int32_t *multiplier; /* M0: N entries when per_channel, else 1 */
    const int *shift;          /* likewise */
    int per_channel;
    int32_t zero_point;        /* of the int8 output */
    int relu;                  /* fused ReLU: clamp below at zero_point */
} hpdl_quant_output;

static inline int hpdl__quant_output_valid(const hpdl_quant_output *o, int N) {
    int j;
    if (!o || !o->multiplier || !o->shift || o->zero_point < HPDL_QUANT_QMIN || o->zero_point > HPDL_QUANT_QMAX)
        return 0;
    for (j = 0; j < (o->per_channel ? N : 1); j++)
        if (!hpdl__multiplier_valid(o->multiplier[j], o->shift[j])) return 0;
    return 1;
}

/* The integer-only layer: C = requantize((A - za)(B - zb) + bias) as int8.
   The bias is added in 64 bits and the sum saturated to int32 before the
   fixed-point multiply; output channel j uses multiplier[j], shift[j] when
   per_channel. Weights with per-channel parameters must be symmetric (one
   scalar zb = 0). */
HPDL_API hpdl_status hpdl_quant_gemm_requant_i8(int M, int N, int K, const int8_t *A, int lda, int32_t za,
                                                const int8_t *B, int ldb, int32_t zb, const hpdl_quant_output *o,
                                                int8_t *C, int ldc) {
    int i, j;
    int32_t lo;
    if (!hpdl__gemm_i8_valid(M, N, K, A, lda, za, B, ldb, zb, C, ldc) || !hpdl__quant_output_valid(o, N))
        return HPDL_ERR_INVALID;
    lo = o->relu ? o->zero_point : HPDL_QUANT_QMIN;
    for (i = 0; i < M; i++)
        for (j = 0; j < N; j++) {
            int64_t acc = hpdl__dot_i8(K, A + (int64_t)i * lda, za, B + j, ldb, zb);
            int c = o->per_channel ? j : 0;
            if (o->bias) acc += o->bias[j];
            acc = acc < INT32_MIN ? INT32_MIN : acc > INT32_MAX ? INT32_MAX : acc;
            C[(int64_t)i * ldc + j] = hpdl__requantize((int32_t)acc, o->multiplier[c], o->shift[c], o->zero_point, lo);
        }
    return HPDL_OK;
}

/* ---- calibration of activation ranges ------------------------------------------- */

/* Observes sample batches and keeps the running min/max and a histogram for
   percentile ranges. The histogram covers [-R, R] with `bins` bins (even),
   where R starts as the first non-zero max |x| seen and doubles when a later
   batch goes beyond it; doubling merges bins pairwise outwards from 0, so no
   count is ever split or lost. Percentiles are therefore exact to one bin
   width, 2R/bins. */
typedef struct hpdl_quant_calib {
    double min, max;  /* running range (valid once count > 0) */
    int64_t count;    /* values observed */
    int bins;         /* 2 * half */
    double range;     /* R; 0 while only zeros were seen */
    int64_t *hist;    /* bins counts: [0, half) negative side, [half, bins) positive */
} hpdl_quant_calib;

HPDL_API hpdl_status hpdl_quant_calib_init(hpdl_quant_calib *c, int bins) {
    if (!c || bins < 2 || bins % 2) return HPDL_ERR_INVALID;
    c->hist = (int64_t *)hpdl_alloc((size_t)bins, sizeof *c->hist);
    if (!c->hist) return HPDL_ERR_NOMEM;
    memset(c->hist, 0, (size_t)bins * sizeof *c->hist);
    c->bins = bins;
    c->min = HUGE_VAL;
    c->max = -HUGE_VAL;
    c->count = 0;
    c->range = 0.0;
    return HPDL_OK;
}

HPDL_API void hpdl_quant_calib_free(hpdl_quant_calib *c) {
    if (!c) return;
    HPDL_FREE(c->hist);
    c->hist = NULL;
}

/* Halves the resolution on each side: side bin j (counted from 0 outwards)
   becomes side bin j/2. */
static inline void hpdl__calib_double_range(hpdl_quant_calib *c) {
    int half = c->bins / 2, j;
    int64_t *neg = c->hist, *pos = c->hist + half;
    for (j = 0; j < half; j++) { /* side bin j lives at pos[j] and neg[half-1-j] */
        int64_t p = 2 * j < half ? pos[2 * j] + (2 * j + 1 < half ? pos[2 * j + 1] : 0) : 0;
        int64_t n = 2 * j < half ? neg[half - 1 - 2 * j] + (2 * j + 1 < half ? neg[half - 2 - 2 * j] : 0) : 0;
        pos[j] = p;
        neg[half - 1 - j] = n;
    }
    c->range *= 2.0;
}

static inline int hpdl__calib_bin(const hpdl_quant_calib *c, double v) {
    int half = c->bins / 2;
    int side = c->range > 0.0 ? (int)(fabs(v) / c->range * half) : 0;
    if (side >= half) side = half - 1; /* v == +-R */
    return v < 0.0 ? half - 1 - side : half + side;
}

/* Adds n values (a batch); infinite or NaN values are refused
   (HPDL_ERR_NUMERIC) before anything changes. */
HPDL_API hpdl_status hpdl_quant_calib_observe_f32(hpdl_quant_calib *c, const float *x, int64_t n) {
    double lo, hi, amax;
    int64_t i;
    if (!c || !c->hist || !x || n < 0) return HPDL_ERR_INVALID;
    if (n == 0) return HPDL_OK;
    if (!hpdl__minmax_f32(x, n, 1, &lo, &hi) || !(fabs(lo) <= DBL_MAX) || !(fabs(hi) <= DBL_MAX))
        return HPDL_ERR_NUMERIC;
    amax = -lo > hi ? -lo : hi;
    if (c->range == 0.0 && amax > 0.0) c->range = amax; /* earlier values were all 0: bin unchanged */
    while (c->range < amax) hpdl__calib_double_range(c);
    for (i = 0; i < n; i++) c->hist[hpdl__calib_bin(c, x[i])]++;
    if (lo < c->min) c->min = lo;
    if (hi > c->max) c->max = hi;
    c->count += n;
    return HPDL_OK;
}

/* The observed range; HPDL_ERR_INVALID when nothing was observed. */
HPDL_API hpdl_status hpdl_quant_calib_minmax(const hpdl_quant_calib *c, double *min, double *max) {
    if (!c || !min || !max || c->count <= 0) return HPDL_ERR_INVALID;
    *min = c->min;
    *max = c->max;
    return HPDL_OK;
}

/* The value below which a fraction q of the observations lie, interpolating
   linearly inside the bin where the cumulative count crosses q * count. */
static inline double hpdl__calib_quantile(const hpdl_quant_calib *c, double q) {
    double target = q * (double)c->count, width = 2.0 * c->range / c->bins, below = 0.0, v;
    int i;
    for (i = 0; i < c->bins; i++) {
        if (c->hist[i] > 0 && below + (double)c->hist[i] >= target) break;
        below += (double)c->hist[i];
    }
    if (i == c->bins) i = c->bins - 1;
    v = -c->range + width * (i + (target - below) / (double)(c->hist[i] > 0 ? c->hist[i] : 1));
    return v < c->min ? c->min : v > c->max ? c->max : v;
}

/* Percentile range: lo = the (100 - pct)th percentile, hi = the pct-th
   (pct in [50, 100]; 99.99 is a common choice to clip outliers), exact to a
   bin width and kept within [min, max]. */
HPDL_API hpdl_status hpdl_quant_calib_percentile(const hpdl_quant_calib *c, double pct, double *lo, double *hi) {
    if (!c || !c->hist || !lo || !hi || c->count <= 0 || !(pct >= 50.0 && pct <= 100.0)) return HPDL_ERR_INVALID;
    *lo = hpdl__calib_quantile(c, 1.0 - pct / 100.0);
    *hi = hpdl__calib_quantile(c, pct / 100.0);
    return HPDL_OK;
}

/* ---- histograms of weights and activations --------------------------------------- */

/* Fixed-range histogram: `bins` equal bins over [lo, hi]; values outside
   are counted in the first or last bin, so the counts always sum to the
   number of values added (`clipped` says how many were outside). */
typedef struct hpdl_quant_hist {
    double lo, hi;
    int bins;
    int64_t *counts;
    int64_t total, clipped;
} hpdl_quant_hist;

HPDL_API hpdl_status hpdl_quant_hist_init(hpdl_quant_hist *h, int bins, double lo, double hi) {
    if (!h || bins <= 0 || !(lo < hi) || !(fabs(lo) <= DBL_MAX) || !(fabs(hi) <= DBL_MAX)) return HPDL_ERR_INVALID;
    h->counts = (int64_t *)hpdl_alloc((size_t)bins, sizeof *h->counts);
    if (!h->counts) return HPDL_ERR_NOMEM;
    memset(h->counts, 0, (size_t)bins * sizeof *h->counts);
    h->lo = lo;
    h->hi = hi;
    h->bins = bins;
    h->total = h->clipped = 0;
    return HPDL_OK;
}

HPDL_API void hpdl_quant_hist_free(hpdl_quant_hist *h) {
    if (!h) return;
    HPDL_FREE(h->counts);
    h->counts = NULL;
}

/* NaN values are refused (HPDL_ERR_NUMERIC, nothing counted). */
HPDL_API hpdl_status hpdl_quant_hist_add_f32(hpdl_quant_hist *h, const float *x, int64_t n) {
    int64_t i;
    double scale;
    if (!h || !h->counts || !x || n < 0) return HPDL_ERR_INVALID;
    if (hpdl__has_nan_f32(x, n)) return HPDL_ERR_NUMERIC;
    scale = h->bins / (h->hi - h->lo);
    for (i = 0; i < n; i++) {
        double t = ((double)x[i] - h->lo) * scale;
        int64_t b = t < 0.0 ? 0 : t >= h->bins ? h->bins - 1 : (int64_t)t;
        h->clipped += x[i] < h->lo || x[i] > h->hi;
        h->counts[b]++;
    }
    h->total += n;
    return HPDL_OK;
}

/* CSV with columns bin_lo,bin_hi,count (one row per bin) for gnuplot. */
HPDL_API hpdl_status hpdl_quant_hist_write_csv(const hpdl_quant_hist *h, const char *path) {
    FILE *f;
    int b;
    double width;
    if (!h || !h->counts || !path) return HPDL_ERR_INVALID;
    f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "hpdl: cannot write %s: %s\n", path, strerror(errno));
        return HPDL_ERR_IO;
    }
    width = (h->hi - h->lo) / h->bins;
    fprintf(f, "bin_lo,bin_hi,count\n");
    for (b = 0; b < h->bins; b++)
        fprintf(f, "%.9g,%.9g,%lld\n", h->lo + b * width, h->lo + (b + 1) * width, (long long)h->counts[b]);
    if (fclose(f) != 0) return HPDL_ERR_IO;
    return HPDL_OK;
}
