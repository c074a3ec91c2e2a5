/* hpdl.h - v0.3.0 - high-performance deep learning kernels, portable C99 part.

   SPDX-License-Identifier: MIT
   Copyright (c) 2026 the hpdl authors

   Permission is hereby granted, free of charge, to any person obtaining a
   copy of this software and associated documentation files (the
   "Software"), to deal in the Software without restriction, including
   without limitation the rights to use, copy, modify, merge, publish,
   distribute, sublicense, and/or sell copies of the Software, and to permit
   persons to whom the Software is furnished to do so, subject to the
   following conditions: The above copyright notice and this permission
   notice shall be included in all copies or substantial portions of the
   Software. THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND,
   EXPRESS OR IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF
   MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN
   NO EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM,
   DAMAGES OR OTHER LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR
   OTHERWISE, ARISING FROM, OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE
   USE OR OTHER DEALINGS IN THE SOFTWARE.

   hpdl is three headers: hpdl.h (this one: portable C99, libc only),
   hpdl_cuda.cuh (CUDA kernels, built on this one) and hpdl_mpi.h (MPI and
   NCCL helpers). Copy them next to your code and include what you need.

   USAGE (C)
       #include "hpdl.h"
       float a[3] = {1, 2, 3}, b[3] = {4, 5, 6}, c[3];
       if (hpdl_vec_add_f32(3, a, b, c) != HPDL_OK) { ... }
       cc -std=c99 -O2 prog.c -lm

   USAGE (CUDA)
       #include "hpdl_cuda.cuh"            // includes hpdl.h
       if (!hpdl_cuda_available()) { ... }  // no CUDA GPU (or no driver)
       HPDL_CUDA_CHECK(cudaMalloc(&d_a, bytes));
       hpdl_cuda_gemm_f32(...);            // see hpdl_cuda.cuh
       nvcc -O3 -arch=native prog.cu -lcublas

   USAGE (MPI)
       #include "hpdl_mpi.h"               // includes hpdl.h (+ hpdl_cuda.cuh under nvcc)
       HPDL_CHECK(hpdl_mpi_init(&argc, &argv));
       HPDL_MPI_CHECK_STATUS(hpdl_mpi_allreduce_f32(buf, n, HPDL_ALLREDUCE_RING, MPI_COMM_WORLD));
       HPDL_CHECK(hpdl_mpi_finalize());
       mpicc -std=c99 -O2 prog.c -lm && mpirun --oversubscribe -np 4 ./a.out
       (as root, Open MPI also wants OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1)

   OPTIONS (define before including)
       HPDL_MALLOC(n) / HPDL_FREE(p)  replace malloc/free (define both or neither)
       HPDL_API                       linkage of every function (default: static inline)
       HPDL_NO_NVTX                   compile NVTX ranges out of hpdl_cuda.cuh
       HPDL_USE_NCCL                  enable the NCCL allreduce in hpdl_mpi.h

   The timer reads the wall clock whatever the include order: POSIX
   clock_gettime(CLOCK_MONOTONIC) where libc declares it (hpdl.h asks for it
   when included first), else C11 timespec_get, else gettimeofday.

   CONTENTS (search for the section's banner)
       section                        GPU kernels (hpdl_cuda.cuh)   test                          notes
       Status codes ... CSV output    checks, buffers, timers       tests/test_core.c             -
       Vectors                        VECTOR ADD                    tests/test_kernels.c          notes/vecadd.md
       GEMM                           GEMM (ladder, Hopper rungs)   tests/test_kernels.c          notes/gemm.md
       Convolution                    Convolution                   tests/test_conv.c             -
       Matrix power                   SEVERAL GPUS                  tests/test_kernels.c          notes/multi.md
       Activations, Softmax           MLP TRAINING                  tests/test_mlp.c              -
       Command line (numbers, flags)  -                             tests/test_robust.c, test_cli.c -
       MLP                            MLP TRAINING                  tests/test_mlp.c              notes/mlp.md
       Optimisers, schedules          OPTIMISERS                    tests/test_optim.c            -
       IDX data sets                  (hpdl_cuda_dataset)           tests/test_idx.c, test_cifar.c -
       Checkpoints                    -                             tests/test_checkpoint.c       notes/checkpoint.md
       Performance models             -                             tests/test_paleo.c            notes/paleo.md
       Layer -> device placement      SEVERAL GPUS                  tests/test_placement.c        notes/multi.md
       CNN (networks as data)         CNN TRAINING                  tests/test_cnn.c              -
       int8 quantization              INT8 QUANTIZATION             tests/test_quant*.c           notes/quant.md
       FP8 (e4m3, e5m2)               FP8                           tests/test_fp8.c              notes/fp8.md
       FP8 training (MLP)             FP8 (hpdl_cuda_mlp_*_fp8)     tests/test_fp8_train.c        notes/fp8.md
       Every GPU kernel's CPU twin has the GPU function's name without
       "cuda_"; benches are in bench/ under the task's name.

   MAP (every public function; <t> is f32, f64, f16 or bf16 where it
   exists; scripts/api_map.py check keeps it complete)
   docs/API.md spells out each name (hpdl_gemm_f32, ...) with its signature and contract.
       basics: status, allocation, f16/bf16/e4m3/e5m2, RNG, timer, statistics, time to accuracy, matrix views, CSV
         void * hpdl_alloc(count, size)
         hpdl_bf16 hpdl_bf16_from_f32(f)
         float hpdl_bf16_to_f32(b)
         hpdl_status hpdl_csv_commit(c)
         hpdl_status hpdl_csv_context_make(argc, argv, device, out, size)
         hpdl_status hpdl_csv_create(c, default_dir, name, header)
         void hpdl_csv_discard(c)
         FILE * hpdl_csv_open(default_dir, name)
         FILE * hpdl_csv_open_with_header(default_dir, name, header)
         void hpdl_csv_row(f, metric, value, unit, anchor, anchor_value, higher_is_better)
         void hpdl_csv_set_context(text)
         void hpdl_csv_set_dir(dir)
         hpdl_e4m3 hpdl_e4m3_from_f32(f)
         float hpdl_e4m3_to_f32(q)
         hpdl_e5m2 hpdl_e5m2_from_f32(f)
         float hpdl_e5m2_to_f32(q)
         hpdl_f16 hpdl_f16_from_f32(f)
         float hpdl_f16_to_f32(h)
         hpdl_status hpdl_mat_check_<t>(m)
         hpdl_mat_<t> hpdl_mat_view_<t>(data, rows, cols, ld)
         uint64_t hpdl_rng_below(r, n)
         double hpdl_rng_normal(r)
         void hpdl_rng_seed(r, seed)
         void hpdl_rng_shuffle_index(r, idx, n)
         uint64_t hpdl_rng_u64(r)
         double hpdl_rng_uniform(r)
         hpdl_status hpdl_stats_compute(x, n, out)
         const char * hpdl_status_string(s)
         double hpdl_time_now()
         hpdl_status hpdl_tta_csv_rows(f, runs, n)
         hpdl_status hpdl_tta_summary(runs, n, reached, epochs, seconds)
       command line
         hpdl_status hpdl_arg_f64(flag, text, min, max, out)
         hpdl_status hpdl_arg_i64(flag, text, min, max, out)
         hpdl_status hpdl_arg_int(flag, text, min, max, out)
         hpdl_status hpdl_arg_int_list(flag, text, min, max, out, capacity, count)
         hpdl_cli_option hpdl_cli_choice(name, short_name, value, choices, help)
         hpdl_cli_option hpdl_cli_f64(name, short_name, value, min, max, help)
         hpdl_cli_option hpdl_cli_flag(name, short_name, on, help)
         hpdl_cli_option hpdl_cli_i64(name, short_name, value, min, max, help)
         hpdl_cli_option hpdl_cli_int(name, short_name, value, min, max, help)
         void hpdl_cli_parse(argc, argv, program, summary, opt, n)
         hpdl_cli_option hpdl_cli_positional(o)
         int hpdl_cli_scan(argc, argv, program, summary, opt, n, out)
         hpdl_cli_option hpdl_cli_string(name, short_name, value, meta, help)
       vector ops
         hpdl_status hpdl_vec_add_<t>(n, a, b, c)
         hpdl_status hpdl_vec_axpy_<t>(n, alpha, x, y)
       GEMM
         hpdl_status hpdl_gemm_<t>(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)
       convolution, pooling, batch norm
         hpdl_status hpdl_avgpool2d_backward_<t>(p, yd, dy, xd, dx)
         hpdl_status hpdl_avgpool2d_forward_<t>(p, xd, x, yd, y)
         hpdl_status hpdl_batchnorm_backward_<t>(xd, x, dy, gamma, save_mean, save_invstd, dx, dgamma,
                        dbeta)
         hpdl_status hpdl_batchnorm_forward_inference_<t>(xd, x, gamma, beta, running_mean, running_var,
                        eps, y)
         hpdl_status hpdl_batchnorm_forward_training_<t>(xd, x, gamma, beta, momentum, eps, running_mean,
                        running_var, y, save_mean, save_invstd)
         hpdl_status hpdl_conv2d_backward_data_<t>(p, yd, dy, w, xd, dx)
         hpdl_status hpdl_conv2d_backward_filter_<t>(p, xd, x, yd, dy, dw)
         hpdl_status hpdl_conv2d_bias_add_<t>(yd, y, bias)
         hpdl_status hpdl_conv2d_bias_grad_<t>(yd, dy, dbias)
         hpdl_status hpdl_conv2d_filter_desc(p, x, k, w)
         hpdl_status hpdl_conv2d_forward_<t>(p, xd, x, w, yd, y)
         hpdl_status hpdl_conv2d_output_desc(p, x, k, y)
         hpdl_conv2d_params hpdl_conv2d_params_make(kernel, stride, pad, dilation, groups)
         int hpdl_conv_output_size(in, kernel, stride, pad, dilation)
         hpdl_status hpdl_global_avgpool_backward_<t>(xd, dy, dx)
         hpdl_status hpdl_global_avgpool_forward_<t>(xd, x, y)
         hpdl_status hpdl_layer_conv2d(l, name, in, out_c, k, stride, pad, groups, bias)
         hpdl_status hpdl_layer_pool(l, name, kind, in, k, stride, pad, ceil_mode)
         hpdl_status hpdl_maxpool2d_backward_<t>(p, xd, x, yd, dy, dx)
         hpdl_status hpdl_maxpool2d_forward_<t>(p, xd, x, yd, y)
         hpdl_status hpdl_pool2d_output_desc(p, x, y)
         hpdl_pool2d_params hpdl_pool2d_params_make(kernel, stride, pad)
         size_t hpdl_tensor4_count(d)
         hpdl_tensor4 hpdl_tensor4_make(n, c, h, w, layout)
         size_t hpdl_tensor4_offset(d, n, c, h, w)
       matrix power
         hpdl_status hpdl_matpow_<t>(n, power, A, lda, out, ldo)
       activations, softmax + cross-entropy
         hpdl_status hpdl_relu_<t>(n, x, y)
         hpdl_status hpdl_relu_grad_<t>(n, y, dy, dx)
         hpdl_status hpdl_sigmoid_<t>(n, x, y)
         hpdl_status hpdl_sigmoid_grad_<t>(n, y, dy, dx)
         hpdl_status hpdl_softmax_xent_<t>(rows, cols, logits, ld, labels, grad, ldg, loss)
       MLP (the forms without <t>: C++ overloads on the model's type)
         hpdl_status hpdl_mlp_accuracy(m, w, n, X, labels, accuracy)
         hpdl_status hpdl_mlp_accuracy_<t>(m, w, n, X, labels, accuracy)
         hpdl_status hpdl_mlp_backward(m, w, batch, X, labels, grad, loss)
         hpdl_status hpdl_mlp_backward_<t>(m, w, batch, X, labels, grad, loss)
         hpdl_status hpdl_mlp_copy(dst, src)
         hpdl_status hpdl_mlp_copy_<t>(dst, src)
         hpdl_status hpdl_mlp_create(m, n_widths, widths, act, seed)
         hpdl_status hpdl_mlp_create_<t>(m, n_widths, widths, act, seed)
         hpdl_status hpdl_mlp_create_zero(m, n_widths, widths, act)
         hpdl_status hpdl_mlp_create_zero_<t>(m, n_widths, widths, act)
         void hpdl_mlp_destroy(m)
         void hpdl_mlp_destroy_<t>(m)
         hpdl_status hpdl_mlp_forward(m, w, batch, X)
         hpdl_status hpdl_mlp_forward_<t>(m, w, batch, X)
         hpdl_status hpdl_mlp_lars_<t>(m, grad, lr, l2, eta)
         hpdl_status hpdl_mlp_parse_widths(hidden, in, out, widths, n_widths)
         hpdl_status hpdl_mlp_sgd(m, grad, lr, l2)
         hpdl_status hpdl_mlp_sgd_<t>(m, grad, lr, l2)
         hpdl_status hpdl_mlp_train_step(m, w, grad, batch, X, labels, lr, l2, loss)
         hpdl_status hpdl_mlp_train_step_<t>(m, w, grad, batch, X, labels, lr, l2, loss)
         hpdl_status hpdl_mlp_work_create(w, m, max_batch)
         hpdl_status hpdl_mlp_work_create_<t>(w, m, max_batch)
         void hpdl_mlp_work_destroy(w)
         void hpdl_mlp_work_destroy_<t>(w)
         hpdl_status hpdl_quant_mlp_accuracy(q, mode, w, n, X, labels, accuracy)
         hpdl_status hpdl_quant_mlp_build(q, m, n, X, pct)
         hpdl_status hpdl_quant_mlp_forward(q, mode, w, batch, X)
         void hpdl_quant_mlp_free(q)
         hpdl_status hpdl_quant_mlp_layer_output(q, l, out)
         hpdl_status hpdl_quant_mlp_work_create(w, q, max_batch)
         void hpdl_quant_mlp_work_destroy(w)
       optimisers, schedules (the forms without <t>: C++ overloads on the parameters' type)
         hpdl_status hpdl_adamw(n, w, grad, m, v, step, lr, beta1, beta2, eps, weight_decay)
         hpdl_status hpdl_adamw_<t>(n, w, grad, m, v, step, lr, beta1, beta2, eps, weight_decay)
         double hpdl_lr_at(s, step)
         hpdl_status hpdl_lr_parse(text, base_lr, total_steps, out)
         hpdl_status hpdl_lr_schedule_check(s)
         hpdl_status hpdl_sgd_momentum(n, w, grad, velocity, lr, momentum, weight_decay, nesterov)
         hpdl_status hpdl_sgd_momentum_<t>(n, w, grad, velocity, lr, momentum, weight_decay, nesterov)
       int8 quantization
         hpdl_status hpdl_quant_bias_f32(bias, n, input_scale, weight, per_channel, out)
         hpdl_status hpdl_quant_cnn_accuracy(q, n, X, labels, accuracy)
         hpdl_status hpdl_quant_cnn_build(q, net, params, n, X, pct)
         hpdl_status hpdl_quant_cnn_build_backend(q, net, params, n, X, pct, be)
         void hpdl_quant_cnn_free(q)
         hpdl_status hpdl_quant_cnn_logits(q, batch, X, logits)
         void hpdl_quant_calib_free(c)
         hpdl_status hpdl_quant_calib_init(c, bins)
         hpdl_status hpdl_quant_calib_minmax(c, min, max)
         hpdl_status hpdl_quant_calib_observe_f32(c, x, n)
         hpdl_status hpdl_quant_calib_percentile(c, pct, lo, hi)
         hpdl_status hpdl_quant_conv2d_i8(p, xd, x, zx, w, o, yd, y)
         hpdl_status hpdl_quant_dequantize_i8(q, n, p, x)
         hpdl_status hpdl_quant_gemm_i8(M, N, K, A, lda, za, B, ldb, zb, C, ldc)
         hpdl_status hpdl_quant_gemm_requant_i32(M, N, K, A, lda, za, B, ldb, zb, o, C, ldc)
         hpdl_status hpdl_quant_gemm_requant_i8(M, N, K, A, lda, za, B, ldb, zb, o, C, ldc)
         hpdl_status hpdl_quant_hist_add_f32(h, x, n)
         void hpdl_quant_hist_free(h)
         hpdl_status hpdl_quant_hist_init(h, bins, lo, hi)
         hpdl_status hpdl_quant_hist_write_csv(h, path)
         hpdl_status hpdl_quant_layer_multipliers(input_scale, weight, n, output_scale, m0, shift)
         const char * hpdl_quant_mode_name(mode)
         hpdl_status hpdl_quant_multiplier(real, m0, shift)
         hpdl_status hpdl_quant_params_f32(x, n, symmetric, out)
         hpdl_status hpdl_quant_params_from_range(min, max, symmetric, out)
         hpdl_status hpdl_quant_params_per_channel_f32(w, rows, cols, ld, axis, symmetric, out)
         hpdl_status hpdl_quant_quantize_channels_f32(w, rows, cols, ld, axis, p, q, ldq)
         hpdl_status hpdl_quant_quantize_f32(x, n, p, q)
         hpdl_status hpdl_quant_requantize(acc, m0, shift, zero_point, out)
         int32_t hpdl_quant_rounding_divide_by_pot(x, e)
         int32_t hpdl_quant_sat_rounding_doubling_high_mul(a, b)
       FP8 (e4m3, e5m2): per-tensor scaling, GEMM (<t>: f32, f16, bf16)
         hpdl_status hpdl_fp8_amax_f32(x, n, amax)
         hpdl_status hpdl_fp8_cast_e4m3_<t>(x, n, scale, q, amax)
         hpdl_status hpdl_fp8_cast_e5m2_<t>(x, n, scale, q, amax)
         hpdl_status hpdl_fp8_gemm_<t>(M, N, K, A, fa, lda, B, fb, ldb, s, C, ldc, amax)
       FP8 training (f32 MLP, delayed scaling)
         hpdl_status hpdl_fp8_delayed_init(d, format, length, margin)
         hpdl_status hpdl_fp8_delayed_record(d, amax)
         hpdl_status hpdl_fp8_delayed_scale(d, scale)
         hpdl_status hpdl_mlp_fp8_create(s, m, max_batch, history, margin)
         void hpdl_mlp_fp8_destroy(s)
         hpdl_status hpdl_mlp_train_step_fp8_f32(m, w, grad, s, batch, X, labels, lr, l2, loss)
       data
         hpdl_status hpdl_cifar10_load(n_files, paths, out)
         hpdl_status hpdl_cifar10_load_dir(dir, train, out)
         int64_t hpdl_dataset_features(d)
         void hpdl_dataset_free(d)
         hpdl_status hpdl_dataset_feature_stats(d, mean, std)
         hpdl_status hpdl_dataset_normalize(d, mean, std)
         hpdl_status hpdl_dataset_shuffle(d, seed)
         hpdl_status hpdl_dataset_standardize(d, mean, std, min_std)
         hpdl_status hpdl_idx_load(images_path, labels_path, out)
         hpdl_status hpdl_idx_load_dir(dir, train, out)
       checkpoints
         hpdl_status hpdl_ckpt_load(path, model, n, entries)
         hpdl_status hpdl_ckpt_save(path, model, n, entries)
         size_t hpdl_dtype_size(t)
       performance models: FLOPs, PALEO, roofline, allreduce cost
         hpdl_status hpdl_cost_allreduce_one_to_all(n, p, alpha, beta, out)
         hpdl_status hpdl_cost_allreduce_ring(n, p, alpha, beta, out)
         hpdl_status hpdl_cost_allreduce_tree(n, p, alpha, beta, out)
         hpdl_status hpdl_cost_allreduce_utilisation(n, p, seconds, link_bw, out)
         hpdl_status hpdl_layer_add(l, name, a, b)
         hpdl_status hpdl_layer_concat(l, name, n, in)
         hpdl_status hpdl_layer_elementwise(l, name, kind, in)
         hpdl_status hpdl_layer_fc(l, name, in, out_features, bias)
         const char * hpdl_layer_kind_name(kind)
         hpdl_status hpdl_net_alexnet(net, storage, capacity)
         void hpdl_net_free(net)
         hpdl_status hpdl_net_googlenet(net, storage, capacity)
         hpdl_status hpdl_net_print_table(f, net)
         hpdl_status hpdl_net_resnet50(net, storage, capacity)
         hpdl_status hpdl_net_summarize(net, out)
         hpdl_status hpdl_net_vgg16(net, storage, capacity)
         hpdl_status hpdl_net_vgg19(net, storage, capacity)
         hpdl_status hpdl_paleo_device(id, out)
         hpdl_status hpdl_paleo_device_custom(name, peak_f32, peak_f64, mem_bw, out)
         hpdl_status hpdl_paleo_estimate(flops, bytes, peak_flops, mem_bw, ppp, out)
         hpdl_status hpdl_paleo_layer_time(l, batch, dev, prec, ppp, out)
         hpdl_status hpdl_paleo_net_time(net, batch, dev, prec, ppp, out)
         hpdl_status hpdl_paleo_ppp_from_measured(flops, seconds, peak_flops, ppp)
         hpdl_status hpdl_paleo_print_comparison(f, n, phase, predicted_s, measured_s)
         hpdl_status hpdl_roofline_attainable(ai, peak_flops, mem_bw, out)
         hpdl_status hpdl_roofline_combined(ai, peak_flops, pci_bw, mpi_bw, out)
         hpdl_status hpdl_roofline_ridge(peak_flops, mem_bw, out)
         hpdl_shape hpdl_shape_make(c, h, w)
       CNN: networks as data (backends: CPU here, GPU in hpdl_cuda.cuh)
         hpdl_status hpdl_augment_crop_flip(xd, elem_size, x, pad, flip, seed, first_image, y)
         hpdl_status hpdl_cnn_accuracy(r, n, X, labels, accuracy)
         hpdl_cnn_layer hpdl_cnn_add(input, other)
         hpdl_cnn_optimizer hpdl_cnn_adamw(lr, weight_decay)
         const hpdl_cnn_backend * hpdl_cnn_backend_cpu_<t>()
         hpdl_status hpdl_cnn_backward(r, batch, X, labels)
         int hpdl_cnn_ckpt_entries(net, adamw, dtype, params, state, moment1, moment2, steps, e)
         hpdl_status hpdl_cnn_ckpt_model(name, net, layout, precision, out, size)
         hpdl_cnn_layer hpdl_cnn_conv(out_channels, kernel, stride, pad, bias)
         hpdl_status hpdl_cnn_define(net, n_layers, layers, input, layout)
         hpdl_status hpdl_cnn_fold_batchnorm(net, params, state, eps, out, out_params, out_state)
         hpdl_status hpdl_cnn_forward(r, batch, X, training)
         hpdl_status hpdl_cnn_get_params(r, params, state)
         hpdl_status hpdl_cnn_init(net, seed, params, state)
         hpdl_status hpdl_cnn_layer_cost(net, i, batch, elem_size, flops, bytes)
         hpdl_cnn_layer hpdl_cnn_linear(out_features)
         hpdl_status hpdl_cnn_loss(r, loss)
         double hpdl_cnn_param_difference(net, a, b, layer)
         hpdl_cnn_layer hpdl_cnn_pool(op, kernel, stride, pad)
         hpdl_status hpdl_cnn_refresh_work(r)
         hpdl_status hpdl_cnn_resnet18(net, input, classes, layout)
         hpdl_status hpdl_cnn_run_create(r, net, be, max_batch, opt)
         void hpdl_cnn_run_destroy(r)
         hpdl_status hpdl_cnn_set_params(r, params, state)
         hpdl_cnn_optimizer hpdl_cnn_sgd(lr, momentum, weight_decay)
         hpdl_cnn_layer hpdl_cnn_simple(op)
         hpdl_status hpdl_cnn_small(net, input, classes, layout)
         hpdl_status hpdl_cnn_train_step(r, batch, X, labels)
         hpdl_status hpdl_cnn_update(r)
       placement
         hpdl_status hpdl_place_balanced(n_layers, cost, n_devices, first)
         hpdl_status hpdl_place_even(n_layers, n_devices, first)
         hpdl_status hpdl_place_from_map(n_layers, device_of_layer, n_devices, first)

   CHANGELOG
       CHANGELOG.md; this version: v0.3.0 (2026-11-26): CNNs as data, optimisers, checkpoints, CIFAR-10 loader, CLI parser
*/
#ifndef HPDL_H
#define HPDL_H

#if !defined(_POSIX_C_SOURCE) && !defined(_WIN32)
#define _POSIX_C_SOURCE 200809L
#endif

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
/* Under -std=c99, a system header included before hpdl.h fixes the feature
   macros without POSIX: no clock_gettime, and no C11 timespec_get. Unix's
   <sys/time.h> still declares gettimeofday. */
#if !defined(CLOCK_MONOTONIC) && !defined(TIME_UTC) && (defined(__unix__) || defined(__APPLE__))
#include <sys/time.h>
#define HPDL__TIME_GETTIMEOFDAY
#endif

/* One version for hpdl.h, hpdl_cuda.cuh and hpdl_mpi.h (each names it on its first line). */
#define HPDL_VERSION_MAJOR 0
#define HPDL_VERSION_MINOR 3
#define HPDL_VERSION_PATCH 0
#define HPDL_VERSION "0.3.0"

/* ------------------------------------------------------------------------ */
/* Linkage, restrict, host/device                                            */
/* ------------------------------------------------------------------------ */

/* static inline: each translation unit gets its own copy, so including the
   header from two files of one program links, and unused functions do not
   warn under -Wall. */
#ifndef HPDL_API
#define HPDL_API static inline
#endif

#if defined(__cplusplus) || defined(__CUDACC__)
#define HPDL_RESTRICT __restrict__
#else
#define HPDL_RESTRICT restrict
#endif

/* Functions that CUDA kernels also call (conversions) are host+device. */
#ifdef __CUDACC__
#define HPDL_HD __host__ __device__
#else
#define HPDL_HD
#endif

/* ------------------------------------------------------------------------ */
/* Status codes                                                              */
/* ------------------------------------------------------------------------ */

/* Status codes the library's functions return: HPDL_OK (0) on success, else the kind of failure. */
typedef enum hpdl_status {
    HPDL_OK = 0,
    HPDL_ERR_INVALID,     /* bad argument: NULL, negative size, ld < cols, ... */
    HPDL_ERR_NOMEM,       /* allocation failed */
    HPDL_ERR_IO,          /* a file could not be opened or read */
    HPDL_ERR_FORMAT,      /* a file's content is not what was expected */
    HPDL_ERR_CUDA,        /* a CUDA runtime or library call failed */
    HPDL_ERR_MPI,         /* an MPI call failed */
    HPDL_ERR_NCCL,        /* an NCCL call failed */
    HPDL_ERR_UNSUPPORTED, /* valid request that this build or device cannot do */
    HPDL_ERR_NUMERIC,     /* a result is not finite (NaN or inf) */
    HPDL_ERR_MISMATCH     /* a valid checkpoint of another model */
} hpdl_status;

/* A short description of s in English (static storage, never NULL); "unknown status" for a value
   that is not a hpdl_status. */
HPDL_API const char *hpdl_status_string(hpdl_status s) {
    switch (s) {
    case HPDL_OK: return "ok";
    case HPDL_ERR_INVALID: return "invalid argument";
    case HPDL_ERR_NOMEM: return "out of memory";
    case HPDL_ERR_IO: return "input/output error";
    case HPDL_ERR_FORMAT: return "bad file format";
    case HPDL_ERR_CUDA: return "CUDA error";
    case HPDL_ERR_MPI: return "MPI error";
    case HPDL_ERR_NCCL: return "NCCL error";
    case HPDL_ERR_UNSUPPORTED: return "unsupported";
    case HPDL_ERR_NUMERIC: return "non-finite value";
    case HPDL_ERR_MISMATCH: return "checkpoint of another model";
    }
    return "unknown status";
}

/* Examples and benches stop on the first error; library code returns it. */
#define HPDL_CHECK(call)                                                      \
    do {                                                                      \
        hpdl_status hpdl__s = (call);                                         \
        if (hpdl__s != HPDL_OK) {                                             \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__,     \
                    #call, hpdl_status_string(hpdl__s));                      \
            exit(EXIT_FAILURE);                                               \
        }                                                                     \
    } while (0)

/* ------------------------------------------------------------------------ */
/* Allocation hooks                                                          */
/* ------------------------------------------------------------------------ */

#if defined(HPDL_MALLOC) && !defined(HPDL_FREE)
#error "hpdl: define HPDL_FREE together with HPDL_MALLOC"
#elif !defined(HPDL_MALLOC) && defined(HPDL_FREE)
#error "hpdl: define HPDL_MALLOC together with HPDL_FREE"
#elif !defined(HPDL_MALLOC)
#define HPDL_MALLOC(n) malloc(n)
#define HPDL_FREE(p) free(p)
#endif

/* Allocates count*size bytes, refusing sizes that overflow size_t. */
HPDL_API void *hpdl_alloc(size_t count, size_t size) {
    if (size != 0 && count > (size_t)-1 / size) return NULL;
    return HPDL_MALLOC(count * size > 0 ? count * size : 1);
}

/* ------------------------------------------------------------------------ */
/* Half precision storage types                                              */
/* ------------------------------------------------------------------------ */

/* 16-bit storage; arithmetic converts to float. A struct, not a bare
   uint16_t, so that the compiler refuses to mix f16, bf16 and integers.
   hpdl_cuda.cuh reinterprets these as __half / __nv_bfloat16 (same bits). */
typedef struct hpdl_f16 { uint16_t bits; } hpdl_f16;
/* bfloat16: the top 16 bits of an IEEE float (8 exponent bits, 7 mantissa bits). */
typedef struct hpdl_bf16 { uint16_t bits; } hpdl_bf16;

HPDL_HD static inline uint32_t hpdl__f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

HPDL_HD static inline float hpdl__f32_from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Rounds the integer m right by s bits, to nearest, ties to even. */
HPDL_HD static inline uint32_t hpdl__shift_rne(uint32_t m, unsigned s) {
    uint32_t kept, rest, half;
    if (s == 0) return m;
    if (s > 31) return 0;
    kept = m >> s;
    rest = m & ((1u << s) - 1u);
    half = 1u << (s - 1u);
    if (rest > half || (rest == half && (kept & 1u))) kept++;
    return kept;
}

/* The f16 nearest to f, ties to even: overflow becomes +-inf, values too small for a subnormal
   become +-0, NaN stays a quiet NaN. */
HPDL_HD static inline hpdl_f16 hpdl_f16_from_f32(float f) {
    uint32_t u = hpdl__f32_bits(f);
    uint32_t sign = (u >> 16) & 0x8000u;
    int32_t exp = (int32_t)((u >> 23) & 0xffu);
    uint32_t man = u & 0x7fffffu;
    hpdl_f16 h;
    if (exp == 0xff) { /* inf stays inf; NaN stays a quiet NaN */
        h.bits = (uint16_t)(sign | 0x7c00u | (man ? 0x200u | (man >> 13) : 0u));
        return h;
    }
    exp -= 127 - 15; /* rebias */
    if (exp >= 0x1f) { h.bits = (uint16_t)(sign | 0x7c00u); return h; }
    if (exp <= 0) {
        /* subnormal half (or zero): value = m * 2^-24, with the implicit 1 */
        if (exp < -10) { h.bits = (uint16_t)sign; return h; }
        h.bits = (uint16_t)(sign | hpdl__shift_rne(man | 0x800000u, (unsigned)(14 - exp)));
        return h;
    }
    /* normal: rounding may carry into the exponent, which is still right
       (and turns the largest values into inf, as it should) */
    h.bits = (uint16_t)(sign | (((uint32_t)exp << 10) + hpdl__shift_rne(man, 13)));
    return h;
}

/* The exact float value of h (subnormals, infinities and NaN included). */
HPDL_HD static inline float hpdl_f16_to_f32(hpdl_f16 h) {
    uint32_t sign = ((uint32_t)h.bits & 0x8000u) << 16;
    uint32_t exp = ((uint32_t)h.bits >> 10) & 0x1fu;
    uint32_t man = (uint32_t)h.bits & 0x3ffu;
    if (exp == 0x1f) return hpdl__f32_from_bits(sign | 0x7f800000u | (man << 13));
    if (exp == 0) { /* zero or subnormal: exact in float */
        float v = (float)man * 5.9604644775390625e-8f; /* 2^-24 */
        return sign ? -v : v;
    }
    return hpdl__f32_from_bits(sign | ((exp + 127u - 15u) << 23) | (man << 13));
}

/* The bf16 nearest to f, ties to even (overflow rounds to +-inf); NaN stays a quiet NaN. */
HPDL_HD static inline hpdl_bf16 hpdl_bf16_from_f32(float f) {
    uint32_t u = hpdl__f32_bits(f);
    hpdl_bf16 b;
    if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x7fffffu)) {
        b.bits = (uint16_t)((u >> 16) | 0x40u); /* keep NaN a (quiet) NaN */
        return b;
    }
    /* bf16 is the top half of a float: round the low 16 bits away */
    b.bits = (uint16_t)(hpdl__shift_rne(u, 16));
    return b;
}

/* The exact float value of b, whose bits are the float's top 16. */
HPDL_HD static inline float hpdl_bf16_to_f32(hpdl_bf16 b) {
    return hpdl__f32_from_bits((uint32_t)b.bits << 16);
}

/* FP8 storage (the OCP 8-bit floats that Hopper's tensor cores read):
     e4m3: sign, 4 exponent bits (bias 7), 3 mantissa bits. No infinities:
           only 0x7f and 0xff are NaN, so the top exponent holds numbers
           too; the largest is 448 (0x7e), the smallest subnormal 2^-9.
     e5m2: sign, 5 exponent bits (bias 15), 2 mantissa bits, IEEE-like:
           inf 0x7c, NaN 0x7d-0x7f; the largest finite 57344 (0x7b), the
           smallest subnormal 2^-16.
   From f32: round to nearest, ties to even, then saturate as the GPU's
   cvt.rn.satfinite does: whatever lies beyond the largest finite value
   after rounding, infinities included, becomes +-max; NaN stays NaN (0x7f
   with the input's sign). To f32: exact. */
typedef struct hpdl_e4m3 { uint8_t bits; } hpdl_e4m3;
/* e5m2 storage: one byte in the layout described above. */
typedef struct hpdl_e5m2 { uint8_t bits; } hpdl_e5m2;

/* The 7 magnitude bits of the 8-bit float nearest to the f32 whose bits
   without the sign are `a` (not NaN): `man` mantissa bits, exponent bias
   `bias`, saturated at the code max_code. */
HPDL_HD static inline uint32_t hpdl__fp8_magnitude(uint32_t a, unsigned man, int bias, uint32_t max_code) {
    int32_t exp = (int32_t)(a >> 23) - 127 + bias; /* the exponent field it would have */
    uint32_t m = a & 0x7fffffu, code;
    if (exp >= 1) /* normal: a carry out of the mantissa moves into the exponent, as it should */
        code = ((uint32_t)exp << man) + hpdl__shift_rne(m, 23u - man);
    else /* subnormal (or zero): in units of 2^(1 - bias - man), with the implicit 1 */
        code = hpdl__shift_rne(m | 0x800000u, (unsigned)(24 - (int)man - exp));
    return code > max_code ? max_code : code;
}

/* The value of magnitude bits `code` (a number, not inf or NaN). */
HPDL_HD static inline float hpdl__fp8_value(uint32_t code, unsigned man, int bias) {
    uint32_t exp = code >> man, m = code & ((1u << man) - 1u);
    if (exp == 0) /* subnormal: m * 2^(1 - bias - man), exact in float */
        return (float)m * hpdl__f32_from_bits((uint32_t)(128 - bias - (int)man) << 23);
    return hpdl__f32_from_bits(((exp + 127u - (uint32_t)bias) << 23) | (m << (23u - man)));
}

/* The e4m3 nearest to f (ties to even), saturated at +-448; NaN: 0x7f. */
HPDL_HD static inline hpdl_e4m3 hpdl_e4m3_from_f32(float f) {
    uint32_t u = hpdl__f32_bits(f), a = u & 0x7fffffffu;
    hpdl_e4m3 q;
    q.bits = (uint8_t)(((u >> 24) & 0x80u) | (a > 0x7f800000u ? 0x7fu : hpdl__fp8_magnitude(a, 3, 7, 0x7eu)));
    return q;
}

/* The exact value of an e4m3. */
HPDL_HD static inline float hpdl_e4m3_to_f32(hpdl_e4m3 q) {
    uint32_t code = q.bits & 0x7fu;
    float v = code == 0x7fu ? hpdl__f32_from_bits(0x7fc00000u) : hpdl__fp8_value(code, 3, 7);
    return q.bits & 0x80u ? -v : v;
}

/* The e5m2 nearest to f (ties to even), saturated at +-57344 (infinities
   too); NaN: 0x7f. */
HPDL_HD static inline hpdl_e5m2 hpdl_e5m2_from_f32(float f) {
    uint32_t u = hpdl__f32_bits(f), a = u & 0x7fffffffu;
    hpdl_e5m2 q;
    q.bits = (uint8_t)(((u >> 24) & 0x80u) | (a > 0x7f800000u ? 0x7fu : hpdl__fp8_magnitude(a, 2, 15, 0x7bu)));
    return q;
}

/* The exact value of an e5m2 (inf and NaN included). */
HPDL_HD static inline float hpdl_e5m2_to_f32(hpdl_e5m2 q) {
    uint32_t code = q.bits & 0x7fu;
    float v = code < 0x7cu ? hpdl__fp8_value(code, 2, 15)
                           : hpdl__f32_from_bits(code == 0x7cu ? 0x7f800000u : 0x7fc00000u); /* inf, NaN */
    return q.bits & 0x80u ? -v : v;
}

/* Load/store adapters the kernel templates take: storage type <-> compute. */
#define HPDL_LOAD_SELF(x) (x)
#define HPDL_STORE_F32(v) ((float)(v))
#define HPDL_STORE_F64(v) ((double)(v))
#define HPDL_LOAD_F16(x) hpdl_f16_to_f32(x)
#define HPDL_STORE_F16(v) hpdl_f16_from_f32((float)(v))
#define HPDL_LOAD_BF16(x) hpdl_bf16_to_f32(x)
#define HPDL_STORE_BF16(v) hpdl_bf16_from_f32((float)(v))

/* ------------------------------------------------------------------------ */
/* Random numbers: xoshiro256** seeded by splitmix64 (reproducible anywhere) */
/* ------------------------------------------------------------------------ */

/* xoshiro256** state (256 bits); set it with hpdl_rng_seed before drawing from it. */
typedef struct hpdl_rng { uint64_t s[4]; } hpdl_rng;

static inline uint64_t hpdl__rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

/* Sets r's state from seed through splitmix64: the same seed gives the same stream everywhere.
   r must not be NULL. */
HPDL_API void hpdl_rng_seed(hpdl_rng *r, uint64_t seed) {
    int i;
    for (i = 0; i < 4; i++) { /* splitmix64: spreads any seed over 256 bits */
        uint64_t z = (seed += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        r->s[i] = z ^ (z >> 31);
    }
}

/* The next 64 random bits of r's stream; advances the state. */
HPDL_API uint64_t hpdl_rng_u64(hpdl_rng *r) {
    uint64_t *s = r->s;
    uint64_t result = hpdl__rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3];
    s[2] ^= t; s[3] = hpdl__rotl(s[3], 45);
    return result;
}

/* Uniform in [0, 1) with 53 random bits. */
HPDL_API double hpdl_rng_uniform(hpdl_rng *r) {
    return (double)(hpdl_rng_u64(r) >> 11) * (1.0 / 9007199254740992.0);
}

/* Uniform integer in [0, n), without modulo bias (Lemire's rejection). */
HPDL_API uint64_t hpdl_rng_below(hpdl_rng *r, uint64_t n) {
    uint64_t x, limit;
    if (n == 0) return 0;
    limit = (uint64_t)0 - ((uint64_t)0 - n) % n; /* largest multiple of n, mod 2^64 */
    do x = hpdl_rng_u64(r); while (limit != 0 && x >= limit);
    return x % n;
}

/* Standard normal by Box-Muller (one value per call, so the stream is simple). */
HPDL_API double hpdl_rng_normal(hpdl_rng *r) {
    double u1 = 1.0 - hpdl_rng_uniform(r); /* (0, 1]: log is finite */
    double u2 = hpdl_rng_uniform(r);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* Fisher-Yates shuffle of an index array. */
HPDL_API void hpdl_rng_shuffle_index(hpdl_rng *r, int32_t *idx, int64_t n) {
    int64_t i;
    for (i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)hpdl_rng_below(r, (uint64_t)i + 1);
        int32_t t = idx[i]; idx[i] = idx[j]; idx[j] = t;
    }
}

/* ------------------------------------------------------------------------ */
/* Monotonic timer                                                           */
/* ------------------------------------------------------------------------ */

/* Wall-clock seconds since an arbitrary fixed point; only differences mean
   anything. */
HPDL_API double hpdl_time_now(void) {
#if defined(CLOCK_MONOTONIC)
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
#elif defined(TIME_UTC)
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
#elif defined(HPDL__TIME_GETTIMEOFDAY)
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec + 1e-6 * (double)tv.tv_usec;
#else
#error "hpdl.h: no wall clock here (no clock_gettime, timespec_get or gettimeofday): compile as C11 or later"
#endif
}

/* ------------------------------------------------------------------------ */
/* Statistics over repeated measurements                                     */
/* ------------------------------------------------------------------------ */

/* Summary of n measurements, as hpdl_stats_compute fills it; cv = stddev / |mean| (0 when the
   mean is 0). */
typedef struct hpdl_stats {
    int64_t n;
    double mean, stddev, cv, median, min, max; /* stddev: sample (n-1) */
} hpdl_stats;

HPDL_API int hpdl__cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Summarises x[0..n); x is left untouched (the median sorts a copy). */
HPDL_API hpdl_status hpdl_stats_compute(const double *x, int64_t n, hpdl_stats *out) {
    double *sorted, sum = 0.0, sq = 0.0;
    int64_t i;
    if (!x || !out || n <= 0) return HPDL_ERR_INVALID;
    sorted = (double *)hpdl_alloc((size_t)n, sizeof *sorted);
    if (!sorted) return HPDL_ERR_NOMEM;
    memcpy(sorted, x, (size_t)n * sizeof *sorted);
    qsort(sorted, (size_t)n, sizeof *sorted, hpdl__cmp_double);
    for (i = 0; i < n; i++) sum += x[i];
    out->n = n;
    out->mean = sum / (double)n;
    for (i = 0; i < n; i++) sq += (x[i] - out->mean) * (x[i] - out->mean);
    out->stddev = n > 1 ? sqrt(sq / (double)(n - 1)) : 0.0;
    out->cv = out->mean != 0.0 ? out->stddev / fabs(out->mean) : 0.0;
    out->median = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
    out->min = sorted[0];
    out->max = sorted[n - 1];
    HPDL_FREE(sorted);
    return HPDL_OK;
}

/* Time to accuracy over seeds: one training run each, stopped at the first
   epoch whose test accuracy reached the target. */
typedef struct hpdl_tta_run {
    uint64_t seed;
    int reached;     /* 1: the target was reached */
    int epochs;      /* epochs trained (to the target when reached) */
    double seconds;  /* training time of those epochs, evaluation excluded */
    double accuracy; /* test accuracy after the last epoch */
} hpdl_tta_run;

#define HPDL_TTA_CSV_HEADER "run,seed,reached,epochs,seconds,test_acc"

/* Epochs and seconds of the runs that reached the target, summarised
   (hpdl_stats_compute: sample standard deviation, cv = std / mean);
   *reached counts them (0: both stats zero). INVALID for NULL pointers or
   n < 1. */
HPDL_API hpdl_status hpdl_tta_summary(const hpdl_tta_run *runs, int n, int *reached, hpdl_stats *epochs,
                                      hpdl_stats *seconds) {
    double *e, *s;
    int i, k = 0;
    hpdl_status st;
    if (!runs || n < 1 || !reached || !epochs || !seconds) return HPDL_ERR_INVALID;
    e = (double *)hpdl_alloc((size_t)n, sizeof *e);
    s = (double *)hpdl_alloc((size_t)n, sizeof *s);
    st = e && s ? HPDL_OK : HPDL_ERR_NOMEM;
    for (i = 0; st == HPDL_OK && i < n; i++)
        if (runs[i].reached) {
            e[k] = runs[i].epochs;
            s[k++] = runs[i].seconds;
        }
    if (st == HPDL_OK) *reached = k;
    if (st == HPDL_OK && k == 0) {
        memset(epochs, 0, sizeof *epochs);
        memset(seconds, 0, sizeof *seconds);
    }
    if (st == HPDL_OK && k > 0) st = hpdl_stats_compute(e, k, epochs);
    if (st == HPDL_OK && k > 0) st = hpdl_stats_compute(s, k, seconds);
    HPDL_FREE(e);
    HPDL_FREE(s);
    return st;
}

/* The rows under HPDL_TTA_CSV_HEADER: one per run (run = its index), then
   "mean", "std" and "cv" rows over the runs that reached the target
   (reached = their count; epochs and seconds summarised, test_acc empty).
   Without any such run the three rows are left out. */
HPDL_API hpdl_status hpdl_tta_csv_rows(FILE *f, const hpdl_tta_run *runs, int n) {
    hpdl_stats e, s;
    int i, reached = 0;
    hpdl_status st;
    if (!f || !runs || n < 1) return HPDL_ERR_INVALID;
    if ((st = hpdl_tta_summary(runs, n, &reached, &e, &s)) != HPDL_OK) return st;
    for (i = 0; i < n; i++)
        fprintf(f, "%d,%llu,%d,%d,%.4f,%.4f\n", i, (unsigned long long)runs[i].seed, runs[i].reached, runs[i].epochs,
                runs[i].seconds, runs[i].accuracy);
    if (reached > 0) {
        fprintf(f, "mean,,%d,%.4f,%.4f,\n", reached, e.mean, s.mean);
        fprintf(f, "std,,%d,%.4f,%.4f,\n", reached, e.stddev, s.stddev);
        fprintf(f, "cv,,%d,%.4f,%.4f,\n", reached, e.cv, s.cv);
    }
    return ferror(f) ? HPDL_ERR_IO : HPDL_OK;
}

/* ------------------------------------------------------------------------ */
/* Row-major matrix views                                                    */
/* ------------------------------------------------------------------------ */

/* Element (i, j) of a view lives at data[i * ld + j]; ld >= cols lets a view
   name a block of a larger matrix without copying. */
#define HPDL_DEFINE_MATRIX(SUFFIX, T)                                          \
    typedef struct hpdl_mat_##SUFFIX { T *data; int rows, cols, ld; } hpdl_mat_##SUFFIX; \
    HPDL_API hpdl_mat_##SUFFIX hpdl_mat_view_##SUFFIX(T *data, int rows, int cols, int ld) { \
        hpdl_mat_##SUFFIX m;                                                   \
        m.data = data; m.rows = rows; m.cols = cols; m.ld = ld;                \
        return m;                                                              \
    }                                                                          \
    HPDL_API hpdl_status hpdl_mat_check_##SUFFIX(hpdl_mat_##SUFFIX m) {        \
        return hpdl__check_matrix(m.data, m.rows, m.cols, m.ld);               \
    }

/* A valid view: non-negative sizes, ld >= cols (and >= 1), data unless empty. */
HPDL_API hpdl_status hpdl__check_matrix(const void *data, int rows, int cols, int ld) {
    if (rows < 0 || cols < 0 || ld < cols || ld < 1) return HPDL_ERR_INVALID;
    if (!data && rows > 0 && cols > 0) return HPDL_ERR_INVALID;
    return HPDL_OK;
}

/* hpdl_mat_view_f32 hpdl_mat_check_f32 */
HPDL_DEFINE_MATRIX(f32, float)
/* hpdl_mat_view_f64 hpdl_mat_check_f64 */
HPDL_DEFINE_MATRIX(f64, double)
/* hpdl_mat_view_f16 hpdl_mat_check_f16 */
HPDL_DEFINE_MATRIX(f16, hpdl_f16)
/* hpdl_mat_view_bf16 hpdl_mat_check_bf16 */
HPDL_DEFINE_MATRIX(bf16, hpdl_bf16)

/* ------------------------------------------------------------------------ */
/* CSV output for benches                                                    */
/* ------------------------------------------------------------------------ */

/* A file name inside a folder: not empty, no '/', not "." or "..". */
static inline int hpdl__plain_name(const char *name) {
    return name && *name && !strchr(name, '/') && strcmp(name, ".") != 0 && strcmp(name, "..") != 0;
}

/* The folder set by hpdl_csv_set_dir (a program's --output), or NULL. */
static inline const char **hpdl__csv_dir_slot(void) {
    static const char *dir = NULL;
    return &dir;
}

/* Where this program's CSV files go, before HPDL_RESULTS: a program's
   --output DIR. NULL or "" goes back to HPDL_RESULTS, else the default. The
   text is not copied (argv's lives long enough). */
HPDL_API void hpdl_csv_set_dir(const char *dir) {
    *hpdl__csv_dir_slot() = dir && *dir ? dir : NULL;
}

/* The run's context (hpdl_csv_set_context), or NULL. */
static inline const char **hpdl__csv_context_slot(void) {
    static const char *context = NULL;
    return &context;
}

/* Text that goes beside every CSV written afterwards, as <name>.context
   (what ran, where and when: hpdl_csv_context_make's lines, or
   hpdl_cuda_csv_context's with the GPU). NULL stops it. Not copied. */
HPDL_API void hpdl_csv_set_context(const char *text) { *hpdl__csv_context_slot() = text; }

/* The context lines into out: the UTC date, the commit (the environment's
   HPDL_COMMIT, which make bench sets; else "unknown"), hpdl's version, the
   device (any text, e.g. the GPU, driver and CUDA version) and the command
   line. INVALID for NULL arguments or a size under 2; a text too long for
   out is cut. */
HPDL_API hpdl_status hpdl_csv_context_make(int argc, char **argv, const char *device, char *out, size_t size) {
    char date[32] = "unknown";
    time_t now = time(NULL);
    const char *commit = getenv("HPDL_COMMIT");
    size_t used;
    int i;
    if (!out || size < 2 || (argc > 0 && !argv) || !device) return HPDL_ERR_INVALID;
    if (now != (time_t)-1) strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    snprintf(out, size, "date: %s\ncommit: %s\nhpdl: %s\ndevice: %s\ncommand:", date,
             commit && *commit ? commit : "unknown", HPDL_VERSION, device);
    for (i = 0; i < argc && (used = strlen(out)) + 2 < size; i++) snprintf(out + used, size - used, " %s", argv[i]);
    used = strlen(out);
    if (used + 1 < size) snprintf(out + used, size - used, "\n");
    return HPDL_OK;
}

/* Writes the context (when set) beside the CSV at csv_path: the same path
   with ".context" for ".csv". Best effort: a failure only says so. */
static inline void hpdl__csv_write_context(const char *csv_path) {
    const char *text = *hpdl__csv_context_slot();
    char path[1040];
    size_t n = strlen(csv_path);
    FILE *f;
    if (!text || n < 4 || n + 5 > sizeof path) return;
    memcpy(path, csv_path, n - 4);
    strcpy(path + n - 4, ".context");
    f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0) fprintf(stderr, "hpdl: cannot write %s\n", path);
}

#if defined(__unix__) || defined(__APPLE__)
#include <sys/stat.h>
#endif

/* The folders above a file's path, made where missing (a program's
   --output DIR need not exist yet); POSIX only: elsewhere they must exist.
   Failures are left to the fopen that follows to report. */
static inline void hpdl__make_parent_dirs(const char *path) {
#if defined(__unix__) || defined(__APPLE__)
    char dir[1100];
    size_t i, n = strlen(path);
    if (n >= sizeof dir) return;
    memcpy(dir, path, n + 1);
    for (i = 1; i < n; i++)
        if (dir[i] == '/') {
            dir[i] = '\0';
            mkdir(dir, 0777); /* EEXIST for the folders already there */
            dir[i] = '/';
        }
#else
    (void)path;
#endif
}

/* <dir>/<name>.csv into path; dir from hpdl_csv_set_dir, else HPDL_RESULTS
   when set, else default_dir, else ".". 0 (with a message) for a name that
   is not plain or a path that does not fit. */
static inline int hpdl__csv_path(const char *default_dir, const char *name, char *path, size_t size) {
    const char *dir = *hpdl__csv_dir_slot();
    int n;
    if (!dir) dir = getenv("HPDL_RESULTS");
    if (!dir || !*dir) dir = default_dir ? default_dir : ".";
    if (!hpdl__plain_name(name)) {
        fprintf(stderr, "hpdl: CSV name '%s' is not a plain file name\n", name ? name : "(null)");
        return 0;
    }
    n = snprintf(path, size, "%s/%s.csv", dir, name);
    if (n < 0 || (size_t)n >= size) {
        fprintf(stderr, "hpdl: %s/%s.csv: path longer than %u bytes\n", dir, name, (unsigned)size - 1);
        return 0;
    }
    return 1;
}

/* Opens <dir>/<name>.csv for writing and writes `header` as its first line.
   dir is hpdl_csv_set_dir's (a program's --output), else the environment
   variable HPDL_RESULTS when set (make bench sets it to results/<gpu>),
   else the given default. NULL for a name
   with '/' or "..", or a path too long. The caller fcloses it; the file is
   written in place, so hpdl_csv_create/_commit are the checked way. */
HPDL_API FILE *hpdl_csv_open_with_header(const char *default_dir, const char *name, const char *header) {
    char path[1024];
    FILE *f;
    if (!header || !hpdl__csv_path(default_dir, name, path, sizeof path)) return NULL;
    hpdl__make_parent_dirs(path);
    f = fopen(path, "w");
    if (!f) { fprintf(stderr, "hpdl: cannot write %s: %s\n", path, strerror(errno)); return NULL; }
    fprintf(f, "%s\n", header);
    hpdl__csv_write_context(path);
    return f;
}

/* The headline CSV every bench writes, read by the README and by CI. */
HPDL_API FILE *hpdl_csv_open(const char *default_dir, const char *name) {
    return hpdl_csv_open_with_header(default_dir, name, "metric,value,unit,anchor,anchor_value,ratio");
}

/* One CSV row. higher_is_better: ratio = value/anchor (rates), otherwise
   anchor/value (times), so a ratio above 1 always means "better". */
HPDL_API void hpdl_csv_row(FILE *f, const char *metric, double value, const char *unit,
                           const char *anchor, double anchor_value, int higher_is_better) {
    double ratio = higher_is_better ? (anchor_value != 0.0 ? value / anchor_value : 0.0)
                                    : (value != 0.0 ? anchor_value / value : 0.0);
    if (!f) return;
    fprintf(f, "%s,%.6g,%s,%s,%.6g,%.4f\n", metric, value, unit, anchor ? anchor : "", anchor_value, ratio);
}

/* A file written whole or not at all: rows go to <path>.tmp, and
   hpdl_csv_commit checks every write and the close before renaming it into
   place, so a full disk or a crash never leaves a truncated <path>. */
typedef struct hpdl_csv_file {
    FILE *f;            /* write rows here (fprintf, hpdl_csv_row) */
    char path[1024];    /* where it lands */
    char tmp[1032];     /* path + ".tmp" while it is written */
} hpdl_csv_file;

/* Like hpdl_csv_open_with_header, into *c (the folder made when missing);
   HPDL_ERR_INVALID for a bad name or a path too long, HPDL_ERR_IO when the
   file cannot be created. */
HPDL_API hpdl_status hpdl_csv_create(hpdl_csv_file *c, const char *default_dir, const char *name, const char *header) {
    hpdl_csv_file made;
    if (!c || !header || !hpdl__csv_path(default_dir, name, made.path, sizeof made.path)) return HPDL_ERR_INVALID;
    snprintf(made.tmp, sizeof made.tmp, "%s.tmp", made.path); /* fits: tmp is 8 bytes longer */
    hpdl__make_parent_dirs(made.tmp);
    made.f = fopen(made.tmp, "w");
    if (!made.f) {
        fprintf(stderr, "hpdl: cannot write %s: %s\n", made.tmp, strerror(errno));
        return HPDL_ERR_IO;
    }
    if (fprintf(made.f, "%s\n", header) < 0) {
        fclose(made.f);
        remove(made.tmp);
        return HPDL_ERR_IO;
    }
    *c = made;
    return HPDL_OK;
}

/* Closes c and renames it into place; on any write, close or rename error,
   HPDL_ERR_IO with the temporary file removed and the old <path> (if any)
   left as it was. */
HPDL_API hpdl_status hpdl_csv_commit(hpdl_csv_file *c) {
    int failed;
    if (!c || !c->f) return HPDL_ERR_INVALID;
    errno = 0;
    failed = ferror(c->f) != 0;
    failed |= fclose(c->f) != 0; /* flushes: a full disk shows up here */
    c->f = NULL;
    if (!failed && rename(c->tmp, c->path) == 0) {
        hpdl__csv_write_context(c->path);
        return HPDL_OK;
    }
    fprintf(stderr, "hpdl: cannot write %s: %s\n", c->path, errno ? strerror(errno) : "write error");
    remove(c->tmp);
    return HPDL_ERR_IO;
}

/* Gives up on c: closes and removes the temporary file. */
HPDL_API void hpdl_csv_discard(hpdl_csv_file *c) {
    if (!c || !c->f) return;
    fclose(c->f);
    c->f = NULL;
    remove(c->tmp);
}

/* ======================================================================== */
/* CPU reference kernels                                                     */
/* ======================================================================== */
/* CPU reference kernels: vectors, GEMM, matrix power,
   activations, softmax cross-entropy, the MLP, and the IDX (MNIST) loader.

   Each family is a macro HPDL_DEFINE_<FAMILY>(SUFFIX, T, ACC_T, LOAD, STORE)
   that generates hpdl_<op>_<SUFFIX> for storage type T, computing in ACC_T.
   ACC_T must be one token (float, double, or a typedef) because the shared
   GEMM core is named after it (hpdl__gemm_blocked_float, ..._double). To add
   a type, instantiate every family for it, as HPDL_FOR_EACH_FLOAT_TYPE does. */

/* Instantiates a family for the four standard types. */
#define HPDL_FOR_EACH_FLOAT_TYPE(DEFINE)                                      \
    DEFINE(f32, float, float, HPDL_LOAD_SELF, HPDL_STORE_F32)                 \
    DEFINE(f64, double, double, HPDL_LOAD_SELF, HPDL_STORE_F64)               \
    DEFINE(f16, hpdl_f16, float, HPDL_LOAD_F16, HPDL_STORE_F16)               \
    DEFINE(bf16, hpdl_bf16, float, HPDL_LOAD_BF16, HPDL_STORE_BF16)

/* How a GEMM reads an operand: as stored (HPDL_NO_TRANS) or transposed (HPDL_TRANS). */
typedef enum hpdl_transpose { HPDL_NO_TRANS = 0, HPDL_TRANS = 1 } hpdl_transpose;
/* Activation of the MLP's hidden layers: sigmoid 1/(1+exp(-x)) or ReLU. */
typedef enum hpdl_activation { HPDL_ACT_SIGMOID = 0, HPDL_ACT_RELU = 1 } hpdl_activation;

/* ------------------------------------------------------------------------ */
/* Shared helpers (type-independent)                                         */
/* ------------------------------------------------------------------------ */

/* n >= 0, and the pointers are set unless the vector is empty. */
static inline int hpdl__vec_args_ok(int64_t n, const void *a, const void *b, const void *c) {
    return n >= 0 && (n == 0 || (a && b && c));
}

/* Every label is a class index in [0, classes). */
static inline int hpdl__labels_ok(int64_t n, const int32_t *labels, int classes) {
    int64_t i;
    if (!labels) return 0;
    for (i = 0; i < n; i++)
        if (labels[i] < 0 || labels[i] >= classes) return 0;
    return 1;
}

/* Offset of element (r, c) of op(X), X row-major with leading dimension ld. */
static inline size_t hpdl__op_offset(hpdl_transpose t, int ld, int r, int c) {
    return t == HPDL_TRANS ? (size_t)c * (size_t)ld + (size_t)r : (size_t)r * (size_t)ld + (size_t)c;
}

/* Copies a rows x cols block of elem-byte elements between row-major views. */
static inline void hpdl__copy_rows(void *dst, int ldd, const void *src, int lds, int rows, int cols, size_t elem) {
    int r;
    for (r = 0; r < rows; r++)
        memcpy((char *)dst + (size_t)r * (size_t)ldd * elem, (const char *)src + (size_t)r * (size_t)lds * elem,
               (size_t)cols * elem);
}

/* Whether two row-major n x n views share any byte. */
static inline int hpdl__square_views_overlap(const void *a, int lda, const void *b, int ldb, int n, size_t elem) {
    uintptr_t a0 = (uintptr_t)a, b0 = (uintptr_t)b;
    uintptr_t a1 = a0 + ((size_t)(n - 1) * (size_t)lda + (size_t)n) * elem;
    uintptr_t b1 = b0 + ((size_t)(n - 1) * (size_t)ldb + (size_t)n) * elem;
    return n > 0 && a0 < b1 && b0 < a1;
}

/* Logistic function without overflow: exp only ever sees -|x|. */
static inline double hpdl__sigmoid(double x) {
    double e;
    if (x >= 0) return 1.0 / (1.0 + exp(-x));
    e = exp(x);
    return e / (1.0 + e);
}

/* ------------------------------------------------------------------------ */
/* Vectors                                                                   */
/* ------------------------------------------------------------------------ */

/* c = a + b and y += alpha*x; outputs may alias inputs element for element. */
#define HPDL_DEFINE_VEC(SUFFIX, T, ACC_T, LOAD, STORE)                         \
    HPDL_API hpdl_status hpdl_vec_add_##SUFFIX(int64_t n, const T *a, const T *b, T *c) { \
        int64_t i;                                                             \
        if (!hpdl__vec_args_ok(n, a, b, c)) return HPDL_ERR_INVALID;           \
        for (i = 0; i < n; i++) c[i] = STORE((ACC_T)LOAD(a[i]) + (ACC_T)LOAD(b[i])); \
        return HPDL_OK;                                                        \
    }                                                                          \
    HPDL_API hpdl_status hpdl_vec_axpy_##SUFFIX(int64_t n, ACC_T alpha, const T *x, T *y) { \
        int64_t i;                                                             \
        if (!hpdl__vec_args_ok(n, x, y, y)) return HPDL_ERR_INVALID;           \
        for (i = 0; i < n; i++) y[i] = STORE((ACC_T)LOAD(y[i]) + alpha * (ACC_T)LOAD(x[i])); \
        return HPDL_OK;                                                        \
    }

/* hpdl_vec_add_f32 hpdl_vec_axpy_f32 hpdl_vec_add_f64 hpdl_vec_axpy_f64 hpdl_vec_add_f16
   hpdl_vec_axpy_f16 hpdl_vec_add_bf16 hpdl_vec_axpy_bf16 */
HPDL_FOR_EACH_FLOAT_TYPE(HPDL_DEFINE_VEC)

/* ------------------------------------------------------------------------ */
/* GEMM: C = alpha*op(A)*op(B) + beta*C, row-major, cache-blocked            */
/* ------------------------------------------------------------------------ */

/* Blocks of op(A) (MC x KC) and op(B) (KC x NC) are packed, converted to the
   accumulation type, into contiguous buffers; an MC x NC accumulator collects
   the whole K sum, so C (any storage type) is read and rounded once. Packed
   rows are padded with zeros to a multiple of HPDL__GEMM_LANES, so the inner
   loops have a fixed trip count and vectorise even at -O2. */
#define HPDL__GEMM_MC 64
#define HPDL__GEMM_KC 128
#define HPDL__GEMM_NC 256
#define HPDL__GEMM_LANES 16

static inline int hpdl__min_int(int a, int b) { return a < b ? a : b; }
static inline int hpdl__round_up(int x, int m) { return (x + m - 1) / m * m; }

/* A matrix stored rows x cols (op(X) of size r x c, transposed or not). */
static inline hpdl_status hpdl__check_op(const void *X, hpdl_transpose t, int r, int c, int ld) {
    if (t != HPDL_NO_TRANS && t != HPDL_TRANS) return HPDL_ERR_INVALID;
    return t == HPDL_TRANS ? hpdl__check_matrix(X, c, r, ld) : hpdl__check_matrix(X, r, c, ld);
}

static inline hpdl_status hpdl__gemm_check(hpdl_transpose ta, hpdl_transpose tb, int M, int N, int K, const void *A,
                                           int lda, const void *B, int ldb, const void *C, int ldc) {
    if (M < 0 || N < 0 || K < 0) return HPDL_ERR_INVALID;
    if (hpdl__check_op(A, ta, M, K, lda) != HPDL_OK || hpdl__check_op(B, tb, K, N, ldb) != HPDL_OK)
        return HPDL_ERR_INVALID;
    return hpdl__check_matrix(C, M, N, ldc);
}

/* The blocked GEMM's loops are written once, in hpdl__gemm_blocked. What
   depends on the types comes in a hpdl__gemm_kernels: pack and store (per
   storage type, from HPDL_DEFINE_GEMM) and the tile product (per
   accumulation type, from HPDL__DEFINE_GEMM_CORE), each called once per
   block. Buffers of the accumulation type are untyped there, and alpha and
   beta point to accumulation-type values. pack copies op(X)[r0.., c0..]
   (rows x cols) into dst (row stride ldd, zero-padded); store writes
   C[r0.., c0..] = alpha*acc + beta*C (acc NULL: zero; beta 0: C not read);
   tile adds Ap (mc x kc) * Bp (kc x ncp) to acc (mc x ncp). */
typedef void (*hpdl__gemm_pack_fn)(const void *X, int ld, hpdl_transpose t, int r0, int c0, int rows, int cols,
                                   void *dst, int ldd);
typedef void (*hpdl__gemm_store_fn)(void *C, int ldc, int r0, int c0, int rows, int cols, const void *acc, int ldacc,
                                    const void *alpha, const void *beta);
typedef void (*hpdl__gemm_tile_fn)(int mc, int kc, int ncp, const void *Ap, const void *Bp, void *acc);

typedef struct hpdl__gemm_kernels {
    size_t acc_size; /* bytes of the accumulation type */
    hpdl__gemm_tile_fn tile;
    hpdl__gemm_pack_fn pack;
    hpdl__gemm_store_fn store;
} hpdl__gemm_kernels;

/* Blocks over i (MC), j (NC) and k (KC); arguments already validated.
   alpha_zero says alpha == 0, when (as in BLAS) A and B are not read. */
static inline hpdl_status hpdl__gemm_blocked(const hpdl__gemm_kernels *kern, hpdl_transpose ta, hpdl_transpose tb,
                                             int M, int N, int K, const void *alpha, int alpha_zero, const void *A,
                                             int lda, const void *B, int ldb, const void *beta, void *C, int ldc) {
    size_t size = kern->acc_size;
    int mcap = hpdl__min_int(M, HPDL__GEMM_MC), kcap = hpdl__min_int(K, HPDL__GEMM_KC);
    int ncap = hpdl__round_up(hpdl__min_int(N, HPDL__GEMM_NC), HPDL__GEMM_LANES);
    int i0, j0, p0;
    char *Ap, *Bp, *acc;
    if (M == 0 || N == 0) return HPDL_OK;
    if (K == 0 || alpha_zero) {
        kern->store(C, ldc, 0, 0, M, N, NULL, 0, alpha, beta);
        return HPDL_OK;
    }
    Ap = (char *)hpdl_alloc((size_t)mcap * kcap + (size_t)kcap * ncap + (size_t)mcap * ncap, size);
    if (!Ap) return HPDL_ERR_NOMEM;
    Bp = Ap + (size_t)mcap * kcap * size;
    acc = Bp + (size_t)kcap * ncap * size;
    for (i0 = 0; i0 < M; i0 += HPDL__GEMM_MC) {
        int mc = hpdl__min_int(M - i0, HPDL__GEMM_MC);
        for (j0 = 0; j0 < N; j0 += HPDL__GEMM_NC) {
            int nc = hpdl__min_int(N - j0, HPDL__GEMM_NC), ncp = hpdl__round_up(nc, HPDL__GEMM_LANES);
            memset(acc, 0, (size_t)mc * ncp * size);
            for (p0 = 0; p0 < K; p0 += HPDL__GEMM_KC) {
                int kc = hpdl__min_int(K - p0, HPDL__GEMM_KC);
                kern->pack(A, lda, ta, i0, p0, mc, kc, Ap, kc);
                kern->pack(B, ldb, tb, p0, j0, kc, nc, Bp, ncp);
                kern->tile(mc, kc, ncp, Ap, Bp, acc);
            }
            kern->store(C, ldc, i0, j0, mc, nc, acc, ncp, alpha, beta);
        }
    }
    HPDL_FREE(Ap);
    return HPDL_OK;
}

/* The compute core, one per accumulation type: the tile product and
   hpdl__gemm_blocked_<ACC>, which runs hpdl__gemm_blocked with it. */
#define HPDL__DEFINE_GEMM_CORE(ACC)                                            \
    static inline void hpdl__gemm_row4_##ACC(int ncp, ACC *HPDL_RESTRICT c, const ACC *HPDL_RESTRICT b, \
                                             size_t ldb, const ACC *a) {       \
        int j0, j;                                                             \
        for (j0 = 0; j0 < ncp; j0 += HPDL__GEMM_LANES)                         \
            for (j = j0; j < j0 + HPDL__GEMM_LANES; j++)                       \
                c[j] += a[0] * b[j] + a[1] * b[ldb + j] + a[2] * b[2 * ldb + j] + a[3] * b[3 * ldb + j]; \
    }                                                                          \
    static inline void hpdl__gemm_row1_##ACC(int ncp, ACC *HPDL_RESTRICT c, const ACC *HPDL_RESTRICT b, ACC a) { \
        int j0, j;                                                             \
        for (j0 = 0; j0 < ncp; j0 += HPDL__GEMM_LANES)                         \
            for (j = j0; j < j0 + HPDL__GEMM_LANES; j++) c[j] += a * b[j];     \
    }                                                                          \
    /* acc (mc x ncp) += Ap (mc x kc) * Bp (kc x ncp), four k at a time. */    \
    static inline void hpdl__gemm_tile_##ACC(int mc, int kc, int ncp, const void *Ap_buf, const void *Bp_buf, \
                                             void *acc_buf) {                  \
        const ACC *Ap = (const ACC *)Ap_buf, *Bp = (const ACC *)Bp_buf;        \
        int i, p;                                                              \
        for (i = 0; i < mc; i++) {                                             \
            const ACC *a = Ap + (size_t)i * (size_t)kc;                        \
            ACC *c = (ACC *)acc_buf + (size_t)i * (size_t)ncp;                 \
            for (p = 0; p + 4 <= kc; p += 4) hpdl__gemm_row4_##ACC(ncp, c, Bp + (size_t)p * ncp, (size_t)ncp, a + p); \
            for (; p < kc; p++) hpdl__gemm_row1_##ACC(ncp, c, Bp + (size_t)p * ncp, a[p]); \
        }                                                                      \
    }                                                                          \
    static inline hpdl_status hpdl__gemm_blocked_##ACC(hpdl_transpose ta, hpdl_transpose tb, int M, int N, int K, \
            ACC alpha, const void *A, int lda, const void *B, int ldb, ACC beta, void *C, int ldc, \
            hpdl__gemm_pack_fn pack, hpdl__gemm_store_fn store) {              \
        hpdl__gemm_kernels kern;                                               \
        kern.acc_size = sizeof(ACC);                                           \
        kern.tile = hpdl__gemm_tile_##ACC;                                     \
        kern.pack = pack;                                                      \
        kern.store = store;                                                    \
        return hpdl__gemm_blocked(&kern, ta, tb, M, N, K, &alpha, alpha == 0, A, lda, B, ldb, &beta, C, ldc); \
    }

HPDL__DEFINE_GEMM_CORE(float)
HPDL__DEFINE_GEMM_CORE(double)

/* The typed part of GEMM: packing (LOAD), storing (STORE), validation. */
#define HPDL_DEFINE_GEMM(SUFFIX, T, ACC_T, LOAD, STORE)                        \
    static inline void hpdl__gemm_pack_##SUFFIX(const void *X, int ld, hpdl_transpose t, int r0, int c0, \
                                                int rows, int cols, void *dst, int ldd) { \
        const T *x = (const T *)X;                                             \
        int r, c;                                                              \
        for (r = 0; r < rows; r++) {                                           \
            ACC_T *d = (ACC_T *)dst + (size_t)r * (size_t)ldd;                 \
            for (c = 0; c < cols; c++) d[c] = (ACC_T)LOAD(x[hpdl__op_offset(t, ld, r0 + r, c0 + c)]); \
            for (; c < ldd; c++) d[c] = 0;                                     \
        }                                                                      \
    }                                                                          \
    static inline void hpdl__gemm_store_##SUFFIX(void *C, int ldc, int r0, int c0, int rows, int cols, \
                                                 const void *acc_buf, int ldacc, const void *alpha_p, \
                                                 const void *beta_p) {         \
        const ACC_T *acc = (const ACC_T *)acc_buf;                             \
        ACC_T alpha = *(const ACC_T *)alpha_p, beta = *(const ACC_T *)beta_p;  \
        int r, c;                                                              \
        for (r = 0; r < rows; r++) {                                           \
            T *y = (T *)C + (size_t)(r0 + r) * (size_t)ldc + c0;               \
            for (c = 0; c < cols; c++) {                                       \
                ACC_T v = acc ? alpha * acc[(size_t)r * ldacc + c] : (ACC_T)0; \
                if (beta != 0) v += beta * (ACC_T)LOAD(y[c]);                  \
                y[c] = STORE(v);                                               \
            }                                                                  \
        }                                                                      \
    }                                                                          \
    HPDL_API hpdl_status hpdl_gemm_##SUFFIX(hpdl_transpose ta, hpdl_transpose tb, int M, int N, int K, \
                                            ACC_T alpha, const T *A, int lda, const T *B, int ldb, \
                                            ACC_T beta, T *C, int ldc) {       \
        if (hpdl__gemm_check(ta, tb, M, N, K, A, lda, B, ldb, C, ldc) != HPDL_OK) return HPDL_ERR_INVALID; \
        return hpdl__gemm_blocked_##ACC_T(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, \
                                          hpdl__gemm_pack_##SUFFIX, hpdl__gemm_store_##SUFFIX); \
    }

/* hpdl_gemm_f32 hpdl_gemm_f64 hpdl_gemm_f16 hpdl_gemm_bf16 */
HPDL_FOR_EACH_FLOAT_TYPE(HPDL_DEFINE_GEMM)

/* ------------------------------------------------------------------------ */
/* Convolution: conv2d forward/backward, bias, pooling, batch normalization  */
/* ------------------------------------------------------------------------ */

/* Activations are 4-D tensors (N, C, H, W) in one of two layouts:
       NCHW: element (n, c, h, w) at ((n*C + c)*H + h)*W + w
       NHWC: element (n, c, h, w) at ((n*H + h)*W + w)*C + c
   A convolution's filter is a tensor too, K x C/groups x R x S, stored in
   its input's layout: KCRS beside NCHW, KRSC beside NHWC (cuDNN's choice).

   These are the references the GPU kernels are tested against, so each
   output element is the textbook sum, gathered in one loop and written once
   (backward passes too: no scatter, no temporary buffer). Values are read
   and written through a small per-type accessor, hpdl__elem_type; sums run in
   double and, for types that accumulate in float (f32, f16, bf16), are
   rounded to float after every addition, as a float accumulator would be.
   Batch-norm parameters and statistics (gamma, beta, running mean and
   variance, saved mean and 1/std) are in the accumulation type, float or
   double, as in cuDNN. Outputs must not overlap inputs unless a function
   says otherwise. ReLU is hpdl_relu_<t> above: it works on any tensor. */

/* Element order of a 4-D tensor in memory (see above). */
typedef enum hpdl_layout { HPDL_NCHW = 0, HPDL_NHWC = 1 } hpdl_layout;

/* Shape and layout of a 4-D tensor (N, C, H, W); it holds no data. */
typedef struct hpdl_tensor4 {
    int n, c, h, w;
    hpdl_layout layout;
} hpdl_tensor4;

/* A convolution's window, per axis; hpdl_conv2d_params_make fills the square case. */
typedef struct hpdl_conv2d_params {
    int kernel_h, kernel_w;     /* R x S */
    int stride_h, stride_w;
    int pad_h, pad_w;           /* zeros added on each side */
    int dilation_h, dilation_w; /* distance between taps; 1: a dense kernel */
    int groups;                 /* C and K split into groups; groups == C == K: depthwise */
} hpdl_conv2d_params;

/* Average pooling divides by the taps inside the input (padding excluded,
   cuDNN's COUNT_EXCLUDE_PADDING). Padding is at most half the window, so
   every window sees some of the input. */
typedef struct hpdl_pool2d_params {
    int kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w;
} hpdl_pool2d_params;

/* A descriptor of the given sizes and layout; nothing is checked. */
HPDL_API hpdl_tensor4 hpdl_tensor4_make(int n, int c, int h, int w, hpdl_layout layout) {
    hpdl_tensor4 d;
    d.n = n; d.c = c; d.h = h; d.w = w; d.layout = layout;
    return d;
}

/* Elements in d, n*c*h*w, as a size_t; d must not be NULL. */
HPDL_API size_t hpdl_tensor4_count(const hpdl_tensor4 *d) {
    return (size_t)d->n * (size_t)d->c * (size_t)d->h * (size_t)d->w;
}

/* Host and device: the GPU kernels index tensors with it too. */
HPDL_HD HPDL_API size_t hpdl_tensor4_offset(const hpdl_tensor4 *d, int n, int c, int h, int w) {
    if (d->layout == HPDL_NHWC)
        return (((size_t)n * d->h + (size_t)h) * d->w + (size_t)w) * d->c + (size_t)c;
    return (((size_t)n * d->c + (size_t)c) * d->h + (size_t)h) * d->w + (size_t)w;
}

/* Square kernel, the same stride, padding and dilation on both axes. */
HPDL_API hpdl_conv2d_params hpdl_conv2d_params_make(int kernel, int stride, int pad, int dilation, int groups) {
    hpdl_conv2d_params p;
    p.kernel_h = p.kernel_w = kernel;
    p.stride_h = p.stride_w = stride;
    p.pad_h = p.pad_w = pad;
    p.dilation_h = p.dilation_w = dilation;
    p.groups = groups;
    return p;
}

/* Square window, the same stride and padding on both axes; nothing is checked. */
HPDL_API hpdl_pool2d_params hpdl_pool2d_params_make(int kernel, int stride, int pad) {
    hpdl_pool2d_params p;
    p.kernel_h = p.kernel_w = kernel;
    p.stride_h = p.stride_w = stride;
    p.pad_h = p.pad_w = pad;
    return p;
}

/* Output length of a sliding window over `in` elements padded by `pad` on
   each side: floor((in + 2*pad - dilation*(kernel-1) - 1) / stride) + 1.
   0 when the window does not fit or an argument is out of range. The
   performance models (hpdl_layer_conv2d, hpdl_layer_pool) use it too. */
HPDL_API int hpdl_conv_output_size(int in, int kernel, int stride, int pad, int dilation) {
    int64_t span, out;
    if (in < 1 || kernel < 1 || stride < 1 || pad < 0 || dilation < 1) return 0;
    span = (int64_t)in + 2 * (int64_t)pad - (int64_t)dilation * (kernel - 1) - 1;
    if (span < 0) return 0;
    out = span / stride + 1;
    return out <= INT_MAX ? (int)out : 0;
}

/* ---- argument checks (type-independent) ---------------------------------- */

/* Positive sizes, a known layout, and every offset fits in a ptrdiff_t of
   8-byte elements, so (size_t) offset arithmetic cannot wrap. */
static inline int hpdl__tensor4_valid(const hpdl_tensor4 *d) {
    double count;
    if (!d || d->n < 1 || d->c < 1 || d->h < 1 || d->w < 1) return 0;
    if (d->layout != HPDL_NCHW && d->layout != HPDL_NHWC) return 0;
    count = (double)d->n * d->c * d->h * d->w;
    return count <= (double)PTRDIFF_MAX / 8;
}

/* One axis of a window: sizes in range, and in + 2*pad and the dilated
   kernel's extent fit in an int, so tap positions never overflow. */
static inline int hpdl__window_axis_valid(int in, int kernel, int stride, int pad, int dilation) {
    if (kernel < 1 || stride < 1 || pad < 0 || dilation < 1) return 0;
    if ((int64_t)in + 2 * (int64_t)pad > INT_MAX) return 0;
    if ((int64_t)dilation * (kernel - 1) + 1 > INT_MAX) return 0;
    return hpdl_conv_output_size(in, kernel, stride, pad, dilation) > 0;
}

static inline int hpdl__conv2d_params_valid(const hpdl_conv2d_params *p, const hpdl_tensor4 *x) {
    return p && hpdl__tensor4_valid(x) && p->groups >= 1 && x->c % p->groups == 0 &&
           hpdl__window_axis_valid(x->h, p->kernel_h, p->stride_h, p->pad_h, p->dilation_h) &&
           hpdl__window_axis_valid(x->w, p->kernel_w, p->stride_w, p->pad_w, p->dilation_w);
}

static inline int hpdl__pool2d_params_valid(const hpdl_pool2d_params *p, const hpdl_tensor4 *x) {
    return p && hpdl__tensor4_valid(x) && 2 * (int64_t)p->pad_h <= p->kernel_h &&
           2 * (int64_t)p->pad_w <= p->kernel_w &&
           hpdl__window_axis_valid(x->h, p->kernel_h, p->stride_h, p->pad_h, 1) &&
           hpdl__window_axis_valid(x->w, p->kernel_w, p->stride_w, p->pad_w, 1);
}

/* The shape of a convolution's output for k output channels (the layout
   of x). INVALID for bad parameters or k not a multiple of groups. */
HPDL_API hpdl_status hpdl_conv2d_output_desc(const hpdl_conv2d_params *p, const hpdl_tensor4 *x, int k,
                                             hpdl_tensor4 *y) {
    if (!y || !hpdl__conv2d_params_valid(p, x) || k < 1 || k % p->groups) return HPDL_ERR_INVALID;
    *y = hpdl_tensor4_make(x->n, k, hpdl_conv_output_size(x->h, p->kernel_h, p->stride_h, p->pad_h, p->dilation_h),
                           hpdl_conv_output_size(x->w, p->kernel_w, p->stride_w, p->pad_w, p->dilation_w),
                           x->layout);
    return HPDL_OK;
}

/* The shape of the filter: K x C/groups x R x S, in the layout of x. */
HPDL_API hpdl_status hpdl_conv2d_filter_desc(const hpdl_conv2d_params *p, const hpdl_tensor4 *x, int k,
                                             hpdl_tensor4 *w) {
    if (!w || !hpdl__conv2d_params_valid(p, x) || k < 1 || k % p->groups) return HPDL_ERR_INVALID;
    *w = hpdl_tensor4_make(k, x->c / p->groups, p->kernel_h, p->kernel_w, x->layout);
    return HPDL_OK;
}

/* The shape of a pooling output (the layout of x). */
HPDL_API hpdl_status hpdl_pool2d_output_desc(const hpdl_pool2d_params *p, const hpdl_tensor4 *x, hpdl_tensor4 *y) {
    if (!y || !hpdl__pool2d_params_valid(p, x)) return HPDL_ERR_INVALID;
    *y = hpdl_tensor4_make(x->n, x->c, hpdl_conv_output_size(x->h, p->kernel_h, p->stride_h, p->pad_h, 1),
                           hpdl_conv_output_size(x->w, p->kernel_w, p->stride_w, p->pad_w, 1), x->layout);
    return HPDL_OK;
}

/* y has exactly the shape `want` (its layout may differ). */
static inline int hpdl__tensor4_shape_is(const hpdl_tensor4 *y, const hpdl_tensor4 *want) {
    return hpdl__tensor4_valid(y) && y->n == want->n && y->c == want->c && y->h == want->h && y->w == want->w;
}

/* Everything a convolution needs, checked: parameters, the three shapes
   (y's layout is free; the filter's is x's), and pointers. */
typedef struct hpdl__conv_geom {
    hpdl_conv2d_params p;
    hpdl_tensor4 x, w, y;
    int c_per_group, k_per_group;
} hpdl__conv_geom;

static inline hpdl_status hpdl__conv_geom_make(const hpdl_conv2d_params *p, const hpdl_tensor4 *xd,
                                               const hpdl_tensor4 *yd, const void *a, const void *b,
                                               const void *out, hpdl__conv_geom *g) {
    hpdl_tensor4 want;
    if (!a || !b || !out || !yd || hpdl_conv2d_output_desc(p, xd, yd->c, &want) != HPDL_OK ||
        !hpdl__tensor4_shape_is(yd, &want))
        return HPDL_ERR_INVALID;
    g->p = *p;
    g->x = *xd;
    g->y = *yd;
    g->w = hpdl_tensor4_make(yd->c, xd->c / p->groups, p->kernel_h, p->kernel_w, xd->layout);
    g->c_per_group = xd->c / p->groups;
    g->k_per_group = yd->c / p->groups;
    return HPDL_OK;
}

/* Input position read by output position o through tap r (the GPU kernels
   share these two). */
HPDL_HD static inline int hpdl__tap_input(int o, int stride, int pad, int r, int dilation) {
    return o * stride - pad + r * dilation;
}

/* The inverse: the output position o whose tap r reads input position i;
   0 when there is none (i falls between strides, or o is out of range). */
HPDL_HD static inline int hpdl__tap_output(int i, int stride, int pad, int r, int dilation, int out, int *o) {
    int t = i + pad - r * dilation;
    if (t < 0 || t % stride) return 0;
    *o = t / stride;
    return *o < out;
}

/* ---- typed access ----------------------------------------------------------- */

/* How the type-independent code reads and writes one element of a tensor
   (load/store) and of a parameter array in the accumulation type
   (load_param/store_param). HPDL_DEFINE_CONV fills one per type. */
typedef struct hpdl__elem_type {
    double (*load)(const void *base, size_t i);
    void (*store)(void *base, size_t i, double v);
    double (*load_param)(const void *base, size_t i);
    void (*store_param)(void *base, size_t i, double v);
    int accumulates_in_float;
} hpdl__elem_type;

/* acc + term as the type's accumulator computes it. */
static inline double hpdl__acc_add(const hpdl__elem_type *t, double acc, double term) {
    double sum = acc + term;
    return t->accumulates_in_float ? (double)(float)sum : sum;
}

static inline double hpdl__load4(const hpdl__elem_type *t, const void *base, const hpdl_tensor4 *d, int n, int c,
                                 int h, int w) {
    return t->load(base, hpdl_tensor4_offset(d, n, c, h, w));
}

/* ---- conv2d forward, backward-data, backward-filter ------------------------ */

/* y[n,k,oh,ow] = sum over c, r, s of x[n, g*Cg + c, ih, iw] * w[k, c, r, s],
   ih = oh*stride - pad + r*dilation (iw likewise), g = k's group; taps that
   land in the padding read zero. */
static inline double hpdl__conv2d_output_at(const hpdl__elem_type *t, const hpdl__conv_geom *g, const void *x,
                                            const void *w, int n, int k, int oh, int ow) {
    int c0 = k / g->k_per_group * g->c_per_group, c, r, s;
    double acc = 0.0;
    for (c = 0; c < g->c_per_group; c++)
        for (r = 0; r < g->p.kernel_h; r++) {
            int ih = hpdl__tap_input(oh, g->p.stride_h, g->p.pad_h, r, g->p.dilation_h);
            if (ih < 0 || ih >= g->x.h) continue;
            for (s = 0; s < g->p.kernel_w; s++) {
                int iw = hpdl__tap_input(ow, g->p.stride_w, g->p.pad_w, s, g->p.dilation_w);
                if (iw < 0 || iw >= g->x.w) continue;
                acc = hpdl__acc_add(t, acc, hpdl__load4(t, x, &g->x, n, c0 + c, ih, iw) *
                                                hpdl__load4(t, w, &g->w, k, c, r, s));
            }
        }
    return acc;
}

/* dx[n,c,ih,iw] = sum over the k of c's group and the taps r, s that read
   (ih, iw) of dy[n,k,oh,ow] * w[k, c - g*Cg, r, s]. */
static inline double hpdl__conv2d_input_grad_at(const hpdl__elem_type *t, const hpdl__conv_geom *g, const void *w,
                                                const void *dy, int n, int c, int ih, int iw) {
    int k0 = c / g->c_per_group * g->k_per_group, cw = c % g->c_per_group, k, r, s, oh, ow;
    double acc = 0.0;
    for (k = k0; k < k0 + g->k_per_group; k++)
        for (r = 0; r < g->p.kernel_h; r++) {
            if (!hpdl__tap_output(ih, g->p.stride_h, g->p.pad_h, r, g->p.dilation_h, g->y.h, &oh)) continue;
            for (s = 0; s < g->p.kernel_w; s++) {
                if (!hpdl__tap_output(iw, g->p.stride_w, g->p.pad_w, s, g->p.dilation_w, g->y.w, &ow)) continue;
                acc = hpdl__acc_add(t, acc, hpdl__load4(t, dy, &g->y, n, k, oh, ow) *
                                                hpdl__load4(t, w, &g->w, k, cw, r, s));
            }
        }
    return acc;
}

/* dw[k,c,r,s] = sum over n, oh, ow of dy[n,k,oh,ow] * x[n, g*Cg + c, ih, iw]. */
static inline double hpdl__conv2d_filter_grad_at(const hpdl__elem_type *t, const hpdl__conv_geom *g, const void *x,
                                                 const void *dy, int k, int c, int r, int s) {
    int cx = k / g->k_per_group * g->c_per_group + c, n, oh, ow;
    double acc = 0.0;
    for (n = 0; n < g->x.n; n++)
        for (oh = 0; oh < g->y.h; oh++) {
            int ih = hpdl__tap_input(oh, g->p.stride_h, g->p.pad_h, r, g->p.dilation_h);
            if (ih < 0 || ih >= g->x.h) continue;
            for (ow = 0; ow < g->y.w; ow++) {
                int iw = hpdl__tap_input(ow, g->p.stride_w, g->p.pad_w, s, g->p.dilation_w);
                if (iw < 0 || iw >= g->x.w) continue;
                acc = hpdl__acc_add(t, acc, hpdl__load4(t, dy, &g->y, n, k, oh, ow) *
                                                hpdl__load4(t, x, &g->x, n, cx, ih, iw));
            }
        }
    return acc;
}

/* The three passes differ only in which tensor they fill and the sum that
   gives one of its elements; this visits every element of `out`. */
typedef enum hpdl__conv_pass { HPDL__CONV_FORWARD, HPDL__CONV_INPUT_GRAD, HPDL__CONV_FILTER_GRAD } hpdl__conv_pass;

static inline void hpdl__conv2d_fill(const hpdl__elem_type *t, const hpdl__conv_geom *g, hpdl__conv_pass pass,
                                     const void *a, const void *b, const hpdl_tensor4 *od, void *out) {
    int i0, i1, i2, i3;
    for (i0 = 0; i0 < od->n; i0++)
        for (i1 = 0; i1 < od->c; i1++)
            for (i2 = 0; i2 < od->h; i2++)
                for (i3 = 0; i3 < od->w; i3++) {
                    double v = pass == HPDL__CONV_FORWARD ? hpdl__conv2d_output_at(t, g, a, b, i0, i1, i2, i3)
                             : pass == HPDL__CONV_INPUT_GRAD ? hpdl__conv2d_input_grad_at(t, g, a, b, i0, i1, i2, i3)
                             : hpdl__conv2d_filter_grad_at(t, g, a, b, i0, i1, i2, i3);
                    t->store(out, hpdl_tensor4_offset(od, i0, i1, i2, i3), v);
                }
}

static inline hpdl_status hpdl__conv2d_forward(const hpdl__elem_type *t, const hpdl_conv2d_params *p,
                                               const hpdl_tensor4 *xd, const void *x, const void *w,
                                               const hpdl_tensor4 *yd, void *y) {
    hpdl__conv_geom g;
    if (hpdl__conv_geom_make(p, xd, yd, x, w, y, &g) != HPDL_OK) return HPDL_ERR_INVALID;
    hpdl__conv2d_fill(t, &g, HPDL__CONV_FORWARD, x, w, &g.y, y);
    return HPDL_OK;
}

static inline hpdl_status hpdl__conv2d_backward_data(const hpdl__elem_type *t, const hpdl_conv2d_params *p,
                                                     const hpdl_tensor4 *yd, const void *dy, const void *w,
                                                     const hpdl_tensor4 *xd, void *dx) {
    hpdl__conv_geom g;
    if (hpdl__conv_geom_make(p, xd, yd, dy, w, dx, &g) != HPDL_OK) return HPDL_ERR_INVALID;
    hpdl__conv2d_fill(t, &g, HPDL__CONV_INPUT_GRAD, w, dy, &g.x, dx);
    return HPDL_OK;
}

static inline hpdl_status hpdl__conv2d_backward_filter(const hpdl__elem_type *t, const hpdl_conv2d_params *p,
                                                       const hpdl_tensor4 *xd, const void *x,
                                                       const hpdl_tensor4 *yd, const void *dy, void *dw) {
    hpdl__conv_geom g;
    if (hpdl__conv_geom_make(p, xd, yd, x, dy, dw, &g) != HPDL_OK) return HPDL_ERR_INVALID;
    hpdl__conv2d_fill(t, &g, HPDL__CONV_FILTER_GRAD, x, dy, &g.w, dw);
    return HPDL_OK;
}

/* ---- bias ------------------------------------------------------------------ */

/* y[n,c,h,w] += bias[c], in place. */
static inline hpdl_status hpdl__conv2d_bias_add(const hpdl__elem_type *t, const hpdl_tensor4 *yd, void *y,
                                                const void *bias) {
    int n, c, h, w;
    if (!hpdl__tensor4_valid(yd) || !y || !bias) return HPDL_ERR_INVALID;
    for (n = 0; n < yd->n; n++)
        for (c = 0; c < yd->c; c++)
            for (h = 0; h < yd->h; h++)
                for (w = 0; w < yd->w; w++) {
                    size_t i = hpdl_tensor4_offset(yd, n, c, h, w);
                    t->store(y, i, hpdl__acc_add(t, t->load(y, i), t->load(bias, (size_t)c)));
                }
    return HPDL_OK;
}

/* Sum of channel c of a tensor over n, h, w (in the type's accumulator). */
static inline double hpdl__channel_sum(const hpdl__elem_type *t, const hpdl_tensor4 *d, const void *x, int c) {
    int n, h, w;
    double acc = 0.0;
    for (n = 0; n < d->n; n++)
        for (h = 0; h < d->h; h++)
            for (w = 0; w < d->w; w++) acc = hpdl__acc_add(t, acc, hpdl__load4(t, x, d, n, c, h, w));
    return acc;
}

/* dbias[c] = sum over n, h, w of dy[n,c,h,w]. */
static inline hpdl_status hpdl__conv2d_bias_grad(const hpdl__elem_type *t, const hpdl_tensor4 *yd, const void *dy,
                                                 void *dbias) {
    int c;
    if (!hpdl__tensor4_valid(yd) || !dy || !dbias) return HPDL_ERR_INVALID;
    for (c = 0; c < yd->c; c++) t->store(dbias, (size_t)c, hpdl__channel_sum(t, yd, dy, c));
    return HPDL_OK;
}

/* ---- pooling ---------------------------------------------------------------- */

/* x, y (and their gradients) checked against the pooling parameters. */
static inline int hpdl__pool2d_args_ok(const hpdl_pool2d_params *p, const hpdl_tensor4 *xd, const hpdl_tensor4 *yd,
                                       const void *a, const void *b, const void *out) {
    hpdl_tensor4 want;
    return a && b && out && yd && hpdl_pool2d_output_desc(p, xd, &want) == HPDL_OK &&
           hpdl__tensor4_shape_is(yd, &want);
}

/* The window of output (oh, ow) clipped to the input: rows [*h0, *h1),
   columns [*w0, *w1). Never empty (padding is at most half the window).
   The GPU kernels share it. */
HPDL_HD static inline void hpdl__pool_window(const hpdl_pool2d_params *p, const hpdl_tensor4 *xd, int oh, int ow,
                                             int *h0, int *h1, int *w0, int *w1) {
    int top = oh * p->stride_h - p->pad_h, left = ow * p->stride_w - p->pad_w;
    *h0 = top < 0 ? 0 : top;
    *w0 = left < 0 ? 0 : left;
    *h1 = top + p->kernel_h < xd->h ? top + p->kernel_h : xd->h;
    *w1 = left + p->kernel_w < xd->w ? left + p->kernel_w : xd->w;
}

/* Position of the largest element of a window, the first one in row-major
   order on ties (the element the gradient goes to). */
static inline void hpdl__maxpool_argmax(const hpdl__elem_type *t, const hpdl_pool2d_params *p,
                                        const hpdl_tensor4 *xd, const void *x, int n, int c, int oh, int ow,
                                        int *best_h, int *best_w) {
    int h0, h1, w0, w1, h, w;
    double best = 0.0;
    hpdl__pool_window(p, xd, oh, ow, &h0, &h1, &w0, &w1);
    *best_h = h0;
    *best_w = w0;
    for (h = h0; h < h1; h++)
        for (w = w0; w < w1; w++) {
            double v = hpdl__load4(t, x, xd, n, c, h, w);
            if ((h == h0 && w == w0) || v > best) { best = v; *best_h = h; *best_w = w; }
        }
}

/* Mean of a window over the taps inside the input. */
static inline double hpdl__avgpool_at(const hpdl__elem_type *t, const hpdl_pool2d_params *p, const hpdl_tensor4 *xd,
                                      const void *x, int n, int c, int oh, int ow) {
    int h0, h1, w0, w1, h, w;
    double acc = 0.0;
    hpdl__pool_window(p, xd, oh, ow, &h0, &h1, &w0, &w1);
    for (h = h0; h < h1; h++)
        for (w = w0; w < w1; w++) acc = hpdl__acc_add(t, acc, hpdl__load4(t, x, xd, n, c, h, w));
    return acc / ((double)(h1 - h0) * (w1 - w0));
}

/* dx[n,c,ih,iw] = sum over the windows that hold (ih, iw) of dy, for max
   pooling only those whose maximum it is, for average pooling divided by
   the window's size. */
static inline double hpdl__pool_input_grad_at(const hpdl__elem_type *t, int is_max, const hpdl_pool2d_params *p,
                                              const hpdl_tensor4 *xd, const void *x, const hpdl_tensor4 *yd,
                                              const void *dy, int n, int c, int ih, int iw) {
    int r, s, oh, ow, h0, h1, w0, w1, bh, bw;
    double acc = 0.0;
    for (r = 0; r < p->kernel_h; r++) {
        if (!hpdl__tap_output(ih, p->stride_h, p->pad_h, r, 1, yd->h, &oh)) continue;
        for (s = 0; s < p->kernel_w; s++) {
            if (!hpdl__tap_output(iw, p->stride_w, p->pad_w, s, 1, yd->w, &ow)) continue;
            if (is_max) {
                hpdl__maxpool_argmax(t, p, xd, x, n, c, oh, ow, &bh, &bw);
                if (bh == ih && bw == iw) acc = hpdl__acc_add(t, acc, hpdl__load4(t, dy, yd, n, c, oh, ow));
            } else {
                hpdl__pool_window(p, xd, oh, ow, &h0, &h1, &w0, &w1);
                acc = hpdl__acc_add(t, acc, hpdl__load4(t, dy, yd, n, c, oh, ow) / ((double)(h1 - h0) * (w1 - w0)));
            }
        }
    }
    return acc;
}

static inline hpdl_status hpdl__pool2d_forward(const hpdl__elem_type *t, int is_max, const hpdl_pool2d_params *p,
                                               const hpdl_tensor4 *xd, const void *x, const hpdl_tensor4 *yd,
                                               void *y) {
    int n, c, oh, ow, bh, bw;
    if (!hpdl__pool2d_args_ok(p, xd, yd, x, x, y)) return HPDL_ERR_INVALID;
    for (n = 0; n < yd->n; n++)
        for (c = 0; c < yd->c; c++)
            for (oh = 0; oh < yd->h; oh++)
                for (ow = 0; ow < yd->w; ow++) {
                    double v;
                    if (is_max) {
                        hpdl__maxpool_argmax(t, p, xd, x, n, c, oh, ow, &bh, &bw);
                        v = hpdl__load4(t, x, xd, n, c, bh, bw);
                    } else {
                        v = hpdl__avgpool_at(t, p, xd, x, n, c, oh, ow);
                    }
                    t->store(y, hpdl_tensor4_offset(yd, n, c, oh, ow), v);
                }
    return HPDL_OK;
}

/* x is read by max pooling only (average pooling passes NULL). */
static inline hpdl_status hpdl__pool2d_backward(const hpdl__elem_type *t, int is_max, const hpdl_pool2d_params *p,
                                                const hpdl_tensor4 *xd, const void *x, const hpdl_tensor4 *yd,
                                                const void *dy, void *dx) {
    int n, c, h, w;
    if ((is_max && !x) || !hpdl__pool2d_args_ok(p, xd, yd, dy, dy, dx)) return HPDL_ERR_INVALID;
    for (n = 0; n < xd->n; n++)
        for (c = 0; c < xd->c; c++)
            for (h = 0; h < xd->h; h++)
                for (w = 0; w < xd->w; w++)
                    t->store(dx, hpdl_tensor4_offset(xd, n, c, h, w),
                             hpdl__pool_input_grad_at(t, is_max, p, xd, x, yd, dy, n, c, h, w));
    return HPDL_OK;
}

/* Global average pooling: y[n*C + c] = mean over h, w of x[n,c,h,w] (y is
   N x C x 1 x 1, the same in both layouts). */
static inline hpdl_status hpdl__global_avgpool_forward(const hpdl__elem_type *t, const hpdl_tensor4 *xd,
                                                       const void *x, void *y) {
    int n, c, h, w;
    if (!hpdl__tensor4_valid(xd) || !x || !y) return HPDL_ERR_INVALID;
    for (n = 0; n < xd->n; n++)
        for (c = 0; c < xd->c; c++) {
            double acc = 0.0;
            for (h = 0; h < xd->h; h++)
                for (w = 0; w < xd->w; w++) acc = hpdl__acc_add(t, acc, hpdl__load4(t, x, xd, n, c, h, w));
            t->store(y, (size_t)n * xd->c + (size_t)c, acc / ((double)xd->h * xd->w));
        }
    return HPDL_OK;
}

/* dx[n,c,h,w] = dy[n*C + c] / (H*W). */
static inline hpdl_status hpdl__global_avgpool_backward(const hpdl__elem_type *t, const hpdl_tensor4 *xd,
                                                        const void *dy, void *dx) {
    int n, c, h, w;
    if (!hpdl__tensor4_valid(xd) || !dy || !dx) return HPDL_ERR_INVALID;
    for (n = 0; n < xd->n; n++)
        for (c = 0; c < xd->c; c++) {
            double g = t->load(dy, (size_t)n * xd->c + (size_t)c) / ((double)xd->h * xd->w);
            for (h = 0; h < xd->h; h++)
                for (w = 0; w < xd->w; w++) t->store(dx, hpdl_tensor4_offset(xd, n, c, h, w), g);
        }
    return HPDL_OK;
}

/* ---- batch normalization ------------------------------------------------------ */

/* Per channel c, over the M = N*H*W values of that channel:
     training:  mean = sum x / M, var = sum (x - mean)^2 / M (biased),
                y = gamma*(x - mean)/sqrt(var + eps) + beta,
                running_mean = (1-momentum)*running_mean + momentum*mean,
                running_var  = (1-momentum)*running_var  + momentum*var*M/(M-1)
                (the unbiased variance, as PyTorch and cuDNN keep it);
     inference: y = gamma*(x - running_mean)/sqrt(running_var + eps) + beta;
     backward:  xhat = (x - mean)*invstd, dbeta = sum dy, dgamma = sum dy*xhat,
                dx = gamma*invstd/M * (M*dy - dbeta - xhat*dgamma),
                with the mean and invstd = 1/sqrt(var + eps) the training
                forward saved. y may equal x (a channel's statistics are
                complete before it is written). */

/* y[., c, ., .] = scale*x + shift for one channel. */
static inline void hpdl__channel_affine(const hpdl__elem_type *t, const hpdl_tensor4 *d, const void *x, void *y,
                                        int c, double scale, double shift) {
    int n, h, w;
    for (n = 0; n < d->n; n++)
        for (h = 0; h < d->h; h++)
            for (w = 0; w < d->w; w++) {
                size_t i = hpdl_tensor4_offset(d, n, c, h, w);
                t->store(y, i, scale * t->load(x, i) + shift);
            }
}

/* Biased variance of channel c around `mean` (the second pass). */
static inline double hpdl__channel_variance(const hpdl__elem_type *t, const hpdl_tensor4 *d, const void *x, int c,
                                            double mean) {
    int n, h, w;
    double acc = 0.0;
    for (n = 0; n < d->n; n++)
        for (h = 0; h < d->h; h++)
            for (w = 0; w < d->w; w++) {
                double v = hpdl__load4(t, x, d, n, c, h, w) - mean;
                acc = hpdl__acc_add(t, acc, v * v);
            }
    return acc / ((double)d->n * d->h * d->w);
}

static inline int hpdl__bn_eps_ok(double eps) { return eps > 0.0 && eps < HUGE_VAL; }

static inline hpdl_status hpdl__batchnorm_forward_training(const hpdl__elem_type *t, const hpdl_tensor4 *xd,
                                                           const void *x, const void *gamma, const void *beta,
                                                           double momentum, double eps, void *running_mean,
                                                           void *running_var, void *y, void *save_mean,
                                                           void *save_invstd) {
    double m;
    int c;
    if (!hpdl__tensor4_valid(xd) || !x || !gamma || !beta || !running_mean || !running_var || !y ||
        !(momentum >= 0.0 && momentum <= 1.0) || !hpdl__bn_eps_ok(eps))
        return HPDL_ERR_INVALID;
    m = (double)xd->n * xd->h * xd->w;
    if (m < 2) return HPDL_ERR_INVALID; /* no unbiased variance from one value */
    for (c = 0; c < xd->c; c++) {
        double mean = hpdl__channel_sum(t, xd, x, c) / m;
        double var = hpdl__channel_variance(t, xd, x, c, mean), invstd = 1.0 / sqrt(var + eps);
        double scale = t->load_param(gamma, (size_t)c) * invstd;
        hpdl__channel_affine(t, xd, x, y, c, scale, t->load_param(beta, (size_t)c) - scale * mean);
        t->store_param(running_mean, (size_t)c,
                       (1.0 - momentum) * t->load_param(running_mean, (size_t)c) + momentum * mean);
        t->store_param(running_var, (size_t)c,
                       (1.0 - momentum) * t->load_param(running_var, (size_t)c) + momentum * var * m / (m - 1));
        if (save_mean) t->store_param(save_mean, (size_t)c, mean);
        if (save_invstd) t->store_param(save_invstd, (size_t)c, invstd);
    }
    return HPDL_OK;
}

static inline hpdl_status hpdl__batchnorm_forward_inference(const hpdl__elem_type *t, const hpdl_tensor4 *xd,
                                                            const void *x, const void *gamma, const void *beta,
                                                            const void *running_mean, const void *running_var,
                                                            double eps, void *y) {
    int c;
    if (!hpdl__tensor4_valid(xd) || !x || !gamma || !beta || !running_mean || !running_var || !y ||
        !hpdl__bn_eps_ok(eps))
        return HPDL_ERR_INVALID;
    for (c = 0; c < xd->c; c++)
        if (!(t->load_param(running_var, (size_t)c) + eps > 0.0)) return HPDL_ERR_INVALID;
    for (c = 0; c < xd->c; c++) {
        double scale = t->load_param(gamma, (size_t)c) / sqrt(t->load_param(running_var, (size_t)c) + eps);
        double shift = t->load_param(beta, (size_t)c) - scale * t->load_param(running_mean, (size_t)c);
        hpdl__channel_affine(t, xd, x, y, c, scale, shift);
    }
    return HPDL_OK;
}

/* sum over channel c of dy*(x - mean)*invstd. */
static inline double hpdl__channel_dot_xhat(const hpdl__elem_type *t, const hpdl_tensor4 *d, const void *x,
                                            const void *dy, int c, double mean, double invstd) {
    int n, h, w;
    double acc = 0.0;
    for (n = 0; n < d->n; n++)
        for (h = 0; h < d->h; h++)
            for (w = 0; w < d->w; w++) {
                size_t i = hpdl_tensor4_offset(d, n, c, h, w);
                acc = hpdl__acc_add(t, acc, t->load(dy, i) * (t->load(x, i) - mean) * invstd);
            }
    return acc;
}

/* dx for channel c from its sums dbeta and dgamma. */
static inline void hpdl__batchnorm_input_grad(const hpdl__elem_type *t, const hpdl_tensor4 *d, const void *x,
                                              const void *dy, void *dx, int c, double mean, double invstd,
                                              double gamma, double dbeta, double dgamma) {
    double m = (double)d->n * d->h * d->w;
    int n, h, w;
    for (n = 0; n < d->n; n++)
        for (h = 0; h < d->h; h++)
            for (w = 0; w < d->w; w++) {
                size_t i = hpdl_tensor4_offset(d, n, c, h, w);
                double xhat = (t->load(x, i) - mean) * invstd;
                t->store(dx, i, gamma * invstd / m * (m * t->load(dy, i) - dbeta - xhat * dgamma));
            }
}

static inline hpdl_status hpdl__batchnorm_backward(const hpdl__elem_type *t, const hpdl_tensor4 *xd,
                                                   const void *x, const void *dy, const void *gamma,
                                                   const void *save_mean, const void *save_invstd, void *dx,
                                                   void *dgamma, void *dbeta) {
    int c;
    if (!hpdl__tensor4_valid(xd) || !x || !dy || !gamma || !save_mean || !save_invstd || !dx || !dgamma || !dbeta)
        return HPDL_ERR_INVALID;
    for (c = 0; c < xd->c; c++) {
        double mean = t->load_param(save_mean, (size_t)c), invstd = t->load_param(save_invstd, (size_t)c);
        double sum_dy = hpdl__channel_sum(t, xd, dy, c);
        double sum_dy_xhat = hpdl__channel_dot_xhat(t, xd, x, dy, c, mean, invstd);
        hpdl__batchnorm_input_grad(t, xd, x, dy, dx, c, mean, invstd, t->load_param(gamma, (size_t)c), sum_dy,
                                   sum_dy_xhat);
        t->store_param(dgamma, (size_t)c, sum_dy_xhat);
        t->store_param(dbeta, (size_t)c, sum_dy);
    }
    return HPDL_OK;
}

/* ---- the typed functions ------------------------------------------------------- */

/* Tensors hold T; bias and filter too; batch-norm parameters and statistics
   are ACC_T. Each public function is one call of the helper above. */
#define HPDL_DEFINE_CONV(SUFFIX, T, ACC_T, LOAD, STORE)                        \
    static inline double hpdl__conv_load_##SUFFIX(const void *p, size_t i) { return (double)LOAD(((const T *)p)[i]); } \
    static inline void hpdl__conv_store_##SUFFIX(void *p, size_t i, double v) { ((T *)p)[i] = STORE(v); } \
    static inline double hpdl__conv_load_param_##SUFFIX(const void *p, size_t i) { return (double)((const ACC_T *)p)[i]; } \
    static inline void hpdl__conv_store_param_##SUFFIX(void *p, size_t i, double v) { ((ACC_T *)p)[i] = (ACC_T)v; } \
    static inline const hpdl__elem_type *hpdl__conv_type_##SUFFIX(void) {      \
        static const hpdl__elem_type t = {hpdl__conv_load_##SUFFIX, hpdl__conv_store_##SUFFIX,            \
                                          hpdl__conv_load_param_##SUFFIX, hpdl__conv_store_param_##SUFFIX, \
                                          sizeof(ACC_T) < sizeof(double)};                                \
        return &t;                                                             \
    }                                                                          \
    HPDL_API hpdl_status hpdl_conv2d_forward_##SUFFIX(const hpdl_conv2d_params *p, const hpdl_tensor4 *xd, \
                                                      const T *x, const T *w, const hpdl_tensor4 *yd, T *y) { \
        return hpdl__conv2d_forward(hpdl__conv_type_##SUFFIX(), p, xd, x, w, yd, y); \
    }                                                                          \
    HPDL_API hpdl_status hpdl_conv2d_backward_data_##SUFFIX(const hpdl_conv2d_params *p, const hpdl_tensor4 *yd, \
                                                            const T *dy, const T *w, const hpdl_tensor4 *xd, T *dx) { \
        return hpdl__conv2d_backward_data(hpdl__conv_type_##SUFFIX(), p, yd, dy, w, xd, dx); \
    }                                                                          \
    HPDL_API hpdl_status hpdl_conv2d_backward_filter_##SUFFIX(const hpdl_conv2d_params *p, const hpdl_tensor4 *xd, \
                                                              const T *x, const hpdl_tensor4 *yd, const T *dy, T *dw) { \
        return hpdl__conv2d_backward_filter(hpdl__conv_type_##SUFFIX(), p, xd, x, yd, dy, dw); \
    }                                                                          \
    HPDL_API hpdl_status hpdl_conv2d_bias_add_##SUFFIX(const hpdl_tensor4 *yd, T *y, const T *bias) { \
        return hpdl__conv2d_bias_add(hpdl__conv_type_##SUFFIX(), yd, y, bias); \
    }                                                                          \
    HPDL_API hpdl_status hpdl_conv2d_bias_grad_##SUFFIX(const hpdl_tensor4 *yd, const T *dy, T *dbias) { \
        return hpdl__conv2d_bias_grad(hpdl__conv_type_##SUFFIX(), yd, dy, dbias); \
    }                                                                          \
    HPDL_API hpdl_status hpdl_maxpool2d_forward_##SUFFIX(const hpdl_pool2d_params *p, const hpdl_tensor4 *xd, \
                                                         const T *x, const hpdl_tensor4 *yd, T *y) { \
        return hpdl__pool2d_forward(hpdl__conv_type_##SUFFIX(), 1, p, xd, x, yd, y); \
    }                                                                          \
    HPDL_API hpdl_status hpdl_maxpool2d_backward_##SUFFIX(const hpdl_pool2d_params *p, const hpdl_tensor4 *xd, \
                                                          const T *x, const hpdl_tensor4 *yd, const T *dy, T *dx) { \
        return hpdl__pool2d_backward(hpdl__conv_type_##SUFFIX(), 1, p, xd, x, yd, dy, dx); \
    }                                                                          \
    HPDL_API hpdl_status hpdl_avgpool2d_forward_##SUFFIX(const hpdl_pool2d_params *p, const hpdl_tensor4 *xd, \
                                                         const T *x, const hpdl_tensor4 *yd, T *y) { \
        return hpdl__pool2d_forward(hpdl__conv_type_##SUFFIX(), 0, p, xd, x, yd, y); \
    }                                                                          \
    HPDL_API hpdl_status hpdl_avgpool2d_backward_##SUFFIX(const hpdl_pool2d_params *p, const hpdl_tensor4 *yd, \
                                                          const T *dy, const hpdl_tensor4 *xd, T *dx) { \
        return hpdl__pool2d_backward(hpdl__conv_type_##SUFFIX(), 0, p, xd, NULL, yd, dy, dx); \
    }                                                                          \
    HPDL_API hpdl_status hpdl_global_avgpool_forward_##SUFFIX(const hpdl_tensor4 *xd, const T *x, T *y) { \
        return hpdl__global_avgpool_forward(hpdl__conv_type_##SUFFIX(), xd, x, y); \
    }                                                                          \
    HPDL_API hpdl_status hpdl_global_avgpool_backward_##SUFFIX(const hpdl_tensor4 *xd, const T *dy, T *dx) { \
        return hpdl__global_avgpool_backward(hpdl__conv_type_##SUFFIX(), xd, dy, dx); \
    }                                                                          \
    HPDL_API hpdl_status hpdl_batchnorm_forward_training_##SUFFIX(                                       \
        const hpdl_tensor4 *xd, const T *x, const ACC_T *gamma, const ACC_T *beta, double momentum, double eps, \
        ACC_T *running_mean, ACC_T *running_var, T *y, ACC_T *save_mean, ACC_T *save_invstd) {             \
        return hpdl__batchnorm_forward_training(hpdl__conv_type_##SUFFIX(), xd, x, gamma, beta, momentum, eps, \
                                                running_mean, running_var, y, save_mean, save_invstd);     \
    }                                                                          \
    HPDL_API hpdl_status hpdl_batchnorm_forward_inference_##SUFFIX(                                      \
        const hpdl_tensor4 *xd, const T *x, const ACC_T *gamma, const ACC_T *beta, const ACC_T *running_mean, \
        const ACC_T *running_var, double eps, T *y) {                          \
        return hpdl__batchnorm_forward_inference(hpdl__conv_type_##SUFFIX(), xd, x, gamma, beta, running_mean, \
                                                 running_var, eps, y);         \
    }                                                                          \
    HPDL_API hpdl_status hpdl_batchnorm_backward_##SUFFIX(const hpdl_tensor4 *xd, const T *x, const T *dy, \
                                                          const ACC_T *gamma, const ACC_T *save_mean,   \
                                                          const ACC_T *save_invstd, T *dx, ACC_T *dgamma, \
                                                          ACC_T *dbeta) {      \
        return hpdl__batchnorm_backward(hpdl__conv_type_##SUFFIX(), xd, x, dy, gamma, save_mean, save_invstd, dx, \
                                        dgamma, dbeta);                        \
    }

/* hpdl_conv2d_forward_f32 hpdl_conv2d_backward_data_f32 hpdl_conv2d_backward_filter_f32
   hpdl_conv2d_bias_add_f32 hpdl_conv2d_bias_grad_f32 hpdl_maxpool2d_forward_f32
   hpdl_maxpool2d_backward_f32 hpdl_avgpool2d_forward_f32 hpdl_avgpool2d_backward_f32
   hpdl_global_avgpool_forward_f32 hpdl_global_avgpool_backward_f32
   hpdl_batchnorm_forward_training_f32 hpdl_batchnorm_forward_inference_f32
   hpdl_batchnorm_backward_f32 hpdl_conv2d_forward_f64 hpdl_conv2d_backward_data_f64
   hpdl_conv2d_backward_filter_f64 hpdl_conv2d_bias_add_f64 hpdl_conv2d_bias_grad_f64
   hpdl_maxpool2d_forward_f64 hpdl_maxpool2d_backward_f64 hpdl_avgpool2d_forward_f64
   hpdl_avgpool2d_backward_f64 hpdl_global_avgpool_forward_f64 hpdl_global_avgpool_backward_f64
   hpdl_batchnorm_forward_training_f64 hpdl_batchnorm_forward_inference_f64
   hpdl_batchnorm_backward_f64 hpdl_conv2d_forward_f16 hpdl_conv2d_backward_data_f16
   hpdl_conv2d_backward_filter_f16 hpdl_conv2d_bias_add_f16 hpdl_conv2d_bias_grad_f16
   hpdl_maxpool2d_forward_f16 hpdl_maxpool2d_backward_f16 hpdl_avgpool2d_forward_f16
   hpdl_avgpool2d_backward_f16 hpdl_global_avgpool_forward_f16 hpdl_global_avgpool_backward_f16
   hpdl_batchnorm_forward_training_f16 hpdl_batchnorm_forward_inference_f16
   hpdl_batchnorm_backward_f16 hpdl_conv2d_forward_bf16 hpdl_conv2d_backward_data_bf16
   hpdl_conv2d_backward_filter_bf16 hpdl_conv2d_bias_add_bf16 hpdl_conv2d_bias_grad_bf16
   hpdl_maxpool2d_forward_bf16 hpdl_maxpool2d_backward_bf16 hpdl_avgpool2d_forward_bf16
   hpdl_avgpool2d_backward_bf16 hpdl_global_avgpool_forward_bf16 hpdl_global_avgpool_backward_bf16
   hpdl_batchnorm_forward_training_bf16 hpdl_batchnorm_forward_inference_bf16
   hpdl_batchnorm_backward_bf16 */
HPDL_FOR_EACH_FLOAT_TYPE(HPDL_DEFINE_CONV)

/* ------------------------------------------------------------------------ */
/* Matrix power by repeated squaring                                         */
/* ------------------------------------------------------------------------ */

/* out = A^power (n x n). floor(log2 power) squarings plus one product per
   further set bit; intermediates are stored in T. out must not overlap A. */
#define HPDL_DEFINE_MATPOW(SUFFIX, T, ACC_T, LOAD, STORE)                      \
    static inline void hpdl__identity_##SUFFIX(int n, T *out, int ldo) {       \
        int r, c;                                                              \
        for (r = 0; r < n; r++)                                                \
            for (c = 0; c < n; c++) out[(size_t)r * ldo + c] = STORE(r == c ? 1 : 0); \
    }                                                                          \
    /* n x n matrices with ld n: c = a*b */                                    \
    static inline hpdl_status hpdl__square_mul_##SUFFIX(int n, const T *a, const T *b, T *c) { \
        return hpdl_gemm_##SUFFIX(HPDL_NO_TRANS, HPDL_NO_TRANS, n, n, n, 1, a, n, b, n, 0, c, n); \
    }                                                                          \
    /* ws holds three n x n matrices; power >= 1. */                           \
    static inline hpdl_status hpdl__matpow_squaring_##SUFFIX(int n, int power, T *ws, T **result) { \
        T *base = ws, *res = ws + (size_t)n * n, *tmp = res + (size_t)n * n, *swap; \
        int have_res = 0;                                                      \
        hpdl_status st = HPDL_OK;                                              \
        for (;;) {                                                             \
            if (power & 1) {                                                   \
                if (have_res) st = hpdl__square_mul_##SUFFIX(n, res, base, tmp); \
                else memcpy(tmp, base, (size_t)n * n * sizeof(T));             \
                swap = res; res = tmp; tmp = swap;                             \
                have_res = 1;                                                  \
            }                                                                  \
            power >>= 1;                                                       \
            if (!power || st != HPDL_OK) break;                                \
            st = hpdl__square_mul_##SUFFIX(n, base, base, tmp);                \
            swap = base; base = tmp; tmp = swap;                               \
        }                                                                      \
        *result = res;                                                         \
        return st;                                                             \
    }                                                                          \
    HPDL_API hpdl_status hpdl_matpow_##SUFFIX(int n, int power, const T *A, int lda, T *out, int ldo) { \
        T *ws, *res;                                                           \
        hpdl_status st;                                                        \
        if (power < 0 || hpdl__check_matrix(A, n, n, lda) != HPDL_OK ||        \
            hpdl__check_matrix(out, n, n, ldo) != HPDL_OK ||                   \
            hpdl__square_views_overlap(A, lda, out, ldo, n, sizeof(T)))        \
            return HPDL_ERR_INVALID;                                           \
        if (n == 0) return HPDL_OK;                                            \
        if (power == 0) { hpdl__identity_##SUFFIX(n, out, ldo); return HPDL_OK; } \
        if (power == 1) { hpdl__copy_rows(out, ldo, A, lda, n, n, sizeof(T)); return HPDL_OK; } \
        ws = (T *)hpdl_alloc((size_t)3 * n * n, sizeof(T));                    \
        if (!ws) return HPDL_ERR_NOMEM;                                        \
        hpdl__copy_rows(ws, n, A, lda, n, n, sizeof(T));                       \
        st = hpdl__matpow_squaring_##SUFFIX(n, power, ws, &res);               \
        if (st == HPDL_OK) hpdl__copy_rows(out, ldo, res, n, n, n, sizeof(T)); \
        HPDL_FREE(ws);                                                         \
        return st;                                                             \
    }

/* hpdl_matpow_f32 hpdl_matpow_f64 hpdl_matpow_f16 hpdl_matpow_bf16 */
HPDL_FOR_EACH_FLOAT_TYPE(HPDL_DEFINE_MATPOW)

/* ------------------------------------------------------------------------ */
/* Activations and their gradients (outputs may alias inputs)                */
/* ------------------------------------------------------------------------ */

/* relu: y = max(x, 0); relu_grad: dx = dy where y > 0, else 0.
   sigmoid: y = 1/(1+exp(-x)), finite for any x; sigmoid_grad: dx = dy*y*(1-y). */
#define HPDL_DEFINE_ACTIVATIONS(SUFFIX, T, ACC_T, LOAD, STORE)                 \
    HPDL_API hpdl_status hpdl_relu_##SUFFIX(int64_t n, const T *x, T *y) {     \
        int64_t i;                                                             \
        if (!hpdl__vec_args_ok(n, x, y, y)) return HPDL_ERR_INVALID;           \
        for (i = 0; i < n; i++) {                                              \
            ACC_T v = (ACC_T)LOAD(x[i]);                                       \
            y[i] = STORE(v < 0 ? (ACC_T)0 : v);                                \
        }                                                                      \
        return HPDL_OK;                                                        \
    }                                                                          \
    HPDL_API hpdl_status hpdl_relu_grad_##SUFFIX(int64_t n, const T *y, const T *dy, T *dx) { \
        int64_t i;                                                             \
        if (!hpdl__vec_args_ok(n, y, dy, dx)) return HPDL_ERR_INVALID;         \
        for (i = 0; i < n; i++) dx[i] = STORE((ACC_T)LOAD(y[i]) > 0 ? (ACC_T)LOAD(dy[i]) : (ACC_T)0); \
        return HPDL_OK;                                                        \
    }                                                                          \
    HPDL_API hpdl_status hpdl_sigmoid_##SUFFIX(int64_t n, const T *x, T *y) {  \
        int64_t i;                                                             \
        if (!hpdl__vec_args_ok(n, x, y, y)) return HPDL_ERR_INVALID;           \
        for (i = 0; i < n; i++) y[i] = STORE(hpdl__sigmoid((double)LOAD(x[i]))); \
        return HPDL_OK;                                                        \
    }                                                                          \
    HPDL_API hpdl_status hpdl_sigmoid_grad_##SUFFIX(int64_t n, const T *y, const T *dy, T *dx) { \
        int64_t i;                                                             \
        if (!hpdl__vec_args_ok(n, y, dy, dx)) return HPDL_ERR_INVALID;         \
        for (i = 0; i < n; i++) {                                              \
            ACC_T s = (ACC_T)LOAD(y[i]);                                       \
            dx[i] = STORE((ACC_T)LOAD(dy[i]) * s * (1 - s));                   \
        }                                                                      \
        return HPDL_OK;                                                        \
    }

/* hpdl_relu_f32 hpdl_relu_grad_f32 hpdl_sigmoid_f32 hpdl_sigmoid_grad_f32 hpdl_relu_f64
   hpdl_relu_grad_f64 hpdl_sigmoid_f64 hpdl_sigmoid_grad_f64 hpdl_relu_f16 hpdl_relu_grad_f16
   hpdl_sigmoid_f16 hpdl_sigmoid_grad_f16 hpdl_relu_bf16 hpdl_relu_grad_bf16 hpdl_sigmoid_bf16
   hpdl_sigmoid_grad_bf16 */
HPDL_FOR_EACH_FLOAT_TYPE(HPDL_DEFINE_ACTIVATIONS)

/* ------------------------------------------------------------------------ */
/* Softmax + cross-entropy                                                   */
/* ------------------------------------------------------------------------ */

/* loss = mean over rows of -log softmax(logits)[label], by log-sum-exp after
   subtracting the row maximum (finite for any finite logits), in double.
   grad (optional; may equal logits when ldg == ld) = (softmax - onehot)/rows.
   Labels are all checked before anything is written. */
#define HPDL_DEFINE_SOFTMAX_XENT(SUFFIX, T, ACC_T, LOAD, STORE)                \
    /* One row: returns -log p[label]; writes grad row g (if any) scaled. */   \
    static inline double hpdl__xent_row_##SUFFIX(int cols, const T *x, int label, T *g, double scale) { \
        double mx = (double)LOAD(x[0]), sum = 0.0, xl = (double)LOAD(x[label]); \
        int j;                                                                 \
        for (j = 1; j < cols; j++) mx = (double)LOAD(x[j]) > mx ? (double)LOAD(x[j]) : mx; \
        for (j = 0; j < cols; j++) sum += exp((double)LOAD(x[j]) - mx);        \
        for (j = 0; g && j < cols; j++)                                        \
            g[j] = STORE(scale * (exp((double)LOAD(x[j]) - mx) / sum - (j == label ? 1.0 : 0.0))); \
        return mx + log(sum) - xl;                                             \
    }                                                                          \
    HPDL_API hpdl_status hpdl_softmax_xent_##SUFFIX(int rows, int cols, const T *logits, int ld, \
                                                    const int32_t *labels, T *grad, int ldg, double *loss) { \
        double total = 0.0;                                                    \
        int r;                                                                 \
        if (rows < 1 || cols < 1 || !loss || hpdl__check_matrix(logits, rows, cols, ld) != HPDL_OK || \
            (grad && hpdl__check_matrix(grad, rows, cols, ldg) != HPDL_OK) || \
            !hpdl__labels_ok(rows, labels, cols))                              \
            return HPDL_ERR_INVALID;                                           \
        for (r = 0; r < rows; r++)                                             \
            total += hpdl__xent_row_##SUFFIX(cols, logits + (size_t)r * ld, labels[r], \
                                             grad ? grad + (size_t)r * ldg : NULL, 1.0 / rows); \
        *loss = total / rows;                                                  \
        return HPDL_OK;                                                        \
    }

/* hpdl_softmax_xent_f32 hpdl_softmax_xent_f64 hpdl_softmax_xent_f16 hpdl_softmax_xent_bf16 */
HPDL_FOR_EACH_FLOAT_TYPE(HPDL_DEFINE_SOFTMAX_XENT)

/* ------------------------------------------------------------------------ */
/* Command-line numbers: strict, and the error names the flag               */
/* ------------------------------------------------------------------------ */

/* The whole of `text` must be one number: no leading space, no trailing
   text ("16abc"), nothing empty. Otherwise, or outside [min, max],
   HPDL_ERR_INVALID with *out untouched and a line on stderr that names the
   flag, e.g. "hpdl: --seed: 'abc' is not an integer in [0, ...]". */
static inline hpdl_status hpdl__arg_refuse(const char *flag, const char *text, const char *what) {
    fprintf(stderr, "hpdl: %s: '%s' is not %s\n", flag ? flag : "argument", text ? text : "(null)", what);
    return HPDL_ERR_INVALID;
}

/* A decimal integer in [min, max] into *out, by the rules above ('-' allowed, '+' not); a NULL
   text or out is refused the same way. */
HPDL_API hpdl_status hpdl_arg_i64(const char *flag, const char *text, int64_t min, int64_t max, int64_t *out) {
    char what[96], *end;
    long long v;
    snprintf(what, sizeof what, "an integer in [%lld, %lld]", (long long)min, (long long)max);
    if (!out || !text || (*text != '-' && (*text < '0' || *text > '9'))) return hpdl__arg_refuse(flag, text, what);
    errno = 0;
    v = strtoll(text, &end, 10);
    if (errno == ERANGE || *end || v < min || v > max) return hpdl__arg_refuse(flag, text, what);
    *out = (int64_t)v;
    return HPDL_OK;
}

/* hpdl_arg_i64 for an int; a NULL out returns HPDL_ERR_INVALID without a message. */
HPDL_API hpdl_status hpdl_arg_int(const char *flag, const char *text, int min, int max, int *out) {
    int64_t v;
    hpdl_status st = out ? hpdl_arg_i64(flag, text, min, max, &v) : HPDL_ERR_INVALID;
    if (st == HPDL_OK) *out = (int)v;
    return st;
}

/* A finite number in [min, max] ("1e-3", "-0.5"; not "nan", "inf", "1e999"). */
HPDL_API hpdl_status hpdl_arg_f64(const char *flag, const char *text, double min, double max, double *out) {
    char what[96], *end;
    double v;
    snprintf(what, sizeof what, "a finite number in [%g, %g]", min, max);
    if (!out || !text || !*text || strchr(" \t\n\v\f\r", *text)) return hpdl__arg_refuse(flag, text, what);
    v = strtod(text, &end);
    if (*end || !(fabs(v) <= DBL_MAX) || !(v >= min && v <= max)) return hpdl__arg_refuse(flag, text, what);
    *out = v;
    return HPDL_OK;
}

/* The items of a comma-separated list of integers ("32,128,512"), each by
   hpdl_arg_int's rules, at most `capacity` of them; written into out unless
   it is NULL (a check only). */
static inline hpdl_status hpdl__arg_int_items(const char *flag, const char *text, int min, int max, int *out,
                                              int capacity, int *count) {
    char what[128], item[24];
    const char *p = text;
    int n = 0, v;
    snprintf(what, sizeof what, "a list of 1 to %d integers in [%d, %d], comma-separated", capacity, min, max);
    for (;;) {
        size_t len = strcspn(p, ",");
        if (n == capacity || len >= sizeof item) return hpdl__arg_refuse(flag, text, what);
        memcpy(item, p, len);
        item[len] = '\0';
        if (hpdl_arg_int(flag, item, min, max, &v) != HPDL_OK) return HPDL_ERR_INVALID;
        if (out) out[n] = v;
        n++;
        if (!p[len]) break;
        p += len + 1; /* past the comma: an item must follow */
    }
    *count = n;
    return HPDL_OK;
}

/* A comma-separated list of integers in [min, max] ("32,128,512"; no
   spaces, no empty items) into out[0 .. *count - 1], 1 to `capacity` of
   them. Otherwise HPDL_ERR_INVALID with out and *count untouched and a line
   on stderr that names the flag, as hpdl_arg_int. */
HPDL_API hpdl_status hpdl_arg_int_list(const char *flag, const char *text, int min, int max, int *out, int capacity,
                                       int *count) {
    int n = 0;
    if (!out || !count || capacity < 1 || !text) return hpdl__arg_refuse(flag, text, "a list of integers");
    if (hpdl__arg_int_items(flag, text, min, max, NULL, capacity, &n) != HPDL_OK) return HPDL_ERR_INVALID;
    return hpdl__arg_int_items(flag, text, min, max, out, capacity, count);
}

/* ------------------------------------------------------------------------ */
/* Command line: one table of flags per program                             */
/* ------------------------------------------------------------------------ */

/* Every example and bench describes its flags in a table and calls
   hpdl_cli_parse once, before it touches a GPU or MPI:

       int batch = 32; double lr = 0.05; const char *precision = "f32";
       hpdl_cli_option opts[3];
       opts[0] = hpdl_cli_int("batch", 'b', &batch, 1, 1 << 20, "mini-batch");
       opts[1] = hpdl_cli_f64("lr", 0, &lr, 0, 10, "learning rate");
       opts[2] = hpdl_cli_choice("precision", 0, &precision, "f32|f64", "element type");
       hpdl_cli_parse(argc, argv, "prog", "What prog does, in one line.", opts, 3);

   The variables hold the defaults, which --help prints. Accepted:
   --name value, --name=value, -s value (short name), bare words for
   positional options (hpdl_cli_positional), -h/--help (usage to stdout,
   exit 0) and --version ("<program> hpdl <HPDL_VERSION>", exit 0). A number
   that is not strict or out of range (hpdl_arg_*) exits 2 with one line
   that names the flag; an unknown flag, a missing value or an unknown
   choice exits 2 with the usage line on stderr. The same things have the
   same names everywhere (--batch, --hidden, --epochs, --lr, --seed,
   --precision, --algo, --gpus), and a program that writes CSV files takes
   --output DIR and hands it to hpdl_csv_set_dir. */
typedef enum hpdl_cli_kind {
    HPDL_CLI_FLAG,   /* no value: sets *(int *)value to 1 */
    HPDL_CLI_INT,    /* int in [min, max] */
    HPDL_CLI_I64,    /* int64_t in [min, max] */
    HPDL_CLI_F64,    /* finite double in [min, max] */
    HPDL_CLI_STRING, /* const char *: any text */
    HPDL_CLI_CHOICE  /* const char *: one word of `choices` ("f32|f64") */
} hpdl_cli_kind;

/* One row of a program's flag table; hpdl_cli_flag, hpdl_cli_int and the others make it. */
typedef struct hpdl_cli_option {
    const char *name;    /* long name without the dashes: "batch" for --batch */
    char short_name;     /* 'b' for -b, or 0 */
    hpdl_cli_kind kind;
    void *value;         /* int *, int64_t *, double * or const char **, holding the default */
    double min, max;     /* range of INT, I64, F64 */
    const char *choices; /* CHOICE: the words, '|' between them */
    const char *meta;    /* the value's name in the help: "DIR" */
    const char *help;    /* one line */
    int positional;      /* also the next bare word, in table order */
} hpdl_cli_option;

/* hpdl_cli_scan's return when the program goes on. */
#define HPDL_CLI_RUN (-1)

static inline hpdl_cli_option hpdl__cli_make(const char *name, char short_name, hpdl_cli_kind kind,
                                             void *value, const char *meta, const char *help) {
    hpdl_cli_option o;
    memset(&o, 0, sizeof o);
    o.name = name;
    o.short_name = short_name;
    o.kind = kind;
    o.value = value;
    o.meta = meta;
    o.help = help;
    return o;
}

/* --name sets *on to 1. */
HPDL_API hpdl_cli_option hpdl_cli_flag(const char *name, char short_name, int *on, const char *help) {
    return hpdl__cli_make(name, short_name, HPDL_CLI_FLAG, on, NULL, help);
}

/* --name N: an int in [min, max] into *value. */
HPDL_API hpdl_cli_option hpdl_cli_int(const char *name, char short_name, int *value, int min, int max,
                                      const char *help) {
    hpdl_cli_option o = hpdl__cli_make(name, short_name, HPDL_CLI_INT, value, "N", help);
    o.min = min;
    o.max = max;
    return o;
}

/* --name N: an int64_t in [min, max] into *value (the bounds are kept as doubles; from
   +-9.2e18 outwards they mean INT64_MIN and INT64_MAX). */
HPDL_API hpdl_cli_option hpdl_cli_i64(const char *name, char short_name, int64_t *value, int64_t min,
                                      int64_t max, const char *help) {
    hpdl_cli_option o = hpdl__cli_make(name, short_name, HPDL_CLI_I64, value, "N", help);
    o.min = (double)min;
    o.max = (double)max;
    return o;
}

/* --name X: a finite double in [min, max] into *value. */
HPDL_API hpdl_cli_option hpdl_cli_f64(const char *name, char short_name, double *value, double min, double max,
                                      const char *help) {
    hpdl_cli_option o = hpdl__cli_make(name, short_name, HPDL_CLI_F64, value, "X", help);
    o.min = min;
    o.max = max;
    return o;
}

/* Any text; meta names it in the help ("DIR", "FILE"). *value may be NULL (none). */
HPDL_API hpdl_cli_option hpdl_cli_string(const char *name, char short_name, const char **value, const char *meta,
                                         const char *help) {
    return hpdl__cli_make(name, short_name, HPDL_CLI_STRING, value, meta ? meta : "TEXT", help);
}

/* One of the words of choices ("nccl|mpi|ring"); *value points at it. */
HPDL_API hpdl_cli_option hpdl_cli_choice(const char *name, char short_name, const char **value,
                                         const char *choices, const char *help) {
    hpdl_cli_option o = hpdl__cli_make(name, short_name, HPDL_CLI_CHOICE, value, choices, help);
    o.choices = choices;
    return o;
}

/* o, also taken from a bare word: the first positional option of the table
   from the first bare word, and so on ("model_parallel 6 4096"). */
HPDL_API hpdl_cli_option hpdl_cli_positional(hpdl_cli_option o) {
    o.positional = 1;
    return o;
}

/* Where word is one of the '|'-separated words of list. */
static inline int hpdl__cli_in_list(const char *list, const char *word) {
    size_t n = strlen(word);
    while (list && *list) {
        const char *bar = strchr(list, '|');
        size_t len = bar ? (size_t)(bar - list) : strlen(list);
        if (len == n && !strncmp(list, word, n)) return 1;
        list = bar ? bar + 1 : NULL;
    }
    return 0;
}

/* "usage: prog [options] [DEPTH [DIM]]" (positional options by their
   names in capitals) and a newline. */
static inline void hpdl__cli_usage_line(FILE *f, const char *program, const hpdl_cli_option *opt, int n) {
    int i, open = 0;
    const char *c;
    fprintf(f, "usage: %s [options]", program);
    for (i = 0; i < n; i++) {
        if (!opt[i].positional) continue;
        fputs(" [", f);
        for (c = opt[i].name; *c; c++) fputc(*c >= 'a' && *c <= 'z' ? *c - 'a' + 'A' : *c == '-' ? '_' : *c, f);
        open++;
    }
    while (open--) fputc(']', f);
    fputc('\n', f);
}

/* The default of one option, as --help shows it ("" for none). */
static inline void hpdl__cli_default(const hpdl_cli_option *o, char *buf, size_t size) {
    const char *s;
    buf[0] = '\0';
    switch (o->kind) {
    case HPDL_CLI_INT: snprintf(buf, size, " [%d]", *(const int *)o->value); break;
    case HPDL_CLI_I64: snprintf(buf, size, " [%lld]", (long long)*(const int64_t *)o->value); break;
    case HPDL_CLI_F64: snprintf(buf, size, " [%g]", *(const double *)o->value); break;
    case HPDL_CLI_STRING:
    case HPDL_CLI_CHOICE:
        s = *(const char *const *)o->value;
        snprintf(buf, size, " [%s]", s ? s : "none");
        break;
    default: break;
    }
}

/* One option's line of the help: "  -b, --batch N    mini-batch [32]". */
static inline void hpdl__cli_help_line(FILE *f, const hpdl_cli_option *o) {
    char left[128], def[160];
    if (o->short_name) snprintf(left, sizeof left, "-%c, --%s%s%s", o->short_name, o->name, o->meta ? " " : "",
                                o->meta ? o->meta : "");
    else snprintf(left, sizeof left, "    --%s%s%s", o->name, o->meta ? " " : "", o->meta ? o->meta : "");
    hpdl__cli_default(o, def, sizeof def);
    if (strlen(left) > 24) fprintf(f, "  %s\n  %-24s", left, "");
    else fprintf(f, "  %-24s", left);
    fprintf(f, " %s%s%s\n", o->help ? o->help : "", def, o->positional ? " (or a bare word)" : "");
}

/* The whole help: usage line, summary, every option with its default. */
static inline void hpdl__cli_help(FILE *f, const char *program, const char *summary, const hpdl_cli_option *opt,
                                  int n) {
    int i;
    hpdl__cli_usage_line(f, program, opt, n);
    if (summary && *summary) fprintf(f, "%s\n", summary);
    fprintf(f, "\noptions (defaults in brackets):\n");
    for (i = 0; i < n; i++) hpdl__cli_help_line(f, &opt[i]);
    fprintf(f, "  %-24s this help\n  %-24s the program and hpdl version\n", "-h, --help", "    --version");
}

/* A bad command line: the reason, the usage line, 2. */
static inline int hpdl__cli_refuse(const char *program, const hpdl_cli_option *opt, int n, const char *why,
                                   const char *word) {
    fprintf(stderr, "%s: %s '%s'\n", program, why, word);
    hpdl__cli_usage_line(stderr, program, opt, n);
    fprintf(stderr, "(%s --help lists the options)\n", program);
    return 2;
}

/* Stores text into o's variable; 0, or 2 after a message that names the flag. */
static inline int hpdl__cli_store(const char *program, const hpdl_cli_option *opt, int n, const hpdl_cli_option *o,
                                  const char *text) {
    char flag[80];
    hpdl_status s = HPDL_OK;
    snprintf(flag, sizeof flag, "--%s", o->name);
    switch (o->kind) {
    case HPDL_CLI_INT: s = hpdl_arg_int(flag, text, (int)o->min, (int)o->max, (int *)o->value); break;
    case HPDL_CLI_I64:
        s = hpdl_arg_i64(flag, text, o->min <= -9.2e18 ? INT64_MIN : (int64_t)o->min,
                         o->max >= 9.2e18 ? INT64_MAX : (int64_t)o->max, (int64_t *)o->value);
        break;
    case HPDL_CLI_F64: s = hpdl_arg_f64(flag, text, o->min, o->max, (double *)o->value); break;
    case HPDL_CLI_CHOICE:
        if (!hpdl__cli_in_list(o->choices, text)) {
            fprintf(stderr, "%s: %s: '%s' is not one of %s\n", program, flag, text, o->choices);
            hpdl__cli_usage_line(stderr, program, opt, n);
            return 2;
        }
        *(const char **)o->value = text;
        break;
    case HPDL_CLI_STRING: *(const char **)o->value = text; break;
    case HPDL_CLI_FLAG: *(int *)o->value = 1; break;
    }
    return s == HPDL_OK ? 0 : 2;
}

/* The option that word ("--batch", "--batch=8", "-b") names, or NULL;
   *inline_value is the text after '=' when there is one. */
static inline const hpdl_cli_option *hpdl__cli_find(const char *word, const hpdl_cli_option *opt, int n,
                                                    const char **inline_value) {
    int i;
    *inline_value = NULL;
    if (word[0] == '-' && word[1] == '-') {
        const char *name = word + 2, *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        for (i = 0; i < n; i++)
            if (strlen(opt[i].name) == len && !strncmp(opt[i].name, name, len)) {
                *inline_value = eq ? eq + 1 : NULL;
                return &opt[i];
            }
    } else if (word[0] == '-' && word[1] && !word[2]) {
        for (i = 0; i < n; i++)
            if (opt[i].short_name == word[1]) return &opt[i];
    }
    return NULL;
}

/* One flag at argv[*i] (and its value, which moves *i on); 0 or 2. */
static inline int hpdl__cli_flag(int argc, char **argv, int *i, const char *program, const hpdl_cli_option *opt,
                                 int n) {
    const char *value;
    const hpdl_cli_option *o = hpdl__cli_find(argv[*i], opt, n, &value);
    if (!o) return hpdl__cli_refuse(program, opt, n, "unknown flag", argv[*i]);
    if (o->kind == HPDL_CLI_FLAG)
        return value ? hpdl__cli_refuse(program, opt, n, "takes no value:", argv[*i])
                     : hpdl__cli_store(program, opt, n, o, "");
    if (!value) {
        if (*i + 1 >= argc) return hpdl__cli_refuse(program, opt, n, "missing the value of", argv[*i]);
        value = argv[++*i];
    }
    return hpdl__cli_store(program, opt, n, o, value);
}

/* The option the next bare word fills (after `used` bare words), or NULL. */
static inline const hpdl_cli_option *hpdl__cli_positional(const hpdl_cli_option *opt, int n, int used) {
    int i;
    for (i = 0; i < n; i++)
        if (opt[i].positional && used-- == 0) return &opt[i];
    return NULL;
}

/* 1 when every option has a name and a variable (and a CHOICE its words). */
static inline int hpdl__cli_table_ok(const hpdl_cli_option *opt, int n) {
    int i;
    if (n < 0 || (n > 0 && !opt)) return 0;
    for (i = 0; i < n; i++)
        if (!opt[i].name || !opt[i].value || (opt[i].kind == HPDL_CLI_CHOICE && !opt[i].choices)) return 0;
    return 1;
}

/* The parse without exiting: HPDL_CLI_RUN when the program goes on, else
   the status to exit with: 0 after --help or --version (printed to out),
   2 after a message on stderr (also for a NULL argv, program or out, or a
   table with an option that lacks its name or variable). Variables of
   flags read before a bad one are already set. */
HPDL_API int hpdl_cli_scan(int argc, char **argv, const char *program, const char *summary,
                           const hpdl_cli_option *opt, int n, FILE *out) {
    int i, bare = 0, rc;
    if (argc < 0 || (argc > 0 && !argv) || !program || !out || !hpdl__cli_table_ok(opt, n)) {
        fprintf(stderr, "hpdl: hpdl_cli_scan: no arguments, program name or output, or an option without its "
                        "name or variable\n");
        return 2;
    }
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { hpdl__cli_help(out, program, summary, opt, n); return 0; }
        if (!strcmp(a, "--version")) { fprintf(out, "%s hpdl %s\n", program, HPDL_VERSION); return 0; }
    }
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] == '-' && a[1] && !(a[1] >= '0' && a[1] <= '9') && a[1] != '.') {
            rc = hpdl__cli_flag(argc, argv, &i, program, opt, n);
        } else {
            const hpdl_cli_option *o = hpdl__cli_positional(opt, n, bare++);
            rc = o ? hpdl__cli_store(program, opt, n, o, a) : hpdl__cli_refuse(program, opt, n, "unexpected word", a);
        }
        if (rc) return rc;
    }
    return HPDL_CLI_RUN;
}

/* hpdl_cli_scan with the help on stdout, and exit() unless the program goes on. */
HPDL_API void hpdl_cli_parse(int argc, char **argv, const char *program, const char *summary,
                             const hpdl_cli_option *opt, int n) {
    int rc = hpdl_cli_scan(argc, argv, program, summary, opt, n, stdout);
    if (rc != HPDL_CLI_RUN) exit(rc);
}

/* ------------------------------------------------------------------------ */
/* MLP: hidden layers act(X·W + b), softmax cross-entropy output, SGD        */
/* ------------------------------------------------------------------------ */

#define HPDL_MLP_MAX_LAYERS 16

/* Parses hidden-layer widths like "512" or "1024,256" into widths[1..] after
   widths[0] = in, and appends out: widths becomes in-h1-...-out and *n_widths
   its length. Returns HPDL_ERR_INVALID (writing nothing) on an empty or
   malformed list (only digits and single commas between widths: "5,", " 5",
   "+5" and "5,,6" are malformed), a width <= 0 or > 2^20, or more than
   HPDL_MLP_MAX_LAYERS weight layers. */
HPDL_API hpdl_status hpdl_mlp_parse_widths(const char *hidden, int in, int out, int *widths, int *n_widths) {
    int parsed[HPDL_MLP_MAX_LAYERS + 1], n = 1;
    const char *p = hidden;
    if (!hidden || !widths || !n_widths || in <= 0 || out <= 0) return HPDL_ERR_INVALID;
    parsed[0] = in;
    for (;;) {
        char *end;
        long v;
        if (*p < '0' || *p > '9') return HPDL_ERR_INVALID; /* strtol would skip spaces and take a sign */
        v = strtol(p, &end, 10);
        if (v <= 0 || v > 1L << 20 || n >= HPDL_MLP_MAX_LAYERS) return HPDL_ERR_INVALID;
        parsed[n++] = (int)v;
        if (*end == '\0') break;
        if (*end != ',') return HPDL_ERR_INVALID;
        p = end + 1;
    }
    parsed[n++] = out;
    memcpy(widths, parsed, (size_t)n * sizeof *widths);
    *n_widths = n;
    return HPDL_OK;
}

/* 2..HPDL_MLP_MAX_LAYERS+1 widths, each at least 1. */
static inline int hpdl__mlp_widths_ok(int n_widths, const int *widths) {
    int i;
    if (!widths || n_widths < 2 || n_widths > HPDL_MLP_MAX_LAYERS + 1) return 0;
    for (i = 0; i < n_widths; i++)
        if (widths[i] < 1) return 0;
    return 1;
}

static inline int hpdl__activation_ok(hpdl_activation act) {
    return act == HPDL_ACT_SIGMOID || act == HPDL_ACT_RELU;
}

static inline int hpdl__same_widths(int n_layers, const int *a, int n_layers_b, const int *b) {
    return n_layers == n_layers_b && memcmp(a, b, (size_t)(n_layers + 1) * sizeof *a) == 0;
}

/* Learning rate and L2 strength: finite and not negative. */
static inline int hpdl__hyper_ok(double lr, double l2) {
    return lr >= 0 && l2 >= 0 && lr <= DBL_MAX && l2 <= DBL_MAX;
}

/* The MLP's logic is written once, in the ordinary functions hpdl__mlp_*_any
   below. They see a model as hpdl__mlp_any, the fields of hpdl_mlp_<t> with
   untyped buffers, and do their arithmetic through the type's table of
   numeric primitives (hpdl__mlp_ops), each of which covers a whole layer or
   row, so the indirect calls never sit in an inner loop. The macros only
   declare the typed structs, convert them to these views and call.
   A view is a byte copy of the typed struct: the members are the same in the
   same order, and T * and void * have one representation on every platform
   hpdl supports (the size check after each typed struct guards the layout). */
typedef struct hpdl__mlp_any {
    int n_layers;
    int widths[HPDL_MLP_MAX_LAYERS + 1];
    hpdl_activation act;
    void *W[HPDL_MLP_MAX_LAYERS];
    void *b[HPDL_MLP_MAX_LAYERS];
} hpdl__mlp_any;

/* One element type's numeric primitives for the MLP code. */
typedef struct hpdl__mlp_ops {
    size_t size; /* bytes per element */
    /* w[0..n) = scale * standard normal draws, in order */
    void (*fill_normal)(size_t n, void *w, double scale, hpdl_rng *rng);
    /* w -= lr*(g + l2*w); see hpdl__sgd_update_<t> */
    int (*sgd_update)(size_t n, void *w, const void *g, double lr, double l2, int write);
    /* C = op(A)·op(B), alpha 1 and beta 0 */
    hpdl_status (*gemm)(hpdl_transpose ta, hpdl_transpose tb, int M, int N, int K, const void *A, int lda,
                        const void *B, int ldb, void *C, int ldc);
    /* y = act(y + b), b added to each of the rows; hidden 0: no activation */
    hpdl_status (*bias_act)(int rows, int cols, void *y, const void *b, int hidden, hpdl_activation act);
    /* delta *= act'(y), from the activation's output y */
    hpdl_status (*act_grad)(int64_t n, const void *y, void *delta, hpdl_activation act);
    /* hpdl_softmax_xent_<t> on packed rows */
    hpdl_status (*softmax_xent)(int rows, int cols, const void *logits, const int32_t *labels, void *grad,
                                double *loss);
    /* db[c] = sum over rows of d[r][c] */
    void (*column_sums)(int rows, int cols, const void *d, void *db);
    /* how many rows' largest logit is at their label */
    int64_t (*argmax_hits)(int rows, int cols, const void *logits, const int32_t *labels);
    /* x rounded to the accumulation type, as a typed ACC_T argument is */
    double (*to_acc)(double x);
    /* x[0..n) *= s, in double, stored as T */
    void (*scale)(size_t n, void *x, double s);
    /* sqrt(sum of x[i]^2), in double */
    double (*norm)(size_t n, const void *x);
} hpdl__mlp_ops;

/* The typed primitives and the table, hpdl__mlp_ops_<t>(). */
#define HPDL__DEFINE_MLP_OPS(SUFFIX, T, ACC_T, LOAD, STORE)                   \
    static inline void hpdl__fill_normal_##SUFFIX(size_t n, void *w_buf, double scale, hpdl_rng *rng) { \
        T *w = (T *)w_buf;                                                     \
        size_t i;                                                              \
        for (i = 0; i < n; i++) w[i] = STORE(scale * hpdl_rng_normal(rng));    \
    }                                                                          \
    /* w -= lr*(g + l2*w) over n elements, in ACC_T (lr and l2 are ACC_T     \
       values); with write 0 only checks that every new value (as stored in  \
       T) is finite. */                                                        \
    static inline int hpdl__sgd_update_##SUFFIX(size_t n, void *w_buf, const void *g_buf, double lr_in, \
                                                double l2_in, int write) {     \
        T *w = (T *)w_buf;                                                     \
        const T *g = (const T *)g_buf;                                         \
        ACC_T lr = (ACC_T)lr_in, l2 = (ACC_T)l2_in;                            \
        size_t i;                                                              \
        for (i = 0; i < n; i++) {                                              \
            ACC_T v = (ACC_T)LOAD(w[i]);                                       \
            T next = STORE(v - lr * ((ACC_T)LOAD(g[i]) + l2 * v));             \
            if (!write && !(fabs((double)LOAD(next)) <= DBL_MAX)) return 0;    \
            if (write) w[i] = next;                                            \
        }                                                                      \
        return 1;                                                              \
    }                                                                          \
    static inline hpdl_status hpdl__mlp_gemm_##SUFFIX(hpdl_transpose ta, hpdl_transpose tb, int M, int N, int K, \
                                                      const void *A, int lda, const void *B, int ldb, void *C, \
                                                      int ldc) {               \
        return hpdl_gemm_##SUFFIX(ta, tb, M, N, K, 1, (const T *)A, lda, (const T *)B, ldb, 0, (T *)C, ldc); \
    }                                                                          \
    static inline hpdl_status hpdl__mlp_bias_act_##SUFFIX(int rows, int cols, void *y_buf, const void *b, \
                                                          int hidden, hpdl_activation act) { \
        T *y = (T *)y_buf;                                                     \
        int64_t n = (int64_t)rows * cols;                                      \
        int r;                                                                 \
        for (r = 0; r < rows; r++)                                             \
            hpdl_vec_add_##SUFFIX(cols, y + (size_t)r * cols, (const T *)b, y + (size_t)r * cols); \
        if (!hidden) return HPDL_OK;                                           \
        return act == HPDL_ACT_RELU ? hpdl_relu_##SUFFIX(n, y, y) : hpdl_sigmoid_##SUFFIX(n, y, y); \
    }                                                                          \
    static inline hpdl_status hpdl__mlp_act_grad_##SUFFIX(int64_t n, const void *y_buf, void *delta_buf, \
                                                          hpdl_activation act) { \
        const T *y = (const T *)y_buf;                                         \
        T *delta = (T *)delta_buf;                                             \
        return act == HPDL_ACT_RELU ? hpdl_relu_grad_##SUFFIX(n, y, delta, delta) \
                                    : hpdl_sigmoid_grad_##SUFFIX(n, y, delta, delta); \
    }                                                                          \
    static inline hpdl_status hpdl__mlp_xent_##SUFFIX(int rows, int cols, const void *logits, const int32_t *labels, \
                                                      void *grad, double *loss) { \
        return hpdl_softmax_xent_##SUFFIX(rows, cols, (const T *)logits, cols, labels, (T *)grad, cols, loss); \
    }                                                                          \
    static inline void hpdl__column_sums_##SUFFIX(int rows, int cols, const void *d_buf, void *db_buf) { \
        const T *d = (const T *)d_buf;                                         \
        T *db = (T *)db_buf;                                                   \
        int r, c;                                                              \
        for (c = 0; c < cols; c++) {                                           \
            ACC_T s = 0;                                                       \
            for (r = 0; r < rows; r++) s += (ACC_T)LOAD(d[(size_t)r * cols + c]); \
            db[c] = STORE(s);                                                  \
        }                                                                      \
    }                                                                          \
    /* First on ties. */                                                       \
    static inline int64_t hpdl__argmax_hits_##SUFFIX(int rows, int cols, const void *logits, const int32_t *labels) { \
        int64_t hits = 0;                                                      \
        int r, c, best;                                                        \
        for (r = 0; r < rows; r++) {                                           \
            const T *x = (const T *)logits + (size_t)r * cols;                 \
            for (c = 1, best = 0; c < cols; c++) best = LOAD(x[c]) > LOAD(x[best]) ? c : best; \
            hits += best == labels[r];                                         \
        }                                                                      \
        return hits;                                                           \
    }                                                                          \
    static inline double hpdl__to_acc_##SUFFIX(double x) { return (ACC_T)x; }  \
    static inline void hpdl__scale_##SUFFIX(size_t n, void *x_buf, double s) {  \
        T *x = (T *)x_buf;                                                     \
        size_t i;                                                              \
        for (i = 0; i < n; i++) x[i] = STORE((double)LOAD(x[i]) * s);          \
    }                                                                          \
    static inline double hpdl__norm_##SUFFIX(size_t n, const void *x_buf) {    \
        const T *x = (const T *)x_buf;                                         \
        double sum = 0;                                                        \
        size_t i;                                                              \
        for (i = 0; i < n; i++) sum += (double)LOAD(x[i]) * (double)LOAD(x[i]); \
        return sqrt(sum);                                                      \
    }                                                                          \
    static inline const hpdl__mlp_ops *hpdl__mlp_ops_##SUFFIX(void) {         \
        static const hpdl__mlp_ops ops = {sizeof(T), hpdl__fill_normal_##SUFFIX, hpdl__sgd_update_##SUFFIX, \
                                          hpdl__mlp_gemm_##SUFFIX, hpdl__mlp_bias_act_##SUFFIX, \
                                          hpdl__mlp_act_grad_##SUFFIX, hpdl__mlp_xent_##SUFFIX, \
                                          hpdl__column_sums_##SUFFIX, hpdl__argmax_hits_##SUFFIX, \
                                          hpdl__to_acc_##SUFFIX, hpdl__scale_##SUFFIX, hpdl__norm_##SUFFIX}; \
        return &ops;                                                           \
    }

HPDL_FOR_EACH_FLOAT_TYPE(HPDL__DEFINE_MLP_OPS)

/* A usable model: sane widths and activation, every array allocated. */
static inline int hpdl__mlp_ok_any(const hpdl__mlp_any *m) {
    int l;
    if (!m || !hpdl__mlp_widths_ok(m->n_layers + 1, m->widths) || !hpdl__activation_ok(m->act)) return 0;
    for (l = 0; l < m->n_layers; l++)
        if (!m->W[l] || !m->b[l]) return 0;
    return 1;
}

/* Frees every buffer (all HPDL_MLP_MAX_LAYERS slots) and zeroes *m. */
static inline void hpdl__mlp_free_any(hpdl__mlp_any *m) {
    int l;
    for (l = 0; l < HPDL_MLP_MAX_LAYERS; l++) { HPDL_FREE(m->W[l]); HPDL_FREE(m->b[l]); }
    memset(m, 0, sizeof *m);
}

/* Zero-filled model of the given shape into *made; on error nothing is
   left allocated. */
static inline hpdl_status hpdl__mlp_create_zero_any(hpdl__mlp_any *made, int n_widths, const int *widths,
                                                   hpdl_activation act, const hpdl__mlp_ops *ops) {
    int l;
    if (!hpdl__mlp_widths_ok(n_widths, widths) || !hpdl__activation_ok(act)) return HPDL_ERR_INVALID;
    memset(made, 0, sizeof *made);
    made->n_layers = n_widths - 1;
    made->act = act;
    memcpy(made->widths, widths, (size_t)n_widths * sizeof *widths);
    for (l = 0; l < made->n_layers; l++) {
        size_t nw = (size_t)widths[l] * (size_t)widths[l + 1];
        made->W[l] = hpdl_alloc(nw, ops->size);
        made->b[l] = hpdl_alloc((size_t)widths[l + 1], ops->size);
        if (!made->W[l] || !made->b[l]) { hpdl__mlp_free_any(made); return HPDL_ERR_NOMEM; }
        memset(made->W[l], 0, nw * ops->size); /* all-zero bits: +0 in every type */
        memset(made->b[l], 0, (size_t)widths[l + 1] * ops->size);
    }
    return HPDL_OK;
}

/* He (ReLU: sqrt(2/in)) or Xavier-like (sigmoid: sqrt(1/in)) normal weights,
   drawn from one generator, layer by layer in row-major order; b = 0. */
static inline hpdl_status hpdl__mlp_create_any(hpdl__mlp_any *made, int n_widths, const int *widths,
                                              hpdl_activation act, uint64_t seed, const hpdl__mlp_ops *ops) {
    hpdl_status st = hpdl__mlp_create_zero_any(made, n_widths, widths, act, ops);
    hpdl_rng rng;
    int l;
    if (st != HPDL_OK) return st;
    hpdl_rng_seed(&rng, seed);
    for (l = 0; l < made->n_layers; l++)
        ops->fill_normal((size_t)widths[l] * (size_t)widths[l + 1], made->W[l],
                         sqrt((act == HPDL_ACT_RELU ? 2.0 : 1.0) / widths[l]), &rng);
    return HPDL_OK;
}

/* dst's weights, biases and activation from src, of the same shape. */
static inline hpdl_status hpdl__mlp_copy_any(hpdl__mlp_any *dst, const hpdl__mlp_any *src, const hpdl__mlp_ops *ops) {
    int l;
    if (!hpdl__mlp_ok_any(dst) || !hpdl__mlp_ok_any(src) ||
        !hpdl__same_widths(dst->n_layers, dst->widths, src->n_layers, src->widths))
        return HPDL_ERR_INVALID;
    dst->act = src->act;
    for (l = 0; l < src->n_layers; l++) {
        memcpy(dst->W[l], src->W[l], (size_t)src->widths[l] * src->widths[l + 1] * ops->size);
        memcpy(dst->b[l], src->b[l], (size_t)src->widths[l + 1] * ops->size);
    }
    return HPDL_OK;
}

/* W -= lr*(dW + l2*W); b -= lr*db (biases are not regularised).
   HPDL_ERR_NUMERIC, nothing changed, if a new value would not be finite
   (a NaN or infinite gradient, or a step that overflows): a first pass
   checks every layer, a second writes. */
static inline hpdl_status hpdl__mlp_sgd_any(hpdl__mlp_any *m, const hpdl__mlp_any *grad, double lr, double l2,
                                           const hpdl__mlp_ops *ops) {
    int l, write, ok = 1;
    if (!hpdl__mlp_ok_any(m) || !hpdl__mlp_ok_any(grad) || !hpdl__hyper_ok(lr, l2) ||
        !hpdl__same_widths(m->n_layers, m->widths, grad->n_layers, grad->widths))
        return HPDL_ERR_INVALID;
    for (write = 0; write < 2 && ok; write++)
        for (l = 0; l < m->n_layers && ok; l++)
            ok = ops->sgd_update((size_t)m->widths[l] * m->widths[l + 1], m->W[l], grad->W[l], lr, l2, write) &&
                 ops->sgd_update((size_t)m->widths[l + 1], m->b[l], grad->b[l], lr, 0, write);
    return ok ? HPDL_OK : HPDL_ERR_NUMERIC;
}

/* LARS (You, Gitman and Ginsburg 2017): each weight matrix's step scaled
   by its trust ratio eta ||W|| / (||G|| + l2 ||W||), so that a layer moves
   by about lr * eta of its own size whatever its gradient's scale; biases
   take the plain step (lr, no decay). A zero norm gives the ratio 1. */
static inline hpdl_status hpdl__mlp_lars_any(hpdl__mlp_any *m, const hpdl__mlp_any *grad, double lr, double l2,
                                            double eta, const hpdl__mlp_ops *ops) {
    double trust[HPDL_MLP_MAX_LAYERS];
    int l, write, ok = 1;
    if (!hpdl__mlp_ok_any(m) || !hpdl__mlp_ok_any(grad) || !hpdl__hyper_ok(lr, l2) || !(eta > 0 && eta < HUGE_VAL) ||
        !hpdl__same_widths(m->n_layers, m->widths, grad->n_layers, grad->widths))
        return HPDL_ERR_INVALID;
    for (l = 0; l < m->n_layers; l++) {
        size_t n = (size_t)m->widths[l] * m->widths[l + 1];
        double w = ops->norm(n, m->W[l]), g = ops->norm(n, grad->W[l]);
        trust[l] = w > 0 && g > 0 ? eta * w / (g + l2 * w) : 1.0;
        if (!(trust[l] <= DBL_MAX)) return HPDL_ERR_NUMERIC;
    }
    for (write = 0; write < 2 && ok; write++) /* check every new value first: all or nothing */
        for (l = 0; l < m->n_layers && ok; l++)
            ok = ops->sgd_update((size_t)m->widths[l] * m->widths[l + 1], m->W[l], grad->W[l], lr * trust[l], l2,
                                 write) &&
                 ops->sgd_update((size_t)m->widths[l + 1], m->b[l], grad->b[l], lr, 0, write);
    return ok ? HPDL_OK : HPDL_ERR_NUMERIC;
}

/* Model: the typed struct, its conversions to and from hpdl__mlp_any, and
   the public functions, each a call of the hpdl__mlp_*_any above. */
#define HPDL_DEFINE_MLP_MODEL(SUFFIX, T, ACC_T, LOAD, STORE)                   \
    typedef struct hpdl_mlp_##SUFFIX {                                         \
        int n_layers;                             /* weight layers = widths - 1 */ \
        int widths[HPDL_MLP_MAX_LAYERS + 1];                                   \
        hpdl_activation act;                      /* hidden layers; output: softmax */ \
        T *W[HPDL_MLP_MAX_LAYERS];                /* widths[l] x widths[l+1]: Y = X·W + b */ \
        T *b[HPDL_MLP_MAX_LAYERS];                /* widths[l+1] */            \
    } hpdl_mlp_##SUFFIX;                                                       \
    typedef char hpdl__mlp_layout_check_##SUFFIX[sizeof(hpdl_mlp_##SUFFIX) == sizeof(hpdl__mlp_any) ? 1 : -1]; \
    /* *view mirrors *m and is returned; NULL for a NULL m. */                 \
    static inline hpdl__mlp_any *hpdl__mlp_view_##SUFFIX(const hpdl_mlp_##SUFFIX *m, hpdl__mlp_any *view) { \
        if (!m) return NULL;                                                   \
        memcpy(view, m, sizeof *view);                                         \
        return view;                                                           \
    }                                                                          \
    /* When st is HPDL_OK, *m becomes *view; returns st. */                    \
    static inline hpdl_status hpdl__mlp_take_##SUFFIX(hpdl_status st, const hpdl__mlp_any *view, \
                                                      hpdl_mlp_##SUFFIX *m) { \
        if (st == HPDL_OK) memcpy(m, view, sizeof *m);                         \
        return st;                                                             \
    }                                                                          \
    static inline int hpdl__mlp_ok_##SUFFIX(const hpdl_mlp_##SUFFIX *m) {      \
        hpdl__mlp_any v;                                                       \
        return hpdl__mlp_ok_any(hpdl__mlp_view_##SUFFIX(m, &v));               \
    }                                                                          \
    HPDL_API void hpdl_mlp_destroy_##SUFFIX(hpdl_mlp_##SUFFIX *m) {            \
        hpdl__mlp_any v;                                                       \
        if (hpdl__mlp_view_##SUFFIX(m, &v)) { hpdl__mlp_free_any(&v); hpdl__mlp_take_##SUFFIX(HPDL_OK, &v, m); } \
    }                                                                          \
    HPDL_API hpdl_status hpdl_mlp_create_zero_##SUFFIX(hpdl_mlp_##SUFFIX *m, int n_widths, const int *widths, \
                                                       hpdl_activation act) { \
        hpdl__mlp_any v;                                                       \
        if (!m) return HPDL_ERR_INVALID;                                       \
        return hpdl__mlp_take_##SUFFIX(hpdl__mlp_create_zero_any(&v, n_widths, widths, act, hpdl__mlp_ops_##SUFFIX()), \
                                       &v, m);                                 \
    }                                                                          \
    HPDL_API hpdl_status hpdl_mlp_create_##SUFFIX(hpdl_mlp_##SUFFIX *m, int n_widths, const int *widths, \
                                                  hpdl_activation act, uint64_t seed) { \
        hpdl__mlp_any v;                                                       \
        if (!m) return HPDL_ERR_INVALID;                                       \
        return hpdl__mlp_take_##SUFFIX(                                        \
            hpdl__mlp_create_any(&v, n_widths, widths, act, seed, hpdl__mlp_ops_##SUFFIX()), &v, m); \
    }                                                                          \
    HPDL_API hpdl_status hpdl_mlp_copy_##SUFFIX(hpdl_mlp_##SUFFIX *dst, const hpdl_mlp_##SUFFIX *src) { \
        hpdl__mlp_any d, s;                                                    \
        hpdl_status st = hpdl__mlp_copy_any(hpdl__mlp_view_##SUFFIX(dst, &d), hpdl__mlp_view_##SUFFIX(src, &s), \
                                            hpdl__mlp_ops_##SUFFIX());         \
        return hpdl__mlp_take_##SUFFIX(st, &d, dst);                           \
    }                                                                          \
    HPDL_API hpdl_status hpdl_mlp_sgd_##SUFFIX(hpdl_mlp_##SUFFIX *m, const hpdl_mlp_##SUFFIX *grad, ACC_T lr, \
                                               ACC_T l2) {                     \
        hpdl__mlp_any v, g;                                                    \
        return hpdl__mlp_sgd_any(hpdl__mlp_view_##SUFFIX(m, &v), hpdl__mlp_view_##SUFFIX(grad, &g), lr, l2, \
                                 hpdl__mlp_ops_##SUFFIX());                    \
    }                                                                          \
    /* The LARS step (hpdl__mlp_lars_any): m -= lr * trust * (grad + l2 m)    \
       per weight matrix; all or nothing, as hpdl_mlp_sgd. */                 \
    HPDL_API hpdl_status hpdl_mlp_lars_##SUFFIX(hpdl_mlp_##SUFFIX *m, const hpdl_mlp_##SUFFIX *grad, ACC_T lr, \
                                                ACC_T l2, double eta) {        \
        hpdl__mlp_any v, g;                                                    \
        return hpdl__mlp_lars_any(hpdl__mlp_view_##SUFFIX(m, &v), hpdl__mlp_view_##SUFFIX(grad, &g), lr, l2, eta, \
                                  hpdl__mlp_ops_##SUFFIX());                   \
    }

/* hpdl_mlp_destroy_f32 hpdl_mlp_create_zero_f32 hpdl_mlp_create_f32 hpdl_mlp_copy_f32
   hpdl_mlp_sgd_f32 hpdl_mlp_lars_f32 hpdl_mlp_destroy_f64 hpdl_mlp_create_zero_f64 hpdl_mlp_create_f64
   hpdl_mlp_copy_f64 hpdl_mlp_sgd_f64 hpdl_mlp_lars_f64 hpdl_mlp_destroy_f16 hpdl_mlp_create_zero_f16
   hpdl_mlp_create_f16 hpdl_mlp_copy_f16 hpdl_mlp_sgd_f16 hpdl_mlp_lars_f16 hpdl_mlp_destroy_bf16
   hpdl_mlp_create_zero_bf16 hpdl_mlp_create_bf16 hpdl_mlp_copy_bf16 hpdl_mlp_sgd_bf16 hpdl_mlp_lars_bf16 */
HPDL_FOR_EACH_FLOAT_TYPE(HPDL_DEFINE_MLP_MODEL)

/* Training: workspace, forward, backward, train step, accuracy.
   act[l] (l >= 1) holds layer l's output for the batch, act[n_layers] the
   logits; act[0] stays NULL (the input X is read in place). delta[l] holds
   d(loss)/d(pre-activation of layer l), same shapes. hpdl__mlp_work_any is
   hpdl_mlp_work_<t> with untyped buffers, a view as hpdl__mlp_any is for the
   model. */
typedef struct hpdl__mlp_work_any {
    int max_batch;
    void *act[HPDL_MLP_MAX_LAYERS + 1];
    void *delta[HPDL_MLP_MAX_LAYERS + 1];
    int n_layers;
    int widths[HPDL_MLP_MAX_LAYERS + 1];
} hpdl__mlp_work_any;

/* Frees every buffer and zeroes *w. */
static inline void hpdl__mlp_work_free_any(hpdl__mlp_work_any *w) {
    int l;
    for (l = 0; l <= HPDL_MLP_MAX_LAYERS; l++) { HPDL_FREE(w->act[l]); HPDL_FREE(w->delta[l]); }
    memset(w, 0, sizeof *w);
}

/* Activations and deltas for up to max_batch rows of model m. */
static inline hpdl_status hpdl__mlp_work_create_any(hpdl__mlp_work_any *made, const hpdl__mlp_any *m, int max_batch,
                                                   const hpdl__mlp_ops *ops) {
    int l;
    if (!hpdl__mlp_ok_any(m) || max_batch < 1) return HPDL_ERR_INVALID;
    memset(made, 0, sizeof *made);
    made->max_batch = max_batch;
    made->n_layers = m->n_layers;
    memcpy(made->widths, m->widths, sizeof made->widths);
    for (l = 1; l <= m->n_layers; l++) {
        made->act[l] = hpdl_alloc((size_t)max_batch * m->widths[l], ops->size);
        made->delta[l] = hpdl_alloc((size_t)max_batch * m->widths[l], ops->size);
        if (!made->act[l] || !made->delta[l]) { hpdl__mlp_work_free_any(made); return HPDL_ERR_NOMEM; }
    }
    return HPDL_OK;
}

/* Model, workspace made for it, batch in [1, max_batch], input given. */
static inline int hpdl__mlp_run_ok_any(const hpdl__mlp_any *m, const hpdl__mlp_work_any *w, int batch, const void *X) {
    int l;
    if (!hpdl__mlp_ok_any(m) || !w || !X || batch < 1 || batch > w->max_batch ||
        !hpdl__same_widths(m->n_layers, m->widths, w->n_layers, w->widths))
        return 0;
    for (l = 1; l <= m->n_layers; l++)
        if (!w->act[l] || !w->delta[l]) return 0;
    return 1;
}

/* Logits of the batch into w->act[n_layers] (batch x widths[n_layers]):
   each layer out = in·W + b, then the activation when hidden. */
static inline hpdl_status hpdl__mlp_forward_any(const hpdl__mlp_any *m, hpdl__mlp_work_any *w, int batch,
                                               const void *X, const hpdl__mlp_ops *ops) {
    hpdl_status st = HPDL_OK;
    int l;
    if (!hpdl__mlp_run_ok_any(m, w, batch, X)) return HPDL_ERR_INVALID;
    for (l = 0; st == HPDL_OK && l < m->n_layers; l++) {
        int n_in = m->widths[l], n_out = m->widths[l + 1];
        st = ops->gemm(HPDL_NO_TRANS, HPDL_NO_TRANS, batch, n_out, n_in, l ? w->act[l] : X, n_in, m->W[l], n_out,
                       w->act[l + 1], n_out);
        if (st == HPDL_OK) st = ops->bias_act(batch, n_out, w->act[l + 1], m->b[l], l < m->n_layers - 1, m->act);
    }
    return st;
}

/* Layer l's gradients (input `in`) from delta[l+1]; then delta[l] when l is
   hidden. */
static inline hpdl_status hpdl__mlp_layer_back_any(const hpdl__mlp_any *m, hpdl__mlp_work_any *w, int l, int batch,
                                                  const void *in, hpdl__mlp_any *grad, const hpdl__mlp_ops *ops) {
    int n_in = m->widths[l], n_out = m->widths[l + 1];
    hpdl_status st = ops->gemm(HPDL_TRANS, HPDL_NO_TRANS, n_in, n_out, batch, in, n_in, w->delta[l + 1], n_out,
                               grad->W[l], n_out);
    ops->column_sums(batch, n_out, w->delta[l + 1], grad->b[l]);
    if (st != HPDL_OK || l == 0) return st;
    st = ops->gemm(HPDL_NO_TRANS, HPDL_TRANS, batch, n_in, n_out, w->delta[l + 1], n_out, m->W[l], n_out,
                   w->delta[l], n_in);
    if (st != HPDL_OK) return st;
    return ops->act_grad((int64_t)batch * n_in, w->act[l], w->delta[l], m->act);
}

/* grad = d(mean cross-entropy)/d(parameters), no L2; loss may be NULL. */
static inline hpdl_status hpdl__mlp_backward_any(const hpdl__mlp_any *m, hpdl__mlp_work_any *w, int batch,
                                                const void *X, const int32_t *labels, hpdl__mlp_any *grad,
                                                double *loss, const hpdl__mlp_ops *ops) {
    int L, l;
    double batch_loss = 0.0;
    hpdl_status st;
    if (!hpdl__mlp_run_ok_any(m, w, batch, X) || !hpdl__mlp_ok_any(grad) ||
        !hpdl__same_widths(m->n_layers, m->widths, grad->n_layers, grad->widths) ||
        !hpdl__labels_ok(batch, labels, m->widths[m->n_layers]))
        return HPDL_ERR_INVALID;
    L = m->n_layers;
    st = hpdl__mlp_forward_any(m, w, batch, X, ops);
    if (st == HPDL_OK) st = ops->softmax_xent(batch, m->widths[L], w->act[L], labels, w->delta[L], &batch_loss);
    for (l = L - 1; st == HPDL_OK && l >= 0; l--)
        st = hpdl__mlp_layer_back_any(m, w, l, batch, l ? w->act[l] : X, grad, ops);
    if (st == HPDL_OK && loss) *loss = batch_loss;
    return st;
}

/* One SGD step on a batch. A loss that is not finite (a NaN input, or
   weights that have diverged) or a step that would make a weight non-finite
   returns HPDL_ERR_NUMERIC and leaves m as it was; *loss still gets the
   loss, to report. */
static inline hpdl_status hpdl__mlp_train_step_any(hpdl__mlp_any *m, hpdl__mlp_work_any *w, hpdl__mlp_any *grad,
                                                  int batch, const void *X, const int32_t *labels, double lr,
                                                  double l2, double *loss, const hpdl__mlp_ops *ops) {
    hpdl_status st;
    double batch_loss;
    if (!hpdl__hyper_ok(lr, l2)) return HPDL_ERR_INVALID;
    st = hpdl__mlp_backward_any(m, w, batch, X, labels, grad, &batch_loss, ops);
    if (st != HPDL_OK) return st;
    if (loss) *loss = batch_loss;
    if (!(fabs(batch_loss) <= DBL_MAX)) return HPDL_ERR_NUMERIC;
    return hpdl__mlp_sgd_any(m, grad, lr, l2, ops);
}

/* Fraction of the n rows of X classified as their label, in chunks of
   w->max_batch. */
static inline hpdl_status hpdl__mlp_accuracy_any(const hpdl__mlp_any *m, hpdl__mlp_work_any *w, int64_t n,
                                                const void *X, const int32_t *labels, double *accuracy,
                                                const hpdl__mlp_ops *ops) {
    int64_t i0, hits = 0;
    hpdl_status st = HPDL_OK;
    if (n < 1 || !accuracy || !hpdl__mlp_run_ok_any(m, w, 1, X) || !hpdl__labels_ok(n, labels, m->widths[m->n_layers]))
        return HPDL_ERR_INVALID;
    for (i0 = 0; st == HPDL_OK && i0 < n; i0 += w->max_batch) {
        int batch = (int)(n - i0 < w->max_batch ? n - i0 : w->max_batch);
        st = hpdl__mlp_forward_any(m, w, batch, (const char *)X + (size_t)i0 * m->widths[0] * ops->size, ops);
        if (st == HPDL_OK) hits += ops->argmax_hits(batch, m->widths[m->n_layers], w->act[m->n_layers], labels + i0);
    }
    if (st == HPDL_OK) *accuracy = (double)hits / (double)n;
    return st;
}

/* The typed workspace, its conversions to and from hpdl__mlp_work_any, and
   the public functions, each a call of the hpdl__mlp_*_any above. */
#define HPDL_DEFINE_MLP_TRAIN(SUFFIX, T, ACC_T, LOAD, STORE)                   \
    typedef struct hpdl_mlp_work_##SUFFIX {                                    \
        int max_batch;                                                         \
        T *act[HPDL_MLP_MAX_LAYERS + 1];                                       \
        T *delta[HPDL_MLP_MAX_LAYERS + 1];                                     \
        int n_layers;                             /* shape it was made for */  \
        int widths[HPDL_MLP_MAX_LAYERS + 1];                                   \
    } hpdl_mlp_work_##SUFFIX;                                                  \
    typedef char hpdl__mlp_work_layout_check_##SUFFIX                          \
        [sizeof(hpdl_mlp_work_##SUFFIX) == sizeof(hpdl__mlp_work_any) ? 1 : -1]; \
    /* *view mirrors *w and is returned; NULL for a NULL w. */                 \
    static inline hpdl__mlp_work_any *hpdl__mlp_work_view_##SUFFIX(const hpdl_mlp_work_##SUFFIX *w, \
                                                                   hpdl__mlp_work_any *view) { \
        if (!w) return NULL;                                                   \
        memcpy(view, w, sizeof *view);                                         \
        return view;                                                           \
    }                                                                          \
    /* When st is HPDL_OK, *w becomes *view; returns st. */                    \
    static inline hpdl_status hpdl__mlp_work_take_##SUFFIX(hpdl_status st, const hpdl__mlp_work_any *view, \
                                                           hpdl_mlp_work_##SUFFIX *w) { \
        if (st == HPDL_OK) memcpy(w, view, sizeof *w);                         \
        return st;                                                             \
    }                                                                          \
    HPDL_API void hpdl_mlp_work_destroy_##SUFFIX(hpdl_mlp_work_##SUFFIX *w) {  \
        hpdl__mlp_work_any v;                                                  \
        if (hpdl__mlp_work_view_##SUFFIX(w, &v)) {                             \
            hpdl__mlp_work_free_any(&v);                                       \
            hpdl__mlp_work_take_##SUFFIX(HPDL_OK, &v, w);                      \
        }                                                                      \
    }                                                                          \
    HPDL_API hpdl_status hpdl_mlp_work_create_##SUFFIX(hpdl_mlp_work_##SUFFIX *w, const hpdl_mlp_##SUFFIX *m, \
                                                       int max_batch) {       \
        hpdl__mlp_any mv;                                                      \
        hpdl__mlp_work_any v;                                                  \
        if (!w) return HPDL_ERR_INVALID;                                       \
        return hpdl__mlp_work_take_##SUFFIX(hpdl__mlp_work_create_any(&v, hpdl__mlp_view_##SUFFIX(m, &mv), max_batch, \
                                                                      hpdl__mlp_ops_##SUFFIX()), &v, w); \
    }                                                                          \
    HPDL_API hpdl_status hpdl_mlp_forward_##SUFFIX(const hpdl_mlp_##SUFFIX *m, hpdl_mlp_work_##SUFFIX *w, \
                                                   int batch, const T *X) {    \
        hpdl__mlp_any mv;                                                      \
        hpdl__mlp_work_any wv;                                                 \
        return hpdl__mlp_forward_any(hpdl__mlp_view_##SUFFIX(m, &mv), hpdl__mlp_work_view_##SUFFIX(w, &wv), batch, X, \
                                     hpdl__mlp_ops_##SUFFIX());                \
    }                                                                          \
    /* Used by the MPI data-parallel driver. */                                \
    static inline hpdl_status hpdl__mlp_layer_back_##SUFFIX(const hpdl_mlp_##SUFFIX *m, hpdl_mlp_work_##SUFFIX *w, \
                                                            int l, int batch, const T *in, hpdl_mlp_##SUFFIX *grad) { \
        hpdl__mlp_any mv, gv;                                                  \
        hpdl__mlp_work_any wv;                                                 \
        return hpdl__mlp_layer_back_any(hpdl__mlp_view_##SUFFIX(m, &mv), hpdl__mlp_work_view_##SUFFIX(w, &wv), l, \
                                        batch, in, hpdl__mlp_view_##SUFFIX(grad, &gv), hpdl__mlp_ops_##SUFFIX()); \
    }                                                                          \
    HPDL_API hpdl_status hpdl_mlp_backward_##SUFFIX(const hpdl_mlp_##SUFFIX *m, hpdl_mlp_work_##SUFFIX *w, \
                                                    int batch, const T *X, const int32_t *labels, \
                                                    hpdl_mlp_##SUFFIX *grad, double *loss) { \
        hpdl__mlp_any mv, gv;                                                  \
        hpdl__mlp_work_any wv;                                                 \
        return hpdl__mlp_backward_any(hpdl__mlp_view_##SUFFIX(m, &mv), hpdl__mlp_work_view_##SUFFIX(w, &wv), batch, \
                                      X, labels, hpdl__mlp_view_##SUFFIX(grad, &gv), loss, hpdl__mlp_ops_##SUFFIX()); \
    }                                                                          \
    HPDL_API hpdl_status hpdl_mlp_train_step_##SUFFIX(hpdl_mlp_##SUFFIX *m, hpdl_mlp_work_##SUFFIX *w, \
                                                      hpdl_mlp_##SUFFIX *grad, int batch, const T *X, \
                                                      const int32_t *labels, ACC_T lr, ACC_T l2, double *loss) { \
        hpdl__mlp_any mv, gv;                                                  \
        hpdl__mlp_work_any wv;                                                 \
        return hpdl__mlp_train_step_any(hpdl__mlp_view_##SUFFIX(m, &mv), hpdl__mlp_work_view_##SUFFIX(w, &wv), \
                                        hpdl__mlp_view_##SUFFIX(grad, &gv), batch, X, labels, lr, l2, loss, \
                                        hpdl__mlp_ops_##SUFFIX());             \
    }                                                                          \
    HPDL_API hpdl_status hpdl_mlp_accuracy_##SUFFIX(const hpdl_mlp_##SUFFIX *m, hpdl_mlp_work_##SUFFIX *w, \
                                                    int64_t n, const T *X, const int32_t *labels, \
                                                    double *accuracy) {        \
        hpdl__mlp_any mv;                                                      \
        hpdl__mlp_work_any wv;                                                 \
        return hpdl__mlp_accuracy_any(hpdl__mlp_view_##SUFFIX(m, &mv), hpdl__mlp_work_view_##SUFFIX(w, &wv), n, X, \
                                      labels, accuracy, hpdl__mlp_ops_##SUFFIX()); \
    }

/* hpdl_mlp_work_destroy_f32 hpdl_mlp_work_create_f32 hpdl_mlp_forward_f32 hpdl_mlp_backward_f32
   hpdl_mlp_train_step_f32 hpdl_mlp_accuracy_f32 hpdl_mlp_work_destroy_f64 hpdl_mlp_work_create_f64
   hpdl_mlp_forward_f64 hpdl_mlp_backward_f64 hpdl_mlp_train_step_f64 hpdl_mlp_accuracy_f64
   hpdl_mlp_work_destroy_f16 hpdl_mlp_work_create_f16 hpdl_mlp_forward_f16 hpdl_mlp_backward_f16
   hpdl_mlp_train_step_f16 hpdl_mlp_accuracy_f16 hpdl_mlp_work_destroy_bf16
   hpdl_mlp_work_create_bf16 hpdl_mlp_forward_bf16 hpdl_mlp_backward_bf16 hpdl_mlp_train_step_bf16
   hpdl_mlp_accuracy_bf16 */
HPDL_FOR_EACH_FLOAT_TYPE(HPDL_DEFINE_MLP_TRAIN)

#ifdef __cplusplus
/* C++ only: the MLP functions overloaded on the model's type, so that code
   written once for every precision (a template over hpdl_mlp_<t>) calls
   hpdl_mlp_create(&m, ...) without naming the suffix. */
#define HPDL__DEFINE_MLP_OVERLOADS(SUFFIX, T, ACC_T, LOAD, STORE)              \
    HPDL_API hpdl_status hpdl_mlp_create(hpdl_mlp_##SUFFIX *m, int n_widths, const int *widths, \
                                         hpdl_activation act, uint64_t seed) { \
        return hpdl_mlp_create_##SUFFIX(m, n_widths, widths, act, seed);       \
    }                                                                          \
    HPDL_API hpdl_status hpdl_mlp_create_zero(hpdl_mlp_##SUFFIX *m, int n_widths, const int *widths, \
                                              hpdl_activation act) {           \
        return hpdl_mlp_create_zero_##SUFFIX(m, n_widths, widths, act);        \
    }                                                                          \
    HPDL_API void hpdl_mlp_destroy(hpdl_mlp_##SUFFIX *m) { hpdl_mlp_destroy_##SUFFIX(m); } \
    HPDL_API hpdl_status hpdl_mlp_copy(hpdl_mlp_##SUFFIX *dst, const hpdl_mlp_##SUFFIX *src) { \
        return hpdl_mlp_copy_##SUFFIX(dst, src);                               \
    }                                                                          \
    HPDL_API hpdl_status hpdl_mlp_sgd(hpdl_mlp_##SUFFIX *m, const hpdl_mlp_##SUFFIX *grad, ACC_T lr, ACC_T l2) { \
        return hpdl_mlp_sgd_##SUFFIX(m, grad, lr, l2);                         \
    }                                                                          \
    HPDL_API hpdl_status hpdl_mlp_work_create(hpdl_mlp_work_##SUFFIX *w, const hpdl_mlp_##SUFFIX *m, int max_batch) { \
        return hpdl_mlp_work_create_##SUFFIX(w, m, max_batch);                 \
    }                                                                          \
    HPDL_API void hpdl_mlp_work_destroy(hpdl_mlp_work_##SUFFIX *w) { hpdl_mlp_work_destroy_##SUFFIX(w); } \
    HPDL_API hpdl_status hpdl_mlp_forward(const hpdl_mlp_##SUFFIX *m, hpdl_mlp_work_##SUFFIX *w, int batch, \
                                          const T *X) {                        \
        return hpdl_mlp_forward_##SUFFIX(m, w, batch, X);                      \
    }                                                                          \
    HPDL_API hpdl_status hpdl_mlp_backward(const hpdl_mlp_##SUFFIX *m, hpdl_mlp_work_##SUFFIX *w, int batch, \
                                           const T *X, const int32_t *labels, hpdl_mlp_##SUFFIX *grad, \
                                           double *loss) {                     \
        return hpdl_mlp_backward_##SUFFIX(m, w, batch, X, labels, grad, loss); \
    }                                                                          \
    HPDL_API hpdl_status hpdl_mlp_train_step(hpdl_mlp_##SUFFIX *m, hpdl_mlp_work_##SUFFIX *w, \
                                             hpdl_mlp_##SUFFIX *grad, int batch, const T *X, \
                                             const int32_t *labels, ACC_T lr, ACC_T l2, double *loss) { \
        return hpdl_mlp_train_step_##SUFFIX(m, w, grad, batch, X, labels, lr, l2, loss); \
    }                                                                          \
    HPDL_API hpdl_status hpdl_mlp_accuracy(const hpdl_mlp_##SUFFIX *m, hpdl_mlp_work_##SUFFIX *w, int64_t n, \
                                           const T *X, const int32_t *labels, double *accuracy) { \
        return hpdl_mlp_accuracy_##SUFFIX(m, w, n, X, labels, accuracy);       \
    }

/* hpdl_mlp_create hpdl_mlp_create_zero hpdl_mlp_destroy hpdl_mlp_copy hpdl_mlp_sgd
   hpdl_mlp_work_create hpdl_mlp_work_destroy hpdl_mlp_forward hpdl_mlp_backward
   hpdl_mlp_train_step hpdl_mlp_accuracy, one overload per type */
HPDL_FOR_EACH_FLOAT_TYPE(HPDL__DEFINE_MLP_OVERLOADS)
#endif

/* ------------------------------------------------------------------------ */
/* Optimisers and learning-rate schedules                                    */
/* ------------------------------------------------------------------------ */

/* One optimiser step over n parameters, in place, as PyTorch computes it:
   hpdl_sgd_momentum_<t> is torch.optim.SGD (dampening 0), hpdl_adamw_<t> is
   torch.optim.AdamW. Arithmetic is in double; w and the state are stored in
   T and read back as stored, as the GPU twins (hpdl_cuda_sgd_momentum_<t>,
   hpdl_cuda_adamw_<t>) do. The state (velocity; m, v) starts at zero.

   The gradients are not checked: a NaN or inf in grad spreads into w and the
   state, so check them first (hpdl_cuda_flag_nonfinite_<t> on the GPU) and
   skip the step when one is not finite. HPDL_ERR_INVALID, nothing written,
   for n < 0, a NULL pointer when n > 0, or a hyper-parameter out of range or
   not finite; n == 0 does nothing. The arrays must not overlap. */

/* x is finite and in [lo, hi] (false for NaN and, with finite bounds, inf). */
static inline int hpdl__finite_in(double x, double lo, double hi) { return x >= lo && x <= hi; }

/* lr, momentum and weight decay finite and >= 0; Nesterov needs momentum > 0
   (PyTorch refuses it without). */
static inline int hpdl__sgd_params_ok(double lr, double momentum, double weight_decay, int nesterov) {
    return hpdl__finite_in(lr, 0, DBL_MAX) && hpdl__finite_in(momentum, 0, DBL_MAX) &&
           hpdl__finite_in(weight_decay, 0, DBL_MAX) && (!nesterov || momentum > 0);
}

/* step >= 1, lr and weight decay finite and >= 0, betas in [0, 1), eps finite and > 0. */
static inline int hpdl__adamw_params_ok(int64_t step, double lr, double beta1, double beta2, double eps,
                                        double weight_decay) {
    return step >= 1 && hpdl__finite_in(lr, 0, DBL_MAX) && hpdl__finite_in(weight_decay, 0, DBL_MAX) &&
           beta1 >= 0 && beta1 < 1 && beta2 >= 0 && beta2 < 1 && eps > 0 && eps <= DBL_MAX;
}

/* SGD's new weight, given g = grad + weight_decay*w and the new velocity
   v = momentum*v + g (v starts at 0, so the first step sets v = g, as PyTorch's
   first step does). Nesterov looks ahead along the velocity. */
static inline double hpdl__sgd_weight(double w, double g, double velocity, double lr, double momentum,
                                      int nesterov) {
    return w - lr * (nesterov ? g + momentum * velocity : velocity);
}

/* Exponential moving average: beta*avg + (1 - beta)*x (AdamW's m and v). */
static inline double hpdl__ema(double avg, double x, double beta) { return beta * avg + (1 - beta) * x; }

/* AdamW's constants for one step t. */
typedef struct hpdl__adamw_coef {
    double beta1, beta2, eps;
    double decay;     /* 1 - lr*weight_decay: the decoupled weight decay */
    double step_size; /* lr / (1 - beta1^t) */
    double bc2_sqrt;  /* sqrt(1 - beta2^t) */
} hpdl__adamw_coef;

static inline hpdl__adamw_coef hpdl__adamw_coef_make(int64_t step, double lr, double beta1, double beta2, double eps,
                                                     double weight_decay) {
    hpdl__adamw_coef c;
    c.beta1 = beta1;
    c.beta2 = beta2;
    c.eps = eps;
    c.decay = 1 - lr * weight_decay;
    c.step_size = lr / (1 - pow(beta1, (double)step));
    c.bc2_sqrt = sqrt(1 - pow(beta2, (double)step));
    return c;
}

/* AdamW's new weight from the new moments: w*(1 - lr*wd) - lr*m_hat/(sqrt(v_hat) + eps),
   in PyTorch's order of operations: (lr/bc1) * m / (sqrt(v)/sqrt(bc2) + eps). */
static inline double hpdl__adamw_weight(const hpdl__adamw_coef *c, double w, double m, double v) {
    return w * c->decay - c->step_size * m / (sqrt(v) / c->bc2_sqrt + c->eps);
}

/* hpdl_sgd_momentum_<t> (torch.optim.SGD with momentum, dampening 0) and hpdl_adamw_<t>
   (torch.optim.AdamW, 1-based step) for one type: updates w and the state in place, as described above. */
#define HPDL_DEFINE_OPTIM(SUFFIX, T)                                           \
    HPDL_API hpdl_status hpdl_sgd_momentum_##SUFFIX(int64_t n, T *w, const T *grad, T *velocity, double lr, \
                                                    double momentum, double weight_decay, int nesterov) { \
        int64_t i;                                                             \
        if (!hpdl__vec_args_ok(n, w, grad, velocity) || !hpdl__sgd_params_ok(lr, momentum, weight_decay, nesterov)) \
            return HPDL_ERR_INVALID;                                           \
        for (i = 0; i < n; i++) {                                              \
            double g = (double)grad[i] + weight_decay * (double)w[i];          \
            velocity[i] = (T)(momentum * (double)velocity[i] + g);             \
            w[i] = (T)hpdl__sgd_weight(w[i], g, velocity[i], lr, momentum, nesterov); \
        }                                                                      \
        return HPDL_OK;                                                        \
    }                                                                          \
    HPDL_API hpdl_status hpdl_adamw_##SUFFIX(int64_t n, T *w, const T *grad, T *m, T *v, int64_t step, double lr, \
                                             double beta1, double beta2, double eps, double weight_decay) { \
        hpdl__adamw_coef c;                                                    \
        int64_t i;                                                             \
        if (!hpdl__vec_args_ok(n, w, grad, m) || !hpdl__vec_args_ok(n, v, v, v) || \
            !hpdl__adamw_params_ok(step, lr, beta1, beta2, eps, weight_decay)) \
            return HPDL_ERR_INVALID;                                           \
        c = hpdl__adamw_coef_make(step, lr, beta1, beta2, eps, weight_decay);  \
        for (i = 0; i < n; i++) {                                              \
            double g = (double)grad[i];                                        \
            m[i] = (T)hpdl__ema(m[i], g, beta1);                               \
            v[i] = (T)hpdl__ema(v[i], g * g, beta2);                           \
            w[i] = (T)hpdl__adamw_weight(&c, w[i], m[i], v[i]);                \
        }                                                                      \
        return HPDL_OK;                                                        \
    }

/* hpdl_sgd_momentum_f32 hpdl_adamw_f32 */
HPDL_DEFINE_OPTIM(f32, float)
/* hpdl_sgd_momentum_f64 hpdl_adamw_f64 */
HPDL_DEFINE_OPTIM(f64, double)

#ifdef __cplusplus
/* C++ only: the optimisers overloaded on the parameters' type. */
#define HPDL__DEFINE_OPTIM_OVERLOADS(SUFFIX, T)                                \
    HPDL_API hpdl_status hpdl_sgd_momentum(int64_t n, T *w, const T *grad, T *velocity, double lr, double momentum, \
                                           double weight_decay, int nesterov) { \
        return hpdl_sgd_momentum_##SUFFIX(n, w, grad, velocity, lr, momentum, weight_decay, nesterov); \
    }                                                                          \
    HPDL_API hpdl_status hpdl_adamw(int64_t n, T *w, const T *grad, T *m, T *v, int64_t step, double lr, \
                                    double beta1, double beta2, double eps, double weight_decay) { \
        return hpdl_adamw_##SUFFIX(n, w, grad, m, v, step, lr, beta1, beta2, eps, weight_decay); \
    }

/* hpdl_sgd_momentum hpdl_adamw, one overload for float and one for double */
HPDL__DEFINE_OPTIM_OVERLOADS(f32, float)
HPDL__DEFINE_OPTIM_OVERLOADS(f64, double)
#endif

/* Learning-rate schedules, evaluated at the 0-based step t:
     warm-up (every kind, when warmup_steps > 0): for t < warmup_steps,
       lr = base_lr * (t + 1) / warmup_steps, rising linearly to base_lr at
       t = warmup_steps - 1; then, with s = t - warmup_steps:
     HPDL_LR_CONSTANT  base_lr
     HPDL_LR_STEP      base_lr * gamma^floor(s / step_size) (PyTorch's StepLR)
     HPDL_LR_COSINE    min_lr + (base_lr - min_lr) * (1 + cos(pi s / D)) / 2,
                       D = total_steps - warmup_steps, and min_lr from s = D on
                       (PyTorch's CosineAnnealingLR with T_max = D).
   Fields that a kind does not use are not read. */
typedef enum hpdl_lr_kind { HPDL_LR_CONSTANT = 0, HPDL_LR_STEP, HPDL_LR_COSINE } hpdl_lr_kind;

/* One schedule, fields in the ranges below; hpdl_lr_schedule_check validates it, hpdl_lr_at
   evaluates it. */
typedef struct hpdl_lr_schedule {
    hpdl_lr_kind kind;
    double base_lr;       /* finite, >= 0 */
    int64_t warmup_steps; /* >= 0 */
    int64_t total_steps;  /* cosine: warm-up and decay together, > warmup_steps */
    int64_t step_size;    /* step: >= 1 */
    double gamma;         /* step: in [0, 1] */
    double min_lr;        /* cosine: in [0, base_lr] */
} hpdl_lr_schedule;

/* What is wrong with s, or NULL when it is valid. */
static inline const char *hpdl__lr_schedule_problem(const hpdl_lr_schedule *s) {
    if (!s) return "no schedule";
    if (!hpdl__finite_in(s->base_lr, 0, DBL_MAX)) return "the base learning rate is not a finite number >= 0";
    if (s->warmup_steps < 0) return "negative warm-up";
    switch (s->kind) {
    case HPDL_LR_CONSTANT: return NULL;
    case HPDL_LR_STEP:
        if (s->step_size < 1) return "step size below 1";
        return hpdl__finite_in(s->gamma, 0, 1) ? NULL : "gamma outside [0, 1]";
    case HPDL_LR_COSINE:
        if (s->total_steps <= s->warmup_steps) return "no more total steps than warm-up steps";
        return hpdl__finite_in(s->min_lr, 0, s->base_lr) ? NULL : "min_lr outside [0, base_lr]";
    }
    return "unknown kind";
}

/* HPDL_OK, or HPDL_ERR_INVALID for a NULL s or a field out of its range. */
HPDL_API hpdl_status hpdl_lr_schedule_check(const hpdl_lr_schedule *s) {
    return hpdl__lr_schedule_problem(s) ? HPDL_ERR_INVALID : HPDL_OK;
}

/* Cosine decay, s steps after warm-up. */
static inline double hpdl__lr_cosine(const hpdl_lr_schedule *s, int64_t since_warmup) {
    int64_t decay_steps = s->total_steps - s->warmup_steps;
    double t = (double)since_warmup / (double)decay_steps;
    if (since_warmup >= decay_steps) return s->min_lr;
    return s->min_lr + (s->base_lr - s->min_lr) * 0.5 * (1 + cos(3.14159265358979323846 * t));
}

/* The learning rate at 0-based step `step`; NaN for step < 0 or an invalid s. */
HPDL_API double hpdl_lr_at(const hpdl_lr_schedule *s, int64_t step) {
    int64_t since_warmup;
    if (step < 0 || hpdl_lr_schedule_check(s) != HPDL_OK) return NAN;
    if (step < s->warmup_steps) return s->base_lr * (double)(step + 1) / (double)s->warmup_steps;
    since_warmup = step - s->warmup_steps;
    if (s->kind == HPDL_LR_STEP) return s->base_lr * pow(s->gamma, (double)(since_warmup / s->step_size));
    if (s->kind == HPDL_LR_COSINE) return hpdl__lr_cosine(s, since_warmup);
    return s->base_lr;
}

#define HPDL__LR_FORMS "constant, step:N:GAMMA or cosine, each with an optional :warmup=N"

static inline hpdl_status hpdl__lr_refuse(const char *text, const char *why) {
    fprintf(stderr, "hpdl: learning-rate schedule '%s': %s (expected " HPDL__LR_FORMS ")\n", text ? text : "(null)",
            why);
    return HPDL_ERR_INVALID;
}

/* Cuts buf at each ':' into fields; returns their count, or max + 1 when
   there are more than max. */
static inline int hpdl__split_fields(char *buf, char **field, int max) {
    int n = 0;
    for (;;) {
        if (n == max) return max + 1;
        field[n++] = buf;
        buf = strchr(buf, ':');
        if (!buf) return n;
        *buf++ = '\0';
    }
}

/* A schedule from a command line's words, for base_lr over total_steps:
   "constant", "step:N:GAMMA" (lr times GAMMA every N steps, GAMMA in [0, 1]),
   "cosine" (from base_lr down to 0 at total_steps), each optionally followed
   by ":warmup=N" (e.g. "cosine:warmup=500"). Strict: anything else, or a
   schedule that hpdl_lr_schedule_check refuses, is HPDL_ERR_INVALID with
   *out untouched and one line on stderr. */
HPDL_API hpdl_status hpdl_lr_parse(const char *text, double base_lr, int64_t total_steps, hpdl_lr_schedule *out) {
    char buf[128], *field[4];
    hpdl_lr_schedule s;
    int n, used = 1;
    if (!out || !text || strlen(text) >= sizeof buf) return hpdl__lr_refuse(text, "not a schedule");
    memcpy(buf, text, strlen(text) + 1);
    n = hpdl__split_fields(buf, field, 4);
    memset(&s, 0, sizeof s);
    s.base_lr = base_lr;
    s.total_steps = total_steps;
    if (strcmp(field[0], "constant") == 0) s.kind = HPDL_LR_CONSTANT;
    else if (strcmp(field[0], "cosine") == 0) s.kind = HPDL_LR_COSINE;
    else if (strcmp(field[0], "step") == 0 && n >= 3) {
        s.kind = HPDL_LR_STEP;
        used = 3;
        if (hpdl_arg_i64("learning-rate schedule step size", field[1], 1, INT64_MAX, &s.step_size) != HPDL_OK ||
            hpdl_arg_f64("learning-rate schedule gamma", field[2], 0, 1, &s.gamma) != HPDL_OK)
            return HPDL_ERR_INVALID;
    } else return hpdl__lr_refuse(text, strcmp(field[0], "step") == 0 ? "step needs :N:GAMMA" : "unknown kind");
    if (n == used + 1 && strncmp(field[used], "warmup=", 7) == 0) {
        if (hpdl_arg_i64("learning-rate schedule warm-up", field[used] + 7, 0, INT64_MAX, &s.warmup_steps) != HPDL_OK)
            return HPDL_ERR_INVALID;
    } else if (n != used) return hpdl__lr_refuse(text, "unexpected fields");
    if (hpdl__lr_schedule_problem(&s)) {
        fprintf(stderr, "hpdl: learning-rate schedule '%s' from %g over %lld steps: %s\n", text, base_lr,
                (long long)total_steps, hpdl__lr_schedule_problem(&s));
        return HPDL_ERR_INVALID;
    }
    *out = s;
    return HPDL_OK;
}

/* ------------------------------------------------------------------------ */
/* IDX data sets (MNIST, Fashion-MNIST), CIFAR-10                           */
/* ------------------------------------------------------------------------ */

/* IDX: big-endian magic (2051 images: n, rows, cols; 2049 labels: n), then
   one unsigned byte per pixel or label. */
#define HPDL_IDX_IMAGES_MAGIC 2051u
#define HPDL_IDX_LABELS_MAGIC 2049u

/* The most items (pixels, or labels) one IDX file may hold: each becomes a
   4-byte float or int32, so a file's size bounds what is allocated, and
   this bounds the file. 2^30 pixels is 4 GiB of floats (Fashion-MNIST's
   training set is 47 million). It also caps the pixels of the CIFAR-10 files
   loaded together (the training set is 154 million). Define it before
   including hpdl.h to raise it. */
#ifndef HPDL_IDX_MAX_ITEMS
#define HPDL_IDX_MAX_ITEMS (1ull << 30)
#endif

/* Images and labels in memory; the loaders allocate both arrays, hpdl_dataset_free frees them. */
typedef struct hpdl_dataset {
    int64_t n;
    int rows, cols;
    int channels;    /* 1 for IDX sets, 3 (red, green, blue) for CIFAR-10 */
    float *images;   /* n x channels*rows*cols, scaled to [0, 1]; per image channel by channel (CHW) */
    int32_t *labels; /* n */
} hpdl_dataset;

/* Floats per image: channels * rows * cols (0 for NULL). */
HPDL_API int64_t hpdl_dataset_features(const hpdl_dataset *d) {
    return d ? (int64_t)d->channels * d->rows * d->cols : 0;
}

/* Frees both arrays and zeroes *d; NULL d is ignored, a zeroed struct is safe. */
HPDL_API void hpdl_dataset_free(hpdl_dataset *d) {
    if (!d) return;
    HPDL_FREE(d->images);
    HPDL_FREE(d->labels);
    memset(d, 0, sizeof *d);
}

static inline uint32_t hpdl__be32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* Opens an IDX file and checks its header and size: magic, n_dims non-zero
   dimensions into dims, and exactly header + product(dims) bytes. Each
   failure is printed with the file, what was expected and what was found.
   On success *f is positioned at the first data byte. */
static inline hpdl_status hpdl__idx_open(const char *path, const char *what, uint32_t magic, int n_dims,
                                         uint32_t *dims, FILE **f) {
    unsigned char header[16];
    size_t header_len = 4 * (size_t)(n_dims + 1), got;
    uint64_t expected = header_len, items = 1;
    long found;
    int i;
    *f = fopen(path, "rb");
    if (!*f) {
        fprintf(stderr, "hpdl: %s: cannot open %s file: %s\n", path, what, strerror(errno));
        return HPDL_ERR_IO;
    }
    got = fread(header, 1, header_len, *f);
    if (ferror(*f)) { /* a directory opens, then fails to read */
        fprintf(stderr, "hpdl: %s: cannot read %s file: %s\n", path, what, strerror(errno));
        fclose(*f);
        return HPDL_ERR_IO;
    }
    if (got >= 4 && hpdl__be32(header) != magic) { /* the wrong kind of file says so first */
        fprintf(stderr, "hpdl: %s: bad magic: expected %u (%s), found %u\n", path, (unsigned)magic, what,
                (unsigned)hpdl__be32(header));
        goto format_error;
    }
    if (got < header_len) {
        fprintf(stderr, "hpdl: %s: truncated header: expected %u bytes, found %u\n", path, (unsigned)header_len,
                (unsigned)got);
        goto format_error;
    }
    for (i = 0; i < n_dims; i++) {
        dims[i] = hpdl__be32(header + 4 * (i + 1));
        if (dims[i] == 0 || dims[i] > (uint32_t)INT32_MAX || (i > 0 && dims[i] > 65535u)) {
            fprintf(stderr, "hpdl: %s: bad dimension %d: expected 1..%u, found %u\n", path, i,
                    i > 0 ? 65535u : (unsigned)INT32_MAX, (unsigned)dims[i]);
            goto format_error;
        }
        items *= dims[i];
    }
    if (items > HPDL_IDX_MAX_ITEMS) {
        fprintf(stderr, "hpdl: %s: %llu items, more than HPDL_IDX_MAX_ITEMS (%llu; define it to raise the limit)\n",
                path, (unsigned long long)items, (unsigned long long)HPDL_IDX_MAX_ITEMS);
        goto format_error;
    }
    expected += items;
    if (fseek(*f, 0, SEEK_END) != 0 || (found = ftell(*f)) < 0 || fseek(*f, (long)header_len, SEEK_SET) != 0) {
        fprintf(stderr, "hpdl: %s: cannot seek: %s\n", path, strerror(errno));
        fclose(*f);
        return HPDL_ERR_IO;
    }
    if ((uint64_t)found != expected) {
        fprintf(stderr, "hpdl: %s: %s: expected %llu bytes, found %llu\n", path,
                (uint64_t)found < expected ? "truncated" : "trailing data", (unsigned long long)expected,
                (unsigned long long)found);
        goto format_error;
    }
    return HPDL_OK;
format_error:
    fclose(*f);
    return HPDL_ERR_FORMAT;
}

/* Reads n bytes from f into dst: pixels scaled to [0, 1] (divided by 255) or
   labels as integers (into the int32 array when dst_labels is set). */
static inline hpdl_status hpdl__idx_read(FILE *f, const char *path, uint64_t n, float *dst_pixels,
                                         int32_t *dst_labels) {
    unsigned char buf[16384];
    uint64_t done = 0;
    while (done < n) {
        size_t want = n - done < sizeof buf ? (size_t)(n - done) : sizeof buf, got = fread(buf, 1, want, f), i;
        for (i = 0; i < got; i++) {
            if (dst_pixels) dst_pixels[done + i] = (float)buf[i] / 255.0f;
            else dst_labels[done + i] = buf[i];
        }
        done += got;
        if (got < want) {
            fprintf(stderr, "hpdl: %s: read failed: expected %llu bytes, found %llu: %s\n", path,
                    (unsigned long long)n, (unsigned long long)done, ferror(f) ? strerror(errno) : "end of file");
            return HPDL_ERR_IO;
        }
    }
    return HPDL_OK;
}

/* Reads the two open files (headers checked) into a new data set. */
static inline hpdl_status hpdl__idx_read_both(FILE *fi, const char *images_path, FILE *fl, const char *labels_path,
                                              const uint32_t *dims, hpdl_dataset *d) {
    uint64_t pixels = (uint64_t)dims[0] * dims[1] * dims[2];
    hpdl_status st;
    memset(d, 0, sizeof *d);
    d->n = dims[0];
    d->rows = (int)dims[1];
    d->cols = (int)dims[2];
    d->channels = 1;
    d->images = (float *)hpdl_alloc((size_t)pixels, sizeof(float));
    d->labels = (int32_t *)hpdl_alloc((size_t)d->n, sizeof(int32_t));
    if (!d->images || !d->labels) {
        fprintf(stderr, "hpdl: %s: out of memory for %llu pixels\n", images_path, (unsigned long long)pixels);
        st = HPDL_ERR_NOMEM;
    } else {
        st = hpdl__idx_read(fi, images_path, pixels, d->images, NULL);
        if (st == HPDL_OK) st = hpdl__idx_read(fl, labels_path, (uint64_t)d->n, NULL, d->labels);
    }
    if (st != HPDL_OK) hpdl_dataset_free(d);
    return st;
}

/* Loads an images file and its labels file; *out is written only on success. */
HPDL_API hpdl_status hpdl_idx_load(const char *images_path, const char *labels_path, hpdl_dataset *out) {
    uint32_t dims[3], label_dims[1];
    FILE *fi, *fl;
    hpdl_dataset d;
    hpdl_status st;
    if (!images_path || !labels_path || !out) return HPDL_ERR_INVALID;
    st = hpdl__idx_open(images_path, "images", HPDL_IDX_IMAGES_MAGIC, 3, dims, &fi);
    if (st != HPDL_OK) return st;
    st = hpdl__idx_open(labels_path, "labels", HPDL_IDX_LABELS_MAGIC, 1, label_dims, &fl);
    if (st != HPDL_OK) { fclose(fi); return st; }
    if (dims[0] != label_dims[0]) {
        fprintf(stderr, "hpdl: count mismatch: %s has %u images, %s has %u labels\n", images_path,
                (unsigned)dims[0], labels_path, (unsigned)label_dims[0]);
        st = HPDL_ERR_FORMAT;
    } else {
        st = hpdl__idx_read_both(fi, images_path, fl, labels_path, dims, &d);
    }
    fclose(fi);
    fclose(fl);
    if (st == HPDL_OK) *out = d;
    return st;
}

static inline int hpdl__file_exists(const char *path) {
    FILE *f = fopen(path, "rb");
    if (f) fclose(f);
    return f != NULL;
}

/* Finds dir/<stem>-<kind>-ubyte, or the dir/<stem>.<kind>-ubyte spelling.
   If only a .gz is there, says to run `make data`; if nothing is, returns
   the first spelling so the loader reports the missing file. */
static inline hpdl_status hpdl__idx_find(const char *dir, const char *stem, const char *kind, char *path,
                                         size_t size) {
    static const char seps[2] = {'-', '.'};
    int i;
    for (i = 0; i < 2; i++) {
        if ((size_t)snprintf(path, size, "%s/%s%c%s-ubyte", dir, stem, seps[i], kind) >= size) {
            fprintf(stderr, "hpdl: %s: folder name too long\n", dir);
            return HPDL_ERR_INVALID;
        }
        if (hpdl__file_exists(path)) return HPDL_OK;
    }
    for (i = 0; i < 2; i++) {
        snprintf(path, size, "%s/%s%c%s-ubyte.gz", dir, stem, seps[i], kind);
        if (hpdl__file_exists(path)) {
            fprintf(stderr, "hpdl: %s is compressed: run `make data` (scripts/data.sh decompresses it)\n", path);
            return HPDL_ERR_IO;
        }
    }
    snprintf(path, size, "%s/%s-%s-ubyte", dir, stem, kind);
    return HPDL_OK;
}

/* Loads train (train != 0: train-*) or test (t10k-*) images and labels of dir. */
HPDL_API hpdl_status hpdl_idx_load_dir(const char *dir, int train, hpdl_dataset *out) {
    char images[4096], labels[4096];
    char stem_images[32], stem_labels[32];
    hpdl_status st;
    if (!dir || !out) return HPDL_ERR_INVALID;
    snprintf(stem_images, sizeof stem_images, "%s-images", train ? "train" : "t10k");
    snprintf(stem_labels, sizeof stem_labels, "%s-labels", train ? "train" : "t10k");
    st = hpdl__idx_find(dir, stem_images, "idx3", images, sizeof images);
    if (st == HPDL_OK) st = hpdl__idx_find(dir, stem_labels, "idx1", labels, sizeof labels);
    return st == HPDL_OK ? hpdl_idx_load(images, labels, out) : st;
}

/* CIFAR-10, binary version: a file is a run of records, each 1 label byte
   (0..9) and 32x32 red, then green, then blue bytes (rows top to bottom).
   The files have no header, so a size that is not a whole number of records
   is the only sign of a truncated or foreign file. */
#define HPDL_CIFAR10_SIDE 32
#define HPDL_CIFAR10_PIXELS (3 * HPDL_CIFAR10_SIDE * HPDL_CIFAR10_SIDE)
#define HPDL_CIFAR10_RECORD (1 + HPDL_CIFAR10_PIXELS)

/* The number of records of a CIFAR-10 file, from its size. */
static inline hpdl_status hpdl__cifar10_count(const char *path, int64_t *records) {
    FILE *f = fopen(path, "rb");
    long size;
    int first;
    if (!f) {
        fprintf(stderr, "hpdl: %s: cannot open CIFAR-10 file: %s\n", path, strerror(errno));
        return HPDL_ERR_IO;
    }
    first = getc(f);
    if (first == EOF && ferror(f)) { /* a directory opens, then fails to read */
        fprintf(stderr, "hpdl: %s: cannot read CIFAR-10 file: %s\n", path, strerror(errno));
        fclose(f);
        return HPDL_ERR_IO;
    }
    if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0) {
        fprintf(stderr, "hpdl: %s: cannot seek: %s\n", path, strerror(errno));
        fclose(f);
        return HPDL_ERR_IO;
    }
    fclose(f);
    if (size == 0 || size % HPDL_CIFAR10_RECORD != 0) {
        fprintf(stderr, "hpdl: %s: %s: expected a positive multiple of %d bytes (records), found %ld\n", path,
                size == 0 ? "empty" : "truncated record", HPDL_CIFAR10_RECORD, size);
        return HPDL_ERR_FORMAT;
    }
    *records = size / HPDL_CIFAR10_RECORD;
    return HPDL_OK;
}

/* Reads the records of one file (counted before) into images and labels. */
static inline hpdl_status hpdl__cifar10_read(const char *path, int64_t records, float *images, int32_t *labels) {
    unsigned char rec[HPDL_CIFAR10_RECORD];
    hpdl_status st = HPDL_OK;
    int64_t r;
    int k;
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "hpdl: %s: cannot open CIFAR-10 file: %s\n", path, strerror(errno));
        return HPDL_ERR_IO;
    }
    for (r = 0; r < records && st == HPDL_OK; r++) {
        if (fread(rec, 1, sizeof rec, f) != sizeof rec) {
            fprintf(stderr, "hpdl: %s: read failed at record %lld: %s\n", path, (long long)r,
                    ferror(f) ? strerror(errno) : "end of file (did the file change?)");
            st = HPDL_ERR_IO;
        } else if (rec[0] > 9) {
            fprintf(stderr, "hpdl: %s: bad label in record %lld: expected 0..9, found %u\n", path, (long long)r,
                    (unsigned)rec[0]);
            st = HPDL_ERR_FORMAT;
        } else {
            labels[r] = rec[0];
            for (k = 0; k < HPDL_CIFAR10_PIXELS; k++) images[r * HPDL_CIFAR10_PIXELS + k] = (float)rec[1 + k] / 255.0f;
        }
    }
    fclose(f);
    return st;
}

/* Counts the records of every file (counts[i]) and checks the total
   against HPDL_IDX_MAX_ITEMS pixels. */
static inline hpdl_status hpdl__cifar10_count_all(int n_files, const char *const *paths, int64_t *counts,
                                                  int64_t *total) {
    hpdl_status st;
    int i;
    *total = 0;
    for (i = 0; i < n_files; i++) {
        st = hpdl__cifar10_count(paths[i], &counts[i]);
        if (st != HPDL_OK) return st;
        *total += counts[i];
        if ((uint64_t)*total * HPDL_CIFAR10_PIXELS > HPDL_IDX_MAX_ITEMS) {
            fprintf(stderr, "hpdl: %s: %lld images in all, more than HPDL_IDX_MAX_ITEMS (%llu pixels; define it to "
                    "raise the limit)\n", paths[i], (long long)*total, (unsigned long long)HPDL_IDX_MAX_ITEMS);
            return HPDL_ERR_FORMAT;
        }
    }
    return HPDL_OK;
}

/* Loads CIFAR-10 binary files, one after the other, into one data set of
   3x32x32 images (channels 3, CHW); *out is written only on success. */
HPDL_API hpdl_status hpdl_cifar10_load(int n_files, const char *const *paths, hpdl_dataset *out) {
    int64_t *counts, total = 0, done = 0;
    hpdl_dataset d;
    hpdl_status st;
    int i;
    if (n_files < 1 || !paths || !out) return HPDL_ERR_INVALID;
    for (i = 0; i < n_files; i++)
        if (!paths[i]) return HPDL_ERR_INVALID;
    counts = (int64_t *)hpdl_alloc((size_t)n_files, sizeof *counts);
    if (!counts) return HPDL_ERR_NOMEM;
    st = hpdl__cifar10_count_all(n_files, paths, counts, &total);
    memset(&d, 0, sizeof d);
    if (st == HPDL_OK) {
        d.n = total;
        d.channels = 3;
        d.rows = d.cols = HPDL_CIFAR10_SIDE;
        d.images = (float *)hpdl_alloc((size_t)total * HPDL_CIFAR10_PIXELS, sizeof(float));
        d.labels = (int32_t *)hpdl_alloc((size_t)total, sizeof(int32_t));
        if (!d.images || !d.labels) st = HPDL_ERR_NOMEM;
    }
    for (i = 0; i < n_files && st == HPDL_OK; i++) {
        st = hpdl__cifar10_read(paths[i], counts[i], d.images + done * HPDL_CIFAR10_PIXELS, d.labels + done);
        done += counts[i];
    }
    HPDL_FREE(counts);
    if (st == HPDL_OK) *out = d;
    else hpdl_dataset_free(&d);
    return st;
}

/* Loads dir/data_batch_1.bin .. data_batch_5.bin (train != 0: 50000 images)
   or dir/test_batch.bin (10000), the names of the CIFAR-10 binary version. */
HPDL_API hpdl_status hpdl_cifar10_load_dir(const char *dir, int train, hpdl_dataset *out) {
    char names[5][4096];
    const char *paths[5];
    int i, n_files = train ? 5 : 1;
    if (!dir || !out) return HPDL_ERR_INVALID;
    for (i = 0; i < n_files; i++) {
        int len = train ? snprintf(names[i], sizeof names[i], "%s/data_batch_%d.bin", dir, i + 1)
                        : snprintf(names[i], sizeof names[i], "%s/test_batch.bin", dir);
        if (len < 0 || (size_t)len >= sizeof names[i]) {
            fprintf(stderr, "hpdl: %s: folder name too long\n", dir);
            return HPDL_ERR_INVALID;
        }
        paths[i] = names[i];
    }
    return hpdl_cifar10_load(n_files, paths, out);
}

static inline int hpdl__dataset_ok(const hpdl_dataset *d) {
    return d && d->n > 0 && d->channels > 0 && d->rows > 0 && d->cols > 0 && d->images && d->labels;
}

/* Puts row perm[i] at row i for every i, following the permutation's cycles
   with one spare row; perm is consumed (entries set to -1 once placed). */
static inline void hpdl__apply_permutation(hpdl_dataset *d, int32_t *perm, float *spare) {
    size_t dim = (size_t)hpdl_dataset_features(d);
    int64_t start;
    for (start = 0; start < d->n; start++) {
        int64_t i = start;
        int32_t spare_label = d->labels[start];
        if (perm[start] < 0) continue;
        memcpy(spare, d->images + (size_t)start * dim, dim * sizeof *spare);
        for (;;) {
            int64_t from = perm[i];
            perm[i] = -1;
            if (from == start) break;
            memcpy(d->images + (size_t)i * dim, d->images + (size_t)from * dim, dim * sizeof *spare);
            d->labels[i] = d->labels[from];
            i = from;
        }
        memcpy(d->images + (size_t)i * dim, spare, dim * sizeof *spare);
        d->labels[i] = spare_label;
    }
}

/* Shuffles the examples (images and labels together) by a permutation drawn
   with hpdl_rng_shuffle_index from seed: same seed, same order. */
HPDL_API hpdl_status hpdl_dataset_shuffle(hpdl_dataset *d, uint64_t seed) {
    int32_t *perm;
    float *spare;
    hpdl_rng rng;
    int64_t i;
    if (!hpdl__dataset_ok(d) || d->n > INT32_MAX) return HPDL_ERR_INVALID;
    perm = (int32_t *)hpdl_alloc((size_t)d->n, sizeof *perm);
    spare = (float *)hpdl_alloc((size_t)hpdl_dataset_features(d), sizeof *spare);
    if (!perm || !spare) { HPDL_FREE(perm); HPDL_FREE(spare); return HPDL_ERR_NOMEM; }
    for (i = 0; i < d->n; i++) perm[i] = (int32_t)i;
    hpdl_rng_seed(&rng, seed);
    hpdl_rng_shuffle_index(&rng, perm, d->n);
    hpdl__apply_permutation(d, perm, spare);
    HPDL_FREE(perm);
    HPDL_FREE(spare);
    return HPDL_OK;
}

/* x = (x - mean) / std for every pixel; std must be positive and finite. */
HPDL_API hpdl_status hpdl_dataset_normalize(hpdl_dataset *d, float mean, float std) {
    size_t i, n;
    if (!hpdl__dataset_ok(d) || !(std > 0) || std > FLT_MAX || !(mean >= -FLT_MAX && mean <= FLT_MAX))
        return HPDL_ERR_INVALID;
    n = (size_t)d->n * (size_t)hpdl_dataset_features(d);
    for (i = 0; i < n; i++) d->images[i] = (d->images[i] - mean) / std;
    return HPDL_OK;
}

/* Each feature's (pixel's, per channel) mean and population standard
   deviation over the n examples of d, into mean[f] and std[f] for f below
   hpdl_dataset_features(d): two passes in double (the mean, then the squared
   deviations from it), so a large common offset loses nothing. */
HPDL_API hpdl_status hpdl_dataset_feature_stats(const hpdl_dataset *d, float *mean, float *std) {
    double *sum, *sq;
    size_t f, dim;
    int64_t i;
    if (!hpdl__dataset_ok(d) || !mean || !std) return HPDL_ERR_INVALID;
    dim = (size_t)hpdl_dataset_features(d);
    sum = (double *)hpdl_alloc(dim, sizeof *sum);
    sq = (double *)hpdl_alloc(dim, sizeof *sq);
    if (!sum || !sq) { HPDL_FREE(sum); HPDL_FREE(sq); return HPDL_ERR_NOMEM; }
    memset(sum, 0, dim * sizeof *sum);
    memset(sq, 0, dim * sizeof *sq);
    for (i = 0; i < d->n; i++)
        for (f = 0; f < dim; f++) sum[f] += d->images[(size_t)i * dim + f];
    for (f = 0; f < dim; f++) sum[f] /= (double)d->n;
    for (i = 0; i < d->n; i++)
        for (f = 0; f < dim; f++) {
            double dev = d->images[(size_t)i * dim + f] - sum[f];
            sq[f] += dev * dev;
        }
    for (f = 0; f < dim; f++) {
        mean[f] = (float)sum[f];
        std[f] = (float)sqrt(sq[f] / (double)d->n);
    }
    HPDL_FREE(sum);
    HPDL_FREE(sq);
    return HPDL_OK;
}

/* x[f] = (x[f] - mean[f]) / max(std[f], min_std) for every feature f of
   every example: per-pixel standardisation with the training set's
   hpdl_dataset_feature_stats, applied to the training and the test set
   alike. min_std keeps nearly constant pixels (an image's border) from
   being blown up into noise. Every mean[f] finite, every std[f] >= 0 and
   finite, min_std > 0 and finite, all checked before anything is written. */
HPDL_API hpdl_status hpdl_dataset_standardize(hpdl_dataset *d, const float *mean, const float *std, float min_std) {
    size_t f, dim;
    int64_t i;
    if (!hpdl__dataset_ok(d) || !mean || !std || !hpdl__finite_in(min_std, FLT_MIN, FLT_MAX)) return HPDL_ERR_INVALID;
    dim = (size_t)hpdl_dataset_features(d);
    for (f = 0; f < dim; f++)
        if (!hpdl__finite_in(mean[f], -FLT_MAX, FLT_MAX) || !hpdl__finite_in(std[f], 0, FLT_MAX))
            return HPDL_ERR_INVALID;
    for (i = 0; i < d->n; i++)
        for (f = 0; f < dim; f++) {
            float *x = d->images + (size_t)i * dim + f;
            *x = (*x - mean[f]) / (std[f] > min_std ? std[f] : min_std);
        }
    return HPDL_OK;
}

/* ------------------------------------------------------------------------ */
/* Checkpoints: a trained model's tensors (parameters, optimiser state)      */
/* ------------------------------------------------------------------------ */

/* A checkpoint file holds named tensors and a string naming the model they
   belong to ("cnn small 1x28x28 f32"). Every number is little-endian,
   whatever the host, written byte by byte (never a struct at once):

       size      field
       8         magic "HPDLCKPT"
       4         u32 version, 1
       4         u32 model length L, 0..255
       L         model bytes (no NUL)
       4         u32 tensor count N
       N times:
         4       u32 name length K, 1..63
         K       name bytes (no NUL; unique in the file)
         4       u32 dtype (hpdl_dtype: 1 f32, 2 f64, 3 f16, 4 bf16, 5 i32, 6 i64, 7 i8)
         4       u32 rank R, 0..4 (0: a scalar, one element)
         8*R     i64 dims, each >= 0
         8       u64 byte count = product(dims) * hpdl_dtype_size(dtype)
         count   the elements, each little-endian
       8         u64 FNV-1a 64 of every byte before it

   The checksum is there to detect corruption (a flipped or lost byte, a
   copy cut short), not tampering: anyone can recompute it. It catches
   every change of one byte for certain (each FNV-1a step is a bijection of
   the running hash) and other random damage with probability 1 - 2^-64.
   notes/checkpoint.md has the same table with offsets.

   hpdl_ckpt_save writes a new file <path>.tmp.<pid>.<k> beside path,
   flushes it to disk (fsync where POSIX has it) and renames it over path,
   so a crash leaves the old checkpoint or the new one, never half of one.
   hpdl_ckpt_load reads the whole file into memory and checks it (format,
   checksum, then that it is the caller's model: model string, and each
   tensor's name, dtype and shape in order) before it copies anything, so a
   refused file leaves every entry's data as it was. Each refusal prints one
   line on stderr saying why. */
typedef enum hpdl_dtype {
    HPDL_DTYPE_F32 = 1,
    HPDL_DTYPE_F64 = 2,
    HPDL_DTYPE_F16 = 3,
    HPDL_DTYPE_BF16 = 4,
    HPDL_DTYPE_I32 = 5,
    HPDL_DTYPE_I64 = 6,
    HPDL_DTYPE_I8 = 7
} hpdl_dtype;

/* One tensor of a checkpoint. data holds product(dims) elements (NULL is
   fine when that is 0): save reads it, load fills it. */
typedef struct hpdl_ckpt_entry {
    const char *name; /* unique within the file, 1..63 bytes */
    hpdl_dtype dtype;
    int rank;         /* 0..4 (0: a scalar) */
    int64_t dims[4];
    void *data;
} hpdl_ckpt_entry;

#define HPDL_CKPT_VERSION 1u
#define HPDL_CKPT_MAX_NAME 63
#define HPDL_CKPT_MAX_MODEL 255
#define HPDL_CKPT_MAX_RANK 4
/* The largest checkpoint file save writes and load reads (load holds the
   file in memory once, and a file's size bounds what it allocates). Define it before including hpdl.h to change it. */
#ifndef HPDL_CKPT_MAX_BYTES
#define HPDL_CKPT_MAX_BYTES (1ull << 40)
#endif

/* POSIX: the temporary file is created with open(O_EXCL), written with
   write() and made durable with fsync() before the rename. Elsewhere
   (plain C99) it is written with stdio, and fclose is all there is. */
#if defined(__unix__) || defined(__APPLE__)
#include <fcntl.h>
#include <unistd.h>
#define HPDL__CKPT_POSIX 1
#endif

/* Bytes of one element of a dtype code; 0 for an unknown code. */
static inline size_t hpdl__dtype_bytes(uint64_t code) {
    switch (code) {
    case HPDL_DTYPE_F32: case HPDL_DTYPE_I32: return 4;
    case HPDL_DTYPE_F64: case HPDL_DTYPE_I64: return 8;
    case HPDL_DTYPE_F16: case HPDL_DTYPE_BF16: return 2;
    case HPDL_DTYPE_I8: return 1;
    default: return 0;
    }
}

/* Bytes of one element of t; 0 for a value that is not a hpdl_dtype. */
HPDL_API size_t hpdl_dtype_size(hpdl_dtype t) {
    return hpdl__dtype_bytes((uint64_t)(int64_t)t);
}

static inline const char *hpdl__dtype_name(uint64_t code) {
    static const char *const names[8] = {"?", "f32", "f64", "f16", "bf16", "i32", "i64", "i8"};
    return code < 8 ? names[code] : "?";
}

static inline void hpdl__le_store(unsigned char *p, uint64_t v, int bytes) {
    int i;
    for (i = 0; i < bytes; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static inline uint64_t hpdl__le_load(const unsigned char *p, int bytes) {
    uint64_t v = 0;
    int i;
    for (i = bytes - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* Two's complement without implementation-defined conversions. */
static inline int64_t hpdl__i64_from_u64(uint64_t v) {
    return v <= (uint64_t)INT64_MAX ? (int64_t)v : -(int64_t)(~v) - 1;
}

#define HPDL__FNV64_OFFSET 0xcbf29ce484222325ull
#define HPDL__FNV64_PRIME 0x100000001b3ull

static inline uint64_t hpdl__fnv1a64(uint64_t h, const unsigned char *p, size_t n) {
    size_t i;
    for (i = 0; i < n; i++) h = (h ^ p[i]) * HPDL__FNV64_PRIME;
    return h;
}

static inline int hpdl__host_little_endian(void) {
    const uint16_t one = 1;
    unsigned char first;
    memcpy(&first, &one, 1);
    return first == 1;
}

/* Copies bytes of elem-byte elements, reversing each element's bytes when
   swap is set: the file's little-endian order <-> a big-endian host's. */
static inline void hpdl__ckpt_copy_elements(unsigned char *dst, const unsigned char *src, size_t bytes, size_t elem,
                                            int swap) {
    size_t i, k;
    if (bytes == 0) return;
    if (!swap || elem == 1) { memcpy(dst, src, bytes); return; }
    for (i = 0; i + elem <= bytes; i += elem)
        for (k = 0; k < elem; k++) dst[i + k] = src[i + elem - 1 - k];
}

/* strlen, but looks at no more than max bytes (returns max if no NUL). */
static inline size_t hpdl__strlen_max(const char *s, size_t max) {
    size_t n = 0;
    while (n < max && s[n]) n++;
    return n;
}

/* s[0..len) fit for a message: bytes outside printable ASCII become '?'. */
static inline const char *hpdl__printable(char *out, size_t size, const unsigned char *s, size_t len) {
    size_t i;
    if (len >= size) len = size - 1;
    for (i = 0; i < len; i++) out[i] = s[i] >= 0x20 && s[i] < 0x7f ? (char)s[i] : '?';
    out[len] = '\0';
    return out;
}

/* "f32[784,100]" ("i64[]" for a scalar) into out. */
static inline const char *hpdl__ckpt_shape_text(char *out, size_t size, uint64_t dtype, uint64_t rank,
                                                const int64_t *dims) {
    size_t used;
    uint64_t d;
    if (dtype < 8 && dtype > 0) snprintf(out, size, "%s[", hpdl__dtype_name(dtype));
    else snprintf(out, size, "dtype %llu[", (unsigned long long)dtype);
    for (d = 0; d < rank && d < HPDL_CKPT_MAX_RANK; d++) {
        used = strlen(out);
        snprintf(out + used, size - used, d ? ",%lld" : "%lld", (long long)dims[d]);
    }
    used = strlen(out);
    snprintf(out + used, size - used, "]");
    return out;
}

/* Why a tensor of this dtype and shape cannot be in a checkpoint, or NULL
   when it can; then *bytes is its size. */
static inline const char *hpdl__ckpt_shape_problem(uint64_t dtype, int64_t rank, const int64_t *dims,
                                                   uint64_t *bytes) {
    uint64_t total = hpdl__dtype_bytes(dtype);
    int64_t d;
    if (total == 0) return "unknown dtype";
    if (rank < 0 || rank > HPDL_CKPT_MAX_RANK) return "rank outside 0..4";
    for (d = 0; d < rank; d++)
        if (dims[d] < 0) return "negative dimension";
    for (d = 0; d < rank; d++) {
        if (dims[d] > 0 && total > HPDL_CKPT_MAX_BYTES / (uint64_t)dims[d])
            return "more bytes than HPDL_CKPT_MAX_BYTES";
        total *= (uint64_t)dims[d];
    }
    if (total > HPDL_CKPT_MAX_BYTES || (uint64_t)(size_t)total != total) return "more bytes than HPDL_CKPT_MAX_BYTES";
    *bytes = total;
    return NULL;
}

/* A tensor name as the duplicate check sees it (not NUL-terminated in a file). */
typedef struct hpdl__ckpt_name {
    const char *p;
    size_t len;
} hpdl__ckpt_name;

static inline int hpdl__ckpt_name_cmp(const void *a, const void *b) {
    const hpdl__ckpt_name *x = (const hpdl__ckpt_name *)a, *y = (const hpdl__ckpt_name *)b;
    int c = memcmp(x->p, y->p, x->len < y->len ? x->len : y->len);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* A name that appears twice in names[0..n) (sorted in place), or NULL.
   Sorting keeps a file of many tensors at n log n, not n^2. */
static inline const hpdl__ckpt_name *hpdl__ckpt_duplicate(hpdl__ckpt_name *names, size_t n) {
    size_t i;
    if (n < 2) return NULL;
    qsort(names, n, sizeof *names, hpdl__ckpt_name_cmp);
    for (i = 1; i < n; i++)
        if (hpdl__ckpt_name_cmp(&names[i - 1], &names[i]) == 0) return &names[i];
    return NULL;
}

/* ---- checks of the caller's entries (save and load) ---------------------- */

static inline hpdl_status hpdl__ckpt_check_entry(const char *op, int i, const hpdl_ckpt_entry *e, uint64_t *bytes) {
    char name[HPDL_CKPT_MAX_NAME + 2];
    size_t len = e->name ? hpdl__strlen_max(e->name, HPDL_CKPT_MAX_NAME + 1) : 0;
    const char *why = NULL;
    if (len < 1 || len > HPDL_CKPT_MAX_NAME) why = "name of 1..63 bytes expected";
    if (!why) why = hpdl__ckpt_shape_problem((uint64_t)(int64_t)e->dtype, e->rank, e->dims, bytes);
    if (!why && *bytes > 0 && !e->data) why = "no data";
    if (!why) return HPDL_OK;
    fprintf(stderr, "hpdl: checkpoint %s: tensor %d ('%s'): %s\n", op, i,
            e->name ? hpdl__printable(name, sizeof name, (const unsigned char *)e->name, len) : "(null)", why);
    return HPDL_ERR_INVALID;
}

/* Names unique among the entries (HPDL_ERR_INVALID, printed, if not). */
static inline hpdl_status hpdl__ckpt_check_unique(const char *op, int n, const hpdl_ckpt_entry *entries) {
    hpdl__ckpt_name *names;
    const hpdl__ckpt_name *dup;
    char name[HPDL_CKPT_MAX_NAME + 1];
    int i;
    if (n < 2) return HPDL_OK;
    names = (hpdl__ckpt_name *)hpdl_alloc((size_t)n, sizeof *names);
    if (!names) return HPDL_ERR_NOMEM;
    for (i = 0; i < n; i++) {
        names[i].p = entries[i].name;
        names[i].len = strlen(entries[i].name);
    }
    dup = hpdl__ckpt_duplicate(names, (size_t)n);
    if (dup) fprintf(stderr, "hpdl: checkpoint %s: tensor name '%s' appears twice\n", op,
                     hpdl__printable(name, sizeof name, (const unsigned char *)dup->p, dup->len));
    HPDL_FREE(names);
    return dup ? HPDL_ERR_INVALID : HPDL_OK;
}

/* What save and load both take: a path, a model string of at most 255
   bytes, n >= 0 valid entries with unique names, at most
   HPDL_CKPT_MAX_BYTES in all. */
static inline hpdl_status hpdl__ckpt_check_args(const char *op, const char *path, const char *model, int n,
                                                const hpdl_ckpt_entry *entries) {
    uint64_t bytes, total;
    hpdl_status st;
    int i;
    if (!path || !model || n < 0 || (n > 0 && !entries)) {
        fprintf(stderr, "hpdl: checkpoint %s: path, model and entries must be set, n >= 0 (n = %d)\n", op, n);
        return HPDL_ERR_INVALID;
    }
    if (hpdl__strlen_max(model, HPDL_CKPT_MAX_MODEL + 1) > HPDL_CKPT_MAX_MODEL) {
        fprintf(stderr, "hpdl: checkpoint %s: model string longer than %d bytes\n", op, HPDL_CKPT_MAX_MODEL);
        return HPDL_ERR_INVALID;
    }
    total = 8 + 4 + 4 + strlen(model) + 4 + 8; /* magic, version, model, count, checksum */
    for (i = 0; i < n; i++) {
        st = hpdl__ckpt_check_entry(op, i, &entries[i], &bytes);
        if (st != HPDL_OK) return st;
        total += 4 + strlen(entries[i].name) + 4 + 4 + 8 * (uint64_t)entries[i].rank + 8 + bytes;
        if (total > HPDL_CKPT_MAX_BYTES) { /* so that what save writes, load reads */
            fprintf(stderr, "hpdl: checkpoint %s: a file of more than HPDL_CKPT_MAX_BYTES\n", op);
            return HPDL_ERR_INVALID;
        }
    }
    return hpdl__ckpt_check_unique(op, n, entries);
}

/* ---- writing ------------------------------------------------------------ */

/* The temporary file being written, through a buffer; hash is the FNV-1a
   of every byte put so far, error the first write's errno (-1: unknown). */
typedef struct hpdl__ckpt_writer {
#ifdef HPDL__CKPT_POSIX
    int fd;
#else
    FILE *f;
#endif
    uint64_t hash;
    int error;
    size_t used;
    unsigned char buf[16384];
} hpdl__ckpt_writer;

static inline void hpdl__ckpt_flush(hpdl__ckpt_writer *w) {
    const unsigned char *p = w->buf;
    size_t n = w->used;
    w->used = 0;
    if (w->error) return;
#ifdef HPDL__CKPT_POSIX
    while (n > 0) {
        ssize_t k = write(w->fd, p, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) { w->error = k < 0 ? errno : -1; return; }
        p += k;
        n -= (size_t)k;
    }
#else
    errno = 0;
    if (n > 0 && fwrite(p, 1, n, w->f) != n) w->error = errno ? errno : -1;
#endif
}

static inline void hpdl__ckpt_put(hpdl__ckpt_writer *w, const unsigned char *p, size_t n) {
    w->hash = hpdl__fnv1a64(w->hash, p, n);
    while (n > 0) {
        size_t k = sizeof w->buf - w->used < n ? sizeof w->buf - w->used : n;
        memcpy(w->buf + w->used, p, k);
        w->used += k;
        p += k;
        n -= k;
        if (w->used == sizeof w->buf) hpdl__ckpt_flush(w);
    }
}

static inline void hpdl__ckpt_put_uint(hpdl__ckpt_writer *w, uint64_t v, int bytes) {
    unsigned char b[8];
    hpdl__le_store(b, v, bytes);
    hpdl__ckpt_put(w, b, (size_t)bytes);
}

/* A tensor's elements in little-endian order: as they are on a
   little-endian host; swapped through a small buffer on a big-endian one. */
static inline void hpdl__ckpt_put_data(hpdl__ckpt_writer *w, const void *data, size_t bytes, size_t elem) {
    unsigned char chunk[4096]; /* a multiple of every element size */
    const unsigned char *p = (const unsigned char *)data;
    size_t done, k;
    if (hpdl__host_little_endian()) { hpdl__ckpt_put(w, p, bytes); return; }
    for (done = 0; done < bytes; done += k) {
        k = bytes - done < sizeof chunk ? bytes - done : sizeof chunk;
        hpdl__ckpt_copy_elements(chunk, p + done, k, elem, 1);
        hpdl__ckpt_put(w, chunk, k);
    }
}

/* The whole file, as the table above the types says (arguments checked). */
static inline void hpdl__ckpt_write_all(hpdl__ckpt_writer *w, const char *model, int n, const hpdl_ckpt_entry *entries) {
    size_t model_len = strlen(model);
    uint64_t bytes = 0;
    int i, d;
    hpdl__ckpt_put(w, (const unsigned char *)"HPDLCKPT", 8);
    hpdl__ckpt_put_uint(w, HPDL_CKPT_VERSION, 4);
    hpdl__ckpt_put_uint(w, model_len, 4);
    hpdl__ckpt_put(w, (const unsigned char *)model, model_len);
    hpdl__ckpt_put_uint(w, (uint64_t)n, 4);
    for (i = 0; i < n; i++) {
        const hpdl_ckpt_entry *e = &entries[i];
        size_t name_len = strlen(e->name);
        hpdl__ckpt_shape_problem((uint64_t)e->dtype, e->rank, e->dims, &bytes); /* checked: sets bytes */
        hpdl__ckpt_put_uint(w, name_len, 4);
        hpdl__ckpt_put(w, (const unsigned char *)e->name, name_len);
        hpdl__ckpt_put_uint(w, (uint64_t)e->dtype, 4);
        hpdl__ckpt_put_uint(w, (uint64_t)e->rank, 4);
        for (d = 0; d < e->rank; d++) hpdl__ckpt_put_uint(w, (uint64_t)e->dims[d], 8);
        hpdl__ckpt_put_uint(w, bytes, 8);
        hpdl__ckpt_put_data(w, e->data, (size_t)bytes, hpdl_dtype_size(e->dtype));
    }
    hpdl__ckpt_put_uint(w, w->hash, 8);
    hpdl__ckpt_flush(w);
}

/* A tag for temporary names that no other live process uses. */
static inline long hpdl__process_tag(void) {
#ifdef HPDL__CKPT_POSIX
    return (long)getpid();
#else
    return (long)time(NULL);
#endif
}

/* Creates a new file tmp = <path>.tmp.<pid>.<k> for w; HPDL_ERR_IO (printed) if it cannot. */
static inline hpdl_status hpdl__ckpt_create_temp(const char *path, char *tmp, size_t size, hpdl__ckpt_writer *w) {
    static unsigned long next; /* per translation unit: O_EXCL settles a clash */
    int attempt;
    w->hash = HPDL__FNV64_OFFSET;
    w->error = 0;
    w->used = 0;
    for (attempt = 0; attempt < 100; attempt++) {
        snprintf(tmp, size, "%s.tmp.%ld.%lu", path, hpdl__process_tag(), next++); /* fits: checked by the caller */
#ifdef HPDL__CKPT_POSIX
        w->fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0666);
        if (w->fd >= 0) return HPDL_OK;
        if (errno != EEXIST) break;
#else
        w->f = fopen(tmp, "wb");
        if (w->f) return HPDL_OK;
        break;
#endif
    }
    fprintf(stderr, "hpdl: %s: cannot create %s: %s\n", path, tmp, strerror(errno));
    return HPDL_ERR_IO;
}

/* Closes the temporary file, on disk (fsync) before its new name points at
   it, and renames it over path. On any error: HPDL_ERR_IO, the temporary
   file removed, path as it was. */
static inline hpdl_status hpdl__ckpt_commit(hpdl__ckpt_writer *w, const char *tmp, const char *path) {
    int error = w->error;
#ifdef HPDL__CKPT_POSIX
    if (!error && fsync(w->fd) != 0) error = errno;
    if (close(w->fd) != 0 && !error) error = errno;
#else
    errno = 0;
    if (fclose(w->f) != 0 && !error) error = errno ? errno : -1;
#endif
#ifdef _WIN32
    if (!error) remove(path); /* rename does not replace a file there: not atomic on Windows */
#endif
    errno = 0;
    if (!error && rename(tmp, path) != 0) error = errno ? errno : -1;
    if (!error) return HPDL_OK;
    fprintf(stderr, "hpdl: %s: cannot write checkpoint: %s\n", path, error > 0 ? strerror(error) : "write error");
    remove(tmp);
    return HPDL_ERR_IO;
}

/* Writes entries[0..n) and the model string to path, whole or not at all:
   HPDL_ERR_INVALID (nothing written) for a bad argument, HPDL_ERR_IO with
   the old file at path left as it was when the file cannot be written. */
HPDL_API hpdl_status hpdl_ckpt_save(const char *path, const char *model, int n, const hpdl_ckpt_entry *entries) {
    char tmp[4096 + 64];
    hpdl__ckpt_writer w;
    hpdl_status st = hpdl__ckpt_check_args("save", path, model, n, entries);
    if (st != HPDL_OK) return st;
    if (strlen(path) > 4096) {
        fprintf(stderr, "hpdl: checkpoint save: path longer than 4096 bytes\n");
        return HPDL_ERR_INVALID;
    }
    st = hpdl__ckpt_create_temp(path, tmp, sizeof tmp, &w);
    if (st != HPDL_OK) return st;
    hpdl__ckpt_write_all(&w, model, n, entries);
    return hpdl__ckpt_commit(&w, tmp, path);
}

/* ---- reading ------------------------------------------------------------ */

/* A tensor as the file describes it; name and data point into the file's bytes. */
typedef struct hpdl__ckpt_tensor {
    const unsigned char *name, *data;
    uint64_t name_len, dtype, rank, bytes;
    int64_t dims[HPDL_CKPT_MAX_RANK];
} hpdl__ckpt_tensor;

typedef struct hpdl__ckpt_file {
    const unsigned char *model;
    uint64_t model_len, count;
    hpdl__ckpt_tensor *tensors; /* count of them */
} hpdl__ckpt_file;

/* Bytes not yet parsed, and the file they came from (for messages). */
typedef struct hpdl__ckpt_reader {
    const unsigned char *p;
    size_t left, len;
    const char *path;
} hpdl__ckpt_reader;

static inline int hpdl__ckpt_take(hpdl__ckpt_reader *r, uint64_t n, const unsigned char **out) {
    if (n > r->left) return 0;
    *out = r->p;
    r->p += n;
    r->left -= (size_t)n;
    return 1;
}

static inline int hpdl__ckpt_take_uint(hpdl__ckpt_reader *r, int bytes, uint64_t *v) {
    const unsigned char *p;
    if (!hpdl__ckpt_take(r, (uint64_t)bytes, &p)) return 0;
    *v = hpdl__le_load(p, bytes);
    return 1;
}

/* Prints why the file is not a valid checkpoint; HPDL_ERR_FORMAT. */
static inline hpdl_status hpdl__ckpt_bad(const hpdl__ckpt_reader *r, const char *what, const char *detail) {
    fprintf(stderr, "hpdl: %s: bad checkpoint: %s%s\n", r->path, what, detail ? detail : "");
    return HPDL_ERR_FORMAT;
}

static inline hpdl_status hpdl__ckpt_truncated(const hpdl__ckpt_reader *r, const char *where) {
    char detail[96];
    snprintf(detail, sizeof detail, " (the file ends at %llu bytes)", (unsigned long long)r->len);
    fprintf(stderr, "hpdl: %s: bad checkpoint: truncated in %s%s\n", r->path, where, detail);
    return HPDL_ERR_FORMAT;
}

/* Magic, version, model string and tensor count. */
static inline hpdl_status hpdl__ckpt_parse_header(hpdl__ckpt_reader *r, hpdl__ckpt_file *file) {
    const unsigned char *magic;
    char found[16];
    uint64_t version;
    size_t have = r->left < 8 ? r->left : 8;
    if (memcmp(r->p, "HPDLCKPT", have) != 0)
        return hpdl__ckpt_bad(r, "expected magic HPDLCKPT, found ", hpdl__printable(found, sizeof found, r->p, have));
    if (!hpdl__ckpt_take(r, 8, &magic)) return hpdl__ckpt_truncated(r, "the magic");
    if (!hpdl__ckpt_take_uint(r, 4, &version)) return hpdl__ckpt_truncated(r, "the version");
    if (version != HPDL_CKPT_VERSION) {
        snprintf(found, sizeof found, "%llu", (unsigned long long)version);
        return hpdl__ckpt_bad(r, "unknown version (this reader knows 1): ", found);
    }
    if (!hpdl__ckpt_take_uint(r, 4, &file->model_len)) return hpdl__ckpt_truncated(r, "the model length");
    if (file->model_len > HPDL_CKPT_MAX_MODEL) return hpdl__ckpt_bad(r, "model string longer than 255 bytes", NULL);
    if (!hpdl__ckpt_take(r, file->model_len, &file->model)) return hpdl__ckpt_truncated(r, "the model string");
    if (memchr(file->model, 0, (size_t)file->model_len)) return hpdl__ckpt_bad(r, "NUL byte in the model string", NULL);
    if (!hpdl__ckpt_take_uint(r, 4, &file->count)) return hpdl__ckpt_truncated(r, "the tensor count");
    /* Each tensor takes at least 21 bytes: a count the file cannot hold is refused before it is allocated. */
    if (file->count > r->left / 21) return hpdl__ckpt_truncated(r, "the tensors (too many for the file)");
    return HPDL_OK;
}

/* Prints what is wrong with tensor i of the file; HPDL_ERR_FORMAT. */
static inline hpdl_status hpdl__ckpt_bad_tensor(const hpdl__ckpt_reader *r, uint64_t i, const hpdl__ckpt_tensor *t,
                                                const char *why) {
    char where[256], name[HPDL_CKPT_MAX_NAME + 1], shape[128];
    snprintf(where, sizeof where, "tensor %llu ('%s', %s): ", (unsigned long long)i,
             hpdl__printable(name, sizeof name, t->name, (size_t)t->name_len),
             hpdl__ckpt_shape_text(shape, sizeof shape, t->dtype, t->rank, t->dims));
    return hpdl__ckpt_bad(r, where, why);
}

static inline hpdl_status hpdl__ckpt_parse_tensor(hpdl__ckpt_reader *r, uint64_t i, hpdl__ckpt_tensor *t) {
    uint64_t v, bytes = 0, d;
    const char *why;
    memset(t, 0, sizeof *t);
    t->name = (const unsigned char *)"";
    if (!hpdl__ckpt_take_uint(r, 4, &v)) return hpdl__ckpt_truncated(r, "a tensor's name length");
    if (v < 1 || v > HPDL_CKPT_MAX_NAME) return hpdl__ckpt_bad_tensor(r, i, t, "name length outside 1..63");
    t->name_len = v;
    if (!hpdl__ckpt_take(r, t->name_len, &t->name)) return hpdl__ckpt_truncated(r, "a tensor's name");
    if (memchr(t->name, 0, (size_t)t->name_len)) return hpdl__ckpt_bad_tensor(r, i, t, "NUL byte in the name");
    if (!hpdl__ckpt_take_uint(r, 4, &t->dtype) || !hpdl__ckpt_take_uint(r, 4, &t->rank))
        return hpdl__ckpt_truncated(r, "a tensor's dtype and rank");
    if (t->rank > HPDL_CKPT_MAX_RANK) return hpdl__ckpt_bad_tensor(r, i, t, "rank outside 0..4");
    for (d = 0; d < t->rank; d++) {
        if (!hpdl__ckpt_take_uint(r, 8, &v)) return hpdl__ckpt_truncated(r, "a tensor's dimensions");
        t->dims[d] = hpdl__i64_from_u64(v);
    }
    why = hpdl__ckpt_shape_problem(t->dtype, (int64_t)t->rank, t->dims, &bytes);
    if (why) return hpdl__ckpt_bad_tensor(r, i, t, why);
    if (!hpdl__ckpt_take_uint(r, 8, &t->bytes)) return hpdl__ckpt_truncated(r, "a tensor's byte count");
    if (t->bytes != bytes) return hpdl__ckpt_bad_tensor(r, i, t, "byte count not product(dims) * dtype size");
    if (!hpdl__ckpt_take(r, t->bytes, &t->data)) return hpdl__ckpt_truncated(r, "a tensor's data");
    return HPDL_OK;
}

/* After the tensors: exactly the checksum, and it matches. */
static inline hpdl_status hpdl__ckpt_parse_checksum(hpdl__ckpt_reader *r, const unsigned char *start) {
    uint64_t stored, computed;
    char detail[80];
    if (r->left > 8) {
        snprintf(detail, sizeof detail, "%llu", (unsigned long long)(r->left - 8));
        return hpdl__ckpt_bad(r, "trailing bytes after the checksum: ", detail);
    }
    computed = hpdl__fnv1a64(HPDL__FNV64_OFFSET, start, (size_t)(r->p - start));
    if (!hpdl__ckpt_take_uint(r, 8, &stored)) return hpdl__ckpt_truncated(r, "the checksum");
    if (stored == computed) return HPDL_OK;
    snprintf(detail, sizeof detail, "stored %016llx, computed %016llx", (unsigned long long)stored,
             (unsigned long long)computed);
    return hpdl__ckpt_bad(r, "checksum mismatch (the file is corrupted): ", detail);
}

/* Names unique within the file (HPDL_ERR_FORMAT, printed, if not). */
static inline hpdl_status hpdl__ckpt_file_unique(const hpdl__ckpt_reader *r, const hpdl__ckpt_file *file) {
    hpdl__ckpt_name *names;
    const hpdl__ckpt_name *dup;
    char name[HPDL_CKPT_MAX_NAME + 1];
    uint64_t i;
    if (file->count < 2) return HPDL_OK;
    names = (hpdl__ckpt_name *)hpdl_alloc((size_t)file->count, sizeof *names);
    if (!names) return HPDL_ERR_NOMEM;
    for (i = 0; i < file->count; i++) {
        names[i].p = (const char *)file->tensors[i].name;
        names[i].len = (size_t)file->tensors[i].name_len;
    }
    dup = hpdl__ckpt_duplicate(names, (size_t)file->count);
    if (dup) hpdl__ckpt_bad(r, "tensor name appears twice: ",
                            hpdl__printable(name, sizeof name, (const unsigned char *)dup->p, dup->len));
    HPDL_FREE(names);
    return dup ? HPDL_ERR_FORMAT : HPDL_OK;
}

/* Parses and checks buf[0..len) whole; file->tensors is allocated (the
   caller frees it, also on error). */
static inline hpdl_status hpdl__ckpt_parse(const unsigned char *buf, size_t len, const char *path,
                                           hpdl__ckpt_file *file) {
    hpdl__ckpt_reader r;
    hpdl_status st;
    uint64_t i;
    r.p = buf;
    r.left = r.len = len;
    r.path = path;
    file->tensors = NULL;
    st = hpdl__ckpt_parse_header(&r, file);
    if (st != HPDL_OK) return st;
    file->tensors = (hpdl__ckpt_tensor *)hpdl_alloc((size_t)file->count, sizeof *file->tensors);
    if (!file->tensors) return HPDL_ERR_NOMEM;
    for (i = 0; i < file->count; i++) {
        st = hpdl__ckpt_parse_tensor(&r, i, &file->tensors[i]);
        if (st != HPDL_OK) return st;
    }
    st = hpdl__ckpt_parse_checksum(&r, buf);
    return st == HPDL_OK ? hpdl__ckpt_file_unique(&r, file) : st;
}

/* Reads path whole into a new buffer *buf of *len bytes. */
static inline hpdl_status hpdl__ckpt_read_file(const char *path, unsigned char **buf, size_t *len) {
    FILE *f = fopen(path, "rb");
    long size = -1;
    if (!f) {
        fprintf(stderr, "hpdl: %s: cannot open checkpoint: %s\n", path, strerror(errno));
        return HPDL_ERR_IO;
    }
    (void)fgetc(f); /* a folder opens, then fails to read */
    if (ferror(f) || fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fprintf(stderr, "hpdl: %s: cannot read checkpoint: %s\n", path, strerror(errno));
        fclose(f);
        return HPDL_ERR_IO;
    }
    if ((unsigned long long)size > HPDL_CKPT_MAX_BYTES) {
        fprintf(stderr, "hpdl: %s: bad checkpoint: %lld bytes, more than HPDL_CKPT_MAX_BYTES\n", path, (long long)size);
        fclose(f);
        return HPDL_ERR_FORMAT;
    }
    *buf = (unsigned char *)hpdl_alloc((size_t)size + 1, 1);
    *len = *buf ? fread(*buf, 1, (size_t)size + 1, f) : 0; /* one byte more: a file that grew shows */
    if (*buf && !ferror(f) && *len == (size_t)size) { fclose(f); return HPDL_OK; }
    fprintf(stderr, "hpdl: %s: cannot read checkpoint: %s\n", path,
            !*buf ? "out of memory" : ferror(f) ? strerror(errno) : "the file changed while it was read");
    fclose(f);
    if (!*buf) return HPDL_ERR_NOMEM;
    HPDL_FREE(*buf);
    *buf = NULL;
    return HPDL_ERR_IO;
}

/* Prints how the file differs from the caller's model; HPDL_ERR_MISMATCH. */
static inline hpdl_status hpdl__ckpt_other_model(const char *path, const char *what) {
    fprintf(stderr, "hpdl: %s: checkpoint of another model: %s\n", path, what);
    return HPDL_ERR_MISMATCH;
}

/* Tensor i of the file against entry e: name, dtype and shape. */
static inline hpdl_status hpdl__ckpt_match_tensor(const char *path, int i, const hpdl__ckpt_tensor *t,
                                                  const hpdl_ckpt_entry *e) {
    char what[400], name[HPDL_CKPT_MAX_NAME + 1], expected[128], found[128];
    int d, same = t->dtype == (uint64_t)(int64_t)e->dtype && t->rank == (uint64_t)e->rank;
    size_t len = strlen(e->name);
    hpdl__printable(name, sizeof name, t->name, (size_t)t->name_len);
    if (t->name_len != len || memcmp(t->name, e->name, len) != 0) {
        snprintf(what, sizeof what, "tensor %d: expected name '%s', found '%s'", i, e->name, name);
        return hpdl__ckpt_other_model(path, what);
    }
    for (d = 0; same && d < e->rank; d++) same = t->dims[d] == e->dims[d];
    if (same) return HPDL_OK;
    snprintf(what, sizeof what, "tensor %d ('%s'): expected %s, found %s", i, name,
             hpdl__ckpt_shape_text(expected, sizeof expected, (uint64_t)(int64_t)e->dtype, (uint64_t)e->rank, e->dims),
             hpdl__ckpt_shape_text(found, sizeof found, t->dtype, t->rank, t->dims));
    return hpdl__ckpt_other_model(path, what);
}

/* The file holds the caller's model: same model string and tensor count,
   and each tensor's name, dtype and shape, in order. */
static inline hpdl_status hpdl__ckpt_match(const hpdl__ckpt_file *file, const char *path, const char *model, int n,
                                           const hpdl_ckpt_entry *entries) {
    char what[700], found[HPDL_CKPT_MAX_MODEL + 1];
    size_t len = strlen(model);
    hpdl_status st;
    int i;
    if (file->model_len != len || memcmp(file->model, model, len) != 0) {
        snprintf(what, sizeof what, "expected model '%s', found '%s'", model,
                 hpdl__printable(found, sizeof found, file->model, (size_t)file->model_len));
        return hpdl__ckpt_other_model(path, what);
    }
    if (file->count != (uint64_t)n) {
        snprintf(what, sizeof what, "expected %d tensors, found %llu", n, (unsigned long long)file->count);
        return hpdl__ckpt_other_model(path, what);
    }
    for (i = 0; i < n; i++) {
        st = hpdl__ckpt_match_tensor(path, i, &file->tensors[i], &entries[i]);
        if (st != HPDL_OK) return st;
    }
    return HPDL_OK;
}

/* Fills entries[0..n) from path, a checkpoint of the same model. Refused,
   with no entry's data written: HPDL_ERR_INVALID (bad argument), _IO (no
   such file, unreadable), _FORMAT (not a valid checkpoint: magic, version,
   truncated, trailing bytes, checksum, impossible header), _MISMATCH (a
   valid checkpoint of another model), _NOMEM. */
HPDL_API hpdl_status hpdl_ckpt_load(const char *path, const char *model, int n, const hpdl_ckpt_entry *entries) {
    unsigned char *buf = NULL;
    size_t len = 0;
    hpdl__ckpt_file file;
    hpdl_status st = hpdl__ckpt_check_args("load", path, model, n, entries);
    int i;
    if (st != HPDL_OK) return st;
    st = hpdl__ckpt_read_file(path, &buf, &len);
    if (st != HPDL_OK) return st;
    st = hpdl__ckpt_parse(buf, len, path, &file);
    if (st == HPDL_OK) st = hpdl__ckpt_match(&file, path, model, n, entries);
    for (i = 0; st == HPDL_OK && i < n; i++) /* checked whole: now copy */
        hpdl__ckpt_copy_elements((unsigned char *)entries[i].data, file.tensors[i].data, (size_t)file.tensors[i].bytes,
                                 hpdl_dtype_size(entries[i].dtype), !hpdl__host_little_endian());
    HPDL_FREE(file.tensors);
    HPDL_FREE(buf);
    return st;
}

/* ======================================================================== */
/* Performance models, placement, quantization                               */
/* ======================================================================== */
/* Performance models, placement, quantization. */
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

/* What a hpdl_layer describes; the counting rules above give each kind's costs. */
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

/* A per-sample activation shape: channels x height x width. */
typedef struct hpdl_shape { int c, h, w; } hpdl_shape;

/* One layer's descriptor and per-sample costs; hpdl_layer_conv2d and the other hpdl_layer_*
   functions fill it. */
typedef struct hpdl_layer {
    char name[40];
    hpdl_layer_kind kind;
    hpdl_shape in, out;              /* in: the first input */
    int kernel, stride, pad, groups; /* conv and pooling (square kernels); else 0 */
    double macs, flops, params;      /* per sample, see the counting rules above */
    double in_elems, out_elems;      /* activations read and written per sample */
} hpdl_layer;

/* A short name of kind ("conv", "maxpool", ...) in static storage; "?" for an unknown value. */
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

/* The shape c x h x w; nothing is checked. */
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
    /* 64 bits: span + s - 1 and (out - 1) * s overflow int for a huge stride */
    int64_t span = (int64_t)n + 2 * (int64_t)p - k, out;
    if (!ceil_mode) return hpdl_conv_output_size(n, k, s, p, 1); /* the convolution's rule */
    if (span < 0) return 0;
    out = (span + s - 1) / s + 1;
    if ((out - 1) * s >= (int64_t)n + p) out--;
    return (int)out;
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

/* Frees the layer array only when a builder allocated it, then empties *net (layers NULL,
   count 0); NULL net is ignored. */
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
/* VGG16 (configuration D: 13 3x3 convolutions, 3 fully connected layers); storage as for AlexNet. */
HPDL_API hpdl_status hpdl_net_vgg16(hpdl_net *net, hpdl_layer *storage, int capacity) {
    return hpdl__net_make(net, "VGG16", hpdl__build_vgg16, storage, capacity);
}
/* VGG19 (configuration E: 16 3x3 convolutions, 3 fully connected layers); storage as for AlexNet. */
HPDL_API hpdl_status hpdl_net_vgg19(hpdl_net *net, hpdl_layer *storage, int capacity) {
    return hpdl__net_make(net, "VGG19", hpdl__build_vgg19, storage, capacity);
}
/* GoogLeNet (nine Inception modules, no auxiliary classifiers); storage as for AlexNet. */
HPDL_API hpdl_status hpdl_net_googlenet(hpdl_net *net, hpdl_layer *storage, int capacity) {
    return hpdl__net_make(net, "GoogLeNet", hpdl__build_googlenet, storage, capacity);
}
/* ResNet-50 (bottleneck blocks 3, 4, 6, 3, with batch norm); storage as for AlexNet. */
HPDL_API hpdl_status hpdl_net_resnet50(hpdl_net *net, hpdl_layer *storage, int capacity) {
    return hpdl__net_make(net, "ResNet-50", hpdl__build_resnet50, storage, capacity);
}

/* Whole-network totals per sample; conv_share = convolution FLOPs / FLOPs. */
typedef struct hpdl_net_totals {
    double macs, flops, params, act_elems, conv_flops, conv_share;
} hpdl_net_totals;

/* Sums the layers' per-sample counts into *out; HPDL_ERR_INVALID for a NULL argument or a
   network without layers. */
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

/* Element type of an estimate: 4 or 8 bytes per element, and the f32 or f64 peak. */
typedef enum hpdl_precision { HPDL_PREC_F32, HPDL_PREC_F64 } hpdl_precision;

/* Devices whose figures hpdl_paleo_device knows. */
typedef enum hpdl_device_id {
    HPDL_DEVICE_K80,  /* Tesla K80 board (two GK210), boost clock */
    HPDL_DEVICE_V100, /* V100 SXM2 */
    HPDL_DEVICE_A100, /* A100 SXM4 40GB */
    HPDL_DEVICE_H100, /* H100 SXM5, non-tensor-core rates */
    HPDL_DEVICE_H200  /* H200 SXM, non-tensor-core rates */
} hpdl_device_id;

/* A device's peak rates; hpdl_paleo_device or hpdl_paleo_device_custom fills it. */
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

/* A PALEO estimate in seconds (see above). */
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

/* Fills *out for an allreduce of n bytes on p ranks in `seconds`; HPDL_ERR_INVALID for a NULL out,
   p < 1, or an n, seconds or link_bw that is not positive and finite. */
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

/* One affine quantization: real = scale * (q - zero_point). */
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
    double lo = min < 0.0 ? min : 0.0, hi = max > 0.0 ? max : 0.0, scale, zp;
    hpdl_quant_params p;
    if (!out || !(min <= max) || !(fabs(min) <= DBL_MAX) || !(fabs(max) <= DBL_MAX)) return HPDL_ERR_INVALID;
    scale = symmetric ? (-lo > hi ? -lo : hi) / HPDL_QUANT_QMAX : (hi - lo) / (HPDL_QUANT_QMAX - HPDL_QUANT_QMIN);
    /* Refused before any division by it: beyond float, or 0 as a float
       (a zero range would make lo / scale 0/0, a NaN zero point). */
    if (!(scale <= FLT_MAX) || !((float)scale > 0.0f)) return HPDL_ERR_INVALID;
    p.scale = (float)scale;
    if (symmetric) {
        p.zero_point = 0;
    } else {
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

/* q[0..n) = x quantized at p. HPDL_ERR_NUMERIC, nothing written, when x holds a NaN;
   HPDL_ERR_INVALID for a NULL pointer, n < 0 or an invalid p. */
HPDL_API hpdl_status hpdl_quant_quantize_f32(const float *x, int64_t n, hpdl_quant_params p, int8_t *q) {
    int64_t i;
    if (!x || !q || n < 0 || !hpdl__quant_params_valid(p)) return HPDL_ERR_INVALID;
    if (hpdl__has_nan_f32(x, n)) return HPDL_ERR_NUMERIC;
    for (i = 0; i < n; i++) q[i] = hpdl__quantize_one(x[i], p);
    return HPDL_OK;
}

/* x[0..n) = q dequantized at p; HPDL_ERR_INVALID for a NULL pointer, n < 0 or an invalid p. */
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
static inline int64_t hpdl__floor_shift(int64_t x, int e) { return x >= 0 ? x >> e : ~(~x >> e); }

/* gemmlowp's RoundingDivideByPOT: x / 2^e rounded to nearest, ties away from
   zero. Requantization uses e in [0, 31]; any e has a defined result (in
   64 bits, so e = 32 rounds INT32_MIN / 2^32 = -1/2 to -1): e <= 0 returns
   x, and e above 62 is taken as 62, where every int32 rounds to 0 anyway. */
HPDL_API int32_t hpdl_quant_rounding_divide_by_pot(int32_t x, int e) {
    int64_t mask, remainder, threshold;
    if (e <= 0) return x;
    if (e > 62) e = 62;
    mask = ((int64_t)1 << e) - 1;
    remainder = (int64_t)x & mask; /* int64_t is two's complement: x mod 2^e */
    threshold = (mask >> 1) + (x < 0 ? 1 : 0);
    return (int32_t)(hpdl__floor_shift(x, e) + (remainder > threshold ? 1 : 0));
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

/* One int32 accumulator to int8 into *out: clamp(zero_point + RDBPOT(SRDHM(acc, m0), shift), -128, 127).
   HPDL_ERR_INVALID for a NULL out, m0 below 2^30, shift outside [0, 31] or zero_point
   outside [-128, 127]. */
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

/* Starts c empty with `bins` histogram bins (even, >= 2), allocated here; free them with
   hpdl_quant_calib_free. HPDL_ERR_INVALID for a NULL c or bad bins; HPDL_ERR_NOMEM. */
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

/* Frees c's histogram and sets it to NULL; NULL c is ignored. */
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

/* Starts h empty: `bins` (> 0) zero counts over [lo, hi] (finite, lo < hi), allocated here;
   free them with hpdl_quant_hist_free. HPDL_ERR_INVALID for bad arguments; HPDL_ERR_NOMEM. */
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

/* Frees h's counts and sets them to NULL; NULL h is ignored. */
HPDL_API void hpdl_quant_hist_free(hpdl_quant_hist *h) {
    if (!h) return;
    HPDL_FREE(h->counts);
    h->counts = NULL;
}

/* NaN values are refused (HPDL_ERR_NUMERIC, nothing counted). */
HPDL_API hpdl_status hpdl_quant_hist_add_f32(hpdl_quant_hist *h, const float *x, int64_t n) {
    int64_t i;
    double range;
    if (!h || !h->counts || !x || n < 0) return HPDL_ERR_INVALID;
    if (hpdl__has_nan_f32(x, n)) return HPDL_ERR_NUMERIC;
    range = h->hi - h->lo;
    for (i = 0; i < n; i++) {
        /* Divide first: bins / range can be infinite (range 5e-324), and
           0 * inf is NaN. A NaN t (inf / inf) lands in bin 0, never in a cast. */
        double t = ((double)x[i] - h->lo) / range * h->bins;
        int64_t b = t >= h->bins ? h->bins - 1 : t > 0.0 ? (int64_t)t : 0;
        h->clipped += x[i] < h->lo || x[i] > h->hi;
        h->counts[b]++;
    }
    h->total += n;
    return HPDL_OK;
}

/* CSV with columns bin_lo,bin_hi,count (one row per bin) for gnuplot,
   written whole or not at all (to path.tmp, every write checked, then
   renamed): HPDL_ERR_IO otherwise, with the old file left as it was. */
HPDL_API hpdl_status hpdl_quant_hist_write_csv(const hpdl_quant_hist *h, const char *path) {
    hpdl_csv_file c;
    int b, n, bad = 0;
    double width;
    if (!h || !h->counts || !path) return HPDL_ERR_INVALID;
    n = snprintf(c.tmp, sizeof c.tmp, "%s.tmp", path);
    if (n < 0 || (size_t)n >= sizeof c.tmp) return HPDL_ERR_INVALID;
    memcpy(c.path, path, strlen(path) + 1); /* fits: shorter than tmp by 4 */
    c.f = fopen(c.tmp, "w");
    if (!c.f) {
        fprintf(stderr, "hpdl: cannot write %s: %s\n", c.tmp, strerror(errno));
        return HPDL_ERR_IO;
    }
    width = (h->hi - h->lo) / h->bins;
    bad |= fprintf(c.f, "bin_lo,bin_hi,count\n") < 0;
    for (b = 0; b < h->bins && !bad; b++)
        bad |= fprintf(c.f, "%.9g,%.9g,%lld\n", h->lo + b * width, h->lo + (b + 1) * width, (long long)h->counts[b]) < 0;
    if (bad) {
        hpdl_csv_discard(&c);
        return HPDL_ERR_IO;
    }
    return hpdl_csv_commit(&c);
}
/* Quantized MLP inference on the CPU (built on the int8
   quantization section above and hpdl_mlp_f32).

   A trained hpdl_mlp_f32 plus calibration batches become a hpdl_quant_mlp,
   which runs in three steps of the course's quantization lab:

       HPDL_QUANT_WEIGHTS      int8 weights (symmetric, one scale per output
                               channel), dequantized at run time; float
                               activations and biases
       HPDL_QUANT_ACTIVATIONS  + int8 activations: every layer input is
                               quantized at its calibrated range (asymmetric)
                               and dequantized (simulated quantization)
       HPDL_QUANT_INTEGER      + int32 biases at scale s_x * s_w[j]: integer-
                               only layers (hpdl_quant_gemm_requant_i8 with a
                               fused ReLU), the only float step being the
                               quantization of the network input

   Integer-only logits. The last layer's channels have different weight
   scales, so raw int32 accumulators are not comparable across classes. They
   are rescaled by fixed-point multipliers M_j = s_w[j] / (2 max_k s_w[k])
   (in (0, 1/2], so hpdl_quant_multiplier can represent them) to one common
   scale, logit_scale = 2 s_x max_k s_w[k]: int32 logits whose argmax is the
   prediction, and logit * logit_scale the real logit.

       hpdl_quant_mlp q;
       hpdl_quant_mlp_work w;
       HPDL_CHECK(hpdl_quant_mlp_build(&q, &model, n_calib, X_calib, 100.0));
       HPDL_CHECK(hpdl_quant_mlp_work_create(&w, &q, 256));
       HPDL_CHECK(hpdl_quant_mlp_accuracy(&q, HPDL_QUANT_INTEGER, &w, n, X, y, &acc));

   Integer-only inference needs ReLU hidden layers (a sigmoid model builds,
   and runs the first two steps; HPDL_QUANT_INTEGER says HPDL_ERR_UNSUPPORTED). */

/* The three steps of quantized MLP inference (see above); each keeps the quantization of the ones before. */
typedef enum hpdl_quant_mode {
    HPDL_QUANT_WEIGHTS = 1,
    HPDL_QUANT_ACTIVATIONS = 2,
    HPDL_QUANT_INTEGER = 3
} hpdl_quant_mode;

/* A short description of mode (static storage); "unknown" for a value that is not a mode. */
HPDL_API const char *hpdl_quant_mode_name(hpdl_quant_mode mode) {
    switch (mode) {
    case HPDL_QUANT_WEIGHTS: return "int8 weights";
    case HPDL_QUANT_ACTIVATIONS: return "+ int8 activations";
    case HPDL_QUANT_INTEGER: return "+ int32 biases (integer-only)";
    }
    return "unknown";
}

/* Calibration histograms: bins over [-R, R] (see hpdl_quant_calib). */
#define HPDL_QUANT_CALIB_BINS 4096

/* A quantized MLP that owns all its arrays; hpdl_quant_mlp_build makes it,
   hpdl_quant_mlp_free frees it. */
typedef struct hpdl_quant_mlp {
    int n_layers;
    int widths[HPDL_MLP_MAX_LAYERS + 1];
    hpdl_activation act;
    int8_t *W[HPDL_MLP_MAX_LAYERS];               /* widths[l] x widths[l+1], row-major like the float model */
    hpdl_quant_params *w_params[HPDL_MLP_MAX_LAYERS]; /* widths[l+1]: symmetric, per output channel (column) */
    hpdl_quant_params x_params[HPDL_MLP_MAX_LAYERS];  /* input of layer l: asymmetric, calibrated */
    hpdl_mlp_f32 dequant;                          /* float model with the dequantized weights */
    int integer;                                   /* the integer-only arrays below exist (ReLU) */
    int32_t *bias32[HPDL_MLP_MAX_LAYERS];          /* widths[l+1] at scale s_x * s_w[j] */
    int32_t *m0[HPDL_MLP_MAX_LAYERS];              /* widths[l+1] fixed-point multipliers ... */
    int *shift[HPDL_MLP_MAX_LAYERS];               /* ... to x_params[l+1] (hidden) or logit_scale (last) */
    double logit_scale;                            /* real value of one int32 logit */
} hpdl_quant_mlp;

/* Frees everything q owns and zeroes *q; NULL q is ignored, a zeroed struct is safe. */
HPDL_API void hpdl_quant_mlp_free(hpdl_quant_mlp *q) {
    int l;
    if (!q) return;
    for (l = 0; l < HPDL_MLP_MAX_LAYERS; l++) {
        HPDL_FREE(q->W[l]);
        HPDL_FREE(q->w_params[l]);
        HPDL_FREE(q->bias32[l]);
        HPDL_FREE(q->m0[l]);
        HPDL_FREE(q->shift[l]);
    }
    hpdl_mlp_destroy_f32(&q->dequant);
    memset(q, 0, sizeof *q);
}

/* ---- CPU twin of the GPU's int32 logits -------------------------------------------- */

/* C (M x N, int32) = clamp(zero_point + RDBPOT(SRDHM(sat32((A - za)(B - zb)
   + bias), M0), shift), lo, INT32_MAX) with lo = INT32_MIN, or zero_point
   with o->relu: hpdl_quant_gemm_requant_i8 without the int8 clamp, for
   logits at a chosen scale. */
HPDL_API hpdl_status hpdl_quant_gemm_requant_i32(int M, int N, int K, const int8_t *A, int lda, int32_t za,
                                                 const int8_t *B, int ldb, int32_t zb, const hpdl_quant_output *o,
                                                 int32_t *C, int ldc) {
    int i, j;
    if (!hpdl__gemm_i8_valid(M, N, K, A, lda, za, B, ldb, zb, C, ldc) || !hpdl__quant_output_valid(o, N))
        return HPDL_ERR_INVALID;
    for (i = 0; i < M; i++)
        for (j = 0; j < N; j++) {
            int64_t acc = hpdl__dot_i8(K, A + (int64_t)i * lda, za, B + j, ldb, zb), v;
            int c = o->per_channel ? j : 0;
            if (o->bias) acc += o->bias[j];
            acc = acc < INT32_MIN ? INT32_MIN : acc > INT32_MAX ? INT32_MAX : acc;
            v = (int64_t)hpdl_quant_rounding_divide_by_pot(
                    hpdl_quant_sat_rounding_doubling_high_mul((int32_t)acc, o->multiplier[c]), o->shift[c]) +
                o->zero_point;
            if (o->relu && v < o->zero_point) v = o->zero_point;
            C[(int64_t)i * ldc + j] = (int32_t)(v < INT32_MIN ? INT32_MIN : v > INT32_MAX ? INT32_MAX : v);
        }
    return HPDL_OK;
}

/* ---- building ---------------------------------------------------------------------- */

/* Calibrates the input range of every layer on n rows of X (float forward
   passes in chunks): min/max when pct is 100, else the percentile range. */
static inline hpdl_status hpdl__quant_mlp_calibrate(hpdl_quant_mlp *q, const hpdl_mlp_f32 *m, int64_t n,
                                                    const float *X, double pct) {
    hpdl_quant_calib cal[HPDL_MLP_MAX_LAYERS];
    hpdl_mlp_work_f32 w;
    hpdl_status st;
    int64_t i0;
    int l, made = 0;
    memset(&w, 0, sizeof w);
    st = hpdl_mlp_work_create_f32(&w, m, 256);
    for (l = 0; st == HPDL_OK && l < m->n_layers; l++)
        if ((st = hpdl_quant_calib_init(&cal[l], HPDL_QUANT_CALIB_BINS)) == HPDL_OK) made++;
    for (i0 = 0; st == HPDL_OK && i0 < n; i0 += w.max_batch) {
        int batch = (int)(n - i0 < w.max_batch ? n - i0 : w.max_batch);
        const float *x = X + (size_t)i0 * m->widths[0];
        st = hpdl_mlp_forward_f32(m, &w, batch, x);
        for (l = 0; st == HPDL_OK && l < m->n_layers; l++)
            st = hpdl_quant_calib_observe_f32(&cal[l], l ? w.act[l] : x, (int64_t)batch * m->widths[l]);
    }
    for (l = 0; st == HPDL_OK && l < m->n_layers; l++) {
        double lo, hi;
        st = pct >= 100.0 ? hpdl_quant_calib_minmax(&cal[l], &lo, &hi) : hpdl_quant_calib_percentile(&cal[l], pct, &lo, &hi);
        if (st == HPDL_OK) st = hpdl_quant_params_from_range(lo, hi, 0, &q->x_params[l]);
    }
    for (l = 0; l < made; l++) hpdl_quant_calib_free(&cal[l]);
    hpdl_mlp_work_destroy_f32(&w);
    return st;
}

/* Layer l's int8 weights (per output channel, symmetric) and the float
   model's copy with them dequantized. */
static inline hpdl_status hpdl__quant_mlp_weights(hpdl_quant_mlp *q, const hpdl_mlp_f32 *m, int l) {
    int n_in = m->widths[l], n_out = m->widths[l + 1], i, j;
    hpdl_status st;
    q->W[l] = (int8_t *)hpdl_alloc((size_t)n_in * n_out, 1);
    q->w_params[l] = (hpdl_quant_params *)hpdl_alloc((size_t)n_out, sizeof(hpdl_quant_params));
    if (!q->W[l] || !q->w_params[l]) return HPDL_ERR_NOMEM;
    st = hpdl_quant_params_per_channel_f32(m->W[l], n_in, n_out, n_out, 1, 1, q->w_params[l]);
    if (st == HPDL_OK) st = hpdl_quant_quantize_channels_f32(m->W[l], n_in, n_out, n_out, 1, q->w_params[l], q->W[l], n_out);
    for (i = 0; st == HPDL_OK && i < n_in; i++)
        for (j = 0; j < n_out; j++)
            q->dequant.W[l][(size_t)i * n_out + j] = (float)((double)q->w_params[l][j].scale * q->W[l][(size_t)i * n_out + j]);
    return st;
}

/* Layer l's int32 biases and requantization multipliers: to the next
   layer's input scale (hidden), or to the common logit scale (last). */
static inline hpdl_status hpdl__quant_mlp_integer(hpdl_quant_mlp *q, const hpdl_mlp_f32 *m, int l) {
    int n_out = m->widths[l + 1], j, last = l == m->n_layers - 1;
    float s_x = q->x_params[l].scale, out_scale;
    hpdl_status st;
    q->bias32[l] = (int32_t *)hpdl_alloc((size_t)n_out, sizeof(int32_t));
    q->m0[l] = (int32_t *)hpdl_alloc((size_t)n_out, sizeof(int32_t));
    q->shift[l] = (int *)hpdl_alloc((size_t)n_out, sizeof(int));
    if (!q->bias32[l] || !q->m0[l] || !q->shift[l]) return HPDL_ERR_NOMEM;
    st = hpdl_quant_bias_f32(m->b[l], n_out, s_x, q->w_params[l], 1, q->bias32[l]);
    if (last) {
        float s_max = 0.0f;
        for (j = 0; j < n_out; j++) s_max = q->w_params[l][j].scale > s_max ? q->w_params[l][j].scale : s_max;
        out_scale = 2.0f * s_x * s_max;
        q->logit_scale = out_scale;
    } else {
        out_scale = q->x_params[l + 1].scale;
    }
    if (st == HPDL_OK) st = hpdl_quant_layer_multipliers(s_x, q->w_params[l], n_out, out_scale, q->m0[l], q->shift[l]);
    return st;
}

/* Builds *q from a trained model and n calibration rows X (n x widths[0]).
   pct: 100 for min/max activation ranges, else a percentile in [50, 100).
   Errors: bad arguments or n < 1 (HPDL_ERR_INVALID); a weight column or an
   activation range that is all zero, or a requantization multiplier that is
   not in (0, 1) (HPDL_ERR_INVALID); NaN in X or the weights (HPDL_ERR_NUMERIC). */
HPDL_API hpdl_status hpdl_quant_mlp_build(hpdl_quant_mlp *q, const hpdl_mlp_f32 *m, int64_t n, const float *X,
                                          double pct) {
    hpdl_quant_mlp made;
    hpdl_status st;
    int l;
    if (!q || !hpdl__mlp_ok_f32(m) || n < 1 || !X || !(pct >= 50.0 && pct <= 100.0)) return HPDL_ERR_INVALID;
    memset(&made, 0, sizeof made);
    made.n_layers = m->n_layers;
    made.act = m->act;
    made.integer = m->act == HPDL_ACT_RELU;
    memcpy(made.widths, m->widths, sizeof made.widths);
    st = hpdl_mlp_create_zero_f32(&made.dequant, m->n_layers + 1, m->widths, m->act);
    for (l = 0; st == HPDL_OK && l < m->n_layers; l++) {
        memcpy(made.dequant.b[l], m->b[l], (size_t)m->widths[l + 1] * sizeof(float));
        st = hpdl__quant_mlp_weights(&made, m, l);
    }
    if (st == HPDL_OK) st = hpdl__quant_mlp_calibrate(&made, m, n, X, pct);
    for (l = 0; st == HPDL_OK && made.integer && l < m->n_layers; l++) st = hpdl__quant_mlp_integer(&made, m, l);
    if (st != HPDL_OK) {
        hpdl_quant_mlp_free(&made);
        return st;
    }
    *q = made;
    return HPDL_OK;
}

/* The requantization of layer l as hpdl_quant_gemm_requant_i8/_i32 take it
   (pointers into q): fused ReLU onto the next input's zero point when
   hidden, plain int32 logits when last. HPDL_ERR_INVALID for an l outside
   [0, n_layers), HPDL_ERR_UNSUPPORTED for a model without integer-only
   layers (sigmoid). */
HPDL_API hpdl_status hpdl_quant_mlp_layer_output(const hpdl_quant_mlp *q, int l, hpdl_quant_output *out) {
    hpdl_quant_output o;
    int last;
    if (!q || !out || l < 0 || l >= q->n_layers || q->n_layers > HPDL_MLP_MAX_LAYERS) return HPDL_ERR_INVALID;
    if (!q->integer) return HPDL_ERR_UNSUPPORTED;
    last = l == q->n_layers - 1;
    o.bias = q->bias32[l];
    o.multiplier = q->m0[l];
    o.shift = q->shift[l];
    o.per_channel = 1;
    o.zero_point = last ? 0 : q->x_params[l + 1].zero_point;
    o.relu = !last;
    *out = o;
    return HPDL_OK;
}

/* ---- running ----------------------------------------------------------------------- */

/* Buffers for batches of up to max_batch rows. */
typedef struct hpdl_quant_mlp_work {
    int max_batch, max_width, classes;
    int n_layers;                        /* shape it was made for */
    int widths[HPDL_MLP_MAX_LAYERS + 1];
    float *f[2];     /* float activations, ping-pong */
    int8_t *q[2];    /* int8 activations, ping-pong */
    int32_t *logits; /* max_batch x classes (HPDL_QUANT_INTEGER) */
    float *out;      /* max_batch x classes: the real logits of the last forward */
} hpdl_quant_mlp_work;

/* Frees w's buffers and zeroes *w; NULL w is ignored, a zeroed struct is safe. */
HPDL_API void hpdl_quant_mlp_work_destroy(hpdl_quant_mlp_work *w) {
    int i;
    if (!w) return;
    for (i = 0; i < 2; i++) { HPDL_FREE(w->f[i]); HPDL_FREE(w->q[i]); }
    HPDL_FREE(w->logits);
    HPDL_FREE(w->out);
    memset(w, 0, sizeof *w);
}

/* Allocates buffers for q's widths and batches of up to max_batch rows; *w is written only
   on success. HPDL_ERR_INVALID for bad arguments, HPDL_ERR_NOMEM (nothing left allocated). */
HPDL_API hpdl_status hpdl_quant_mlp_work_create(hpdl_quant_mlp_work *w, const hpdl_quant_mlp *q, int max_batch) {
    hpdl_quant_mlp_work made;
    size_t big;
    int l, i;
    if (!w || !q || !hpdl__mlp_widths_ok(q->n_layers + 1, q->widths) || max_batch < 1) return HPDL_ERR_INVALID;
    memset(&made, 0, sizeof made);
    made.max_batch = max_batch;
    made.classes = q->widths[q->n_layers];
    made.n_layers = q->n_layers;
    memcpy(made.widths, q->widths, sizeof made.widths);
    for (l = 0; l <= q->n_layers; l++) made.max_width = q->widths[l] > made.max_width ? q->widths[l] : made.max_width;
    big = (size_t)max_batch * made.max_width;
    for (i = 0; i < 2; i++) {
        made.f[i] = (float *)hpdl_alloc(big, sizeof(float));
        made.q[i] = (int8_t *)hpdl_alloc(big, 1);
    }
    made.logits = (int32_t *)hpdl_alloc((size_t)max_batch * made.classes, sizeof(int32_t));
    made.out = (float *)hpdl_alloc((size_t)max_batch * made.classes, sizeof(float));
    if (!made.f[0] || !made.f[1] || !made.q[0] || !made.q[1] || !made.logits || !made.out) {
        hpdl_quant_mlp_work_destroy(&made);
        return HPDL_ERR_NOMEM;
    }
    *w = made;
    return HPDL_OK;
}

/* x (n values) = dequantize(quantize(x)) at p, in place through q8. */
static inline hpdl_status hpdl__fake_quantize(float *x, int64_t n, hpdl_quant_params p, int8_t *q8) {
    hpdl_status st = hpdl_quant_quantize_f32(x, n, p, q8);
    return st == HPDL_OK ? hpdl_quant_dequantize_i8(q8, n, p, x) : st;
}

/* Float forward with the dequantized weights; with fake_act, each layer's
   input is quantized at its calibrated range first. Logits into w->out. */
static inline hpdl_status hpdl__quant_mlp_forward_float(const hpdl_quant_mlp *q, int fake_act, hpdl_quant_mlp_work *w,
                                                        int batch, const float *X) {
    const hpdl_mlp_f32 *m = &q->dequant;
    hpdl_status st = HPDL_OK;
    int l, r;
    memcpy(w->f[0], X, (size_t)batch * q->widths[0] * sizeof(float));
    for (l = 0; st == HPDL_OK && l < q->n_layers; l++) {
        int n_in = q->widths[l], n_out = q->widths[l + 1], last = l == q->n_layers - 1;
        float *in = w->f[l % 2], *out = last ? w->out : w->f[(l + 1) % 2];
        int64_t n = (int64_t)batch * n_out;
        if (fake_act) st = hpdl__fake_quantize(in, (int64_t)batch * n_in, q->x_params[l], w->q[0]);
        if (st == HPDL_OK)
            st = hpdl_gemm_f32(HPDL_NO_TRANS, HPDL_NO_TRANS, batch, n_out, n_in, 1.0f, in, n_in, m->W[l], n_out, 0.0f,
                               out, n_out);
        for (r = 0; st == HPDL_OK && r < batch; r++)
            st = hpdl_vec_add_f32(n_out, out + (size_t)r * n_out, m->b[l], out + (size_t)r * n_out);
        if (st == HPDL_OK && !last)
            st = q->act == HPDL_ACT_RELU ? hpdl_relu_f32(n, out, out) : hpdl_sigmoid_f32(n, out, out);
    }
    return st;
}

/* Integer-only forward: int32 logits into w->logits, real ones into w->out. */
static inline hpdl_status hpdl__quant_mlp_forward_integer(const hpdl_quant_mlp *q, hpdl_quant_mlp_work *w, int batch,
                                                          const float *X) {
    hpdl_status st = hpdl_quant_quantize_f32(X, (int64_t)batch * q->widths[0], q->x_params[0], w->q[0]);
    int l, L = q->n_layers, classes = q->widths[L];
    int64_t i;
    for (l = 0; st == HPDL_OK && l < L; l++) {
        int n_in = q->widths[l], n_out = q->widths[l + 1];
        hpdl_quant_output o;
        st = hpdl_quant_mlp_layer_output(q, l, &o);
        if (st == HPDL_OK && l < L - 1)
            st = hpdl_quant_gemm_requant_i8(batch, n_out, n_in, w->q[l % 2], n_in, q->x_params[l].zero_point, q->W[l],
                                            n_out, 0, &o, w->q[(l + 1) % 2], n_out);
        else if (st == HPDL_OK)
            st = hpdl_quant_gemm_requant_i32(batch, n_out, n_in, w->q[l % 2], n_in, q->x_params[l].zero_point, q->W[l],
                                             n_out, 0, &o, w->logits, classes);
    }
    for (i = 0; st == HPDL_OK && i < (int64_t)batch * classes; i++) w->out[i] = (float)(w->logits[i] * q->logit_scale);
    return st;
}

static inline int hpdl__quant_mlp_run_ok(const hpdl_quant_mlp *q, hpdl_quant_mode mode, const hpdl_quant_mlp_work *w,
                                         int batch, const float *X) {
    /* The buffers are sized by the widths, so the workspace must be made
       for this model's shape, not just its class count. */
    return q && q->n_layers >= 1 && q->W[0] && w && w->out && X && batch >= 1 && batch <= w->max_batch &&
           hpdl__same_widths(q->n_layers, q->widths, w->n_layers, w->widths) && mode >= HPDL_QUANT_WEIGHTS &&
           mode <= HPDL_QUANT_INTEGER;
}

/* Logits of a batch (batch x widths[0] floats) in the given mode: real
   logits in w->out; for HPDL_QUANT_INTEGER also the int32 ones in
   w->logits. NaN inputs: HPDL_ERR_NUMERIC in the quantized modes. */
HPDL_API hpdl_status hpdl_quant_mlp_forward(const hpdl_quant_mlp *q, hpdl_quant_mode mode, hpdl_quant_mlp_work *w,
                                            int batch, const float *X) {
    if (!hpdl__quant_mlp_run_ok(q, mode, w, batch, X)) return HPDL_ERR_INVALID;
    if (mode == HPDL_QUANT_INTEGER)
        return q->integer ? hpdl__quant_mlp_forward_integer(q, w, batch, X) : HPDL_ERR_UNSUPPORTED;
    return hpdl__quant_mlp_forward_float(q, mode == HPDL_QUANT_ACTIVATIONS, w, batch, X);
}

/* How many rows' largest int32 logit (first on ties) is at their label. */
static inline int64_t hpdl__argmax_hits_i32(int rows, int cols, const int32_t *logits, const int32_t *labels) {
    int64_t hits = 0;
    int r, c, best;
    for (r = 0; r < rows; r++) {
        const int32_t *x = logits + (size_t)r * cols;
        for (c = 1, best = 0; c < cols; c++) best = x[c] > x[best] ? c : best;
        hits += best == labels[r];
    }
    return hits;
}

/* Fraction of n rows classified as their label (largest logit, first on
   ties; the int32 logits in HPDL_QUANT_INTEGER, so no float rounding can
   merge two of them). */
HPDL_API hpdl_status hpdl_quant_mlp_accuracy(const hpdl_quant_mlp *q, hpdl_quant_mode mode, hpdl_quant_mlp_work *w,
                                             int64_t n, const float *X, const int32_t *labels, double *accuracy) {
    int64_t i0, hits = 0;
    hpdl_status st = HPDL_OK;
    if (n < 1 || !accuracy || !hpdl__quant_mlp_run_ok(q, mode, w, 1, X) || !hpdl__labels_ok(n, labels, w->classes))
        return HPDL_ERR_INVALID;
    for (i0 = 0; st == HPDL_OK && i0 < n; i0 += w->max_batch) {
        int batch = (int)(n - i0 < w->max_batch ? n - i0 : w->max_batch);
        st = hpdl_quant_mlp_forward(q, mode, w, batch, X + (size_t)i0 * q->widths[0]);
        if (st == HPDL_OK)
            hits += mode == HPDL_QUANT_INTEGER ? hpdl__argmax_hits_i32(batch, w->classes, w->logits, labels + i0)
                                               : hpdl__argmax_hits_f32(batch, w->classes, w->out, labels + i0);
    }
    if (st == HPDL_OK) *accuracy = (double)hits / (double)n;
    return st;
}

/* ------------------------------------------------------------------------ */
/* FP8 (e4m3, e5m2): per-tensor scaling, GEMM                               */
/* ------------------------------------------------------------------------ */

/* Per-tensor scaling, as FP8 training recipes use it (Micikevicius et al.,
   "FP8 Formats for Deep Learning", 2022): a tensor x is stored as
   q = fp8(x * scale), one f32 scale per tensor, chosen so that amax(x) *
   scale lands near the format's largest value; scale_inv = 1 / scale turns
   products of q back into x's units. The formats: hpdl_e4m3 / hpdl_e5m2
   above. Conventions, here and in hpdl_cuda.cuh:
   - amax:  the largest |x| as an f32; NaN when x holds a NaN (the maximum
            of the values' bits with the sign cleared, which is what the
            GPU's atomicMax on those bits computes);
   - cast:  q[i] = fp8(fl(x[i] * scale)), the f32 product rounded once more,
            to the FP8 format (nearest, ties to even, saturating); amax of x
            before scaling;
   - GEMM:  A is M x K, B is N x K, both row-major: "K-major", K contiguous in
            both operands, the only layout FP8 wgmma reads. With
                s = a_scale_inv * b_scale_inv,  alpha = s * out_scale
            (f32 products, in this order) and acc = sum_k A[m][k] B[n][k]
            (exact products, summed in f32: in k order here, in any order
            on the GPU),
                C[m][n] = alpha * acc, rounded to C's type (f32, f16, bf16),
                amax    = max over C of |s * acc|: the output before
                          out_scale (NaN outputs not counted).
            Any pair of formats (e4m3 x e4m3 for the forward pass, e5m2
            gradients against e4m3 for the backward).
   Scales must be positive and finite; amax may be NULL. */
/* The format of an array of FP8 codes (the GEMM takes either for A and B). */
typedef enum hpdl_fp8_format { HPDL_FP8_E4M3 = 0, HPDL_FP8_E5M2 = 1 } hpdl_fp8_format;

/* The GEMM's scales (see above): A's and B's inverse scales, the output's scale. */
typedef struct hpdl_fp8_scales {
    float a_scale_inv, b_scale_inv, out_scale;
} hpdl_fp8_scales;

static inline int hpdl__fp8_scale_valid(float s) { return s > 0.0f && s <= FLT_MAX; }

static inline int hpdl__fp8_format_valid(hpdl_fp8_format f) { return f == HPDL_FP8_E4M3 || f == HPDL_FP8_E5M2; }

/* |x| as the bits of a non-negative float: their maximum as integers is
   the maximum of the values (a NaN above every number). */
HPDL_HD static inline uint32_t hpdl__abs_bits(float x) { return hpdl__f32_bits(x) & 0x7fffffffu; }

static inline float hpdl__fp8_to_f32(hpdl_fp8_format f, uint8_t bits) {
    if (f == HPDL_FP8_E4M3) {
        hpdl_e4m3 q;
        q.bits = bits;
        return hpdl_e4m3_to_f32(q);
    } else {
        hpdl_e5m2 q;
        q.bits = bits;
        return hpdl_e5m2_to_f32(q);
    }
}

/* The largest |x[i]| (0 when n = 0; NaN when one is NaN). */
HPDL_API hpdl_status hpdl_fp8_amax_f32(const float *x, int64_t n, float *amax) {
    int64_t i;
    uint32_t top = 0;
    if (!amax || n < 0 || (!x && n > 0)) return HPDL_ERR_INVALID;
    for (i = 0; i < n; i++)
        if (hpdl__abs_bits(x[i]) > top) top = hpdl__abs_bits(x[i]);
    *amax = hpdl__f32_from_bits(top);
    return HPDL_OK;
}

static inline int hpdl__fp8_cast_valid(const void *x, int64_t n, float scale, const void *q) {
    return n >= 0 && ((x && q) || n == 0) && hpdl__fp8_scale_valid(scale);
}

/* hpdl_fp8_cast_<FMT>_<SUFFIX>: q[i] = fp8(x[i] * scale) in format FMT (e4m3
   or e5m2) and the amax of x before scaling (when amax is not NULL); x is
   f32, f16 or bf16 (storage type T, read by LOAD). */
#define HPDL_DEFINE_FP8_CAST(FMT, SUFFIX, T, LOAD)                                                                \
    HPDL_API hpdl_status hpdl_fp8_cast_##FMT##_##SUFFIX(const T *x, int64_t n, float scale, hpdl_##FMT *q,         \
                                                        float *amax) {                                            \
        int64_t i;                                                                                                \
        uint32_t top = 0;                                                                                         \
        if (!hpdl__fp8_cast_valid(x, n, scale, q)) return HPDL_ERR_INVALID;                                       \
        for (i = 0; i < n; i++) {                                                                                 \
            float v = LOAD(x[i]);                                                                                 \
            if (hpdl__abs_bits(v) > top) top = hpdl__abs_bits(v);                                                 \
            q[i] = hpdl_##FMT##_from_f32(v * scale);                                                              \
        }                                                                                                         \
        if (amax) *amax = hpdl__f32_from_bits(top);                                                               \
        return HPDL_OK;                                                                                           \
    }

/* hpdl_fp8_cast_e4m3_f32 hpdl_fp8_cast_e4m3_f16 hpdl_fp8_cast_e4m3_bf16 */
HPDL_DEFINE_FP8_CAST(e4m3, f32, float, HPDL_LOAD_SELF)
HPDL_DEFINE_FP8_CAST(e4m3, f16, hpdl_f16, HPDL_LOAD_F16)
HPDL_DEFINE_FP8_CAST(e4m3, bf16, hpdl_bf16, HPDL_LOAD_BF16)
/* hpdl_fp8_cast_e5m2_f32 hpdl_fp8_cast_e5m2_f16 hpdl_fp8_cast_e5m2_bf16 */
HPDL_DEFINE_FP8_CAST(e5m2, f32, float, HPDL_LOAD_SELF)
HPDL_DEFINE_FP8_CAST(e5m2, f16, hpdl_f16, HPDL_LOAD_F16)
HPDL_DEFINE_FP8_CAST(e5m2, bf16, hpdl_bf16, HPDL_LOAD_BF16)

/* value[c] = the f32 value of code c in format f, for all 256 codes: the
   GEMM decodes through this table rather than code by code. */
static inline void hpdl__fp8_table(hpdl_fp8_format f, float value[256]) {
    int c;
    for (c = 0; c < 256; c++) value[c] = hpdl__fp8_to_f32(f, (uint8_t)c);
}

/* sum_k a[k] b[k] of two rows of FP8 codes, decoded by the tables va and
   vb: exact products, summed in f32 in k order. */
static inline float hpdl__fp8_dot(int K, const uint8_t *a, const float *va, const uint8_t *b, const float *vb) {
    float acc = 0.0f;
    int k;
    for (k = 0; k < K; k++) acc += va[a[k]] * vb[b[k]];
    return acc;
}

static inline int hpdl__fp8_gemm_valid(int M, int N, int K, const void *A, hpdl_fp8_format fa, int lda, const void *B,
                                       hpdl_fp8_format fb, int ldb, hpdl_fp8_scales s, const void *C, int ldc) {
    return hpdl__fp8_format_valid(fa) && hpdl__fp8_format_valid(fb) && hpdl__fp8_scale_valid(s.a_scale_inv) &&
           hpdl__fp8_scale_valid(s.b_scale_inv) && hpdl__fp8_scale_valid(s.out_scale) &&
           hpdl__check_matrix(A, M, K, lda) == HPDL_OK && hpdl__check_matrix(B, N, K, ldb) == HPDL_OK &&
           hpdl__check_matrix(C, M, N, ldc) == HPDL_OK;
}

/* hpdl_fp8_gemm_<SUFFIX>: C = out_scale * a_scale_inv * b_scale_inv * A B^T
   with A (M x K, codes of format fa) and B (N x K, format fb) row-major,
   f32 sums, C of storage type T (f32, f16, bf16; STORE rounds into it),
   and amax of the output before out_scale: see "Per-tensor scaling" above. */
#define HPDL_DEFINE_FP8_GEMM(SUFFIX, T, STORE)                                                                    \
    HPDL_API hpdl_status hpdl_fp8_gemm_##SUFFIX(int M, int N, int K, const void *A, hpdl_fp8_format fa, int lda,   \
                                                const void *B, hpdl_fp8_format fb, int ldb, hpdl_fp8_scales s,     \
                                                T *C, int ldc, float *amax) {                                      \
        float scale = s.a_scale_inv * s.b_scale_inv, alpha = scale * s.out_scale, top = 0.0f;                     \
        float va[256], vb[256];                                                                                   \
        int i, j;                                                                                                 \
        if (!hpdl__fp8_gemm_valid(M, N, K, A, fa, lda, B, fb, ldb, s, C, ldc)) return HPDL_ERR_INVALID;          \
        hpdl__fp8_table(fa, va);                                                                                  \
        hpdl__fp8_table(fb, vb);                                                                                  \
        for (i = 0; i < M; i++)                                                                                   \
            for (j = 0; j < N; j++) {                                                                             \
                float acc = hpdl__fp8_dot(K, (const uint8_t *)A + (int64_t)i * lda, va,                           \
                                          (const uint8_t *)B + (int64_t)j * ldb, vb);                             \
                if (fabsf(scale * acc) > top) top = fabsf(scale * acc); /* a NaN compares false */                \
                C[(int64_t)i * ldc + j] = STORE(alpha * acc);                                                     \
            }                                                                                                     \
        if (amax) *amax = top;                                                                                    \
        return HPDL_OK;                                                                                           \
    }

/* hpdl_fp8_gemm_f32 hpdl_fp8_gemm_f16 hpdl_fp8_gemm_bf16 */
HPDL_DEFINE_FP8_GEMM(f32, float, HPDL_STORE_F32)
HPDL_DEFINE_FP8_GEMM(f16, hpdl_f16, HPDL_STORE_F16)
HPDL_DEFINE_FP8_GEMM(bf16, hpdl_bf16, HPDL_STORE_BF16)

/* FP8 training: delayed scaling, and the MLP's FP8 step.
   Delayed scaling (the recipe of NVIDIA's Transformer Engine): the scale a
   tensor is cast with comes from the amaxes of the same tensor role (layer
   l's input, its weight, the gradient of its output) over the last L steps,
   not from the tensor itself, so the cast needs no extra pass over the data
   to find its amax first; the cast measures this step's amax on the way and
   it joins the history for the next steps. With fp8_max the format's largest
   value (448 for e4m3, 57344 for e5m2) and margin m,
       scale = fp8_max / (max(amax history) * 2^m),   clamped to [FLT_MIN, FLT_MAX];
   a history of zeros keeps the previous scale (1 at the start), so a
   tensor of zeros does not produce an infinite scale. Each record
   overwrites the oldest of the L entries, then recomputes the scale. */
#define HPDL_FP8_MAX_HISTORY 128
#define HPDL_FP8_MAX_MARGIN 64

/* One tensor role's delayed-scaling state. */
typedef struct hpdl_fp8_delayed {
    hpdl_fp8_format format;
    int length;                        /* L: amaxes kept */
    int margin;                        /* m: powers of two of headroom */
    int next;                          /* the slot the next amax overwrites */
    float scale;                       /* the scale the next cast uses */
    float history[HPDL_FP8_MAX_HISTORY];
} hpdl_fp8_delayed;

HPDL_HD static inline double hpdl__fp8_max(hpdl_fp8_format f) { return f == HPDL_FP8_E4M3 ? 448.0 : 57344.0; }

static inline int hpdl__fp8_delayed_ok(const hpdl_fp8_delayed *d) {
    return d && hpdl__fp8_format_valid(d->format) && d->length >= 1 && d->length <= HPDL_FP8_MAX_HISTORY &&
           d->margin >= 0 && d->margin <= HPDL_FP8_MAX_MARGIN && d->next >= 0 && d->next < d->length &&
           hpdl__fp8_scale_valid(d->scale);
}

/* An empty history of length amaxes (1..HPDL_FP8_MAX_HISTORY), margin
   0..HPDL_FP8_MAX_MARGIN, scale 1. */
HPDL_API hpdl_status hpdl_fp8_delayed_init(hpdl_fp8_delayed *d, hpdl_fp8_format format, int length, int margin) {
    if (!d || !hpdl__fp8_format_valid(format) || length < 1 || length > HPDL_FP8_MAX_HISTORY || margin < 0 ||
        margin > HPDL_FP8_MAX_MARGIN)
        return HPDL_ERR_INVALID;
    memset(d, 0, sizeof *d);
    d->format = format;
    d->length = length;
    d->margin = margin;
    d->scale = 1.0f;
    return HPDL_OK;
}

/* The scale the next cast of this role uses. */
HPDL_API hpdl_status hpdl_fp8_delayed_scale(const hpdl_fp8_delayed *d, float *scale) {
    if (!hpdl__fp8_delayed_ok(d) || !scale) return HPDL_ERR_INVALID;
    *scale = d->scale;
    return HPDL_OK;
}

/* The record without its checks: also the GPU's (hpdl_cuda.cuh rolls the
   FP8 MLP's histories on the device with it, so both follow one rule). */
HPDL_HD static inline void hpdl__fp8_delayed_roll(hpdl_fp8_delayed *d, float amax) {
    float top = 0.0f;
    double scale;
    int i;
    d->history[d->next] = amax;
    d->next = (d->next + 1) % d->length;
    for (i = 0; i < d->length; i++) top = d->history[i] > top ? d->history[i] : top;
    if (top == 0.0f) return;
    scale = hpdl__fp8_max(d->format) / ldexp((double)top, d->margin);
    d->scale = (float)(scale < FLT_MIN ? FLT_MIN : scale > FLT_MAX ? FLT_MAX : scale);
}

/* Rolls this step's amax (finite, >= 0) into the history and recomputes
   the scale from the history's maximum. */
HPDL_API hpdl_status hpdl_fp8_delayed_record(hpdl_fp8_delayed *d, float amax) {
    if (!hpdl__fp8_delayed_ok(d) || !(amax >= 0.0f && amax <= FLT_MAX)) return HPDL_ERR_INVALID;
    hpdl__fp8_delayed_roll(d, amax);
    return HPDL_OK;
}

/* The FP8 state of an MLP: the delayed scales of the three roles of each
   layer, and the FP8 copies the step keeps between its passes.
   Which tensors are FP8, and why:
   - layer l's input (X or the previous layer's activation) and its weight
     W[l]: e4m3, the format with the finer mantissa (3 bits, relative
     rounding error <= 2^-4), because their values sit in a narrow range
     that a per-tensor scale covers;
   - the gradient of layer l's output: e5m2, two mantissa bits but an
     exponent range of 2^-16..57344, because gradients spread over many
     more orders of magnitude than activations, and a value below the
     format's range rounds to zero (lost), while one a bit coarser is only
     noisier.
   Master weights, biases, the softmax, the loss, the bias gradients (from
   the f32 output gradient) and the SGD update stay in f32, and each GEMM
   adds its exact FP8 products in f32 (hpdl_fp8_gemm_f32). */
typedef struct hpdl_mlp_fp8 {
    int n_layers, max_batch;
    int widths[HPDL_MLP_MAX_LAYERS + 1];
    hpdl_fp8_delayed input[HPDL_MLP_MAX_LAYERS];  /* e4m3 */
    hpdl_fp8_delayed weight[HPDL_MLP_MAX_LAYERS]; /* e4m3 */
    hpdl_fp8_delayed grad[HPDL_MLP_MAX_LAYERS];   /* e5m2: d(loss)/d(layer l's output) */
    hpdl_e4m3 *input_q[HPDL_MLP_MAX_LAYERS];      /* the forward pass's casts, read again by the backward */
    hpdl_e4m3 *weight_q[HPDL_MLP_MAX_LAYERS];
    hpdl_e5m2 *grad_q;                            /* one layer's output gradient, max_batch x width */
    uint8_t *transposed[2];                       /* K-major copies of codes for the GEMM */
} hpdl_mlp_fp8;

/* Frees the state's buffers and zeroes it (NULL: nothing to do). */
HPDL_API void hpdl_mlp_fp8_destroy(hpdl_mlp_fp8 *s) {
    int l;
    if (!s) return;
    for (l = 0; l < HPDL_MLP_MAX_LAYERS; l++) { HPDL_FREE(s->input_q[l]); HPDL_FREE(s->weight_q[l]); }
    HPDL_FREE(s->grad_q);
    HPDL_FREE(s->transposed[0]);
    HPDL_FREE(s->transposed[1]);
    memset(s, 0, sizeof *s);
}

/* FP8 state for model m's shape and batches of up to max_batch rows: every
   role with an empty history of `history` amaxes and margin `margin`. */
HPDL_API hpdl_status hpdl_mlp_fp8_create(hpdl_mlp_fp8 *s, const hpdl_mlp_f32 *m, int max_batch, int history,
                                         int margin) {
    hpdl__mlp_any mv;
    size_t most = 0;
    int l, ok = 1;
    hpdl_fp8_delayed probe;
    if (!s || !hpdl__mlp_ok_any(hpdl__mlp_view_f32(m, &mv)) || max_batch < 1 ||
        hpdl_fp8_delayed_init(&probe, HPDL_FP8_E4M3, history, margin) != HPDL_OK)
        return HPDL_ERR_INVALID;
    memset(s, 0, sizeof *s);
    s->n_layers = m->n_layers;
    s->max_batch = max_batch;
    memcpy(s->widths, m->widths, sizeof s->widths);
    for (l = 0; l < m->n_layers; l++) {
        size_t in = (size_t)max_batch * m->widths[l], w = (size_t)m->widths[l] * m->widths[l + 1];
        size_t out = (size_t)max_batch * m->widths[l + 1];
        most = in > most ? in : most;
        most = w > most ? w : most;
        most = out > most ? out : most;
        hpdl_fp8_delayed_init(&s->input[l], HPDL_FP8_E4M3, history, margin);
        hpdl_fp8_delayed_init(&s->weight[l], HPDL_FP8_E4M3, history, margin);
        hpdl_fp8_delayed_init(&s->grad[l], HPDL_FP8_E5M2, history, margin);
        s->input_q[l] = (hpdl_e4m3 *)hpdl_alloc(in, 1);
        s->weight_q[l] = (hpdl_e4m3 *)hpdl_alloc(w, 1);
        ok = ok && s->input_q[l] && s->weight_q[l];
    }
    s->grad_q = (hpdl_e5m2 *)hpdl_alloc(most, 1);
    s->transposed[0] = (uint8_t *)hpdl_alloc(most, 1);
    s->transposed[1] = (uint8_t *)hpdl_alloc(most, 1);
    if (!ok || !s->grad_q || !s->transposed[0] || !s->transposed[1]) {
        hpdl_mlp_fp8_destroy(s);
        return HPDL_ERR_NOMEM;
    }
    return HPDL_OK;
}

/* dst (cols x rows) = src (rows x cols) transposed, one byte per code. */
static inline const uint8_t *hpdl__fp8_transpose(int rows, int cols, const void *src, uint8_t *dst) {
    const uint8_t *s = (const uint8_t *)src;
    int r, c;
    for (r = 0; r < rows; r++)
        for (c = 0; c < cols; c++) dst[(size_t)c * rows + r] = s[(size_t)r * cols + c];
    return dst;
}

/* The GEMM's scales for operands cast with scales sa and sb, output unscaled. */
static inline hpdl_fp8_scales hpdl__fp8_unscale(float sa, float sb) {
    hpdl_fp8_scales s;
    s.a_scale_inv = 1.0f / sa;
    s.b_scale_inv = 1.0f / sb;
    s.out_scale = 1.0f;
    return s;
}

/* Forward pass in FP8: per layer, out = e4m3(in) · e4m3(W) + b, then the
   activation (f32). The GEMM takes B as N x K, so W (n_in x n_out) is cast
   and then transposed (its codes), once per step. amax_in and amax_w get
   the amaxes measured by the casts. */
static inline hpdl_status hpdl__mlp_fp8_forward(const hpdl_mlp_f32 *m, hpdl_mlp_work_f32 *w, hpdl_mlp_fp8 *s,
                                                int batch, const float *X, float *amax_in, float *amax_w) {
    const hpdl__mlp_ops *ops = hpdl__mlp_ops_f32();
    hpdl_status st = HPDL_OK;
    int l;
    for (l = 0; st == HPDL_OK && l < m->n_layers; l++) {
        int n_in = m->widths[l], n_out = m->widths[l + 1];
        const float *in = l ? w->act[l] : X;
        float s_in = s->input[l].scale, s_w = s->weight[l].scale;
        hpdl_fp8_cast_e4m3_f32(in, (int64_t)batch * n_in, s_in, s->input_q[l], &amax_in[l]);
        hpdl_fp8_cast_e4m3_f32(m->W[l], (int64_t)n_in * n_out, s_w, s->weight_q[l], &amax_w[l]);
        st = hpdl_fp8_gemm_f32(batch, n_out, n_in, s->input_q[l], HPDL_FP8_E4M3, n_in,
                               hpdl__fp8_transpose(n_in, n_out, s->weight_q[l], s->transposed[0]), HPDL_FP8_E4M3,
                               n_in, hpdl__fp8_unscale(s_in, s_w), w->act[l + 1], n_out, NULL);
        if (st == HPDL_OK) st = ops->bias_act(batch, n_out, w->act[l + 1], m->b[l], l < m->n_layers - 1, m->act);
    }
    return st;
}

/* Layer l's backward pass in FP8, from the f32 gradient of its output
   (w->delta[l+1]), cast to e5m2 (amax into *amax_g):
       dW = in^T · dOut     (K = batch: both operands transposed to K-major)
       db = column sums of dOut, in f32
       dIn = dOut · W^T     (K = n_out: dOut and W as they are), then
             times act'(in), when l > 0. */
static inline hpdl_status hpdl__mlp_fp8_layer_back(const hpdl_mlp_f32 *m, hpdl_mlp_work_f32 *w, hpdl_mlp_fp8 *s,
                                                   int l, int batch, hpdl_mlp_f32 *grad, float *amax_g) {
    const hpdl__mlp_ops *ops = hpdl__mlp_ops_f32();
    int n_in = m->widths[l], n_out = m->widths[l + 1];
    float s_in = s->input[l].scale, s_w = s->weight[l].scale, s_g = s->grad[l].scale;
    hpdl_status st;
    hpdl_fp8_cast_e5m2_f32(w->delta[l + 1], (int64_t)batch * n_out, s_g, s->grad_q, amax_g);
    st = hpdl_fp8_gemm_f32(n_in, n_out, batch, hpdl__fp8_transpose(batch, n_in, s->input_q[l], s->transposed[0]),
                           HPDL_FP8_E4M3, batch,
                           hpdl__fp8_transpose(batch, n_out, s->grad_q, s->transposed[1]), HPDL_FP8_E5M2, batch,
                           hpdl__fp8_unscale(s_in, s_g), grad->W[l], n_out, NULL);
    ops->column_sums(batch, n_out, w->delta[l + 1], grad->b[l]);
    if (st != HPDL_OK || l == 0) return st;
    st = hpdl_fp8_gemm_f32(batch, n_in, n_out, s->grad_q, HPDL_FP8_E5M2, n_out, s->weight_q[l], HPDL_FP8_E4M3, n_out,
                           hpdl__fp8_unscale(s_g, s_w), w->delta[l], n_in, NULL);
    if (st != HPDL_OK) return st;
    return ops->act_grad((int64_t)batch * n_in, w->act[l], w->delta[l], m->act);
}

/* The state was made for model m's shape and holds batches of this size. */
static inline int hpdl__mlp_fp8_fits(const hpdl_mlp_fp8 *s, const hpdl_mlp_f32 *m, int batch) {
    int l;
    if (!s || !s->grad_q || batch > s->max_batch || !hpdl__same_widths(s->n_layers, s->widths, m->n_layers, m->widths))
        return 0;
    for (l = 0; l < s->n_layers; l++)
        if (!hpdl__fp8_delayed_ok(&s->input[l]) || !hpdl__fp8_delayed_ok(&s->weight[l]) ||
            !hpdl__fp8_delayed_ok(&s->grad[l]))
            return 0;
    return 1;
}

/* One SGD step on a batch with FP8 GEMMs and delayed scaling, the twin of
   hpdl_mlp_train_step_f32 (same arguments, same f32 update, same
   HPDL_ERR_NUMERIC rule) with the FP8 state s: every cast uses its role's
   current scale, and after the step each role's history gets the amax its
   cast measured. A non-finite loss or amax, or an update that would make a
   weight non-finite, returns HPDL_ERR_NUMERIC and leaves m and the
   histories as they were. */
HPDL_API hpdl_status hpdl_mlp_train_step_fp8_f32(hpdl_mlp_f32 *m, hpdl_mlp_work_f32 *w, hpdl_mlp_f32 *grad,
                                                 hpdl_mlp_fp8 *s, int batch, const float *X, const int32_t *labels,
                                                 float lr, float l2, double *loss) {
    float amax_in[HPDL_MLP_MAX_LAYERS], amax_w[HPDL_MLP_MAX_LAYERS], amax_g[HPDL_MLP_MAX_LAYERS];
    hpdl__mlp_any mv, gv;
    hpdl__mlp_work_any wv;
    double batch_loss = 0.0;
    hpdl_status st;
    int l, L, finite = 1;
    if (!hpdl__mlp_run_ok_any(hpdl__mlp_view_f32(m, &mv), hpdl__mlp_work_view_f32(w, &wv), batch, X) ||
        !hpdl__mlp_ok_any(hpdl__mlp_view_f32(grad, &gv)) ||
        !hpdl__same_widths(m->n_layers, m->widths, grad->n_layers, grad->widths) ||
        !hpdl__labels_ok(batch, labels, m->widths[m->n_layers]) || !hpdl__hyper_ok(lr, l2) ||
        !hpdl__mlp_fp8_fits(s, m, batch))
        return HPDL_ERR_INVALID;
    L = m->n_layers;
    st = hpdl__mlp_fp8_forward(m, w, s, batch, X, amax_in, amax_w);
    if (st == HPDL_OK)
        st = hpdl__mlp_ops_f32()->softmax_xent(batch, m->widths[L], w->act[L], labels, w->delta[L], &batch_loss);
    for (l = L - 1; st == HPDL_OK && l >= 0; l--) st = hpdl__mlp_fp8_layer_back(m, w, s, l, batch, grad, &amax_g[l]);
    if (st != HPDL_OK) return st;
    if (loss) *loss = batch_loss;
    for (l = 0; l < L; l++)
        finite = finite && amax_in[l] <= FLT_MAX && amax_w[l] <= FLT_MAX && amax_g[l] <= FLT_MAX;
    if (!finite || !(fabs(batch_loss) <= DBL_MAX)) return HPDL_ERR_NUMERIC;
    st = hpdl_mlp_sgd_f32(m, grad, lr, l2);
    for (l = 0; st == HPDL_OK && l < L; l++) {
        hpdl_fp8_delayed_record(&s->input[l], amax_in[l]);
        hpdl_fp8_delayed_record(&s->weight[l], amax_w[l]);
        hpdl_fp8_delayed_record(&s->grad[l], amax_g[l]);
    }
    return st;
}

/* ------------------------------------------------------------------------ */
/* CNN: convolutional networks as data, trained on any backend              */
/* ------------------------------------------------------------------------ */
/* A network is an array of layers (hpdl_cnn_layer), each reading the output
   of an earlier layer (or the image), so residual blocks are layers too: an
   ADD layer sums two earlier outputs. hpdl_cnn_define checks the array and
   plans it: every layer's output shape, where its parameters sit in ONE flat
   parameter array (so the optimiser is one call over all of them), and
   where batch norm keeps its running statistics (a flat "state" array).

   The walk over the layers (forward, backward, update) is written once,
   below, against hpdl_cnn_backend: a table of the layer kernels and memory
   operations of one element type on one device. hpdl.h gives the CPU
   backends (f32, f64: the reference); hpdl_cuda.cuh gives the GPU one, so
   the CPU twin and the GPU run the same schedule of the same kernels.

   Conventions: images of one batch are packed (N x C x H x W, in the
   network's layout); a LINEAR layer reads its input flattened in that
   layout (C*H*W features per image, the order of memory) and writes N x
   out_features; the last layer's output is the logits, N x classes; the
   loss is softmax cross-entropy averaged over the batch. Parameters:
   a conv's weight K x C x R x S (in the network's layout) then its bias K;
   batch norm's gamma C then beta C; a linear layer's weight out x in (row
   major) then its bias out. Initialisation (hpdl_cnn_init): weights
   Kaiming-normal, sqrt(2 / fan_in), biases and beta 0, gamma 1, running
   mean 0 and variance 1. */

#define HPDL_CNN_MAX_LAYERS 96
#define HPDL_CNN_PREVIOUS (-2) /* a layer's input: the layer before it */
#define HPDL_CNN_IMAGE (-1)    /* a layer's input: the network's input */

/* A CNN layer's operation. */
typedef enum hpdl_cnn_op {
    HPDL_CNN_CONV = 0,        /* conv2d, square kernel, optional bias */
    HPDL_CNN_BATCHNORM,       /* per channel; batch statistics in training */
    HPDL_CNN_RELU,
    HPDL_CNN_MAXPOOL,
    HPDL_CNN_AVGPOOL,
    HPDL_CNN_GLOBAL_AVGPOOL,  /* C x H x W -> C x 1 x 1 */
    HPDL_CNN_LINEAR,          /* fully connected on the flattened input */
    HPDL_CNN_ADD              /* input + output of layer `other` (residual) */
} hpdl_cnn_op;

/* One layer as the caller writes it (hpdl_cnn_conv, hpdl_cnn_pool, ...); hpdl_cnn_define
   checks it. */
typedef struct hpdl_cnn_layer {
    hpdl_cnn_op op;
    int input;               /* an earlier layer, HPDL_CNN_PREVIOUS or HPDL_CNN_IMAGE */
    int other;               /* ADD: the earlier layer added to the input */
    int channels;            /* CONV: output channels; LINEAR: output features */
    int kernel, stride, pad; /* CONV and the pools */
    int bias;                /* CONV: 1 adds a bias (LINEAR always has one) */
} hpdl_cnn_layer;

/* A checked, planned network: the layers with their inputs resolved to
   indices, and where everything goes. No memory of its own. */
typedef struct hpdl_cnn {
    int n_layers, classes;
    hpdl_layout layout;
    hpdl_shape input;                         /* one image */
    hpdl_cnn_layer layer[HPDL_CNN_MAX_LAYERS];
    hpdl_shape out[HPDL_CNN_MAX_LAYERS];      /* each layer's output, one image */
    int64_t weight_at[HPDL_CNN_MAX_LAYERS];   /* flat parameter offsets, -1: none */
    int64_t bias_at[HPDL_CNN_MAX_LAYERS];     /* bias, or batch norm's beta */
    int64_t state_at[HPDL_CNN_MAX_LAYERS];    /* batch norm: running mean, then variance */
    int64_t param_count, state_count;
    int64_t largest;                          /* most elements of one layer's output, one image */
} hpdl_cnn;

/* ---- layers ---------------------------------------------------------------- */

static inline hpdl_cnn_layer hpdl__cnn_layer(hpdl_cnn_op op) {
    hpdl_cnn_layer l;
    memset(&l, 0, sizeof l);
    l.op = op;
    l.input = HPDL_CNN_PREVIOUS;
    l.other = -1;
    return l;
}

/* A square convolution of the previous layer's output: out_channels
   filters of kernel x kernel, the same stride and zero padding on both axes,
   with a bias when bias is 1. */
HPDL_API hpdl_cnn_layer hpdl_cnn_conv(int out_channels, int kernel, int stride, int pad, int bias) {
    hpdl_cnn_layer l = hpdl__cnn_layer(HPDL_CNN_CONV);
    l.channels = out_channels; l.kernel = kernel; l.stride = stride; l.pad = pad; l.bias = bias;
    return l;
}

/* Batch norm, ReLU and global average pooling take nothing but their input. */
HPDL_API hpdl_cnn_layer hpdl_cnn_simple(hpdl_cnn_op op) { return hpdl__cnn_layer(op); }

/* op: HPDL_CNN_MAXPOOL or HPDL_CNN_AVGPOOL. */
HPDL_API hpdl_cnn_layer hpdl_cnn_pool(hpdl_cnn_op op, int kernel, int stride, int pad) {
    hpdl_cnn_layer l = hpdl__cnn_layer(op);
    l.kernel = kernel; l.stride = stride; l.pad = pad;
    return l;
}

/* A fully connected layer (with a bias) on the previous output, flattened. */
HPDL_API hpdl_cnn_layer hpdl_cnn_linear(int out_features) {
    hpdl_cnn_layer l = hpdl__cnn_layer(HPDL_CNN_LINEAR);
    l.channels = out_features;
    return l;
}

/* The output of layer `input` plus that of layer `other`. */
HPDL_API hpdl_cnn_layer hpdl_cnn_add(int input, int other) {
    hpdl_cnn_layer l = hpdl__cnn_layer(HPDL_CNN_ADD);
    l.input = input; l.other = other;
    return l;
}

/* ---- planning ---------------------------------------------------------------- */

static inline int hpdl__shape_equal(hpdl_shape a, hpdl_shape b) { return a.c == b.c && a.h == b.h && a.w == b.w; }

static inline int64_t hpdl__shape_count(hpdl_shape s) { return (int64_t)s.c * s.h * s.w; }

static inline hpdl_tensor4 hpdl__cnn_tensor(const hpdl_cnn *net, int batch, hpdl_shape s) {
    return hpdl_tensor4_make(batch, s.c, s.h, s.w, net->layout);
}

/* The shape layer i reads (the image's for HPDL_CNN_IMAGE). */
static inline hpdl_shape hpdl__cnn_in_shape(const hpdl_cnn *net, int i) {
    int from = net->layer[i].input;
    return from == HPDL_CNN_IMAGE ? net->input : net->out[from];
}

/* Output shape of layer i from its input's; c = 0 when the layer cannot
   take that input. Reserves its parameters and state. */
static inline hpdl_shape hpdl__cnn_plan_layer(hpdl_cnn *net, int i) {
    const hpdl_cnn_layer *l = &net->layer[i];
    hpdl_shape in = hpdl__cnn_in_shape(net, i), none = {0, 0, 0};
    int64_t features = hpdl__shape_count(in);
    switch (l->op) {
    case HPDL_CNN_CONV: {
        int oh = hpdl_conv_output_size(in.h, l->kernel, l->stride, l->pad, 1);
        int ow = hpdl_conv_output_size(in.w, l->kernel, l->stride, l->pad, 1);
        if (l->channels < 1 || oh < 1 || ow < 1) return none;
        net->weight_at[i] = net->param_count;
        net->param_count += (int64_t)l->channels * in.c * l->kernel * l->kernel;
        if (l->bias) { net->bias_at[i] = net->param_count; net->param_count += l->channels; }
        return hpdl_shape_make(l->channels, oh, ow);
    }
    case HPDL_CNN_BATCHNORM:
        net->weight_at[i] = net->param_count;
        net->bias_at[i] = net->param_count + in.c;
        net->param_count += 2 * (int64_t)in.c;
        net->state_at[i] = net->state_count;
        net->state_count += 2 * (int64_t)in.c;
        return in;
    case HPDL_CNN_RELU: return in;
    case HPDL_CNN_MAXPOOL:
    case HPDL_CNN_AVGPOOL: {
        hpdl_pool2d_params p = hpdl_pool2d_params_make(l->kernel, l->stride, l->pad);
        hpdl_tensor4 x = hpdl__cnn_tensor(net, 1, in), y;
        if (hpdl_pool2d_output_desc(&p, &x, &y) != HPDL_OK) return none;
        return hpdl_shape_make(y.c, y.h, y.w);
    }
    case HPDL_CNN_GLOBAL_AVGPOOL: return hpdl_shape_make(in.c, 1, 1);
    case HPDL_CNN_LINEAR:
        if (l->channels < 1 || features > INT_MAX) return none;
        net->weight_at[i] = net->param_count;
        net->param_count += (int64_t)l->channels * features;
        net->bias_at[i] = net->param_count;
        net->param_count += l->channels;
        return hpdl_shape_make(l->channels, 1, 1);
    case HPDL_CNN_ADD:
        return hpdl__shape_equal(in, net->out[l->other]) ? in : none;
    }
    return none;
}

/* Inputs refer to earlier layers; every layer but the last is read. */
static inline int hpdl__cnn_links_ok(hpdl_cnn *net) {
    int i, read[HPDL_CNN_MAX_LAYERS] = {0};
    for (i = 0; i < net->n_layers; i++) {
        hpdl_cnn_layer *l = &net->layer[i];
        if (l->input == HPDL_CNN_PREVIOUS) l->input = i - 1;
        if (l->input < HPDL_CNN_IMAGE || l->input >= i) return 0;
        if (l->op == HPDL_CNN_ADD && (l->other < 0 || l->other >= i)) return 0;
        if (l->input >= 0) read[l->input] = 1;
        if (l->op == HPDL_CNN_ADD) read[l->other] = 1;
    }
    for (i = 0; i + 1 < net->n_layers; i++)
        if (!read[i]) return 0;
    return 1;
}

/* Checks and plans `layers` for images of shape `input`. INVALID (with a
   line on stderr naming the layer) for a layer that refers forward, cannot
   take its input's shape, is never read, or a last layer that is not
   classes x 1 x 1. */
HPDL_API hpdl_status hpdl_cnn_define(hpdl_cnn *net, int n_layers, const hpdl_cnn_layer *layers, hpdl_shape input,
                                     hpdl_layout layout) {
    hpdl_cnn plan;
    int i;
    if (!net || !layers || n_layers < 1 || n_layers > HPDL_CNN_MAX_LAYERS || input.c < 1 || input.h < 1 ||
        input.w < 1 || (layout != HPDL_NCHW && layout != HPDL_NHWC))
        return HPDL_ERR_INVALID;
    memset(&plan, 0, sizeof plan);
    plan.n_layers = n_layers;
    plan.layout = layout;
    plan.input = input;
    plan.largest = hpdl__shape_count(input);
    memcpy(plan.layer, layers, (size_t)n_layers * sizeof *layers);
    if (!hpdl__cnn_links_ok(&plan)) {
        fprintf(stderr, "hpdl_cnn_define: a layer reads a later layer, or an output is never read\n");
        return HPDL_ERR_INVALID;
    }
    for (i = 0; i < n_layers; i++) {
        plan.weight_at[i] = plan.bias_at[i] = plan.state_at[i] = -1;
        plan.out[i] = hpdl__cnn_plan_layer(&plan, i);
        if (plan.out[i].c < 1) {
            fprintf(stderr, "hpdl_cnn_define: layer %d cannot take its input's shape\n", i);
            return HPDL_ERR_INVALID;
        }
        if (hpdl__shape_count(plan.out[i]) > plan.largest) plan.largest = hpdl__shape_count(plan.out[i]);
    }
    if (plan.out[n_layers - 1].h != 1 || plan.out[n_layers - 1].w != 1) {
        fprintf(stderr, "hpdl_cnn_define: the last layer must give one value per class (C x 1 x 1)\n");
        return HPDL_ERR_INVALID;
    }
    plan.classes = plan.out[n_layers - 1].c;
    *net = plan;
    return HPDL_OK;
}

/* The quantization lab's CNN (LeNet-5's shape): conv 5x5 -> 6, ReLU,
   max-pool 2, conv 5x5 -> 16, ReLU, max-pool 2, linear 120, ReLU,
   linear 84, ReLU, linear classes; sized from the input (3x32x32 gives
   the 400 features of the lab's model, 1x28x28 gives 256). */
HPDL_API hpdl_status hpdl_cnn_small(hpdl_cnn *net, hpdl_shape input, int classes, hpdl_layout layout) {
    hpdl_cnn_layer l[11];
    l[0] = hpdl_cnn_conv(6, 5, 1, 0, 1);
    l[1] = hpdl_cnn_simple(HPDL_CNN_RELU);
    l[2] = hpdl_cnn_pool(HPDL_CNN_MAXPOOL, 2, 2, 0);
    l[3] = hpdl_cnn_conv(16, 5, 1, 0, 1);
    l[4] = hpdl_cnn_simple(HPDL_CNN_RELU);
    l[5] = hpdl_cnn_pool(HPDL_CNN_MAXPOOL, 2, 2, 0);
    l[6] = hpdl_cnn_linear(120);
    l[7] = hpdl_cnn_simple(HPDL_CNN_RELU);
    l[8] = hpdl_cnn_linear(84);
    l[9] = hpdl_cnn_simple(HPDL_CNN_RELU);
    l[10] = hpdl_cnn_linear(classes);
    return hpdl_cnn_define(net, 11, l, input, layout);
}

/* Appends conv (no bias) + batch norm reading layer `from`; returns the
   index of the batch norm. */
static inline int hpdl__cnn_conv_bn(hpdl_cnn_layer *l, int *n, int from, int channels, int kernel, int stride) {
    l[*n] = hpdl_cnn_conv(channels, kernel, stride, kernel / 2, 0);
    l[*n].input = from;
    l[*n + 1] = hpdl_cnn_simple(HPDL_CNN_BATCHNORM);
    *n += 2;
    return *n - 1;
}

/* A basic block: two 3x3 conv + batch norm, the first with `stride`, a
   ReLU between; the shortcut is the input, or a 1x1 conv + batch norm
   when the shape changes; ReLU after the sum. Returns the last layer. */
static inline int hpdl__cnn_basic_block(hpdl_cnn_layer *l, int *n, int from, int in_channels, int channels,
                                        int stride) {
    int main_path, shortcut = from;
    main_path = hpdl__cnn_conv_bn(l, n, from, channels, 3, stride);
    l[(*n)++] = hpdl_cnn_simple(HPDL_CNN_RELU);
    main_path = hpdl__cnn_conv_bn(l, n, *n - 1, channels, 3, 1);
    if (stride != 1 || in_channels != channels) shortcut = hpdl__cnn_conv_bn(l, n, from, channels, 1, stride);
    l[(*n)++] = hpdl_cnn_add(main_path, shortcut);
    l[(*n)++] = hpdl_cnn_simple(HPDL_CNN_RELU);
    return *n - 1;
}

/* ResNet-18 for small images (He et al. 2016, the CIFAR form): a 3x3
   stem conv -> 64 + batch norm + ReLU, no max-pool; stages of [2, 2, 2, 2]
   basic blocks at 64, 128, 256, 512 channels, each stage after the first
   starting with stride 2; global average pooling; linear classes. For
   3x32x32 or 1x28x28 inputs (any size the strides fit). */
HPDL_API hpdl_status hpdl_cnn_resnet18(hpdl_cnn *net, hpdl_shape input, int classes, hpdl_layout layout) {
    hpdl_cnn_layer l[HPDL_CNN_MAX_LAYERS];
    int n = 0, last, stage, block, channels = 64, in_channels = 64;
    hpdl__cnn_conv_bn(l, &n, HPDL_CNN_IMAGE, 64, 3, 1);
    l[n++] = hpdl_cnn_simple(HPDL_CNN_RELU);
    last = n - 1;
    for (stage = 0; stage < 4; stage++, channels *= 2)
        for (block = 0; block < 2; block++) {
            last = hpdl__cnn_basic_block(l, &n, last, in_channels, channels, stage > 0 && block == 0 ? 2 : 1);
            in_channels = channels;
        }
    l[n++] = hpdl_cnn_simple(HPDL_CNN_GLOBAL_AVGPOOL);
    l[n++] = hpdl_cnn_linear(classes);
    return hpdl_cnn_define(net, n, l, input, layout);
}

/* Fan-in of layer i's weight: what one output sums over. */
static inline int64_t hpdl__cnn_fan_in(const hpdl_cnn *net, int i) {
    hpdl_shape in = hpdl__cnn_in_shape(net, i);
    const hpdl_cnn_layer *l = &net->layer[i];
    return l->op == HPDL_CNN_CONV ? (int64_t)in.c * l->kernel * l->kernel : hpdl__shape_count(in);
}

/* Layer i's weight count (conv: K*C*R*S, batch norm: C (gamma), linear:
   out*in) and bias count (conv with bias: K, batch norm: C (beta), linear:
   out); 0 for layers without them. */
static inline int64_t hpdl__cnn_weight_count(const hpdl_cnn *net, int i) {
    const hpdl_cnn_layer *l = &net->layer[i];
    if (l->op == HPDL_CNN_CONV || l->op == HPDL_CNN_LINEAR) return hpdl__cnn_fan_in(net, i) * l->channels;
    return l->op == HPDL_CNN_BATCHNORM ? net->out[i].c : 0;
}

static inline int64_t hpdl__cnn_bias_count(const hpdl_cnn *net, int i) {
    return net->bias_at[i] < 0 ? 0 : net->out[i].c;
}

/* ||a - b|| / ||b|| over n values (||a - b|| when b is all zero). */
static inline double hpdl__rel_frobenius(const double *a, const double *b, int64_t n) {
    double diff = 0, norm = 0;
    int64_t j;
    for (j = 0; j < n; j++) {
        diff += (a[j] - b[j]) * (a[j] - b[j]);
        norm += b[j] * b[j];
    }
    return norm > 0 ? sqrt(diff / norm) : sqrt(diff);
}

/* How far parameters a are from b (two flat arrays of net): the largest,
   over every layer's weight and bias tensors, of the relative Frobenius
   difference (the measure of the MLP's CPU/GPU check); *layer (may be
   NULL) the layer where it is. NaN anywhere gives NaN. */
HPDL_API double hpdl_cnn_param_difference(const hpdl_cnn *net, const double *a, const double *b, int *layer) {
    double worst = 0;
    int i;
    if (layer) *layer = -1;
    for (i = 0; i < net->n_layers; i++) {
        double dw = hpdl__rel_frobenius(a + (net->weight_at[i] < 0 ? 0 : net->weight_at[i]),
                                        b + (net->weight_at[i] < 0 ? 0 : net->weight_at[i]), hpdl__cnn_weight_count(net, i));
        double db = hpdl__rel_frobenius(a + (net->bias_at[i] < 0 ? 0 : net->bias_at[i]),
                                        b + (net->bias_at[i] < 0 ? 0 : net->bias_at[i]), hpdl__cnn_bias_count(net, i));
        double d = dw != dw || db != db ? NAN : dw > db ? dw : db;
        if (!(d <= worst)) {
            worst = d;
            if (layer) *layer = i;
        }
    }
    return worst;
}

/* Fresh parameters (param_count values) and state (state_count values),
   in double so that every backend starts from the same numbers. */
HPDL_API hpdl_status hpdl_cnn_init(const hpdl_cnn *net, uint64_t seed, double *params, double *state) {
    hpdl_rng rng;
    int i;
    int64_t j;
    if (!net || net->n_layers < 1 || !params || (net->state_count && !state)) return HPDL_ERR_INVALID;
    hpdl_rng_seed(&rng, seed);
    memset(params, 0, (size_t)net->param_count * sizeof *params);
    for (i = 0; i < net->n_layers; i++) {
        const hpdl_cnn_layer *l = &net->layer[i];
        if (l->op == HPDL_CNN_CONV || l->op == HPDL_CNN_LINEAR) {
            double std = sqrt(2.0 / (double)hpdl__cnn_fan_in(net, i));
            for (j = 0; j < hpdl__cnn_weight_count(net, i); j++) params[net->weight_at[i] + j] = std * hpdl_rng_normal(&rng);
        } else if (l->op == HPDL_CNN_BATCHNORM) {
            int c = net->out[i].c;
            for (j = 0; j < c; j++) {
                params[net->weight_at[i] + j] = 1.0;
                state[net->state_at[i] + j] = 0.0;
                state[net->state_at[i] + c + j] = 1.0;
            }
        }
    }
    return HPDL_OK;
}

/* ---- what each layer costs (the performance models' inputs) -------------------- */

/* Forward FLOPs of layer i for `batch` images (a multiply-add counts 2;
   batch norm in inference 2 per value, ReLU, pooling and sums 1 per value
   read), and the bytes it must move at least: its input(s), its output
   and its parameters, elem_size bytes each. What PALEO's per-layer
   estimate takes (hpdl_paleo_estimate). */
HPDL_API hpdl_status hpdl_cnn_layer_cost(const hpdl_cnn *net, int i, int batch, size_t elem_size, double *flops,
                                         double *bytes) {
    const hpdl_cnn_layer *l;
    double in, out, params, f = 0;
    if (!net || i < 0 || i >= net->n_layers || batch < 1 || !elem_size || !flops || !bytes) return HPDL_ERR_INVALID;
    l = &net->layer[i];
    in = (double)batch * (double)hpdl__shape_count(hpdl__cnn_in_shape(net, i));
    out = (double)batch * (double)hpdl__shape_count(net->out[i]);
    params = (double)(hpdl__cnn_weight_count(net, i) + hpdl__cnn_bias_count(net, i));
    switch (l->op) {
    case HPDL_CNN_CONV:
    case HPDL_CNN_LINEAR: f = 2.0 * out * (double)hpdl__cnn_fan_in(net, i) + (net->bias_at[i] >= 0 ? out : 0); break;
    case HPDL_CNN_BATCHNORM: f = 2.0 * out; break;
    case HPDL_CNN_MAXPOOL:
    case HPDL_CNN_AVGPOOL: f = out * (double)l->kernel * l->kernel; break;
    case HPDL_CNN_ADD: f = out; in *= 2; break;
    default: f = in; break; /* ReLU, global average pooling */
    }
    *flops = f;
    *bytes = (in + out + params) * (double)elem_size;
    return HPDL_OK;
}

/* ---- batch norm folded into convolutions (inference) -------------------------- */

/* How many layers read layer i's output. */
static inline int hpdl__cnn_readers(const hpdl_cnn *net, int i) {
    int j, n = 0;
    for (j = 0; j < net->n_layers; j++)
        n += (net->layer[j].input == i) + (net->layer[j].op == HPDL_CNN_ADD && net->layer[j].other == i);
    return n;
}

/* Layer i is a batch norm that can go into the convolution it reads. */
static inline int hpdl__cnn_foldable(const hpdl_cnn *net, int i) {
    int j = net->layer[i].input;
    return net->layer[i].op == HPDL_CNN_BATCHNORM && j >= 0 && net->layer[j].op == HPDL_CNN_CONV &&
           hpdl__cnn_readers(net, j) == 1;
}

/* The batch norm folded into layer i, or -1 (its only reader, so unique). */
static inline int hpdl__cnn_folded_into(const hpdl_cnn *net, int i) {
    int b;
    for (b = i + 1; b < net->n_layers; b++)
        if (net->layer[b].input == i && hpdl__cnn_foldable(net, b)) return b;
    return -1;
}

/* The folded layer list: folded batch norms dropped, their convolutions
   given a bias, every reference renumbered (a reader of a folded batch
   norm reads its convolution). kept[k]: the old index of new layer k. */
static inline int hpdl__cnn_fold_layers(const hpdl_cnn *net, hpdl_cnn_layer *out, int *kept) {
    int map[HPDL_CNN_MAX_LAYERS], i, n = 0;
    for (i = 0; i < net->n_layers; i++) {
        if (hpdl__cnn_foldable(net, i)) { map[i] = map[net->layer[i].input]; continue; }
        out[n] = net->layer[i];
        if (out[n].input >= 0) out[n].input = map[out[n].input];
        if (out[n].op == HPDL_CNN_ADD) out[n].other = map[out[n].other];
        if (out[n].op == HPDL_CNN_CONV && hpdl__cnn_folded_into(net, i) >= 0) out[n].bias = 1;
        kept[n] = i;
        map[i] = n++;
    }
    return n;
}

/* Copies old layer i's parameters into new layer k's; when batch norm b
   (an old index, or -1) follows, scales each output channel's weights by
   gamma/sqrt(var + eps) and makes the bias (b_old - mean)*that + beta. */
static inline void hpdl__cnn_fold_params(const hpdl_cnn *net, const double *params, const double *state, int i,
                                         int b, double eps, const hpdl_cnn *out, int k, double *out_params) {
    int64_t nw = hpdl__cnn_weight_count(net, i), per = nw / (net->out[i].c ? net->out[i].c : 1), j;
    int c;
    if (net->weight_at[i] < 0) return;
    memcpy(out_params + out->weight_at[k], params + net->weight_at[i], (size_t)nw * sizeof *params);
    if (net->bias_at[i] >= 0)
        memcpy(out_params + out->bias_at[k], params + net->bias_at[i],
               (size_t)hpdl__cnn_bias_count(net, i) * sizeof *params);
    if (b < 0) return;
    for (c = 0; c < net->out[i].c; c++) { /* a filter's weights are contiguous in both layouts */
        double scale = params[net->weight_at[b] + c] / sqrt(state[net->state_at[b] + net->out[b].c + c] + eps);
        double bias = net->bias_at[i] >= 0 ? params[net->bias_at[i] + c] : 0.0;
        for (j = 0; j < per; j++) out_params[out->weight_at[k] + c * per + j] *= scale;
        out_params[out->bias_at[k] + c] = (bias - state[net->state_at[b] + c]) * scale + params[net->bias_at[b] + c];
    }
}

/* The network as inference sees it, with every batch norm that directly
   follows a convolution (its only reader) folded into that convolution's
   weights and bias (Jacob et al. 2018; what int8 inference starts from):
   the same logits in inference mode, fewer layers. *out gets the folded
   network; with out_params non-NULL, its out->param_count parameters, and
   out_state (when out->state_count > 0) the batch norms left unfolded.
   Call once with out_params NULL to learn the sizes. eps: the batch norms'
   (hpdl_cnn_optimizer.bn_eps). */
HPDL_API hpdl_status hpdl_cnn_fold_batchnorm(const hpdl_cnn *net, const double *params, const double *state,
                                             double eps, hpdl_cnn *out, double *out_params, double *out_state) {
    hpdl_cnn_layer layers[HPDL_CNN_MAX_LAYERS];
    hpdl_cnn made;
    int kept[HPDL_CNN_MAX_LAYERS], n, k;
    hpdl_status s;
    if (!net || net->n_layers < 1 || !out || !(eps > 0) || (out_params && (!params || (net->state_count && !state))))
        return HPDL_ERR_INVALID;
    n = hpdl__cnn_fold_layers(net, layers, kept);
    if ((s = hpdl_cnn_define(&made, n, layers, net->input, net->layout)) != HPDL_OK) return s;
    if (out_params) {
        if (made.state_count && !out_state) return HPDL_ERR_INVALID;
        for (k = 0; k < n; k++) {
            int i = kept[k];
            hpdl__cnn_fold_params(net, params, state, i, hpdl__cnn_folded_into(net, i), eps, &made, k, out_params);
            if (made.state_at[k] >= 0)
                memcpy(out_state + made.state_at[k], state + net->state_at[i], 2 * (size_t)net->out[i].c * sizeof *state);
        }
    }
    *out = made;
    return HPDL_OK;
}

/* ---- augmentation: random crop with zero padding, horizontal flip ---------- */

/* Image `image`'s draw for seed: a shift (dy, dx) in [-pad, pad]^2 and, when
   flip, a mirror with probability 1/2. A hash of (seed, image), not a
   stream of draws, so the CPU and GPU pick the same and any batch can be
   redone alone. Host and device. */
HPDL_HD static inline void hpdl__augment_draw(uint64_t seed, int64_t image, int pad, int flip, int *dy, int *dx,
                                              int *mirror) {
    uint64_t z = seed + 0x9e3779b97f4a7c15ull * ((uint64_t)image + 1); /* splitmix64's finaliser */
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    *dy = (int)((z & 0xffff) % (uint64_t)(2 * pad + 1)) - pad;
    *dx = (int)(((z >> 16) & 0xffff) % (uint64_t)(2 * pad + 1)) - pad;
    *mirror = flip && ((z >> 32) & 1);
}

/* Where output pixel (h, w) of an augmented image reads: the crop shifted
   by (dy, dx), then mirrored; 0 (and *src untouched) in the zero padding. */
HPDL_HD static inline int hpdl__augment_source(const hpdl_tensor4 *d, int h, int w, int dy, int dx, int mirror,
                                               int *sh, int *sw) {
    int cw = mirror ? d->w - 1 - w : w;
    *sh = h + dy;
    *sw = cw + dx;
    return *sh >= 0 && *sh < d->h && *sw >= 0 && *sw < d->w;
}

/* y = x with each image i cropped at a random shift of up to pad pixels
   from the zero-padded image and, when flip, mirrored left-right half the
   time (torchvision's RandomCrop(size, padding=pad) then
   RandomHorizontalFlip); image i of x is image first_image + i for the
   draw. y must not overlap x. elem_size 2 (f16, bf16), 4 (float) or 8
   (double). */
HPDL_API hpdl_status hpdl_augment_crop_flip(const hpdl_tensor4 *xd, size_t elem_size, const void *x, int pad, int flip,
                                            uint64_t seed, int64_t first_image, void *y) {
    int n, c, h, w, dy, dx, mirror, sh, sw;
    if (!hpdl__tensor4_valid(xd) || !x || !y || pad < 0 || pad > 4096 ||
        (elem_size != 2 && elem_size != 4 && elem_size != 8) || first_image < 0)
        return HPDL_ERR_INVALID;
    for (n = 0; n < xd->n; n++) {
        hpdl__augment_draw(seed, first_image + n, pad, flip, &dy, &dx, &mirror);
        for (c = 0; c < xd->c; c++)
            for (h = 0; h < xd->h; h++)
                for (w = 0; w < xd->w; w++) {
                    char *to = (char *)y + hpdl_tensor4_offset(xd, n, c, h, w) * elem_size;
                    if (hpdl__augment_source(xd, h, w, dy, dx, mirror, &sh, &sw))
                        memcpy(to, (const char *)x + hpdl_tensor4_offset(xd, n, c, sh, sw) * elem_size, elem_size);
                    else
                        memset(to, 0, elem_size);
                }
    }
    return HPDL_OK;
}

/* ---- backends ------------------------------------------------------------- */

/* One element type on one device: where a network's tensors live and the
   kernels that work on them. Every operation is issued in order on `ctx`
   (the CPU runs it at once; the GPU backend queues it on its stream, so a
   whole training step can be captured into a CUDA graph). Activations and
   gradients are of the element type (elem_size). The parameters that the
   optimiser updates, its moments, batch norm's gamma, beta and statistics
   are of the parameter type (param_size; 0: the element type). Where the two
   differ (mixed precision: 16-bit elements, f32 parameters) the run keeps a
   working copy of the parameters in the element type for the layers, which
   `cast` refreshes from the parameters after each update. */
typedef struct hpdl_cnn_backend {
    const char *name;
    size_t elem_size;  /* 2: f16/bf16, 4: float, 8: double */
    size_t param_size; /* 0: elem_size; else 4 or 8 */
    void *ctx;
    /* memory: zeroed allocation, release, copies within the device and to
       and from host memory */
    void *(*alloc)(void *ctx, size_t bytes);
    void (*release)(void *ctx, void *p);
    hpdl_status (*zero)(void *ctx, void *p, size_t bytes);
    hpdl_status (*copy)(void *ctx, void *dst, const void *src, size_t bytes);
    hpdl_status (*upload)(void *ctx, void *dst, const void *host_src, size_t bytes);
    hpdl_status (*download)(void *ctx, void *host_dst, const void *src, size_t bytes);
    /* the layers: the signatures of hpdl_conv2d_* etc. with ctx first */
    hpdl_status (*conv_forward)(void *ctx, const hpdl_conv2d_params *p, const hpdl_tensor4 *xd, const void *x,
                                const void *w, const hpdl_tensor4 *yd, void *y);
    hpdl_status (*conv_backward_data)(void *ctx, const hpdl_conv2d_params *p, const hpdl_tensor4 *yd,
                                      const void *dy, const void *w, const hpdl_tensor4 *xd, void *dx);
    hpdl_status (*conv_backward_filter)(void *ctx, const hpdl_conv2d_params *p, const hpdl_tensor4 *xd,
                                        const void *x, const hpdl_tensor4 *yd, const void *dy, void *dw);
    hpdl_status (*bias_add)(void *ctx, const hpdl_tensor4 *yd, void *y, const void *bias);
    hpdl_status (*bias_grad)(void *ctx, const hpdl_tensor4 *yd, const void *dy, void *dbias);
    /* batch norm: x, y, dy, dx, dgamma, dbeta of the element type; gamma,
       beta, the running and saved statistics of the parameter type */
    hpdl_status (*bn_forward_training)(void *ctx, const hpdl_tensor4 *xd, const void *x, const void *gamma,
                                       const void *beta, double momentum, double eps, void *running_mean,
                                       void *running_var, void *y, void *save_mean, void *save_invstd);
    hpdl_status (*bn_forward_inference)(void *ctx, const hpdl_tensor4 *xd, const void *x, const void *gamma,
                                        const void *beta, const void *running_mean, const void *running_var,
                                        double eps, void *y);
    hpdl_status (*bn_backward)(void *ctx, const hpdl_tensor4 *xd, const void *x, const void *dy, const void *gamma,
                               const void *save_mean, const void *save_invstd, void *dx, void *dgamma, void *dbeta);
    /* max = 1: max pooling, 0: average pooling (x is ignored backward) */
    hpdl_status (*pool_forward)(void *ctx, int max, const hpdl_pool2d_params *p, const hpdl_tensor4 *xd,
                                const void *x, const hpdl_tensor4 *yd, void *y);
    hpdl_status (*pool_backward)(void *ctx, int max, const hpdl_pool2d_params *p, const hpdl_tensor4 *xd,
                                 const void *x, const hpdl_tensor4 *yd, const void *dy, void *dx);
    hpdl_status (*global_avgpool_forward)(void *ctx, const hpdl_tensor4 *xd, const void *x, void *y);
    hpdl_status (*global_avgpool_backward)(void *ctx, const hpdl_tensor4 *xd, const void *dy, void *dx);
    hpdl_status (*relu)(void *ctx, int64_t n, const void *x, void *y);
    hpdl_status (*relu_grad)(void *ctx, int64_t n, const void *y, const void *dy, void *dx);
    hpdl_status (*add)(void *ctx, int64_t n, const void *a, const void *b, void *c); /* c = a + b */
    /* C = op(A) op(B), row-major */
    hpdl_status (*gemm)(void *ctx, hpdl_transpose ta, hpdl_transpose tb, int M, int N, int K, const void *A,
                        int lda, const void *B, int ldb, void *C, int ldc);
    /* grad = (softmax(logits) - onehot)/rows; *loss (device memory) = mean loss */
    hpdl_status (*softmax_xent)(void *ctx, int rows, int cols, const void *logits, const int32_t *labels,
                                void *grad, double *loss);
    /* *hits (host) = rows whose largest logit is at their label */
    hpdl_status (*argmax_hits)(void *ctx, int rows, int cols, const void *logits, const int32_t *labels,
                               int64_t *hits);
    /* Before an update: when the loss or one of the n gradients is not
       finite, marks the step bad and puts the n_state batch-norm values
       back as they were before its forward pass (state_before). The CPU
       says so at once (*bad = 1); the GPU sets a flag on the device that its
       optimiser kernels read, and *bad stays 0. */
    hpdl_status (*check_step)(void *ctx, int64_t n, const void *grads, const double *loss, int64_t n_state,
                              void *state, const void *state_before, int *bad);
    /* The optimisers of hpdl_sgd_momentum_<t> / hpdl_adamw_<t>; the GPU
       backend takes lr and the step from device memory instead (its own
       table of the schedule and count of steps, so a graph replays them).
       w and the moments are of the parameter type, g of the element type. */
    hpdl_status (*sgd)(void *ctx, int64_t n, void *w, const void *g, void *velocity, double lr, double momentum,
                       double weight_decay, int nesterov);
    hpdl_status (*adamw)(void *ctx, int64_t n, void *w, const void *g, void *m, void *v, int64_t step, double lr,
                         double beta1, double beta2, double eps, double weight_decay);
    /* work = params converted to the element type (n values; NULL when
       param_size is 0) */
    hpdl_status (*cast)(void *ctx, int64_t n, const void *params, void *work);
    /* optional (NULL: conv_backward_filter, then bias_grad): a convolution's
       filter and bias gradients in one pass */
    hpdl_status (*conv_backward_filter_bias)(void *ctx, const hpdl_conv2d_params *p, const hpdl_tensor4 *xd,
                                             const void *x, const hpdl_tensor4 *yd, const void *dy, void *dw,
                                             void *dbias);
    /* optional (NULL: the layers one by one): a training batch norm and the
       ReLU that alone reads it, y = max(bn(x), 0), as one layer; its
       backward takes dy of the ReLU's output, and beta to recompute where
       y > 0. With a residual (not NULL), the forward of batch norm,
       residual sum and ReLU: y = max(bn(x) + residual, 0) (its backward is
       the three layers' own). HPDL_ERR_UNSUPPORTED from the forward: the
       walk runs the layers one by one. */
    hpdl_status (*bn_relu_forward_training)(void *ctx, const hpdl_tensor4 *xd, const void *x, const void *gamma,
                                            const void *beta, double momentum, double eps, void *running_mean,
                                            void *running_var, const void *residual, void *y, void *save_mean,
                                            void *save_invstd);
    hpdl_status (*bn_relu_backward)(void *ctx, const hpdl_tensor4 *xd, const void *x, const void *dy,
                                    const void *gamma, const void *beta, const void *save_mean,
                                    const void *save_invstd, void *dx, void *dgamma, void *dbeta);
} hpdl_cnn_backend;

/* The optimiser of a CNN run: that of hpdl_sgd_momentum_<t> or of hpdl_adamw_<t>. */
typedef enum hpdl_cnn_optimizer_kind { HPDL_CNN_SGD = 0, HPDL_CNN_ADAMW } hpdl_cnn_optimizer_kind;

/* Optimiser settings of a CNN run; hpdl_cnn_sgd and hpdl_cnn_adamw fill them with
   PyTorch's defaults. */
typedef struct hpdl_cnn_optimizer {
    hpdl_cnn_optimizer_kind kind;
    hpdl_lr_schedule schedule; /* the learning rate at each step (hpdl_lr_at) */
    double momentum;           /* SGD */
    int nesterov;              /* SGD */
    double beta1, beta2, eps;  /* AdamW */
    double weight_decay;       /* both: on every parameter, as PyTorch's default */
    double bn_momentum, bn_eps;
} hpdl_cnn_optimizer;

/* SGD with momentum (PyTorch's usual 0.9, 5e-4) at a constant learning
   rate (set .schedule for another); batch norm's momentum 0.1 and eps 1e-5
   as PyTorch's defaults. */
HPDL_API hpdl_cnn_optimizer hpdl_cnn_sgd(double lr, double momentum, double weight_decay) {
    hpdl_cnn_optimizer o;
    memset(&o, 0, sizeof o);
    o.kind = HPDL_CNN_SGD;
    o.schedule.kind = HPDL_LR_CONSTANT;
    o.schedule.base_lr = lr;
    o.momentum = momentum;
    o.weight_decay = weight_decay;
    o.bn_momentum = 0.1;
    o.bn_eps = 1e-5;
    return o;
}

/* AdamW with betas (0.9, 0.999) and eps 1e-8, PyTorch's defaults. */
HPDL_API hpdl_cnn_optimizer hpdl_cnn_adamw(double lr, double weight_decay) {
    hpdl_cnn_optimizer o = hpdl_cnn_sgd(lr, 0.0, weight_decay);
    o.kind = HPDL_CNN_ADAMW;
    o.beta1 = 0.9;
    o.beta2 = 0.999;
    o.eps = 1e-8;
    return o;
}

/* ---- a network's memory on a backend ---------------------------------------- */

/* Everything one network needs to train on one backend, for batches of up
   to max_batch images: the flat parameters, gradients, state and optimiser
   moments, and per layer its output (act) and d(loss)/d(output) (dact).
   params, moments and state are of the backend's parameter type, the rest
   of its element type. */
typedef struct hpdl_cnn_run {
    const hpdl_cnn *net;
    const hpdl_cnn_backend *be;
    hpdl_cnn_optimizer opt;
    int max_batch;
    int64_t steps; /* optimiser steps taken (AdamW's bias correction) */
    void *params, *grads, *state, *state_before, *moment1, *moment2;
    void *work; /* the parameters the layers read: params itself, or its copy in the element type */
    void *act[HPDL_CNN_MAX_LAYERS], *dact[HPDL_CNN_MAX_LAYERS];
    void *save_mean[HPDL_CNN_MAX_LAYERS], *save_invstd[HPDL_CNN_MAX_LAYERS];
    void *scratch; /* a gradient on its way to being added into one already written */
    /* In the last forward pass, batch norm i also ran the layers after it
       (bn_relu_forward_training): fused[i] = 1, its ReLU (forward and
       backward); 2, a residual sum and its ReLU (forward). Those layers
       then had nothing to do. */
    unsigned char fused[HPDL_CNN_MAX_LAYERS];
    double *loss;  /* backend memory: the last training batch's mean loss */
    /* Called (when set) as soon as backward has issued layer `layer`'s
       parameter gradients, last layer first: a data-parallel driver starts
       reducing them while backward goes on (hpdl_mpi_cnn in hpdl_mpi.h). */
    void (*grads_ready)(void *user, int layer);
    void *grads_ready_user;
} hpdl_cnn_run;

/* Frees what hpdl_cnn_run_create made (on its backend); r is zeroed. */
HPDL_API void hpdl_cnn_run_destroy(hpdl_cnn_run *r) {
    int i;
    void **flat[7];
    if (!r || !r->be) return;
    if (r->work != r->params) r->be->release(r->be->ctx, r->work);
    flat[0] = &r->params; flat[1] = &r->grads; flat[2] = &r->state; flat[3] = &r->state_before;
    flat[4] = &r->moment1; flat[5] = &r->moment2; flat[6] = &r->scratch;
    for (i = 0; i < 7; i++) r->be->release(r->be->ctx, *flat[i]);
    for (i = 0; i < HPDL_CNN_MAX_LAYERS; i++) {
        r->be->release(r->be->ctx, r->act[i]);
        r->be->release(r->be->ctx, r->dact[i]);
        r->be->release(r->be->ctx, r->save_mean[i]);
        r->be->release(r->be->ctx, r->save_invstd[i]);
    }
    r->be->release(r->be->ctx, r->loss);
    memset(r, 0, sizeof *r);
}

static inline int hpdl__cnn_optimizer_ok(const hpdl_cnn_optimizer *o) {
    int bn = o->bn_momentum >= 0 && o->bn_momentum <= 1 && o->bn_eps > 0 && o->weight_decay >= 0 &&
             hpdl_lr_schedule_check(&o->schedule) == HPDL_OK;
    if (o->kind == HPDL_CNN_SGD) return bn && o->momentum >= 0 && o->momentum < 1;
    return bn && o->kind == HPDL_CNN_ADAMW && o->beta1 >= 0 && o->beta1 < 1 && o->beta2 >= 0 && o->beta2 < 1 &&
           o->eps > 0;
}

/* Bytes of one parameter (and optimiser or batch-norm state) value. */
static inline size_t hpdl__cnn_param_size(const hpdl_cnn_backend *be) {
    return be->param_size ? be->param_size : be->elem_size;
}

/* Allocates every per-layer buffer of layer i for max_batch images. */
static inline int hpdl__cnn_alloc_layer(hpdl_cnn_run *r, int i) {
    const hpdl_cnn_backend *be = r->be;
    size_t bytes = (size_t)r->max_batch * (size_t)hpdl__shape_count(r->net->out[i]) * be->elem_size;
    r->act[i] = be->alloc(be->ctx, bytes);
    r->dact[i] = be->alloc(be->ctx, bytes);
    if (r->net->layer[i].op == HPDL_CNN_BATCHNORM) {
        r->save_mean[i] = be->alloc(be->ctx, (size_t)r->net->out[i].c * hpdl__cnn_param_size(be));
        r->save_invstd[i] = be->alloc(be->ctx, (size_t)r->net->out[i].c * hpdl__cnn_param_size(be));
        if (!r->save_mean[i] || !r->save_invstd[i]) return 0;
    }
    return r->act[i] && r->dact[i];
}

/* Memory for `net` on backend `be`; parameters zero until
   hpdl_cnn_set_params. `net` and `be` must outlive the run. */
HPDL_API hpdl_status hpdl_cnn_run_create(hpdl_cnn_run *r, const hpdl_cnn *net, const hpdl_cnn_backend *be,
                                         int max_batch, const hpdl_cnn_optimizer *opt) {
    size_t flat, state, count;
    int i, ok;
    if (!r || !net || net->n_layers < 1 || !be || !opt || max_batch < 1 || !hpdl__cnn_optimizer_ok(opt) ||
        (double)max_batch * (double)net->largest > (double)INT_MAX)
        return HPDL_ERR_INVALID;
    if ((hpdl__cnn_param_size(be) != 4 && hpdl__cnn_param_size(be) != 8) ||
        (hpdl__cnn_param_size(be) != be->elem_size && !be->cast))
        return HPDL_ERR_INVALID;
    memset(r, 0, sizeof *r);
    r->net = net; r->be = be; r->opt = *opt; r->max_batch = max_batch;
    count = (size_t)net->param_count;
    flat = count * hpdl__cnn_param_size(be);
    state = (size_t)(net->state_count ? net->state_count : 1) * hpdl__cnn_param_size(be);
    r->params = be->alloc(be->ctx, flat);
    r->work = hpdl__cnn_param_size(be) == be->elem_size ? r->params : be->alloc(be->ctx, count * be->elem_size);
    r->grads = be->alloc(be->ctx, count * be->elem_size);
    r->moment1 = be->alloc(be->ctx, flat);
    r->moment2 = opt->kind == HPDL_CNN_ADAMW ? be->alloc(be->ctx, flat) : NULL;
    r->state = be->alloc(be->ctx, state);
    r->state_before = be->alloc(be->ctx, state);
    r->scratch = be->alloc(be->ctx, (size_t)max_batch * (size_t)net->largest * be->elem_size);
    r->loss = (double *)be->alloc(be->ctx, sizeof(double));
    ok = r->params && r->work && r->grads && r->moment1 && (r->moment2 || opt->kind != HPDL_CNN_ADAMW) && r->state &&
         r->state_before && r->scratch && r->loss;
    for (i = 0; ok && i < net->n_layers; i++) ok = hpdl__cnn_alloc_layer(r, i);
    if (!ok) { hpdl_cnn_run_destroy(r); return HPDL_ERR_NOMEM; }
    return HPDL_OK;
}

/* Converts n doubles to float or double (elem_size bytes each) into
   `host`, or back. */
static inline void hpdl__cnn_from_double(size_t elem_size, int64_t n, const double *src, void *host) {
    int64_t i;
    for (i = 0; i < n; i++)
        if (elem_size == sizeof(float)) ((float *)host)[i] = (float)src[i];
        else ((double *)host)[i] = src[i];
}

static inline void hpdl__cnn_to_double(size_t elem_size, int64_t n, const void *host, double *dst) {
    int64_t i;
    for (i = 0; i < n; i++) dst[i] = elem_size == sizeof(float) ? (double)((const float *)host)[i] : ((const double *)host)[i];
}

/* Copies n doubles into backend buffer dst of the parameter type
   (converted), or back. */
static inline hpdl_status hpdl__cnn_put(const hpdl_cnn_backend *be, void *dst, int64_t n, const double *src) {
    size_t size = hpdl__cnn_param_size(be);
    void *host = hpdl_alloc((size_t)(n ? n : 1), size);
    hpdl_status s;
    if (!host) return HPDL_ERR_NOMEM;
    hpdl__cnn_from_double(size, n, src, host);
    s = be->upload(be->ctx, dst, host, (size_t)n * size);
    HPDL_FREE(host);
    return s;
}

static inline hpdl_status hpdl__cnn_get(const hpdl_cnn_backend *be, const void *src, int64_t n, double *dst) {
    size_t size = hpdl__cnn_param_size(be);
    void *host = hpdl_alloc((size_t)(n ? n : 1), size);
    hpdl_status s;
    if (!host) return HPDL_ERR_NOMEM;
    s = be->download(be->ctx, host, src, (size_t)n * size);
    if (s == HPDL_OK) hpdl__cnn_to_double(size, n, host, dst);
    HPDL_FREE(host);
    return s;
}

/* After r->params changed (an update, or a checkpoint written into it):
   the layers' working copy from it, where the run keeps one. */
HPDL_API hpdl_status hpdl_cnn_refresh_work(hpdl_cnn_run *r) {
    if (!r || !r->be) return HPDL_ERR_INVALID;
    return r->work == r->params ? HPDL_OK : r->be->cast(r->be->ctx, r->net->param_count, r->params, r->work);
}

/* Sets the parameters and batch-norm state (hpdl_cnn_init's arrays, or a
   checkpoint's) and clears the optimiser's moments and step count. */
HPDL_API hpdl_status hpdl_cnn_set_params(hpdl_cnn_run *r, const double *params, const double *state) {
    const hpdl_cnn_backend *be;
    size_t flat;
    hpdl_status s;
    if (!r || !r->be || !params || (r->net->state_count && !state)) return HPDL_ERR_INVALID;
    be = r->be;
    flat = (size_t)r->net->param_count * hpdl__cnn_param_size(be);
    s = hpdl__cnn_put(be, r->params, r->net->param_count, params);
    if (s == HPDL_OK) s = hpdl_cnn_refresh_work(r);
    if (s == HPDL_OK && r->net->state_count) s = hpdl__cnn_put(be, r->state, r->net->state_count, state);
    if (s == HPDL_OK) s = be->zero(be->ctx, r->moment1, flat);
    if (s == HPDL_OK && r->moment2) s = be->zero(be->ctx, r->moment2, flat);
    r->steps = 0;
    return s;
}

/* The parameters (the optimiser's, in the parameter type) and batch-norm
   state, as doubles (state may be NULL). */
HPDL_API hpdl_status hpdl_cnn_get_params(const hpdl_cnn_run *r, double *params, double *state) {
    hpdl_status s;
    if (!r || !r->be || !params) return HPDL_ERR_INVALID;
    s = hpdl__cnn_get(r->be, r->params, r->net->param_count, params);
    if (s == HPDL_OK && state && r->net->state_count) s = hpdl__cnn_get(r->be, r->state, r->net->state_count, state);
    return s;
}

/* ---- the walk: forward, backward, update ------------------------------------ */

/* Element `offset` of a buffer of the element type (work, grads), or of
   the parameter type (params, state); NULL for offset -1. */
static inline void *hpdl__cnn_at(const hpdl_cnn_run *r, void *base, int64_t offset) {
    return offset < 0 ? NULL : (char *)base + (size_t)offset * r->be->elem_size;
}

static inline void *hpdl__cnn_param_at(const hpdl_cnn_run *r, void *base, int64_t offset) {
    return offset < 0 ? NULL : (char *)base + (size_t)offset * hpdl__cnn_param_size(r->be);
}

static inline const void *hpdl__cnn_input(const hpdl_cnn_run *r, int i, const void *X) {
    int from = r->net->layer[i].input;
    return from == HPDL_CNN_IMAGE ? X : r->act[from];
}

static inline hpdl_conv2d_params hpdl__cnn_conv_params(const hpdl_cnn_layer *l) {
    return hpdl_conv2d_params_make(l->kernel, l->stride, l->pad, 1, 1);
}

/* A linear layer as a GEMM: y (batch x out) = x (batch x in) W^T. */
static inline hpdl_status hpdl__cnn_linear_forward(hpdl_cnn_run *r, int i, int batch, const void *x,
                                                   const hpdl_tensor4 *yd) {
    const hpdl_cnn_backend *be = r->be;
    int in = (int)hpdl__shape_count(hpdl__cnn_in_shape(r->net, i)), out = r->net->layer[i].channels;
    hpdl_status s = be->gemm(be->ctx, HPDL_NO_TRANS, HPDL_TRANS, batch, out, in, x, in,
                             hpdl__cnn_at(r, r->work, r->net->weight_at[i]), in, r->act[i], out);
    return s == HPDL_OK ? be->bias_add(be->ctx, yd, r->act[i], hpdl__cnn_at(r, r->work, r->net->bias_at[i])) : s;
}

/* Layer i + 1 is of kind op, reads layer i, and no other layer reads i. */
static inline int hpdl__cnn_only_reader(const hpdl_cnn *net, int i, hpdl_cnn_op op) {
    const hpdl_cnn_layer *next = i + 1 < net->n_layers ? &net->layer[i + 1] : NULL;
    int k;
    if (!next || next->op != op || (next->input != i && (op != HPDL_CNN_ADD || next->other != i))) return 0;
    if (op == HPDL_CNN_ADD && next->input == next->other) return 0;
    for (k = i + 2; k < net->n_layers; k++)
        if (net->layer[k].input == i || (net->layer[k].op == HPDL_CNN_ADD && net->layer[k].other == i)) return 0;
    return 1;
}

/* How many of the layers after batch norm i can run with it (r->fused). */
static inline int hpdl__cnn_fusable(const hpdl_cnn *net, int i) {
    if (hpdl__cnn_only_reader(net, i, HPDL_CNN_RELU)) return 1;
    return hpdl__cnn_only_reader(net, i, HPDL_CNN_ADD) && hpdl__cnn_only_reader(net, i + 1, HPDL_CNN_RELU) ? 2 : 0;
}

/* Layer j's forward was done by a batch norm before it. */
static inline int hpdl__cnn_absorbed(const hpdl_cnn_run *r, int j) {
    return (j >= 1 && r->fused[j - 1] >= 1) || (j >= 2 && r->fused[j - 2] == 2);
}

/* Batch norm i in training; with the layers after it where the backend
   can, straight into the last one's output (r->fused[i]). */
static inline hpdl_status hpdl__cnn_bn_train(hpdl_cnn_run *r, int i, const hpdl_tensor4 *xd, const void *x,
                                             const void *gamma, const void *beta, void *mean, const void *X) {
    const hpdl_cnn_backend *be = r->be;
    const int fusable = be->bn_relu_forward_training && be->bn_relu_backward ? hpdl__cnn_fusable(r->net, i) : 0;
    void *var = hpdl__cnn_param_at(r, mean, xd->c);
    hpdl_status s = HPDL_ERR_UNSUPPORTED;
    r->fused[i] = 0;
    if (fusable) {
        const hpdl_cnn_layer *add = &r->net->layer[i + 1]; /* with fusable 2: the residual sum */
        const void *res = fusable < 2 ? NULL : add->input == i ? r->act[add->other] : hpdl__cnn_input(r, i + 1, X);
        s = be->bn_relu_forward_training(be->ctx, xd, x, gamma, beta, r->opt.bn_momentum, r->opt.bn_eps, mean, var,
                                         res, r->act[i + fusable], r->save_mean[i], r->save_invstd[i]);
    }
    if (s != HPDL_ERR_UNSUPPORTED) {
        r->fused[i] = (unsigned char)fusable;
        return s;
    }
    return be->bn_forward_training(be->ctx, xd, x, gamma, beta, r->opt.bn_momentum, r->opt.bn_eps, mean, var,
                                   r->act[i], r->save_mean[i], r->save_invstd[i]);
}

static inline hpdl_status hpdl__cnn_forward_layer(hpdl_cnn_run *r, int i, int batch, const void *X, int training) {
    const hpdl_cnn *net = r->net;
    const hpdl_cnn_layer *l = &net->layer[i];
    const hpdl_cnn_backend *be = r->be;
    hpdl_tensor4 xd = hpdl__cnn_tensor(net, batch, hpdl__cnn_in_shape(net, i));
    hpdl_tensor4 yd = hpdl__cnn_tensor(net, batch, net->out[i]);
    const void *x = hpdl__cnn_input(r, i, X), *w = hpdl__cnn_at(r, r->work, net->weight_at[i]);
    const void *b = hpdl__cnn_at(r, r->work, net->bias_at[i]);
    const void *gamma = hpdl__cnn_param_at(r, r->params, net->weight_at[i]);
    const void *beta = hpdl__cnn_param_at(r, r->params, net->bias_at[i]);
    void *y = r->act[i], *mean = hpdl__cnn_param_at(r, r->state, net->state_at[i]);
    hpdl_conv2d_params cp = hpdl__cnn_conv_params(l);
    hpdl_pool2d_params pp = hpdl_pool2d_params_make(l->kernel, l->stride, l->pad);
    hpdl_status s;
    switch (l->op) {
    case HPDL_CNN_CONV:
        s = be->conv_forward(be->ctx, &cp, &xd, x, w, &yd, y);
        return s == HPDL_OK && l->bias ? be->bias_add(be->ctx, &yd, y, b) : s;
    case HPDL_CNN_BATCHNORM:
        if (training) return hpdl__cnn_bn_train(r, i, &xd, x, gamma, beta, mean, X);
        r->fused[i] = 0;
        return be->bn_forward_inference(be->ctx, &xd, x, gamma, beta, mean, hpdl__cnn_param_at(r, mean, yd.c),
                                        r->opt.bn_eps, y);
    case HPDL_CNN_RELU:
        return hpdl__cnn_absorbed(r, i) ? HPDL_OK : be->relu(be->ctx, (int64_t)hpdl_tensor4_count(&yd), x, y);
    case HPDL_CNN_MAXPOOL:
    case HPDL_CNN_AVGPOOL: return be->pool_forward(be->ctx, l->op == HPDL_CNN_MAXPOOL, &pp, &xd, x, &yd, y);
    case HPDL_CNN_GLOBAL_AVGPOOL: return be->global_avgpool_forward(be->ctx, &xd, x, y);
    case HPDL_CNN_LINEAR: return hpdl__cnn_linear_forward(r, i, batch, x, &yd);
    case HPDL_CNN_ADD:
        if (hpdl__cnn_absorbed(r, i)) return HPDL_OK;
        return be->add(be->ctx, (int64_t)hpdl_tensor4_count(&yd), x, r->act[l->other], y);
    }
    return HPDL_ERR_INVALID;
}

static inline int hpdl__cnn_batch_ok(const hpdl_cnn_run *r, int batch, const void *X) {
    return r && r->be && X && batch >= 1 && batch <= r->max_batch;
}

/* Runs the network on `batch` images X (backend memory, the network's
   layout); the logits are then in r->act[r->net->n_layers - 1]. training:
   batch norm uses and updates batch statistics (a backward pass may
   follow); otherwise it uses the running statistics. */
HPDL_API hpdl_status hpdl_cnn_forward(hpdl_cnn_run *r, int batch, const void *X, int training) {
    hpdl_status s = HPDL_OK;
    int i;
    if (!hpdl__cnn_batch_ok(r, batch, X)) return HPDL_ERR_INVALID;
    if (training && r->net->state_count)
        s = r->be->copy(r->be->ctx, r->state_before, r->state,
                        (size_t)r->net->state_count * hpdl__cnn_param_size(r->be));
    for (i = 0; s == HPDL_OK && i < r->net->n_layers; i++) s = hpdl__cnn_forward_layer(r, i, batch, X, training);
    return s;
}

/* Where the gradient for layer j's output goes: straight into dact[j] from
   its first reader (in backward order), into scratch from the others,
   then added (hpdl__cnn_grad_done). NULL for the image: no one needs it. */
static inline void *hpdl__cnn_grad_dest(hpdl_cnn_run *r, int j, const int *written) {
    if (j == HPDL_CNN_IMAGE) return NULL;
    return written[j] ? r->scratch : r->dact[j];
}

static inline hpdl_status hpdl__cnn_grad_done(hpdl_cnn_run *r, int j, int batch, int *written) {
    hpdl_status s = HPDL_OK;
    if (j == HPDL_CNN_IMAGE) return HPDL_OK;
    if (written[j]) {
        int64_t n = (int64_t)batch * hpdl__shape_count(r->net->out[j]);
        s = r->be->add(r->be->ctx, n, r->dact[j], r->scratch, r->dact[j]);
    }
    written[j] = 1;
    return s;
}

/* dy (dact[i]) of a residual sum i flows unchanged into operand j:
   added to j's gradient where a reader already wrote it, else copied in. */
static inline hpdl_status hpdl__cnn_route(hpdl_cnn_run *r, int i, int j, int batch, int *written) {
    int64_t n = (int64_t)batch * hpdl__shape_count(r->net->out[j]);
    if (j == HPDL_CNN_IMAGE) return HPDL_OK;
    if (written[j]) return r->be->add(r->be->ctx, n, r->dact[j], r->dact[i], r->dact[j]);
    written[j] = 1;
    return r->be->copy(r->be->ctx, r->dact[j], r->dact[i], (size_t)n * r->be->elem_size);
}

/* The backward of residual sum i: dy to both operands. The last one not
   yet written takes dact[i]'s buffer itself (the two buffers swap: no
   copy), since nothing reads layer i's gradient after this; every buffer
   is written before it is read within a step, so which layer holds which
   buffer from one step to the next does not matter (a CUDA graph keeps
   the pointers of the step it captured, consistent within itself). */
static inline hpdl_status hpdl__cnn_add_backward(hpdl_cnn_run *r, int i, int batch, int *written) {
    const hpdl_cnn_layer *l = &r->net->layer[i];
    const int taker = l->other != HPDL_CNN_IMAGE && !written[l->other] && l->other != l->input ? l->other : l->input;
    const int copied = taker == l->input ? l->other : l->input;
    hpdl_status s = hpdl__cnn_route(r, i, copied, batch, written);
    void *buffer;
    if (s != HPDL_OK || taker == HPDL_CNN_IMAGE) return s;
    if (written[taker]) return hpdl__cnn_route(r, i, taker, batch, written);
    buffer = r->dact[taker];
    r->dact[taker] = r->dact[i];
    r->dact[i] = buffer;
    written[taker] = 1;
    return HPDL_OK;
}

static inline hpdl_status hpdl__cnn_linear_backward(hpdl_cnn_run *r, int i, int batch, const void *x, void *dx,
                                                    const hpdl_tensor4 *yd) {
    const hpdl_cnn_backend *be = r->be;
    int in = (int)hpdl__shape_count(hpdl__cnn_in_shape(r->net, i)), out = r->net->layer[i].channels;
    const void *dy = r->dact[i];
    hpdl_status s = be->gemm(be->ctx, HPDL_TRANS, HPDL_NO_TRANS, out, in, batch, dy, out, x, in,
                             hpdl__cnn_at(r, r->grads, r->net->weight_at[i]), in);
    if (s == HPDL_OK) s = be->bias_grad(be->ctx, yd, dy, hpdl__cnn_at(r, r->grads, r->net->bias_at[i]));
    if (s == HPDL_OK && dx)
        s = be->gemm(be->ctx, HPDL_NO_TRANS, HPDL_NO_TRANS, batch, in, out, dy, out,
                     hpdl__cnn_at(r, r->work, r->net->weight_at[i]), in, dx, in);
    return s;
}

static inline hpdl_status hpdl__cnn_conv_backward(hpdl_cnn_run *r, int i, const hpdl_tensor4 *xd, const void *x,
                                                  void *dx, const hpdl_tensor4 *yd) {
    const hpdl_cnn_backend *be = r->be;
    const hpdl_cnn_layer *l = &r->net->layer[i];
    hpdl_conv2d_params cp = hpdl__cnn_conv_params(l);
    const void *dy = r->dact[i];
    void *dw = hpdl__cnn_at(r, r->grads, r->net->weight_at[i]), *db = hpdl__cnn_at(r, r->grads, r->net->bias_at[i]);
    hpdl_status s;
    if (l->bias && be->conv_backward_filter_bias) {
        s = be->conv_backward_filter_bias(be->ctx, &cp, xd, x, yd, dy, dw, db);
    } else {
        s = be->conv_backward_filter(be->ctx, &cp, xd, x, yd, dy, dw);
        if (s == HPDL_OK && l->bias) s = be->bias_grad(be->ctx, yd, dy, db);
    }
    if (s == HPDL_OK && dx)
        s = be->conv_backward_data(be->ctx, &cp, yd, dy, hpdl__cnn_at(r, r->work, r->net->weight_at[i]), xd, dx);
    return s;
}

/* Batch norm i's backward; fused with its ReLU, from the ReLU's dy. */
static inline hpdl_status hpdl__cnn_bn_backward(hpdl_cnn_run *r, int i, const hpdl_tensor4 *xd, const void *x,
                                                void *dx) {
    const hpdl_cnn_backend *be = r->be;
    const hpdl_cnn *net = r->net;
    const void *gamma = hpdl__cnn_param_at(r, r->params, net->weight_at[i]);
    void *dgamma = hpdl__cnn_at(r, r->grads, net->weight_at[i]), *dbeta = hpdl__cnn_at(r, r->grads, net->bias_at[i]);
    if (!dx) dx = r->scratch; /* the parameters' gradients are still wanted */
    if (r->fused[i] == 1)
        return be->bn_relu_backward(be->ctx, xd, x, r->dact[i + 1], gamma,
                                    hpdl__cnn_param_at(r, r->params, net->bias_at[i]), r->save_mean[i],
                                    r->save_invstd[i], dx, dgamma, dbeta);
    return be->bn_backward(be->ctx, xd, x, r->dact[i], gamma, r->save_mean[i], r->save_invstd[i], dx, dgamma, dbeta);
}

/* Layer i's share of the backward pass: its parameters' gradients, and its
   input's gradient (into dx; NULL when its input is the image). */
static inline hpdl_status hpdl__cnn_backward_layer(hpdl_cnn_run *r, int i, int batch, const void *X, void *dx) {
    const hpdl_cnn *net = r->net;
    const hpdl_cnn_layer *l = &net->layer[i];
    const hpdl_cnn_backend *be = r->be;
    hpdl_tensor4 xd = hpdl__cnn_tensor(net, batch, hpdl__cnn_in_shape(net, i));
    hpdl_tensor4 yd = hpdl__cnn_tensor(net, batch, net->out[i]);
    hpdl_pool2d_params pp = hpdl_pool2d_params_make(l->kernel, l->stride, l->pad);
    const void *x = hpdl__cnn_input(r, i, X), *dy = r->dact[i];
    switch (l->op) {
    case HPDL_CNN_CONV: return hpdl__cnn_conv_backward(r, i, &xd, x, dx, &yd);
    case HPDL_CNN_BATCHNORM: return hpdl__cnn_bn_backward(r, i, &xd, x, dx);
    case HPDL_CNN_RELU:
        if (!dx || (i >= 1 && r->fused[i - 1] == 1)) return HPDL_OK; /* its batch norm's backward does it */
        return be->relu_grad(be->ctx, (int64_t)hpdl_tensor4_count(&yd), r->act[i], dy, dx);
    case HPDL_CNN_MAXPOOL:
    case HPDL_CNN_AVGPOOL:
        return dx ? be->pool_backward(be->ctx, l->op == HPDL_CNN_MAXPOOL, &pp, &xd, x, &yd, dy, dx) : HPDL_OK;
    case HPDL_CNN_GLOBAL_AVGPOOL: return dx ? be->global_avgpool_backward(be->ctx, &xd, dy, dx) : HPDL_OK;
    case HPDL_CNN_LINEAR: return hpdl__cnn_linear_backward(r, i, batch, x, dx, &yd);
    case HPDL_CNN_ADD: return HPDL_OK; /* hpdl__cnn_add_backward does it */
    }
    return HPDL_ERR_INVALID;
}

/* After hpdl_cnn_forward(training) of the same batch: the mean softmax
   cross-entropy loss against labels (backend memory) into r->loss, and
   every parameter's gradient into r->grads. */
HPDL_API hpdl_status hpdl_cnn_backward(hpdl_cnn_run *r, int batch, const void *X, const int32_t *labels) {
    int written[HPDL_CNN_MAX_LAYERS] = {0}, i, last;
    hpdl_status s;
    if (!hpdl__cnn_batch_ok(r, batch, X) || !labels) return HPDL_ERR_INVALID;
    last = r->net->n_layers - 1;
    s = r->be->softmax_xent(r->be->ctx, batch, r->net->classes, r->act[last], labels, r->dact[last], r->loss);
    for (i = last; s == HPDL_OK && i >= 0; i--) {
        const hpdl_cnn_layer *l = &r->net->layer[i];
        if (l->op == HPDL_CNN_ADD) {
            s = hpdl__cnn_add_backward(r, i, batch, written);
            continue;
        }
        s = hpdl__cnn_backward_layer(r, i, batch, X, hpdl__cnn_grad_dest(r, l->input, written));
        if (s == HPDL_OK && r->grads_ready && r->net->weight_at[i] >= 0) r->grads_ready(r->grads_ready_user, i);
        if (s == HPDL_OK) s = hpdl__cnn_grad_done(r, l->input, batch, written);
    }
    return s;
}

/* One optimiser step over every parameter, at the schedule's learning
   rate for this step, unless the loss or a gradient is not finite: then
   HPDL_ERR_NUMERIC (at once on the CPU; the GPU skips the step on the
   device and counts it), the parameters, moments and batch-norm
   statistics as before the step. Then the layers' working copy of the
   parameters, where there is one. */
HPDL_API hpdl_status hpdl_cnn_update(hpdl_cnn_run *r) {
    const hpdl_cnn_backend *be;
    int bad = 0;
    int64_t n;
    double lr;
    hpdl_status s;
    if (!r || !r->be) return HPDL_ERR_INVALID;
    be = r->be;
    lr = hpdl_lr_at(&r->opt.schedule, r->steps);
    n = r->net->param_count;
    s = be->check_step(be->ctx, n, r->grads, r->loss, r->net->state_count, r->state, r->state_before, &bad);
    if (s != HPDL_OK) return s;
    if (bad) return HPDL_ERR_NUMERIC;
    r->steps++;
    if (r->opt.kind == HPDL_CNN_SGD)
        s = be->sgd(be->ctx, n, r->params, r->grads, r->moment1, lr, r->opt.momentum, r->opt.weight_decay,
                    r->opt.nesterov);
    else
        s = be->adamw(be->ctx, n, r->params, r->grads, r->moment1, r->moment2, r->steps, lr, r->opt.beta1,
                      r->opt.beta2, r->opt.eps, r->opt.weight_decay);
    return s == HPDL_OK ? hpdl_cnn_refresh_work(r) : s;
}

/* Forward (training), backward and update on one batch. */
HPDL_API hpdl_status hpdl_cnn_train_step(hpdl_cnn_run *r, int batch, const void *X, const int32_t *labels) {
    hpdl_status s = hpdl_cnn_forward(r, batch, X, 1);
    if (s == HPDL_OK) s = hpdl_cnn_backward(r, batch, X, labels);
    return s == HPDL_OK ? hpdl_cnn_update(r) : s;
}

/* The last training batch's mean loss (waits for the device). */
HPDL_API hpdl_status hpdl_cnn_loss(const hpdl_cnn_run *r, double *loss) {
    if (!r || !r->be || !loss) return HPDL_ERR_INVALID;
    return r->be->download(r->be->ctx, loss, r->loss, sizeof *loss);
}

/* Fraction of n images (X, labels in backend memory) whose largest logit
   is at their label, in batches of max_batch, batch norm in inference. */
HPDL_API hpdl_status hpdl_cnn_accuracy(hpdl_cnn_run *r, int64_t n, const void *X, const int32_t *labels,
                                       double *accuracy) {
    int64_t i0, hits = 0, features;
    hpdl_status s = HPDL_OK;
    if (!r || !r->be || !X || !labels || n < 1 || !accuracy) return HPDL_ERR_INVALID;
    features = hpdl__shape_count(r->net->input);
    for (i0 = 0; s == HPDL_OK && i0 < n; i0 += r->max_batch) {
        int batch = (int)(n - i0 < r->max_batch ? n - i0 : r->max_batch);
        int64_t batch_hits = 0;
        s = hpdl_cnn_forward(r, batch, (const char *)X + (size_t)(i0 * features) * r->be->elem_size, 0);
        if (s == HPDL_OK)
            s = r->be->argmax_hits(r->be->ctx, batch, r->net->classes, r->act[r->net->n_layers - 1], labels + i0,
                                   &batch_hits);
        hits += batch_hits;
    }
    if (s == HPDL_OK) *accuracy = (double)hits / (double)n;
    return s;
}

/* A CNN training checkpoint, as examples/cnn_train writes it (--save) and
   examples/quantize_cnn reads it (--load), defined once here so the two
   cannot drift: tensors "params", "bn_state", "moment1", "moment2" (AdamW
   only) of dtype (the backend's parameter type: F32, the master copy under
   mixed precision, or F64) over the caller's buffers of net->param_count,
   net->state_count and param_count values, and the step count "steps".
   Fills e[0..] and returns how many (4, or 5 with AdamW); 0 on a bad
   argument (moment2 NULL with AdamW, another dtype). */
static inline void hpdl__ckpt_entry_set(hpdl_ckpt_entry *e, const char *name, hpdl_dtype dtype, int rank, int64_t n,
                                        void *data) {
    e->name = name;
    e->dtype = dtype;
    e->rank = rank;
    e->dims[0] = rank ? n : 0;
    e->dims[1] = e->dims[2] = e->dims[3] = 0;
    e->data = data;
}

/* Fills e[0..] with a CNN checkpoint's entries (see above), pointing at the caller's buffers; returns
   4, or 5 with AdamW, and 0 on a bad argument. */
HPDL_API int hpdl_cnn_ckpt_entries(const hpdl_cnn *net, int adamw, hpdl_dtype dtype, void *params, void *state,
                                   void *moment1, void *moment2, int64_t *steps, hpdl_ckpt_entry e[5]) {
    int n = 0;
    if (!net || !params || !state || !moment1 || (adamw && !moment2) || !steps || !e ||
        (dtype != HPDL_DTYPE_F32 && dtype != HPDL_DTYPE_F64))
        return 0;
    hpdl__ckpt_entry_set(&e[n++], "params", dtype, 1, net->param_count, params);
    hpdl__ckpt_entry_set(&e[n++], "bn_state", dtype, 1, net->state_count, state);
    hpdl__ckpt_entry_set(&e[n++], "moment1", dtype, 1, net->param_count, moment1);
    if (adamw) hpdl__ckpt_entry_set(&e[n++], "moment2", dtype, 1, net->param_count, moment2);
    hpdl__ckpt_entry_set(&e[n++], "steps", HPDL_DTYPE_I64, 0, 0, steps);
    return n;
}

/* The model string such a checkpoint is checked against:
   "cnn NAME CxHxW LAYOUT PRECISION" (e.g. "cnn small 1x28x28 nhwc f32"),
   into out (size bytes); HPDL_ERR_INVALID, nothing written, when it does
   not fit or exceeds HPDL_CKPT_MAX_MODEL. */
HPDL_API hpdl_status hpdl_cnn_ckpt_model(const char *name, const hpdl_cnn *net, const char *layout,
                                         const char *precision, char *out, size_t size) {
    char model[HPDL_CKPT_MAX_MODEL + 1];
    int len;
    if (!name || !net || !layout || !precision || !out) return HPDL_ERR_INVALID;
    len = snprintf(model, sizeof model, "cnn %s %dx%dx%d %s %s", name, net->input.c, net->input.h, net->input.w,
                   layout, precision);
    if (len < 0 || (size_t)len >= sizeof model || (size_t)len >= size) return HPDL_ERR_INVALID; /* nothing written */
    memcpy(out, model, (size_t)len + 1);
    return HPDL_OK;
}

/* ---- the CPU backends: hpdl.h's kernels, f32 and f64 ------------------------- */

static inline void *hpdl__cnn_cpu_alloc(void *ctx, size_t bytes) {
    (void)ctx;
    return hpdl_alloc(bytes ? bytes : 1, 1);
}
static inline void hpdl__cnn_cpu_release(void *ctx, void *p) { (void)ctx; HPDL_FREE(p); }
static inline hpdl_status hpdl__cnn_cpu_zero(void *ctx, void *p, size_t bytes) {
    (void)ctx;
    if (bytes) memset(p, 0, bytes);
    return HPDL_OK;
}
/* copy, upload and download are all memcpy on the CPU */
static inline hpdl_status hpdl__cnn_cpu_copy(void *ctx, void *dst, const void *src, size_t bytes) {
    (void)ctx;
    if (bytes && dst != src) memcpy(dst, src, bytes);
    return HPDL_OK;
}

static inline int hpdl__cnn_cpu_finite(size_t elem_size, int64_t n, const void *x) {
    int64_t i;
    for (i = 0; i < n; i++) {
        double v = elem_size == sizeof(float) ? (double)((const float *)x)[i] : ((const double *)x)[i];
        if (!(v - v == 0.0)) return 0; /* NaN or inf */
    }
    return 1;
}

/* One CPU backend per type: each operation is the typed function of
   hpdl.h with the pointers cast back. */
#define HPDL_DEFINE_CNN_CPU(SUFFIX, T)                                                                             \
    static inline hpdl_status hpdl__cnn_conv_fwd_##SUFFIX(void *ctx, const hpdl_conv2d_params *p,                 \
                                                          const hpdl_tensor4 *xd, const void *x, const void *w,   \
                                                          const hpdl_tensor4 *yd, void *y) {                      \
        (void)ctx;                                                                                                \
        return hpdl_conv2d_forward_##SUFFIX(p, xd, (const T *)x, (const T *)w, yd, (T *)y);                       \
    }                                                                                                             \
    static inline hpdl_status hpdl__cnn_conv_bwd_data_##SUFFIX(void *ctx, const hpdl_conv2d_params *p,            \
                                                               const hpdl_tensor4 *yd, const void *dy,            \
                                                               const void *w, const hpdl_tensor4 *xd, void *dx) { \
        (void)ctx;                                                                                                \
        return hpdl_conv2d_backward_data_##SUFFIX(p, yd, (const T *)dy, (const T *)w, xd, (T *)dx);               \
    }                                                                                                             \
    static inline hpdl_status hpdl__cnn_conv_bwd_filter_##SUFFIX(void *ctx, const hpdl_conv2d_params *p,          \
                                                                 const hpdl_tensor4 *xd, const void *x,           \
                                                                 const hpdl_tensor4 *yd, const void *dy, void *dw) { \
        (void)ctx;                                                                                                \
        return hpdl_conv2d_backward_filter_##SUFFIX(p, xd, (const T *)x, yd, (const T *)dy, (T *)dw);             \
    }                                                                                                             \
    static inline hpdl_status hpdl__cnn_bias_add_##SUFFIX(void *ctx, const hpdl_tensor4 *yd, void *y,             \
                                                          const void *bias) {                                     \
        (void)ctx;                                                                                                \
        return hpdl_conv2d_bias_add_##SUFFIX(yd, (T *)y, (const T *)bias);                                        \
    }                                                                                                             \
    static inline hpdl_status hpdl__cnn_bias_grad_##SUFFIX(void *ctx, const hpdl_tensor4 *yd, const void *dy,     \
                                                           void *db) {                                            \
        (void)ctx;                                                                                                \
        return hpdl_conv2d_bias_grad_##SUFFIX(yd, (const T *)dy, (T *)db);                                        \
    }                                                                                                             \
    static inline hpdl_status hpdl__cnn_bn_train_##SUFFIX(void *ctx, const hpdl_tensor4 *xd, const void *x,       \
                                                          const void *gamma, const void *beta, double momentum,   \
                                                          double eps, void *rm, void *rv, void *y, void *sm,      \
                                                          void *si) {                                             \
        (void)ctx;                                                                                                \
        return hpdl_batchnorm_forward_training_##SUFFIX(xd, (const T *)x, (const T *)gamma, (const T *)beta,      \
                                                        momentum, eps, (T *)rm, (T *)rv, (T *)y, (T *)sm, (T *)si); \
    }                                                                                                             \
    static inline hpdl_status hpdl__cnn_bn_infer_##SUFFIX(void *ctx, const hpdl_tensor4 *xd, const void *x,       \
                                                          const void *gamma, const void *beta, const void *rm,    \
                                                          const void *rv, double eps, void *y) {                  \
        (void)ctx;                                                                                                \
        return hpdl_batchnorm_forward_inference_##SUFFIX(xd, (const T *)x, (const T *)gamma, (const T *)beta,     \
                                                         (const T *)rm, (const T *)rv, eps, (T *)y);              \
    }                                                                                                             \
    static inline hpdl_status hpdl__cnn_bn_bwd_##SUFFIX(void *ctx, const hpdl_tensor4 *xd, const void *x,         \
                                                        const void *dy, const void *gamma, const void *sm,        \
                                                        const void *si, void *dx, void *dgamma, void *dbeta) {    \
        (void)ctx;                                                                                                \
        return hpdl_batchnorm_backward_##SUFFIX(xd, (const T *)x, (const T *)dy, (const T *)gamma, (const T *)sm, \
                                                (const T *)si, (T *)dx, (T *)dgamma, (T *)dbeta);                 \
    }                                                                                                             \
    static inline hpdl_status hpdl__cnn_pool_fwd_##SUFFIX(void *ctx, int max, const hpdl_pool2d_params *p,        \
                                                          const hpdl_tensor4 *xd, const void *x,                  \
                                                          const hpdl_tensor4 *yd, void *y) {                      \
        (void)ctx;                                                                                                \
        return max ? hpdl_maxpool2d_forward_##SUFFIX(p, xd, (const T *)x, yd, (T *)y)                             \
                   : hpdl_avgpool2d_forward_##SUFFIX(p, xd, (const T *)x, yd, (T *)y);                            \
    }                                                                                                             \
    static inline hpdl_status hpdl__cnn_pool_bwd_##SUFFIX(void *ctx, int max, const hpdl_pool2d_params *p,        \
                                                          const hpdl_tensor4 *xd, const void *x,                  \
                                                          const hpdl_tensor4 *yd, const void *dy, void *dx) {     \
        (void)ctx;                                                                                                \
        return max ? hpdl_maxpool2d_backward_##SUFFIX(p, xd, (const T *)x, yd, (const T *)dy, (T *)dx)            \
                   : hpdl_avgpool2d_backward_##SUFFIX(p, yd, (const T *)dy, xd, (T *)dx);                         \
    }                                                                                                             \
    static inline hpdl_status hpdl__cnn_gap_fwd_##SUFFIX(void *ctx, const hpdl_tensor4 *xd, const void *x,        \
                                                         void *y) {                                               \
        (void)ctx;                                                                                                \
        return hpdl_global_avgpool_forward_##SUFFIX(xd, (const T *)x, (T *)y);                                    \
    }                                                                                                             \
    static inline hpdl_status hpdl__cnn_gap_bwd_##SUFFIX(void *ctx, const hpdl_tensor4 *xd, const void *dy,       \
                                                         void *dx) {                                              \
        (void)ctx;                                                                                                \
        return hpdl_global_avgpool_backward_##SUFFIX(xd, (const T *)dy, (T *)dx);                                 \
    }                                                                                                             \
    static inline hpdl_status hpdl__cnn_relu_##SUFFIX(void *ctx, int64_t n, const void *x, void *y) {             \
        (void)ctx;                                                                                                \
        return hpdl_relu_##SUFFIX(n, (const T *)x, (T *)y);                                                       \
    }                                                                                                             \
    static inline hpdl_status hpdl__cnn_relu_grad_##SUFFIX(void *ctx, int64_t n, const void *y, const void *dy,   \
                                                           void *dx) {                                            \
        (void)ctx;                                                                                                \
        return hpdl_relu_grad_##SUFFIX(n, (const T *)y, (const T *)dy, (T *)dx);                                  \
    }                                                                                                             \
    static inline hpdl_status hpdl__cnn_add_##SUFFIX(void *ctx, int64_t n, const void *a, const void *b,          \
                                                     void *c) {                                                   \
        (void)ctx;                                                                                                \
        return hpdl_vec_add_##SUFFIX(n, (const T *)a, (const T *)b, (T *)c);                                      \
    }                                                                                                             \
    static inline hpdl_status hpdl__cnn_gemm_##SUFFIX(void *ctx, hpdl_transpose ta, hpdl_transpose tb, int M,     \
                                                      int N, int K, const void *A, int lda, const void *B,        \
                                                      int ldb, void *C, int ldc) {                                \
        (void)ctx;                                                                                                \
        return hpdl_gemm_##SUFFIX(ta, tb, M, N, K, 1, (const T *)A, lda, (const T *)B, ldb, 0, (T *)C, ldc);      \
    }                                                                                                             \
    static inline hpdl_status hpdl__cnn_xent_##SUFFIX(void *ctx, int rows, int cols, const void *logits,          \
                                                      const int32_t *labels, void *grad, double *loss) {          \
        (void)ctx;                                                                                                \
        return hpdl_softmax_xent_##SUFFIX(rows, cols, (const T *)logits, cols, labels, (T *)grad, cols, loss);    \
    }                                                                                                             \
    static inline hpdl_status hpdl__cnn_hits_##SUFFIX(void *ctx, int rows, int cols, const void *logits,          \
                                                      const int32_t *labels, int64_t *hits) {                     \
        (void)ctx;                                                                                                \
        *hits = hpdl__argmax_hits_##SUFFIX(rows, cols, logits, labels); /* the MLP's count */                     \
        return HPDL_OK;                                                                                           \
    }                                                                                                             \
    static inline hpdl_status hpdl__cnn_check_##SUFFIX(void *ctx, int64_t n, const void *grads,                  \
                                                       const double *loss, int64_t n_state, void *state,          \
                                                       const void *state_before, int *bad) {                     \
        (void)ctx;                                                                                                \
        *bad = !(*loss - *loss == 0.0) || !hpdl__cnn_cpu_finite(sizeof(T), n, grads);                             \
        if (*bad && n_state) memcpy(state, state_before, (size_t)n_state * sizeof(T));                            \
        return HPDL_OK;                                                                                           \
    }                                                                                                             \
    static inline hpdl_status hpdl__cnn_sgd_##SUFFIX(void *ctx, int64_t n, void *w, const void *g, void *v,       \
                                                     double lr, double momentum, double wd, int nesterov) {       \
        (void)ctx;                                                                                                \
        return hpdl_sgd_momentum_##SUFFIX(n, (T *)w, (const T *)g, (T *)v, lr, momentum, wd, nesterov);           \
    }                                                                                                             \
    static inline hpdl_status hpdl__cnn_adamw_##SUFFIX(void *ctx, int64_t n, void *w, const void *g, void *m,     \
                                                       void *v, int64_t step, double lr, double b1, double b2,    \
                                                       double eps, double wd) {                                   \
        (void)ctx;                                                                                                \
        return hpdl_adamw_##SUFFIX(n, (T *)w, (const T *)g, (T *)m, (T *)v, step, lr, b1, b2, eps, wd);           \
    }                                                                                                             \
    HPDL_API const hpdl_cnn_backend *hpdl_cnn_backend_cpu_##SUFFIX(void) {                                        \
        static const hpdl_cnn_backend be = {                                                                      \
            "cpu " #SUFFIX, sizeof(T), 0, NULL, hpdl__cnn_cpu_alloc, hpdl__cnn_cpu_release,                       \
            hpdl__cnn_cpu_zero, hpdl__cnn_cpu_copy, hpdl__cnn_cpu_copy, hpdl__cnn_cpu_copy,                       \
            hpdl__cnn_conv_fwd_##SUFFIX,                                                                          \
            hpdl__cnn_conv_bwd_data_##SUFFIX, hpdl__cnn_conv_bwd_filter_##SUFFIX, hpdl__cnn_bias_add_##SUFFIX,    \
            hpdl__cnn_bias_grad_##SUFFIX, hpdl__cnn_bn_train_##SUFFIX, hpdl__cnn_bn_infer_##SUFFIX,               \
            hpdl__cnn_bn_bwd_##SUFFIX, hpdl__cnn_pool_fwd_##SUFFIX, hpdl__cnn_pool_bwd_##SUFFIX,                  \
            hpdl__cnn_gap_fwd_##SUFFIX, hpdl__cnn_gap_bwd_##SUFFIX, hpdl__cnn_relu_##SUFFIX,                      \
            hpdl__cnn_relu_grad_##SUFFIX, hpdl__cnn_add_##SUFFIX, hpdl__cnn_gemm_##SUFFIX,                        \
            hpdl__cnn_xent_##SUFFIX, hpdl__cnn_hits_##SUFFIX, hpdl__cnn_check_##SUFFIX, hpdl__cnn_sgd_##SUFFIX,   \
            hpdl__cnn_adamw_##SUFFIX, NULL, NULL, NULL, NULL};                                                    \
        return &be;                                                                                               \
    }

/* hpdl_cnn_backend_cpu_f32 hpdl_cnn_backend_cpu_f64 */
HPDL_DEFINE_CNN_CPU(f32, float)
HPDL_DEFINE_CNN_CPU(f64, double)

/* ---- int8 inference of a CNN: integer-only, as Jacob et al. 2018 ------------------ */

/* A trained network's int8 form, for NHWC networks of convolutions,
   linear layers, ReLU, max pooling, residual sums and global average
   pooling (the lab's small CNN, ResNet-18; fold batch norms first with
   hpdl_cnn_fold_batchnorm):
   weights int8 per output channel (symmetric), every activation int8 with
   a scale and zero point calibrated on training images, biases int32 at
   scale s_input * s_weight, each convolution a GEMM over its im2col rows
   requantised by fixed-point multipliers (hpdl_quant_gemm_requant_i8) with
   the following ReLU folded into the clamp; max pooling on the int8 values
   themselves (it commutes with the affine map); a residual sum rescales
   its two inputs to its output's scale and a global average pooling its
   sums, both by fixed-point multipliers (hpdl_quant_fixed), a ReLU after
   either folded into its clamp; int32 logits from the last layer.
   Nothing in the forward pass is a float but the input's quantisation. */

/* A positive real multiplier of any size in integers: x * real is
   rounding_divide_by_pot(sat_rounding_doubling_high_mul(x * 2^left, m0),
   shift) (hpdl_quant_multiplier's form once real / 2^left < 1). */
typedef struct hpdl_quant_fixed {
    int32_t m0;
    int shift, left;
} hpdl_quant_fixed;

/* A trained CNN's int8 form (see above); hpdl_quant_cnn_build makes it, hpdl_quant_cnn_free frees
   the arrays it owns. */
typedef struct hpdl_quant_cnn {
    hpdl_cnn net;
    hpdl_quant_params act[HPDL_CNN_MAX_LAYERS + 1]; /* [0]: the image; [i + 1]: layer i's output */
    int8_t *w[HPDL_CNN_MAX_LAYERS];                 /* conv/linear: taps x outputs (the GEMM's B) */
    hpdl_quant_params *w_params[HPDL_CNN_MAX_LAYERS];
    int32_t *bias32[HPDL_CNN_MAX_LAYERS], *m0[HPDL_CNN_MAX_LAYERS];
    int *shift[HPDL_CNN_MAX_LAYERS];
    int relu_after[HPDL_CNN_MAX_LAYERS];            /* conv/linear/add i clamps at its output's zero point */
    hpdl_quant_fixed rescale[HPDL_CNN_MAX_LAYERS][2]; /* add: its input's and `other`'s; global pool: [0] */
    double logit_scale;                             /* real value of one int32 logit */
} hpdl_quant_cnn;

/* Frees what hpdl_quant_cnn_build made; q is zeroed. */
HPDL_API void hpdl_quant_cnn_free(hpdl_quant_cnn *q) {
    int i;
    if (!q) return;
    for (i = 0; i < HPDL_CNN_MAX_LAYERS; i++) {
        HPDL_FREE(q->w[i]);
        HPDL_FREE(q->w_params[i]);
        HPDL_FREE(q->bias32[i]);
        HPDL_FREE(q->m0[i]);
        HPDL_FREE(q->shift[i]);
    }
    memset(q, 0, sizeof *q);
}

/* What the integer path handles: NHWC, conv/linear/ReLU/max pool/residual
   sum/global average pool, no batch norm left, the last layer a conv or
   linear. */
static inline int hpdl__quant_cnn_supported(const hpdl_cnn *net) {
    int i;
    if (net->layout != HPDL_NHWC || net->state_count) return 0;
    for (i = 0; i < net->n_layers; i++) {
        hpdl_cnn_op op = net->layer[i].op;
        if (op != HPDL_CNN_CONV && op != HPDL_CNN_LINEAR && op != HPDL_CNN_RELU && op != HPDL_CNN_MAXPOOL &&
            op != HPDL_CNN_ADD && op != HPDL_CNN_GLOBAL_AVGPOOL)
            return 0;
    }
    return net->weight_at[net->n_layers - 1] >= 0;
}

/* hpdl_quant_fixed for a real multiplier > 0. */
static inline hpdl_status hpdl__quant_fixed_make(double real, hpdl_quant_fixed *f) {
    f->left = 0;
    while (real >= 1.0 && f->left < 16) real /= 2, f->left++;
    return hpdl_quant_multiplier(real, &f->m0, &f->shift);
}

static inline int32_t hpdl__quant_fixed_apply(int32_t x, hpdl_quant_fixed f) {
    return hpdl_quant_rounding_divide_by_pot(hpdl_quant_sat_rounding_doubling_high_mul(x * (1 << f.left), f.m0), f.shift);
}

/* Observes a batch's `count` floats at x in backend memory (copied into
   the host buffer `host` first). */
static inline hpdl_status hpdl__quant_calib_observe_on(hpdl_quant_calib *c, const hpdl_cnn_backend *be, const void *x,
                                                       int64_t count, float *host) {
    hpdl_status st = be->download(be->ctx, host, x, (size_t)count * sizeof(float));
    return st == HPDL_OK ? hpdl_quant_calib_observe_f32(c, host, count) : st;
}

/* Activation ranges over n calibration images X (f32 inference on backend
   be, X in its memory): the image's and every layer's output; a ReLU
   folded into the layer before gives that layer its range, max pooling
   keeps its input's parameters. */
static inline hpdl_status hpdl__quant_cnn_calibrate(hpdl_quant_cnn *q, const float *params, int64_t n,
                                                    const float *X, double pct, const hpdl_cnn_backend *be) {
    const hpdl_cnn *net = &q->net;
    hpdl_quant_calib cal[HPDL_CNN_MAX_LAYERS + 1];
    int64_t features = hpdl__shape_count(net->input), i0, j;
    double *p64 = (double *)hpdl_alloc((size_t)net->param_count, sizeof(double));
    float *host = (float *)hpdl_alloc((size_t)(64 * (net->largest > features ? net->largest : features)), sizeof(float));
    hpdl_cnn_optimizer opt = hpdl_cnn_sgd(0, 0, 0);
    hpdl_cnn_run r;
    int i, made = 0;
    hpdl_status st = p64 && host ? HPDL_OK : HPDL_ERR_NOMEM;
    memset(&r, 0, sizeof r);
    for (j = 0; p64 && j < net->param_count; j++) p64[j] = params[j];
    if (st == HPDL_OK) st = hpdl_cnn_run_create(&r, net, be, 64, &opt);
    if (st == HPDL_OK) st = hpdl_cnn_set_params(&r, p64, NULL);
    for (i = 0; st == HPDL_OK && i <= net->n_layers; i++)
        if ((st = hpdl_quant_calib_init(&cal[i], HPDL_QUANT_CALIB_BINS)) == HPDL_OK) made++;
    for (i0 = 0; st == HPDL_OK && i0 < n; i0 += 64) {
        int batch = (int)(n - i0 < 64 ? n - i0 : 64);
        const float *x = X + i0 * features;
        st = hpdl_cnn_forward(&r, batch, x, 0);
        if (st == HPDL_OK) st = hpdl__quant_calib_observe_on(&cal[0], be, x, batch * features, host);
        for (i = 0; st == HPDL_OK && i < net->n_layers; i++)
            st = hpdl__quant_calib_observe_on(&cal[i + 1], be, r.act[i], batch * hpdl__shape_count(net->out[i]), host);
    }
    for (i = 0; st == HPDL_OK && i <= net->n_layers; i++) {
        double lo, hi;
        st = pct >= 100.0 ? hpdl_quant_calib_minmax(&cal[i], &lo, &hi) : hpdl_quant_calib_percentile(&cal[i], pct, &lo, &hi);
        if (st == HPDL_OK) st = hpdl_quant_params_from_range(lo, hi, 0, &q->act[i]);
    }
    for (i = 0; st == HPDL_OK && i < net->n_layers; i++) {
        const hpdl_cnn_layer *l = &net->layer[i];
        int in = l->input;
        if (l->op == HPDL_CNN_RELU && in >= 0 && hpdl__cnn_readers(net, in) == 1 &&
            (net->weight_at[in] >= 0 || net->layer[in].op == HPDL_CNN_ADD)) {
            q->act[in + 1] = q->act[i + 1]; /* the ReLU's range is its producer's, clamped there */
            q->relu_after[in] = 1;
        } else if (l->op == HPDL_CNN_RELU || l->op == HPDL_CNN_MAXPOOL) {
            q->act[i + 1] = q->act[in + 1]; /* the same codes (clamped at the zero point, or pooled) */
        }
    }
    for (i = 0; i < made; i++) hpdl_quant_calib_free(&cal[i]);
    hpdl_cnn_run_destroy(&r);
    HPDL_FREE(p64);
    HPDL_FREE(host);
    return st;
}

/* Layer i's int8 weights (per output channel), transposed to taps x
   outputs, its int32 bias and its requantisation to the next activation
   (or, last, to int32 logits at logit_scale). */
static inline hpdl_status hpdl__quant_cnn_layer(hpdl_quant_cnn *q, const float *params, int i) {
    const hpdl_cnn *net = &q->net;
    int k, f, outs = net->out[i].c, taps = (int)(hpdl__cnn_weight_count(net, i) / outs);
    float s_in = q->act[net->layer[i].input + 1].scale, s_out;
    int8_t *rows = (int8_t *)hpdl_alloc((size_t)outs * taps, 1);
    float *bias = (float *)hpdl_alloc((size_t)outs, sizeof(float));
    hpdl_status st;
    q->w[i] = (int8_t *)hpdl_alloc((size_t)outs * taps, 1);
    q->w_params[i] = (hpdl_quant_params *)hpdl_alloc((size_t)outs, sizeof(hpdl_quant_params));
    q->bias32[i] = (int32_t *)hpdl_alloc((size_t)outs, sizeof(int32_t));
    q->m0[i] = (int32_t *)hpdl_alloc((size_t)outs, sizeof(int32_t));
    q->shift[i] = (int *)hpdl_alloc((size_t)outs, sizeof(int));
    st = rows && bias && q->w[i] && q->w_params[i] && q->bias32[i] && q->m0[i] && q->shift[i] ? HPDL_OK : HPDL_ERR_NOMEM;
    if (st == HPDL_OK) st = hpdl_quant_params_per_channel_f32(params + net->weight_at[i], outs, taps, taps, 0, 1, q->w_params[i]);
    if (st == HPDL_OK)
        st = hpdl_quant_quantize_channels_f32(params + net->weight_at[i], outs, taps, taps, 0, q->w_params[i], rows, taps);
    for (k = 0; st == HPDL_OK && k < outs; k++) {
        for (f = 0; f < taps; f++) q->w[i][(size_t)f * outs + k] = rows[(size_t)k * taps + f];
        bias[k] = net->bias_at[i] >= 0 ? params[net->bias_at[i] + k] : 0.0f;
    }
    if (st == HPDL_OK) st = hpdl_quant_bias_f32(bias, outs, s_in, q->w_params[i], 1, q->bias32[i]);
    if (i == net->n_layers - 1) {
        float s_max = 0;
        for (k = 0; k < outs; k++) s_max = q->w_params[i][k].scale > s_max ? q->w_params[i][k].scale : s_max;
        s_out = 2.0f * s_in * s_max; /* every multiplier s_in*s_w/s_out in (0, 1/2] */
        q->logit_scale = s_out;
    } else {
        s_out = q->act[i + 1].scale;
    }
    if (st == HPDL_OK) st = hpdl_quant_layer_multipliers(s_in, q->w_params[i], outs, s_out, q->m0[i], q->shift[i]);
    HPDL_FREE(rows);
    HPDL_FREE(bias);
    return st;
}

/* hpdl_quant_cnn_build with the calibration's float inference on backend
   be, whose elements must be f32 (X: the n images in its memory): the
   GPU's (hpdl_cuda_cnn_create<float>) calibrates ResNet-18 on thousands
   of images in seconds, where the CPU twin takes about a second an image. */
HPDL_API hpdl_status hpdl_quant_cnn_build_backend(hpdl_quant_cnn *q, const hpdl_cnn *net, const float *params, int64_t n,
                                                  const float *X, double pct, const hpdl_cnn_backend *be) {
    hpdl_quant_cnn made;
    hpdl_status st;
    int i;
    if (!q || !net || net->n_layers < 1 || !params || n < 1 || !X || !(pct >= 50.0 && pct <= 100.0) || !be ||
        be->elem_size != sizeof(float))
        return HPDL_ERR_INVALID;
    if (!hpdl__quant_cnn_supported(net)) return HPDL_ERR_UNSUPPORTED;
    memset(&made, 0, sizeof made);
    made.net = *net;
    st = hpdl__quant_cnn_calibrate(&made, params, n, X, pct, be);
    for (i = 0; st == HPDL_OK && i < net->n_layers; i++) {
        const hpdl_cnn_layer *l = &net->layer[i];
        double s_out = made.act[i + 1].scale, s_in = made.act[l->input + 1].scale;
        if (net->weight_at[i] >= 0) {
            st = hpdl__quant_cnn_layer(&made, params, i);
        } else if (l->op == HPDL_CNN_ADD) { /* 2^10 (a - za) s_a / s_y: see hpdl__quant_add */
            st = hpdl__quant_fixed_make(s_in / s_out, &made.rescale[i][0]);
            if (st == HPDL_OK) st = hpdl__quant_fixed_make(made.act[l->other + 1].scale / s_out, &made.rescale[i][1]);
        } else if (l->op == HPDL_CNN_GLOBAL_AVGPOOL) {
            hpdl_shape in = hpdl__cnn_in_shape(net, i);
            st = hpdl__quant_fixed_make(s_in / (s_out * in.h * in.w), &made.rescale[i][0]);
        }
    }
    if (st != HPDL_OK) { hpdl_quant_cnn_free(&made); return st; }
    *q = made;
    return HPDL_OK;
}

/* Builds *q from a network (as hpdl__quant_cnn_supported says), its f32
   parameters (net->param_count) and n calibration images X (the network's
   layout), calibrated by f32 inference on the CPU. pct: 100 for min/max
   activation ranges, else a percentile in [50, 100). HPDL_ERR_UNSUPPORTED
   for another kind of network. */
HPDL_API hpdl_status hpdl_quant_cnn_build(hpdl_quant_cnn *q, const hpdl_cnn *net, const float *params, int64_t n,
                                          const float *X, double pct) {
    return hpdl_quant_cnn_build_backend(q, net, params, n, X, pct, hpdl_cnn_backend_cpu_f32());
}

/* im2col of an int8 NHWC batch for a convolution (groups 1): one row per
   output pixel, its taps in the filter's (r, s, c) order, the input's zero
   point zp (a real zero) in the padding. */
static inline void hpdl__quant_im2col(const hpdl__conv_geom *g, const int8_t *x, int32_t zp, int8_t *rows) {
    const hpdl_conv2d_params *p = &g->p;
    int n, oh, ow, r, s, c;
    size_t at = 0;
    for (n = 0; n < g->x.n; n++)
        for (oh = 0; oh < g->y.h; oh++)
            for (ow = 0; ow < g->y.w; ow++)
                for (r = 0; r < p->kernel_h; r++)
                    for (s = 0; s < p->kernel_w; s++) {
                        int ih = hpdl__tap_input(oh, p->stride_h, p->pad_h, r, p->dilation_h);
                        int iw = hpdl__tap_input(ow, p->stride_w, p->pad_w, s, p->dilation_w);
                        int inside = ih >= 0 && ih < g->x.h && iw >= 0 && iw < g->x.w;
                        const int8_t *px = x + (((size_t)n * g->x.h + (inside ? ih : 0)) * g->x.w + (inside ? iw : 0)) * g->x.c;
                        for (c = 0; c < g->x.c; c++) rows[at++] = inside ? px[c] : (int8_t)zp;
                    }
}

/* The checks of an int8 convolution's geometry (hpdl_quant_conv2d_i8 and
   its GPU twin): x and y NHWC with y's shape, one group, zero point valid,
   taps R*S*C within HPDL_QUANT_MAX_K, pixels within an int. */
static inline hpdl_status hpdl__quant_conv_geom(const hpdl_conv2d_params *p, const hpdl_tensor4 *xd, const void *x,
                                                int32_t zx, const void *w, const hpdl_tensor4 *yd, const void *y,
                                                hpdl__conv_geom *g) {
    if (!xd || hpdl__conv_geom_make(p, xd, yd, x, w, y, g) != HPDL_OK || xd->layout != HPDL_NHWC ||
        yd->layout != HPDL_NHWC || p->groups != 1 || zx < HPDL_QUANT_QMIN || zx > HPDL_QUANT_QMAX ||
        (int64_t)p->kernel_h * p->kernel_w * xd->c > HPDL_QUANT_MAX_K || (int64_t)xd->n * yd->h * yd->w > INT_MAX)
        return HPDL_ERR_INVALID;
    return HPDL_OK;
}

/* y = requantize(conv(x - zx, w) + bias): the integer-only convolution of
   an int8 NHWC batch x (zero point zx) with int8 weights w stored taps x
   outputs ((r, s, c) x K, the GEMM's B; symmetric, per output channel
   when o->per_channel), into int8 NHWC y: im2col (zx in the padding, so
   padded taps add nothing) and hpdl_quant_gemm_requant_i8. One group. */
HPDL_API hpdl_status hpdl_quant_conv2d_i8(const hpdl_conv2d_params *p, const hpdl_tensor4 *xd, const int8_t *x,
                                          int32_t zx, const int8_t *w, const hpdl_quant_output *o,
                                          const hpdl_tensor4 *yd, int8_t *y) {
    hpdl__conv_geom g;
    int8_t *rows;
    int M, K;
    hpdl_status st = hpdl__quant_conv_geom(p, xd, x, zx, w, yd, y, &g);
    if (st != HPDL_OK) return st;
    if (!hpdl__quant_output_valid(o, g.y.c)) return HPDL_ERR_INVALID;
    M = g.x.n * g.y.h * g.y.w;
    K = p->kernel_h * p->kernel_w * g.x.c;
    if (!(rows = (int8_t *)hpdl_alloc((size_t)M * K, 1))) return HPDL_ERR_NOMEM;
    hpdl__quant_im2col(&g, x, zx, rows);
    st = hpdl_quant_gemm_requant_i8(M, g.y.c, K, rows, K, zx, w, g.y.c, 0, o, y, g.y.c);
    HPDL_FREE(rows);
    return st;
}

/* Max pooling of int8 NHWC values (the window's largest). */
static inline void hpdl__quant_maxpool(const hpdl_cnn *net, int i, int batch, const int8_t *x, int8_t *y) {
    const hpdl_cnn_layer *l = &net->layer[i];
    hpdl_shape in = hpdl__cnn_in_shape(net, i), out = net->out[i];
    int n, oh, ow, c, r, s;
    for (n = 0; n < batch; n++)
        for (oh = 0; oh < out.h; oh++)
            for (ow = 0; ow < out.w; ow++)
                for (c = 0; c < in.c; c++) {
                    int best = -129;
                    for (r = 0; r < l->kernel; r++)
                        for (s = 0; s < l->kernel; s++) {
                            int ih = oh * l->stride - l->pad + r, iw = ow * l->stride - l->pad + s;
                            if (ih < 0 || ih >= in.h || iw < 0 || iw >= in.w) continue;
                            if (x[(((size_t)n * in.h + ih) * in.w + iw) * in.c + c] > best)
                                best = x[(((size_t)n * in.h + ih) * in.w + iw) * in.c + c];
                        }
                    y[(((size_t)n * out.h + oh) * out.w + ow) * out.c + c] = (int8_t)best;
                }
}

/* Layer i (conv or linear) as one GEMM: rows (M x taps int8) times the
   weights, requantised into y, or into int32 logits when it is the last. */
static inline hpdl_status hpdl__quant_cnn_gemm(const hpdl_quant_cnn *q, int i, int M, const int8_t *rows, int8_t *y,
                                               int32_t *logits) {
    const hpdl_cnn *net = &q->net;
    int outs = net->out[i].c, taps = (int)(hpdl__cnn_weight_count(net, i) / outs);
    hpdl_quant_output o;
    o.bias = q->bias32[i];
    o.multiplier = q->m0[i];
    o.shift = q->shift[i];
    o.per_channel = 1;
    o.relu = q->relu_after[i];
    o.zero_point = logits ? 0 : q->act[i + 1].zero_point;
    if (logits)
        return hpdl_quant_gemm_requant_i32(M, outs, taps, rows, taps, q->act[net->layer[i].input + 1].zero_point, q->w[i],
                                           outs, 0, &o, logits, outs);
    return hpdl_quant_gemm_requant_i8(M, outs, taps, rows, taps, q->act[net->layer[i].input + 1].zero_point, q->w[i],
                                      outs, 0, &o, y, outs);
}

/* Residual sum of int8 codes: y = zy + (s_a (a - za) + s_b (b - zb)) / s_y,
   each term scaled by 2^10 before its fixed-point multiplier so that only
   the final division by 2^10 rounds; clamped at zy after a folded ReLU. */
static inline void hpdl__quant_add(const hpdl_quant_cnn *q, int i, int64_t count, const int8_t *a, const int8_t *b,
                                   int8_t *y) {
    const hpdl_cnn_layer *l = &q->net.layer[i];
    const int32_t za = q->act[l->input + 1].zero_point, zb = q->act[l->other + 1].zero_point, zy = q->act[i + 1].zero_point;
    const int32_t lo = q->relu_after[i] ? zy : HPDL_QUANT_QMIN;
    int64_t j;
    for (j = 0; j < count; j++) {
        int32_t v = hpdl__quant_fixed_apply((a[j] - za) * 1024, q->rescale[i][0]) +
                    hpdl__quant_fixed_apply((b[j] - zb) * 1024, q->rescale[i][1]);
        v = hpdl_quant_rounding_divide_by_pot(v, 10) + zy;
        y[j] = (int8_t)(v < lo ? lo : v > HPDL_QUANT_QMAX ? HPDL_QUANT_QMAX : v);
    }
}

/* Global average pooling of int8 NHWC codes: each channel's sum of
   (x - zx) over the image times s_x / (H W s_y), plus zy. */
static inline void hpdl__quant_global_avgpool(const hpdl_quant_cnn *q, int i, int batch, const int8_t *x, int8_t *y) {
    const hpdl_shape in = hpdl__cnn_in_shape(&q->net, i);
    const int32_t zx = q->act[q->net.layer[i].input + 1].zero_point, zy = q->act[i + 1].zero_point;
    int n, c, p;
    for (n = 0; n < batch; n++)
        for (c = 0; c < in.c; c++) {
            int32_t sum = 0, v;
            for (p = 0; p < in.h * in.w; p++) sum += x[((size_t)n * in.h * in.w + p) * in.c + c] - zx;
            v = hpdl__quant_fixed_apply(sum, q->rescale[i][0]) + zy;
            y[(size_t)n * in.c + c] = (int8_t)(v < HPDL_QUANT_QMIN ? HPDL_QUANT_QMIN : v > HPDL_QUANT_QMAX ? HPDL_QUANT_QMAX : v);
        }
}

/* Layer i of a batch: its output codes into y from its input's (x; b: a
   sum's other), or the int32 logits when it is the last. rows: im2col
   scratch. */
static inline hpdl_status hpdl__quant_cnn_layer_forward(const hpdl_quant_cnn *q, int i, int batch, const int8_t *x,
                                                        const int8_t *b, int8_t *y, int8_t *rows, int32_t *logits) {
    const hpdl_cnn *net = &q->net;
    const hpdl_cnn_layer *l = &net->layer[i];
    int64_t j, count = batch * hpdl__shape_count(net->out[i]);
    int32_t *out32 = i == net->n_layers - 1 ? logits : NULL;
    switch (l->op) {
    case HPDL_CNN_RELU: /* on its own (not folded): clamp at the zero point, the input's parameters kept */
        for (j = 0; j < count; j++) y[j] = x[j] < q->act[i + 1].zero_point ? (int8_t)q->act[i + 1].zero_point : x[j];
        return HPDL_OK;
    case HPDL_CNN_MAXPOOL: hpdl__quant_maxpool(net, i, batch, x, y); return HPDL_OK;
    case HPDL_CNN_ADD: hpdl__quant_add(q, i, count, x, b, y); return HPDL_OK;
    case HPDL_CNN_GLOBAL_AVGPOOL: hpdl__quant_global_avgpool(q, i, batch, x, y); return HPDL_OK;
    case HPDL_CNN_LINEAR: return hpdl__quant_cnn_gemm(q, i, batch, x, y, out32);
    default: {
        hpdl__conv_geom g;
        hpdl_conv2d_params p = hpdl__cnn_conv_params(l);
        hpdl_shape in = hpdl__cnn_in_shape(net, i), out = net->out[i];
        hpdl_tensor4 xd = hpdl_tensor4_make(batch, in.c, in.h, in.w, HPDL_NHWC);
        hpdl_tensor4 yd = hpdl_tensor4_make(batch, out.c, out.h, out.w, HPDL_NHWC);
        hpdl_status st = hpdl__conv_geom_make(&p, &xd, &yd, x, rows, rows, &g);
        if (st != HPDL_OK) return st;
        hpdl__quant_im2col(&g, x, q->act[l->input + 1].zero_point, rows);
        return hpdl__quant_cnn_gemm(q, i, batch * out.h * out.w, rows, y, out32);
    }
    }
}

/* Where each layer's output codes are: base[i + 1] = i + 1, its own, or
   for a ReLU folded into its producer the producer's (clamped there);
   base[0] = 0, the image. */
static inline void hpdl__quant_cnn_slots(const hpdl_quant_cnn *q, int *base) {
    int i;
    base[0] = 0;
    for (i = 0; i < q->net.n_layers; i++) {
        const hpdl_cnn_layer *l = &q->net.layer[i];
        int folded = l->op == HPDL_CNN_RELU && l->input >= 0 && q->relu_after[l->input];
        base[i + 1] = folded ? base[l->input + 1] : i + 1;
    }
}

/* Integer-only forward of `batch` images X (floats, quantised on the way
   in): logits (batch x classes int32; times q->logit_scale, the real ones).
   Each layer's codes are kept until the last layer that reads them; a ReLU
   folded into its producer passes the producer's codes on as they are. */
HPDL_API hpdl_status hpdl_quant_cnn_logits(const hpdl_quant_cnn *q, int batch, const float *X, int32_t *logits) {
    const hpdl_cnn *net;
    int8_t *codes[HPDL_CNN_MAX_LAYERS + 1], *rows = NULL; /* [0]: the image, [i + 1]: layer i's output */
    int base[HPDL_CNN_MAX_LAYERS + 1], until[HPDL_CNN_MAX_LAYERS + 1]; /* the buffer a slot uses; its last reader */
    int64_t largest = 1;
    hpdl_status st;
    int i, k;
    if (!q || !q->w[q->net.n_layers - 1] || batch < 1 || !X || !logits) return HPDL_ERR_INVALID;
    net = &q->net;
    memset(codes, 0, sizeof codes);
    hpdl__quant_cnn_slots(q, base);
    until[0] = -1;
    for (i = 0; i < net->n_layers; i++) {
        const hpdl_cnn_layer *l = &net->layer[i];
        until[i + 1] = -1;
        until[base[l->input + 1]] = i;
        if (l->op == HPDL_CNN_ADD) until[base[l->other + 1]] = i;
        if (l->op == HPDL_CNN_CONV) { /* im2col rows: output pixels x taps */
            int64_t need = hpdl__shape_count(net->out[i]) / net->out[i].c * (hpdl__cnn_weight_count(net, i) / net->out[i].c);
            largest = need > largest ? need : largest;
        }
    }
    rows = (int8_t *)hpdl_alloc((size_t)(batch * largest), 1);
    codes[0] = (int8_t *)hpdl_alloc((size_t)(batch * hpdl__shape_count(net->input)), 1);
    st = rows && codes[0] ? HPDL_OK : HPDL_ERR_NOMEM;
    if (st == HPDL_OK) st = hpdl_quant_quantize_f32(X, batch * hpdl__shape_count(net->input), q->act[0], codes[0]);
    for (i = 0; st == HPDL_OK && i < net->n_layers; i++) {
        const hpdl_cnn_layer *l = &net->layer[i];
        const int8_t *x = codes[base[l->input + 1]], *b = l->op == HPDL_CNN_ADD ? codes[base[l->other + 1]] : NULL;
        if (base[i + 1] == i + 1 && i < net->n_layers - 1) {
            codes[i + 1] = (int8_t *)hpdl_alloc((size_t)(batch * hpdl__shape_count(net->out[i])), 1);
            if (!codes[i + 1]) st = HPDL_ERR_NOMEM;
        }
        if (st == HPDL_OK && base[i + 1] == i + 1) /* else a folded ReLU: clamped already */
            st = hpdl__quant_cnn_layer_forward(q, i, batch, x, b, codes[i + 1], rows, logits);
        for (k = 0; k <= i + 1; k++) /* buffers no later layer reads */
            if (codes[k] && until[k] <= i) {
                HPDL_FREE(codes[k]);
                codes[k] = NULL;
            }
    }
    for (k = 0; k <= net->n_layers; k++) HPDL_FREE(codes[k]);
    HPDL_FREE(rows);
    return st;
}

/* Fraction of n images (X, labels) the integer-only network classifies
   as their label (largest int32 logit, the first on ties). */
HPDL_API hpdl_status hpdl_quant_cnn_accuracy(const hpdl_quant_cnn *q, int64_t n, const float *X,
                                             const int32_t *labels, double *accuracy) {
    int32_t *logits;
    int64_t i0, hits = 0, features;
    hpdl_status st = HPDL_OK;
    if (!q || n < 1 || !X || !labels || !accuracy) return HPDL_ERR_INVALID;
    features = hpdl__shape_count(q->net.input);
    if (!(logits = (int32_t *)hpdl_alloc((size_t)64 * q->net.classes, sizeof *logits))) return HPDL_ERR_NOMEM;
    for (i0 = 0; st == HPDL_OK && i0 < n; i0 += 64) {
        int batch = (int)(n - i0 < 64 ? n - i0 : 64);
        st = hpdl_quant_cnn_logits(q, batch, X + i0 * features, logits);
        if (st == HPDL_OK) hits += hpdl__argmax_hits_i32(batch, q->net.classes, logits, labels + i0);
    }
    HPDL_FREE(logits);
    if (st == HPDL_OK) *accuracy = (double)hits / (double)n;
    return st;
}

#endif /* HPDL_H */
