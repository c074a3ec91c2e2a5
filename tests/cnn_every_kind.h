/* The test network with every CNN layer kind, shared by tests/test_cnn.c
   and tests/gpu_cnn.cu: on 2 x 6 x 6 images, 3 classes,
   conv -> bn -> relu -> [conv -> bn] + shortcut -> relu -> maxpool
   -> avgpool -> conv -> global avgpool -> linear -> linear.
   first_bias: whether the first conv has a bias. Batch norm follows it, so
   that bias's gradient is zero: fine for finite differences, but a CPU/GPU
   comparison would compare the two sides' rounding noise. */
#ifndef HPDL_TEST_CNN_EVERY_KIND_H
#define HPDL_TEST_CNN_EVERY_KIND_H

#include "hpdl.h"

static hpdl_status every_kind(hpdl_cnn *net, hpdl_layout layout, int first_bias) {
    hpdl_cnn_layer l[13];
    l[0] = hpdl_cnn_conv(4, 3, 1, 1, first_bias);
    l[1] = hpdl_cnn_simple(HPDL_CNN_BATCHNORM);
    l[2] = hpdl_cnn_simple(HPDL_CNN_RELU);
    l[3] = hpdl_cnn_conv(4, 3, 1, 1, 0);
    l[4] = hpdl_cnn_simple(HPDL_CNN_BATCHNORM);
    l[5] = hpdl_cnn_add(4, 2);
    l[6] = hpdl_cnn_simple(HPDL_CNN_RELU);
    l[7] = hpdl_cnn_pool(HPDL_CNN_MAXPOOL, 2, 2, 0);
    l[8] = hpdl_cnn_pool(HPDL_CNN_AVGPOOL, 2, 1, 0);
    l[9] = hpdl_cnn_conv(5, 1, 1, 0, 1);
    l[10] = hpdl_cnn_simple(HPDL_CNN_GLOBAL_AVGPOOL);
    l[11] = hpdl_cnn_linear(6);
    l[12] = hpdl_cnn_linear(3);
    return hpdl_cnn_define(net, 13, l, hpdl_shape_make(2, 6, 6), layout);
}

#endif
