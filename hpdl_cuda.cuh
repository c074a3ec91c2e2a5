/* hpdl_cuda.cuh - v0.3.0 - high-performance deep learning kernels, CUDA part.

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

   Built on hpdl.h (included here). Every GPU kernel has a CPU twin of the
   same name in hpdl.h that the tests compare it against.

   USAGE
       #include "hpdl_cuda.cuh"
       if (!hpdl_cuda_available()) { puts("no CUDA GPU"); return 0; }
       float *d_a, *d_b, *d_c;
       HPDL_CUDA_CHECK(cudaMalloc(&d_a, n * sizeof(float)));   // ... d_b, d_c
       HPDL_CHECK(hpdl_cuda_vec_add_f32(HPDL_VECADD_GRID_STRIDE, n, d_a, d_b, d_c, 0));
       HPDL_CHECK(hpdl_cuda_gemm(HPDL_NO_TRANS, HPDL_NO_TRANS, M, N, K, 1.0f, d_a, K, d_b, N, 0.0f, d_c, N));
       nvcc -O3 -arch=native prog.cu -lcublas

   PAY ONLY FOR WHAT YOU USE
       Every function here is a template compiled only where it is called
       (HPDL_LAZY): including this header costs a few seconds of nvcc, one
       f32 GEMM call ~10 s, the f16 GEMM with its Hopper rungs ~30 s (2-core
       host, sm_90a; bench/compile measures it, bench/results/cpu/compile.csv).

   CONTENTS (search for the banner, e.g. "GEMM: Hopper")
       section                 CPU twin (hpdl.h)        test                 bench            notes
       checks, buffers, timers -                        tests/gpu_checks.cu  -                -
       VECTOR ADD              hpdl_vec_add_<t>         tests/gpu_vecadd.cu  bench/vecadd.cu  notes/vecadd.md
       GEMM: the ladder        hpdl_gemm_<t>            tests/gpu_gemm.cu    bench/gemm.cu    notes/gemm.md
       GEMM: Hopper rungs      hpdl_gemm_<t>            tests/gpu_gemm.cu    bench/gemm.cu    notes/gemm.md
       Convolution             hpdl_conv2d_*_<t>        tests/gpu_conv.cu    bench/conv.cu    notes/conv.md
       OPTIMISERS              hpdl_sgd_momentum_<t>,   tests/gpu_optim.cu   -                -
                               hpdl_adamw_<t>
       MLP TRAINING            hpdl_mlp_*_<t>           tests/gpu_mlp.cu     bench/mlp.cu     notes/mlp.md
       SEVERAL GPUS            hpdl_matpow_<t>          tests/gpu_matpow.cu, bench/matpow.cu, notes/multi.md
                                                        gpu_model_parallel.cu bench/model_parallel.cu
       INT8 QUANTIZATION       hpdl_quant_*             tests/gpu_quant.cu   bench/quantize.cu notes/quant.md
       FP8                     hpdl_fp8_*,              tests/gpu_fp8.cu     bench/gemm.cu    notes/fp8.md
                               hpdl_mlp_train_step_fp8_f32                   (--fp8)
       CNN TRAINING            hpdl_cnn_* (CPU backends) tests/gpu_cnn.cu    bench/cnn.cu     notes/cnn.md

   OPTIONS
       HPDL_NO_NVTX            compile the NVTX ranges out (no nvtx3 header needed)
       HPDL_VECADD_WAVES       grid of the grid-stride vector add, in waves of
                               resident blocks (default 128)
       HPDL_CUDA_MAX_DEVICES   most GPUs the multi-GPU helpers handle (default 16)
       HPDL_HAVE_CUDNN         the cuDNN convolution backend (HPDL_CONV_CUDNN;
                               link with -lcudnn; the Makefile sets both when
                               it finds cudnn.h)

   TYPES
       <t> is f32, f64, f16 or bf16 where the family has it. hpdl_f16 /
       hpdl_bf16 have the bits of __half / __nv_bfloat16; launchers take
       either and reinterpret them for the kernels. From C++ the names
       without a suffix (hpdl_cuda_gemm, hpdl_cuda_vec_add, hpdl_cuda_mlp_*)
       pick the type from the pointers' element type or the model's type.

   MAP (every public function; scripts/api_map.py check keeps it complete)
   docs/API.md spells out each name (hpdl_cuda_gemm_f32, ...) with its signature and contract.
       checks, devices, buffers, timers
         hpdl_status hpdl_cuda_alloc(ptr, bytes)
         hpdl_status hpdl_cuda_alloc_managed(ptr, bytes)
         hpdl_status hpdl_cuda_alloc_pinned(ptr, bytes)
         hpdl_status hpdl_cuda_csv_context(argc, argv, device)
         int hpdl_cuda_available()
         hpdl_status hpdl_cuda_device_query(device, info)
         void hpdl_cuda_device_slug(name, slug, size)
         void hpdl_cuda_free(ptr)
         void hpdl_cuda_free_pinned(ptr)
         void hpdl_cuda_l2_flush(f, stream)
         hpdl_status hpdl_cuda_l2_flusher_create(f)
         void hpdl_cuda_l2_flusher_destroy(f)
         hpdl_status hpdl_cuda_poison(ptr, bytes)
         hpdl_status hpdl_cuda_prefetch(ptr, bytes, device, stream)
         hpdl_status hpdl_cuda_time_interleaved_ms(n, runs, ctxs, stream, warmup, reps, flush, median_ms)
         hpdl_status hpdl_cuda_time_median_ms(run, ctx, stream, warmup, reps, flush, median_ms)
         hpdl_status hpdl_cuda_timer_create(t, stream)
         void hpdl_cuda_timer_destroy(t)
         void hpdl_cuda_timer_start(t)
         float hpdl_cuda_timer_stop_ms(t)
         hpdl_status hpdl_cuda_to_device(dst, src, bytes, stream)
         hpdl_status hpdl_cuda_to_host(dst, src, bytes, stream)
       vector add
         hpdl_status hpdl_cuda_vec_add(cfg, n, a, b, c, stream)
         hpdl_status hpdl_cuda_vec_add_<t>(cfg, n, a, b, c, stream)
         const char * hpdl_vecadd_config_name(c)
       GEMM
         hpdl_status hpdl_cuda_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, stream)
         hpdl_status hpdl_cuda_gemm_<t>(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, stream)
         hpdl_status hpdl_cuda_gemm_algo(algo, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc,
                        stream)
         hpdl_status hpdl_cuda_gemm_algo_<t>(algo, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc,
                        stream)
         const char * hpdl_gemm_algo_name(a)
       convolution
         const char * hpdl_conv_algo_name(a)
         hpdl_status hpdl_cuda_avgpool2d_backward(p, yd, dy, xd, dx, stream)
         hpdl_status hpdl_cuda_avgpool2d_backward_<t>(p, yd, dy, xd, dx, stream)
         hpdl_status hpdl_cuda_avgpool2d_forward(p, xd, x, yd, y, stream)
         hpdl_status hpdl_cuda_avgpool2d_forward_<t>(p, xd, x, yd, y, stream)
         hpdl_status hpdl_cuda_batchnorm_backward(xd, x, dy, gamma, save_mean, save_invstd, dx, dgamma, dbeta,
                        stream)
         hpdl_status hpdl_cuda_batchnorm_backward_<t>(xd, x, dy, gamma, save_mean, save_invstd, dx, dgamma,
                        dbeta, stream)
         hpdl_status hpdl_cuda_batchnorm_forward_inference(xd, x, gamma, beta, running_mean, running_var, eps,
                        y, stream)
         hpdl_status hpdl_cuda_batchnorm_forward_inference_<t>(xd, x, gamma, beta, running_mean, running_var,
                        eps, y, stream)
         hpdl_status hpdl_cuda_batchnorm_forward_training(xd, x, gamma, beta, momentum, eps, running_mean,
                        running_var, y, save_mean, save_invstd, stream)
         hpdl_status hpdl_cuda_batchnorm_forward_training_<t>(xd, x, gamma, beta, momentum, eps, running_mean,
                        running_var, y, save_mean, save_invstd, stream)
         hpdl_status hpdl_cuda_conv2d_backward_data(p, yd, dy, w, xd, dx, stream)
         hpdl_status hpdl_cuda_conv2d_backward_data_<t>(p, yd, dy, w, xd, dx, stream)
         hpdl_status hpdl_cuda_conv2d_backward_data_algo(algo, p, yd, dy, w, xd, dx, stream)
         hpdl_status hpdl_cuda_conv2d_backward_data_algo_<t>(algo, p, yd, dy, w, xd, dx, stream)
         hpdl_status hpdl_cuda_conv2d_backward_filter(p, xd, x, yd, dy, dw, stream)
         hpdl_status hpdl_cuda_conv2d_backward_filter_<t>(p, xd, x, yd, dy, dw, stream)
         hpdl_status hpdl_cuda_conv2d_backward_filter_algo(algo, p, xd, x, yd, dy, dw, stream)
         hpdl_status hpdl_cuda_conv2d_backward_filter_algo_<t>(algo, p, xd, x, yd, dy, dw, stream)
         hpdl_status hpdl_cuda_conv2d_bias_add(yd, y, bias, stream)
         hpdl_status hpdl_cuda_conv2d_bias_add_<t>(yd, y, bias, stream)
         hpdl_status hpdl_cuda_conv2d_bias_grad(yd, dy, dbias, stream)
         hpdl_status hpdl_cuda_conv2d_bias_grad_<t>(yd, dy, dbias, stream)
         hpdl_status hpdl_cuda_conv2d_forward(p, xd, x, w, yd, y, stream)
         hpdl_status hpdl_cuda_conv2d_forward_<t>(p, xd, x, w, yd, y, stream)
         hpdl_status hpdl_cuda_conv2d_forward_algo(algo, p, xd, x, w, yd, y, stream)
         hpdl_status hpdl_cuda_conv2d_forward_algo_<t>(algo, p, xd, x, w, yd, y, stream)
         hpdl_status hpdl_cuda_global_avgpool_backward(xd, dy, dx, stream)
         hpdl_status hpdl_cuda_global_avgpool_backward_<t>(xd, dy, dx, stream)
         hpdl_status hpdl_cuda_global_avgpool_forward(xd, x, y, stream)
         hpdl_status hpdl_cuda_global_avgpool_forward_<t>(xd, x, y, stream)
         hpdl_status hpdl_cuda_maxpool2d_backward(p, xd, x, yd, dy, dx, stream)
         hpdl_status hpdl_cuda_maxpool2d_backward_<t>(p, xd, x, yd, dy, dx, stream)
         hpdl_status hpdl_cuda_maxpool2d_forward(p, xd, x, yd, y, stream)
         hpdl_status hpdl_cuda_maxpool2d_forward_<t>(p, xd, x, yd, y, stream)
       optimisers
         hpdl_status hpdl_cuda_adamw(n, w, grad, m, v, d_step, beta1, beta2, eps, weight_decay, stream)
         hpdl_status hpdl_cuda_adamw_<t>(n, w, grad, m, v, d_step, beta1, beta2, eps, weight_decay, stream)
         hpdl_status hpdl_cuda_flag_nonfinite(n, x, d_flag, stream)
         hpdl_status hpdl_cuda_flag_nonfinite_<t>(n, x, d_flag, stream)
         hpdl_status hpdl_cuda_sgd_momentum(n, w, grad, velocity, d_step, momentum, weight_decay, nesterov,
                        stream)
         hpdl_status hpdl_cuda_sgd_momentum_<t>(n, w, grad, velocity, d_step, momentum, weight_decay,
                        nesterov, stream)
         hpdl_status hpdl_optim_step_make(lr, beta1, beta2, step, out)
       MLP training
         hpdl_status hpdl_cuda_dataset_create(d, src, placement)
         void hpdl_cuda_dataset_destroy(d)
         hpdl_status hpdl_cuda_dataset_shuffle(d, seed, stream)
         hpdl_status hpdl_cuda_dataset_upload(d, n_images, features, images, n_labels, labels, placement,
                        chunk_rows)
         hpdl_status hpdl_cuda_mlp_accuracy(g, n, X, labels, acc)
         hpdl_status hpdl_cuda_mlp_accuracy_<t>(g, n, X, labels, acc)
         hpdl_status hpdl_cuda_mlp_create(g, m, max_batch)
         hpdl_status hpdl_cuda_mlp_create_<t>(g, m, max_batch)
         void hpdl_cuda_mlp_destroy(g)
         void hpdl_cuda_mlp_destroy_<t>(g)
         hpdl_status hpdl_cuda_mlp_download(g, m)
         hpdl_status hpdl_cuda_mlp_download_<t>(g, m)
         hpdl_status hpdl_cuda_mlp_evaluate(g, d, out)
         hpdl_status hpdl_cuda_mlp_evaluate_<t>(g, d, out)
         hpdl_status hpdl_cuda_mlp_scaler(g, scale, skipped_steps)
         hpdl_status hpdl_cuda_mlp_scaler_<t>(g, scale, skipped_steps)
         hpdl_status hpdl_cuda_mlp_train_epoch(g, d, batch, lr, l2, seed, out)
         hpdl_status hpdl_cuda_mlp_train_epoch_<t>(g, d, batch, lr, l2, seed, out)
         hpdl_status hpdl_cuda_mlp_train_step(g, batch, X, labels, lr, l2, loss)
         hpdl_status hpdl_cuda_mlp_train_step_<t>(g, batch, X, labels, lr, l2, loss)
         hpdl_status hpdl_cuda_mlp_upload(g, m)
         hpdl_status hpdl_cuda_mlp_upload_<t>(g, m)
         hpdl_status hpdl_cuda_softmax_xent_<t>(rows, cols, logits, ld, labels, grad, ldg, d_loss,
                        stream)
         void hpdl_nvml_sampler_finish(s, out)
         hpdl_status hpdl_nvml_sampler_start(s, device, period_ms, csv_path)
         void hpdl_nvml_sampler_stop(s, mean_gpu, mean_mem, samples)
       several GPUs
         hpdl_status hpdl_cuda_deep_linear_create(m, depth, dim, batch, first, n_devices, allow_virtual)
         hpdl_status hpdl_cuda_deep_linear_create_1f1b(m, depth, dim, batch, micro, first, n_devices,
                        allow_virtual)
         void hpdl_cuda_deep_linear_destroy(m)
         hpdl_status hpdl_cuda_deep_linear_get_batch(m, host_x, host_target)
         hpdl_status hpdl_cuda_deep_linear_get_weights(m, layer, host)
         hpdl_status hpdl_cuda_deep_linear_init(m, seed)
         hpdl_status hpdl_cuda_deep_linear_loss(m, loss)
         size_t hpdl_cuda_deep_linear_peak_act_bytes(m, g, micro)
         void hpdl_cuda_deep_linear_print_map(m, f)
         hpdl_status hpdl_cuda_deep_linear_profile(m, micro, lr, step_ms, busy_ms)
         hpdl_status hpdl_cuda_deep_linear_random_batch(m, seed)
         int hpdl_cuda_deep_linear_slices(micro)
         hpdl_status hpdl_cuda_deep_linear_step(m, micro, lr, origin)
         int hpdl_cuda_device_count()
         hpdl_status hpdl_cuda_devices_open(set, n, allow_virtual)
         hpdl_status hpdl_cuda_devices_print(f)
         hpdl_status hpdl_cuda_enable_peer(a, b, enabled)
         hpdl_status hpdl_cuda_matpow_<t>(n, power, A, lda, out, ldo, algo, stream)
         hpdl_status hpdl_cuda_matpow_naive_<t>(n, power, A, lda, out, ldo, algo, stream)
         hpdl_status hpdl_cuda_matpow_naive_ws_<t>(n, power, A, lda, out, ldo, algo, ws, stream)
         size_t hpdl_cuda_matpow_workspace_bytes(n, elem_bytes)
         hpdl_status hpdl_cuda_matpow_ws_<t>(n, power, A, lda, out, ldo, algo, ws, stream)
         hpdl_status hpdl_cuda_mem_in_use(device, used, total)
         hpdl_status hpdl_cuda_move(set, dst, dst_dev, src, src_dev, bytes, stage, stage_bytes, stream,
                        stats)
         hpdl_status hpdl_cuda_powsum_create_<t>(p, k, n, power, n_gpus, allow_virtual)
         void hpdl_cuda_powsum_destroy(p)
         hpdl_status hpdl_cuda_powsum_download_<t>(p, host_out)
         hpdl_status hpdl_cuda_powsum_run_<t>(p, naive, algo, origin)
         hpdl_status hpdl_cuda_powsum_upload_<t>(p, host_mats)
         hpdl_status hpdl_cuda_rowpow_create_<t>(p, n, n_gpus, allow_virtual)
         void hpdl_cuda_rowpow_destroy(p)
         hpdl_status hpdl_cuda_rowpow_run_<t>(p, power, A, lda, out, ldo, algo, origin)
         hpdl_status hpdl_cuda_sum_of_powers_<t>(k, host_mats, n, power, n_gpus, host_out, algo)
       CNN training (the GPU backend of hpdl_cnn; <t> is f32, f64, or f16 and bf16: mixed precision)
         hpdl_status hpdl_cuda_augment_crop_flip(xd, elem_size, x, pad, flip, seed, first_image, y, stream)
         hpdl_status hpdl_cuda_cnn_create(g, conv_algo, stream)
         hpdl_status hpdl_cuda_cnn_create_<t>(g, conv_algo, stream)
         void hpdl_cuda_cnn_destroy(g)
         hpdl_status hpdl_cuda_cnn_layer_times(g, r, batch, X, reps, layer_ms, whole_ms)
         hpdl_status hpdl_cuda_cnn_loss_scale(g, scale)
         hpdl_status hpdl_cuda_cnn_mixed_difference(net, opt, params, state, batch, X, labels, steps,
                        loss_difference, param_difference)
         hpdl_status hpdl_cuda_cnn_results(g, loss_sum, skipped)
         hpdl_status hpdl_cuda_cnn_set_loss_scale(g, scale)
         hpdl_status hpdl_cuda_cnn_train_batch(g, r, batch, X, labels)
         hpdl_status hpdl_cuda_cnn_train_batch_<t>(g, r, batch, X, labels)
         hpdl_status hpdl_cuda_cnn_train_epoch(g, r, n, X, labels, seed)
         hpdl_status hpdl_cuda_cnn_train_epoch_<t>(g, r, n, X, labels, seed)
         hpdl_status hpdl_cuda_cnn_twin_difference(net, opt, params, state, batch, X, labels, steps, difference,
                        layer)
       int8 quantization
         hpdl_status hpdl_cuda_quant_cnn_accuracy(g, n, X, labels, accuracy, stream)
         hpdl_status hpdl_cuda_quant_cnn_create(g, q, max_batch)
         void hpdl_cuda_quant_cnn_destroy(g)
         hpdl_status hpdl_cuda_quant_cnn_forward(g, batch, X, stream)
         hpdl_status hpdl_cuda_quant_cnn_logits(g, batch, X, logits, stream)
         hpdl_status hpdl_cuda_quant_conv2d_algo_i8(algo, p, xd, x, zx, w, o, yd, y, stream)
         hpdl_status hpdl_cuda_quant_conv2d_i8(p, xd, x, zx, w, o, yd, y, stream)
         hpdl_status hpdl_cuda_quant_gemm_i8(algo, M, N, K, A, lda, za, B, ldb, zb, C, ldc, stream)
         hpdl_status hpdl_cuda_quant_gemm_nt_i8(algo, M, N, K, A, lda, za, Bt, ldb, zb, C, ldc, stream)
         hpdl_status hpdl_cuda_quant_gemm_requant_i8(algo, M, N, K, A, lda, za, B, ldb, zb, o, C, ldc,
                        stream)
         hpdl_status hpdl_cuda_quant_gemm_requant_nt_i32(algo, M, N, K, A, lda, za, Bt, ldb, zb, o, C,
                        ldc, stream)
         hpdl_status hpdl_cuda_quant_gemm_requant_nt_i8(algo, M, N, K, A, lda, za, Bt, ldb, zb, o, C,
                        ldc, stream)
         hpdl_status hpdl_cuda_quant_mlp_accuracy(g, n, X, labels, accuracy, stream)
         hpdl_status hpdl_cuda_quant_mlp_create(g, q, max_batch, algo)
         void hpdl_cuda_quant_mlp_destroy(g)
         hpdl_status hpdl_cuda_quant_mlp_forward(g, batch, X, stream)
         hpdl_status hpdl_cuda_quant_output_create(d, o, n)
         void hpdl_cuda_quant_output_destroy(d)
         hpdl_status hpdl_cuda_quant_quantize_f32(rows, cols, X, ldx, p, Q, ldq, stream)
         hpdl_status hpdl_cuda_quant_transpose_i8(rows, cols, X, ldx, Y, ldy, stream)
         const char * hpdl_quant_algo_name(a)
       FP8 (e4m3, e5m2; <t>: f32, f16, bf16)
         hpdl_status hpdl_cuda_fp8_cast_e4m3_<t>(x, n, scale, q, amax, stream)
         hpdl_status hpdl_cuda_fp8_cast_e5m2_<t>(x, n, scale, q, amax, stream)
         hpdl_status hpdl_cuda_fp8_cast_transpose_e4m3_f32(rows, cols, x, ldx, scale, q, ldq, qt, ldqt, amax,
                        stream)
         hpdl_status hpdl_cuda_fp8_cast_transpose_e5m2_f32(rows, cols, x, ldx, scale, q, ldq, qt, ldqt, amax,
                        stream)
         hpdl_status hpdl_cuda_fp8_gemm_<t>(M, N, K, A, fa, lda, B, fb, ldb, s, C, ldc, stream)
       FP8 training of the MLP (delayed scaling; the f32 model's functions, with an FP8 step)
         hpdl_status hpdl_cuda_mlp_accuracy_fp8(g, n, X, labels, acc)
         hpdl_status hpdl_cuda_mlp_create_fp8(g, m, max_batch)
         void hpdl_cuda_mlp_destroy_fp8(g)
         hpdl_status hpdl_cuda_mlp_download_fp8(g, m)
         hpdl_status hpdl_cuda_mlp_evaluate_fp8(g, d, out)
         hpdl_status hpdl_cuda_mlp_fp8_download_scaling(g, s)
         hpdl_status hpdl_cuda_mlp_fp8_upload_scaling(g, s)
         hpdl_status hpdl_cuda_mlp_scaler_fp8(g, scale, skipped_steps)
         hpdl_status hpdl_cuda_mlp_train_epoch_fp8(g, d, batch, lr, l2, seed, out)
         hpdl_status hpdl_cuda_mlp_train_step_fp8(g, batch, X, labels, lr, l2, loss)
         hpdl_status hpdl_cuda_mlp_upload_fp8(g, m)

   CHANGELOG
       CHANGELOG.md; this version: v0.3.0 (2026-11-26): GPU optimisers, CNN training by CUDA graphs, convolution
*/
#ifndef HPDL_CUDA_CUH
#define HPDL_CUDA_CUH

#include "hpdl.h"

#include <dlfcn.h>   /* NVML loaded at run time */
#include <pthread.h> /* the NVML sampler's thread */

#include <cooperative_groups.h>
#include <cublas_v2.h>
#include <cuda.h> /* CUtensorMap and its enums (types only: the driver call is fetched at run time) */
#include <cudaTypedefs.h>
#ifdef HPDL_HAVE_CUDNN
#include <cudnn.h>
#endif
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#ifndef HPDL_NO_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

/* Pay only for what you use. Every function of this header is a function
   template with one unused, defaulted parameter (HPDL_LAZY). C++ compiles a
   template only where it is used, so a file that calls hpdl_cuda_gemm_f32
   builds the f32 GEMM kernels and no others, and a file that calls nothing
   builds none. An ordinary function would build every kernel it can reach,
   in every file that includes the header: minutes of nvcc per file.
   Callers write hpdl_cuda_gemm_f32(...) as usual; an address needs the
   brackets: &hpdl_cuda_gemm_f32<>. */
#define HPDL_LAZY template <int hpdl__lazy = 0> static inline
#define HPDL_CUDA_API HPDL_LAZY

/* ------------------------------------------------------------------------ */
/* Checks                                                                    */
/* ------------------------------------------------------------------------ */

/* The words for a machine without a GPU, in the check macros and in every
   bench's one line ("gemm: skipped, no CUDA GPU (or no driver); nothing
   measured", exit status 1). */
#define HPDL_CUDA_NO_GPU "no CUDA GPU (or no driver)"

/* What the check macros add to the runtime's words when the error means that
   there is no GPU to run on: without a driver the runtime calls it an
   "insufficient driver", which reads like a version problem. */
HPDL_LAZY const char *hpdl__cuda_error_hint(cudaError_t e) {
    return e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver || e == cudaErrorStubLibrary
               ? ": " HPDL_CUDA_NO_GPU : "";
}

/* For examples and benches: print the failing call with file:line and exit. */
#define HPDL_CUDA_CHECK(call)                                                 \
    do {                                                                      \
        cudaError_t hpdl__e = (call);                                         \
        if (hpdl__e != cudaSuccess) {                                         \
            fprintf(stderr, "%s:%d: CUDA error %s (%s) in %s%s\n", __FILE__,  \
                    __LINE__, cudaGetErrorName(hpdl__e),                      \
                    cudaGetErrorString(hpdl__e), #call,                       \
                    hpdl__cuda_error_hint(hpdl__e));                          \
            exit(EXIT_FAILURE);                                               \
        }                                                                     \
    } while (0)

#define HPDL_CUBLAS_CHECK(call)                                               \
    do {                                                                      \
        cublasStatus_t hpdl__b = (call);                                      \
        if (hpdl__b != CUBLAS_STATUS_SUCCESS) {                               \
            fprintf(stderr, "%s:%d: cuBLAS error %s in %s\n", __FILE__,       \
                    __LINE__, cublasGetStatusName(hpdl__b), #call);           \
            exit(EXIT_FAILURE);                                               \
        }                                                                     \
    } while (0)

/* For library code: report the failing call and return HPDL_ERR_CUDA. */
#define HPDL_CUDA_TRY(call)                                                   \
    do {                                                                      \
        cudaError_t hpdl__e = (call);                                         \
        if (hpdl__e != cudaSuccess) {                                         \
            fprintf(stderr, "%s:%d: CUDA error %s in %s%s\n", __FILE__,       \
                    __LINE__, cudaGetErrorString(hpdl__e), #call,             \
                    hpdl__cuda_error_hint(hpdl__e));                          \
            return HPDL_ERR_CUDA;                                             \
        }                                                                     \
    } while (0)

/* After a launch: a bad configuration shows up only here. */
#define HPDL_CUDA_TRY_LAUNCH() HPDL_CUDA_TRY(cudaGetLastError())

/* Element types: the CUDA type with a storage type's bits (hpdl_f16 is
   __half on the GPU) and the type sums are carried in (f32 but for f64).
   The type-generic front ends (hpdl_cuda_gemm, ...) are built on these. */
template <typename T> struct hpdl__dev { typedef T type; };
template <> struct hpdl__dev<hpdl_f16> { typedef __half type; };
template <> struct hpdl__dev<hpdl_bf16> { typedef __nv_bfloat16 type; };
template <typename T> struct hpdl__acc { typedef float type; };
template <> struct hpdl__acc<double> { typedef double type; };
template <typename T> struct hpdl__is_float_type { enum { value = 0 }; };
template <> struct hpdl__is_float_type<float> { enum { value = 1 }; };
template <> struct hpdl__is_float_type<double> { enum { value = 1 }; };
template <> struct hpdl__is_float_type<__half> { enum { value = 1 }; };
template <> struct hpdl__is_float_type<__nv_bfloat16> { enum { value = 1 }; };

/* True when a usable GPU is present; tests skip when it is not. */
HPDL_CUDA_API int hpdl_cuda_available(void) {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
        cudaGetLastError(); /* clear the sticky "no driver" error */
        return 0;
    }
    return count > 0;
}

/* ------------------------------------------------------------------------ */
/* Device query                                                              */
/* ------------------------------------------------------------------------ */

/* A GPU's properties as hpdl_cuda_device_query fills them: name, SM count, compute capability, memory
   (total, and free when queried), L2 size and the shared memory a block can opt in to. */
typedef struct hpdl_cuda_device_info {
    char name[256];
    int sm_count, cc_major, cc_minor;
    size_t global_mem, free_mem, l2_bytes, smem_per_block_optin;
    double mem_bandwidth_gbs; /* from clock and bus width: a datasheet-like peak */
} hpdl_cuda_device_info;

/* Fills *info for CUDA device `device`, switching the current device to it for the free-memory query
   and back. HPDL_ERR_INVALID for a NULL info, HPDL_ERR_CUDA when a runtime call fails. */
HPDL_CUDA_API hpdl_status hpdl_cuda_device_query(int device, hpdl_cuda_device_info *info) {
    cudaDeviceProp p;
    size_t free_b = 0, total_b = 0;
    int clock_khz = 0, bus_bits = 0, current = 0;
    if (!info) return HPDL_ERR_INVALID;
    HPDL_CUDA_TRY(cudaGetDeviceProperties(&p, device));
    HPDL_CUDA_TRY(cudaGetDevice(&current));
    HPDL_CUDA_TRY(cudaSetDevice(device));
    HPDL_CUDA_TRY(cudaMemGetInfo(&free_b, &total_b));
    HPDL_CUDA_TRY(cudaSetDevice(current));
    cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, device);
    cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device);
    snprintf(info->name, sizeof info->name, "%s", p.name);
    info->sm_count = p.multiProcessorCount;
    info->cc_major = p.major;
    info->cc_minor = p.minor;
    info->global_mem = p.totalGlobalMem;
    info->free_mem = free_b;
    info->l2_bytes = (size_t)p.l2CacheSize;
    info->smem_per_block_optin = p.sharedMemPerBlockOptin;
    info->mem_bandwidth_gbs = 2.0 * clock_khz * 1e3 * (bus_bits / 8.0) / 1e9; /* DDR */
    return HPDL_OK;
}

/* A bench's context for every CSV it writes afterwards (hpdl_csv_set_context):
   hpdl_csv_context_make's lines with the device named: GPU, compute
   capability, the driver's and the runtime's CUDA versions. */
HPDL_CUDA_API hpdl_status hpdl_cuda_csv_context(int argc, char **argv, int device) {
    static char text[4096];
    char gpu[512];
    hpdl_cuda_device_info info;
    int driver = 0, runtime = 0;
    hpdl_status s;
    if ((s = hpdl_cuda_device_query(device, &info)) != HPDL_OK) return s;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    snprintf(gpu, sizeof gpu, "%s (sm_%d%d), driver CUDA %d.%d, runtime CUDA %d.%d", info.name, info.cc_major,
             info.cc_minor, driver / 1000, driver % 1000 / 10, runtime / 1000, runtime % 1000 / 10);
    if ((s = hpdl_csv_context_make(argc, argv, gpu, text, sizeof text)) != HPDL_OK) return s;
    hpdl_csv_set_context(text);
    return HPDL_OK;
}

/* "NVIDIA H100 80GB HBM3" -> "h100-80gb-hbm3": the bench/results/<gpu>/ folder. */
HPDL_CUDA_API void hpdl_cuda_device_slug(const char *name, char *slug, size_t size) {
    size_t o = 0;
    const char *p = name;
    if (size == 0) return;
    if (strncmp(p, "NVIDIA ", 7) == 0) p += 7;
    for (; *p && o + 1 < size; p++) {
        char c = *p;
        if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
        if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) slug[o++] = c;
        else if (o > 0 && slug[o - 1] != '-') slug[o++] = '-';
    }
    while (o > 0 && slug[o - 1] == '-') o--;
    slug[o] = '\0';
}

/* ------------------------------------------------------------------------ */
/* Buffers                                                                   */
/* ------------------------------------------------------------------------ */

/* cudaMalloc of `bytes` into *ptr (*ptr = NULL for 0 bytes or on failure); free with hpdl_cuda_free.
   HPDL_ERR_INVALID for a NULL ptr, HPDL_ERR_NOMEM when the allocation fails. */
HPDL_CUDA_API hpdl_status hpdl_cuda_alloc(void **ptr, size_t bytes) {
    if (!ptr) return HPDL_ERR_INVALID;
    *ptr = NULL;
    if (bytes == 0) return HPDL_OK;
    if (cudaMalloc(ptr, bytes) != cudaSuccess) {
        cudaGetLastError();
        *ptr = NULL;
        return HPDL_ERR_NOMEM;
    }
    return HPDL_OK;
}

/* Page-locked host memory: needed for truly asynchronous copies. */
HPDL_CUDA_API hpdl_status hpdl_cuda_alloc_pinned(void **ptr, size_t bytes) {
    if (!ptr) return HPDL_ERR_INVALID;
    *ptr = NULL;
    if (bytes == 0) return HPDL_OK;
    if (cudaMallocHost(ptr, bytes) != cudaSuccess) {
        cudaGetLastError();
        *ptr = NULL;
        return HPDL_ERR_NOMEM;
    }
    return HPDL_OK;
}

/* Frees device or managed memory (hpdl_cuda_alloc, hpdl_cuda_alloc_managed); NULL does nothing. */
HPDL_CUDA_API void hpdl_cuda_free(void *ptr) { if (ptr) cudaFree(ptr); }
/* Frees hpdl_cuda_alloc_pinned's host memory; NULL does nothing. */
HPDL_CUDA_API void hpdl_cuda_free_pinned(void *ptr) { if (ptr) cudaFreeHost(ptr); }

/* Copies `bytes` from host src to device dst, queued on `stream` (asynchronous to the host only from
   pinned memory). HPDL_ERR_INVALID for a NULL pointer with bytes > 0, HPDL_ERR_CUDA if not queued. */
HPDL_CUDA_API hpdl_status hpdl_cuda_to_device(void *dst, const void *src, size_t bytes, cudaStream_t stream) {
    if ((!dst || !src) && bytes) return HPDL_ERR_INVALID;
    if (bytes) HPDL_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream));
    return HPDL_OK;
}

/* Copies `bytes` from device src to host dst, queued on `stream`: dst is ready once the stream is
   synchronised. HPDL_ERR_INVALID for a NULL pointer with bytes > 0, HPDL_ERR_CUDA if not queued. */
HPDL_CUDA_API hpdl_status hpdl_cuda_to_host(void *dst, const void *src, size_t bytes, cudaStream_t stream) {
    if ((!dst || !src) && bytes) return HPDL_ERR_INVALID;
    if (bytes) HPDL_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream));
    return HPDL_OK;
}

/* Fills a device buffer with one byte value, e.g. 0xff to poison outputs
   (every f32/f64/f16 element becomes NaN) before a test writes them. */
HPDL_CUDA_API hpdl_status hpdl_cuda_poison(void *ptr, size_t bytes) {
    if (!ptr && bytes) return HPDL_ERR_INVALID;
    if (bytes) HPDL_CUDA_TRY(cudaMemset(ptr, 0xff, bytes));
    return HPDL_OK;
}

/* ------------------------------------------------------------------------ */
/* Event timer                                                               */
/* ------------------------------------------------------------------------ */

/* Two events and the stream they are recorded on: hpdl_cuda_timer_start, then hpdl_cuda_timer_stop_ms
   times the work queued on that stream between the two calls. */
typedef struct hpdl_cuda_timer {
    cudaEvent_t start, stop;
    cudaStream_t stream;
} hpdl_cuda_timer;

/* Makes the timer's two events and keeps `stream` for them; free with hpdl_cuda_timer_destroy.
   HPDL_ERR_INVALID for a NULL t, HPDL_ERR_CUDA when an event cannot be made. */
HPDL_CUDA_API hpdl_status hpdl_cuda_timer_create(hpdl_cuda_timer *t, cudaStream_t stream) {
    if (!t) return HPDL_ERR_INVALID;
    t->stream = stream;
    HPDL_CUDA_TRY(cudaEventCreate(&t->start));
    HPDL_CUDA_TRY(cudaEventCreate(&t->stop));
    return HPDL_OK;
}

/* Destroys the two events that hpdl_cuda_timer_create made; t must not be NULL. */
HPDL_CUDA_API void hpdl_cuda_timer_destroy(hpdl_cuda_timer *t) {
    cudaEventDestroy(t->start);
    cudaEventDestroy(t->stop);
}

/* Records the start event on the timer's stream; does not wait. */
HPDL_CUDA_API void hpdl_cuda_timer_start(hpdl_cuda_timer *t) { cudaEventRecord(t->start, t->stream); }

/* Waits for the stop event; returns the elapsed time in milliseconds. */
HPDL_CUDA_API float hpdl_cuda_timer_stop_ms(hpdl_cuda_timer *t) {
    float ms = 0.0f;
    cudaEventRecord(t->stop, t->stream);
    cudaEventSynchronize(t->stop);
    cudaEventElapsedTime(&ms, t->start, t->stop);
    return ms;
}

/* ------------------------------------------------------------------------ */
/* NVTX ranges (visible in Nsight Systems / Compute)                         */
/* ------------------------------------------------------------------------ */

#ifndef HPDL_NO_NVTX
#define HPDL_NVTX_PUSH(name) nvtxRangePushA(name)
#define HPDL_NVTX_POP() nvtxRangePop()
#else
#define HPDL_NVTX_PUSH(name) ((void)0)
#define HPDL_NVTX_POP() ((void)0)
#endif

/* ------------------------------------------------------------------------ */
/* Timing helpers for benches                                                */
/* ------------------------------------------------------------------------ */

/* Overwrites a buffer larger than L2 so the next run starts with a cold cache
   (what a kernel sees inside a real program, not the previous run's data). */
typedef struct hpdl_cuda_l2_flusher { void *buf; size_t bytes; } hpdl_cuda_l2_flusher;

/* Allocates a device buffer of twice the current device's L2 size into f; free with
   hpdl_cuda_l2_flusher_destroy. HPDL_ERR_INVALID for a NULL f, HPDL_ERR_CUDA or HPDL_ERR_NOMEM. */
HPDL_CUDA_API hpdl_status hpdl_cuda_l2_flusher_create(hpdl_cuda_l2_flusher *f) {
    int device = 0, l2 = 0;
    if (!f) return HPDL_ERR_INVALID;
    HPDL_CUDA_TRY(cudaGetDevice(&device));
    HPDL_CUDA_TRY(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
    f->bytes = 2 * (size_t)l2;
    return hpdl_cuda_alloc(&f->buf, f->bytes);
}

/* Queues a memset of the whole buffer on `stream`, evicting earlier data from L2; its error is not
   checked. Does nothing when f->buf is NULL; f must not be NULL. */
HPDL_CUDA_API void hpdl_cuda_l2_flush(hpdl_cuda_l2_flusher *f, cudaStream_t stream) {
    if (f->buf) cudaMemsetAsync(f->buf, (int)(f->bytes & 0x7f), f->bytes, stream);
}

/* Frees what hpdl_cuda_l2_flusher_create allocated and sets f->buf to NULL; f must not be NULL. */
HPDL_CUDA_API void hpdl_cuda_l2_flusher_destroy(hpdl_cuda_l2_flusher *f) { hpdl_cuda_free(f->buf); f->buf = NULL; }

/* A piece of work to time: queues it on `stream`, ctx being its own data (hpdl_cuda_time_median_ms,
   hpdl_cuda_time_interleaved_ms). */
typedef void (*hpdl_cuda_work_fn)(void *ctx, cudaStream_t stream);

/* Holds a stream (a host function in it) until the host has queued what
   is to be timed, or limit_s has passed: a queue that fills would
   otherwise block the host behind the gate it has yet to open. */
typedef struct hpdl__timing_gate { int open; double limit_s; } hpdl__timing_gate;

static void CUDART_CB hpdl__timing_gate_wait(void *gate) {
    hpdl__timing_gate *g = (hpdl__timing_gate *)gate;
    const double end = hpdl_time_now() + g->limit_s;
    while (!__atomic_load_n(&g->open, __ATOMIC_ACQUIRE) && hpdl_time_now() < end) {
    }
}

/* Median times in ms of n pieces of work timed in turns: `reps` rounds, each
   running every runs[j](ctxs[j]) once between two events (L2 flushed before
   each run when a flusher is given), after `warmup` untimed rounds. Taking
   turns gives every piece the same clocks: a GPU near its power limit slows
   down over seconds, which would bias a comparison of pieces timed one after
   the other. Round i starts with piece i % n, so every piece runs after each
   of the others equally often: what ran just before moves a kernel's time
   by up to 1 % (H100, f16 4096^3 GEMM: the same kernel timed first in a
   round of 14, after a slower mma.sync kernel, 1 % slower than in third
   place). Events are read at the end: no host synchronisation between runs.
   The rounds start once all of them are queued (hpdl__timing_gate, at most
   0.2 s): where a run's host work outlasts the GPU's (cuDNN's descriptors
   for a 30 us layer), the GPU would otherwise idle inside the next run's
   interval (cuDNN in turns read 0.245 ms, alone 0.063: H100, 2026-11-26). */
HPDL_CUDA_API hpdl_status hpdl_cuda_time_interleaved_ms(int n, const hpdl_cuda_work_fn *runs, void *const *ctxs,
                                                   cudaStream_t stream, int warmup, int reps,
                                                   hpdl_cuda_l2_flusher *flush, double *median_ms) {
    cudaEvent_t *ev;
    double *ms;
    hpdl_stats st;
    hpdl_status s = HPDL_OK;
    hpdl__timing_gate gate = {0, 0.2};
    int i, j, k, gated;
    if (n <= 0 || !runs || !ctxs || !median_ms || reps <= 0 || warmup < 0) return HPDL_ERR_INVALID;
    for (j = 0; j < n; j++)
        if (!runs[j]) return HPDL_ERR_INVALID;
    ev = (cudaEvent_t *)hpdl_alloc(2 * (size_t)n * reps, sizeof *ev);
    ms = (double *)hpdl_alloc((size_t)reps, sizeof *ms);
    if (!ev || !ms) { HPDL_FREE(ev); HPDL_FREE(ms); return HPDL_ERR_NOMEM; }
    for (i = 0; i < 2 * n * reps; i++) cudaEventCreate(&ev[i]);
    for (i = 0; i < warmup; i++)
        for (j = 0; j < n; j++) runs[j](ctxs[j], stream);
    gated = cudaLaunchHostFunc(stream, hpdl__timing_gate_wait, &gate) == cudaSuccess;
    if (!gated) cudaGetLastError(); /* timed as queued */
    for (i = 0; i < reps; i++)
        for (k = 0; k < n; k++) {
            cudaEvent_t *e;
            j = (i + k) % n; /* round i starts with piece i % n */
            e = &ev[2 * ((size_t)j * reps + i)];
            if (flush) hpdl_cuda_l2_flush(flush, stream);
            cudaEventRecord(e[0], stream);
            runs[j](ctxs[j], stream);
            cudaEventRecord(e[1], stream);
        }
    if (gated) __atomic_store_n(&gate.open, 1, __ATOMIC_RELEASE);
    if (cudaStreamSynchronize(stream) != cudaSuccess || cudaGetLastError() != cudaSuccess) s = HPDL_ERR_CUDA;
    for (j = 0; j < n && s == HPDL_OK; j++) {
        for (i = 0; i < reps; i++) {
            float t = 0.0f;
            cudaEventElapsedTime(&t, ev[2 * ((size_t)j * reps + i)], ev[2 * ((size_t)j * reps + i) + 1]);
            ms[i] = t;
        }
        s = hpdl_stats_compute(ms, reps, &st);
        if (s == HPDL_OK) median_ms[j] = st.median;
    }
    for (i = 0; i < 2 * n * reps; i++) cudaEventDestroy(ev[i]);
    HPDL_FREE(ev);
    HPDL_FREE(ms);
    return s;
}

/* Median time in ms of `reps` runs of run(ctx) on `stream` after `warmup`
   untimed runs (hpdl_cuda_time_interleaved_ms with one piece of work). */
HPDL_CUDA_API hpdl_status hpdl_cuda_time_median_ms(hpdl_cuda_work_fn run, void *ctx, cudaStream_t stream,
                                              int warmup, int reps, hpdl_cuda_l2_flusher *flush,
                                              double *median_ms) {
    return hpdl_cuda_time_interleaved_ms(1, &run, &ctx, stream, warmup, reps, flush, median_ms);
}

/* ======================================================================== */
/* VECTOR ADD                                                               */
/* ======================================================================== */
/* ------------------------------------------------------------------------ */
/* Vector add c = a + b: the four launch configurations of the CUDA workflow */
/* (CPU twin: hpdl_vec_add_<type> in hpdl.h)                                 */
/* ------------------------------------------------------------------------ */

/* From one thread doing all the work to a grid that fills every SM. All four
   give the same result; only the speed differs (bench/vecadd measures it). */
typedef enum hpdl_vecadd_config {
    HPDL_VECADD_ONE_THREAD = 0, /* (a) 1 block x 1 thread: a plain loop on the GPU */
    HPDL_VECADD_ONE_BLOCK,      /* (b) 1 block x 256 threads: one SM at work */
    HPDL_VECADD_MANY_BLOCKS,    /* (c) ceil(n/256) blocks x 256: one element a thread */
    HPDL_VECADD_GRID_STRIDE     /* (d) a grid sized from the SM count (see
                                   HPDL_VECADD_WAVES); each thread loops over
                                   the array, moving 16 bytes per load */
} hpdl_vecadd_config;

#define HPDL_VECADD_CONFIG_COUNT 4
#define HPDL_VECADD_THREADS 256 /* threads per block of (b), (c) and (d) */

/* (d) launches at most this many waves of the blocks that fit on all SMs at
   once (fewer when n needs fewer). On an H100 at 100M floats, 1 wave (the
   textbook persistent grid) moved 2.89 TB/s, 4 waves 2.91, 16 2.96, 32 2.99,
   64 3.01 and 128 (one 16-byte pack per thread there) 3.02, against 2.94 for
   a device-to-device copy: short-lived blocks, started in address order,
   seem to keep DRAM accesses together (notes/vecadd.md). Define it before
   including to change it; any value gives the same result. */
#ifndef HPDL_VECADD_WAVES
#define HPDL_VECADD_WAVES 128
#endif

/* The configuration's short name ("one-thread", ..., "grid-stride"), a static string; "unknown" for
   any other value. */
HPDL_CUDA_API const char *hpdl_vecadd_config_name(hpdl_vecadd_config c) {
    switch (c) {
    case HPDL_VECADD_ONE_THREAD: return "one-thread";
    case HPDL_VECADD_ONE_BLOCK: return "one-block";
    case HPDL_VECADD_MANY_BLOCKS: return "many-blocks";
    case HPDL_VECADD_GRID_STRIDE: return "grid-stride";
    }
    return "unknown";
}

/* An "Op" is what HPDL_DEFINE_CUDA_VECADD generates per type, hpdl__vecadd_op<DEV_T>:
   value_type (the device element type) and a static __device__ add(). */

/* Grid-stride loop over elements, 64-bit indices. The scalar configurations
   differ only in the grid they launch it with: (a) 1x1 walks the whole
   array, (b) 1x256 strides by 256, (c) one element a thread (one trip). */
template <class Op>
__global__ void hpdl__vecadd_scalar_kernel(int64_t n, const typename Op::value_type *HPDL_RESTRICT a,
                                           const typename Op::value_type *HPDL_RESTRICT b,
                                           typename Op::value_type *HPDL_RESTRICT c) {
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    int64_t i;
    for (i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) c[i] = Op::add(a[i], b[i]);
}

/* Adds two 16-byte packs element by element. The packs travel as uint4 so
   that each load and store is one 128-bit instruction; memcpy reinterprets
   them (the compiler keeps it all in registers). */
template <class Op>
__device__ __forceinline__ uint4 hpdl__vecadd_pack_add(uint4 x, uint4 y) {
    typedef typename Op::value_type V;
    enum { per_pack = 16 / sizeof(V) };
    V xs[per_pack], ys[per_pack], zs[per_pack];
    uint4 z;
    memcpy(xs, &x, 16);
    memcpy(ys, &y, 16);
#pragma unroll
    for (int k = 0; k < per_pack; k++) zs[k] = Op::add(xs[k], ys[k]);
    memcpy(&z, zs, 16);
    return z;
}

/* (d) on 16-byte-aligned a, b, c: grid-stride over 16-byte packs, then the
   last n % (elements per pack) elements one per thread (fewer than a block). */
template <class Op>
__global__ void hpdl__vecadd_vector_kernel(int64_t n, const typename Op::value_type *HPDL_RESTRICT a,
                                           const typename Op::value_type *HPDL_RESTRICT b,
                                           typename Op::value_type *HPDL_RESTRICT c) {
    const int64_t per_pack = (int64_t)(16 / sizeof(typename Op::value_type));
    const uint4 *pa = reinterpret_cast<const uint4 *>(a);
    const uint4 *pb = reinterpret_cast<const uint4 *>(b);
    uint4 *pc = reinterpret_cast<uint4 *>(c);
    int64_t packs = n / per_pack, stride = (int64_t)gridDim.x * blockDim.x;
    int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x, i;
    for (i = t; i < packs; i += stride) pc[i] = hpdl__vecadd_pack_add<Op>(pa[i], pb[i]);
    i = packs * per_pack + t;
    if (i < n) c[i] = Op::add(a[i], b[i]);
}

HPDL_CUDA_API int hpdl__aligned16(const void *p) { return ((uintptr_t)p & 15u) == 0; }

/* The current device's number of SMs (HPDL_ERR_CUDA, with the error on
   stderr, when CUDA cannot say). */
HPDL_CUDA_API hpdl_status hpdl__sm_count(int *sms) {
    int device = 0;
    HPDL_CUDA_TRY(cudaGetDevice(&device));
    HPDL_CUDA_TRY(cudaDeviceGetAttribute(sms, cudaDevAttrMultiProcessorCount, device));
    return HPDL_OK;
}

HPDL_CUDA_API hpdl_status hpdl__vecadd_check(hpdl_vecadd_config cfg, int64_t n, const void *a, const void *b,
                                        const void *c) {
    if (n < 0 || (int)cfg < 0 || (int)cfg >= HPDL_VECADD_CONFIG_COUNT) return HPDL_ERR_INVALID;
    if (n > 0 && (!a || !b || !c)) return HPDL_ERR_INVALID;
    return HPDL_OK;
}

/* Grid of (d) for `kernel`: HPDL_VECADD_WAVES times the blocks of
   HPDL_VECADD_THREADS that fit on all SMs at once, but no more than `items`
   needs (one item per thread). */
HPDL_CUDA_API hpdl_status hpdl__grid_stride_blocks(const void *kernel, int64_t items, int *blocks) {
    int sms = 0, per_sm = 0;
    int64_t needed = (items + HPDL_VECADD_THREADS - 1) / HPDL_VECADD_THREADS, most;
    if (hpdl__sm_count(&sms) != HPDL_OK) return HPDL_ERR_CUDA;
    HPDL_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, HPDL_VECADD_THREADS, 0));
    most = (int64_t)sms * per_sm * HPDL_VECADD_WAVES;
    *blocks = (int)(needed < most ? needed : most);
    if (*blocks < 1) *blocks = 1;
    return HPDL_OK;
}

/* Launch geometry of the scalar kernel for each configuration. */
template <class Op>
static inline hpdl_status hpdl__vecadd_scalar_grid(hpdl_vecadd_config cfg, int64_t n, int *blocks, int *threads) {
    int64_t many = (n + HPDL_VECADD_THREADS - 1) / HPDL_VECADD_THREADS;
    *blocks = 1;
    *threads = cfg == HPDL_VECADD_ONE_THREAD ? 1 : HPDL_VECADD_THREADS;
    if (cfg == HPDL_VECADD_MANY_BLOCKS) {
        if (many > 2147483647) return HPDL_ERR_UNSUPPORTED; /* past the grid's x limit */
        *blocks = (int)many;
    }
    if (cfg == HPDL_VECADD_GRID_STRIDE) /* misaligned pointers: scalar loads, same grid rule */
        return hpdl__grid_stride_blocks((const void *)hpdl__vecadd_scalar_kernel<Op>, n, blocks);
    return HPDL_OK;
}

template <class Op>
static inline hpdl_status hpdl__cuda_vecadd(hpdl_vecadd_config cfg, int64_t n, const typename Op::value_type *a,
                                           const typename Op::value_type *b, typename Op::value_type *c,
                                           cudaStream_t stream) {
    const int64_t per_pack = (int64_t)(16 / sizeof(typename Op::value_type));
    int blocks = 1, threads = HPDL_VECADD_THREADS;
    hpdl_status s = hpdl__vecadd_check(cfg, n, a, b, c);
    if (s != HPDL_OK || n == 0) return s;
    if (cfg == HPDL_VECADD_GRID_STRIDE && hpdl__aligned16(a) && hpdl__aligned16(b) && hpdl__aligned16(c)) {
        s = hpdl__grid_stride_blocks((const void *)hpdl__vecadd_vector_kernel<Op>, n / per_pack, &blocks);
        if (s != HPDL_OK) return s;
        hpdl__vecadd_vector_kernel<Op><<<blocks, threads, 0, stream>>>(n, a, b, c);
    } else {
        s = hpdl__vecadd_scalar_grid<Op>(cfg, n, &blocks, &threads);
        if (s != HPDL_OK) return s;
        hpdl__vecadd_scalar_kernel<Op><<<blocks, threads, 0, stream>>>(n, a, b, c);
    }
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* hpdl_cuda_vec_add_<SUFFIX>(cfg, n, a, b, c, stream): c[i] = a[i] + b[i] on
   device (or managed) pointers, asynchronously on `stream`. T is the host
   type, DEV_T the CUDA type with the same bits; the sum is computed in ACC_T
   (LOAD: DEV_T -> ACC_T, STORE: ACC_T -> DEV_T, rounding to nearest even),
   exactly like the CPU twin. c may be a or b (in place); no partial overlap.
   HPDL_ERR_INVALID (nothing launched) for n < 0, a bad cfg, or a NULL
   pointer with n > 0. */
template <typename DEV_T> struct hpdl__vecadd_op; /* one per type, below */

/* The type-generic front end (C++): hpdl_cuda_vec_add(cfg, n, a, b, c) for
   float, double, hpdl_f16 or __half, hpdl_bf16 or __nv_bfloat16. */
template <typename T>
static inline hpdl_status hpdl_cuda_vec_add(hpdl_vecadd_config cfg, int64_t n, const T *a, const T *b, T *c,
                                            cudaStream_t stream = 0) {
    typedef typename hpdl__dev<T>::type D;
    return hpdl__cuda_vecadd<hpdl__vecadd_op<D> >(cfg, n, (const D *)a, (const D *)b, (D *)c, stream);
}

/* The typed launchers hpdl_cuda_vec_add_<t> for C-style callers, c = a + b as described above, each
   a call of hpdl_cuda_vec_add. */
#define HPDL_DEFINE_CUDA_VECADD(SUFFIX, T, DEV_T, ACC_T, LOAD, STORE)                                  \
    template <> struct hpdl__vecadd_op<DEV_T> {                                                        \
        typedef DEV_T value_type;                                                                      \
        static __device__ __forceinline__ DEV_T add(DEV_T x, DEV_T y) {                                \
            return STORE((ACC_T)LOAD(x) + (ACC_T)LOAD(y));                                             \
        }                                                                                              \
    };                                                                                                 \
    static_assert(sizeof(T) == sizeof(DEV_T), "hpdl: host and device element types differ in size"); \
    HPDL_CUDA_API hpdl_status hpdl_cuda_vec_add_##SUFFIX(hpdl_vecadd_config cfg, int64_t n, const T *a, \
                                                         const T *b, T *c, cudaStream_t stream) {      \
        return hpdl_cuda_vec_add(cfg, n, a, b, c, stream);                                             \
    }

HPDL_DEFINE_CUDA_VECADD(f32, float, float, float, HPDL_LOAD_SELF, HPDL_STORE_F32)
/* hpdl_cuda_vec_add_f64 */
HPDL_DEFINE_CUDA_VECADD(f64, double, double, double, HPDL_LOAD_SELF, HPDL_STORE_F64)
/* hpdl_cuda_vec_add_f16 */
HPDL_DEFINE_CUDA_VECADD(f16, hpdl_f16, __half, float, __half2float, __float2half_rn)
/* hpdl_cuda_vec_add_bf16 */
HPDL_DEFINE_CUDA_VECADD(bf16, hpdl_bf16, __nv_bfloat16, float, __bfloat162float, __float2bfloat16_rn)

/* ------------------------------------------------------------------------ */
/* Unified (managed) memory                                                  */
/* ------------------------------------------------------------------------ */

/* cudaMallocManaged: one pointer valid on host and device; pages move to
   whoever touches them (or ahead of time, with hpdl_cuda_prefetch). Free
   with hpdl_cuda_free. Refuses (HPDL_ERR_NOMEM, with a message) more than
   the device has free minus a margin (1/20 of its memory, at least 512 MiB):
   oversubscribed managed memory can hang the GPU, not only the program. The
   check sees one request at a time, and managed pages count as used only
   once they reach the GPU: a caller that needs several buffers at once should
   ask for their sum in one call, or check the sum against free memory first. */
HPDL_CUDA_API hpdl_status hpdl_cuda_alloc_managed(void **ptr, size_t bytes) {
    size_t free_b = 0, total_b = 0, margin;
    if (!ptr) return HPDL_ERR_INVALID;
    *ptr = NULL;
    if (bytes == 0) return HPDL_OK;
    HPDL_CUDA_TRY(cudaMemGetInfo(&free_b, &total_b));
    margin = total_b / 20 > ((size_t)512 << 20) ? total_b / 20 : ((size_t)512 << 20);
    if (free_b < margin || bytes > free_b - margin) {
        fprintf(stderr, "hpdl_cuda_alloc_managed: refusing %zu bytes: the device has %zu bytes free "
                        "and keeps %zu spare\n", bytes, free_b, margin);
        return HPDL_ERR_NOMEM;
    }
    if (cudaMallocManaged(ptr, bytes, cudaMemAttachGlobal) != cudaSuccess) {
        cudaGetLastError();
        *ptr = NULL;
        return HPDL_ERR_NOMEM;
    }
    return HPDL_OK;
}

/* Moves managed pages ahead of use, asynchronously on `stream`: to GPU
   `device`, or to the host for cudaCpuDeviceId. HPDL_ERR_UNSUPPORTED where
   the GPU cannot (no concurrent managed access: Windows, some older GPUs);
   pages then still move on first touch. */
HPDL_CUDA_API hpdl_status hpdl_cuda_prefetch(const void *ptr, size_t bytes, int device, cudaStream_t stream) {
    int count = 0, current = 0, concurrent = 0;
    HPDL_CUDA_TRY(cudaGetDeviceCount(&count));
    if ((!ptr && bytes) || device < cudaCpuDeviceId || device >= count) return HPDL_ERR_INVALID;
    if (bytes == 0) return HPDL_OK;
    HPDL_CUDA_TRY(cudaGetDevice(&current));
    HPDL_CUDA_TRY(cudaDeviceGetAttribute(&concurrent, cudaDevAttrConcurrentManagedAccess,
                                         device == cudaCpuDeviceId ? current : device));
    if (!concurrent) return HPDL_ERR_UNSUPPORTED;
#if CUDART_VERSION >= 13000 /* CUDA 13 names the destination with a cudaMemLocation */
    {
        cudaMemLocation where;
        where.type = device == cudaCpuDeviceId ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice;
        where.id = device == cudaCpuDeviceId ? 0 : device;
        HPDL_CUDA_TRY(cudaMemPrefetchAsync(ptr, bytes, where, 0, stream));
    }
#else
    HPDL_CUDA_TRY(cudaMemPrefetchAsync(ptr, bytes, device, stream));
#endif
    return HPDL_OK;
}
/* ======================================================================== */
/* GEMM: the ladder, the cuBLAS backend                                     */
/* ======================================================================== */
/* GEMM ladder and cuBLAS backend.

   C (M x N, row-major, ldc >= N) = alpha * op(A) * op(B) + beta * C, device pointers.
   op(A) is M x K: A is M x K (lda >= K) when HPDL_NO_TRANS, K x M (lda >= M) when HPDL_TRANS;
   op(B) is K x N: B is K x N (ldb >= N) or N x K (ldb >= K). beta == 0 never reads C.

       hpdl_cuda_gemm_f32(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, stream);  best kernel
       hpdl_cuda_gemm_algo_f32(HPDL_GEMM_VEC4, ta, tb, ...);                               one rung

   The ladder (one kernel per rung, each adding one idea to the one before):
       naive      one thread per C element, threads of a warp walk down a column (strided)
       coalesced  threads of a warp walk along a row: loads of B and stores of C coalesce
       smem       32x32 tiles of A and B staged in shared memory
       reg1d      each thread computes 8 outputs of a column (1D register blocking)
       reg2d      each thread computes an 8x8 block (2D register blocking)
       vec4       16-byte global loads and 16-byte shared-memory reads
       warptile   warp-shaped thread tiles (conflict-free shared reads), double-buffered tiles
       mma        tensor cores: f16/bf16 mma.sync m16n8k16 + ldmatrix + 4-stage cp.async (128x128x32,
                  2 blocks per SM), f64 DMMA (mma.sync m16n8k16 on sm_90, m8n8k4 on
                  sm_80) + 3-stage cp.async (128x64x16, 2 blocks per SM), f32 as
                  3xTF32 (three TF32 m16n8k8 products per step on each value's
                  TF32 pair: about f32's error, finite inputs only; 128x64x32,
                  K split over slices where the tiles leave SMs idle)
       splitk     skinny products (an MLP's): 128x16, 32x64 or 64x64 tiles, K split over
                  slices added in a fixed order (mma.sync for f16/bf16, FMAs for f32/f64);
                  N <= 16 with A's M contiguous (a weight gradient) streams A through a
                  cp.async pipeline, 64 rows of C a block (hpdl__gemm_narrow_mn: FMAs
                  for f32, mma.sync for f16/bf16); N <= 16 with A's K contiguous: few rows
                  in a cluster (f32, hpdl__gemm_narrow_cluster), 16-bit products of many
                  rows in one mma.sync pass (hpdl__gemm_narrow_rows_tc); K <= 16 stages
                  all of K once and writes C in whole rows (hpdl__gemm_shortk)
       cublas     the library, for reference
   f16/bf16 accumulate in f32 on every rung. AUTO: splitk for skinny f32/f16/bf16 products
   (hpdl__gemm_auto_splitk: N <= 16 or K <= 16, f32 small outputs with long K too) unless
   f32's mma fills the GPU (hpdl__gemm_auto_tf32x3: its tiles times its K slices), else
   f32 -> warptile, f64 -> mma, f16/bf16 -> the Hopper rungs below where they run
   (HPDL__GEMM_HOPPER_DEFAULT), else mma (warptile when the binary or the GPU has no sm_80
   tensor-core path). */

/* The rungs hpdl_cuda_gemm_algo_<t> runs: AUTO (the choice described above), the ladder, the Hopper
   wgmma rungs, splitk and cuBLAS; hpdl_gemm_algo_name gives their names. */
typedef enum hpdl_gemm_algo {
    HPDL_GEMM_AUTO = 0,
    HPDL_GEMM_NAIVE,
    HPDL_GEMM_COALESCED,
    HPDL_GEMM_SMEM,
    HPDL_GEMM_REG1D,
    HPDL_GEMM_REG2D,
    HPDL_GEMM_VEC4,
    HPDL_GEMM_WARPTILE,
    HPDL_GEMM_MMA,
    HPDL_GEMM_WGMMA,
    HPDL_GEMM_WGMMA_WS,
    HPDL_GEMM_WGMMA_PERSISTENT,
    HPDL_GEMM_WGMMA_CLUSTER,
    HPDL_GEMM_SPLITK,
    HPDL_GEMM_CUBLAS
} hpdl_gemm_algo;

/* The rung's short name ("auto", "naive", ..., "cublas"), a static string; "unknown" for any other
   value. */
HPDL_CUDA_API const char *hpdl_gemm_algo_name(hpdl_gemm_algo a) {
    switch (a) {
    case HPDL_GEMM_AUTO: return "auto";
    case HPDL_GEMM_NAIVE: return "naive";
    case HPDL_GEMM_COALESCED: return "coalesced";
    case HPDL_GEMM_SMEM: return "smem";
    case HPDL_GEMM_REG1D: return "reg1d";
    case HPDL_GEMM_REG2D: return "reg2d";
    case HPDL_GEMM_VEC4: return "vec4";
    case HPDL_GEMM_WARPTILE: return "warptile";
    case HPDL_GEMM_MMA: return "mma";
    case HPDL_GEMM_WGMMA: return "wgmma";
    case HPDL_GEMM_WGMMA_WS: return "wgmma_ws";
    case HPDL_GEMM_WGMMA_PERSISTENT: return "wgmma_persistent";
    case HPDL_GEMM_WGMMA_CLUSTER: return "wgmma_cluster";
    case HPDL_GEMM_SPLITK: return "splitk";
    case HPDL_GEMM_CUBLAS: return "cublas";
    }
    return "unknown";
}

/* ------------------------------------------------------------------------ */
/* Kernel arguments and element access                                       */
/* ------------------------------------------------------------------------ */

/* One input operand as stored. kcontig: the K index runs along the stored
   rows (A not transposed, B transposed), so element (o, k) of the operand,
   o being its M or N index, sits at p[o*ld + k]; otherwise at p[k*ld + o].
   vec: p and ld allow the rung's vector loads (16 bytes; 4 elements for the
   SIMT rungs). */
template <typename T> struct hpdl__gemm_operand {
    const T *p;
    int ld, kcontig, vec;
};

template <typename T, typename ACC> struct hpdl__gemm_args {
    hpdl__gemm_operand<T> a, b; /* a: outer dimension M, b: outer dimension N */
    T *C;
    int M, N, K, ldc, cvec; /* cvec: C and ldc allow 4-element vector stores */
    ACC alpha, beta;
    /* The MLP's forward epilogue (hpdl__gemm_bias_act; NULL and 0
       elsewhere), taken only by the kernels built with POST (the thin
       kernel and the one-tile rung): bias[n] is where their accumulators
       start (alpha 1, one slice of K only), ReLU where C is written. */
    const ACC *bias;
    int relu;
};

/* Elements between the operands of one GEMM and the next in a strided batch. */
struct hpdl__gemm_batch {
    int64_t a, b, c;
    int last_k; /* K of the last GEMM (a split's last slice, which may be shorter); 0: the args' K */
};

/* What a GEMM of a strided batch sees: its operands and C, and its K. */
template <typename ARGS> static __device__ __forceinline__ void hpdl__gemm_batch_pick(ARGS &g, const hpdl__gemm_batch &batch) {
    g.a.p += blockIdx.z * batch.a;
    g.b.p += blockIdx.z * batch.b;
    g.C += blockIdx.z * batch.c;
    if (batch.last_k && blockIdx.z == gridDim.z - 1) g.K = batch.last_k;
}

static __device__ __forceinline__ float hpdl__gemm_acc(float x) { return x; }
static __device__ __forceinline__ double hpdl__gemm_acc(double x) { return x; }
static __device__ __forceinline__ float hpdl__gemm_acc(__half x) { return __half2float(x); }
static __device__ __forceinline__ float hpdl__gemm_acc(__nv_bfloat16 x) { return __bfloat162float(x); }

static __device__ __forceinline__ void hpdl__gemm_put(float *p, float v) { *p = v; }
static __device__ __forceinline__ void hpdl__gemm_put(double *p, double v) { *p = v; }
static __device__ __forceinline__ void hpdl__gemm_put(__half *p, float v) { *p = __float2half_rn(v); }
static __device__ __forceinline__ void hpdl__gemm_put(__nv_bfloat16 *p, float v) { *p = __float2bfloat16_rn(v); }

/* Converts n values of T into C (an f16/bf16 copy of f32 values, or back). */
template <typename C, typename T>
__global__ void hpdl__convert_kernel(int64_t n, const T *src, C *dst) {
    int64_t i;
    for (i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        hpdl__gemm_put(dst + i, (typename hpdl__acc<T>::type)hpdl__gemm_acc(src[i]));
}

/* Grid for a grid-stride loop: enough blocks to fill the GPU, no more. */
HPDL_CUDA_API int hpdl__grid_for(int64_t n, int threads) {
    int64_t blocks = (n + threads - 1) / threads;
    if (blocks > 4096) blocks = 4096;
    return blocks < 1 ? 1 : (int)blocks;
}

/* Programmatic dependent launch (sm_90): a kernel launched with
   hpdl__launch_after may start while the kernel before it in the stream
   finishes; hpdl__wait_for_previous holds it until that kernel's writes
   are visible, and hpdl__let_next_start lets the next one start early. */
static __device__ __forceinline__ void hpdl__wait_for_previous() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
static __device__ __forceinline__ void hpdl__let_next_start() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

/* Launches kernel(args...) on `blocks` x `threads` after the stream's
   previous kernel, allowed to start before that kernel has finished
   where its code is sm_90's (programmatic dependent launch; the kernel
   calls hpdl__wait_for_previous before it reads what the previous one
   wrote); an ordinary launch elsewhere. */
template <typename... K, typename... A>
static inline hpdl_status hpdl__launch_after(void (*kernel)(K...), int blocks, int threads, cudaStream_t stream,
                                             A... args) {
    cudaLaunchConfig_t cfg = cudaLaunchConfig_t();
    cudaLaunchAttribute attr[1];
    cudaFuncAttributes fa;
    HPDL_CUDA_TRY(cudaFuncGetAttributes(&fa, (const void *)kernel));
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.gridDim = dim3((unsigned)blocks);
    cfg.blockDim = dim3((unsigned)threads);
    cfg.stream = stream;
    cfg.attrs = attr;
    cfg.numAttrs = fa.binaryVersion >= 90; /* code built for sm_90 or later waits (hpdl__wait_for_previous) */
    HPDL_CUDA_TRY(cudaLaunchKernelEx(&cfg, kernel, (K)args...));
    return HPDL_OK;
}

/* Element (o, k) of an operand whose outer size is O, or 0 outside it. */
template <typename ACC, typename T>
static __device__ __forceinline__ ACC hpdl__gemm_elem(const hpdl__gemm_operand<T> &x, int o, int k, int O, int K) {
    if (o >= O || k >= K) return (ACC)0;
    return (ACC)hpdl__gemm_acc(x.kcontig ? x.p[(size_t)o * x.ld + k] : x.p[(size_t)k * x.ld + o]);
}

/* ReLU as hpdl__act applies it: NaN passes through. */
template <typename ACC> static __device__ __forceinline__ ACC hpdl__gemm_relu(ACC v) { return v < (ACC)0 ? (ACC)0 : v; }

/* C(m, n) = alpha * acc + beta * C(m, n), skipped outside C; beta == 0 does
   not read C. POST: then ReLU where the args ask for it, in the kernels
   built for the MLP's epilogue (hpdl__gemm_bias_act); the others leave
   that code out (even unused, an epilogue there changed their code: the
   f16 splitk kernel spilled more). */
template <bool POST = false, typename T, typename ACC>
static __device__ __forceinline__ void hpdl__gemm_out(const hpdl__gemm_args<T, ACC> &g, int m, int n, ACC acc) {
    if (m < g.M && n < g.N) {
        T *p = g.C + (size_t)m * g.ldc + n;
        ACC v = g.alpha * acc;
        if (g.beta != (ACC)0) v += g.beta * (ACC)hpdl__gemm_acc(*p);
        if (POST && g.relu) v = hpdl__gemm_relu(v);
        hpdl__gemm_put(p, v);
    }
}

/* Four consecutive elements in one load: 16 bytes for f32, 8 for f16/bf16,
   two 16-byte loads for f64. p must be aligned to 4 elements. */
static __device__ __forceinline__ void hpdl__gemm_vload4(const float *p, float v[4]) {
    float4 t = *(const float4 *)p;
    v[0] = t.x; v[1] = t.y; v[2] = t.z; v[3] = t.w;
}
static __device__ __forceinline__ void hpdl__gemm_vload4(const double *p, double v[4]) {
    double2 t0 = ((const double2 *)p)[0], t1 = ((const double2 *)p)[1];
    v[0] = t0.x; v[1] = t0.y; v[2] = t1.x; v[3] = t1.y;
}
static __device__ __forceinline__ void hpdl__gemm_vload4(const __half *p, float v[4]) {
    uint2 t = *(const uint2 *)p;
    __half2 h[2];
    memcpy(h, &t, sizeof t);
    float2 f0 = __half22float2(h[0]), f1 = __half22float2(h[1]);
    v[0] = f0.x; v[1] = f0.y; v[2] = f1.x; v[3] = f1.y;
}
static __device__ __forceinline__ void hpdl__gemm_vload4(const __nv_bfloat16 *p, float v[4]) {
    uint2 t = *(const uint2 *)p;
    __nv_bfloat162 h[2];
    memcpy(h, &t, sizeof t);
    float2 f0 = __bfloat1622float2(h[0]), f1 = __bfloat1622float2(h[1]);
    v[0] = f0.x; v[1] = f0.y; v[2] = f1.x; v[3] = f1.y;
}

static __device__ __forceinline__ void hpdl__gemm_vstore4(float *p, const float v[4]) {
    *(float4 *)p = make_float4(v[0], v[1], v[2], v[3]);
}
static __device__ __forceinline__ void hpdl__gemm_vstore4(double *p, const double v[4]) {
    ((double2 *)p)[0] = make_double2(v[0], v[1]);
    ((double2 *)p)[1] = make_double2(v[2], v[3]);
}
static __device__ __forceinline__ void hpdl__gemm_vstore4(__half *p, const float v[4]) {
    __half2 h[2] = {__floats2half2_rn(v[0], v[1]), __floats2half2_rn(v[2], v[3])};
    uint2 t;
    memcpy(&t, h, sizeof t);
    *(uint2 *)p = t;
}
static __device__ __forceinline__ void hpdl__gemm_vstore4(__nv_bfloat16 *p, const float v[4]) {
    __nv_bfloat162 h[2] = {__floats2bfloat162_rn(v[0], v[1]), __floats2bfloat162_rn(v[2], v[3])};
    uint2 t;
    memcpy(&t, h, sizeof t);
    *(uint2 *)p = t;
}

/* Stored elements X(r, c..c+3) of a rows x cols matrix, zeros outside: one
   vector load when the chunk is inside and vec allows it, else one by one.
   FAST: the caller knows the chunk is inside and aligned (no checks). */
template <bool FAST, typename ACC, typename T>
static __device__ __forceinline__ void hpdl__gemm_load4(const T *X, int ld, int r, int c, int rows, int cols,
                                                        int vec, ACC v[4]) {
    const T *p = X + (size_t)r * ld + c;
    int j;
    if (FAST || (vec && r < rows && c + 3 < cols)) {
        hpdl__gemm_vload4(p, v);
    } else {
#pragma unroll
        for (j = 0; j < 4; j++) v[j] = (r < rows && c + j < cols) ? (ACC)hpdl__gemm_acc(p[j]) : (ACC)0;
    }
}

/* C(m, n..n+3) = alpha * v + beta * C, one vector access when all four are
   inside and aligned (POST: as hpdl__gemm_out). */
template <bool POST = false, typename T, typename ACC>
static __device__ __forceinline__ void hpdl__gemm_out4(const hpdl__gemm_args<T, ACC> &g, int m, int n, const ACC v[4]) {
    int j;
    if (g.cvec && m < g.M && n + 3 < g.N) {
        T *p = g.C + (size_t)m * g.ldc + n;
        ACC r[4], c[4] = {0, 0, 0, 0};
        if (g.beta != (ACC)0) hpdl__gemm_vload4(p, c);
#pragma unroll
        for (j = 0; j < 4; j++) r[j] = g.alpha * v[j] + g.beta * c[j];
        if (POST && g.relu)
#pragma unroll
            for (j = 0; j < 4; j++) r[j] = hpdl__gemm_relu(r[j]);
        hpdl__gemm_vstore4(p, r);
        return;
    }
#pragma unroll
    for (j = 0; j < 4; j++) hpdl__gemm_out<POST>(g, m, n + j, v[j]);
}

/* Shared-memory vectors of four accumulator values (16-byte aligned). */
static __device__ __forceinline__ void hpdl__gemm_sload4(const float *p, float v[4]) { hpdl__gemm_vload4(p, v); }
static __device__ __forceinline__ void hpdl__gemm_sload4(const double *p, double v[4]) { hpdl__gemm_vload4(p, v); }
static __device__ __forceinline__ void hpdl__gemm_sstore4(float *p, const float v[4]) { hpdl__gemm_vstore4(p, v); }
static __device__ __forceinline__ void hpdl__gemm_sstore4(double *p, const double v[4]) { hpdl__gemm_vstore4(p, v); }

/* Grouped tile order: blocks that run together share rows of A and columns
   of B in L2 (GROUP tile rows at a time, Triton's "grouped ordering"). */
template <int GROUP = 8> static __device__ __forceinline__ void hpdl__gemm_tile_order(int *tile_m, int *tile_n) {
    int tiles_n = (int)gridDim.x, tiles_m = (int)gridDim.y;
    int pid = (int)(blockIdx.y * gridDim.x + blockIdx.x);
    int per_group = GROUP * tiles_n, first = pid / per_group * GROUP;
    int rows = tiles_m - first < GROUP ? tiles_m - first : GROUP;
    *tile_m = first + (pid % per_group) % rows;
    *tile_n = (pid % per_group) / rows;
}

/* ------------------------------------------------------------------------ */
/* SIMT rungs (every type; f16/bf16 convert to f32 on load)                  */
/* ------------------------------------------------------------------------ */

/* naive: one thread per C element; threadIdx.x runs down a column of C, so
   a warp's loads of A and stores of C are strided (uncoalesced). */
template <typename T, typename ACC> __global__ void hpdl__gemm_naive(hpdl__gemm_args<T, ACC> g) {
    int m = (int)(blockIdx.x * blockDim.x + threadIdx.x), n = (int)(blockIdx.y * blockDim.y + threadIdx.y), k;
    ACC acc = 0;
    if (m >= g.M || n >= g.N) return;
    for (k = 0; k < g.K; k++)
        acc += hpdl__gemm_elem<ACC>(g.a, m, k, g.M, g.K) * hpdl__gemm_elem<ACC>(g.b, n, k, g.N, g.K);
    hpdl__gemm_out(g, m, n, acc);
}

/* coalesced: threadIdx.x runs along a row of C, so a warp reads one B row
   segment and writes one C row segment (coalesced) and shares one A value. */
template <typename T, typename ACC> __global__ void hpdl__gemm_coalesced(hpdl__gemm_args<T, ACC> g) {
    int n = (int)(blockIdx.x * blockDim.x + threadIdx.x), m = (int)(blockIdx.y * blockDim.y + threadIdx.y), k;
    ACC acc = 0;
    if (m >= g.M || n >= g.N) return;
    for (k = 0; k < g.K; k++)
        acc += hpdl__gemm_elem<ACC>(g.a, m, k, g.M, g.K) * hpdl__gemm_elem<ACC>(g.b, n, k, g.N, g.K);
    hpdl__gemm_out(g, m, n, acc);
}

/* Loads one 32x32 tile of an operand into S[o][k]: the thread index that
   varies fastest walks the stored row, so the global loads coalesce for
   either layout (the +1 column of S keeps the transposed stores conflict-free). */
template <typename T, typename ACC>
static __device__ __forceinline__ void hpdl__gemm_tile32(ACC (*S)[33], const hpdl__gemm_operand<T> &x, int o0, int k0,
                                                         int O, int K) {
    int tx = (int)threadIdx.x, ty = (int)threadIdx.y;
    if (x.kcontig) S[ty][tx] = hpdl__gemm_elem<ACC>(x, o0 + ty, k0 + tx, O, K);
    else S[tx][ty] = hpdl__gemm_elem<ACC>(x, o0 + tx, k0 + ty, O, K);
}

/* smem: 32x32 tiles of A and B staged in shared memory, so each loaded
   element serves 32 outputs instead of one. */
template <typename T, typename ACC> __global__ void __launch_bounds__(1024) hpdl__gemm_smem(hpdl__gemm_args<T, ACC> g) {
    __shared__ ACC As[32][33], Bs[32][33]; /* As[m][k], Bs[n][k] */
    int tx = (int)threadIdx.x, ty = (int)threadIdx.y, k0, k;
    int m0 = (int)blockIdx.y * 32, n0 = (int)blockIdx.x * 32;
    ACC acc = 0;
    for (k0 = 0; k0 < g.K; k0 += 32) {
        hpdl__gemm_tile32(As, g.a, m0, k0, g.M, g.K);
        hpdl__gemm_tile32(Bs, g.b, n0, k0, g.N, g.K);
        __syncthreads();
#pragma unroll 8
        for (k = 0; k < 32; k++) acc += As[ty][k] * Bs[tx][k];
        __syncthreads();
    }
    hpdl__gemm_out(g, m0 + ty, n0 + tx, acc);
}

/* Element i of this thread's share of an O_TILE x K_TILE operand tile, put
   into S[k][o] (row length LDS): coalesced global reads for either layout. */
template <int O_TILE, int K_TILE, int THREADS, int LDS, typename T, typename ACC>
static __device__ __forceinline__ void hpdl__gemm_tile_scalar(ACC *S, const hpdl__gemm_operand<T> &x, int o0, int k0,
                                                              int O, int K, int i) {
    int idx = (int)threadIdx.x + i * THREADS;
    int o = x.kcontig ? idx / K_TILE : idx % O_TILE, k = x.kcontig ? idx % K_TILE : idx / O_TILE;
    S[k * LDS + o] = hpdl__gemm_elem<ACC>(x, o0 + o, k0 + k, O, K);
}

/* reg1d: 64x64 tiles, each thread computes 8 outputs down a column, so one
   B value from shared memory is reused 8 times from a register. */
template <typename T, typename ACC> __global__ void __launch_bounds__(512) hpdl__gemm_reg1d(hpdl__gemm_args<T, ACC> g) {
    enum { BM = 64, BN = 64, BK = 8, TM = 8, LDS = 68 };
    __shared__ ACC As[BK * LDS], Bs[BK * LDS]; /* [k][m], [k][n] */
    int tid = (int)threadIdx.x, col = tid % BN, row = tid / BN * TM, k0, k, r;
    int m0 = (int)blockIdx.y * BM, n0 = (int)blockIdx.x * BN;
    ACC acc[TM];
#pragma unroll
    for (r = 0; r < TM; r++) acc[r] = 0;
    for (k0 = 0; k0 < g.K; k0 += BK) {
        hpdl__gemm_tile_scalar<BM, BK, 512, LDS>(As, g.a, m0, k0, g.M, g.K, 0);
        hpdl__gemm_tile_scalar<BN, BK, 512, LDS>(Bs, g.b, n0, k0, g.N, g.K, 0);
        __syncthreads();
#pragma unroll
        for (k = 0; k < BK; k++) {
            ACC b = Bs[k * LDS + col];
#pragma unroll
            for (r = 0; r < TM; r++) acc[r] += As[k * LDS + row + r] * b;
        }
        __syncthreads();
    }
#pragma unroll
    for (r = 0; r < TM; r++) hpdl__gemm_out(g, m0 + row + r, n0 + col, acc[r]);
}

/* reg2d: 128x128 tiles, each thread computes an 8x8 block from 8 A and 8 B
   values in registers: 64 multiply-adds per 16 shared-memory reads. */
template <typename T, typename ACC> __global__ void __launch_bounds__(256) hpdl__gemm_reg2d(hpdl__gemm_args<T, ACC> g) {
    enum { BM = 128, BN = 128, BK = 8, TM = 8, TN = 8, LDS = 132 };
    __shared__ ACC As[BK * LDS], Bs[BK * LDS];
    int tid = (int)threadIdx.x, tx = tid % 16, ty = tid / 16, k0, k, i, j;
    int m0 = (int)blockIdx.y * BM, n0 = (int)blockIdx.x * BN;
    ACC acc[TM][TN], a[TM], b[TN];
#pragma unroll
    for (i = 0; i < TM; i++)
#pragma unroll
        for (j = 0; j < TN; j++) acc[i][j] = 0;
    for (k0 = 0; k0 < g.K; k0 += BK) {
#pragma unroll
        for (i = 0; i < 4; i++) {
            hpdl__gemm_tile_scalar<BM, BK, 256, LDS>(As, g.a, m0, k0, g.M, g.K, i);
            hpdl__gemm_tile_scalar<BN, BK, 256, LDS>(Bs, g.b, n0, k0, g.N, g.K, i);
        }
        __syncthreads();
#pragma unroll
        for (k = 0; k < BK; k++) {
#pragma unroll
            for (i = 0; i < TM; i++) a[i] = As[k * LDS + ty * TM + i];
#pragma unroll
            for (j = 0; j < TN; j++) b[j] = Bs[k * LDS + tx * TN + j];
#pragma unroll
            for (i = 0; i < TM; i++)
#pragma unroll
                for (j = 0; j < TN; j++) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (i = 0; i < TM; i++)
#pragma unroll
        for (j = 0; j < TN; j++) hpdl__gemm_out(g, m0 + ty * TM + i, n0 + tx * TN + j, acc[i][j]);
}

/* Chunk i (4 elements) of this thread's share of an OT (outer) x BK operand
   tile, read with one vector load along the stored row (256 threads). */
template <int OT, int BK, bool FAST, typename T, typename ACC>
static __device__ __forceinline__ void hpdl__gemm_fetch(const hpdl__gemm_operand<T> &x, int o0, int k0, int O, int K, int i,
                                                        ACC v[4]) {
    int c = (int)threadIdx.x + i * 256;
    if (x.kcontig) hpdl__gemm_load4<FAST>(x.p, x.ld, o0 + c / (BK / 4), k0 + c % (BK / 4) * 4, O, K, x.vec, v);
    else hpdl__gemm_load4<FAST>(x.p, x.ld, k0 + c / (OT / 4), o0 + c % (OT / 4) * 4, K, O, x.vec, v);
}

/* Puts chunk i from hpdl__gemm_fetch into S[k][o] (row length OT + 4). */
template <int OT, int BK, typename ACC>
static __device__ __forceinline__ void hpdl__gemm_stash(ACC *S, int kcontig, int i, const ACC v[4]) {
    int c = (int)threadIdx.x + i * 256, j;
    if (kcontig) {
#pragma unroll
        for (j = 0; j < 4; j++) S[(c % (BK / 4) * 4 + j) * (OT + 4) + c / (BK / 4)] = v[j];
    } else {
        hpdl__gemm_sstore4(S + c / (OT / 4) * (OT + 4) + c % (OT / 4) * 4, v);
    }
}

/* The warptile rung's chunk i of an operand's K tiles: where it goes in
   the shared tile (as hpdl__gemm_stash) is worked out once, and, when the
   tiles are whole and aligned (FAST: fetch), where it comes from, so each
   tile only moves the source on by BK columns (K along rows) or BK rows. */
template <typename T, int OT, int BK> struct hpdl__simt_chunk {
    const T *src;
    int at; /* the first element's place in the shared tile */
    template <bool FAST> __device__ __forceinline__ void init(const hpdl__gemm_operand<T> &x, int o0, int i) {
        int c = (int)threadIdx.x + i * 256;
        src = NULL; /* edge tiles: hpdl__gemm_fetch, with its checks */
        if (x.kcontig) {
            if (FAST) src = x.p + (ptrdiff_t)(o0 + c / (BK / 4)) * x.ld + c % (BK / 4) * 4;
            at = c % (BK / 4) * 4 * (OT + 4) + c / (BK / 4);
        } else {
            if (FAST) src = x.p + (ptrdiff_t)(c / (OT / 4)) * x.ld + o0 + c % (OT / 4) * 4;
            at = c / (OT / 4) * (OT + 4) + c % (OT / 4) * 4;
        }
    }
    template <typename ACC> __device__ __forceinline__ void fetch(const hpdl__gemm_operand<T> &x, ACC v[4]) {
        hpdl__gemm_vload4(src, v);
        src += x.kcontig ? (ptrdiff_t)BK : (ptrdiff_t)BK * x.ld;
    }
    template <typename ACC> __device__ __forceinline__ void stash(ACC *S, int kcontig, const ACC v[4]) const {
        int j;
        if (kcontig) {
#pragma unroll
            for (j = 0; j < 4; j++) S[at + j * (OT + 4)] = v[j]; /* transposed: S[k][o] */
        } else {
            hpdl__gemm_sstore4(S + at, v);
        }
    }
};

/* vec4: reg2d with 16-byte global loads (4-element fallback when ld or
   alignment forbid them) and 16-byte shared-memory reads of the fragments. */
template <typename T, typename ACC> __global__ void __launch_bounds__(256) hpdl__gemm_vec4(hpdl__gemm_args<T, ACC> g) {
    enum { BM = 128, BN = 128, BK = 8, LDS = 132 };
    __shared__ __align__(16) ACC As[BK * LDS];
    __shared__ __align__(16) ACC Bs[BK * LDS];
    int tid = (int)threadIdx.x, tx = tid % 16, ty = tid / 16, k0, k, i, j;
    int m0 = (int)blockIdx.y * BM, n0 = (int)blockIdx.x * BN;
    ACC acc[8][8], a[8], b[8], v[4];
#pragma unroll
    for (i = 0; i < 8; i++)
#pragma unroll
        for (j = 0; j < 8; j++) acc[i][j] = 0;
    for (k0 = 0; k0 < g.K; k0 += BK) {
        hpdl__gemm_fetch<BM, BK, false>(g.a, m0, k0, g.M, g.K, 0, v);
        hpdl__gemm_stash<BM, BK>(As, g.a.kcontig, 0, v);
        hpdl__gemm_fetch<BN, BK, false>(g.b, n0, k0, g.N, g.K, 0, v);
        hpdl__gemm_stash<BN, BK>(Bs, g.b.kcontig, 0, v);
        __syncthreads();
#pragma unroll
        for (k = 0; k < BK; k++) {
            hpdl__gemm_sload4(As + k * LDS + ty * 8, a);
            hpdl__gemm_sload4(As + k * LDS + ty * 8 + 4, a + 4);
            hpdl__gemm_sload4(Bs + k * LDS + tx * 8, b);
            hpdl__gemm_sload4(Bs + k * LDS + tx * 8 + 4, b + 4);
#pragma unroll
            for (i = 0; i < 8; i++)
#pragma unroll
                for (j = 0; j < 8; j++) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (i = 0; i < 8; i++) {
        hpdl__gemm_out4(g, m0 + ty * 8 + i, n0 + tx * 8, acc[i]);
        hpdl__gemm_out4(g, m0 + ty * 8 + i, n0 + tx * 8 + 4, acc[i] + 4);
    }
}

/* warptile: 8 warps as 4x2 warp tiles of 32 x 8TN; a thread's 8 x TN outputs
   are 4x4 blocks 16 rows / 32 columns apart, so a warp's 16-byte shared reads
   hit distinct banks; the next K tile is fetched into registers while the
   current one is multiplied, into the other of two shared buffers (one
   barrier per tile). Block tile 128 x 16TN x BK; TN: 8 (the launcher's), or
   16 for 128x256 tiles (bench --tune: fewer shared reads per FMA, but 232
   registers and one block per SM, slower), 4 for 128x64 (the Winograd
   convolution's 64 output channels; BK 16 so each thread moves a chunk of
   B); MINB: blocks per SM to fit; FAST: every tile is inside the matrices
   and aligned (no bounds checks). A strided batch of GEMMs of one shape:
   blockIdx.z picks the matrices, `batch` elements apart (zeros: one GEMM). */
template <typename T, typename ACC, int BK, int TN, int MINB, bool FAST>
__global__ void __launch_bounds__(256, MINB) hpdl__gemm_warptile(hpdl__gemm_args<T, ACC> g, hpdl__gemm_batch batch) {
    enum { BM = 128, BN = 16 * TN, LDA = BM + 4, LDB = BN + 4, CA = BM * BK / 1024, CB = BN * BK / 1024 /* chunks per thread */ };
    __shared__ __align__(16) ACC As[2][BK * LDA];
    __shared__ __align__(16) ACC Bs[2][BK * LDB];
    int tid = (int)threadIdx.x, warp = tid / 32, lane = tid % 32, tm, tn, k0, k, i, j, c, buf = 0;
    int row = warp / 2 * 32 + lane / 8 * 4, col = warp % 2 * (BN / 2) + lane % 8 * 4; /* first 4x4 block */
    ACC acc[8][TN], a[8], b[TN], va[CA][4], vb[CB][4];
    hpdl__simt_chunk<T, BM, BK> ca[CA];
    hpdl__simt_chunk<T, BN, BK> cb[CB];
    hpdl__gemm_batch_pick(g, batch);
    hpdl__gemm_tile_order(&tm, &tn);
    tm *= BM;
    tn *= BN;
#pragma unroll
    for (i = 0; i < 8; i++)
#pragma unroll
        for (j = 0; j < TN; j++) acc[i][j] = 0;
#pragma unroll
    for (c = 0; c < CA; c++) {
        ca[c].template init<FAST>(g.a, tm, c);
        if (FAST) ca[c].fetch(g.a, va[c]);
        else hpdl__gemm_fetch<BM, BK, FAST>(g.a, tm, 0, g.M, g.K, c, va[c]);
        ca[c].stash(As[0], g.a.kcontig, va[c]);
    }
#pragma unroll
    for (c = 0; c < CB; c++) {
        cb[c].template init<FAST>(g.b, tn, c);
        if (FAST) cb[c].fetch(g.b, vb[c]);
        else hpdl__gemm_fetch<BN, BK, FAST>(g.b, tn, 0, g.N, g.K, c, vb[c]);
        cb[c].stash(Bs[0], g.b.kcontig, vb[c]);
    }
    __syncthreads();
    for (k0 = 0; k0 < g.K; k0 += BK) {
        int more = k0 + BK < g.K;
        if (more) {
#pragma unroll
            for (c = 0; c < CA; c++)
                if (FAST) ca[c].fetch(g.a, va[c]);
                else hpdl__gemm_fetch<BM, BK, FAST>(g.a, tm, k0 + BK, g.M, g.K, c, va[c]);
#pragma unroll
            for (c = 0; c < CB; c++)
                if (FAST) cb[c].fetch(g.b, vb[c]);
                else hpdl__gemm_fetch<BN, BK, FAST>(g.b, tn, k0 + BK, g.N, g.K, c, vb[c]);
        }
#pragma unroll
        for (k = 0; k < BK; k++) {
            hpdl__gemm_sload4(As[buf] + k * LDA + row, a);
            hpdl__gemm_sload4(As[buf] + k * LDA + row + 16, a + 4);
#pragma unroll
            for (j = 0; j < TN; j += 4) hpdl__gemm_sload4(Bs[buf] + k * LDB + col + j * 8, b + j);
#pragma unroll
            for (i = 0; i < 8; i++)
#pragma unroll
                for (j = 0; j < TN; j++) acc[i][j] += a[i] * b[j];
        }
        if (more) {
#pragma unroll
            for (c = 0; c < CA; c++) ca[c].stash(As[buf ^ 1], g.a.kcontig, va[c]);
#pragma unroll
            for (c = 0; c < CB; c++) cb[c].stash(Bs[buf ^ 1], g.b.kcontig, vb[c]);
        }
        __syncthreads();
        buf ^= 1;
    }
#pragma unroll
    for (i = 0; i < 8; i++) {
        int m = tm + row + (i < 4 ? i : 12 + i); /* rows row..row+3, row+16..row+19 */
#pragma unroll
        for (j = 0; j < TN; j += 4) hpdl__gemm_out4(g, m, tn + col + j * 8, acc[i] + j); /* columns 32 apart */
    }
}

/* ------------------------------------------------------------------------ */
/* Tensor-core rungs (sm_80+): cp.async pipeline, ldmatrix, mma.sync          */
/* ------------------------------------------------------------------------ */

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define HPDL__GEMM_SM80 1
#endif

static __device__ __forceinline__ unsigned hpdl__smem_u32(const void *p) {
    return (unsigned)__cvta_generic_to_shared(p);
}

/* The first 1024-byte boundary in a shared array (the copy engine's 128-byte
   swizzle repeats every 1024 bytes; tiles must start on it). An offset from
   the array, not integer arithmetic on its address: the compiler then still
   knows the pointer is shared (ld/st.shared). */
static __device__ __forceinline__ unsigned char *hpdl__smem_align1024(void *p) {
    return (unsigned char *)p + ((1024u - (hpdl__smem_u32(p) & 1023u)) & 1023u);
}

static __device__ __forceinline__ void hpdl__cp_async16(void *dst, const void *src) {
#ifdef HPDL__GEMM_SM80
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(hpdl__smem_u32(dst)), "l"(src) : "memory");
#else
    (void)dst; (void)src;
#endif
}

/* cp.async of BYTES (4, 8 or 16) aligned bytes, or BYTES zeros where !in (src
   is then not read). */
template <int BYTES> static __device__ __forceinline__ void hpdl__cp_async_or_zero(void *dst, const void *src, bool in) {
#ifdef HPDL__GEMM_SM80
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(hpdl__smem_u32(dst)), "l"(src), "n"(BYTES),
                 "r"(in ? BYTES : 0)
                 : "memory");
#else
    (void)dst; (void)src; (void)in;
#endif
}

static __device__ __forceinline__ void hpdl__cp_async_commit(void) {
#ifdef HPDL__GEMM_SM80
    asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

/* Waits until at most N committed groups of this thread are still in flight. */
template <int N> static __device__ __forceinline__ void hpdl__cp_async_wait(void) {
#ifdef HPDL__GEMM_SM80
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

/* ---- the copy engine (TMA, sm_90a): mbarriers, tensor maps ------------ */
/* The Hopper rungs (below) are built on these, and on sm_90a the mma rung
   takes its tiles through them too. */

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define HPDL__SM90A 1
#endif

enum { HPDL__WG_STAGES = 4, HPDL__WG_PIECE_BYTES = 64 * 128 };

/* What wgmma needs to know about an element type. */
template <typename T> struct hpdl__wg_type;
template <> struct hpdl__wg_type<__half> {
    enum { K_STEP = 16, TRANSPOSABLE = 1 };
    typedef float acc;
    static CUtensorMapDataType tma() { return CU_TENSOR_MAP_DATA_TYPE_FLOAT16; }
};
template <> struct hpdl__wg_type<__nv_bfloat16> {
    enum { K_STEP = 16, TRANSPOSABLE = 1 };
    typedef float acc;
    static CUtensorMapDataType tma() { return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16; }
};
template <> struct hpdl__wg_type<float> { /* TF32: the low 13 mantissa bits are ignored */
    enum { K_STEP = 8, TRANSPOSABLE = 0 };
    typedef float acc;
    static CUtensorMapDataType tma() { return CU_TENSOR_MAP_DATA_TYPE_TFLOAT32; }
};
template <> struct hpdl__wg_type<int8_t> { /* the quantized GEMM's: int32 accumulators */
    enum { K_STEP = 32, TRANSPOSABLE = 0 };
    typedef int acc;
    static CUtensorMapDataType tma() { return CU_TENSOR_MAP_DATA_TYPE_UINT8; /* the bits are copied as they are */ }
};

static __device__ __forceinline__ void hpdl__mbar_init(uint64_t *bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(hpdl__smem_u32(bar)), "r"(count));
}

/* Makes the initialised barriers visible to the copy engine and the cluster. */
static __device__ __forceinline__ void hpdl__mbar_init_fence() {
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

/* The producer's arrival: this phase completes when `bytes` have landed. */
static __device__ __forceinline__ void hpdl__mbar_expect_bytes(uint64_t *bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(hpdl__smem_u32(bar)), "r"(bytes)
                 : "memory");
}

/* Waits until the barrier's phase of parity `parity` has completed. */
static __device__ __forceinline__ void hpdl__mbar_wait(uint64_t *bar, unsigned parity) {
    unsigned done;
    do {
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}"
                     : "=r"(done)
                     : "r"(hpdl__smem_u32(bar)), "r"(parity)
                     : "memory");
    } while (!done);
}

/* Arrives on a barrier of this block (release at CTA scope: this thread's
   earlier reads and writes of shared memory come first). */
static __device__ __forceinline__ void hpdl__mbar_arrive(uint64_t *bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(hpdl__smem_u32(bar)) : "memory");
}

/* Arrives on the barrier at the same address in block `cta` of the cluster
   (this block when not in a cluster: cta 0 of a cluster of one). Plain
   (release at CTA scope) semantics: the arrival only says "shared memory
   read", which needs no ordering of this thread's other memory accesses;
   .release.cluster would fence them all, and costs a third of the kernel's
   speed in clusters. */
static __device__ __forceinline__ void hpdl__mbar_arrive_in(uint64_t *bar, unsigned cta) {
    unsigned remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(hpdl__smem_u32(bar)), "r"(cta));
    asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(remote) : "memory");
}

static __device__ __forceinline__ unsigned hpdl__cluster_rank() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}

static __device__ __forceinline__ void hpdl__cluster_sync() {
    asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;" ::: "memory");
}

/* One box of a 2-D tensor map, at element coordinates (x: inner, y: outer),
   into this block's shared memory (and, with a mask, the same offset in each
   masked block of the cluster); completion is counted on `bar`. */
static __device__ __forceinline__ void hpdl__tma_load(const CUtensorMap *map, void *dst, uint64_t *bar, int x, int y,
                                                      unsigned short multicast) {
    if (multicast)
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                     " [%0], [%1, {%2, %3}], [%4], %5;" ::"r"(hpdl__smem_u32(dst)),
                     "l"(map), "r"(x), "r"(y), "r"(hpdl__smem_u32(bar)), "h"(multicast)
                     : "memory");
    else
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                     " [%0], [%1, {%2, %3}], [%4];" ::"r"(hpdl__smem_u32(dst)),
                     "l"(map), "r"(x), "r"(y), "r"(hpdl__smem_u32(bar))
                     : "memory");
}

/* Pieces [first, first + count) of one operand tile (64 rows of M or N each)
   at K offset k0: see "Shared layout" above. */
template <bool MN>
static __device__ __forceinline__ void hpdl__wg_load_pieces(const CUtensorMap *map, unsigned char *tile, uint64_t *bar,
                                                            int outer0, int k0, int first, int count, int step,
                                                            unsigned short multicast) {
    int p;
    for (p = first; p < count; p += step) {
        if (MN)
            hpdl__tma_load(map, tile + p * HPDL__WG_PIECE_BYTES, bar, outer0 + 64 * p, k0, multicast);
        else
            hpdl__tma_load(map, tile + p * HPDL__WG_PIECE_BYTES, bar, k0, outer0 + 64 * p, multicast);
    }
}

/* Writes 1 when this binary holds sm_90a code and the GPU runs it. */
__global__ void hpdl__wg_probe(int *out) {
#ifdef HPDL__SM90A
    *out = 1;
#else
    *out = 0;
#endif
}

/* Runs hpdl__wg_probe on the current GPU: 1 where its sm_90a code ran, -1
   where it did not, 0 where it could not be asked. The first GEMM of a
   program may come inside a graph capture (cudaStreamBeginCapture), where
   the default stream and a plain cudaMalloc are refused: the probe then
   failed, and the Hopper rungs stayed off for the whole process. So the
   probe runs on a stream of its own, with this thread's capture mode
   relaxed for its duration, and an unanswered probe is asked again. */
HPDL_CUDA_API int hpdl__wg_probe_run(void) {
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    cudaStream_t stream = NULL;
    int *flag = NULL, host = 0, answer = 0;
    cudaThreadExchangeStreamCaptureMode(&mode);
    if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess &&
        cudaMalloc((void **)&flag, sizeof(int)) == cudaSuccess) {
        hpdl__wg_probe<<<1, 1, 0, stream>>>(flag);
        if (cudaMemcpyAsync(&host, flag, sizeof(int), cudaMemcpyDeviceToHost, stream) == cudaSuccess &&
            cudaStreamSynchronize(stream) == cudaSuccess)
            answer = host == 1 ? 1 : -1;
    }
    if (flag) cudaFree(flag);
    if (stream) cudaStreamDestroy(stream);
    cudaThreadExchangeStreamCaptureMode(&mode);
    cudaGetLastError(); /* a GPU that cannot run the probe: not an error of the caller's */
    return answer;
}

/* Whether the current device can run the Hopper rungs: asked once per
   device (hpdl__wg_probe_run) until answered, remembered. */
HPDL_CUDA_API int hpdl__wg_available(void) {
    static signed char known[64];
    int device = 0;
    if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= 64) return 0;
    if (!known[device]) known[device] = (signed char)hpdl__wg_probe_run();
    return known[device] == 1;
}

/* cuTensorMapEncodeTiled from the driver, fetched once through the runtime
   (no -lcuda needed). */
HPDL_CUDA_API PFN_cuTensorMapEncodeTiled_v12000 hpdl__tma_encoder(void) {
    static PFN_cuTensorMapEncodeTiled_v12000 fn;
    cudaDriverEntryPointQueryResult q;
    if (!fn && (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", (void **)&fn, 12000, cudaEnableDefault, &q) !=
                    cudaSuccess || q != cudaDriverEntryPointSuccess))
        fn = NULL;
    return fn;
}

/* Tensor map of one operand for 64-row pieces: K-major boxes are
   64 rows x 128 bytes of K (or `rows` rows: the thin rung's), MN-major
   boxes 64 elements x BK rows. */
template <typename T>
static inline hpdl_status hpdl__wg_map(CUtensorMap *map, const hpdl__gemm_operand<T> &x, int outer, int K,
                                       int rows = 64) {
    PFN_cuTensorMapEncodeTiled_v12000 encode = hpdl__tma_encoder();
    const cuuint32_t bk = 128 / sizeof(T), box_k[2] = {bk, (cuuint32_t)rows}, box_mn[2] = {64, bk}, ones[2] = {1, 1};
    cuuint64_t dims[2], stride[1] = {(cuuint64_t)x.ld * sizeof(T)};
    if (!encode) return HPDL_ERR_UNSUPPORTED;
    dims[0] = (cuuint64_t)(x.kcontig ? K : outer);
    dims[1] = (cuuint64_t)(x.kcontig ? outer : K);
    return encode(map, hpdl__wg_type<T>::tma(), 2, (void *)x.p, dims, stride, x.kcontig ? box_k : box_mn, ones,
                  CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS
               ? HPDL_OK
               : HPDL_ERR_UNSUPPORTED;
}

/* ---- ldmatrix, mma.sync ------------------------------------------------- */

/* Four 8x8 matrices of 16-bit values; lane l gives the address of row l%8 of matrix l/8. */
template <bool TRANS> static __device__ __forceinline__ void hpdl__ldmatrix_x4(unsigned r[4], const void *p) {
#ifdef HPDL__GEMM_SM80
    if (TRANS)
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(hpdl__smem_u32(p)) : "memory");
    else
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(hpdl__smem_u32(p)) : "memory");
#else
    (void)p;
    r[0] = r[1] = r[2] = r[3] = 0;
#endif
}

/* d += a (16x16, row) * b (16x8, col), f32 accumulation; PTX names the
   input type, so one overload per type. */
#ifdef HPDL__GEMM_SM80
#define HPDL__DEFINE_MMA16816(T, PTX_TYPE)                                                                  \
    static __device__ __forceinline__ void hpdl__mma16816(T, float d[4], const unsigned a[4], const unsigned b[2]) { \
        asm("mma.sync.aligned.m16n8k16.row.col.f32." PTX_TYPE "." PTX_TYPE                                  \
            ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"                                 \
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])                                                \
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));                            \
    }
#else
#define HPDL__DEFINE_MMA16816(T, PTX_TYPE)                                                                  \
    static __device__ __forceinline__ void hpdl__mma16816(T, float d[4], const unsigned a[4], const unsigned b[2]) { \
        (void)d; (void)a; (void)b;                                                                          \
    }
#endif
HPDL__DEFINE_MMA16816(__half, "f16")
HPDL__DEFINE_MMA16816(__nv_bfloat16, "bf16")

/* f64 tensor cores: d0 (rows 0-7) and d1 (rows 8-15) += a (16 x DK) * b
   (DK x 8), DK 4, 8 or 16. Fragments (g = lane/4, t = lane%4): a[2h] and
   a[2h+1] are rows g and g+8 at k t+4h, b[h] is k t+4h of column g. One
   m16n8k{DK} instruction on sm_90, DK/4 pairs of m8n8k4 on sm_80. */
template <int DK>
static __device__ __forceinline__ void hpdl__dmma(double d0[2], double d1[2], const double *a, const double *b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (DK == 4)
        asm("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
            : "+d"(d0[0]), "+d"(d0[1]), "+d"(d1[0]), "+d"(d1[1])
            : "d"(a[0]), "d"(a[1]), "d"(b[0]));
    else if (DK == 8)
        asm("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
            : "+d"(d0[0]), "+d"(d0[1]), "+d"(d1[0]), "+d"(d1[1])
            : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(b[0]), "d"(b[1]));
    else
        asm("mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7,%8,%9,%10,%11}, "
            "{%12,%13,%14,%15}, {%0,%1,%2,%3};\n"
            : "+d"(d0[0]), "+d"(d0[1]), "+d"(d1[0]), "+d"(d1[1])
            : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(a[4]), "d"(a[5]), "d"(a[6]), "d"(a[7]),
              "d"(b[0]), "d"(b[1]), "d"(b[2]), "d"(b[3]));
#elif defined(HPDL__GEMM_SM80)
    int h;
#pragma unroll
    for (h = 0; h < DK / 4; h++) {
        asm("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};\n"
            : "+d"(d0[0]), "+d"(d0[1]) : "d"(a[2 * h]), "d"(b[h]));
        asm("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};\n"
            : "+d"(d1[0]), "+d"(d1[1]) : "d"(a[2 * h + 1]), "d"(b[h]));
    }
#else
    (void)d0; (void)d1; (void)a; (void)b;
#endif
}

/* f32 on TF32 tensor cores at about f32's accuracy ("3xTF32"): x is split
   into big, x with its low 13 mantissa bits cleared (a TF32 value), and
   small = x - big (exact in f32), and a*b is taken as small_a*big_b +
   big_a*small_b + big_a*big_b, the small products first. The tensor core
   reads small to TF32 too (its low 13 bits ignored), so what is lost is
   small_a*small_b and that truncation: under 2^-19 of |a*b| (one TF32
   product: 2^-10). Two instructions a value (a mask and a subtraction;
   rounding with cvt.rna costs two conversions, and the conversion pipe
   is narrow). Inputs must be finite: an inf or NaN gives NaN (inf - inf). */
struct hpdl__tf32_pair {
    unsigned big, small;
};
static __device__ __forceinline__ hpdl__tf32_pair hpdl__tf32_split(float x) {
    hpdl__tf32_pair p;
    p.big = __float_as_uint(x) & 0xffffe000u;
    p.small = __float_as_uint(x - __uint_as_float(p.big));
    return p;
}

/* d0 (rows 0-7) and d1 (rows 8-15) += a (16 x 8) * b (8 x 8) in 3xTF32
   (m16n8k8), fragments as hpdl__dmma's with DK = 8. */
static __device__ __forceinline__ void hpdl__tf32x3_mma(float d0[2], float d1[2], const hpdl__tf32_pair *a,
                                                        const hpdl__tf32_pair *b) {
#ifdef HPDL__GEMM_SM80
#define HPDL__TF32_MMA(PART_A, PART_B)                                                                          \
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "          \
        "{%0,%1,%2,%3};\n"                                                                                       \
        : "+f"(d0[0]), "+f"(d0[1]), "+f"(d1[0]), "+f"(d1[1])                                                     \
        : "r"(a[0].PART_A), "r"(a[1].PART_A), "r"(a[2].PART_A), "r"(a[3].PART_A), "r"(b[0].PART_B), "r"(b[1].PART_B))
    HPDL__TF32_MMA(small, big);
    HPDL__TF32_MMA(big, small);
    HPDL__TF32_MMA(big, big);
#undef HPDL__TF32_MMA
#else
    (void)d0; (void)d1; (void)a; (void)b;
#endif
}

/* What the padded mma kernel needs of its type: the fragment kept per
   element (f64 the value, f32 its TF32 pair), the tensor-core step, and
   the padding of shared rows that keeps fragment reads conflict-free
   (g = lane/4 and t = lane%4 read row g, column t of a tile stored K
   along rows, or row t, column g of one stored K down columns: f32 rows
   need 4 (mod 8) words between them in the first case, 8 (mod 32) in the
   second; f64 rows 4 doubles in both); TILE_SUMS: the tensor core sums one
   K tile from zero and an f32 addition (rounded to nearest) adds it to the
   running sum, because the tensor core's own f32 additions round towards
   zero, an error that grows with K (one H200, 4096^3: 3.4e-5 of max |C|
   against 3e-7 for the SIMT rungs when it summed all of K itself);
   SLICED: the rung splits K (a strided batch of slices). f64 does not, and
   its kernel is 4 % slower when it takes its operands from a batch (one
   H200, 4096^3: 0.775 of cuBLAS against 0.808). */
template <typename T> struct hpdl__padded_mma_type;
template <> struct hpdl__padded_mma_type<double> {
    typedef double frag;
    enum { PAD_K = 4, PAD_MN = 4, TILE_SUMS = 0, SLICED = 0 };
    static __device__ __forceinline__ double load(double x) { return x; }
    template <int DK> static __device__ __forceinline__ void mma(double d0[2], double d1[2], const double *a, const double *b) {
        hpdl__dmma<DK>(d0, d1, a, b);
    }
};
template <> struct hpdl__padded_mma_type<float> {
    typedef hpdl__tf32_pair frag;
    enum { PAD_K = 4, PAD_MN = 8, TILE_SUMS = 1, SLICED = 1 };
    static __device__ __forceinline__ hpdl__tf32_pair load(float x) { return hpdl__tf32_split(x); }
    template <int DK>
    static __device__ __forceinline__ void mma(float d0[2], float d1[2], const hpdl__tf32_pair *a, const hpdl__tf32_pair *b) {
        static_assert(DK == 8, "3xTF32 steps are m16n8k8");
        hpdl__tf32x3_mma(d0, d1, a, b);
    }
};

/* Shared layouts of a ROWS x COLS tile (element offsets).
   hpdl__gemm_swizzle (16-bit elements): 16-byte chunks XOR-permuted by row so
   that the 8 row addresses of an ldmatrix phase fall in 8 different bank
   groups. Rows wider than 64 elements (128 bytes) are cut into PANEL-wide
   panels stored one after the other: the layout the copy engine writes with
   its 128-byte swizzle (pieces of 64 elements x ROWS, see the Hopper rungs).
   hpdl__gemm_pad<PAD>::rows: rows padded by PAD elements (the padded mma
   kernel's, see hpdl__padded_mma_type). */
template <int ROWS, int COLS> struct hpdl__gemm_swizzle {
    enum { PANEL = COLS > 64 ? 64 : COLS };
    static __device__ __forceinline__ int at(int r, int c) {
        int x = PANEL == 64 ? (r & 7) : ((r >> 1) & 3);
        return c / PANEL * (ROWS * PANEL) + r * PANEL + (((c % PANEL >> 3) ^ x) << 3) + (c & 7);
    }
};
template <int PAD> struct hpdl__gemm_pad {
    template <int ROWS, int COLS> struct rows {
        static __device__ __forceinline__ int at(int r, int c) { return r * (COLS + PAD) + c; }
    };
};

template <int BYTES> struct hpdl__gemm_bits;
template <> struct hpdl__gemm_bits<2> { typedef unsigned short type; };
template <> struct hpdl__gemm_bits<4> { typedef unsigned type; };
template <> struct hpdl__gemm_bits<8> { typedef unsigned long long type; };

/* Copies the ROWS x COLS block at (r0, c0) of the stored rows x cols matrix
   X into shared memory at LAYOUT::at: cp.async 16 bytes where the chunk lies
   inside X and vec allows it, element by element (zeros outside) where not.
   THREADS threads share the work. FAST: the whole block is inside and aligned. */
template <typename T, int ROWS, int COLS, int THREADS, typename LAYOUT, bool FAST>
static __device__ __forceinline__ void hpdl__gemm_tile_async(T *s, const T *X, int ld, int r0, int c0, int rows, int cols,
                                                             int vec) {
    typedef typename hpdl__gemm_bits<sizeof(T)>::type bits;
    enum { E = 16 / sizeof(T), CPR = COLS / E, PER_THREAD = ROWS * CPR / THREADS };
    static_assert(ROWS * CPR % THREADS == 0, "tile chunks must divide among the threads");
    int i, j;
#pragma unroll
    for (i = 0; i < PER_THREAD; i++) {
        int chunk = (int)threadIdx.x + i * THREADS, r = chunk / CPR, c = chunk % CPR * E;
        int gr = r0 + r, gc = c0 + c;
        T *dst = s + LAYOUT::at(r, c);
        const T *src = X + (ptrdiff_t)gr * ld + gc;
        if (FAST || (vec && gr < rows && gc + E <= cols)) {
            hpdl__cp_async16(dst, src);
        } else {
            bits v[E];
            uint4 u;
#pragma unroll
            for (j = 0; j < E; j++) v[j] = (gr < rows && gc + j < cols) ? ((const bits *)src)[j] : (bits)0;
            memcpy(&u, v, sizeof u);
            *(uint4 *)dst = u;
        }
    }
}

/* Block tile BM x BN x BK, STAGES deep in shared memory, warps of WM x WN:
   the shape of a tensor-core kernel (threads = 32 * BM/WM * BN/WN). */
template <int BM_, int BN_, int BK_, int STAGES_, int WM_, int WN_, int DK_ = 4> struct hpdl__tc_shape {
    enum { BM = BM_, BN = BN_, BK = BK_, S = STAGES_, WM = WM_, WN = WN_, DK = DK_ /* f64 mma K: 4, 8 or 16 */ };
    enum { WARPS_N = BN / WN, THREADS = 32 * (BM / WM) * (BN / WN) };
};
typedef hpdl__tc_shape<128, 128, 64, 3, 64, 64> hpdl__mma_shape;     /* f16/bf16: 4 warps, 2 blocks per SM */
typedef hpdl__tc_shape<128, 128, 32, 4, 64, 64> hpdl__mma_edge_shape; /* f16/bf16 with edge tiles (see hpdl__gemm_launch_mma) */
typedef hpdl__tc_shape<128, 64, 16, 3, 64, 32, 16> hpdl__dmma_shape; /* f64: 4 warps, 2 blocks per SM, m16n8k16 */
typedef hpdl__tc_shape<128, 64, 32, 3, 64, 32, 8> hpdl__tf32x3_shape; /* f32 3xTF32: 4 warps, 2 blocks per SM, m16n8k8 */
typedef hpdl__tc_shape<64, 64, 32, 3, 32, 32, 8> hpdl__tf32x3_small_shape; /* 4 warps, 4 blocks per SM (hpdl__tf32x3_small_tiles) */

/* One K tile of an operand (OT = its M or N tile, BK deep) into a stage: a
   kcontig operand is stored OT x BK, the other BK x OT, as in global memory. */
template <typename T, int OT, int BK, int THREADS, template <int, int> class LAYOUT, bool KCONTIG, bool FAST>
static __device__ __forceinline__ void hpdl__gemm_stage(T *s, const hpdl__gemm_operand<T> &x, int o0, int k0, int O, int K) {
    if (KCONTIG) hpdl__gemm_tile_async<T, OT, BK, THREADS, LAYOUT<OT, BK>, FAST>(s, x.p, x.ld, o0, k0, O, K, x.vec);
    else hpdl__gemm_tile_async<T, BK, OT, THREADS, LAYOUT<BK, OT>, FAST>(s, x.p, x.ld, k0, o0, K, O, x.vec);
}

/* One operand's K tiles for the mma rung when they are whole and aligned
   (FAST), in K order: where this thread's 16-byte chunks come from and go
   to is worked out once, and each tile only moves the source on. (The
   general hpdl__gemm_stage works every address out again per chunk; on an
   H100 two thirds of the rung's instructions were not mma.sync.) A
   thread's chunks are ROW_STEP stored rows apart (in one panel), a multiple
   of the swizzle's 8-row period, so their shared offsets are a constant
   apart too.
   KCONTIG: stored OT x BK (K along rows), else BK x OT. */
template <typename T, int OT, int BK, int THREADS, bool KCONTIG> struct hpdl__tile_copier {
    enum { ROWS = KCONTIG ? OT : BK, COLS = KCONTIG ? BK : OT };
    typedef hpdl__gemm_swizzle<ROWS, COLS> layout;
    enum { E = 16 / sizeof(T), CPR = COLS / E, PER_THREAD = ROWS * CPR / THREADS, ROW_STEP = THREADS / CPR };
    static_assert(ROWS * CPR % THREADS == 0 && ROW_STEP % 8 == 0, "a thread's chunks must keep the swizzle's pattern");
    const unsigned char *src; /* this thread's first chunk of the next tile */
    int dst;                  /* its element offset in a stage */
    __device__ __forceinline__ void init(const hpdl__gemm_operand<T> &x, int o0) {
        int r = (int)threadIdx.x / CPR, c = (int)threadIdx.x % CPR * E;
        src = (const unsigned char *)(x.p + (ptrdiff_t)(r + (KCONTIG ? o0 : 0)) * x.ld + c + (KCONTIG ? 0 : o0));
        dst = layout::at(r, c);
    }
    /* the next K tile into stage s */
    __device__ __forceinline__ void copy(T *s, int ld) {
        int i;
#pragma unroll
        for (i = 0; i < PER_THREAD; i++)
            hpdl__cp_async16(s + dst + i * ROW_STEP * layout::PANEL, src + (ptrdiff_t)i * ROW_STEP * ld * (ptrdiff_t)sizeof(T));
        src += KCONTIG ? (ptrdiff_t)BK * sizeof(T) : (ptrdiff_t)BK * ld * (ptrdiff_t)sizeof(T);
    }
};

/* K tile k of both operands into stage st of the mma rung, one cp.async
   group: by the copiers (tiles come in K order) when FAST, else with
   hpdl__gemm_stage's checks. */
template <typename SH, bool AK, bool BKC, bool FAST, typename T, typename CA, typename CB>
static __device__ __forceinline__ void hpdl__mma_load(const hpdl__gemm_args<T, float> &g, T *sa, T *sb, int st, int k, int tm,
                                                      int tn, CA &ca, CB &cb) {
    if (FAST) {
        ca.copy(sa + st * SH::BM * SH::BK, g.a.ld);
        cb.copy(sb + st * SH::BN * SH::BK, g.b.ld);
    } else {
        hpdl__gemm_stage<T, SH::BM, SH::BK, SH::THREADS, hpdl__gemm_swizzle, AK, FAST>(sa + st * SH::BM * SH::BK, g.a, tm,
                                                                                       k * SH::BK, g.M, g.K);
        hpdl__gemm_stage<T, SH::BN, SH::BK, SH::THREADS, hpdl__gemm_swizzle, BKC, FAST>(sb + st * SH::BN * SH::BK, g.b, tn,
                                                                                        k * SH::BK, g.N, g.K);
    }
}

/* The same through the copy engine (sm_90a; the launcher picks it only
   there): one thread asks for both operands' 64-row pieces, which land on
   the stage's mbarrier. The swizzled panels it writes are
   hpdl__gemm_swizzle's layout, so the ldmatrix side is the same. */
template <typename SH, bool AK, bool BKC, typename T>
static __device__ __forceinline__ void hpdl__mma_load_tma(const CUtensorMap *map_a, const CUtensorMap *map_b, T *sa, T *sb,
                                                          uint64_t *full, uint64_t *empty, int st, int k, int tm, int tn) {
#ifdef HPDL__SM90A
    if (k >= SH::S) hpdl__mbar_wait(&empty[st], (unsigned)(k / SH::S - 1) & 1); /* tile k-S read by every warp */
    hpdl__mbar_expect_bytes(&full[st], (SH::BM + SH::BN) * SH::BK * sizeof(T));
    hpdl__wg_load_pieces<!AK>(map_a, (unsigned char *)(sa + st * SH::BM * SH::BK), &full[st], tm, k * SH::BK, 0, SH::BM / 64, 1, 0);
    hpdl__wg_load_pieces<!BKC>(map_b, (unsigned char *)(sb + st * SH::BN * SH::BK), &full[st], tn, k * SH::BK, 0, SH::BN / 64, 1, 0);
#else
    (void)map_a; (void)map_b; (void)sa; (void)sb; (void)full; (void)empty; (void)st; (void)k; (void)tm; (void)tn;
#endif
}

/* A warp has read its last of stage st (its ldmatrix come before the
   arrival): one arrival per warp on the stage's "empty" barrier. */
static __device__ __forceinline__ void hpdl__mma_release(uint64_t *empty, int st, int lane) {
#ifdef HPDL__SM90A
    __syncwarp();
    if (lane == 0) hpdl__mbar_arrive(&empty[st]);
#else
    (void)empty; (void)st; (void)lane;
#endif
}

/* Tile k into stage st, if `have` (it is inside K): by the copy engine,
   or by every thread's cp.async, one commit group per call either way so
   that hpdl__mma_landed can count them. The copy engine is asked by lane 0
   of warp k % warps: the asking thread first waits until every warp has
   read the stage and then runs ~50 instructions more per tile, so the
   warps take turns at it (H100, 4096^3, the two alternated: 0.59-0.62 of
   cuBLAS with warp 0 always asking, 0.60-0.63 taking turns). */
template <typename SH, bool AK, bool BKC, bool FAST, bool TMA, typename T, typename CA, typename CB>
static __device__ __forceinline__ void hpdl__mma_fetch(const hpdl__gemm_args<T, float> &g, const CUtensorMap *map_a,
                                                       const CUtensorMap *map_b, T *sa, T *sb, uint64_t *full,
                                                       uint64_t *empty, int st, int k, bool have, int tm, int tn, CA &ca,
                                                       CB &cb) {
    if (TMA) {
        if (have && (int)threadIdx.x == k % (SH::THREADS / 32) * 32)
            hpdl__mma_load_tma<SH, AK, BKC>(map_a, map_b, sa, sb, full, empty, st, k, tm, tn);
        return;
    }
    if (have) hpdl__mma_load<SH, AK, BKC, FAST>(g, sa, sb, st, k, tm, tn, ca, cb);
    hpdl__cp_async_commit();
}

/* Waits until tile k (in stage st) has landed: its mbarrier phase (TMA; the
   k/S-th fill of the stage), or all but the S-2 newest cp.async groups. */
template <int S, bool TMA> static __device__ __forceinline__ void hpdl__mma_landed(uint64_t *full, int st, int k) {
#ifdef HPDL__SM90A
    if (TMA) {
        hpdl__mbar_wait(&full[st], (unsigned)(k / S) & 1);
        return;
    }
#else
    (void)full; (void)st; (void)k;
#endif
    hpdl__cp_async_wait<S - 2>();
}

/* This lane's ldmatrix offsets (elements within a stage), worked out once.
   A fragment's swizzled offset is a per-lane part plus a multiple of one
   index: of the 16-row tile (i or j) when K runs along the stored rows, of
   the 16-deep step when K runs down them. So only the per-lane parts for
   the other index are kept, aoff[NA] and boff[NB] (hpdl__mma_frags). On an
   H100 this took the kernels from 236-248 registers to 224-232. */
template <typename SH, bool AK, bool BKC> struct hpdl__mma_lanes {
    enum { KS = SH::BK / 16, MI = SH::WM / 16, NJ16 = SH::WN / 16, NA = AK ? KS : MI, NB = BKC ? KS : NJ16 };
    typedef hpdl__gemm_swizzle<AK ? SH::BM : SH::BK, AK ? SH::BK : SH::BM> A_LAYOUT; /* stored as in global memory */
    typedef hpdl__gemm_swizzle<BKC ? SH::BN : SH::BK, BKC ? SH::BK : SH::BN> B_LAYOUT;
    int aoff[NA], boff[NB];
    __device__ __forceinline__ void init(int wm, int wn, int lane) {
        int n;
#pragma unroll
        for (n = 0; n < NA; n++) /* lanes 0-15 give rows at k, lanes 16-31 the same rows at k+8 */
            aoff[n] = AK ? A_LAYOUT::at(wm + lane % 16, n * 16 + lane / 16 * 8)
                         : A_LAYOUT::at(lane % 8 + lane / 16 * 8, wm + n * 16 + lane / 8 % 2 * 8);
#pragma unroll
        for (n = 0; n < NB; n++)
            boff[n] = BKC ? B_LAYOUT::at(wn + lane % 8 + lane / 16 * 8, n * 16 + lane / 8 % 2 * 8)
                          : B_LAYOUT::at(lane % 8 + lane / 8 % 2 * 8, wn + n * 16 + lane / 16 * 8);
    }
    /* A tile i, B tile j (two n8 fragments) of 16-deep step s */
    __device__ __forceinline__ int a(int i, int s) const { return AK ? aoff[s] + i * 16 * SH::BK : aoff[i] + s * 16 * A_LAYOUT::PANEL; }
    __device__ __forceinline__ int b(int j, int s) const { return BKC ? boff[s] + j * 16 * SH::BK : boff[j] + s * 16 * B_LAYOUT::PANEL; }
};

/* Fragments of 16-deep K step s for a warp: A (WM/16 tiles of 16x16) and B
   (WN/8 tiles of 16x8) by ldmatrix, .trans where the operand is stored the
   other way round ([k][m] for A, [k][n] for B). */
template <typename SH, bool AK, bool BKC, typename T>
static __device__ __forceinline__ void hpdl__mma_frags(const T *ta, const T *tb, const hpdl__mma_lanes<SH, AK, BKC> &at, int s,
                                                       unsigned af[][4], unsigned bf[][2]) {
    int i, j;
#pragma unroll
    for (i = 0; i < SH::WM / 16; i++) hpdl__ldmatrix_x4<!AK>(af[i], ta + at.a(i, s));
#pragma unroll
    for (j = 0; j < SH::WN / 16; j++) { /* two n8 fragments per ldmatrix.x4 */
        unsigned r[4];
        hpdl__ldmatrix_x4<!BKC>(r, tb + at.b(j, s));
        bf[2 * j][0] = r[0];
        bf[2 * j][1] = r[1];
        bf[2 * j + 1][0] = r[2];
        bf[2 * j + 1][1] = r[3];
    }
}

/* The mma rung's shared memory: the pipeline's stages, which the epilogue
   then reuses for the block's f32 tile (rows padded by 8 floats: a warp's
   8-byte fragment stores then fall on distinct banks), then the mbarriers. */
template <typename SH, typename T> struct hpdl__mma_smem_plan {
    enum { STAGES = SH::S * (SH::BM + SH::BN) * SH::BK * (int)sizeof(T), LD = SH::BN + 8, OUT = SH::BM * LD * 4 };
    enum { BARRIERS = STAGES > OUT ? STAGES : OUT, BYTES = BARRIERS + 16 * SH::S };
};

/* The mma rung's epilogue: each warp puts its accumulators into the block's
   f32 tile in shared memory; then the block writes C row by row, four
   consecutive elements per thread (hpdl__gemm_out4: one 8-byte store of
   f16 where inside), so a warp writes whole 32-byte sectors. Stored
   straight from the fragments (two adjacent elements of eight rows per
   warp, one 2-byte store each) the rung ran at 0.56-0.58 of cuBLAS at
   4096^3 on an H100; this way 0.59-0.60, and 0.62 on 4095x1000x3001. */
template <typename SH, typename T, typename ACC>
static __device__ __forceinline__ void hpdl__mma_store(const hpdl__gemm_args<T, float> &g, const ACC &acc, float *tile, int tm,
                                                       int tn, int wm, int wn, int lane) {
    enum { LD = hpdl__mma_smem_plan<SH, T>::LD, CHUNKS = SH::BN / 4 };
    int i, j, c;
    __syncthreads(); /* every warp is done with the stages */
#pragma unroll
    for (i = 0; i < SH::WM / 16; i++)
#pragma unroll
        for (j = 0; j < SH::WN / 8; j++) {
            float *p = tile + (wm + i * 16 + lane / 4) * LD + wn + j * 8 + lane % 4 * 2;
            *(float2 *)p = make_float2(acc[i][j][0], acc[i][j][1]);
            *(float2 *)(p + 8 * LD) = make_float2(acc[i][j][2], acc[i][j][3]);
        }
    __syncthreads();
    for (c = (int)threadIdx.x; c < SH::BM * CHUNKS; c += SH::THREADS) {
        float v[4];
        hpdl__gemm_sload4(tile + c / CHUNKS * LD + c % CHUNKS * 4, v);
        hpdl__gemm_out4(g, tm + c / CHUNKS, tn + c % CHUNKS * 4, v);
    }
}

/* mma (f16/bf16): block tiles in a multi-stage pipeline (cp.async, or the
   copy engine when TMA), fragments by ldmatrix one 16-deep step ahead of
   the mma.sync m16n8k16 that use them (f32 accumulators in registers). One
   barrier per tile, after the mma of its next-to-last step; the last step
   then loads the next tile's first fragments, so they are not read right
   after the barrier. */
template <typename T, bool AK, bool BKC, typename SH, bool FAST, bool TMA>
__global__ void __launch_bounds__(SH::THREADS, SH::THREADS <= 128 ? 2 : 1)
    hpdl__gemm_mma(hpdl__gemm_args<T, float> g, const __grid_constant__ CUtensorMap map_a,
                   const __grid_constant__ CUtensorMap map_b) {
#ifdef HPDL__GEMM_SM80
    enum { BM = SH::BM, BN = SH::BN, BK = SH::BK, S = SH::S, MI = SH::WM / 16, NJ = SH::WN / 8, TH = SH::THREADS };
    enum { KS = BK / 16 };
    static_assert(KS % 2 == 0, "fragment buffers alternate by step: BK must be a multiple of 32");
    extern __shared__ uint4 hpdl__gemm_smem[];
    T *sa = (T *)hpdl__smem_align1024(hpdl__gemm_smem), *sb = sa + S * BM * BK; /* the copy engine's swizzle needs 1 KB */
    /* per stage (TMA): its tile landed; every warp read it */
    uint64_t *full = (uint64_t *)((unsigned char *)sa + hpdl__mma_smem_plan<SH, T>::BARRIERS), *empty = full + S;
    int lane = (int)threadIdx.x % 32, warp = (int)threadIdx.x / 32;
    int wm = warp / SH::WARPS_N * SH::WM, wn = warp % SH::WARPS_N * SH::WN;
    int tm, tn, kt0, st, ks, i, j, KT = (g.K + BK - 1) / BK;
    float acc[MI][NJ][4];
    unsigned af[2][MI][4], bf[2][NJ][2];
    hpdl__tile_copier<T, BM, BK, TH, AK> ca;
    hpdl__tile_copier<T, BN, BK, TH, BKC> cb;
    hpdl__mma_lanes<SH, AK, BKC> lanes;
    hpdl__gemm_tile_order<16>(&tm, &tn); /* H100 f16 4096^3: DRAM reads 193 MB with 8 rows, 154 MB with 16 */
    tm *= BM;
    tn *= BN;
    if (FAST && !TMA) {
        ca.init(g.a, tm);
        cb.init(g.b, tn);
    }
#pragma unroll
    for (i = 0; i < MI; i++)
#pragma unroll
        for (j = 0; j < NJ; j++) acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0.0f;
#ifdef HPDL__SM90A
    if (TMA && threadIdx.x == 0) {
        for (st = 0; st < S; st++) {
            hpdl__mbar_init(&full[st], 1);
            hpdl__mbar_init(&empty[st], TH / 32);
        }
        hpdl__mbar_init_fence();
    }
    if (TMA) __syncthreads();
#endif
    for (st = 0; st < S - 1; st++) /* the pipeline's first S-1 tiles */
        hpdl__mma_fetch<SH, AK, BKC, FAST, TMA>(g, &map_a, &map_b, sa, sb, full, empty, st, st, st < KT, tm, tn, ca, cb);
    if (KT > 0) hpdl__mma_landed<S, TMA>(full, 0, 0);
    __syncthreads();
    lanes.init(wm, wn, lane);
    hpdl__mma_frags(sa, sb, lanes, 0, af[0], bf[0]);
    for (kt0 = 0; kt0 < KT; kt0 += S) {
#pragma unroll
        for (st = 0; st < S; st++) { /* tile kt0 + st sits in stage st: unrolled, so every stage offset is a constant */
            const int kt = kt0 + st, next = kt + S - 1;
            if (kt >= KT) break;
#pragma unroll
            for (ks = 0; ks < KS; ks++) {
                if (ks + 1 < KS)
                    hpdl__mma_frags(sa + st * BM * BK, sb + st * BN * BK, lanes, ks + 1, af[(ks + 1) % 2], bf[(ks + 1) % 2]);
                else if (kt + 1 < KT) /* the next tile's first step: it landed by the barrier of the step before */
                    hpdl__mma_frags(sa + (st + 1) % S * BM * BK, sb + (st + 1) % S * BN * BK, lanes, 0, af[0], bf[0]);
                /* Tile kt+S-1 into stage (st-1)%S once every warp has read tile kt-1 from it (cp.async:
                   they had by the previous barrier); after step 1's ldmatrix, which may not pass
                   these copies. */
                if (ks == 0)
                    hpdl__mma_fetch<SH, AK, BKC, FAST, TMA>(g, &map_a, &map_b, sa, sb, full, empty, (st + S - 1) % S, next,
                                                            next < KT, tm, tn, ca, cb);
#pragma unroll
                for (i = 0; i < MI; i++)
#pragma unroll
                    for (j = 0; j < NJ; j++) hpdl__mma16816(T(), acc[i][j], af[ks % 2][i], bf[ks % 2][j]);
                if (ks + 2 == KS) { /* this warp has loaded its last fragments of tile kt */
                    if (TMA) hpdl__mma_release(empty, st, lane);
                    if (kt + 1 < KT) hpdl__mma_landed<S, TMA>(full, (st + 1) % S, kt + 1); /* tile kt+1 has landed ... */
                    if (!TMA) __syncthreads(); /* ... for all threads (with TMA each warp waits for itself) */
                }
            }
        }
    }
    hpdl__cp_async_wait<0>();
    hpdl__mma_store<SH>(g, acc, (float *)sa, tm, tn, wm, wn, lane);
#else
    (void)g; (void)map_a; (void)map_b; /* host pass, or a GPU without mma.sync: the launcher never starts it */
#endif
}

template <int MI, int NJ, typename T> static __device__ __forceinline__ void hpdl__padded_mma_zero(T sums[MI][NJ][2]) {
    int i, j;
#pragma unroll
    for (i = 0; i < MI; i++)
#pragma unroll
        for (j = 0; j < NJ; j++) sums[i][j][0] = sums[i][j][1] = 0;
}

template <int MI, int NJ, typename T>
static __device__ __forceinline__ void hpdl__padded_mma_add(T acc[MI][NJ][2], const T tile[MI][NJ][2]) {
    int i, j;
#pragma unroll
    for (i = 0; i < MI; i++)
#pragma unroll
        for (j = 0; j < NJ; j++) {
            acc[i][j][0] += tile[i][j][0];
            acc[i][j][1] += tile[i][j][1];
        }
}

/* A GEMM epilogue's second destination: mirror(i, v) receives the 16
   bytes of outputs C[i], C[i + 1], ... (i = m ldc + n) from v. This one,
   the kernels' default (POSTS 0), receives nothing and compiles to
   nothing; the data-parallel driver's (hpdl__ipc_mirror, hpdl_mpi.h) posts
   them into a peer GPU's memory. */
struct hpdl__gemm_no_mirror {
    enum { POSTS = 0 };
    template <typename T> __device__ __forceinline__ void operator()(size_t, const T *) const {}
};

/* Row stride of a tile staged in shared memory for its mirror: 4 more
   elements keep rows 16-byte aligned and spread them over the banks. */
template <int BN> struct hpdl__mirror_row { enum { STRIDE = BN + 4 }; };

/* The block's BM x BN tile (rows of hpdl__mirror_row's stride in shared
   memory) to the mirror in 16-byte pieces, consecutive threads along a
   row: a warp sends 512 contiguous bytes where the accumulators' own
   layout would send 8 rows of 32. N and ldc are multiples of the piece. */
template <typename T, int BM, int BN, int TH, typename MR, typename ARGS>
static __device__ __forceinline__ void hpdl__gemm_mirror_tile(const ARGS &g, int tm, int tn, const T *tile,
                                                              const MR &mirror) {
    enum { PER = 16 / sizeof(T), PIECES = BM * BN / PER };
    int c;
    for (c = (int)threadIdx.x; c < PIECES; c += TH) {
        const int r = c * PER / BN, col = c * PER % BN, m = tm + r, n = tn + col;
        if (m < g.M && n < g.N) mirror((size_t)m * g.ldc + n, tile + r * hpdl__mirror_row<BN>::STRIDE + col);
    }
}

/* mma for f64 (DMMA) and f32 (3xTF32): block tiles in a multi-stage
   cp.async pipeline, tensor-core mma.sync with operands read from padded
   shared rows (f32: each element split into its TF32 pair as it is read);
   a warp owns WM x WN (fragments of 8x8). With a mirror (alpha 1, beta 0)
   the tile is also staged in the shared memory the stages no longer need
   and handed to it (hpdl__gemm_mirror_tile). */
template <typename T, bool AK, bool BKC, typename SH, bool FAST, typename MIRROR>
__global__ void __launch_bounds__(SH::THREADS, SH::THREADS <= 128 ? 2 : 1)
    hpdl__gemm_padded_mma(hpdl__gemm_args<T, T> g, hpdl__gemm_batch batch, MIRROR mirror) {
#ifdef HPDL__GEMM_SM80
    typedef hpdl__padded_mma_type<T> ty;
    typedef typename ty::frag frag;
    enum { BM = SH::BM, BN = SH::BN, BK = SH::BK, S = SH::S, MI = SH::WM / 8, NJ = SH::WN / 8, TH = SH::THREADS };
    enum { PA = AK ? ty::PAD_K : ty::PAD_MN, PB = BKC ? ty::PAD_K : ty::PAD_MN };
    enum { A_STAGE = AK ? BM * (BK + PA) : BK * (BM + PA), B_STAGE = BKC ? BN * (BK + PB) : BK * (BN + PB) };
    extern __shared__ uint4 hpdl__gemm_smem[];
    T *sa = (T *)hpdl__gemm_smem, *sb = sa + S * A_STAGE;
    int lane = (int)threadIdx.x % 32, warp = (int)threadIdx.x / 32;
    int wm = warp / SH::WARPS_N * SH::WM, wn = warp % SH::WARPS_N * SH::WN;
    int tm, tn, kt, kk, i, j, KT;
    T acc[MI][NJ][2], tile[MI][NJ][2]; /* tile: this K tile's sums (TILE_SUMS) */
    frag a[SH::DK / 4][MI], b[SH::DK / 4][NJ];
    if (ty::SLICED) hpdl__gemm_batch_pick(g, batch); /* K slices in a strided batch */
    KT = (g.K + BK - 1) / BK;
    hpdl__gemm_tile_order(&tm, &tn);
    tm *= BM;
    tn *= BN;
    hpdl__padded_mma_zero<MI, NJ>(acc);
    for (kt = 0; kt < S - 1; kt++) {
        if (kt < KT) {
            hpdl__gemm_stage<T, BM, BK, TH, hpdl__gemm_pad<PA>::template rows, AK, FAST>(sa + kt * A_STAGE, g.a, tm, kt * BK, g.M, g.K);
            hpdl__gemm_stage<T, BN, BK, TH, hpdl__gemm_pad<PB>::template rows, BKC, FAST>(sb + kt * B_STAGE, g.b, tn, kt * BK, g.N, g.K);
        }
        hpdl__cp_async_commit();
    }
    for (kt = 0; kt < KT; kt++) {
        const T *ta = sa + kt % S * A_STAGE, *tb = sb + kt % S * B_STAGE;
        int next = kt + S - 1;
        hpdl__cp_async_wait<S - 2>();
        __syncthreads();
        if (next < KT) {
            hpdl__gemm_stage<T, BM, BK, TH, hpdl__gemm_pad<PA>::template rows, AK, FAST>(sa + next % S * A_STAGE, g.a, tm, next * BK, g.M, g.K);
            hpdl__gemm_stage<T, BN, BK, TH, hpdl__gemm_pad<PB>::template rows, BKC, FAST>(sb + next % S * B_STAGE, g.b, tn, next * BK, g.N, g.K);
        }
        hpdl__cp_async_commit();
        if (ty::TILE_SUMS) hpdl__padded_mma_zero<MI, NJ>(tile);
#pragma unroll
        for (kk = 0; kk < BK; kk += SH::DK) {
            int h; /* fragments: row (or column) lane/4 (+8i), k lane%4 + 4h */
#pragma unroll
            for (h = 0; h < SH::DK / 4; h++) {
                int k = kk + h * 4 + lane % 4;
#pragma unroll
                for (i = 0; i < MI; i++) {
                    int m = wm + i * 8 + lane / 4;
                    a[h][i] = ty::load(AK ? ta[m * (BK + PA) + k] : ta[k * (BM + PA) + m]);
                }
#pragma unroll
                for (j = 0; j < NJ; j++) {
                    int n = wn + j * 8 + lane / 4;
                    b[h][j] = ty::load(BKC ? tb[n * (BK + PB) + k] : tb[k * (BN + PB) + n]);
                }
            }
#pragma unroll
            for (i = 0; i < MI; i += 2)
#pragma unroll
                for (j = 0; j < NJ; j++) {
                    frag af[SH::DK / 2], bf[SH::DK / 4];
#pragma unroll
                    for (h = 0; h < SH::DK / 4; h++) {
                        af[2 * h] = a[h][i];
                        af[2 * h + 1] = a[h][i + 1];
                        bf[h] = b[h][j];
                    }
                    if (ty::TILE_SUMS) ty::template mma<SH::DK>(tile[i][j], tile[i + 1][j], af, bf);
                    else ty::template mma<SH::DK>(acc[i][j], acc[i + 1][j], af, bf);
                }
        }
        if (ty::TILE_SUMS) hpdl__padded_mma_add<MI, NJ>(acc, tile);
    }
    hpdl__cp_async_wait<0>();
#pragma unroll
    for (i = 0; i < MI; i++)
#pragma unroll
        for (j = 0; j < NJ; j++) {
            int m = tm + wm + i * 8 + lane / 4, n = tn + wn + j * 8 + lane % 4 * 2;
            hpdl__gemm_out(g, m, n, acc[i][j][0]);
            hpdl__gemm_out(g, m, n + 1, acc[i][j][1]);
        }
    if (MIRROR::POSTS) {
        T *tile = (T *)hpdl__gemm_smem;
        __syncthreads(); /* every warp is done with the stages */
#pragma unroll
        for (i = 0; i < MI; i++)
#pragma unroll
            for (j = 0; j < NJ; j++) {
                T *at = tile + (wm + i * 8 + lane / 4) * hpdl__mirror_row<BN>::STRIDE + wn + j * 8 + lane % 4 * 2;
                at[0] = acc[i][j][0];
                at[1] = acc[i][j][1];
            }
        __syncthreads();
        hpdl__gemm_mirror_tile<T, BM, BN, TH>(g, tm, tn, tile, mirror);
    }
#else
    (void)g; (void)batch; (void)mirror;
#endif
}

/* ------------------------------------------------------------------------ */
/* Host side: cuBLAS, launchers, public functions                            */
/* ------------------------------------------------------------------------ */

/* p and ld allow vector accesses of `elems` elements of `size` bytes. */
HPDL_CUDA_API int hpdl__gemm_aligned(const void *p, int ld, int elems, size_t size) {
    return (uintptr_t)p % (elems * size) == 0 && ld % elems == 0;
}

/* Kernel arguments; vec_elems: the width of the rung's vector loads. */
template <typename T, typename ACC>
static inline hpdl__gemm_args<T, ACC> hpdl__gemm_make_args(hpdl_transpose ta, hpdl_transpose tb, int M, int N, int K,
                                                          ACC alpha, const T *A, int lda, const T *B, int ldb, ACC beta,
                                                          T *C, int ldc, int vec_elems) {
    hpdl__gemm_args<T, ACC> g;
    g.a.p = A; g.a.ld = lda; g.a.kcontig = ta == HPDL_NO_TRANS;
    g.a.vec = hpdl__gemm_aligned(A, lda, vec_elems, sizeof(T));
    g.b.p = B; g.b.ld = ldb; g.b.kcontig = tb == HPDL_TRANS;
    g.b.vec = hpdl__gemm_aligned(B, ldb, vec_elems, sizeof(T));
    g.C = C; g.ldc = ldc; g.cvec = hpdl__gemm_aligned(C, ldc, 4, sizeof(T));
    g.M = M; g.N = N; g.K = K;
    g.alpha = alpha; g.beta = beta;
    g.bias = NULL; g.relu = 0;
    return g;
}

/* ---- small GEMMs: a CNN's linear layers ------------------------------------
   At a batch of 32, a linear layer's GEMM (32 x 120 x 400, its gradients
   120 x 400 x 32 and 32 x 400 x 120) fills a handful of the 32 x 32 tiles
   of the smem rung, each walking all of K alone, one k-tile after another.
   Here a block takes a 16 x 16 tile of C and splits K over 4 slices of 64
   threads (each thread 2 x 2 outputs over its 16 k of every 64-wide
   k-tile), the slices' sums added in shared memory at the end: 4x the
   blocks, a quarter of the steps. The next k-tile is read into registers
   while the current one is multiplied. */
#define HPDL__GEMM_SMALL_BK 64 /* k per step: 4 slices of 16 */
#define HPDL__GEMM_SMALL_LDS 18 /* a k row of 16 outputs, padded (fewer bank conflicts on the stores) */

/* This thread's 4 elements of a 16 x 64 operand tile at (o0, k0), each
   read along the operand's contiguous dimension; slot i: (o, k) of element
   threadIdx.x + 256 i. */
template <typename T, typename ACC>
static __device__ __forceinline__ void hpdl__gemm_small_load(const hpdl__gemm_operand<T> &x, int o0, int k0, int O,
                                                             int K, ACC v[4]) {
#pragma unroll
    for (int i = 0; i < 4; i++) {
        int e = (int)threadIdx.x + 256 * i;
        int o = x.kcontig ? e / HPDL__GEMM_SMALL_BK : e % 16, k = x.kcontig ? e % HPDL__GEMM_SMALL_BK : e / 16;
        v[i] = hpdl__gemm_elem<ACC>(x, o0 + o, k0 + k, O, K);
    }
}

template <typename T, typename ACC>
static __device__ __forceinline__ void hpdl__gemm_small_store(const hpdl__gemm_operand<T> &x, ACC *S, const ACC v[4]) {
#pragma unroll
    for (int i = 0; i < 4; i++) {
        int e = (int)threadIdx.x + 256 * i;
        int o = x.kcontig ? e / HPDL__GEMM_SMALL_BK : e % 16, k = x.kcontig ? e % HPDL__GEMM_SMALL_BK : e / 16;
        S[k * HPDL__GEMM_SMALL_LDS + o] = v[i];
    }
}

template <typename T, typename ACC> __global__ void __launch_bounds__(256) hpdl__gemm_small(hpdl__gemm_args<T, ACC> g) {
    __shared__ ACC As[HPDL__GEMM_SMALL_BK * HPDL__GEMM_SMALL_LDS], Bs[HPDL__GEMM_SMALL_BK * HPDL__GEMM_SMALL_LDS];
    const int m0 = (int)blockIdx.y * 16, n0 = (int)blockIdx.x * 16, slice = (int)threadIdx.x / 64;
    const int tm = (int)threadIdx.x % 64 / 8 * 2, tn = (int)threadIdx.x % 8 * 2;
    ACC a_next[4], b_next[4], acc[4] = {0, 0, 0, 0};
    hpdl__gemm_small_load(g.a, m0, 0, g.M, g.K, a_next);
    hpdl__gemm_small_load(g.b, n0, 0, g.N, g.K, b_next);
    for (int k0 = 0; k0 < g.K; k0 += HPDL__GEMM_SMALL_BK) {
        hpdl__gemm_small_store(g.a, As, a_next);
        hpdl__gemm_small_store(g.b, Bs, b_next);
        __syncthreads();
        if (k0 + HPDL__GEMM_SMALL_BK < g.K) {
            hpdl__gemm_small_load(g.a, m0, k0 + HPDL__GEMM_SMALL_BK, g.M, g.K, a_next);
            hpdl__gemm_small_load(g.b, n0, k0 + HPDL__GEMM_SMALL_BK, g.N, g.K, b_next);
        }
#pragma unroll
        for (int k = slice * 16; k < slice * 16 + 16; k++) {
            const ACC *a = As + k * HPDL__GEMM_SMALL_LDS + tm, *b = Bs + k * HPDL__GEMM_SMALL_LDS + tn;
            acc[0] += a[0] * b[0];
            acc[1] += a[0] * b[1];
            acc[2] += a[1] * b[0];
            acc[3] += a[1] * b[1];
        }
        __syncthreads();
    }
    /* slices 1-3 leave their sums in As; slice 0 adds them and writes C */
    if (slice > 0)
        for (int i = 0; i < 4; i++) As[((slice - 1) * 64 + threadIdx.x % 64) * 4 + i] = acc[i];
    __syncthreads();
    if (slice > 0) return;
    for (int i = 0; i < 4; i++) {
        for (int s = 0; s < 3; s++) acc[i] += As[(s * 64 + threadIdx.x) * 4 + i];
        hpdl__gemm_out(g, m0 + tm + i / 2, n0 + tn + i % 2, acc[i]);
    }
}

/* One cuBLAS handle per device, made on first use and kept for the life of
   the program (not thread-safe on that first use). */
HPDL_CUDA_API hpdl_status hpdl__cublas_handle(cublasHandle_t *out) {
    static cublasHandle_t handles[64];
    int device = 0;
    HPDL_CUDA_TRY(cudaGetDevice(&device));
    if (device < 0 || device >= 64) return HPDL_ERR_UNSUPPORTED;
    if (!handles[device]) {
        if (cublasCreate(&handles[device]) != CUBLAS_STATUS_SUCCESS) { handles[device] = NULL; return HPDL_ERR_CUDA; }
        /* default math: no TF32 for f32 (unless NVIDIA_TF32_OVERRIDE asks) */
        cublasSetMathMode(handles[device], CUBLAS_DEFAULT_MATH);
    }
    *out = handles[device];
    return HPDL_OK;
}

static inline cublasStatus_t hpdl__cublas_gemm(cublasHandle_t h, cublasOperation_t oa, cublasOperation_t ob, int m, int n,
                                               int k, const float *alpha, const float *A, int lda, const float *B, int ldb,
                                               const float *beta, float *C, int ldc) {
    return cublasSgemm(h, oa, ob, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}
static inline cublasStatus_t hpdl__cublas_gemm(cublasHandle_t h, cublasOperation_t oa, cublasOperation_t ob, int m, int n,
                                               int k, const double *alpha, const double *A, int lda, const double *B,
                                               int ldb, const double *beta, double *C, int ldc) {
    return cublasDgemm(h, oa, ob, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}
static inline cublasStatus_t hpdl__cublas_gemm_ex(cublasHandle_t h, cudaDataType_t type, cublasOperation_t oa,
                                                  cublasOperation_t ob, int m, int n, int k, const float *alpha,
                                                  const void *A, int lda, const void *B, int ldb, const float *beta,
                                                  void *C, int ldc) {
    return cublasGemmEx(h, oa, ob, m, n, k, alpha, A, type, lda, B, type, ldb, beta, C, type, ldc, CUBLAS_COMPUTE_32F,
                        CUBLAS_GEMM_DEFAULT);
}
static inline cublasStatus_t hpdl__cublas_gemm(cublasHandle_t h, cublasOperation_t oa, cublasOperation_t ob, int m, int n,
                                               int k, const float *alpha, const __half *A, int lda, const __half *B,
                                               int ldb, const float *beta, __half *C, int ldc) {
    return hpdl__cublas_gemm_ex(h, CUDA_R_16F, oa, ob, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}
static inline cublasStatus_t hpdl__cublas_gemm(cublasHandle_t h, cublasOperation_t oa, cublasOperation_t ob, int m, int n,
                                               int k, const float *alpha, const __nv_bfloat16 *A, int lda,
                                               const __nv_bfloat16 *B, int ldb, const float *beta, __nv_bfloat16 *C,
                                               int ldc) {
    return hpdl__cublas_gemm_ex(h, CUDA_R_16BF, oa, ob, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

/* cuBLAS is column-major: row-major C is column-major C^T = op(B)^T op(A)^T,
   so B goes first, with the same transpose flags, and M and N swap. */
template <typename T, typename ACC>
static inline hpdl_status hpdl__gemm_cublas(hpdl_transpose ta, hpdl_transpose tb, int M, int N, int K, ACC alpha,
                                            const T *A, int lda, const T *B, int ldb, ACC beta, T *C, int ldc,
                                            cudaStream_t stream) {
    cublasHandle_t h;
    cublasStatus_t st;
    hpdl_status s = hpdl__cublas_handle(&h);
    if (s != HPDL_OK) return s;
    if (cublasSetStream(h, stream) != CUBLAS_STATUS_SUCCESS) return HPDL_ERR_CUDA;
    st = hpdl__cublas_gemm(h, tb == HPDL_TRANS ? CUBLAS_OP_T : CUBLAS_OP_N, ta == HPDL_TRANS ? CUBLAS_OP_T : CUBLAS_OP_N,
                           N, M, K, &alpha, B, ldb, A, lda, &beta, C, ldc);
    if (st == CUBLAS_STATUS_NOT_SUPPORTED || st == CUBLAS_STATUS_ARCH_MISMATCH) return HPDL_ERR_UNSUPPORTED;
    return st == CUBLAS_STATUS_SUCCESS ? HPDL_OK : HPDL_ERR_CUDA;
}

/* Grid of ceil(cols/bx) x ceil(rows/by) blocks; refuses more rows of blocks than CUDA allows. */
HPDL_CUDA_API hpdl_status hpdl__gemm_grid(int cols, int bx, int rows, int by, dim3 *grid) {
    unsigned gx = (unsigned)((cols + bx - 1) / bx), gy = (unsigned)((rows + by - 1) / by);
    if (gy > 65535u) return HPDL_ERR_UNSUPPORTED;
    *grid = dim3(gx, gy, 1);
    return HPDL_OK;
}

/* C = alpha op(A) op(B) + beta C by hpdl__gemm_small, for the CNN's linear
   layers (any size, meant for small ones); arguments as hpdl_cuda_gemm's. */
template <typename T, typename ACC>
static inline hpdl_status hpdl__gemm_run_small(hpdl_transpose ta, hpdl_transpose tb, int M, int N, int K, ACC alpha,
                                               const T *A, int lda, const T *B, int ldb, ACC beta, T *C, int ldc,
                                               cudaStream_t stream) {
    dim3 grid;
    hpdl_status s;
    if (hpdl__gemm_check(ta, tb, M, N, K, A, lda, B, ldb, C, ldc) != HPDL_OK) return HPDL_ERR_INVALID;
    if (M == 0 || N == 0) return HPDL_OK;
    if ((s = hpdl__gemm_grid(N, 16, M, 16, &grid)) != HPDL_OK) return s;
    hpdl__gemm_small<<<grid, 256, 0, stream>>>(
        hpdl__gemm_make_args(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, 4));
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* ---- splitk: skinny products (an MLP's) ---------------------------------------
   One MLP step 784 -> H -> 10 at batch B multiplies B x 784 by 784 x H and
   B x H by H x 10 (N = 10); backward it reduces over the batch (weight
   gradients 784 x H and H x 10 with K = B) and carries the delta down
   through K = 10. The ladder's 128 x 128 tiles (128 x 256 on Hopper) leave
   most SMs idle there: 32 x 512 is four tiles, and N = 10 fills a sixteenth
   of one. This rung takes small tiles, 128 x 16 when N <= 16 (narrow), 32 x
   64 when M <= 32 (short), else 64 x 64, and splits K over gridDim.z slices
   until there are about four blocks per SM. Each slice leaves its sums in
   a workspace; the last slice of a tile to finish (a counter per tile)
   adds all of them in slice order, so the result does not depend on which
   slice finished last, and writes C. f16/bf16 multiply on the tensor cores
   (mma.sync m16n8k16 from padded shared rows, f32 sums), f32 and f64 by
   FMAs. Operands of any layout, size and alignment: element loads with
   bounds checks, coalesced along the stored rows; 16-bit operands on the
   tensor cores in 16-byte packs where the rows allow (hpdl__splitk_part).
   Narrow products whose A has M contiguous and 16-byte rows (an MLP's
   weight gradient A1^T D1) take hpdl__gemm_narrow_mn instead, below. */

/* Block tile BM x BN, BK deep; 256 threads. The narrow tile is 16 deep so
   that a thread holds 8 elements of the next A tile, not 16 (sm_90a, f32:
   68 bytes of spills at 32 deep and two blocks per SM); 16-bit operands on
   the tensor cores fit 32 deep (118 registers), and the fewer k steps
   made their narrow products 7-15 % faster (one H200, 2026-11-27); moved
   in 16-byte packs, 64 deep is faster again (f16 AUTO 0.777-0.787 ->
   0.793-0.800, in turns; slices stay multiples of 32 deep). */
template <int BM_, int BN_, int BK_> struct hpdl__splitk_shape {
    enum { BM = BM_, BN = BN_, BK = BK_, TM = BM / 16, TN = BN / 16 /* FMA outputs per thread: TM x TN */ };
};
enum { HPDL__SPLITK_NARROW, HPDL__SPLITK_SHORT, HPDL__SPLITK_SQUARE };
typedef hpdl__splitk_shape<128, 16, 16> hpdl__splitk_narrow;
#ifndef HPDL__SPLITK_NARROW16_BK /* experiments build other depths */
#define HPDL__SPLITK_NARROW16_BK 64
#endif
typedef hpdl__splitk_shape<128, 16, HPDL__SPLITK_NARROW16_BK> hpdl__splitk_narrow16;
/* The narrow tile for elements of BYTES (the deep one only for 16-bit: an
   f64 kernel of it would not fit its shared memory). */
template <int BYTES> struct hpdl__splitk_narrow_for { typedef hpdl__splitk_narrow type; };
template <> struct hpdl__splitk_narrow_for<2> { typedef hpdl__splitk_narrow16 type; };
typedef hpdl__splitk_shape<32, 64, 32> hpdl__splitk_short;
typedef hpdl__splitk_shape<64, 64, 32> hpdl__splitk_square;

#define HPDL__SPLITK_WS_BYTES (16u << 20) /* the slices' sums, per stream */
#define HPDL__SPLITK_COUNTERS 16384       /* most tiles a split launch may have */

/* The type the operand tiles are kept in: T for the tensor cores, else the sums' type. */
template <typename T, typename ACC, bool TC> struct hpdl__splitk_elem { typedef ACC type; };
template <typename T, typename ACC> struct hpdl__splitk_elem<T, ACC, true> { typedef T type; };

/* Shared memory: both operand tiles as rows of BK + PAD elements along K
   (PAD 8 for 16-bit elements: the 8 rows an ldmatrix reads fall in distinct
   banks; 1 for FMAs: a warp reading 16 rows at one k hits 16 banks), then
   the same bytes as the block's sums, BM rows of BN + 1. */
template <typename SH, typename S, typename ACC> struct hpdl__splitk_smem {
    enum { PAD = sizeof(S) == 2 ? 8 : 1, LD = SH::BK + PAD, LDT = SH::BN + 1 };
    enum { OPERANDS = (SH::BM + SH::BN) * LD * (int)sizeof(S), TILE = SH::BM * LDT * (int)sizeof(ACC) };
    enum { BYTES = OPERANDS > TILE ? OPERANDS : TILE };
};

/* Element i of this thread's share of an OT x BK operand tile at (o0, k0):
   consecutive threads walk the stored rows (along k when K runs along them). */
template <int OT, int BK>
static __device__ __forceinline__ void hpdl__splitk_at(int kcontig, int i, int *o, int *k) {
    int e = (int)threadIdx.x + 256 * i;
    *o = kcontig ? e / BK : e % OT;
    *k = kcontig ? e % BK : e / OT;
}

/* This thread's elements of operand x's tile at (o0, k0); zeros past O and
   past k_end (the end of the block's slice of K). */
template <int OT, int BK, typename ACC, typename T>
static __device__ __forceinline__ void hpdl__splitk_load(const hpdl__gemm_operand<T> &x, int o0, int k0, int O, int k_end,
                                                         ACC v[OT * BK / 256]) {
#pragma unroll
    for (int i = 0; i < OT * BK / 256; i++) {
        int o, k;
        hpdl__splitk_at<OT, BK>(x.kcontig, i, &o, &k);
        v[i] = hpdl__gemm_elem<ACC>(x, o0 + o, k0 + k, O, k_end);
    }
}

/* ... into the shared tile s[o][k] (rows of LD). */
template <int OT, int BK, int LD, typename S, typename ACC>
static __device__ __forceinline__ void hpdl__splitk_stash(S *s, int kcontig, const ACC v[OT * BK / 256]) {
#pragma unroll
    for (int i = 0; i < OT * BK / 256; i++) {
        int o, k;
        hpdl__splitk_at<OT, BK>(kcontig, i, &o, &k);
        hpdl__gemm_put(&s[o * LD + k], v[i]);
    }
}

/* One operand's OT x BK tile on its way from global to shared memory,
   held in registers meanwhile: element by element in the sums' type (FMA
   kernels), or, for the tensor cores' 16-bit operands, in 16-byte packs of
   8 elements along the stored rows (hpdl__splitk_part<..., true>). */
template <int OT, int BK, int LD, typename T, typename ACC, bool TC> struct hpdl__splitk_part {
    ACC v[OT * BK / 256];
    __device__ __forceinline__ void load(const hpdl__gemm_operand<T> &x, int o0, int k0, int O, int k_end) {
        hpdl__splitk_load<OT, BK>(x, o0, k0, O, k_end, v);
    }
    template <typename S> __device__ __forceinline__ void stash(S *s, int kcontig) const {
        hpdl__splitk_stash<OT, BK, LD>(s, kcontig, v);
    }
};

/* Pack u of a tile's OT x BK / 8 packs: where its first element lies. K
   along the stored rows: BK / 8 packs a row (a warp 8 rows of a 32-deep
   tile). Else (o along the rows): a warp's threads take 16 k's of 2 packs
   of o each, so a thread's 8 shared-memory stores (one per o) land on
   different banks from its neighbours'. */
template <int OT, int BK> static __device__ __forceinline__ void hpdl__splitk_pack_at(int kcontig, int u, int *o, int *k) {
    enum { KB = BK / 16 };
    static_assert(BK % 16 == 0 && OT % 16 == 0, "16-bit splitk tiles: 16 deep and 16 rows at a time");
    if (kcontig) {
        *o = u / (BK / 8);
        *k = u % (BK / 8) * 8;
    } else {
        *k = u % 16 + 16 * (u / 32 % KB);
        *o = (u / 16 % 2 + 2 * (u / (32 * KB))) * 8;
    }
}

template <int OT, int BK, int LD, typename T, typename ACC> struct hpdl__splitk_part<OT, BK, LD, T, ACC, true> {
    enum { PACKS = OT * BK / 8, PER_THREAD = (PACKS + 255) / 256 };
    uint4 v[PER_THREAD];
    /* one 16-byte load where the pack lies whole inside the operand and
       x.vec says its rows allow it; else element by element, zeros outside */
    __device__ __forceinline__ void load(const hpdl__gemm_operand<T> &x, int o0, int k0, int O, int k_end) {
        const unsigned short *p = (const unsigned short *)x.p;
#pragma unroll
        for (int i = 0; i < PER_THREAD; i++) {
            int u = (int)threadIdx.x + 256 * i, o, k;
            if (u >= PACKS) break;
            hpdl__splitk_pack_at<OT, BK>(x.kcontig, u, &o, &k);
            o += o0;
            k += k0;
            if (x.vec && (x.kcontig ? o < O && k + 8 <= k_end : k < k_end && o + 8 <= O)) {
                v[i] = *(const uint4 *)(p + (x.kcontig ? (size_t)o * x.ld + k : (size_t)k * x.ld + o));
            } else {
                unsigned short e[8];
#pragma unroll
                for (int j = 0; j < 8; j++) {
                    int oj = x.kcontig ? o : o + j, kj = x.kcontig ? k + j : k;
                    e[j] = oj < O && kj < k_end ? p[x.kcontig ? (size_t)oj * x.ld + kj : (size_t)kj * x.ld + oj] : 0;
                }
                v[i] = make_uint4(e[0] | (unsigned)e[1] << 16, e[2] | (unsigned)e[3] << 16, e[4] | (unsigned)e[5] << 16,
                                  e[6] | (unsigned)e[7] << 16);
            }
        }
    }
    /* into s[o][k] (rows of LD): one 16-byte store along k, else 8 stores */
    __device__ __forceinline__ void stash(T *s, int kcontig) const {
#pragma unroll
        for (int i = 0; i < PER_THREAD; i++) {
            int u = (int)threadIdx.x + 256 * i, o, k;
            if (u >= PACKS) break;
            hpdl__splitk_pack_at<OT, BK>(kcontig, u, &o, &k);
            if (kcontig) {
                *(uint4 *)(s + o * LD + k) = v[i];
            } else {
                const unsigned short *e = (const unsigned short *)&v[i];
#pragma unroll
                for (int j = 0; j < 8; j++) ((unsigned short *)s)[(o + j) * LD + k] = e[j];
            }
        }
    }
};

/* The block's multiply-adds on one BK-deep tile, and its sums into the
   shared tile (BM rows of LDT). FMAs: thread (ty, tx) of 16 x 16 owns rows
   ty + 16i and columns tx + 16j. */
template <typename SH, typename T, typename ACC, bool TC> struct hpdl__splitk_math {
    enum { LD = hpdl__splitk_smem<SH, ACC, ACC>::LD, LDT = SH::BN + 1 };
    ACC acc[SH::TM][SH::TN];
    __device__ __forceinline__ void zero() {
#pragma unroll
        for (int i = 0; i < SH::TM; i++)
#pragma unroll
            for (int j = 0; j < SH::TN; j++) acc[i][j] = 0;
    }
    __device__ __forceinline__ void step(const ACC *sa, const ACC *sb) {
        const int tx = (int)threadIdx.x % 16, ty = (int)threadIdx.x / 16;
#pragma unroll 8
        for (int k = 0; k < SH::BK; k++) {
            ACC a[SH::TM], b[SH::TN];
#pragma unroll
            for (int i = 0; i < SH::TM; i++) a[i] = sa[(ty + 16 * i) * LD + k];
#pragma unroll
            for (int j = 0; j < SH::TN; j++) b[j] = sb[(tx + 16 * j) * LD + k];
#pragma unroll
            for (int i = 0; i < SH::TM; i++)
#pragma unroll
                for (int j = 0; j < SH::TN; j++) acc[i][j] += a[i] * b[j];
        }
    }
    __device__ __forceinline__ void put(ACC *tile) const {
        const int tx = (int)threadIdx.x % 16, ty = (int)threadIdx.x / 16;
#pragma unroll
        for (int i = 0; i < SH::TM; i++)
#pragma unroll
            for (int j = 0; j < SH::TN; j++) tile[(ty + 16 * i) * LDT + tx + 16 * j] = acc[i][j];
    }
};

/* Tensor cores (f16/bf16): the block tile in 16 x 16 units, UNITS per warp;
   per unit and 16-deep step one ldmatrix of A, one of B (two 8-column
   halves) and two mma.sync, as the mma rung's kernel reads K-major tiles. */
template <typename SH, typename T> struct hpdl__splitk_math<SH, T, float, true> {
    enum { LD = hpdl__splitk_smem<SH, T, float>::LD, LDT = SH::BN + 1, UNITS = SH::BM / 16 * (SH::BN / 16) / 8 };
    static_assert(UNITS >= 1 && SH::BM / 16 * (SH::BN / 16) % 8 == 0, "the 8 warps share the tile's 16 x 16 units");
    float acc[UNITS][2][4];
    __device__ __forceinline__ void zero() {
#pragma unroll
        for (int u = 0; u < UNITS; u++)
#pragma unroll
            for (int h = 0; h < 2; h++) acc[u][h][0] = acc[u][h][1] = acc[u][h][2] = acc[u][h][3] = 0.0f;
    }
    /* rows m0, columns n0 of unit u of this warp */
    static __device__ __forceinline__ void unit(int u, int *m0, int *n0) {
        int n = (int)threadIdx.x / 32 * UNITS + u;
        *m0 = n / (SH::BN / 16) * 16;
        *n0 = n % (SH::BN / 16) * 16;
    }
    __device__ __forceinline__ void step(const T *sa, const T *sb) {
        const int lane = (int)threadIdx.x % 32;
#pragma unroll
        for (int ks = 0; ks < SH::BK; ks += 16)
#pragma unroll
            for (int u = 0; u < UNITS; u++) {
                unsigned a[4], r[4];
                int m0, n0;
                unit(u, &m0, &n0);
                hpdl__ldmatrix_x4<false>(a, sa + (m0 + lane % 16) * LD + ks + lane / 16 * 8);
                hpdl__ldmatrix_x4<false>(r, sb + (n0 + lane % 8 + lane / 16 * 8) * LD + ks + lane / 8 % 2 * 8);
                {
                    unsigned b0[2] = {r[0], r[1]}, b1[2] = {r[2], r[3]};
                    hpdl__mma16816(T(), acc[u][0], a, b0);
                    hpdl__mma16816(T(), acc[u][1], a, b1);
                }
            }
    }
    /* accumulator (u, h): rows lane/4 and lane/4 + 8, columns 8h + 2 (lane%4) and the next */
    __device__ __forceinline__ void put(float *tile) const {
        const int lane = (int)threadIdx.x % 32;
#pragma unroll
        for (int u = 0; u < UNITS; u++) {
            int m0, n0;
            unit(u, &m0, &n0);
#pragma unroll
            for (int h = 0; h < 2; h++) {
                float *p = tile + (m0 + lane / 4) * LDT + n0 + 8 * h + lane % 4 * 2;
                p[0] = acc[u][h][0];
                p[1] = acc[u][h][1];
                p[8 * LDT] = acc[u][h][2];
                p[8 * LDT + 1] = acc[u][h][3];
            }
        }
    }
};

/* v[i] = the sum over the slices, in slice order, of element 256 i of each
   slice's sums (slice s at ws + s * area; slice `mine` is v itself, -1:
   none is). A slice's OUT loads go out together, and the loop runs 8
   slices at once, so the loads' latencies overlap instead of adding up
   one after another; the order of the additions is unchanged. 8 rather
   than 4: one H200, f16 512 x 10 x 2048 0.80 -> 0.86-0.89 of cuBLAS,
   f32 AUTO over the MLP's products 0.940 -> 0.948 (2026-11-27). */
#ifndef HPDL__SPLITK_ADD_UNROLL /* experiments build other depths */
#define HPDL__SPLITK_ADD_UNROLL 8
#endif
template <int OUT, typename ACC>
static __device__ __forceinline__ void hpdl__splitk_add_slices(const ACC *ws, int area, int slices, int mine,
                                                               ACC v[OUT]) {
    enum { SLICES_AT_ONCE = HPDL__SPLITK_ADD_UNROLL };
    ACC sum[OUT];
    int i, s;
#pragma unroll
    for (i = 0; i < OUT; i++) sum[i] = 0;
#pragma unroll SLICES_AT_ONCE
    for (s = 0; s < slices; s++) {
        ACC in[OUT];
#pragma unroll
        for (i = 0; i < OUT; i++) in[i] = s == mine ? v[i] : __ldcg(ws + (size_t)s * area + 256 * i);
#pragma unroll
        for (i = 0; i < OUT; i++) sum[i] += in[i];
    }
#pragma unroll
    for (i = 0; i < OUT; i++) v[i] = sum[i];
}

/* Whether this block is the last of `arrivals` blocks to count themselves
   on *count (the same answer in all its threads): each block's global
   writes so far are made visible first, and the last one sets *count back
   to 0 for the next launch (every block has arrived by then) and may then
   read what the others wrote. Called by every thread of the block. */
static __device__ __forceinline__ int hpdl__last_block_in(unsigned *count, unsigned arrivals) {
    __shared__ int last;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0 && threadIdx.y == 0) {
        last = atomicAdd(count, 1u) == arrivals - 1;
        if (last) *count = 0;
    }
    __syncthreads();
    if (last) __threadfence();
    return last;
}

/* A block's sum of column col over its run of rows (holds: this thread has
   one) into db with one run; else into parts[run][col], and the last of
   the runs' blocks to count itself on counts[group] adds the runs' sums in
   run order into db: the same bits whichever block finishes last. Called
   by every thread of the block. */
template <typename C, typename ACC>
static __device__ __forceinline__ void hpdl__colsum_finish(ACC sum, int holds, int col, int cols, int run, int runs,
                                                           ACC *parts, unsigned *counts, int group, C *db) {
    if (holds) {
        if (runs == 1) hpdl__gemm_put(db + col, sum);
        else parts[(size_t)run * cols + col] = sum;
    }
    if (runs == 1 || !hpdl__last_block_in(&counts[group], (unsigned)runs)) return;
    if (holds) {
        ACC total = 0;
        for (int r = 0; r < runs; r++) total += __ldcg(&parts[(size_t)r * cols + col]);
        hpdl__gemm_put(db + col, total);
    }
}

/* The block's sums to C, v[i] being output t + 256 i of its BM x BN tile
   (row-major): at once with one slice; else each slice leaves them in ws,
   and the last slice of the tile to arrive (counter) adds every slice's in
   slice order, writes C and sets the counter back to 0 for the next
   launch. */
template <typename SH, typename T, typename ACC>
static __device__ __forceinline__ void hpdl__splitk_finish_values(const hpdl__gemm_args<T, ACC> &g,
                                                                  ACC v[SH::BM * SH::BN / 256], ACC *ws,
                                                                  unsigned *counters) {
    enum { BN = SH::BN, AREA = SH::BM * SH::BN, OUT = AREA / 256 };
    const int slices = (int)gridDim.z, slice = (int)blockIdx.z, t = (int)threadIdx.x;
    const size_t tile_id = (size_t)blockIdx.y * gridDim.x + blockIdx.x;
    int i;
    if (slices > 1) {
        ACC *mine = ws + (tile_id * slices + slice) * AREA;
        if (!counters) hpdl__let_next_start(); /* hpdl__splitk_add_tiles_kernel may take SMs as they free up */
#pragma unroll
        for (i = 0; i < OUT; i++) mine[t + 256 * i] = v[i];
        if (!counters) return; /* hpdl__splitk_add_tiles_kernel adds them */
        if (!hpdl__last_block_in(&counters[tile_id], (unsigned)slices)) return;
        hpdl__splitk_add_slices<OUT>(ws + tile_id * slices * AREA + t, AREA, slices, slice, v);
    }
#pragma unroll
    for (i = 0; i < OUT; i++)
        hpdl__gemm_out(g, (int)blockIdx.y * SH::BM + (t + 256 * i) / BN, (int)blockIdx.x * BN + (t + 256 * i) % BN, v[i]);
}

/* ... the same from the block's shared tile (BM rows of BN + 1). */
template <typename SH, typename T, typename ACC>
static __device__ __forceinline__ void hpdl__splitk_finish(const hpdl__gemm_args<T, ACC> &g, const ACC *tile, ACC *ws,
                                                           unsigned *counters) {
    enum { BN = SH::BN, OUT = SH::BM * SH::BN / 256, LDT = SH::BN + 1 };
    ACC v[OUT];
#pragma unroll
    for (int i = 0; i < OUT; i++) v[i] = tile[((int)threadIdx.x + 256 * i) / BN * LDT + ((int)threadIdx.x + 256 * i) % BN];
    hpdl__splitk_finish_values<SH>(g, v, ws, counters);
}

/* splitk: tile (blockIdx.y, blockIdx.x) over slice blockIdx.z of K
   (k_chunk deep, a multiple of BK unless it is all of K). The next K tile
   is read into registers while the current one is multiplied. */
template <typename T, typename ACC, typename SH, bool TC>
__global__ void __launch_bounds__(256, 2) hpdl__gemm_splitk(hpdl__gemm_args<T, ACC> g, int k_chunk, ACC *ws, unsigned *counters) {
    typedef typename hpdl__splitk_elem<T, ACC, TC>::type S;
    typedef hpdl__splitk_smem<SH, S, ACC> P;
    enum { BM = SH::BM, BN = SH::BN, BK = SH::BK };
    __shared__ __align__(16) unsigned char smem[P::BYTES];
    S *sa = (S *)smem, *sb = sa + BM * P::LD;
    const int tm = (int)blockIdx.y * BM, tn = (int)blockIdx.x * BN, k_begin = (int)blockIdx.z * k_chunk;
    const int k_end = g.K - k_begin < k_chunk ? g.K : k_begin + k_chunk;
    hpdl__splitk_part<BM, BK, P::LD, T, ACC, TC> pa;
    hpdl__splitk_part<BN, BK, P::LD, T, ACC, TC> pb;
    hpdl__splitk_math<SH, T, ACC, TC> math;
    int k0;
    math.zero();
    if (k_begin < k_end) {
        pa.load(g.a, tm, k_begin, g.M, k_end);
        pb.load(g.b, tn, k_begin, g.N, k_end);
    }
    for (k0 = k_begin; k0 < k_end; k0 += BK) {
        pa.stash(sa, g.a.kcontig);
        pb.stash(sb, g.b.kcontig);
        __syncthreads();
        if (k0 + BK < k_end) {
            pa.load(g.a, tm, k0 + BK, g.M, k_end);
            pb.load(g.b, tn, k0 + BK, g.N, k_end);
        }
        math.step(sa, sb);
        __syncthreads();
    }
    math.put((ACC *)smem); /* the operand tiles are done with (barrier above) */
    __syncthreads();
    hpdl__splitk_finish<SH>(g, (const ACC *)smem, ws, counters);
}

/* ---- splitk's narrow products with A MN-major: a weight gradient A1^T D1 ----
   C (M x N, N <= 16) = A B where A's M index runs along its stored rows
   (the MLP's dW1 = A1^T D1: M = H, K = the batch). The tensor-core kernel
   above moves such an A through shared memory a 128 x 64 tile at a time,
   one tile in flight, and splits long K into dozens of one-tile slices
   whose sums the last block of each tile then adds: 47 slices for 512 x 10
   x 3000. This one is built for streaming A: a block takes a 64-column
   strip of it (64 rows of C) over its slice of K, in stages of 64 k's
   copied by cp.async, 3 stages in flight while one is multiplied; slices
   add as in splitk (hpdl__splitk_finish_values). For f32 (this kernel)
   thread (group, lane) of 16 x 16 multiplies its 4 elements A(m..m+3, k)
   of every 16th row k of a stage by B's row k (the slice's rows staged
   once in f32, zero-padded to NB columns: 8, 12 or 16) with FMAs, and the
   16 groups add their sums in a fixed order; 16-bit elements go to the
   tensor cores (hpdl__gemm_narrow_mn_tc, below). Needs sm_80 (cp.async)
   and A 16-byte aligned with rows of whole 16-byte pieces
   (hpdl__gemm_args.a.vec). */
enum { HPDL__NARROW_ROWS = 64, HPDL__NARROW_GROUPS = 16, HPDL__NARROW_STAGES = 4, HPDL__NARROW_STEP = 64 /* k's a stage */ };
template <typename T> struct hpdl__narrow_stage {
    enum { BYTES = HPDL__NARROW_STEP * HPDL__NARROW_ROWS * (int)sizeof(T), ELEMS = HPDL__NARROW_STEP * HPDL__NARROW_ROWS,
           PIECE = 16 / (int)sizeof(T) /* elements a cp.async */ };
};

/* Bytes of shared memory for a slice of `depth` k's of elem_bytes: the A
   stages (later the groups' sums), then B's rows padded to whole stages. */
HPDL_LAZY size_t hpdl__narrow_smem_bytes(int depth, int nb, int elem_bytes) {
    const size_t rows = (size_t)(depth + HPDL__NARROW_STEP - 1) / HPDL__NARROW_STEP * HPDL__NARROW_STEP;
    return (size_t)HPDL__NARROW_STAGES * HPDL__NARROW_STEP * HPDL__NARROW_ROWS * elem_bytes + rows * nb * sizeof(float);
}

/* B's rows k_begin .. k_begin + rows - 1, NB columns, into bs as rows of LD
   elements of S (f32, or B's own 16-bit type), zeros past k_end and N; 8
   loads in flight a thread. */
template <int NB, int LD, typename S, typename T>
static __device__ __forceinline__ void hpdl__narrow_stage_b(const hpdl__gemm_args<T, float> &g, int k_begin, int k_end,
                                                            int rows, S *bs) {
    for (int i = (int)threadIdx.x; i < rows * NB; i += 256 * 8) {
        float e[8];
#pragma unroll
        for (int j = 0; j < 8; j++) {
            const int at = i + 256 * j;
            e[j] = hpdl__gemm_elem<float>(g.b, at % NB, k_begin + at / NB, g.N, k_end);
        }
#pragma unroll
        for (int j = 0; j < 8; j++)
            if (i + 256 * j < rows * NB) hpdl__gemm_put(bs + (i + 256 * j) / NB * LD + (i + 256 * j) % NB, e[j]);
    }
}

/* Rows k0 .. k0 + 63 of A's strip at column m0 into a stage (rows of LDS
   elements): cp.async 16 bytes where the piece lies inside A, element by
   element at its last columns, zeros past k_end. */
template <int LDS, typename T>
static __device__ __forceinline__ void hpdl__narrow_copy(const hpdl__gemm_args<T, float> &g, int k0, int k_end, int m0,
                                                         T *stage) {
    typedef hpdl__narrow_stage<T> ST;
    for (int i = (int)threadIdx.x; i < ST::ELEMS / ST::PIECE; i += 256) {
        const int r = i / (HPDL__NARROW_ROWS / ST::PIECE), m = i % (HPDL__NARROW_ROWS / ST::PIECE) * ST::PIECE;
        const T *src = g.a.p + (size_t)(k0 + r) * g.a.ld + m0 + m;
        T *dst = stage + r * LDS + m;
        if (k0 + r < k_end && m0 + m + ST::PIECE <= g.M) {
            hpdl__cp_async16(dst, src);
        } else {
            for (int e = 0; e < ST::PIECE; e++)
                hpdl__gemm_put(dst + e, k0 + r < k_end && m0 + m + e < g.M ? (float)hpdl__gemm_acc(src[e]) : 0.0f);
        }
    }
}

/* Stage s of the slice's A strip (k's from k_begin + 64 s) into its place
   in the ring of stages (rows of LDS elements): one commit group, empty
   past the last stage. */
template <int LDS, typename T>
static __device__ __forceinline__ void hpdl__narrow_issue(const hpdl__gemm_args<T, float> &g, int s, int steps,
                                                          int k_begin, int k_end, int m0, T *stages) {
    if (s < steps)
        hpdl__narrow_copy<LDS>(g, k_begin + s * HPDL__NARROW_STEP, k_end, m0,
                               stages + s % HPDL__NARROW_STAGES * HPDL__NARROW_STEP * LDS);
    hpdl__cp_async_commit();
}

/* Stage s, once it is in; the stage multiplied the round before takes
   stage s + 3 meanwhile. */
template <int LDS, typename T>
static __device__ __forceinline__ const T *hpdl__narrow_next(const hpdl__gemm_args<T, float> &g, int s, int steps,
                                                             int k_begin, int k_end, int m0, T *stages) {
    hpdl__cp_async_wait<HPDL__NARROW_STAGES - 2>();
    __syncthreads(); /* stage s is in; the one multiplied last round may be refilled */
    hpdl__narrow_issue<LDS>(g, s + HPDL__NARROW_STAGES - 1, steps, k_begin, k_end, m0, stages);
    return stages + s % HPDL__NARROW_STAGES * HPDL__NARROW_STEP * LDS;
}

template <typename T, int NB>
__global__ void __launch_bounds__(256, 2) hpdl__gemm_narrow_mn(hpdl__gemm_args<T, float> g, int k_chunk, float *ws,
                                                               unsigned *counters) {
    typedef hpdl__narrow_stage<T> ST;
    typedef hpdl__splitk_shape<HPDL__NARROW_ROWS, NB, HPDL__NARROW_STEP> SH;
    extern __shared__ float4 hpdl__narrow_smem[];
    T *stages = (T *)hpdl__narrow_smem;
    float *sums = (float *)hpdl__narrow_smem, *bs = sums + HPDL__NARROW_STAGES * ST::BYTES / 4;
    const int t = (int)threadIdx.x, group = t / 16, warp = t / 32, lane4 = t % 16 * 4;
    const int m0 = (int)blockIdx.y * HPDL__NARROW_ROWS, k_begin = (int)blockIdx.z * k_chunk;
    const int k_end = g.K - k_begin < k_chunk ? g.K : k_begin + k_chunk;
    const int steps = (k_end - k_begin + HPDL__NARROW_STEP - 1) / HPDL__NARROW_STEP;
    float acc[4][NB], v[SH::BM * NB / 256];
    int i, j, c, s;
    for (s = 0; s < HPDL__NARROW_STAGES - 1; s++) /* A's first stages on their way, then B's rows */
        hpdl__narrow_issue<HPDL__NARROW_ROWS>(g, s, steps, k_begin, k_end, m0, stages);
    hpdl__narrow_stage_b<NB, NB>(g, k_begin, k_end, steps * HPDL__NARROW_STEP, bs);
#pragma unroll
    for (j = 0; j < 4; j++)
#pragma unroll
        for (c = 0; c < NB; c++) acc[j][c] = 0.0f;
    for (s = 0; s < steps; s++) {
        const T *a = hpdl__narrow_next<HPDL__NARROW_ROWS>(g, s, steps, k_begin, k_end, m0, stages);
#pragma unroll
        for (i = group; i < HPDL__NARROW_STEP; i += HPDL__NARROW_GROUPS) {
            const float4 *b = (const float4 *)(bs + (size_t)(s * HPDL__NARROW_STEP + i) * NB);
            float x[4];
            hpdl__gemm_vload4(a + i * HPDL__NARROW_ROWS + lane4, x);
#pragma unroll
            for (c = 0; c < NB / 4; c++) {
                const float4 q = b[c];
#pragma unroll
                for (j = 0; j < 4; j++) {
                    acc[j][4 * c] += x[j] * q.x;
                    acc[j][4 * c + 1] += x[j] * q.y;
                    acc[j][4 * c + 2] += x[j] * q.z;
                    acc[j][4 * c + 3] += x[j] * q.w;
                }
            }
        }
    }
    /* the two groups of a warp, then the 8 warps in order (into the stages' memory) */
#pragma unroll
    for (j = 0; j < 4; j++)
#pragma unroll
        for (c = 0; c < NB; c++) acc[j][c] += __shfl_xor_sync(0xffffffffu, acc[j][c], 16);
    hpdl__cp_async_wait<0>();
    __syncthreads();
    if (group % 2 == 0)
#pragma unroll
        for (j = 0; j < 4; j++)
#pragma unroll
            for (c = 0; c < NB; c++) sums[(warp * HPDL__NARROW_ROWS + lane4 + j) * NB + c] = acc[j][c];
    __syncthreads();
#pragma unroll
    for (i = 0; i < SH::BM * NB / 256; i++) {
        float sum = 0.0f;
        for (j = 0; j < 8; j++) sum += sums[j * HPDL__NARROW_ROWS * NB + t + 256 * i];
        v[i] = sum;
    }
    hpdl__splitk_finish_values<SH>(g, v, ws, counters);
}

/* 16-bit elements: the same pipeline feeding the tensor cores. A stage's
   rows have 8 spare elements (so the 8 rows an ldmatrix reads fall on
   distinct banks) and B's rows stay 16-bit, 16 columns and 8 spare. Warp w
   takes rows 16 (w % 4) of the strip and every other 16 k's of a stage
   (w / 4): per 16 k's one ldmatrix.trans of A (its tile is stored k by m),
   one of B, two mma.sync m16n8k16. The two halves of k add in order. */
enum { HPDL__NARROW_TC_LDS = HPDL__NARROW_ROWS + 8, HPDL__NARROW_TC_LDB = 24 };

HPDL_LAZY size_t hpdl__narrow_tc_smem_bytes(int depth) {
    const size_t rows = (size_t)(depth + HPDL__NARROW_STEP - 1) / HPDL__NARROW_STEP * HPDL__NARROW_STEP;
    return (size_t)HPDL__NARROW_STAGES * HPDL__NARROW_STEP * HPDL__NARROW_TC_LDS * 2 + rows * HPDL__NARROW_TC_LDB * 2;
}

template <typename T>
__global__ void __launch_bounds__(256, 2) hpdl__gemm_narrow_mn_tc(hpdl__gemm_args<T, float> g, int k_chunk, float *ws,
                                                                  unsigned *counters) {
    typedef hpdl__splitk_shape<HPDL__NARROW_ROWS, 16, HPDL__NARROW_STEP> SH;
    enum { LDS = HPDL__NARROW_TC_LDS, LDB = HPDL__NARROW_TC_LDB, STAGE = HPDL__NARROW_STEP * LDS };
    extern __shared__ float4 hpdl__narrow_smem[];
    T *stages = (T *)hpdl__narrow_smem, *bs = stages + HPDL__NARROW_STAGES * STAGE;
    float *sums = (float *)hpdl__narrow_smem;
    const int t = (int)threadIdx.x, lane = t % 32, warp = t / 32, mw = warp % 4 * 16, kw = warp / 4 * 16;
    const int q = lane / 8, r = lane % 8; /* the ldmatrix row this lane names: of matrix q, row r */
    const int m0 = (int)blockIdx.y * HPDL__NARROW_ROWS, k_begin = (int)blockIdx.z * k_chunk;
    const int k_end = g.K - k_begin < k_chunk ? g.K : k_begin + k_chunk;
    const int steps = (k_end - k_begin + HPDL__NARROW_STEP - 1) / HPDL__NARROW_STEP;
    float acc[2][4] = {{0.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f, 0.0f}}, v[4];
    int i, s;
    for (s = 0; s < HPDL__NARROW_STAGES - 1; s++) /* A's first stages on their way, then B's rows */
        hpdl__narrow_issue<LDS>(g, s, steps, k_begin, k_end, m0, stages);
    hpdl__narrow_stage_b<16, LDB>(g, k_begin, k_end, steps * HPDL__NARROW_STEP, bs);
    for (s = 0; s < steps; s++) {
        const T *a = hpdl__narrow_next<LDS>(g, s, steps, k_begin, k_end, m0, stages);
#pragma unroll
        for (i = kw; i < HPDL__NARROW_STEP; i += 32) {
            unsigned af[4], bf[4];
            /* A's matrices (m 0-7 | 8-15) x (k 0-7 | 8-15) as mma wants them; B's (k 0-7 | 8-15) x (n 0-7 | 8-15) */
            hpdl__ldmatrix_x4<true>(af, a + (i + r + 8 * (q / 2)) * LDS + mw + 8 * (q % 2));
            hpdl__ldmatrix_x4<true>(bf, bs + (s * HPDL__NARROW_STEP + i + r + 8 * (q % 2)) * LDB + 8 * (q / 2));
            {
                const unsigned b0[2] = {bf[0], bf[1]}, b1[2] = {bf[2], bf[3]};
                hpdl__mma16816(T(), acc[0], af, b0);
                hpdl__mma16816(T(), acc[1], af, b1);
            }
        }
    }
    hpdl__cp_async_wait<0>();
    __syncthreads();
    { /* accumulator (h, e): row lane / 4 (+8 for e >= 2), column 8 h + 2 (lane % 4) + e % 2 */
        float *mine = sums + warp / 4 * SH::BM * 16 + (mw + lane / 4) * 16 + lane % 4 * 2;
        for (i = 0; i < 2; i++) {
            mine[8 * i] = acc[i][0];
            mine[8 * i + 1] = acc[i][1];
            mine[8 * 16 + 8 * i] = acc[i][2];
            mine[8 * 16 + 8 * i + 1] = acc[i][3];
        }
    }
    __syncthreads();
    for (i = 0; i < 4; i++) v[i] = sums[t + 256 * i] + sums[SH::BM * 16 + t + 256 * i];
    hpdl__splitk_finish_values<SH>(g, v, ws, counters);
}

/* The longest K the one-pass narrow kernel below takes. */
enum { HPDL__NARROW_SHORT_K = 128 };

/* B (K x N) into the one-pass kernel's k16 rows of LDB elements, zeros
   past N and K. Where its rows follow each other with no gap (MN-major, ld
   N) from a 16-byte boundary, the block reads it as 16-byte pieces, each
   thread's all in flight before it stores any; otherwise element by
   element. One H200 under ncu, f16 512 x 10 x 128: element by element 5.7
   us, in pieces 4.8-4.9 (cuBLAS 5.2); all of a thread's elements loaded
   before any was stored (16 loads) was slower still, 11.7 us. */
template <int LDB, typename T>
static __device__ __forceinline__ void hpdl__narrow_short_b(const hpdl__gemm_args<T, float> &g, int k16, T *bs) {
    enum { MOST = HPDL__NARROW_SHORT_K * 16 * (int)sizeof(T) / 16 / 128 }; /* pieces a thread */
    const int t = (int)threadIdx.x, count = g.K * g.N, whole = count * (int)sizeof(T) / 16;
    uint4 piece[MOST];
    int i, j, u;
    if (g.b.kcontig || g.b.ld != g.N || (uintptr_t)g.b.p % 16 != 0) {
        for (i = t; i < k16 * 16; i += 128)
            hpdl__gemm_put(bs + i / 16 * LDB + i % 16, hpdl__gemm_elem<float>(g.b, i % 16, i / 16, g.N, g.K));
        return;
    }
    for (i = t; i < k16 * 16; i += 128)
        if (i % 16 >= g.N || i / 16 >= g.K) hpdl__gemm_put(bs + i / 16 * LDB + i % 16, 0.0f);
#pragma unroll
    for (j = 0; j < MOST; j++)
        if (t + 128 * j < whole) piece[j] = ((const uint4 *)g.b.p)[t + 128 * j];
#pragma unroll
    for (j = 0; j < MOST; j++)
        if (t + 128 * j < whole) {
            T h[16 / sizeof(T)];
            memcpy(h, &piece[j], sizeof h);
            for (u = 0; u < (int)(16 / sizeof(T)); u++) {
                const int e = (t + 128 * j) * (int)(16 / sizeof(T)) + u;
                bs[e / g.N * LDB + e % g.N] = h[u];
            }
        }
    for (i = whole * (int)(16 / sizeof(T)) + t; i < count; i += 128) /* the elements after the last whole piece */
        bs[i / g.N * LDB + i % g.N] = g.b.p[i];
}

/* 16-bit narrow products with A MN-major and K <= HPDL__NARROW_SHORT_K (a
   weight gradient at a small batch: 512 x 10 x 32): one pass, no pipeline.
   A block of 4 warps takes 64 rows of C; it copies all of its A strip (K x
   64) and B (K x 16) into shared memory at once (zeros up to the next 16
   k's), then warp w multiplies rows 16 w over all of K (per 16 k's one
   ldmatrix.trans of A, one of B and two mma.sync m16n8k16, as
   hpdl__gemm_narrow_mn_tc) and writes its accumulators straight to C. The
   pipelined kernel's stages, its two halves of K and their sum through
   shared memory cost more than such a K multiplies: one H200 under ncu,
   512 x 10 x 32, 4.7-5.0 us there, 3.4-3.6 here (cuBLAS 3.8-4.2). */
template <typename T>
__global__ void __launch_bounds__(128) hpdl__gemm_narrow_mn_short(hpdl__gemm_args<T, float> g) {
    enum { LDS = HPDL__NARROW_TC_LDS, LDB = HPDL__NARROW_TC_LDB, ROWS = HPDL__NARROW_ROWS, PIECE = 8 };
    __shared__ __align__(16) T as[HPDL__NARROW_SHORT_K * LDS], bs[HPDL__NARROW_SHORT_K * LDB];
    const int t = (int)threadIdx.x, lane = t % 32, mw = t / 32 * 16, q = lane / 8, r = lane % 8;
    const int m0 = (int)blockIdx.x * ROWS, k16 = (g.K + 15) / 16 * 16;
    float acc[2][4] = {{0.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f, 0.0f}};
    int i, e;
    for (i = t; i < k16 * (ROWS / PIECE); i += 128) { /* A: 16-byte pieces inside it, else element by element */
        const int k = i / (ROWS / PIECE), m = i % (ROWS / PIECE) * PIECE;
        const T *src = g.a.p + (size_t)k * g.a.ld + m0 + m;
        if (k < g.K && m0 + m + PIECE <= g.M)
            hpdl__cp_async16(as + k * LDS + m, src);
        else
            for (e = 0; e < PIECE; e++)
                hpdl__gemm_put(as + k * LDS + m + e, k < g.K && m0 + m + e < g.M ? (float)hpdl__gemm_acc(src[e]) : 0.0f);
    }
    hpdl__cp_async_commit();
    hpdl__narrow_short_b<LDB>(g, k16, bs);
    hpdl__cp_async_wait<0>();
    __syncthreads();
    for (i = 0; i < k16; i += 16) {
        unsigned af[4], bf[4];
        hpdl__ldmatrix_x4<true>(af, as + (i + r + 8 * (q / 2)) * LDS + mw + 8 * (q % 2));
        hpdl__ldmatrix_x4<true>(bf, bs + (i + r + 8 * (q % 2)) * LDB + 8 * (q / 2));
        {
            const unsigned b0[2] = {bf[0], bf[1]}, b1[2] = {bf[2], bf[3]};
            hpdl__mma16816(T(), acc[0], af, b0);
            hpdl__mma16816(T(), acc[1], af, b1);
        }
    }
    /* accumulator (h, e): row lane / 4 (+8 for e >= 2), column 8 h + 2 (lane % 4) + e % 2 */
    for (i = 0; i < 2; i++)
        for (e = 0; e < 4; e++)
            hpdl__gemm_out(g, m0 + mw + lane / 4 + (e >= 2 ? 8 : 0), 8 * i + lane % 4 * 2 + e % 2, acc[i][e]);
}

/* The splitk rung's workspace for one stream: the slices' sums and a
   counter per tile (0 between launches). Made on the stream's first split
   launch outside graph capture and kept until the stream's owner gives it
   back (hpdl__splitk_space_release), since captured graphs keep its
   address; one per device and stream, because products on two streams may
   run at the same time. NULL: none (no memory, HPDL__SPLITK_SPACES streams
   hold one, or the stream is being captured): no split. */
typedef struct hpdl__splitk_space {
    int device;
    cudaStream_t stream;
    void *ws;
    unsigned *counters;
} hpdl__splitk_space;

enum { HPDL__SPLITK_SPACES = 16 };

/* The table of workspaces, packed: the first slot without one ends it. */
HPDL_LAZY hpdl__splitk_space *hpdl__splitk_spaces(void) {
    static hpdl__splitk_space spaces[HPDL__SPLITK_SPACES];
    return spaces;
}

HPDL_LAZY hpdl__splitk_space *hpdl__splitk_space_for(cudaStream_t stream) {
    hpdl__splitk_space *spaces = hpdl__splitk_spaces(), *sp;
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    int device = 0, i;
    if (cudaGetDevice(&device) != cudaSuccess) { cudaGetLastError(); return NULL; }
    for (i = 0; i < HPDL__SPLITK_SPACES && spaces[i].ws; i++)
        if (spaces[i].device == device && spaces[i].stream == stream) return &spaces[i];
    if (i == HPDL__SPLITK_SPACES || cudaStreamIsCapturing(stream, &capture) != cudaSuccess ||
        capture != cudaStreamCaptureStatusNone) {
        cudaGetLastError();
        return NULL;
    }
    sp = &spaces[i];
    if (cudaMalloc(&sp->ws, HPDL__SPLITK_WS_BYTES) != cudaSuccess ||
        cudaMalloc((void **)&sp->counters, HPDL__SPLITK_COUNTERS * sizeof(unsigned)) != cudaSuccess ||
        cudaMemsetAsync(sp->counters, 0, HPDL__SPLITK_COUNTERS * sizeof(unsigned), stream) != cudaSuccess) {
        cudaFree(sp->ws);
        cudaFree(sp->counters);
        cudaGetLastError(); /* no split: not an error of the caller's */
        memset(sp, 0, sizeof *sp);
        return NULL;
    }
    sp->device = device;
    sp->stream = stream;
    return sp;
}

/* Frees the workspace of `stream` on the current device, if it has one,
   and its slot: for the stream's owner about to destroy it, after the
   graphs captured on it (they hold the workspace's address). Without it,
   a program that makes and destroys models one after another ran out of
   slots at the 17th stream and its GEMMs stopped splitting K (bench/mlp's
   last f16 own-kernel epoch, one H200: 2.4 -> 4.5 ms). */
HPDL_LAZY void hpdl__splitk_space_release(cudaStream_t stream) {
    hpdl__splitk_space *spaces = hpdl__splitk_spaces();
    int device = 0, i, used = 0;
    if (cudaGetDevice(&device) != cudaSuccess) { cudaGetLastError(); return; }
    while (used < HPDL__SPLITK_SPACES && spaces[used].ws) used++;
    for (i = 0; i < used; i++)
        if (spaces[i].device == device && spaces[i].stream == stream) {
            cudaFree(spaces[i].ws); /* waits for the device */
            cudaFree(spaces[i].counters);
            spaces[i] = spaces[used - 1]; /* the last moves into the gap: still packed */
            memset(&spaces[used - 1], 0, sizeof spaces[0]);
            return;
        }
}

/* Destroys a stream its owner made, giving back its splitk workspace first
   (hpdl__splitk_space_release). */
HPDL_LAZY void hpdl__stream_destroy(cudaStream_t stream) {
    hpdl__splitk_space_release(stream);
    cudaStreamDestroy(stream);
}

/* The splitk rung's tile for an M x N product (HPDL__SPLITK_*), and its rows and columns. */
HPDL_LAZY int hpdl__splitk_shape_for(int M, int N) {
    return N <= 16 ? HPDL__SPLITK_NARROW : M <= 32 ? HPDL__SPLITK_SHORT : HPDL__SPLITK_SQUARE;
}
HPDL_LAZY int hpdl__splitk_bm(int shape) { return shape == HPDL__SPLITK_NARROW ? 128 : shape == HPDL__SPLITK_SHORT ? 32 : 64; }
HPDL_LAZY int hpdl__splitk_bn(int shape) { return shape == HPDL__SPLITK_NARROW ? 16 : 64; }

/* How deep each slice of K is (a multiple of 32; K itself: no split) for
   `sms` SMs and sums of acc_bytes: enough slices for about 2 blocks per SM,
   each at least two 32-deep steps, at most 64, within the workspace and
   its counters. The slices are then ceil(K / depth), none of them empty.
   2 rather than 4 halves the slices the last block of a tile adds (one
   H200, 2026-11-27: f16 2048 x 10 x 3000, 32 -> 16 slices, 0.63 -> 0.81 of
   cuBLAS; 3000 x 10 x 2048 0.72 -> 1.06; f16 AUTO over the MLP's products
   0.86 -> 0.87). */
#ifndef HPDL__SPLITK_BLOCKS_PER_SM /* experiments build other splits */
#define HPDL__SPLITK_BLOCKS_PER_SM 2
#endif
#ifndef HPDL__SPLITK_MIN_STEPS
#define HPDL__SPLITK_MIN_STEPS 2
#endif
HPDL_LAZY int hpdl__splitk_depth(int M, int N, int K, int shape, int acc_bytes, int sms) {
    const int64_t bm = hpdl__splitk_bm(shape), bn = hpdl__splitk_bn(shape);
    const int64_t tiles = (M + bm - 1) / bm * ((N + bn - 1) / bn), steps = (K + 31) / 32;
    int64_t slices = ((int64_t)HPDL__SPLITK_BLOCKS_PER_SM * sms + tiles - 1) / tiles;
    if (slices > steps / HPDL__SPLITK_MIN_STEPS) slices = steps / HPDL__SPLITK_MIN_STEPS;
    if (slices > 64) slices = 64;
    if (tiles > HPDL__SPLITK_COUNTERS) slices = 1;
    while (slices > 1 && slices * tiles * bm * bn * acc_bytes > (int64_t)HPDL__SPLITK_WS_BYTES) slices--;
    if (slices <= 1) return K;
    return (int)((steps + slices - 1) / slices * 32);
}

/* The narrow MN-major kernel's slice depth for an M x K product whose
   block carries nb columns, on `sms` SMs: about 2 blocks an SM, each slice
   whole rounds of HPDL__NARROW_STEP k's (K itself: one slice), B's rows of
   a slice within 32 KB of shared memory (hpdl__narrow_most k's; with the
   A stages at most 96 KB a block, two blocks an SM), every slice's sums within the
   splitk workspace; no split of K <= 2 rounds (a slice's pass through the
   workspace cost ~1.2 us more than one more round: 512 x 10 x 128 f16 8.4
   -> 7.1 us in one slice, one H200). 0: no such split (the other narrow
   kernel takes it). */
HPDL_LAZY int hpdl__narrow_most(int nb) {
    return (32 << 10) / (nb * (int)sizeof(float)) / HPDL__NARROW_STEP * HPDL__NARROW_STEP;
}
HPDL_LAZY int hpdl__narrow_depth(int M, int K, int nb, int sms) {
    const int64_t tiles = (M + HPDL__NARROW_ROWS - 1) / HPDL__NARROW_ROWS, step = HPDL__NARROW_STEP;
    const int64_t most = hpdl__narrow_most(nb);
    const int64_t slices = (2 * (int64_t)sms + tiles - 1) / tiles;
    int64_t depth = ((K + slices - 1) / slices + step - 1) / step * step;
    if (depth > most) depth = most;
    if (depth >= K || K <= 2 * step) return K;
    if (tiles > HPDL__SPLITK_COUNTERS ||
        (K + depth - 1) / depth * tiles * HPDL__NARROW_ROWS * nb * (int64_t)sizeof(float) > (int64_t)HPDL__SPLITK_WS_BYTES)
        return 0;
    return (int)depth;
}

/* Whether `kernel` has sm_80+ code in this binary (cp.async, mma.sync
   m16n8k16; else its body is empty and another kernel runs); the error of a
   "no" is cleared. */
HPDL_LAZY int hpdl__has_sm80_code(const void *kernel) {
    cudaFuncAttributes fa;
    if (cudaFuncGetAttributes(&fa, kernel) == cudaSuccess && fa.ptxVersion >= 80) return 1;
    cudaGetLastError();
    return 0;
}

/* Runs a narrow MN-major kernel in slices of `depth` k's with `smem` bytes
   of shared memory (sp: the workspace, NULL for one slice). */
template <typename T>
static inline hpdl_status hpdl__narrow_run(void (*kernel)(hpdl__gemm_args<T, float>, int, float *, unsigned *),
                                           const hpdl__gemm_args<T, float> &g, size_t smem, int depth,
                                           hpdl__splitk_space *sp, cudaStream_t stream) {
    const dim3 grid(1, (unsigned)((g.M + HPDL__NARROW_ROWS - 1) / HPDL__NARROW_ROWS),
                    depth < g.K ? (unsigned)((g.K + depth - 1) / depth) : 1u);
    if (grid.y > 65535u || !hpdl__has_sm80_code((const void *)kernel)) return HPDL_ERR_UNSUPPORTED;
    HPDL_CUDA_TRY(cudaFuncSetAttribute((const void *)kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    kernel<<<grid, 256, smem, stream>>>(g, depth, sp ? (float *)sp->ws : (float *)NULL,
                                        sp ? sp->counters : (unsigned *)NULL);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}
template <typename T, int NB>
static inline hpdl_status hpdl__narrow_launch(const hpdl__gemm_args<T, float> &g, int depth, hpdl__splitk_space *sp,
                                              cudaStream_t stream) {
    return hpdl__narrow_run(hpdl__gemm_narrow_mn<T, NB>, g, hpdl__narrow_smem_bytes(depth, NB, (int)sizeof(T)), depth,
                            sp, stream);
}

/* The kernel for the type: FMAs for f32 (nb columns), the tensor cores for
   16-bit elements (K <= HPDL__NARROW_SHORT_K: hpdl__gemm_narrow_mn_short). */
#ifndef HPDL__NARROW_SHORT /* experiments build without it (0) */
#define HPDL__NARROW_SHORT 1
#endif
template <typename T, int BYTES = (int)sizeof(T)> struct hpdl__narrow {
    static hpdl_status launch(const hpdl__gemm_args<T, float> &g, int nb, int depth, hpdl__splitk_space *sp,
                              cudaStream_t stream) {
        if (nb == 8) return hpdl__narrow_launch<T, 8>(g, depth, sp, stream);
        if (nb == 12) return hpdl__narrow_launch<T, 12>(g, depth, sp, stream);
        return hpdl__narrow_launch<T, 16>(g, depth, sp, stream);
    }
};
template <typename T> struct hpdl__narrow<T, 2> {
    static hpdl_status launch(const hpdl__gemm_args<T, float> &g, int, int depth, hpdl__splitk_space *sp,
                              cudaStream_t stream) {
        if (HPDL__NARROW_SHORT && g.K <= HPDL__NARROW_SHORT_K &&
            hpdl__has_sm80_code((const void *)hpdl__gemm_narrow_mn_short<T>)) {
            hpdl__gemm_narrow_mn_short<T><<<(g.M + HPDL__NARROW_ROWS - 1) / HPDL__NARROW_ROWS, 128, 0, stream>>>(g);
            HPDL_CUDA_TRY_LAUNCH();
            return HPDL_OK;
        }
        return hpdl__narrow_run(hpdl__gemm_narrow_mn_tc<T>, g, hpdl__narrow_tc_smem_bytes(depth), depth, sp, stream);
    }
};

/* splitk's narrow products with A MN-major through hpdl__gemm_narrow_mn
   (f32 sums: f32, f16, bf16); HPDL_ERR_UNSUPPORTED where it does not take
   them: f64, A not 16-byte aligned or its rows not whole 16-byte pieces,
   no sm_80 code, K too long for one slice where there is no workspace. */
#ifndef HPDL__NARROW_MN /* experiments build without it (0) */
#define HPDL__NARROW_MN 1
#endif
template <typename T, typename ACC>
static inline hpdl_status hpdl__gemm_launch_narrow_mn(const hpdl__gemm_args<T, ACC> &, int, cudaStream_t) {
    return HPDL_ERR_UNSUPPORTED;
}
template <typename T>
static inline hpdl_status hpdl__gemm_launch_narrow_mn(const hpdl__gemm_args<T, float> &g, int sms, cudaStream_t stream) {
    const int nb = sizeof(T) == 2 || g.N > 12 ? 16 : g.N > 8 ? 12 : 8; /* 16-bit: the tensor-core kernel's 16 */
    int depth = hpdl__narrow_depth(g.M, g.K, nb, sms);
    hpdl__splitk_space *sp = NULL;
    if (!HPDL__NARROW_MN || g.N > 16 || g.a.kcontig || !g.a.vec || (depth == 0 && g.K > 0)) return HPDL_ERR_UNSUPPORTED;
    if (depth < g.K && !(sp = hpdl__splitk_space_for(stream))) {
        if (g.K > hpdl__narrow_most(nb)) return HPDL_ERR_UNSUPPORTED; /* K past one slice */
        depth = g.K;
    }
    return hpdl__narrow<T>::launch(g, nb, depth, sp, stream);
}

/* ---- short K: products with K <= 16 (an MLP's delta D1 W1^T, K = 10) ----
   Each element of C is at most 16 products, so writing C is the cost, and
   whatever a block stages must be spread over many rows of C: a block
   takes a strip of 128 columns and a run of rows. It stages the strip of
   B and the run of A (all of K, in the sum type) in shared memory once;
   each thread then keeps its 4 columns of B in registers, and warp w forms
   rows w, w + 8, ... of the run, a lane 4 columns (a warp's stores are
   whole rows of 128 elements). Sums in k order: the same bits whichever
   block runs first. (Blocks of 8 rows x 256 columns that staged B for
   themselves took 32 us for 3000 x 2048 x 10, cuBLAS 13.) */
enum { HPDL__SHORTK_MAX = 16, HPDL__SHORTK_BN = 128, HPDL__SHORTK_ROWS = 128 /* most rows a block */ };

/* act'(z) written with the activation's output a = act(z) (the MLP's
   backward pass, and the short-K kernel's epilogue for it below). */
template <typename A> __device__ __forceinline__ A hpdl__act_grad(A a, hpdl_activation act) {
    if (act == HPDL_ACT_RELU) return a > (A)0 ? (A)1 : (A)0;
    return a * ((A)1 - a);
}

/* The MLP's backward step through an activation, as the short-K kernel's
   epilogue (hpdl__gemm_launch_shortk_delta): C times act'(out), out being
   the layer's activation output stored like C (out_vec: it allows vector
   loads), and C's column sums into db. With more than one run of rows each
   block leaves its sums in parts[run][column] and the last of a strip's
   blocks to finish (counts[strip], set back to 0) adds them in run order. */
template <typename T, typename ACC> struct hpdl__shortk_delta {
    const T *out;
    int out_vec;
    hpdl_activation act;
    T *db;
    ACC *parts;
    unsigned *counts;
};

/* Row m, columns n .. n+3 of the product, times act'(out) in place; their
   values as stored (alpha times) added to the thread's column sums. Outside
   C the product and out are 0, and so is what is added. */
template <typename T, typename ACC>
static __device__ __forceinline__ void hpdl__shortk_mask(const hpdl__gemm_args<T, ACC> &g, const hpdl__shortk_delta<T, ACC> &d,
                                                         int m, int n, ACC acc[4], ACC sums[4]) {
    ACC out[4];
    int c;
    hpdl__gemm_load4<false>(d.out, g.ldc, m, n, g.M, g.N, d.out_vec, out);
#pragma unroll
    for (c = 0; c < 4; c++) {
        acc[c] *= hpdl__act_grad(out[c], d.act);
        sums[c] += g.alpha * acc[c];
    }
}

/* The block's column sums of its strip (the 8 warps' in warp order) into db,
   or, with more than one run of rows, through parts (hpdl__shortk_delta). */
template <typename T, typename ACC>
static __device__ __forceinline__ void hpdl__shortk_colsums(const hpdl__gemm_args<T, ACC> &g,
                                                            const hpdl__shortk_delta<T, ACC> &d, int n0, const ACC sums[4]) {
    __shared__ ACC part[8][HPDL__SHORTK_BN];
    const int t = (int)threadIdx.x, n = n0 + t;
    ACC total = 0;
    int c;
#pragma unroll
    for (c = 0; c < 4; c++) part[t / 32][t % 32 * 4 + c] = sums[c];
    __syncthreads();
    if (t < HPDL__SHORTK_BN && n < g.N)
        for (c = 0; c < 8; c++) total += part[c][t];
    hpdl__colsum_finish(total, t < HPDL__SHORTK_BN && n < g.N, n, g.N, (int)blockIdx.x, (int)gridDim.x, d.parts, d.counts,
                        (int)blockIdx.y, d.db);
}

/* Element (o, k) of an OUTER x K operand tile into s[k * OUTER + o] (zeros
   past O and K). Slot i is (i % OUTER, i / OUTER): a warp's shared stores
   are 32 consecutive words, and its loads run along the stored rows where
   M or N is contiguous, or span 32 short rows, kept in L1 for the next k,
   where K is. All of a thread's loads are issued before its first store,
   unconverted: one after another, or converted (f16) as each arrives, each
   would wait a DRAM latency. */
template <int OUTER, typename ACC, typename T>
static __device__ __forceinline__ void hpdl__shortk_stage(const hpdl__gemm_operand<T> &x, int o0, int O, int K, ACC *s) {
    enum { SLOTS = OUTER * HPDL__SHORTK_MAX, PER_THREAD = SLOTS / 256 };
    T v[PER_THREAD];
    int j;
#pragma unroll
    for (j = 0; j < PER_THREAD; j++) {
        const int i = (int)threadIdx.x + 256 * j, o = o0 + i % OUTER, k = i / OUTER;
        if (k < K && o < O) v[j] = x.kcontig ? x.p[(size_t)o * x.ld + k] : x.p[(size_t)k * x.ld + o];
    }
#pragma unroll
    for (j = 0; j < PER_THREAD; j++) {
        const int i = (int)threadIdx.x + 256 * j, o = i % OUTER, k = i / OUTER;
        s[i] = k < K && o0 + o < O ? (ACC)hpdl__gemm_acc(v[j]) : (ACC)0;
    }
}

/* Rows m0 .. m0 + rows - 1 (m0 = blockIdx.x * rows, rows <= HPDL__SHORTK_ROWS)
   of C's 128-column strip blockIdx.y (runs of rows along x: the grid's
   long side); KS: K rounded up to 4 (zeros past K add nothing, and the
   sums stay in k order). */
template <typename T, typename ACC, int KS, bool DELTA>
__global__ void __launch_bounds__(256) hpdl__gemm_shortk(hpdl__gemm_args<T, ACC> g, int rows, hpdl__shortk_delta<T, ACC> d) {
    enum { BN = HPDL__SHORTK_BN, RS = HPDL__SHORTK_ROWS };
    __shared__ __align__(16) ACC as[HPDL__SHORTK_MAX * RS]; /* as[k * RS + r] */
    __shared__ __align__(16) ACC bs[HPDL__SHORTK_MAX * BN]; /* bs[k * BN + column] */
    const int m0 = (int)blockIdx.x * rows, n0 = (int)blockIdx.y * BN, col = (int)threadIdx.x % 32 * 4;
    ACC b[KS][4], sums[4] = {0, 0, 0, 0}; /* sums: DELTA's column sums of this thread's rows */
    int r, k, c;
    hpdl__shortk_stage<RS>(g.a, m0, m0 + rows < g.M ? m0 + rows : g.M, g.K, as);
    hpdl__shortk_stage<BN>(g.b, n0, g.N, g.K, bs);
    __syncthreads();
#pragma unroll
    for (k = 0; k < KS; k++) hpdl__gemm_sload4(bs + k * BN + col, b[k]);
    for (r = (int)threadIdx.x / 32; r < rows; r += 8) {
        ACC acc[4] = {0, 0, 0, 0};
#pragma unroll
        for (k = 0; k < KS; k++) {
            const ACC a = as[k * RS + r]; /* the same word for the whole warp */
#pragma unroll
            for (c = 0; c < 4; c++) acc[c] += a * b[k][c];
        }
        if (DELTA) hpdl__shortk_mask(g, d, m0 + r, n0 + col, acc, sums);
        hpdl__gemm_out4(g, m0 + r, n0 + col, acc);
    }
    if (DELTA) hpdl__shortk_colsums(g, d, n0, sums);
}

/* Runs of rows that give about two blocks an SM, 8 to HPDL__SHORTK_ROWS. */
HPDL_LAZY int hpdl__shortk_rows(int M, int N, int sms) {
    const int64_t strips = (N + HPDL__SHORTK_BN - 1) / HPDL__SHORTK_BN;
    int64_t rows = ((int64_t)M * strips + 2 * sms - 1) / (2 * (int64_t)sms);
    rows = (rows + 7) / 8 * 8;
    return rows < 8 ? 8 : rows > HPDL__SHORTK_ROWS ? HPDL__SHORTK_ROWS : (int)rows;
}

/* The short-K kernel in runs of `rows` rows, with the MLP's backward
   epilogue (DELTA) or without it (d unused). */
template <bool DELTA, typename T, typename ACC>
static inline hpdl_status hpdl__shortk_launch(const hpdl__gemm_args<T, ACC> &g, int rows, const hpdl__shortk_delta<T, ACC> &d,
                                              cudaStream_t stream) {
    dim3 grid;
    hpdl_status s = hpdl__gemm_grid(g.M, rows, g.N, HPDL__SHORTK_BN, &grid); /* runs of rows along x */
    if (s != HPDL_OK) return s;
    if (g.K <= 4)
        hpdl__gemm_shortk<T, ACC, 4, DELTA><<<grid, 256, 0, stream>>>(g, rows, d);
    else if (g.K <= 8)
        hpdl__gemm_shortk<T, ACC, 8, DELTA><<<grid, 256, 0, stream>>>(g, rows, d);
    else if (g.K <= 12)
        hpdl__gemm_shortk<T, ACC, 12, DELTA><<<grid, 256, 0, stream>>>(g, rows, d);
    else
        hpdl__gemm_shortk<T, ACC, 16, DELTA><<<grid, 256, 0, stream>>>(g, rows, d);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

template <typename T, typename ACC>
static inline hpdl_status hpdl__gemm_launch_shortk(const hpdl__gemm_args<T, ACC> &g, int sms, cudaStream_t stream) {
    return hpdl__shortk_launch<false>(g, hpdl__shortk_rows(g.M, g.N, sms), hpdl__shortk_delta<T, ACC>(), stream);
}

/* The short-K product with the MLP's backward epilogue (hpdl__shortk_delta),
   in the usual runs of rows, or longer ones where d.parts holds sums for
   fewer than that (most_runs; 1 without parts). HPDL_ERR_UNSUPPORTED where
   K > HPDL__SHORTK_MAX, beta != 0, or a run would be longer than
   HPDL__SHORTK_ROWS. */
template <typename T, typename ACC>
static inline hpdl_status hpdl__gemm_launch_shortk_delta(const hpdl__gemm_args<T, ACC> &g, const hpdl__shortk_delta<T, ACC> &d,
                                                         int most_runs, cudaStream_t stream) {
    int sms = 0, rows;
    if (g.K > HPDL__SHORTK_MAX || g.beta != (ACC)0 || most_runs < 1) return HPDL_ERR_UNSUPPORTED;
    if (hpdl__sm_count(&sms) != HPDL_OK) return HPDL_ERR_CUDA;
    rows = hpdl__shortk_rows(g.M, g.N, sms);
    if ((g.M + rows - 1) / rows > most_runs) rows = ((g.M + most_runs - 1) / most_runs + 7) / 8 * 8;
    if (rows > HPDL__SHORTK_ROWS) return HPDL_ERR_UNSUPPORTED;
    return hpdl__shortk_launch<true>(g, rows, d, stream);
}

/* C = alpha (the sum of the slices' BM x BN tiles, in slice order) + beta
   C, a thread per output: splitk's last step where it is a kernel of its
   own (hpdl__gemm_launch_splitk_shape). */
template <typename SH, typename T, typename ACC>
__global__ void hpdl__splitk_add_tiles_kernel(hpdl__gemm_args<T, ACC> g, const ACC *ws, int slices) {
    enum { AREA = SH::BM * SH::BN };
    const int tiles_n = (g.N + SH::BN - 1) / SH::BN;
    int64_t i;
    hpdl__wait_for_previous(); /* the slices' tiles are written */
    for (i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (int64_t)g.M * g.N; i += (int64_t)gridDim.x * blockDim.x) {
        const int m = (int)(i / g.N), n = (int)(i % g.N);
        const int64_t tile = (int64_t)(m / SH::BM) * tiles_n + n / SH::BN;
        ACC sum[1] = {0};
        hpdl__splitk_add_slices<1>(ws + tile * slices * AREA + m % SH::BM * SH::BN + n % SH::BN, AREA, slices, -1,
                                   sum);
        hpdl__gemm_out(g, m, n, sum[0]);
    }
}

/* Launches the splitk kernel of tile SH (TC: the tensor-core one). The last
   slice of a tile to finish adds all of them, one block reading every
   slice's tile; from HPDL__SPLITK_ADD_APART slices on a second kernel adds
   them instead, a thread per output (f16 32 x 10 x 2048 in 32 slices:
   the one block's pass was most of 11 us, ncu on an H200), launched to
   start while the first finishes (hpdl__launch_after). Once it started so,
   4 slices on paid more than 8 or 16 (one H200, f16 3000 x 10 x 512: 11.1
   -> 9.9 us, 3000 x 10 x 2048: 16.2 -> 14.3; AUTO over the MLP's products
   f16 0.986 -> 0.993, f32 1.067 -> 1.075). */
#ifndef HPDL__SPLITK_ADD_APART /* experiments build other counts */
#define HPDL__SPLITK_ADD_APART 4
#endif
template <typename T, typename ACC, typename SH, bool TC>
static inline hpdl_status hpdl__gemm_launch_splitk_shape(const hpdl__gemm_args<T, ACC> &g, int depth, cudaStream_t stream) {
    hpdl__splitk_space *sp = depth < g.K ? hpdl__splitk_space_for(stream) : NULL;
    dim3 grid;
    int apart;
    hpdl_status s = hpdl__gemm_grid(g.N, SH::BN, g.M, SH::BM, &grid);
    if (s != HPDL_OK) return s;
    if (!sp) depth = g.K; /* no workspace: one slice */
    grid.z = depth < g.K ? (unsigned)((g.K + depth - 1) / depth) : 1u;
    apart = grid.z >= HPDL__SPLITK_ADD_APART;
    hpdl__gemm_splitk<T, ACC, SH, TC><<<grid, 256, 0, stream>>>(g, depth, sp ? (ACC *)sp->ws : (ACC *)NULL,
                                                                sp && !apart ? sp->counters : (unsigned *)NULL);
    HPDL_CUDA_TRY_LAUNCH();
    if (apart)
        return hpdl__launch_after(hpdl__splitk_add_tiles_kernel<SH, T, ACC>, hpdl__grid_for((int64_t)g.M * g.N, 256), 256,
                                  stream, g, (const ACC *)sp->ws, (int)grid.z);
    return HPDL_OK;
}

/* The tensor-core kernel where the type has one (f16/bf16) and this binary
   holds sm_80+ code for it, else the FMA one. */
template <typename SH, typename T, typename ACC>
static inline hpdl_status hpdl__gemm_launch_splitk_tile(const hpdl__gemm_args<T, ACC> &g, int depth, cudaStream_t stream) {
    return hpdl__gemm_launch_splitk_shape<T, ACC, SH, false>(g, depth, stream);
}
template <typename SH, typename T>
static inline hpdl_status hpdl__gemm_launch_splitk_half(const hpdl__gemm_args<T, float> &g, int depth, cudaStream_t stream) {
    if (hpdl__has_sm80_code((const void *)hpdl__gemm_splitk<T, float, SH, true>))
        return hpdl__gemm_launch_splitk_shape<T, float, SH, true>(g, depth, stream);
    return hpdl__gemm_launch_splitk_shape<T, float, SH, false>(g, depth, stream);
}
template <typename SH>
static inline hpdl_status hpdl__gemm_launch_splitk_tile(const hpdl__gemm_args<__half, float> &g, int depth, cudaStream_t stream) {
    return hpdl__gemm_launch_splitk_half<SH>(g, depth, stream);
}
template <typename SH>
static inline hpdl_status hpdl__gemm_launch_splitk_tile(const hpdl__gemm_args<__nv_bfloat16, float> &g, int depth,
                                                        cudaStream_t stream) {
    return hpdl__gemm_launch_splitk_half<SH>(g, depth, stream);
}

/* ---- narrow products of few rows, in a cluster: N <= 16, A's K contiguous ----
   The logits' product of a small batch (32 x 10 x 2048) makes one narrow
   tile, so splitk cut its K into 32 slices and a second kernel added them:
   in the MLP's step graph 4.2 + 3.7 us against cuBLAS's 3.6 + 2.5 (f16, one
   H200, 2026-11-28). Here the blocks of a thread-block cluster (sm_90) take
   one slice of K each, at most 256 deep, for a run of 32 rows, and add
   their sums through each other's shared memory: one kernel, no workspace.
   A block stages its slice of B (all 16 columns, in the sum type) in shared
   memory and reads its rows of A in 16-byte runs along K, 8 threads a row:
   a warp reads 4 rows' 128-byte stretches, and every thread holds its runs
   in registers before the first sum. Each thread forms the 16 sums of its
   row over its k's, the 8 threads of a row add theirs by shuffles (a fixed
   tree), and block r of the cluster writes rows r, r + S, ... of the run,
   each output the S slices' sums in slice order: the same bits every run.
   Taken for f32 only (hpdl__gemm_launch_narrow_cluster says why). */
enum { HPDL__NCL_ROWS = 32, HPDL__NCL_COLS = 16, HPDL__NCL_PARTS = 8, HPDL__NCL_DEPTH = 256, HPDL__NCL_MAX_SLICES = 8 };
#ifndef HPDL__NCL_MAX_M /* experiments build other limits (0: never taken) */
#define HPDL__NCL_MAX_M 128
#endif

/* Where row k of a block's slice of B starts in shared memory: rows of 16
   sums, and 4 more words after every E rows, so that the 8 threads of a row
   of A (E k's apart) read from 8 different banks. */
template <int E> static __device__ __forceinline__ int hpdl__ncl_b_row(int k) { return k * HPDL__NCL_COLS + k / E * 4; }

/* A thread's 16-byte run of a row of A, loaded whole or element by element. */
template <typename T> union hpdl__ncl_run {
    uint4 whole;
    T e[16 / sizeof(T)];
};

/* One row of the slice of B (16 sums) as it is read from shared memory: in
   16-byte loads, a quarter of the instructions of one load a sum. */
template <typename ACC> union hpdl__ncl_b_row_sums {
    uint4 piece[HPDL__NCL_COLS * sizeof(ACC) / 16];
    ACC sum[HPDL__NCL_COLS];
};

template <typename T, typename ACC>
__global__ void __launch_bounds__(256) hpdl__gemm_narrow_cluster(hpdl__gemm_args<T, ACC> g, int depth) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    enum { E = 16 / sizeof(T), STEP = HPDL__NCL_PARTS * E, STEPS = HPDL__NCL_DEPTH / STEP,
           B_SLOTS = HPDL__NCL_DEPTH * HPDL__NCL_COLS / 256 };
    __shared__ __align__(16) ACC b_s[HPDL__NCL_DEPTH * HPDL__NCL_COLS + HPDL__NCL_DEPTH / E * 4];
    __shared__ ACC sums[HPDL__NCL_ROWS][HPDL__NCL_COLS];
    cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
    const int t = (int)threadIdx.x, row = t / HPDL__NCL_PARTS, part = t % HPDL__NCL_PARTS;
    const int m = (int)blockIdx.x * HPDL__NCL_ROWS + row, slices = (int)gridDim.z;
    const int k0 = (int)blockIdx.z * depth, kend = min(g.K, k0 + depth);
    hpdl__ncl_run<T> a_run[STEPS];
    T b_raw[B_SLOTS];
    ACC acc[HPDL__NCL_COLS];
    int i, j, n, r;
#pragma unroll
    for (i = 0; i < STEPS; i++) { /* this thread's runs of A: k0 + i STEP + part E, E elements each */
        const int k = k0 + i * STEP + part * E;
        a_run[i].whole = make_uint4(0u, 0u, 0u, 0u);
        if (m < g.M && k < kend) {
            const T *p = g.a.p + (size_t)m * g.a.ld + k;
            if (g.a.vec && k + E <= kend) {
                a_run[i].whole = *(const uint4 *)p;
            } else {
#pragma unroll
                for (j = 0; j < E; j++)
                    if (k + j < kend) a_run[i].e[j] = p[j];
            }
        }
    }
#pragma unroll
    for (j = 0; j < B_SLOTS; j++) { /* slot s of the slice of B: (k0 + s / 16, s % 16) */
        const int s = t + 256 * j, k = k0 + s / HPDL__NCL_COLS, col = s % HPDL__NCL_COLS;
        if (k < kend && col < g.N) b_raw[j] = g.b.kcontig ? g.b.p[(size_t)col * g.b.ld + k] : g.b.p[(size_t)k * g.b.ld + col];
    }
#pragma unroll
    for (j = 0; j < B_SLOTS; j++) {
        const int s = t + 256 * j, k = k0 + s / HPDL__NCL_COLS, col = s % HPDL__NCL_COLS;
        b_s[hpdl__ncl_b_row<E>(s / HPDL__NCL_COLS) + col] = k < kend && col < g.N ? (ACC)hpdl__gemm_acc(b_raw[j]) : (ACC)0;
    }
    __syncthreads();
#pragma unroll
    for (n = 0; n < HPDL__NCL_COLS; n++) acc[n] = 0;
#pragma unroll
    for (i = 0; i < STEPS; i++) {
#pragma unroll
        for (j = 0; j < E; j++) {
            const ACC a = (ACC)hpdl__gemm_acc(a_run[i].e[j]);
            const uint4 *b = (const uint4 *)(b_s + hpdl__ncl_b_row<E>(i * STEP + part * E + j));
            hpdl__ncl_b_row_sums<ACC> row_k;
#pragma unroll
            for (n = 0; n < HPDL__NCL_COLS * (int)sizeof(ACC) / 16; n++) row_k.piece[n] = b[n];
#pragma unroll
            for (n = 0; n < HPDL__NCL_COLS; n++) acc[n] += a * row_k.sum[n];
        }
    }
#pragma unroll
    for (j = HPDL__NCL_PARTS / 2; j > 0; j /= 2) /* a + b on one lane, b + a on the other: the same sums */
#pragma unroll
        for (n = 0; n < HPDL__NCL_COLS; n++) acc[n] += __shfl_xor_sync(0xffffffffu, acc[n], j);
#pragma unroll
    for (n = 0; n < HPDL__NCL_COLS; n++)
        if (n / 2 == part) sums[row][n] = acc[n];
    cluster.sync(); /* every block's sums are in its shared memory */
    n = t % HPDL__NCL_COLS;
    for (r = (int)cluster.block_rank() + slices * (t / HPDL__NCL_COLS); r < HPDL__NCL_ROWS; r += slices * 16) {
        ACC in[HPDL__NCL_MAX_SLICES], total = 0;
#pragma unroll
        for (j = 0; j < HPDL__NCL_MAX_SLICES; j++)
            if (j < slices) in[j] = *cluster.map_shared_rank(&sums[r][n], (unsigned)j);
#pragma unroll
        for (j = 0; j < HPDL__NCL_MAX_SLICES; j++)
            if (j < slices) total += in[j];
        hpdl__gemm_out(g, (int)blockIdx.x * HPDL__NCL_ROWS + r, n, total);
    }
    cluster.sync(); /* the other blocks may still read this one's sums */
#else
    (void)g; (void)depth; /* no sm_90 code in this pass: never launched */
#endif
}

/* The cluster kernel's slices of K for an M x N x K product: ceil(K / 256)
   where N <= 16, A's K is contiguous, M is at most HPDL__NCL_MAX_M and K
   from 512 (the MLP's hidden widths) to 8 slices of 256; 0 where it does not
   take the product. Measured on an H100 against splitk, in turns (f32, the
   logits' product 32 / 128 / 512 x 10 x 512 / 2048; notes/gemm.md): 1.6-2.4
   us faster at 32 and 128 rows, even at 512. */
HPDL_LAZY int hpdl__ncl_slices(int M, int N, int K, int a_kcontig) {
    if (N > HPDL__NCL_COLS || !a_kcontig || M > HPDL__NCL_MAX_M || K < 512 || K > HPDL__NCL_MAX_SLICES * HPDL__NCL_DEPTH)
        return 0;
    return (K + HPDL__NCL_DEPTH - 1) / HPDL__NCL_DEPTH;
}

/* Launches the cluster kernel; HPDL_ERR_UNSUPPORTED where it does not take
   the product (hpdl__ncl_slices) or this binary has no sm_90 code for it,
   and for every type but f32: for f16 and bf16 splitk's tensor-core kernel
   and its adding kernel were as fast or faster (the same runs, up to 2 us
   behind at K = 512), and f64 was not measured. */
template <typename T, typename ACC>
static inline hpdl_status hpdl__gemm_launch_narrow_cluster(const hpdl__gemm_args<T, ACC> &, cudaStream_t) {
    return HPDL_ERR_UNSUPPORTED;
}
HPDL_LAZY hpdl_status hpdl__gemm_launch_narrow_cluster(const hpdl__gemm_args<float, float> &g, cudaStream_t stream) {
    const int step = HPDL__NCL_PARTS * (int)(16 / sizeof(float));
    int slices = hpdl__ncl_slices(g.M, g.N, g.K, g.a.kcontig), depth;
    cudaLaunchConfig_t cfg = cudaLaunchConfig_t();
    cudaLaunchAttribute attr[1];
    cudaFuncAttributes fa;
    if (slices == 0) return HPDL_ERR_UNSUPPORTED;
    if (cudaFuncGetAttributes(&fa, (const void *)hpdl__gemm_narrow_cluster<float, float>) != cudaSuccess || fa.ptxVersion < 90) {
        cudaGetLastError(); /* code for GPUs before clusters */
        return HPDL_ERR_UNSUPPORTED;
    }
    depth = ((g.K + slices - 1) / slices + step - 1) / step * step; /* whole steps of 8 runs: at most 256 */
    slices = (g.K + depth - 1) / depth;
    cfg.gridDim = dim3((unsigned)((g.M + HPDL__NCL_ROWS - 1) / HPDL__NCL_ROWS), 1u, (unsigned)slices);
    cfg.blockDim = dim3(256u);
    cfg.stream = stream;
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = (unsigned)slices;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    HPDL_CUDA_TRY(cudaLaunchKernelEx(&cfg, hpdl__gemm_narrow_cluster<float, float>, g, depth));
    return HPDL_OK;
}

/* ---- narrow products of many rows on the tensor cores: N <= 16, A's K contiguous ----
   The logits' product at a large batch (f16 3000 x 10 x 512) went to
   splitk: 24 narrow tiles, K in 8 slices of 64, then a kernel adding the
   slices, 5.1 + 3.3 us against cuBLAS's 5.9 (ncu, one H100, 2026-11-28).
   Here a block takes HPDL__NRT_ROWS rows of C (all 16 columns) and its 8
   warps split K into runs of 32, warp w taking runs w, w + 8, ...; the
   warps' sums are added in shared memory in warp order: one kernel, no
   workspace, the same bits every run. A lane reads its rows of A with
   16-byte loads straight into the mma's registers: a sum over k may take
   the k's in any order, so lane (g, t) = (lane / 4, lane % 4) takes k's
   8t .. 8t+7 of a run, which stand for the k's 2t, 2t+1, 2t+8, 2t+9 of two
   m16n8k16 steps, from rows g and g + 8, and B's values at the same k's. */
#ifndef HPDL__NRT_ROWS /* experiments build 16 */
#define HPDL__NRT_ROWS 32
#endif
/* Taken from HPDL__NRT_MIN_M rows and up to HPDL__NRT_MAX_K k's (4 runs a
   warp). In the f16 MLP step's graph on one H200 (2026-11-28), against
   splitk: 512 and 3000 x 10 x 512 0.8 and 1.2 us faster a step, 512 and
   3000 x 10 x 2048 (8 runs a warp, one after another) 4.8 and 2 us slower. */
#ifndef HPDL__NRT_MIN_M /* experiments build other limits */
#define HPDL__NRT_MIN_M 512
#endif
#ifndef HPDL__NRT_MAX_K
#define HPDL__NRT_MAX_K 1024
#endif
enum { HPDL__NRT_RUN = 32, HPDL__NRT_WARPS = 8, HPDL__NRT_TILES = HPDL__NRT_ROWS / 16 };

/* A lane's 8 k's of one row of A or one column of B: 16 bytes, four mma registers. */
template <typename T> union hpdl__nrt_pack {
    uint4 whole;
    unsigned reg[4];
    T e[8];
};

/* Row m of A at k .. k+7: one load where all 8 lie inside K, else element by
   element; zeros past M and K. */
template <typename T>
static __device__ __forceinline__ void hpdl__nrt_load_a(const hpdl__gemm_args<T, float> &g, int m, int k,
                                                        hpdl__nrt_pack<T> *x) {
    x->whole = make_uint4(0u, 0u, 0u, 0u);
    if (m < g.M && k < g.K) {
        const T *p = g.a.p + (size_t)m * g.a.ld + k;
        if (k + 8 <= g.K) {
            x->whole = *(const uint4 *)p;
        } else {
#pragma unroll
            for (int j = 0; j < 8; j++)
                if (k + j < g.K) x->e[j] = p[j];
        }
    }
}

/* Column n of B at k .. k+7, element by element (B is 10 columns wide in
   the MLP: its rows are not 16-byte aligned); zeros past N and K. */
template <typename T>
static __device__ __forceinline__ void hpdl__nrt_load_b(const hpdl__gemm_args<T, float> &g, int n, int k,
                                                        hpdl__nrt_pack<T> *x) {
    x->whole = make_uint4(0u, 0u, 0u, 0u);
    if (n < g.N) {
#pragma unroll
        for (int j = 0; j < 8; j++)
            if (k + j < g.K) x->e[j] = g.b.kcontig ? g.b.p[(size_t)n * g.b.ld + k + j] : g.b.p[(size_t)(k + j) * g.b.ld + n];
    }
}

/* This warp's sums over one run of 32 k's from k0: two m16n8k16 steps per
   16 rows and 8 columns. Fragment registers: A {row g at k-pair 0, row
   g + 8 at k-pair 0, row g at k-pair 1, row g + 8 at k-pair 1}, B {k-pair
   0, k-pair 1} of column g; step h takes the pairs 2h and 2h + 1 of the
   lane's 8 k's. */
template <typename T>
static __device__ __forceinline__ void hpdl__nrt_run(const hpdl__gemm_args<T, float> &g, int m0, int k0,
                                                     float acc[HPDL__NRT_TILES][2][4]) {
    const int lane = (int)threadIdx.x % 32, k = k0 + 8 * (lane % 4);
    hpdl__nrt_pack<T> a[HPDL__NRT_TILES][2], b[2];
    int i, h, n;
#pragma unroll
    for (i = 0; i < HPDL__NRT_TILES; i++) {
        hpdl__nrt_load_a(g, m0 + 16 * i + lane / 4, k, &a[i][0]);
        hpdl__nrt_load_a(g, m0 + 16 * i + lane / 4 + 8, k, &a[i][1]);
    }
#pragma unroll
    for (n = 0; n < 2; n++) hpdl__nrt_load_b(g, 8 * n + lane / 4, k, &b[n]);
#pragma unroll
    for (h = 0; h < 2; h++)
#pragma unroll
        for (i = 0; i < HPDL__NRT_TILES; i++) {
            const unsigned af[4] = {a[i][0].reg[2 * h], a[i][1].reg[2 * h], a[i][0].reg[2 * h + 1], a[i][1].reg[2 * h + 1]};
#pragma unroll
            for (n = 0; n < 2; n++) {
                const unsigned bf[2] = {b[n].reg[2 * h], b[n].reg[2 * h + 1]};
                hpdl__mma16816(T(), acc[i][n], af, bf);
            }
        }
}

template <typename T>
__global__ void __launch_bounds__(256) hpdl__gemm_narrow_rows_tc(hpdl__gemm_args<T, float> g) {
    __shared__ float sums[HPDL__NRT_WARPS][HPDL__NRT_ROWS][16];
    const int t = (int)threadIdx.x, lane = t % 32, warp = t / 32, m0 = (int)blockIdx.x * HPDL__NRT_ROWS;
    float acc[HPDL__NRT_TILES][2][4] = {};
    int i, n, e, k0;
#pragma unroll 2
    for (k0 = warp * HPDL__NRT_RUN; k0 < g.K; k0 += HPDL__NRT_WARPS * HPDL__NRT_RUN) hpdl__nrt_run(g, m0, k0, acc);
    /* accumulator (i, n, e): row 16 i + lane / 4 (+8 for e >= 2), column 8 n + 2 (lane % 4) + e % 2 */
#pragma unroll
    for (i = 0; i < HPDL__NRT_TILES; i++)
#pragma unroll
        for (n = 0; n < 2; n++)
#pragma unroll
            for (e = 0; e < 4; e++) sums[warp][16 * i + lane / 4 + 8 * (e / 2)][8 * n + 2 * (lane % 4) + e % 2] = acc[i][n][e];
    __syncthreads();
    for (i = t; i < HPDL__NRT_ROWS * 16; i += 256) {
        float total = 0.0f;
#pragma unroll
        for (e = 0; e < HPDL__NRT_WARPS; e++) total += sums[e][i / 16][i % 16];
        hpdl__gemm_out(g, m0 + i / 16, i % 16, total);
    }
}

/* Launches the kernel above for 16-bit products of HPDL__NRT_MIN_M rows or
   more, N <= 16 and K <= HPDL__NRT_MAX_K, whose A has K contiguous in
   16-byte aligned rows; HPDL_ERR_UNSUPPORTED elsewhere (f32 and f64, or no
   sm_80 code in this binary for the mma). */
template <typename T, typename ACC>
static inline hpdl_status hpdl__gemm_launch_narrow_rows(const hpdl__gemm_args<T, ACC> &, cudaStream_t) {
    return HPDL_ERR_UNSUPPORTED;
}
template <typename T>
static inline hpdl_status hpdl__gemm_launch_narrow_rows_half(const hpdl__gemm_args<T, float> &g, cudaStream_t stream) {
    if (g.N > 16 || !g.a.kcontig || !g.a.vec || g.M < HPDL__NRT_MIN_M || g.K > HPDL__NRT_MAX_K ||
        !hpdl__has_sm80_code((const void *)hpdl__gemm_narrow_rows_tc<T>))
        return HPDL_ERR_UNSUPPORTED;
    hpdl__gemm_narrow_rows_tc<T><<<(unsigned)((g.M + HPDL__NRT_ROWS - 1) / HPDL__NRT_ROWS), 256, 0, stream>>>(g);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}
HPDL_LAZY hpdl_status hpdl__gemm_launch_narrow_rows(const hpdl__gemm_args<__half, float> &g, cudaStream_t stream) {
    return hpdl__gemm_launch_narrow_rows_half(g, stream);
}
HPDL_LAZY hpdl_status hpdl__gemm_launch_narrow_rows(const hpdl__gemm_args<__nv_bfloat16, float> &g, cudaStream_t stream) {
    return hpdl__gemm_launch_narrow_rows_half(g, stream);
}

/* The splitk rung: the tile for the shape, the slices for the GPU. */
template <typename T, typename ACC>
static inline hpdl_status hpdl__gemm_launch_splitk(const hpdl__gemm_args<T, ACC> &g, cudaStream_t stream) {
    int sms = 0, shape = hpdl__splitk_shape_for(g.M, g.N), depth;
    if (hpdl__sm_count(&sms) != HPDL_OK) return HPDL_ERR_CUDA;
    if (g.K <= HPDL__SHORTK_MAX) return hpdl__gemm_launch_shortk(g, sms, stream);
    if (shape == HPDL__SPLITK_NARROW) {
        hpdl_status s = g.a.kcontig ? hpdl__gemm_launch_narrow_cluster(g, stream) : hpdl__gemm_launch_narrow_mn(g, sms, stream);
        if (s == HPDL_ERR_UNSUPPORTED && g.a.kcontig) s = hpdl__gemm_launch_narrow_rows(g, stream);
        if (s != HPDL_ERR_UNSUPPORTED) return s;
    }
    depth = hpdl__splitk_depth(g.M, g.N, g.K, shape, (int)sizeof(ACC), sms);
    if (shape == HPDL__SPLITK_NARROW)
        return hpdl__gemm_launch_splitk_tile<typename hpdl__splitk_narrow_for<sizeof(T)>::type>(g, depth, stream);
    if (shape == HPDL__SPLITK_SHORT) return hpdl__gemm_launch_splitk_tile<hpdl__splitk_short>(g, depth, stream);
    return hpdl__gemm_launch_splitk_tile<hpdl__splitk_square>(g, depth, stream);
}

/* Whether AUTO takes the splitk rung for an M x N x K product of elements
   of elem_bytes (host logic only; tests/gpu_gemm.cu checks it without a
   GPU). Measured with bench/gemm --mlp on one H200 (2026-11-26, the 40
   products of an MLP step per type, notes/gemm.md): splitk was the best
   rung on every product with N <= 16 (f32 and f16). Past those, f32 took
   splitk below 2^20 outputs (784 x 2048 and up: warptile 0.6-1.1 against
   0.4-0.8), while f16/bf16 lost to the Hopper rung on every product it
   could run (784 x 2048 x 3000: 0.05 against 0.61), so they keep their
   ladder. K <= 16 is the short-K kernel's at every size
   (hpdl__gemm_launch_shortk). f64 keeps DMMA (not measured against
   splitk; the f64 MLP trains on AUTO). */
HPDL_LAZY int hpdl__gemm_auto_splitk(int M, int N, int K, int elem_bytes) {
    if (elem_bytes == 8) return 0;
    if (N <= 16 || K <= 16) return 1;
    return elem_bytes == 4 && (int64_t)M * N < ((int64_t)1 << 20);
}

/* Every block tile inside the matrices and every load aligned: the kernels
   can skip all bounds checks (the kernels' FAST variant). */
template <typename ARGS> static inline int hpdl__gemm_interior(const ARGS &g, int bm, int bn, int bk) {
    return g.a.vec && g.b.vec && g.M % bm == 0 && g.N % bn == 0 && g.K % bk == 0;
}

/* K depth of the warptile rung's tiles. */
#define HPDL__WARPTILE_BK 8

/* The warptile rung's 128 x 16TN tiles on `count` GEMMs of one shape, the
   operands of each `batch` elements after the one before (count 1: one GEMM). */
template <typename T, typename ACC, int BK, int TN>
static inline hpdl_status hpdl__gemm_launch_warptile(const hpdl__gemm_args<T, ACC> &g, hpdl__gemm_batch batch,
                                                     int count, cudaStream_t stream) {
    enum { MINB = sizeof(ACC) == 4 ? 2 : 1 };
    dim3 grid;
    hpdl_status s = hpdl__gemm_grid(g.N, 16 * TN, g.M, 128, &grid);
    if (s != HPDL_OK) return s;
    if (count < 1 || count > 65535) return HPDL_ERR_UNSUPPORTED;
    grid.z = (unsigned)count;
    if (hpdl__gemm_interior(g, 128, 16 * TN, BK) && batch.last_k % BK == 0)
        hpdl__gemm_warptile<T, ACC, BK, TN, MINB, true><<<grid, 256, 0, stream>>>(g, batch);
    else
        hpdl__gemm_warptile<T, ACC, BK, TN, MINB, false><<<grid, 256, 0, stream>>>(g, batch);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* How many slices of K a rung of bm x bn tiles, per_sm blocks an SM, splits
   an M x N x K product of elem-byte sums into: none (1) when its tiles fill
   the GPU's `sms` SMs; else enough slices for about that many blocks, each
   slice at least min_depth deep, all slices' M x N sums within the splitk
   workspace, and at least min_slices of them, or none. */
HPDL_LAZY int hpdl__gemm_slices_for(int M, int N, int K, int elem_bytes, int sms, int bm, int bn, int per_sm,
                                    int min_depth, int min_slices) {
    const int64_t tiles = (int64_t)((M + bm - 1) / bm) * ((N + bn - 1) / bn), room = (int64_t)per_sm * sms;
    const int64_t most_by_depth = K / min_depth;
    int64_t slices = room / tiles;
    if (slices > most_by_depth) slices = most_by_depth;
    while (slices > 1 && slices * M * (int64_t)N * elem_bytes > (int64_t)HPDL__SPLITK_WS_BYTES) slices--;
    return slices >= min_slices ? (int)slices : 1;
}

/* The warptile rung's slices: 128 x 128 tiles, two blocks an SM for f32,
   one for f64, slices at least 16 steps of 8 deep; at least 3 slices, or
   none: with 2 the pass that adds them costs what the split saves (one
   H200: 784 x 2048 x 3000, 112 tiles, 0.60 -> 0.58 of cuBLAS; 512 x 2048 x
   784, 64 tiles and 4 slices, 0.38 -> 0.56). */
HPDL_LAZY int hpdl__warptile_slices(int M, int N, int K, int elem_bytes, int sms) {
    return hpdl__gemm_slices_for(M, N, K, elem_bytes, sms, 128, 128, elem_bytes == 4 ? 2 : 1, 16 * HPDL__WARPTILE_BK, 3);
}

/* The 3xTF32 mma rung's slices: 128 x 64 tiles, two blocks an SM, slices
   at least 4 K tiles of 32 deep, 3 or more (one H200, 512 x 2048 x 784,
   128 tiles: 1.08 of cuBLAS whole, 1.00 in 2 slices; 784 x 512 x 3000, 56
   tiles: 0.38 whole, 0.92 in 4). */
HPDL_LAZY int hpdl__tf32x3_slices(int M, int N, int K, int sms) {
    return hpdl__gemm_slices_for(M, N, K, 4, sms, 128, 64, 2, 128, 3);
}

/* Whether AUTO takes the mma rung (3xTF32) for an f32 M x N x K product on
   `sms` SMs: K >= 64, N > 16 (narrow products stay splitk's), M >= 64 (32
   x 2048 x 784: 0.50 of cuBLAS against splitk's 0.86), and its 128 x 64
   tiles times the slices it splits K into fill 2/5 of the SMs. Measured
   with bench/gemm --mlp on one H200 (2026-11-27), unsplit: 128 to 224
   tiles, 1.08-1.27 of cuBLAS (784 x 2048 x 3000: 0.94) where warptile had
   0.55-0.83; 4096^3 1.26; 784 x 512 x 128 (56 tiles) 0.84 against
   splitk's 0.73, which it kept while the bar was 3/4 of the SMs. 128 x
   512 x 784 (8 tiles in 6 slices: 48) stays splitk's. */
HPDL_LAZY int hpdl__gemm_auto_tf32x3(int M, int N, int K, int sms) {
    const int64_t tiles = (int64_t)((M + 127) / 128) * ((N + 63) / 64);
    return M >= 64 && N > 16 && K >= 64 && tiles * hpdl__tf32x3_slices(M, N, K, sms) * 5 >= (int64_t)sms * 2;
}

/* C = alpha (sum of the slices' blocks, in slice order) + beta C: a split's
   last step, a thread per output (the slices' blocks fit the splitk
   workspace, so their area fits an int). */
template <typename T>
__global__ void hpdl__gemm_add_slices_kernel(hpdl__gemm_args<T, T> g, const T *ws, int slices) {
    const int area = g.M * g.N;
    int i;
    for (i = (int)(blockIdx.x * blockDim.x + threadIdx.x); i < area; i += (int)(gridDim.x * blockDim.x)) {
        T sum[1] = {0};
        hpdl__splitk_add_slices<1>(ws + i, area, slices, -1, sum);
        hpdl__gemm_out(g, i / g.N, i % g.N, sum[0]);
    }
}

/* A rung's kernels (`launch`: count GEMMs of one shape, `batch` elements
   apart) with K split into `slices`: slice s multiplies K columns [s D,
   (s+1) D), D a multiple of `align`, into its own M x N block of the
   stream's splitk workspace, all slices in one strided batch (the last
   one shorter where D does not divide K: launched after the others, it
   took a wave of its own, 784 x 512 x 3000 in 3xTF32 0.56 of cuBLAS); then
   hpdl__gemm_add_slices_kernel adds the blocks in slice order (the same
   bits every run). One slice, or no workspace (inside a graph capture that
   made none): one launch on g. */
template <typename T>
static inline hpdl_status hpdl__gemm_in_slices(const hpdl__gemm_args<T, T> &g, int slices, int align,
                                               hpdl_status (*launch)(const hpdl__gemm_args<T, T> &, hpdl__gemm_batch, int,
                                                                     cudaStream_t),
                                               cudaStream_t stream) {
    hpdl__splitk_space *sp = slices > 1 ? hpdl__splitk_space_for(stream) : NULL;
    hpdl__gemm_args<T, T> part = g;
    hpdl__gemm_batch step = hpdl__gemm_batch();
    const int64_t area = (int64_t)g.M * g.N;
    int depth, count;
    hpdl_status s;
    if (!sp) return launch(g, hpdl__gemm_batch(), 1, stream);
    depth = ((g.K + slices - 1) / slices + align - 1) / align * align;
    count = (g.K + depth - 1) / depth;
    part.C = (T *)sp->ws;
    part.ldc = g.N;
    part.cvec = g.N % 4 == 0;
    part.alpha = 1;
    part.beta = 0;
    part.bias = NULL; part.relu = 0; /* raw sums: the epilogue comes with the slices' sum */
    part.K = depth;
    step.a = g.a.kcontig ? depth : (int64_t)depth * g.a.ld;
    step.b = g.b.kcontig ? depth : (int64_t)depth * g.b.ld;
    step.c = area;
    step.last_k = g.K - (count - 1) * depth;
    s = launch(part, step, count, stream);
    if (s != HPDL_OK) return s;
    hpdl__gemm_add_slices_kernel<T><<<hpdl__grid_for(area, 256), 256, 0, stream>>>(g, (const T *)sp->ws, count);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* The warptile rung (f32 and f64: T is the sums' type) with K split when
   its tiles leave SMs idle (hpdl__warptile_slices). */
template <typename T>
static inline hpdl_status hpdl__gemm_warptile_rung(const hpdl__gemm_args<T, T> &g, cudaStream_t stream) {
    int sms = 0;
    if (hpdl__sm_count(&sms) != HPDL_OK) return HPDL_ERR_CUDA;
    return hpdl__gemm_in_slices(g, hpdl__warptile_slices(g.M, g.N, g.K, (int)sizeof(T), sms), HPDL__WARPTILE_BK,
                                hpdl__gemm_launch_warptile<T, T, HPDL__WARPTILE_BK, 8>, stream);
}

/* 16-bit operands with f32 sums: one slice (the slices' blocks would be
   stored in the 16-bit type). */
template <typename T, typename ACC>
static inline hpdl_status hpdl__gemm_warptile_rung(const hpdl__gemm_args<T, ACC> &g, cudaStream_t stream) {
    return hpdl__gemm_launch_warptile<T, ACC, HPDL__WARPTILE_BK, 8>(g, hpdl__gemm_batch(), 1, stream);
}

/* The SIMT rungs, for every type. */
template <typename T, typename ACC>
static inline hpdl_status hpdl__gemm_launch_simt(hpdl_gemm_algo algo, const hpdl__gemm_args<T, ACC> &g,
                                                 cudaStream_t stream) {
    dim3 grid;
    hpdl_status s;
    switch (algo) {
    case HPDL_GEMM_NAIVE: /* x runs over rows of C */
        if ((s = hpdl__gemm_grid(g.M, 32, g.N, 32, &grid)) != HPDL_OK) return s;
        hpdl__gemm_naive<<<grid, dim3(32, 32), 0, stream>>>(g);
        break;
    case HPDL_GEMM_COALESCED:
        if ((s = hpdl__gemm_grid(g.N, 32, g.M, 32, &grid)) != HPDL_OK) return s;
        hpdl__gemm_coalesced<<<grid, dim3(32, 32), 0, stream>>>(g);
        break;
    case HPDL_GEMM_SMEM:
        if ((s = hpdl__gemm_grid(g.N, 32, g.M, 32, &grid)) != HPDL_OK) return s;
        hpdl__gemm_smem<<<grid, dim3(32, 32), 0, stream>>>(g);
        break;
    case HPDL_GEMM_REG1D:
        if ((s = hpdl__gemm_grid(g.N, 64, g.M, 64, &grid)) != HPDL_OK) return s;
        hpdl__gemm_reg1d<<<grid, 512, 0, stream>>>(g);
        break;
    case HPDL_GEMM_REG2D:
        if ((s = hpdl__gemm_grid(g.N, 128, g.M, 128, &grid)) != HPDL_OK) return s;
        hpdl__gemm_reg2d<<<grid, 256, 0, stream>>>(g);
        break;
    case HPDL_GEMM_VEC4:
        if ((s = hpdl__gemm_grid(g.N, 128, g.M, 128, &grid)) != HPDL_OK) return s;
        hpdl__gemm_vec4<<<grid, 256, 0, stream>>>(g);
        break;
    case HPDL_GEMM_WARPTILE: return hpdl__gemm_warptile_rung(g, stream);
    default: return HPDL_ERR_UNSUPPORTED;
    }
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* Whether `kernel` has sm_80+ code in this binary (else its body is empty)
   and may take `smem` bytes of dynamic shared memory; the error of a "no"
   is cleared. */
template <typename KERNEL> static inline bool hpdl__tc_kernel_ready(KERNEL kernel, size_t smem) {
    if (hpdl__has_sm80_code((const void *)kernel) &&
        cudaFuncSetAttribute((const void *)kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem) == cudaSuccess)
        return true;
    cudaGetLastError();
    return false;
}

/* Launches a tensor-core kernel with `smem` bytes of dynamic shared memory
   (arguments g, then `more`), or says HPDL_ERR_UNSUPPORTED when this binary
   has no sm_80+ code for it (its body would be empty) or the GPU cannot give
   that much shared memory. */
template <typename SH, typename ARGS, typename... MORE>
static inline hpdl_status hpdl__gemm_launch_tc(void (*kernel)(ARGS, MORE...), const ARGS &g, size_t smem, cudaStream_t stream,
                                               const MORE &...more) {
    dim3 grid;
    hpdl_status s;
    if (!hpdl__tc_kernel_ready(kernel, smem)) return HPDL_ERR_UNSUPPORTED;
    if ((s = hpdl__gemm_grid(g.N, SH::BN, g.M, SH::BM, &grid)) != HPDL_OK) return s;
    kernel<<<grid, SH::THREADS, smem, stream>>>(g, more...);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* The tensor-core rung: transposes are template arguments (they change which
   ldmatrix form and shared layout each operand uses). */
template <typename T, typename SH, bool FAST, bool TMA>
static inline void (*hpdl__gemm_mma_kernel(int ak, int bk))(hpdl__gemm_args<T, float>, CUtensorMap, CUtensorMap) {
    return ak ? (bk ? hpdl__gemm_mma<T, true, true, SH, FAST, TMA> : hpdl__gemm_mma<T, true, false, SH, FAST, TMA>)
              : (bk ? hpdl__gemm_mma<T, false, true, SH, FAST, TMA> : hpdl__gemm_mma<T, false, false, SH, FAST, TMA>);
}

/* Tensor maps for the mma rung's copy-engine path, where it can run: sm_90a
   code on the GPU, K tiles of 128 bytes (the swizzle's row), 16-byte aligned
   operands. */
template <typename SH, typename T>
static inline int hpdl__mma_tma_maps(const hpdl__gemm_args<T, float> &g, CUtensorMap *map_a, CUtensorMap *map_b) {
    return SH::BK * sizeof(T) == 128 && SH::BM % 64 == 0 && SH::BN % 64 == 0 && hpdl__wg_available() &&
           hpdl__gemm_aligned(g.a.p, g.a.ld, 16 / sizeof(T), sizeof(T)) &&
           hpdl__gemm_aligned(g.b.p, g.b.ld, 16 / sizeof(T), sizeof(T)) && hpdl__wg_map(map_a, g.a, g.M, g.K) == HPDL_OK &&
           hpdl__wg_map(map_b, g.b, g.N, g.K) == HPDL_OK;
}

/* Whole tiles go through the copy engine where it can run, else through
   the copiers; edge tiles take the checked cp.async path. tma < 0: the copy
   engine where it can run, 0 never (for the bench's comparison). On an
   H100, f16 4096^3: 427 TFLOP/s by cp.async, 450 by the copy engine; 524
   with no copies at all (timing only), so the copies still cost ~15 %. */
template <typename SH, typename T> static inline size_t hpdl__mma_smem(void) {
    return (size_t)hpdl__mma_smem_plan<SH, T>::BYTES + 1024 /* alignment */;
}

template <typename SH, typename EDGE = SH, typename T>
static inline hpdl_status hpdl__gemm_launch_mma_shape(const hpdl__gemm_args<T, float> &g, cudaStream_t stream, int tma = -1) {
    const size_t smem = hpdl__mma_smem<SH, T>();
    CUtensorMap map_a = CUtensorMap(), map_b = CUtensorMap();
    if (!hpdl__gemm_interior(g, SH::BM, SH::BN, SH::BK))
        return hpdl__gemm_launch_tc<EDGE>(hpdl__gemm_mma_kernel<T, EDGE, false, false>(g.a.kcontig, g.b.kcontig), g,
                                          hpdl__mma_smem<EDGE, T>(), stream, map_a, map_b);
    if (tma != 0 && hpdl__mma_tma_maps<SH>(g, &map_a, &map_b))
        return hpdl__gemm_launch_tc<SH>(hpdl__gemm_mma_kernel<T, SH, true, true>(g.a.kcontig, g.b.kcontig), g, smem, stream,
                                        map_a, map_b);
    return hpdl__gemm_launch_tc<SH>(hpdl__gemm_mma_kernel<T, SH, true, false>(g.a.kcontig, g.b.kcontig), g, smem, stream,
                                    map_a, map_b);
}

template <typename T, typename SH, bool FAST, typename MR>
static inline void (*hpdl__gemm_padded_mma_kernel(int ak, int bk))(hpdl__gemm_args<T, T>, hpdl__gemm_batch, MR) {
    return ak ? (bk ? hpdl__gemm_padded_mma<T, true, true, SH, FAST, MR> : hpdl__gemm_padded_mma<T, true, false, SH, FAST, MR>)
              : (bk ? hpdl__gemm_padded_mma<T, false, true, SH, FAST, MR> : hpdl__gemm_padded_mma<T, false, false, SH, FAST, MR>);
}

/* Shared memory of the padded mma kernel: S stages of both operands' tiles. */
template <typename SH, typename T> static inline size_t hpdl__padded_mma_smem(int ak, int bk) {
    typedef hpdl__padded_mma_type<T> ty;
    const size_t a_stage = ak ? SH::BM * (SH::BK + ty::PAD_K) : SH::BK * (SH::BM + ty::PAD_MN);
    const size_t b_stage = bk ? SH::BN * (SH::BK + ty::PAD_K) : SH::BK * (SH::BN + ty::PAD_MN);
    return (size_t)SH::S * (a_stage + b_stage) * sizeof(T);
}

/* The padded mma kernel on `count` GEMMs of one shape, the operands of each
   `batch` elements after the one before (count 1: one GEMM): the launcher
   hpdl__gemm_in_slices takes. HPDL_ERR_UNSUPPORTED as hpdl__gemm_launch_tc. */
template <typename SH, typename T, typename MR>
static inline hpdl_status hpdl__gemm_launch_padded_mma_to(const hpdl__gemm_args<T, T> &g, hpdl__gemm_batch batch,
                                                          int count, MR mirror, cudaStream_t stream) {
    const size_t smem = hpdl__padded_mma_smem<SH, T>(g.a.kcontig, g.b.kcontig);
    if (MR::POSTS && (size_t)SH::BM * hpdl__mirror_row<SH::BN>::STRIDE * sizeof(T) > smem) return HPDL_ERR_UNSUPPORTED;
    void (*kernel)(hpdl__gemm_args<T, T>, hpdl__gemm_batch, MR) =
        hpdl__gemm_interior(g, SH::BM, SH::BN, SH::BK) && batch.last_k % SH::BK == 0
            ? hpdl__gemm_padded_mma_kernel<T, SH, true, MR>(g.a.kcontig, g.b.kcontig)
            : hpdl__gemm_padded_mma_kernel<T, SH, false, MR>(g.a.kcontig, g.b.kcontig);
    dim3 grid;
    hpdl_status s;
    if (!hpdl__tc_kernel_ready(kernel, smem)) return HPDL_ERR_UNSUPPORTED;
    if ((s = hpdl__gemm_grid(g.N, SH::BN, g.M, SH::BM, &grid)) != HPDL_OK) return s;
    if (count < 1 || count > 65535 || (count > 1 && !hpdl__padded_mma_type<T>::SLICED)) return HPDL_ERR_UNSUPPORTED;
    grid.z = (unsigned)count;
    kernel<<<grid, SH::THREADS, smem, stream>>>(g, batch, mirror);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

template <typename SH, typename T>
static inline hpdl_status hpdl__gemm_launch_padded_mma(const hpdl__gemm_args<T, T> &g, hpdl__gemm_batch batch, int count,
                                                       cudaStream_t stream) {
    return hpdl__gemm_launch_padded_mma_to<SH>(g, batch, count, hpdl__gemm_no_mirror(), stream);
}

/* f16/bf16 take the 128x128x64 tile in 3 stages for whole tiles: 2 blocks
   of 4 warps per SM. (On an H100 at 4096^3, 256x128 with 8 warps was 8-15 %
   slower with either copy path: one block's warps wait on each other's
   barriers, where two blocks cover each other's waits; BK 32 in 4 stages 8 %
   slower: twice the barriers, and rows of 64 bytes took two shared-memory
   wavefronts per cp.async.) Edge tiles keep 128x128x32 in 4 stages: their
   checked copies of unaligned rows are loads and stores, not cp.async, and
   with BK 64 in 3 stages the odd shape 4095x1000x3001 fell from 0.78 to 0.45
   of cuBLAS. */
template <typename T>
static inline hpdl_status hpdl__gemm_launch_mma(const hpdl__gemm_args<T, float> &g, cudaStream_t stream) {
    return hpdl__gemm_launch_mma_shape<hpdl__mma_shape, hpdl__mma_edge_shape>(g, stream);
}

HPDL_LAZY hpdl_status hpdl__gemm_launch_mma(const hpdl__gemm_args<double, double> &g, cudaStream_t stream) {
    return hpdl__gemm_launch_padded_mma<hpdl__dmma_shape>(g, hpdl__gemm_batch(), 1, stream);
}

/* How full the last wave of `blocks` blocks is on `slots` places (1: the
   waves are whole). */
HPDL_LAZY double hpdl__wave_fill(int64_t blocks, int64_t slots) {
    const int64_t waves = (blocks + slots - 1) / slots;
    return waves > 0 ? (double)blocks / (double)(waves * slots) : 1.0;
}

/* The 3xTF32 rung's 64 x 64 tiles: four blocks an SM, K split as for the
   128 x 64 ones. */
HPDL_LAZY int hpdl__tf32x3_small_slices(int M, int N, int K, int sms) {
    return hpdl__gemm_slices_for(M, N, K, 4, sms, 64, 64, 4, 128, 3);
}

/* Whether the 3xTF32 rung takes 64 x 64 tiles: where its 128 x 64 tiles
   (two blocks an SM) make less than one wave and the small tiles' waves
   (four blocks an SM) are about as full or fuller. Measured over the MLP's
   f32 products on one H100 (2026-11-28), each product in both: less than a
   wave, 64 x 64 won where its waves were fuller (784 x 512 x 3000: 0.99
   against 0.85, 74.3 -> 66.7 us) or as full (3000 x 512 x 784, 0.71 against
   0.73: 66.0 -> 54.4 us, cuBLAS 64.4; 128 x 2048 x 784 and 512 x 512 x 784:
   11 % faster): there twice the warps an SM hide more latency. It lost 4-7 %
   where its waves were emptier (784 x 2048 x K, 784 x 512 x 512: 0.79
   against 0.85) and on 3000 x 2048 x 784, almost three whole waves either
   way, where the smaller warp tiles read more shared memory a product. */
HPDL_LAZY int hpdl__tf32x3_small_tiles(int M, int N, int K, int sms) {
    const int64_t big = (int64_t)((M + 127) / 128) * ((N + 63) / 64) * hpdl__tf32x3_slices(M, N, K, sms);
    const int64_t small = (int64_t)((M + 63) / 64) * ((N + 63) / 64) * hpdl__tf32x3_small_slices(M, N, K, sms);
    return big < 2 * (int64_t)sms &&
           hpdl__wave_fill(small, 4 * (int64_t)sms) + 0.03 >= hpdl__wave_fill(big, 2 * (int64_t)sms);
}

/* f32: 3xTF32, K split where its tiles leave SMs idle (hpdl__tf32x3_slices),
   in 64 x 64 tiles where hpdl__tf32x3_small_tiles says. */
HPDL_LAZY hpdl_status hpdl__gemm_launch_mma(const hpdl__gemm_args<float, float> &g, cudaStream_t stream) {
    int sms = 0;
    if (hpdl__sm_count(&sms) != HPDL_OK) return HPDL_ERR_CUDA;
    if (hpdl__tf32x3_small_tiles(g.M, g.N, g.K, sms))
        return hpdl__gemm_in_slices(g, hpdl__tf32x3_small_slices(g.M, g.N, g.K, sms), (int)hpdl__tf32x3_small_shape::BK,
                                    hpdl__gemm_launch_padded_mma<hpdl__tf32x3_small_shape, float>, stream);
    return hpdl__gemm_in_slices(g, hpdl__tf32x3_slices(g.M, g.N, g.K, sms), (int)hpdl__tf32x3_shape::BK,
                                hpdl__gemm_launch_padded_mma<hpdl__tf32x3_shape, float>, stream);
}

/* AUTO's f32 product as one kernel with its tiles also handed to `mirror`:
   the 3xTF32 rung in 128 x 64 tiles, K whole; f64's: the DMMA rung.
   HPDL_ERR_UNSUPPORTED where AUTO would run something else. */
template <typename MR>
static inline hpdl_status hpdl__gemm_mirrored_launch(const hpdl__gemm_args<float, float> &g, MR mirror, cudaStream_t stream) {
    int sms = 0;
    if (hpdl__sm_count(&sms) != HPDL_OK) return HPDL_ERR_CUDA;
    if (!hpdl__gemm_auto_tf32x3(g.M, g.N, g.K, sms) || hpdl__tf32x3_small_tiles(g.M, g.N, g.K, sms) ||
        hpdl__tf32x3_slices(g.M, g.N, g.K, sms) != 1)
        return HPDL_ERR_UNSUPPORTED;
    return hpdl__gemm_launch_padded_mma_to<hpdl__tf32x3_shape>(g, hpdl__gemm_batch(), 1, mirror, stream);
}

template <typename MR>
static inline hpdl_status hpdl__gemm_mirrored_launch(const hpdl__gemm_args<double, double> &g, MR mirror,
                                                     cudaStream_t stream) {
    if (hpdl__gemm_auto_splitk(g.M, g.N, g.K, (int)sizeof(double))) return HPDL_ERR_UNSUPPORTED;
    return hpdl__gemm_launch_padded_mma_to<hpdl__dmma_shape>(g, hpdl__gemm_batch(), 1, mirror, stream);
}

/* C = A B as AUTO computes it (f32, f64), each block's tile of C also
   handed to the mirror in 16-byte pieces (hpdl__gemm_mirror_tile: C 16-byte
   aligned, N and ldc multiples of the piece). Only where AUTO runs the
   product as one padded mma kernel (hpdl__gemm_mirrored_launch); elsewhere
   HPDL_ERR_UNSUPPORTED with nothing launched, and the caller sends C on
   its own. The data-parallel driver pushes the first layer's weight
   gradient to the peer GPUs this way. */
template <typename T, typename MR>
static inline hpdl_status hpdl__gemm_auto_mirrored(hpdl_transpose ta, hpdl_transpose tb, int M, int N, int K,
                                                   const T *A, int lda, const T *B, int ldb, T *C, int ldc, MR mirror,
                                                   cudaStream_t stream) {
    hpdl_status s = hpdl__gemm_check(ta, tb, M, N, K, A, lda, B, ldb, C, ldc);
    if (s != HPDL_OK) return s;
    if (M == 0 || N % (16 / sizeof(T)) || ldc % (16 / sizeof(T)) || (uintptr_t)C % 16) return HPDL_ERR_UNSUPPORTED;
    return hpdl__gemm_mirrored_launch(hpdl__gemm_make_args(ta, tb, M, N, K, (T)1, A, lda, B, ldb, (T)0, C, ldc,
                                                           (int)(16 / sizeof(T))),
                                      mirror, stream);
}

/* ======================================================================== */
/* GEMM: Hopper rungs, TMA + wgmma (sm_90a)                                 */
/* ======================================================================== */

/* Four rungs, each adding one technique to the one before (f16 and bf16;
   f32 runs them as TF32 when asked by name, never by AUTO):

     wgmma             one warpgroup (4 warps) per 64x256 tile of C. Thread 0
                       streams tiles of A and B into a 4-stage shared-memory
                       ring with the TMA copy engine (cp.async.bulk.tensor),
                       which signals an mbarrier per stage; the warpgroup
                       multiplies straight from shared memory with wgmma
                       (m64n256k16, f32 accumulators in registers). Small
                       outputs of few tiles split K over more blocks
                       (hpdl__wg_split_slices). Products of few rows (an
                       MLP's batch: M <= 512; more where A is MN-major,
                       hpdl__wg_thin_takes) run the thin kernel instead:
                       BN x 64 tiles of C (BN 8 to 128) computed
                       transposed, all of K in flight.
     wgmma_ws          warp specialisation: a producer warpgroup that only
                       issues copies (and gives its registers away with
                       setmaxnreg) keeps the ring full, two consumer warpgroups
                       own a 128x256 tile; "empty" mbarriers hand stages back.
                       128x192 tiles where those fill whole waves of SMs and
                       128x256 ones leave the last wave short
                       (hpdl__wg_ws_narrow; AUTO's pick there).
     wgmma_persistent  one block per SM walks over the tiles in grouped order,
                       so the producer fetches the next tile while the
                       consumers store the last one; a last, partial wave of
                       tiles is shared out by k-steps (stream-K) where that
                       pays (hpdl__wg_sk). AUTO's pick.
     wgmma_cluster     blocks in pairs (a thread-block cluster) on vertically
                       adjacent tiles: each loads half of the shared B tile
                       and the copy engine multicasts it into both blocks
                       (without the stream-K tail: a pair would have to split
                       its k-steps alike).

   Shared layout. Every operand tile is stored in pieces of 64 rows (its M or
   N index) x 128 bytes of K, the layout the TMA's 128-byte swizzle writes and
   wgmma's 128-byte-swizzle descriptors read. An operand whose K index is
   contiguous in memory (A not transposed, B transposed: "K-major") is copied
   as 64 x (128 bytes of K) boxes; the other ("MN-major") as (64 elements of
   M or N) x BK boxes, which wgmma reads with its transpose bit. Only f16 and
   bf16 have that bit: TF32 needs A not transposed and B transposed.

   Edges need no code in the main loop: the copy engine fills rows and
   columns outside the matrices with zeros; the epilogue skips them (f16
   and bf16 with beta = 0 store through the copy engine too, which clips).
   TMA
   needs 16-byte aligned matrices and leading dimensions; other calls (and
   GPUs other than compute capability 9.0, and binaries built without
   sm_90a) get HPDL_ERR_UNSUPPORTED, and AUTO falls back to mma. */

/* ---- wgmma --------------------------------------------------------------- */

/* Shared-memory matrix descriptor, 128-byte swizzle: start address, leading
   byte offset (MN-major: from one 64-wide piece to the next), stride byte
   offset (from one group of 8 rows of 128 bytes to the next). */
static __device__ __forceinline__ uint64_t hpdl__wg_desc(const unsigned char *p, unsigned lead, unsigned stride) {
    return (uint64_t)((hpdl__smem_u32(p) & 0x3FFFF) >> 4) | (uint64_t)(lead >> 4) << 16 |
           (uint64_t)(stride >> 4) << 32 | 1ull << 62;
}

/* Descriptor of K step j (K_STEP elements) of the 64-row slice at `row0` of
   an operand tile: K-major steps 32 bytes along the swizzled rows, MN-major
   steps K_STEP rows of 128 bytes. */
template <typename T, bool MN>
static __device__ __forceinline__ uint64_t hpdl__wg_step_desc(const unsigned char *tile, int row0, int j) {
    if (MN) return hpdl__wg_desc(tile + row0 / 64 * HPDL__WG_PIECE_BYTES + j * hpdl__wg_type<T>::K_STEP * 128,
                                 HPDL__WG_PIECE_BYTES, 1024);
    return hpdl__wg_desc(tile + row0 * 128 + j * hpdl__wg_type<T>::K_STEP * (int)sizeof(T), 16, 1024);
}

static __device__ __forceinline__ void hpdl__wg_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
static __device__ __forceinline__ void hpdl__wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N> static __device__ __forceinline__ void hpdl__wg_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

/* Keeps the compiler from moving accumulator accesses across wgmma's
   asynchronous reads and writes of them. */
static __device__ __forceinline__ void hpdl__wg_fence_acc(float d[128]) {
    int i;
#pragma unroll
    for (i = 0; i < 128; i++) asm volatile("" : "+f"(d[i])::"memory");
}
static __device__ __forceinline__ void hpdl__wg_fence_acc(int d[128]) {
    int i;
#pragma unroll
    for (i = 0; i < 128; i++) asm volatile("" : "+r"(d[i])::"memory");
}

#define HPDL__WG_F8(d, i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), \
                          "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#define HPDL__WG_F128(d) HPDL__WG_F8(d, 0), HPDL__WG_F8(d, 8), HPDL__WG_F8(d, 16), HPDL__WG_F8(d, 24),       \
                         HPDL__WG_F8(d, 32), HPDL__WG_F8(d, 40), HPDL__WG_F8(d, 48), HPDL__WG_F8(d, 56),     \
                         HPDL__WG_F8(d, 64), HPDL__WG_F8(d, 72), HPDL__WG_F8(d, 80), HPDL__WG_F8(d, 88),     \
                         HPDL__WG_F8(d, 96), HPDL__WG_F8(d, 104), HPDL__WG_F8(d, 112), HPDL__WG_F8(d, 120)
#define HPDL__WG_R8(d, i) "+r"(d[i]), "+r"(d[i + 1]), "+r"(d[i + 2]), "+r"(d[i + 3]), "+r"(d[i + 4]), \
                          "+r"(d[i + 5]), "+r"(d[i + 6]), "+r"(d[i + 7])
#define HPDL__WG_R128(d) HPDL__WG_R8(d, 0), HPDL__WG_R8(d, 8), HPDL__WG_R8(d, 16), HPDL__WG_R8(d, 24),       \
                         HPDL__WG_R8(d, 32), HPDL__WG_R8(d, 40), HPDL__WG_R8(d, 48), HPDL__WG_R8(d, 56),     \
                         HPDL__WG_R8(d, 64), HPDL__WG_R8(d, 72), HPDL__WG_R8(d, 80), HPDL__WG_R8(d, 88),     \
                         HPDL__WG_R8(d, 96), HPDL__WG_R8(d, 104), HPDL__WG_R8(d, 112), HPDL__WG_R8(d, 120)
#define HPDL__WG_D128                                                                                          \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                                  \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "                         \
    "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "                          \
    "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "                          \
    "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "                          \
    "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "                          \
    "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "              \
    "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}"

/* d (64 x 256, this warpgroup's f32 accumulators) += A (64 x K_STEP) * B
   (K_STEP x 256), both from shared memory; TA/TB: operand MN-major. */
template <int TA, int TB>
static __device__ __forceinline__ void hpdl__wgmma_256(float d[128], uint64_t a, uint64_t b, __half) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 " HPDL__WG_D128 ", %128, %129, 1, 1, 1, %130, %131;"
                 : HPDL__WG_F128(d) : "l"(a), "l"(b), "n"(TA), "n"(TB));
}
template <int TA, int TB>
static __device__ __forceinline__ void hpdl__wgmma_256(float d[128], uint64_t a, uint64_t b, __nv_bfloat16) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 " HPDL__WG_D128 ", %128, %129, 1, 1, 1, %130, %131;"
                 : HPDL__WG_F128(d) : "l"(a), "l"(b), "n"(TA), "n"(TB));
}
template <int TA, int TB>
static __device__ __forceinline__ void hpdl__wgmma_256(float d[128], uint64_t a, uint64_t b, float) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 " HPDL__WG_D128 ", %128, %129, 1, 1, 1;"
                 : HPDL__WG_F128(d) : "l"(a), "l"(b));
}
template <int TA, int TB>
static __device__ __forceinline__ void hpdl__wgmma_256(int d[128], uint64_t a, uint64_t b, int8_t) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n256k32.s32.s8.s8 " HPDL__WG_D128 ", %128, %129, 1;"
                 : HPDL__WG_R128(d) : "l"(a), "l"(b));
}

/* wgmma 8 to 192 wide: d (64 x BN accumulators of this warpgroup: f32,
   or s32 for int8) += A (64 x K_STEP) B (K_STEP x BN), both from shared
   memory (the 256-wide: hpdl__wgmma_256). First the accumulators' register
   lists (D: the PTX operands, F / R: the f32 / s32 constraints). */
#define HPDL__WG_F32(d) HPDL__WG_F8(d, 0), HPDL__WG_F8(d, 8), HPDL__WG_F8(d, 16), HPDL__WG_F8(d, 24)
#define HPDL__WG_F64(d) HPDL__WG_F32(d), HPDL__WG_F8(d, 32), HPDL__WG_F8(d, 40), HPDL__WG_F8(d, 48), HPDL__WG_F8(d, 56)
#define HPDL__WG_D32                                                                                           \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                                  \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define HPDL__WG_D64                                                                                           \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                                  \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "                         \
    "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "                          \
    "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
#define HPDL__WG_F96(d) HPDL__WG_F64(d), HPDL__WG_F8(d, 64), HPDL__WG_F8(d, 72), HPDL__WG_F8(d, 80), HPDL__WG_F8(d, 88)
#define HPDL__WG_D96                                                                                           \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                                  \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "                         \
    "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "                          \
    "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "                          \
    "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "                          \
    "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}"
#define HPDL__WG_D4 "{%0, %1, %2, %3}"
#define HPDL__WG_D8 "{%0, %1, %2, %3, %4, %5, %6, %7}"
#define HPDL__WG_D16 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}"
#define HPDL__WG_F4(d) "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
#define HPDL__WG_FIRST8(d) HPDL__WG_F8(d, 0)
#define HPDL__WG_F16(d) HPDL__WG_F8(d, 0), HPDL__WG_F8(d, 8)
/* hpdl__wgmma_<N>(d, a, b, T()): d (64 x N accumulators, f32, N / 2 a
   thread) += A (64 x 16) B (16 x N), f16 or bf16 (T, PTX_T); TA, TB: the
   operand is MN-major. OUTS: the macro that lists d's constraints;
   OPERANDS: the descriptors and TA, TB, numbered after d's registers. */
#define HPDL__DEFINE_WGMMA_F16(N, T, PTX_T, DREGS, OUTS, OPERANDS)                                          \
    template <int TA, int TB>                                                                               \
    static __device__ __forceinline__ void hpdl__wgmma_##N(float *d, uint64_t a, uint64_t b, T) {           \
        asm volatile("wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." PTX_T "." PTX_T " " DREGS ", "       \
                     OPERANDS ";"                                                                           \
                     : OUTS(d) : "l"(a), "l"(b), "n"(TA), "n"(TB));                                         \
    }
#define HPDL__DEFINE_WGMMA_F16_BF16(N, DREGS, OUTS, OPERANDS)                                                  \
    HPDL__DEFINE_WGMMA_F16(N, __half, "f16", DREGS, OUTS, OPERANDS)                                            \
    HPDL__DEFINE_WGMMA_F16(N, __nv_bfloat16, "bf16", DREGS, OUTS, OPERANDS)
HPDL__DEFINE_WGMMA_F16_BF16(8, HPDL__WG_D4, HPDL__WG_F4, "%4, %5, 1, 1, 1, %6, %7")
HPDL__DEFINE_WGMMA_F16_BF16(16, HPDL__WG_D8, HPDL__WG_FIRST8, "%8, %9, 1, 1, 1, %10, %11")
HPDL__DEFINE_WGMMA_F16_BF16(32, HPDL__WG_D16, HPDL__WG_F16, "%16, %17, 1, 1, 1, %18, %19")
HPDL__DEFINE_WGMMA_F16_BF16(64, HPDL__WG_D32, HPDL__WG_F32, "%32, %33, 1, 1, 1, %34, %35")
HPDL__DEFINE_WGMMA_F16_BF16(128, HPDL__WG_D64, HPDL__WG_F64, "%64, %65, 1, 1, 1, %66, %67")
HPDL__DEFINE_WGMMA_F16_BF16(192, HPDL__WG_D96, HPDL__WG_F96, "%96, %97, 1, 1, 1, %98, %99")
#define HPDL__WG_R32(d) HPDL__WG_R8(d, 0), HPDL__WG_R8(d, 8), HPDL__WG_R8(d, 16), HPDL__WG_R8(d, 24)
#define HPDL__WG_R64(d) HPDL__WG_R32(d), HPDL__WG_R8(d, 32), HPDL__WG_R8(d, 40), HPDL__WG_R8(d, 48), HPDL__WG_R8(d, 56)
template <int TA, int TB> static __device__ __forceinline__ void hpdl__wgmma_64(int *d, uint64_t a, uint64_t b, int8_t) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n64k32.s32.s8.s8 " HPDL__WG_D32 ", %32, %33, 1;"
                 : HPDL__WG_R32(d) : "l"(a), "l"(b));
}
template <int TA, int TB> static __device__ __forceinline__ void hpdl__wgmma_128(int *d, uint64_t a, uint64_t b, int8_t) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8 " HPDL__WG_D64 ", %64, %65, 1;"
                 : HPDL__WG_R64(d) : "l"(a), "l"(b));
}
/* d += A B, BN = 64, 128 or 256 wide; TA, TB: the operand is MN-major. */
template <int BN, int TB, typename T, int TA = 0, typename ACC>
static __device__ __forceinline__ void hpdl__wgmma_bn(ACC *d, uint64_t a, uint64_t b) {
    if (BN == 64) hpdl__wgmma_64<TA, TB>(d, a, b, T());
    else if (BN == 128) hpdl__wgmma_128<TA, TB>(d, a, b, T());
    else hpdl__wgmma_256<TA, TB>(d, a, b, T());
}
template <int N> static __device__ __forceinline__ void hpdl__wg_fence_accs(float *d) {
#pragma unroll
    for (int i = 0; i < N; i++) asm volatile("" : "+f"(d[i])::"memory");
}
template <int N> static __device__ __forceinline__ void hpdl__wg_fence_accs(int *d) {
#pragma unroll
    for (int i = 0; i < N; i++) asm volatile("" : "+r"(d[i])::"memory");
}

/* d (64 x N) += A B for the thin rung, N = 8, 16, 32, 64 or 128; B
   MN-major (TB) only 64 or 128 wide (hpdl__wgmma_bn's). */
template <int N, int TA, int TB, typename T>
static __device__ __forceinline__ void hpdl__wgmma_thin(float *d, uint64_t a, uint64_t b) {
    if (N == 8) hpdl__wgmma_8<TA, 0>(d, a, b, T());
    else if (N == 16) hpdl__wgmma_16<TA, 0>(d, a, b, T());
    else if (N == 32) hpdl__wgmma_32<TA, 0>(d, a, b, T());
    else hpdl__wgmma_bn<N, TB, T, TA>(d, a, b);
}

/* wgmma BN wide for the warp-specialized kernel: 256 for every type, 128
   and 192 for f16/bf16 (a struct per width, so that a type only meets the
   widths it is built with; no other width compiles). */
template <int BN> struct hpdl__wg_wide;
template <> struct hpdl__wg_wide<256> {
    template <int TA, int TB, typename T, typename ACC>
    static __device__ __forceinline__ void mma(ACC *d, uint64_t a, uint64_t b) { hpdl__wgmma_256<TA, TB>(d, a, b, T()); }
};
template <> struct hpdl__wg_wide<128> {
    template <int TA, int TB, typename T, typename ACC>
    static __device__ __forceinline__ void mma(ACC *d, uint64_t a, uint64_t b) { hpdl__wgmma_128<TA, TB>(d, a, b, T()); }
};
template <> struct hpdl__wg_wide<192> {
    template <int TA, int TB, typename T, typename ACC>
    static __device__ __forceinline__ void mma(ACC *d, uint64_t a, uint64_t b) { hpdl__wgmma_192<TA, TB>(d, a, b, T()); }
};

/* One stage (BK of K) into this warpgroup's 64 x BN accumulators: its 64
   rows of the A tile start at row0. Issued, committed, not waited for. */
template <typename T, bool AMN, bool BMN, int BN = 256, typename ACC>
static __device__ __forceinline__ void hpdl__wg_mma_stage(ACC *d, const unsigned char *ta, const unsigned char *tb,
                                                          int row0) {
    int j;
    hpdl__wg_fence_accs<BN / 2>(d);
    hpdl__wg_fence();
#pragma unroll
    for (j = 0; j < 128 / (int)sizeof(T) / hpdl__wg_type<T>::K_STEP; j++)
        hpdl__wg_wide<BN>::template mma<AMN, BMN, T>(d, hpdl__wg_step_desc<T, AMN>(ta, row0, j),
                                                     hpdl__wg_step_desc<T, BMN>(tb, 0, j));
    hpdl__wg_commit();
    hpdl__wg_fence_accs<BN / 2>(d);
}

/* ---- epilogue, tile order ------------------------------------------------ */

/* The epilogue goes through shared memory: stored straight from wgmma's
   layout, a warp's stores would hit 8 rows with 8 or 16 bytes each, and the
   int8 GEMM's int32 output ran at a third of its main loop's speed (H100,
   8192^3: 1.81 ms with, 0.59 ms without). Instead each consumer writes 32
   columns of its 64 x 256 accumulators into its own 64 x 32 buffer, then
   each warp reads its own 16 rows back as 4-element vectors and stores
   them coalesced (a warp covers 4 rows x 32 columns per step). */
enum { HPDL__WG_EPI_COLS = 32, HPDL__WG_EPI_LD = 36 /* 16-byte rows, pairs of rows on different banks */ };
/* A consumer's epilogue buffer: this path's 64 x 36 floats, or the TMA
   path's two 8 KB boxes (hpdl__wg_store_tma), whichever is larger. */
enum { HPDL__WG_EPI_BYTES = 64 * HPDL__WG_EPI_LD * 4 > 2 * 64 * 64 * 2 ? 64 * HPDL__WG_EPI_LD * 4 : 2 * 64 * 64 * 2 };

/* Stages of the warp-specialized kernel's 128 x bn tiles: four of 256
   columns, as many narrower ones as fit beside the two consumers'
   epilogue buffers in 227 KB (2 KB left for alignment and barriers). */
static __host__ __device__ constexpr int hpdl__wg_ws_stages(int bn) {
    return bn >= 256 ? (int)HPDL__WG_STAGES : ((227 << 10) - 2 * HPDL__WG_EPI_BYTES - 2048) / ((128 + bn) * 128);
}

/* The 128 threads of warpgroup wg wait for each other (named barrier wg). */
static __device__ __forceinline__ void hpdl__wg_bar(int wg) { asm volatile("bar.sync %0, 128;" ::"r"(wg) : "memory"); }

/* The float GEMM's epilogue needs nothing per column beyond alpha/beta
   (hpdl__wg_cols: what a thread loads once for its four columns). */
struct hpdl__wg_nocols {};
template <typename T>
static __device__ __forceinline__ hpdl__wg_nocols hpdl__wg_cols(const hpdl__gemm_args<T, float> &, int) {
    return hpdl__wg_nocols();
}

/* C(m, n..n+3) from four accumulators: the GEMM's alpha/beta (one vector
   access when all four are inside and aligned, see hpdl__gemm_out4). */
template <typename T>
static __device__ __forceinline__ void hpdl__wg_put4(const hpdl__gemm_args<T, float> &g, hpdl__wg_nocols, int m, int n,
                                                     const float v[4]) {
    hpdl__gemm_out4(g, m, n, v);
}

/* Columns 32 chunk..32 chunk + 31 of a warpgroup's accumulators into its
   64 x 32 buffer. wgmma's layout: warp w holds rows 16w..16w+15; in each
   8-column group j a thread holds columns 2(lane%4), +1 of rows lane/4 and
   lane/4 + 8, in d[4j..4j+3]. */
template <typename ACC>
static __device__ __forceinline__ void hpdl__wg_buffer_chunk(const ACC *d, int chunk, ACC *buf) {
    const int t = (int)threadIdx.x % 128, lane = t % 32, r = t / 32 * 16 + lane / 4, c = lane % 4 * 2;
    int jj;
#pragma unroll
    for (jj = 0; jj < HPDL__WG_EPI_COLS / 8; jj++) {
        int j = chunk * HPDL__WG_EPI_COLS / 8 + jj, col = jj * 8 + c;
        buf[r * HPDL__WG_EPI_LD + col] = d[4 * j];
        buf[r * HPDL__WG_EPI_LD + col + 1] = d[4 * j + 1];
        buf[(r + 8) * HPDL__WG_EPI_LD + col] = d[4 * j + 2];
        buf[(r + 8) * HPDL__WG_EPI_LD + col + 1] = d[4 * j + 3];
    }
}

/* Stores a warpgroup's 64 x BN accumulators at C(m0.., n0..) through buf
   (HPDL__WG_EPI_BYTES of shared memory, this warpgroup's own), a chunk
   (hpdl__wg_buffer_chunk) at a time. Each warp reads back only the rows it
   wrote, so a warp barrier suffices (the warpgroup's named barriers cost
   no measurable time, f16 4096^3 on an H100: 700.7 TFLOP/s either way). */
template <typename G, typename ACC, int BN = 256>
static __device__ __forceinline__ void hpdl__wg_store(const G &g, const ACC *d, int m0, int n0, ACC *buf) {
    const int t = (int)threadIdx.x % 128, lane = t % 32;
    int chunk, row;
#pragma unroll
    for (chunk = 0; chunk < BN / HPDL__WG_EPI_COLS; chunk++) {
        hpdl__wg_buffer_chunk(d, chunk, buf);
        __syncwarp();
        { /* lane: four columns (their per-column data loaded once) of rows lane/8, +4, +8, +12 of the warp's 16 */
            const int col = lane % (HPDL__WG_EPI_COLS / 4) * 4, n = n0 + chunk * HPDL__WG_EPI_COLS + col;
            const auto cols = hpdl__wg_cols(g, n);
#pragma unroll 1
            for (row = t / 32 * 16 + lane / (HPDL__WG_EPI_COLS / 4); row < t / 32 * 16 + 16; row += 32 / (HPDL__WG_EPI_COLS / 4))
                hpdl__wg_put4(g, cols, m0 + row, n, buf + row * HPDL__WG_EPI_LD + col);
        }
        __syncwarp(); /* the warp's rows of the buffer are free for the next chunk */
    }
}

/* The f16/bf16 epilogue when beta = 0 and C's rows (and N) are 16-byte
   aligned (hpdl__wg_map_c): the warpgroup writes a 64 x 64 chunk of its
   64 x 256 output, alpha applied and already in T, into one of its two
   8 KB buffers (stmatrix, swizzled: see hpdl__wg_swizzle128), and one thread hands
   the box to the TMA engine (cp.async.bulk.tensor, shared to global), which
   clips it at M and N. The warpgroup goes on at once: the copy runs while
   the next chunk is written and while the next tile's main loop starts
   (before a buffer is reused, its copy from two chunks ago must have read
   it). Eight copies per tile: with 16 x 32 boxes, 64 per tile, the
   epilogue took ~3000 cycles (H100, f16 4096^3) for ~500 cycles of
   shared-memory stores, and more boxes of the same bytes did not help:
   the TMA unit, which also loads the next tile's stages, was the limit. */
enum { HPDL__WG_TMA_ROWS = 64, HPDL__WG_TMA_COLS = 64 };

static __device__ __forceinline__ void hpdl__tma_store(const CUtensorMap *map, const void *src, int x, int y) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n"
                 "cp.async.bulk.commit_group;" ::"l"(map), "r"(x), "r"(y), "r"(hpdl__smem_u32(src))
                 : "memory");
}
/* This thread's bulk copies but the newest N have finished reading shared memory. */
template <int N> static __device__ __forceinline__ void hpdl__tma_wait_read() {
    asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}
/* Ordinary shared-memory stores, made visible to the TMA engine. */
static __device__ __forceinline__ void hpdl__fence_async_smem() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

/* Two neighbouring outputs (an even column) in one register: one
   conversion instruction for the pair. */
static __device__ __forceinline__ unsigned hpdl__wg_pair(float a, float b, __half) {
    __half2 h = __floats2half2_rn(a, b);
    unsigned u;
    memcpy(&u, &h, sizeof u);
    return u;
}
static __device__ __forceinline__ unsigned hpdl__wg_pair(float a, float b, __nv_bfloat16) {
    __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
    unsigned u;
    memcpy(&u, &h, sizeof u);
    return u;
}

/* Four 8x8 matrices of 16-bit values into shared memory, from the layout
   mma and wgmma leave them in (r[i]: this lane's pair of matrix i, row
   lane/4); lane l gives the address of row l%8 of matrix l/8. One
   instruction for what took four 4-byte stores. */
static __device__ __forceinline__ void hpdl__stmatrix_x4(unsigned char *p, const unsigned r[4]) {
#ifdef HPDL__SM90A
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(hpdl__smem_u32(p)), "r"(r[0]),
                 "r"(r[1]), "r"(r[2]), "r"(r[3])
                 : "memory");
#else
    (void)p; (void)r;
#endif
}

/* Byte offset of (row, col) in a box of 64-element (128-byte) rows of
   2-byte elements laid out in the TMA's 128-byte swizzle
   (CU_TENSOR_MAP_SWIZZLE_128B): each row's eight 16-byte chunks are
   permuted by row % 8, so the eight rows a warp writes at once fall on
   distinct banks (unswizzled: all on the same 4, an 8-way conflict). */
static __device__ __forceinline__ int hpdl__wg_swizzle128(int row, int col) {
    int byte = col * 2;
    return row * 128 + (((byte >> 4) ^ row) & 7) * 16 + (byte & 15);
}

/* A warpgroup's 64 x 64 chunk of 16-bit outputs (pairs p[i] from
   accumulators 32c + 2i, +1: wgmma's layout, see hpdl__wg_buffer_chunk)
   into rows 0..63 of a box swizzled as hpdl__wg_swizzle128 (or rows 64..127
   when box points 64 rows in: the swizzle repeats every 8 rows). */
static __device__ __forceinline__ void hpdl__wg_stmatrix_chunk(unsigned char *box, const unsigned p[16]) {
    const int t = (int)threadIdx.x % 128, lane = t % 32;
    /* stmatrix: lane gives row lane%8 of matrix lane/8 = (rows 0-7 or 8-15 of the warp's 16) x (group jj or jj+1) */
    const int row = t / 32 * 16 + lane / 8 % 2 * 8 + lane % 8, next_group = lane / 16;
    int jj;
#pragma unroll
    for (jj = 0; jj < HPDL__WG_TMA_COLS / 8; jj += 2)
        hpdl__stmatrix_x4(box + hpdl__wg_swizzle128(row, (jj + next_group) * 8), p + 2 * jj);
}

/* Chunk c of a warpgroup's 64 x 256 output (columns 64c..64c+63, already
   in T: pairs p[i] from accumulators 32c + 2i, +1) to C at (m0, x) through
   buffer c % 2. The buffer's copies are issued (and waited for) by lane 0 of
   warp c % 2, so one thread's wait for this buffer runs alongside the other's
   issue of the last chunk (one thread doing both: H100, f16 4096^3, ~2150
   cycles a tile for the epilogue, ~2000 with two). */
static __device__ __forceinline__ void hpdl__wg_put_chunk(const CUtensorMap *map_c, const unsigned p[16], int c, int m0, int x,
                                                          unsigned char *buf) {
    enum { BOX_BYTES = HPDL__WG_TMA_ROWS * HPDL__WG_TMA_COLS * 2 };
    const int t = (int)threadIdx.x % 128, wg = (int)threadIdx.x / 128, issuer = t == c % 2 * 32;
    unsigned char *b = buf + c % 2 * BOX_BYTES;
    if (issuer) hpdl__tma_wait_read<0>(); /* this buffer's last copy has read it */
    hpdl__wg_bar(wg);
    hpdl__wg_stmatrix_chunk(b, p);
    hpdl__fence_async_smem();
    hpdl__wg_bar(wg);
    if (issuer) hpdl__tma_store(map_c, b, x, m0);
}

/* Chunk c's accumulators (32c..32c+31) times alpha as pairs of T, with
   ReLU where relu is set (the MLP's epilogue, hpdl__gemm_bias_act). */
template <typename T>
static __device__ __forceinline__ void hpdl__wg_pack_chunk(const float d[128], float alpha, int c, unsigned p[16],
                                                           int relu = 0) {
    const float *x = d + 32 * c;
    int i;
    if (relu) {
#pragma unroll
        for (i = 0; i < 16; i++) p[i] = hpdl__wg_pair(hpdl__gemm_relu(alpha * x[2 * i]), hpdl__gemm_relu(alpha * x[2 * i + 1]), T());
        return;
    }
    if (alpha == 1.0f) /* most calls: 32 multiplications saved */
#pragma unroll
        for (i = 0; i < 16; i++) p[i] = hpdl__wg_pair(x[2 * i], x[2 * i + 1], T());
    else
#pragma unroll
        for (i = 0; i < 16; i++) p[i] = hpdl__wg_pair(alpha * x[2 * i], alpha * x[2 * i + 1], T());
}

/* Chunks FIRST_CHUNK..BN/64 - 1 of the output by TMA (the ones before: see
   hpdl__wg_hold). */
template <typename T, int FIRST_CHUNK = 0, int BN = 256>
static __device__ __forceinline__ void hpdl__wg_store_tma(const CUtensorMap *map_c, float alpha, const float *d, int m0,
                                                          int n0, unsigned char *buf, int relu = 0) {
    int c;
#pragma unroll
    for (c = FIRST_CHUNK; c < BN / HPDL__WG_TMA_COLS; c++) {
        unsigned p[16];
        hpdl__wg_pack_chunk<T>(d, alpha, c, p, relu);
        hpdl__wg_put_chunk(map_c, p, c, m0, n0 + c * HPDL__WG_TMA_COLS, buf);
    }
}

/* The epilogue of a Hopper GEMM tile: by TMA where the launcher made a map
   for C (tma_c, f16/bf16 only), else through hpdl__wg_store. POST: the
   TMA store applies the args' ReLU (the one-tile rung built for
   hpdl__gemm_bias_act; its launcher refuses an epilogue without a TMA
   map). (The int8 GEMM's epilogue, with its requantization, is further
   down.) */
template <bool POST = false, typename T>
static __device__ __forceinline__ void hpdl__wg_epilogue(const hpdl__gemm_args<T, float> &g, const CUtensorMap *map_c,
                                                         int tma_c, float d[128], int m0, int n0, float *buf) {
    if (tma_c)
        hpdl__wg_store_tma<T>(map_c, g.alpha, d, m0, n0, (unsigned char *)buf, POST ? g.relu : 0);
    else
        hpdl__wg_store(g, d, m0, n0, buf);
}
template <bool POST = false>
static __device__ __forceinline__ void hpdl__wg_epilogue(const hpdl__gemm_args<float, float> &g, const CUtensorMap *, int,
                                                         float d[128], int m0, int n0, float *buf) {
    hpdl__wg_store(g, d, m0, n0, buf); /* TF32: C is f32 */
}

/* The epilogue of the warp-specialized kernel's 64 x BN accumulators: the
   one above for 256 columns (every G), by TMA or hpdl__wg_store for the
   narrower f16/bf16 tiles. */
template <int BN> struct hpdl__wg_tile_out {
    template <typename T>
    static __device__ __forceinline__ void put(const hpdl__gemm_args<T, float> &g, const CUtensorMap *map_c, int tma_c,
                                               float *d, int m0, int n0, float *buf) {
        if (tma_c)
            hpdl__wg_store_tma<T, 0, BN>(map_c, g.alpha, d, m0, n0, (unsigned char *)buf);
        else
            hpdl__wg_store<hpdl__gemm_args<T, float>, float, BN>(g, d, m0, n0, buf);
    }
};
template <> struct hpdl__wg_tile_out<256> {
    template <typename G, typename ACC>
    static __device__ __forceinline__ void put(const G &g, const CUtensorMap *map_c, int tma_c, ACC *d, int m0, int n0,
                                               ACC *buf) {
        hpdl__wg_epilogue(g, map_c, tma_c, d, m0, n0, buf);
    }
};

/* Before the block exits: its TMA stores have read shared memory. */
static __device__ __forceinline__ void hpdl__wg_epilogue_done() {
    if (threadIdx.x % 128 == 0 || threadIdx.x % 128 == 32) hpdl__tma_wait_read<0>(); /* the two issuers */
}

/* Work unit u (a tile, or a cluster's patch of tiles) as (row um, column
   un) of the units_m x units_n grid of units, in grouped order (GROUP rows
   of units at a time) so that blocks running at the same time share rows
   of A and columns of B in L2. */
template <int GROUP>
static __device__ __forceinline__ void hpdl__wg_tile(int u, int units_m, int units_n, int *um, int *un) {
    int per_group = GROUP * units_n, first = u / per_group * GROUP;
    int rows = units_m - first < GROUP ? units_m - first : GROUP;
    *um = first + u % per_group % rows;
    *un = u % per_group / rows;
}

/* ---- stream-K tail of the persistent rung -------------------------------- */

/* With P blocks and units % P = R > 0 tiles left for a last wave, P - R SMs
   would idle for a whole tile's time (4096^3 on an H100: 512 tiles on 132
   SMs, 3.88 waves run as 4). Instead the last `tail` tiles are cut into
   their k-steps and block b takes steps [T b / P, T (b + 1) / P) of the
   T = tail KT (Osama et al., "Stream-K", 2023). Such a run is shorter than
   one tile: it is the end of one tile and the start of the next, or a piece
   from the middle of one. A block runs the start first and the end second,
   so at any moment all blocks are at one of two k offsets (the whole tail
   walks K in step, as the full waves do: the A and B slabs they read are
   shared in L2; blocks at scattered k offsets read whole panels and ran
   at 0.87 of cuBLAS). A piece that does not reach the tile's last k-step
   leaves its partial sum in global memory; the block holding the last
   k-step adds the partial sums of the lower-numbered blocks before it and
   stores the tile. Only lower-numbered blocks are waited for, and they
   wrote their start pieces first. */
typedef struct hpdl__wg_sk {
    void *partial;  /* per block: 256 consumer threads x 128 accumulators (the one-tile kernel's K split: its
                       slices' f32 tiles, hpdl__wg_put_slice) */
    unsigned *flag; /* per block and consumer: = seq once its partial sum is written */
    unsigned seq;   /* this launch's number: flags left by earlier launches never match */
    int tail;       /* tiles at the end of the order shared out by k-steps (0: none) */
} hpdl__wg_sk;

/* k-steps [k0, k1) of tile u: item i of block b's work, whole tiles first
   (0 when it has no item i; host code too, for the tests). */
typedef struct hpdl__wg_item { int u, k0, k1; } hpdl__wg_item;

/* First k-step of block b's run in the tail (b = blocks: the end). */
static __host__ __device__ __forceinline__ long long hpdl__wg_sk_start(const hpdl__wg_sk &sk, int KT, int b, int blocks) {
    return (long long)sk.tail * KT * b / blocks;
}

static __host__ __device__ __forceinline__ int hpdl__wg_item_at(int i, int b, int blocks, int units, int KT,
                                                                const hpdl__wg_sk &sk, hpdl__wg_item *w) {
    const int whole = units - sk.tail, n_whole = b < whole ? (whole - b + blocks - 1) / blocks : 0;
    long long s, e;
    int t1, t2;
    if (i < n_whole) {
        w->u = b + i * blocks; w->k0 = 0; w->k1 = KT;
        return 1;
    }
    i -= n_whole;
    s = hpdl__wg_sk_start(sk, KT, b, blocks);
    e = hpdl__wg_sk_start(sk, KT, b + 1, blocks);
    if (s == e || i > 1) return 0;
    t1 = (int)(s / KT);
    t2 = (int)((e - 1) / KT);
    if (t1 == t2 && i == 1) return 0;
    if (t1 != t2 && i == 0) { /* the next tile's start first */
        w->u = whole + t2; w->k0 = 0; w->k1 = (int)(e - (long long)t2 * KT);
    } else {
        w->u = whole + t1; w->k0 = (int)(s - (long long)t1 * KT); w->k1 = t1 == t2 ? (int)(e - (long long)t1 * KT) : KT;
    }
    return 1;
}

/* Item n of block `first`'s work (hpdl__wg_item_at) and the row and column
   of its unit in the grouped order (hpdl__wg_tile); 0 when it has none. */
typedef struct hpdl__wg_work {
    hpdl__wg_item w;
    int um, un;
} hpdl__wg_work;

template <int GROUP>
static __device__ __forceinline__ int hpdl__wg_work_at(int n, int first, int stride, int units, int units_m, int units_n,
                                                       int KT, const hpdl__wg_sk &sk, hpdl__wg_work *x) {
    if (!hpdl__wg_item_at(n, first, stride, units, KT, sk, &x->w)) return 0;
    hpdl__wg_tile<GROUP>(x->w.u, units_m, units_n, &x->um, &x->un);
    return 1;
}

/* Block b's partial sums, 16 bytes per access, laid out so that a warp's
   accesses are contiguous: accumulators 4j..4j+3 of consumer thread c
   (0..255) at 16-byte word j * 256 + c. */
static __device__ __forceinline__ uint4 *hpdl__wg_sk_slot(const hpdl__wg_sk &sk, int b) {
    return (uint4 *)sk.partial + (size_t)b * 32 * 256 + ((int)threadIdx.x - 128);
}

/* Consumer wg of block b leaves its partial sum, then says so. Stores are
   cached in L2 only (.cg): another SM reads them. */
template <typename ACC>
static __device__ __forceinline__ void hpdl__wg_sk_put(const hpdl__wg_sk &sk, int b, int wg, const ACC d[128]) {
    uint4 *slot = hpdl__wg_sk_slot(sk, b), v;
    int j;
#pragma unroll
    for (j = 0; j < 32; j++) {
        memcpy(&v, d + 4 * j, sizeof v);
        __stcg(slot + j * 256, v);
    }
    hpdl__wg_bar(wg); /* every thread's stores come before the flag */
    if (threadIdx.x % 128 == 0) {
        __threadfence();
        asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(sk.flag + 2 * b + wg - 1), "r"(sk.seq) : "memory");
    }
}

/* Consumer wg adds the partial sums of tile u's k-steps before k0: those of
   the blocks below b whose runs reach into the tile. */
template <typename ACC>
static __device__ __forceinline__ void hpdl__wg_sk_take(const hpdl__wg_sk &sk, int b, int blocks, int units, int KT,
                                                        int u, int wg, ACC d[128]) {
    const long long tile_start = (long long)(u - (units - sk.tail)) * KT;
    int p, j;
    for (p = b - 1; p >= 0 && hpdl__wg_sk_start(sk, KT, p + 1, blocks) > tile_start; p--) {
        const uint4 *slot = hpdl__wg_sk_slot(sk, p);
        if (hpdl__wg_sk_start(sk, KT, p, blocks) == hpdl__wg_sk_start(sk, KT, p + 1, blocks)) continue; /* no run */
        if (threadIdx.x % 128 == 0) {
            unsigned v;
            do asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(sk.flag + 2 * p + wg - 1) : "memory");
            while (v != sk.seq);
        }
        hpdl__wg_bar(wg);
#pragma unroll
        for (j = 0; j < 32; j++) {
            uint4 v = __ldcg(slot + j * 256);
            ACC x[4];
            memcpy(x, &v, sizeof v);
            d[4 * j] += x[0]; d[4 * j + 1] += x[1]; d[4 * j + 2] += x[2]; d[4 * j + 3] += x[3];
        }
    }
}

/* ---- held epilogue -------------------------------------------------------- */

/* The f16/bf16 epilogue of a tile with another after it stores only chunk
   3 (hpdl__wg_store_tma) and holds chunks 0-2 as 48 registers of pairs,
   which go out during the next tile's first three k-steps, while its wgmmas
   run (hpdl__wg_put_held): the tensor cores wait for a quarter of an
   epilogue between tiles instead of a whole one. (All four chunks do not
   fit: 128 accumulators + 64 held registers made ptxas spill and serialise
   the wgmmas.) */
typedef struct hpdl__wg_held {
    unsigned v[48];
    int m0, n0, chunks; /* chunks still to store (0: nothing held) */
} hpdl__wg_held;

/* The kernels whose tiles may be held: the f16 and bf16 GEMMs, and the FP8
   GEMM with f16/bf16 C (section FP8). */
template <typename G> struct hpdl__wg_holds { enum { value = 0 }; };
template <> struct hpdl__wg_holds<hpdl__gemm_args<__half, float> > { enum { value = 1 }; };
template <> struct hpdl__wg_holds<hpdl__gemm_args<__nv_bfloat16, float> > { enum { value = 1 }; };

/* Holds the tile (h->chunks = 3; chunk 3 stored) where C has a TMA
   map (f16/bf16, beta = 0, aligned); else h->chunks = 0, nothing done. */
template <typename G, typename ACC>
static __device__ __forceinline__ void hpdl__wg_hold(const G &, const CUtensorMap *, int, const ACC *, int, int,
                                                     unsigned char *, hpdl__wg_held *h) {
    h->chunks = 0;
}
/* T: C's 16-bit type; alpha: the factor of the accumulators. */
template <typename T>
static __device__ __forceinline__ void hpdl__wg_hold_16bit(float alpha, const CUtensorMap *map_c, int tma_c,
                                                          const float d[128], int m0, int n0, unsigned char *buf,
                                                          hpdl__wg_held *h) {
    h->chunks = 0;
    if (!tma_c) return;
    hpdl__wg_pack_chunk<T>(d, alpha, 0, h->v);
    hpdl__wg_pack_chunk<T>(d, alpha, 1, h->v + 16);
    hpdl__wg_pack_chunk<T>(d, alpha, 2, h->v + 32);
    hpdl__wg_store_tma<T, 3>(map_c, alpha, d, m0, n0, buf);
    h->m0 = m0, h->n0 = n0, h->chunks = 3;
}
static __device__ __forceinline__ void hpdl__wg_hold(const hpdl__gemm_args<__half, float> &g, const CUtensorMap *map_c,
                                                     int tma_c, const float d[128], int m0, int n0, unsigned char *buf,
                                                     hpdl__wg_held *h) {
    hpdl__wg_hold_16bit<__half>(g.alpha, map_c, tma_c, d, m0, n0, buf, h);
}
static __device__ __forceinline__ void hpdl__wg_hold(const hpdl__gemm_args<__nv_bfloat16, float> &g, const CUtensorMap *map_c,
                                                     int tma_c, const float d[128], int m0, int n0, unsigned char *buf,
                                                     hpdl__wg_held *h) {
    hpdl__wg_hold_16bit<__nv_bfloat16>(g.alpha, map_c, tma_c, d, m0, n0, buf, h);
}

/* Stores the next held chunk (chunk 0, then 1, then 2). Branches rather
   than h->v + 16 * index: a run-time index would put v in local memory. */
static __device__ __forceinline__ void hpdl__wg_put_held(const CUtensorMap *map_c, hpdl__wg_held *h, unsigned char *buf) {
    if (h->chunks == 3)
        hpdl__wg_put_chunk(map_c, h->v, 0, h->m0, h->n0, buf);
    else if (h->chunks == 2)
        hpdl__wg_put_chunk(map_c, h->v + 16, 1, h->m0, h->n0 + HPDL__WG_TMA_COLS, buf);
    else
        hpdl__wg_put_chunk(map_c, h->v + 32, 2, h->m0, h->n0 + 2 * HPDL__WG_TMA_COLS, buf);
    h->chunks--;
}

/* ---- the kernels --------------------------------------------------------- */

/* The first 1024-byte boundary at or after the dynamic shared memory's start
   (hpdl__smem_align1024). */
static __device__ __forceinline__ unsigned char *hpdl__wg_smem_base() {
    extern __shared__ uint4 hpdl__wg_smem[];
    return hpdl__smem_align1024(hpdl__wg_smem);
}

/* A warpgroup's 64 x 256 sums as they lie in its accumulators
   (hpdl__wg_buffer_chunk's layout) into a row-major block of f32, rows
   `pitch` floats apart: pairs of columns straight from the registers, no
   bounds to check. */
static __device__ __forceinline__ void hpdl__wg_put_rows(float *block, int pitch, const float d[128]) {
    const int t = (int)threadIdx.x % 128, lane = t % 32, r = t / 32 * 16 + lane / 4, c = lane % 4 * 2;
    int j;
#pragma unroll
    for (j = 0; j < 32; j++) {
        *(float2 *)&block[r * pitch + 8 * j + c] = make_float2(d[4 * j], d[4 * j + 1]);
        *(float2 *)&block[(r + 8) * pitch + 8 * j + c] = make_float2(d[4 * j + 2], d[4 * j + 3]);
    }
}
/* Slice `slice` of K's sums of the 64 x 256 tile (tm, tn) into its own
   64 x 256 block of the workspace at sums (hpdl__wg_add_slices_kernel reads
   only the tile's part inside M x N). */
static __device__ __forceinline__ void hpdl__wg_put_slice(float *sums, const float d[128], int tm, int tn, int tiles_n,
                                                          int slice, int slices) {
    hpdl__wg_put_rows(sums + ((size_t)(tm * tiles_n + tn) * slices + slice) * (64 * 256), 256, d);
}

/* The slices of one tile as one cluster (blocks y = 0 .. S-1 of the grid):
   each block leaves its 64 x 256 sums in its own shared memory, over the
   stages it no longer reads (rows 264 floats apart: a half-warp's stores
   then fall on all 32 banks), and block s adds rows 64 s / S to
   64 (s + 1) / S of every block's sums, in slice order, into C. The same
   sums as hpdl__wg_add_slices_kernel's, with no second kernel and no
   workspace; 4 rows' loads in flight at a time. */
enum { HPDL__WG_SLICE_PITCH = 264, HPDL__WG_MAX_SLICE_CLUSTER = 8 };
template <bool POST, typename T>
static __device__ __forceinline__ void hpdl__wg_add_slices_in_cluster(const hpdl__gemm_args<T, float> &g, const float d[128],
                                                                      float *sums, int m0, int n0) {
    enum { ROWS = 4 };
    cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
    const int slices = (int)gridDim.y, s = (int)cluster.block_rank(), col = 2 * (int)threadIdx.x;
    const int r1 = 64 * (s + 1) / slices;
    int r, i, j;
    __syncthreads(); /* every warp's wgmmas have read the stages */
    hpdl__wg_put_rows(sums, HPDL__WG_SLICE_PITCH, d);
    cluster.sync();
    for (r = 64 * s / slices; r < r1; r += ROWS) {
        float2 in[ROWS][HPDL__WG_MAX_SLICE_CLUSTER];
#pragma unroll
        for (i = 0; i < ROWS; i++)
#pragma unroll
            for (j = 0; j < HPDL__WG_MAX_SLICE_CLUSTER; j++)
                if (j < slices && r + i < r1)
                    in[i][j] = *(const float2 *)cluster.map_shared_rank(sums + (r + i) * HPDL__WG_SLICE_PITCH + col, (unsigned)j);
#pragma unroll
        for (i = 0; i < ROWS; i++) {
            float2 sum = make_float2(0.0f, 0.0f);
            if (r + i >= r1) break;
#pragma unroll
            for (j = 0; j < HPDL__WG_MAX_SLICE_CLUSTER; j++)
                if (j < slices) sum.x += in[i][j].x, sum.y += in[i][j].y;
            hpdl__gemm_out<POST>(g, m0 + r + i, n0 + col, sum.x);
            hpdl__gemm_out<POST>(g, m0 + r + i, n0 + col + 1, sum.y);
        }
    }
    cluster.sync(); /* the other blocks may still read this one's sums */
}

/* Tile kt of the block's k-steps (from k-step k_first) of the one-tile
   rung's A and B into its stage, signalling full[kt % S]. */
template <typename T, bool AMN, bool BMN, int BM, int BN>
static __device__ __forceinline__ void hpdl__wg_one_tile_load(const CUtensorMap *map_a, const CUtensorMap *map_b,
                                                              unsigned char *smem, uint64_t *full, int tm, int tn,
                                                              int k_first, int kt) {
    enum { S = HPDL__WG_STAGES, A_BYTES = BM * 128, STAGE = (BM + BN) * 128 };
    const int bk = (k_first + kt) * (128 / (int)sizeof(T)); /* 128 bytes of K a k-step */
    unsigned char *st = smem + kt % S * STAGE;
    hpdl__mbar_expect_bytes(&full[kt % S], STAGE);
    hpdl__wg_load_pieces<AMN>(map_a, st, &full[kt % S], tm * BM, bk, 0, BM / 64, 1, 0);
    hpdl__wg_load_pieces<BMN>(map_b, st + A_BYTES, &full[kt % S], tn * BN, bk, 0, BN / 64, 1, 0);
}

/* bias[n] (0 past N), times `keep` (1 or 0), loaded without a branch:
   the accumulators it starts are then set as unconditionally as zeros
   would be (set on one path of a branch, ptxas serialises the wgmmas
   after it). bias must not be NULL. */
static __device__ __forceinline__ float hpdl__wg_bias_at(const float *bias, int n, int N, float keep) {
    return (n < N ? keep : 0.0f) * bias[n < N ? n : N - 1];
}

/* The MLP's bias as where a 64 x 256 tile's accumulators start
   (hpdl__gemm_bias_act): in wgmma's layout (hpdl__wg_buffer_chunk)
   d[4j..4j+3] hold columns n0 + 8j + 2(lane%4), +1, of two rows; keep 0
   gives zeros (hpdl__wg_bias_at). */
static __device__ __forceinline__ void hpdl__wg_bias_start(float d[128], const float *bias, int n0, int N, float keep) {
    const int c = n0 + (int)threadIdx.x % 4 * 2;
    int j;
#pragma unroll
    for (j = 0; j < 32; j++) {
        d[4 * j] = d[4 * j + 2] = hpdl__wg_bias_at(bias, c + 8 * j, N, keep);
        d[4 * j + 1] = d[4 * j + 3] = hpdl__wg_bias_at(bias, c + 8 * j + 1, N, keep);
    }
}

/* wgmma: one warpgroup, thread 0 copies STAGES-1 tiles ahead, and one
   k-step's wgmmas stay in flight while the next are issued. With gridDim.y > 1 K is
   split: block (x, s) multiplies slice s of the k-steps and leaves its
   sums at sk.partial (hpdl__gemm_wgmma_split), or, without sk.partial, the
   slices of a tile are a cluster and add their sums into C themselves.
   POST: built for hpdl__gemm_bias_act (bias in slice 0's accumulators,
   ReLU where C is written). */
template <typename T, bool AMN, bool BMN, bool POST = false>
__global__ void __launch_bounds__(128, 1) hpdl__gemm_wgmma(const __grid_constant__ CUtensorMap map_a,
                                                           const __grid_constant__ CUtensorMap map_b,
                                                           const __grid_constant__ CUtensorMap map_c,
                                                           hpdl__gemm_args<T, float> g, int tma_c, hpdl__wg_sk sk) {
#ifdef HPDL__SM90A
    enum { BM = 64, BN = 256, BK = 128 / sizeof(T), S = HPDL__WG_STAGES, A_BYTES = BM * 128, STAGE = (BM + BN) * 128 };
    unsigned char *smem = hpdl__wg_smem_base();
    float *epi = (float *)(smem + S * STAGE);
    uint64_t *full = (uint64_t *)(smem + S * STAGE + HPDL__WG_EPI_BYTES);
    const int steps = (g.K + BK - 1) / BK, chunk = (steps + (int)gridDim.y - 1) / (int)gridDim.y;
    const int k_first = (int)blockIdx.y * chunk, KT = steps - k_first < chunk ? steps - k_first : chunk;
    int tiles_n = (g.N + BN - 1) / BN, tm, tn, kt, i;
    float d[128];
    hpdl__wg_tile<8>((int)blockIdx.x, (g.M + BM - 1) / BM, tiles_n, &tm, &tn);
    if (POST)
        hpdl__wg_bias_start(d, g.bias, tn * BN, g.N, blockIdx.y == 0 ? 1.0f : 0.0f); /* in slice 0 only */
    else
#pragma unroll
        for (i = 0; i < 128; i++) d[i] = 0.0f;
    if (threadIdx.x == 0) {
        for (i = 0; i < S; i++) hpdl__mbar_init(&full[i], 1);
        hpdl__mbar_init_fence();
    }
    __syncthreads();
    if (threadIdx.x == 0)
        for (kt = 0; kt < S - 1 && kt < KT; kt++)
            hpdl__wg_one_tile_load<T, AMN, BMN, BM, BN>(&map_a, &map_b, smem, full, tm, tn, k_first, kt);
    for (kt = 0; kt < KT; kt++) { /* multiply tile kt while tile kt - 1's wgmmas finish */
        unsigned char *st = smem + kt % S * STAGE;
        hpdl__mbar_wait(&full[kt % S], (unsigned)(kt / S) & 1);
        hpdl__wg_mma_stage<T, AMN, BMN>(d, st, st + A_BYTES, 0);
        hpdl__wg_wait<1>();
        __syncthreads(); /* every warp is done with tile kt - 1: its stage takes tile kt + S - 1 */
        if (threadIdx.x == 0 && kt + S - 1 < KT)
            hpdl__wg_one_tile_load<T, AMN, BMN, BM, BN>(&map_a, &map_b, smem, full, tm, tn, k_first, kt + S - 1);
    }
    hpdl__wg_wait<0>();
    hpdl__wg_fence_acc(d);
    if (gridDim.y > 1 && !sk.partial) { /* the slices are one cluster */
        hpdl__wg_add_slices_in_cluster<POST>(g, d, (float *)smem, tm * BM, tn * BN);
        return;
    }
    if (gridDim.y > 1) {
        hpdl__let_next_start(); /* the kernel adding the slices may take its SMs as they free up */
        hpdl__wg_put_slice((float *)sk.partial, d, tm, tn, tiles_n, (int)blockIdx.y, (int)gridDim.y);
        return;
    }
    hpdl__wg_epilogue<POST>(g, &map_c, tma_c, d, tm * BM, tn * BN, epi);
    hpdl__wg_epilogue_done();
#else
    /* no sm_90a code in this pass: never launched */
    (void)map_a; (void)map_b; (void)map_c; (void)g; (void)tma_c; (void)sk;
#endif
}

/* The thin tile: BN rows of C (8 to 128) x 64 columns; every stage holds a
   64-column strip of B and BN rows of A, 128 bytes of K each; as many
   stages as fit in 208 KB, at most 16. */
#ifndef HPDL__WG_THIN_SPLIT_ROWS /* experiments build without it (0) */
#define HPDL__WG_THIN_SPLIT_ROWS 1
#endif
/* The MLP's bias as where the thin kernel's accumulators start
   (hpdl__gemm_bias_act): accumulators 4j, 4j+1 are column n of C, 4j+2,
   4j+3 column n + 8 (see the kernel's store); keep 0 gives zeros. */
template <int ROWS>
static __device__ __forceinline__ void hpdl__wg_thin_bias_start(float d[ROWS / 2], const float *bias, int n, int N,
                                                                float keep) {
    const float b0 = hpdl__wg_bias_at(bias, n, N, keep), b8 = hpdl__wg_bias_at(bias, n + 8, N, keep);
    int j;
#pragma unroll
    for (j = 0; j < ROWS / 8; j++) d[4 * j] = d[4 * j + 1] = b0, d[4 * j + 2] = d[4 * j + 3] = b8;
}

template <int BN> struct hpdl__wg_thin_shape {
    enum { STRIP = 64 * 128, STAGE = STRIP + BN * 128, MOST = (208 << 10) / STAGE / 2 * 2 /* even */ };
    enum { STAGES = MOST > 16 ? 16 : MOST, SUMS = BN / 2 * 128 * 4 /* a warpgroup's accumulators */,
           WGS = BN <= 64 || (BN == 128 && HPDL__WG_THIN_SPLIT_ROWS) ? 2 : 1 /* warpgroups on 4 or more k-steps
                                                                              (hpdl__gemm_wgmma_thin) */ };
    /* bytes before the stages' barriers: the stages, or the sums handed over at the end */
    static __host__ __device__ int body(int stages) { return stages * STAGE > SUMS ? stages * STAGE : SUMS; }
};

/* Fetches a tensor map's descriptor ahead of its first copy. */
static __device__ __forceinline__ void hpdl__tma_prefetch(const CUtensorMap *map) {
    asm volatile("prefetch.tensormap [%0];" ::"l"(map) : "memory");
}

/* One k-step (k0) of a thin block into a stage: B's strip at columns n0,
   A's BN rows at m0 (K-major: one box of BN rows, hpdl__wg_map's rows;
   MN-major: BN / 64 pieces). */
template <int BN, bool BMN, bool AMN>
static __device__ __forceinline__ void hpdl__wg_thin_load(const CUtensorMap *map_b, const CUtensorMap *map_a,
                                                          unsigned char *stage, uint64_t *bar, int n0, int m0, int k0) {
    hpdl__mbar_expect_bytes(bar, hpdl__wg_thin_shape<BN>::STAGE);
    hpdl__wg_load_pieces<BMN>(map_b, stage, bar, n0, k0, 0, 1, 1, 0);
    if (AMN)
        hpdl__wg_load_pieces<true>(map_a, stage + hpdl__wg_thin_shape<BN>::STRIP, bar, m0, k0, 0, BN / 64, 1, 0);
    else
        hpdl__tma_load(map_a, stage + hpdl__wg_thin_shape<BN>::STRIP, bar, k0, m0, 0);
}

/* thin: a BN x 64 tile of C per block for products of few rows (an MLP's
   batch; A MN-major: BN 64 or 128), f16/bf16. The operands swap roles:
   wgmma's 64-row operand is the strip of B (C's columns), its BN-wide one
   the rows of A, so the accumulators hold the tile transposed. Thread 0
   puts `stages` k-steps in flight at once, all of K where it fits (784: 13
   steps). With 4 or more k-steps and BN <= 64, two warpgroups (WGS) take
   alternate k-steps (one chain of 13 x 4 dependent wgmmas becomes two of
   about half that; one H200, f16 32 x 512 x 784: 8.4 -> 7.7 us), each
   refilling the stages of its own steps (an even count of stages) once
   its wgmma has read them, while its next step's wgmma runs; warpgroup 1
   hands its sums over through shared memory at the end. With 128 rows
   the two warpgroups instead take 64 rows each at every k-step (SPLIT:
   no hand-over; alternate k-steps were slower there; f16 512 x 2048 x 784
   11.5 -> 10.7 us, one H200). Fewer steps keep one warpgroup. */
template <typename T, bool BMN, bool AMN, int BN, int WGS, bool POST = false>
__global__ void __launch_bounds__(128 * WGS, 1) hpdl__gemm_wgmma_thin(const __grid_constant__ CUtensorMap map_b,
                                                                      const __grid_constant__ CUtensorMap map_a,
                                                                      hpdl__gemm_args<T, float> g, int stages) {
#ifdef HPDL__SM90A
    typedef hpdl__wg_thin_shape<BN> SH;
    enum { BK = 128 / sizeof(T), K_STEP = hpdl__wg_type<T>::K_STEP };
    enum { SPLIT = BN == 128 && WGS == 2,   /* each warpgroup takes 64 of the rows, every k-step */
           ROWS = SPLIT ? 64 : BN,          /* rows of A (wgmma's N) a warpgroup multiplies */
           STRIDE = SPLIT ? 1 : WGS };      /* k-steps between two of a warpgroup's */
    unsigned char *smem = hpdl__wg_smem_base();
    uint64_t *full = (uint64_t *)(smem + SH::body(stages));
    float *other = (float *)smem; /* warpgroup 1's sums, once every stage is read */
    const int steps = (g.K + BK - 1) / BK, n0 = (int)blockIdx.x * 64, m0 = (int)blockIdx.y * BN;
    const int t = (int)threadIdx.x % 128, wg = (int)threadIdx.x / 128, lane = t % 32, row0 = SPLIT ? 64 * wg : 0;
    float d[ROWS / 2];
    int i, c, j;
    if (POST) /* the MLP's bias, once per output: warpgroup 1's sums are added to warpgroup 0's unless SPLIT */
        hpdl__wg_thin_bias_start<ROWS>(d, g.bias, n0 + t / 32 * 16 + lane / 4, g.N, SPLIT || wg == 0 ? 1.0f : 0.0f);
    else
#pragma unroll
        for (i = 0; i < ROWS / 2; i++) d[i] = 0.0f;
    if (threadIdx.x == 0) {
        hpdl__tma_prefetch(&map_b);
        hpdl__tma_prefetch(&map_a);
        for (i = 0; i < stages; i++) hpdl__mbar_init(&full[i], 1);
        hpdl__mbar_init_fence();
        for (i = 0; i < stages && i < steps; i++)
            hpdl__wg_thin_load<BN, BMN, AMN>(&map_b, &map_a, smem + i * SH::STAGE, &full[i], n0, m0, i * BK);
    }
    __syncthreads();
    for (c = SPLIT ? 0 : wg; c < steps; c += STRIDE) { /* warpgroup wg: every STRIDE-th k-step */
        unsigned char *st = smem + c % stages * SH::STAGE;
        const int refill = c - STRIDE + stages; /* the k-step for the stage this warpgroup's step c - STRIDE used */
        hpdl__mbar_wait(&full[c % stages], (unsigned)(c / stages) & 1);
        hpdl__wg_fence_accs<ROWS / 2>(d);
        hpdl__wg_fence();
#pragma unroll
        for (j = 0; j < BK / K_STEP; j++)
            hpdl__wgmma_thin<ROWS, BMN, AMN, T>(d, hpdl__wg_step_desc<T, BMN>(st, 0, j),
                                                hpdl__wg_step_desc<T, AMN>(st + SH::STRIP, row0, j));
        hpdl__wg_commit();
        hpdl__wg_fence_accs<ROWS / 2>(d);
        if (c >= STRIDE && refill < steps) { /* step c - STRIDE's wgmma has read its stage: refill it while step c's runs */
            hpdl__wg_wait<1>();
            if (WGS == 1 || SPLIT) /* SPLIT: both warpgroups read every stage */
                __syncthreads();
            else if (wg == 0)
                hpdl__wg_bar(1);
            else
                hpdl__wg_bar(2);
            if (threadIdx.x % 128 == 0 && (wg == 0 || !SPLIT))
                hpdl__wg_thin_load<BN, BMN, AMN>(&map_b, &map_a, smem + refill % stages * SH::STAGE,
                                                 &full[refill % stages], n0, m0, refill * BK);
        }
    }
    hpdl__wg_wait<0>();
    hpdl__wg_fence_accs<ROWS / 2>(d);
    if (WGS > 1 && !SPLIT) {
        __syncthreads(); /* every stage is read: warpgroup 1 hands its sums over */
        if (wg == 1)
#pragma unroll
            for (i = 0; i < ROWS / 2; i++) other[i * 128 + t] = d[i];
        __syncthreads();
        if (wg == 1) return;
#pragma unroll
        for (i = 0; i < ROWS / 2; i++) d[i] += other[i * 128 + t];
    }
    /* accumulator 4j + i: column n of C (row 16 warp + lane / 4, + 8 of the
       strip) and row m (8 j + 2 (lane % 4), + 1) */
#pragma unroll
    for (j = 0; j < ROWS / 8; j++) {
        const int n = n0 + t / 32 * 16 + lane / 4, m = m0 + row0 + 8 * j + lane % 4 * 2;
        hpdl__gemm_out<POST>(g, m, n, d[4 * j]);
        hpdl__gemm_out<POST>(g, m + 1, n, d[4 * j + 1]);
        hpdl__gemm_out<POST>(g, m, n + 8, d[4 * j + 2]);
        hpdl__gemm_out<POST>(g, m + 1, n + 8, d[4 * j + 3]);
    }
#else
    (void)map_b; (void)map_a; (void)g; (void)stages; /* no sm_90a code in this pass: never launched */
#endif
}

/* The ranks of a CM x CN cluster (rank = rm + CM rn) that share a row of
   tiles (the same A tile) or a column (the same B tile): multicast masks. */
template <int CM, int CN> static __device__ __forceinline__ unsigned short hpdl__wg_row_mask(int rm) {
    int j, mask = 0;
    for (j = 0; j < CN; j++) mask |= 1 << (rm + CM * j);
    return (unsigned short)mask;
}
template <int CM> static __device__ __forceinline__ unsigned short hpdl__wg_col_mask(int rn) {
    return (unsigned short)(((1 << CM) - 1) << (CM * rn));
}

/* A consumer warpgroup is done reading stage s: thread i of it tells block
   i of the cluster (each may write into this block's stage s). */
template <int CS> static __device__ __forceinline__ void hpdl__wg_release(uint64_t *empty) {
    if ((int)threadIdx.x % 128 < CS) hpdl__mbar_arrive_in(empty, threadIdx.x % 128);
}

/* The grouped order's height in 128-row tiles: 2048 rows of A at a time.
   (H100, f16 4096^3 under ncu: 8 rows read 187 MB from DRAM, 16 rows
   148 MB, as the cluster rung's 8 rows of pairs and cuBLAS, 150 MB.) */
enum { HPDL__WG_GROUP_ROWS = 16 };

/* wgmma_ws / _persistent / _cluster: warpgroup 0 produces, warpgroups 1 and
   2 consume (rows 0-63 and 64-127 of a 128 x BN tile: 256 wide, or 128 and
   192 for f16/bf16 one tile a block, without stream-K pieces). PERSISTENT: blocks
   loop over tiles, the last sk.tail of them shared out by k-steps
   (hpdl__wg_sk). CM x CN clusters: the blocks of a cluster take a CM x CN
   patch of tiles; blocks in one row of the patch share their A tile, blocks
   in one column their B tile, and each loads only its share of the pieces,
   multicast to its row (or column) mates. WAIT1: a consumer keeps one
   stage's wgmmas in flight while it issues the next stage's. G: the
   epilogue's arguments (M, N, K and where C goes; hpdl__wg_store for G). */
template <typename T, typename G, bool AMN, bool BMN, bool PERSISTENT, int CM, int CN, bool WAIT1, int BN = 256>
__global__ void __launch_bounds__(384, 1) hpdl__gemm_wgmma_ws(const __grid_constant__ CUtensorMap map_a,
                                                              const __grid_constant__ CUtensorMap map_b,
                                                              const __grid_constant__ CUtensorMap map_c, G g, int tma_c,
                                                              hpdl__wg_sk sk) {
#ifdef HPDL__SM90A
    enum { BM = 128, BK = 128 / sizeof(T), S = hpdl__wg_ws_stages(BN), A_BYTES = BM * 128, STAGE = (BM + BN) * 128 };
    enum { CS = CM * CN, HOLD = hpdl__wg_holds<G>::value && BN == 256, WIDE = BN == 256 /* stream-K pieces */ };
    static_assert(WIDE || !PERSISTENT, "narrower tiles run one tile a block: their stream-K pieces are not written");
    unsigned char *smem = hpdl__wg_smem_base();
    typename hpdl__wg_type<T>::acc *epi = (typename hpdl__wg_type<T>::acc *)(smem + S * STAGE); /* one buffer per consumer */
    uint64_t *full = (uint64_t *)(smem + S * STAGE + 2 * HPDL__WG_EPI_BYTES), *empty = full + S;
    int units_m = ((g.M + BM - 1) / BM + CM - 1) / CM, units_n = ((g.N + BN - 1) / BN + CN - 1) / CN;
    enum { GROUP = HPDL__WG_GROUP_ROWS / CM };
    int units = units_m * units_n, KT = (g.K + BK - 1) / BK, wg = (int)threadIdx.x / 128, it = 0, n, kt, i;
    int rank = CS > 1 ? (int)hpdl__cluster_rank() : 0, rm = rank % CM, rn = rank / CM;
    int first = (int)blockIdx.x / CS, stride = PERSISTENT ? (int)gridDim.x / CS : units;
    hpdl__wg_work cur, next = hpdl__wg_work(); /* next: copied into cur once more after the last item */
    if (threadIdx.x == 0) {
        for (i = 0; i < S; i++) {
            hpdl__mbar_init(&full[i], 1);
            hpdl__mbar_init(&empty[i], 2 * CS); /* both consumers of every block in the cluster */
        }
        hpdl__mbar_init_fence();
    }
    if (CS > 1) hpdl__cluster_sync(); else __syncthreads();
    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (threadIdx.x == 0)
            for (n = 0; hpdl__wg_work_at<GROUP>(n, first, stride, units, units_m, units_n, KT, sk, &cur); n++) {
                const int um = cur.um, un = cur.un;
                for (kt = cur.w.k0; kt < cur.w.k1; kt++, it++) {
                    unsigned char *st = smem + it % S * STAGE;
                    hpdl__mbar_wait(&empty[it % S], (unsigned)(it / S + 1) & 1); /* first pass: free */
                    hpdl__mbar_expect_bytes(&full[it % S], STAGE);
                    hpdl__wg_load_pieces<AMN>(&map_a, st, &full[it % S], (um * CM + rm) * BM, kt * BK, CN > 1 ? rn : 0,
                                              BM / 64, CN, CN > 1 ? hpdl__wg_row_mask<CM, CN>(rm) : 0);
                    hpdl__wg_load_pieces<BMN>(&map_b, st + A_BYTES, &full[it % S], (un * CN + rn) * BN, kt * BK,
                                              CM > 1 ? rm : 0, BN / 64, CM, CM > 1 ? hpdl__wg_col_mask<CM>(rn) : 0);
                }
            }
    } else {
        typename hpdl__wg_type<T>::acc d[BN / 2];
        unsigned char *buf = (unsigned char *)(epi + (wg - 1) * HPDL__WG_EPI_BYTES / 4);
        hpdl__wg_held held; /* the previous tile's chunks 0-2, still to store (HOLD) */
        int row0 = (wg - 1) * 64;
        int more;
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
        more = hpdl__wg_work_at<GROUP>(0, first, stride, units, units_m, units_n, KT, sk, &cur);
        held.chunks = 0;
        for (n = 0; more; n++, cur = next) {
            const hpdl__wg_item w = cur.w;
            const int um = cur.um, un = cur.un;
            auto k_step = [&]() { /* k-step kt of the item from stage `it` */
                unsigned char *st = smem + it % S * STAGE;
                hpdl__mbar_wait(&full[it % S], (unsigned)(it / S) & 1);
                hpdl__wg_mma_stage<T, AMN, BMN, BN>(d, st, st + A_BYTES, row0);
                if (kt == w.k0) /* the next item's divisions, while the tensor cores work (H100: ~430 cycles
                                   between two tiles when worked out after the epilogue) */
                    more = hpdl__wg_work_at<GROUP>(n + 1, first, stride, units, units_m, units_n, KT, sk, &next);
                if (HOLD && held.chunks > 0) hpdl__wg_put_held(&map_c, &held, buf); /* while the wgmmas run */
                if (WAIT1) { /* the previous stage's group is done: its stage can go */
                    hpdl__wg_wait<1>();
                    if (kt > w.k0) hpdl__wg_release<CS>(&empty[(it - 1) % S]);
                } else {
                    hpdl__wg_wait<0>();
                    hpdl__wg_release<CS>(&empty[it % S]);
                }
                kt++, it++;
            };
#pragma unroll
            for (i = 0; i < BN / 2; i++) d[i] = 0;
            kt = w.k0;
            k_step(); /* an item has at least one k-step; peeled, so that ptxas folds the zeros into its
                         first wgmma (scale-d off) instead of 64 two-register CS2R moves */
            while (kt < w.k1) k_step();
            while (HOLD && held.chunks > 0) hpdl__wg_put_held(&map_c, &held, buf); /* an item of < 3 k-steps */
            if (WAIT1) { /* unconditional: ptxas then sees no wgmma in flight below (a wait under
                            `if (w.k1 > w.k0)` made it serialise the TF32 kernels' wgmmas: 0.89 of cuBLAS) */
                hpdl__wg_wait<0>();
                if (w.k1 > w.k0) hpdl__wg_release<CS>(&empty[(it - 1) % S]);
            }
            hpdl__wg_fence_accs<BN / 2>(d);
            if (WIDE && w.k1 < KT) { /* a stream-K piece without the tile's last k-step */
                hpdl__wg_sk_put(sk, first, wg, d);
                continue;
            }
            if (WIDE && w.k0 > 0) hpdl__wg_sk_take(sk, first, stride, units, KT, w.u, wg, d);
            if (HOLD && more)
                hpdl__wg_hold(g, &map_c, tma_c, d, (um * CM + rm) * BM + row0, (un * CN + rn) * BN, buf, &held);
            if (!HOLD || held.chunks == 0)
                hpdl__wg_tile_out<BN>::put(g, &map_c, tma_c, d, (um * CM + rm) * BM + row0, (un * CN + rn) * BN,
                                           (typename hpdl__wg_type<T>::acc *)buf);
        }
        hpdl__wg_epilogue_done();
    }
    if (CS > 1) hpdl__cluster_sync(); /* other blocks may still write into this block's shared memory */
#else
    (void)map_a; (void)map_b; (void)map_c; (void)g; (void)tma_c; (void)sk;
#endif
}

/* C (M x N, row-major) for hpdl__wg_store_tma: boxes of 64 rows x 64
   columns; HPDL_ERR_UNSUPPORTED where TMA cannot write it: base or rows not
   16-byte aligned, or rows whose N elements do not end on a 16-byte
   boundary, because the engine clips a box's columns at N rounded up to 16
   bytes (measured on an H100: N = 33 halves wrote columns 33..39 too), which
   would overwrite the padding between N and ldc. */
template <typename T>
static inline hpdl_status hpdl__wg_map_c(CUtensorMap *map, T *C, int M, int N, int ldc) {
    PFN_cuTensorMapEncodeTiled_v12000 encode = hpdl__tma_encoder();
    const cuuint32_t box[2] = {HPDL__WG_TMA_COLS, HPDL__WG_TMA_ROWS}, ones[2] = {1, 1};
    cuuint64_t dims[2] = {(cuuint64_t)N, (cuuint64_t)M}, stride[1] = {(cuuint64_t)ldc * sizeof(T)};
    if (!encode || sizeof(T) != 2 /* hpdl__wg_store_tma writes 2-byte elements */ || (uintptr_t)C % 16 != 0 ||
        stride[0] % 16 != 0 || N * sizeof(T) % 16 != 0)
        return HPDL_ERR_UNSUPPORTED;
    return encode(map, hpdl__wg_type<T>::tma(), 2, (void *)C, dims, stride, box, ones, CU_TENSOR_MAP_INTERLEAVE_NONE,
                  CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS
               ? HPDL_OK
               : HPDL_ERR_UNSUPPORTED;
}

/* How one Hopper kernel is launched: threads per block, rows of its tile,
   cluster shape, persistent or one tile per block; slices of K and where
   their sums go (one tile per block only; 0 or 1: none). */
typedef struct hpdl__wg_launch {
    const void *kernel;
    int threads, bm, cm, cn, persistent, slices;
    void *slice_sums;
    int bn; /* columns of C a tile: 0 is 256 */
} hpdl__wg_launch;

/* The cluster shape of the wgmma_cluster rung (blocks along M x along N). */
enum { HPDL__WG_CM = 2, HPDL__WG_CN = 1 };

/* The kernel and launch shape of one Hopper rung for the operands' layouts. */
template <typename T, bool AMN, bool BMN>
static inline hpdl__wg_launch hpdl__wg_rung(hpdl_gemm_algo algo) {
    hpdl__wg_launch l = {NULL, 384, 128, 1, 1, 1, 1, NULL, 0};
    switch (algo) {
    case HPDL_GEMM_WGMMA:
        l.kernel = (const void *)hpdl__gemm_wgmma<T, AMN, BMN>;
        l.threads = 128; l.bm = 64; l.persistent = 0;
        break;
    case HPDL_GEMM_WGMMA_WS:
        l.kernel = (const void *)hpdl__gemm_wgmma_ws<T, hpdl__gemm_args<T, float>, AMN, BMN, false, 1, 1, true>;
        l.persistent = 0;
        break;
    case HPDL_GEMM_WGMMA_PERSISTENT:
        l.kernel = (const void *)hpdl__gemm_wgmma_ws<T, hpdl__gemm_args<T, float>, AMN, BMN, true, 1, 1, true>;
        break;
    case HPDL_GEMM_WGMMA_CLUSTER:
        l.kernel = (const void *)hpdl__gemm_wgmma_ws<T, hpdl__gemm_args<T, float>, AMN, BMN, true, HPDL__WG_CM, HPDL__WG_CN, true>;
        l.cm = HPDL__WG_CM; l.cn = HPDL__WG_CN;
        break;
    default: break;
    }
    return l;
}

/* The rung for the operands' layouts: f16/bf16 take all four, TF32 only
   K-major A and B (kernel NULL otherwise). */
template <typename T, int TRANSPOSABLE = hpdl__wg_type<T>::TRANSPOSABLE> struct hpdl__wg_picker {
    static hpdl__wg_launch pick(hpdl_gemm_algo algo, int amn, int bmn) {
        return amn ? (bmn ? hpdl__wg_rung<T, true, true>(algo) : hpdl__wg_rung<T, true, false>(algo))
                   : (bmn ? hpdl__wg_rung<T, false, true>(algo) : hpdl__wg_rung<T, false, false>(algo));
    }
};
template <typename T> struct hpdl__wg_picker<T, 0> {
    static hpdl__wg_launch pick(hpdl_gemm_algo algo, int amn, int bmn) {
        hpdl__wg_launch none = {NULL, 0, 0, 1, 1, 0, 1, NULL, 0};
        return amn || bmn ? none : hpdl__wg_rung<T, false, false>(algo);
    }
};

/* Where one stream's stream-K blocks leave their partial sums (hpdl__wg_sk):
   made on the stream's first stream-K launch and kept, one per device and
   stream, because GEMMs on two streams may run at the same time. */
typedef struct hpdl__wg_sk_space {
    int device, blocks;
    cudaStream_t stream;
    void *partial;
    unsigned *flag, seq;
} hpdl__wg_sk_space;

static inline hpdl__wg_sk_space *hpdl__wg_sk_space_for(int device, cudaStream_t stream, int blocks) {
    enum { SPACES = 16 }; /* streams beyond these run without stream-K */
    static hpdl__wg_sk_space spaces[SPACES];
    hpdl__wg_sk_space *sp;
    int i, sms = 0;
    for (i = 0; i < SPACES; i++)
        if (spaces[i].partial && spaces[i].device == device && spaces[i].stream == stream)
            return spaces[i].blocks >= blocks ? &spaces[i] : NULL;
    for (i = 0; i < SPACES && spaces[i].partial; i++) {}
    if (i == SPACES) return NULL;
    sp = &spaces[i];
    /* room for a block on every SM: a later launch may have more blocks */
    if (hpdl__sm_count(&sms) == HPDL_OK && sms > blocks) blocks = sms;
    if (cudaMalloc(&sp->partial, (size_t)blocks * 256 * 128 * 4) != cudaSuccess ||
        cudaMalloc((void **)&sp->flag, (size_t)blocks * 2 * sizeof(unsigned)) != cudaSuccess ||
        cudaMemsetAsync(sp->flag, 0, (size_t)blocks * 2 * sizeof(unsigned), stream) != cudaSuccess) {
        cudaFree(sp->partial);
        cudaFree(sp->flag);
        cudaGetLastError(); /* no stream-K: not an error of the caller's */
        memset(sp, 0, sizeof *sp);
        return NULL;
    }
    sp->device = device; sp->stream = stream; sp->blocks = blocks; sp->seq = 0;
    return sp;
}

/* Plans the stream-K tail of a persistent launch of `blocks` blocks over
   `units` tiles of KT k-steps: the units % blocks tiles of the last wave,
   where that saves each block 16 k-steps or more (writing and adding a
   partial sum cost ~9 k-steps' time: H100, f16 4096^3, where the tail
   would save 8 and the kernel ran 3 % slower; at 8192^3 it saves 62) and
   each block gets 8 or more; none where it cannot run (the stream is being
   captured into a graph, whose replays would all reuse one seq; no memory
   for the partial sums). */
static inline hpdl__wg_sk hpdl__wg_sk_plan(int units, int blocks, int KT, cudaStream_t stream) {
    hpdl__wg_sk sk = {NULL, NULL, 0, 0};
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    hpdl__wg_sk_space *sp;
    int device = 0, tail = blocks > 0 ? units % blocks : 0;
    if (tail == 0 || (long long)KT * (blocks - tail) < 16LL * blocks || (long long)tail * KT < 8LL * blocks) return sk;
    if (cudaStreamIsCapturing(stream, &capture) != cudaSuccess || capture != cudaStreamCaptureStatusNone ||
        cudaGetDevice(&device) != cudaSuccess || !(sp = hpdl__wg_sk_space_for(device, stream, blocks))) {
        cudaGetLastError();
        return sk;
    }
    if (++sp->seq == 0) sp->seq = 1; /* flags start at 0 */
    sk.partial = sp->partial;
    sk.flag = sp->flag;
    sk.seq = sp->seq;
    sk.tail = tail;
    return sk;
}

/* Blocks of a persistent launch of `units` tiles of KT k-steps with
   `resident` blocks resident: all of them when the tiles fill a wave or
   more. Fewer tiles (a product of few tiles and long K, 784 x 512 x 3000:
   14 tiles of 47 k-steps) are cut into p pieces each, one block a piece,
   and the stream-K tail shares them out (when hpdl__wg_sk_plan finds that
   it pays; otherwise one block a tile). A tile then takes about KT / p
   k-steps plus p - 1 partial sums of ~9 k-steps' time each: p is the
   largest with 9 p^2 <= KT (47: 2). */
static inline int hpdl__wg_sk_blocks(int units, int resident, int KT) {
    int p = 1;
    if (resident <= 0 || units >= resident) return resident > 0 ? resident : units;
    while (9 * (p + 1) * (p + 1) <= KT) p++;
    return (long long)units * p > resident ? resident : units * p;
}

/* Dynamic shared memory of a Hopper kernel launched as l: its stages, the
   epilogue buffers, their barriers and room to align them. */
HPDL_LAZY size_t hpdl__wg_smem_bytes(const hpdl__wg_launch &l) {
    const int bn = l.bn ? l.bn : 256, stages = hpdl__wg_ws_stages(bn);
    return (size_t)stages * (l.bm + bn) * 128 + (l.threads / 128 == 1 ? 1 : 2) * HPDL__WG_EPI_BYTES +
           1024 /* alignment */ + 2 * stages * 8;
}

/* Where the one-tile rung's slices of K are one cluster (l.slices > 1, no
   workspace for their sums): how many such clusters of `slices` blocks can
   be resident at once. A cluster takes SMs of one GPC, so fewer fit than
   SMs / slices; asked once per GPU (the first 16) and cluster size (one
   block an SM). */
HPDL_LAZY int hpdl__wg_slice_clusters(const hpdl__wg_launch &l, int slices) {
    enum { GPUS = 16 };
    static int known[GPUS][HPDL__WG_MAX_SLICE_CLUSTER + 1]; /* clusters + 1; 0: not asked */
    cudaLaunchConfig_t cfg = cudaLaunchConfig_t();
    cudaLaunchAttribute attr[1];
    int device = 0, clusters = 0;
    if (slices < 2 || slices > HPDL__WG_MAX_SLICE_CLUSTER || cudaGetDevice(&device) != cudaSuccess) return 0;
    if (device < GPUS && known[device][slices]) return known[device][slices] - 1;
    cfg.gridDim = dim3(1u, (unsigned)slices);
    cfg.blockDim = dim3((unsigned)l.threads);
    cfg.dynamicSmemBytes = hpdl__wg_smem_bytes(l);
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = attr[0].val.clusterDim.z = 1;
    attr[0].val.clusterDim.y = (unsigned)slices;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    if (cudaFuncSetAttribute(l.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)cfg.dynamicSmemBytes) != cudaSuccess ||
        cudaOccupancyMaxActiveClusters(&clusters, l.kernel, &cfg) != cudaSuccess) {
        cudaGetLastError();
        clusters = 0;
    }
    if (device < GPUS) known[device][slices] = clusters + 1;
    return clusters;
}

/* Launches a Hopper kernel on the M x N tiles of g (BN = 256): one block
   (or cluster) per tile, or, persistent, as many as can be resident, with
   a stream-K tail over the k_steps k-steps of each tile where k_steps > 0
   (one block per tile unit only); with `spread`, fewer tiles than blocks
   are shared out over more blocks (hpdl__wg_sk_blocks). map_c: C for the
   TMA epilogue, or NULL. */
template <typename G>
static inline hpdl_status hpdl__wg_run(const hpdl__wg_launch &l, const CUtensorMap &map_a, const CUtensorMap &map_b,
                                       const CUtensorMap *map_c, const G &g, int k_steps, int spread,
                                       cudaStream_t stream) {
    const int cs = l.cm * l.cn;
    const int slice_cluster = l.slices > 1 && !l.persistent && !l.slice_sums; /* the slices add through the cluster */
    const size_t smem = hpdl__wg_smem_bytes(l);
    const int bn = l.bn ? l.bn : 256;
    int units = ((g.M + l.bm - 1) / l.bm + l.cm - 1) / l.cm * (((g.N + bn - 1) / bn + l.cn - 1) / l.cn);
    int resident = 0;
    cudaLaunchConfig_t cfg = cudaLaunchConfig_t();
    cudaLaunchAttribute attr[1];
    CUtensorMap no_map = CUtensorMap();
    int tma_c = map_c != NULL;
    hpdl__wg_sk sk = {NULL, NULL, 0, 0};
    void *args[6];
    HPDL_CUDA_TRY(cudaFuncSetAttribute(l.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    cfg.gridDim = dim3((unsigned)(units * cs), (unsigned)(l.slices > 1 && !l.persistent ? l.slices : 1));
    cfg.blockDim = dim3((unsigned)l.threads);
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = (unsigned)cs;
    attr[0].val.clusterDim.y = slice_cluster ? (unsigned)l.slices : 1u;
    attr[0].val.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = cs > 1 || slice_cluster ? 1 : 0;
    if (l.persistent) { /* clusters need SMs of one GPC: ask how many fit, not SMs / cs */
        if (cs > 1) {
            HPDL_CUDA_TRY(cudaOccupancyMaxActiveClusters(&resident, l.kernel, &cfg));
        } else if (hpdl__sm_count(&resident) != HPDL_OK) {
            return HPDL_ERR_CUDA;
        }
        if (resident > 0 && resident < units) cfg.gridDim = dim3((unsigned)(resident * cs));
        if (k_steps > 0 && cs == 1) {
            int blocks = spread ? hpdl__wg_sk_blocks(units, resident, k_steps) : (int)cfg.gridDim.x;
            sk = hpdl__wg_sk_plan(units, blocks, k_steps, stream);
            if (sk.tail > 0) cfg.gridDim = dim3((unsigned)blocks);
        }
    }
    args[0] = (void *)&map_a; args[1] = (void *)&map_b; args[2] = (void *)(map_c ? map_c : &no_map);
    if (l.slices > 1 && !l.persistent) sk.partial = l.slice_sums;
    args[3] = (void *)&g; args[4] = (void *)&tma_c; args[5] = (void *)&sk;
    HPDL_CUDA_TRY(cudaLaunchKernelExC(&cfg, l.kernel, args));
    return HPDL_OK;
}

/* Runs the Hopper kernel of l, or says HPDL_ERR_UNSUPPORTED (see the top of
   this part). */
template <typename T>
static inline hpdl_status hpdl__gemm_run_wgmma(const hpdl__wg_launch &l, const hpdl__gemm_args<T, float> &g,
                                               cudaStream_t stream) {
    enum { BK = 128 / sizeof(T) }; /* K per stage: 128 bytes */
    CUtensorMap map_a, map_b, map_c;
    int tma_c;
    hpdl_status s;
    if (!l.kernel || g.K == 0 || !hpdl__wg_available() || !hpdl__gemm_aligned(g.a.p, g.a.ld, 16 / sizeof(T), sizeof(T)) ||
        !hpdl__gemm_aligned(g.b.p, g.b.ld, 16 / sizeof(T), sizeof(T)))
        return HPDL_ERR_UNSUPPORTED;
    if ((s = hpdl__wg_map(&map_a, g.a, g.M, g.K)) != HPDL_OK || (s = hpdl__wg_map(&map_b, g.b, g.N, g.K)) != HPDL_OK)
        return s;
    /* the TMA epilogue writes f16/bf16 and reads no C (beta = 0); the ReLU
       of hpdl__gemm_bias_act is applied there, not in hpdl__wg_store */
    tma_c = g.beta == 0.0f && hpdl__wg_map_c(&map_c, g.C, g.M, g.N, g.ldc) == HPDL_OK;
    if ((g.bias || g.relu) && !tma_c) return HPDL_ERR_UNSUPPORTED;
    return hpdl__wg_run(l, map_a, map_b, tma_c ? &map_c : NULL, g, (g.K + BK - 1) / BK, 1, stream);
}

/* How many slices of K the one-tile-a-block Hopper rung (64 x 256 tiles)
   splits an M x N x K product into on `sms` SMs (k-steps `depth` deep: 64
   for 16-bit elements): where its tiles leave SMs idle and the split pays
   (HPDL__WG_SPLIT_STEP_BYTES), about a block per SM, each slice at least
   HPDL__WG_SPLIT_MIN_STEPS k-steps, every slice's f32 tiles within the
   splitk workspace; 1: none. A 64 x 256 x 64 k-step
   is ~1000 cycles of one SM's tensor cores, so a product of few tiles
   takes ~1 us a k-step however many SMs idle (32 x 512 x 784: 2 blocks of
   13 k-steps, 12.5 us on an H200, cuBLAS 6.7). */
#ifndef HPDL__WG_SPLIT_MIN_STEPS /* experiments build other splits */
#define HPDL__WG_SPLIT_MIN_STEPS 2
#endif
/* The split pays where the k-steps it saves a block outlast adding the
   slices' f32 tiles in the second kernel: in one k-step's time (~0.65 us)
   that kernel added ~0.75 MB, and it costs ~3 k-steps to start (one H200,
   f16: 32 x 512 x 784, 5 slices, 12.5 -> 10.9 us; 512 x 2048 x 784, 2
   slices of 64 tiles, 13.2 -> 20.1 us; 784 x 512 x 512, 4 slices of 26
   tiles, 10.0 -> 13.8 us). */
#define HPDL__WG_SPLIT_STEP_BYTES ((int64_t)768 << 10)
HPDL_LAZY int hpdl__wg_split_slices(int M, int N, int K, int depth, int sms) {
    const int64_t tiles = (int64_t)((M + 63) / 64) * ((N + 255) / 256), steps = (K + depth - 1) / depth;
    int64_t slices = sms / tiles, chunk;
    if (slices > steps / HPDL__WG_SPLIT_MIN_STEPS) slices = steps / HPDL__WG_SPLIT_MIN_STEPS;
    while (slices > 1 && slices * tiles * 64 * 256 * 4 > (int64_t)HPDL__SPLITK_WS_BYTES) slices--;
    if (slices <= 1) return 1;
    chunk = (steps + slices - 1) / slices;
    slices = (steps + chunk - 1) / chunk; /* none empty */
    if ((steps - chunk - 3) * HPDL__WG_SPLIT_STEP_BYTES <= slices * tiles * 64 * 256 * 4) return 1;
    return (int)slices;
}

/* C = alpha (sum of the slices' tiles, in slice order) + beta C, a thread
   per 4 outputs of a row: the split's second step (hpdl__wg_put_slice's
   layout). Each slice's 4 sums in one 16-byte load, C in one vector access
   where it allows (a thread per output, with a 64-bit division each, took
   6.8 us for 784 x 512 from 5 slices on an H200). */
template <typename T, bool POST = false>
__global__ void hpdl__wg_add_slices_kernel(hpdl__gemm_args<T, float> g, const float *sums, int slices) {
    const int quads = (g.N + 3) / 4, tiles_n = (g.N + 255) / 256;
    const int64_t count = (int64_t)g.M * quads;
    int64_t i;
    hpdl__wait_for_previous(); /* the slices' sums are written */
    for (i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += (int64_t)gridDim.x * blockDim.x) {
        const int m = (int)(i / quads), n = (int)(i % quads) * 4;
        const float *p = sums + (size_t)(m / 64 * tiles_n + n / 256) * slices * (64 * 256) + m % 64 * 256 + n % 256;
        float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        int s;
#pragma unroll 4
        for (s = 0; s < slices; s++) {
            const float4 q = __ldcg((const float4 *)(p + (size_t)s * (64 * 256)));
            v[0] += q.x;
            v[1] += q.y;
            v[2] += q.z;
            v[3] += q.w;
        }
        hpdl__gemm_out4<POST>(g, m, n, v);
    }
}

/* The thin kernel takes products of at most this many rows (M) in the
   one-tile-a-block Hopper rung, and more where A is MN-major, its blocks
   all run at once and its stages hold all of K (one H200, f16, A^T B with
   784 rows: 0.68 -> 0.88 of cuBLAS at K = 512, and 0.58 -> 0.54 at K =
   3000, where the split spreads K over more SMs). */
#ifndef HPDL__WG_THIN_MAX_ROWS /* experiments build without it (0) */
#define HPDL__WG_THIN_MAX_ROWS 512
#endif

/* Rows of C a thin block takes: the fewest (8 to 128; A MN-major: 64 or
   128) whose blocks all run at once on `sms` SMs, else 128. */
HPDL_LAZY int hpdl__wg_thin_rows(int M, int N, int amn, int sms) {
    const int64_t strips = (N + 63) / 64;
    int bn;
    for (bn = amn ? 64 : 8; bn < 128; bn *= 2)
        if (strips * ((M + bn - 1) / bn) <= sms) return bn;
    return 128;
}

/* Whether the thin kernel takes an M x N x K product of 16-bit elements
   (A MN-major: amn). */
HPDL_LAZY int hpdl__wg_thin_takes(int M, int N, int K, int amn, int sms) {
    const int rows = hpdl__wg_thin_rows(M, N, amn, sms);
    const int stages = rows == 64 ? (int)hpdl__wg_thin_shape<64>::STAGES : (int)hpdl__wg_thin_shape<128>::STAGES;
    return M <= HPDL__WG_THIN_MAX_ROWS ||
           (amn && (int64_t)((N + 63) / 64) * ((M + rows - 1) / rows) <= sms && (K + 63) / 64 <= stages);
}

template <typename T, bool BMN, bool AMN, int BN, int WGS, bool POST>
static inline hpdl_status hpdl__wg_thin_run(const CUtensorMap &map_b, const CUtensorMap &map_a,
                                            const hpdl__gemm_args<T, float> &g, dim3 grid, int stages, size_t smem,
                                            cudaStream_t stream) {
    HPDL_CUDA_TRY(cudaFuncSetAttribute(hpdl__gemm_wgmma_thin<T, BMN, AMN, BN, WGS, POST>,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    hpdl__gemm_wgmma_thin<T, BMN, AMN, BN, WGS, POST><<<grid, 128 * WGS, smem, stream>>>(map_b, map_a, g, stages);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}
template <typename T, bool BMN, bool AMN, int BN, bool POST>
static inline hpdl_status hpdl__wg_thin_launch(const CUtensorMap &map_b, const CUtensorMap &map_a,
                                               const hpdl__gemm_args<T, float> &g, cudaStream_t stream) {
    typedef hpdl__wg_thin_shape<BN> SH;
    const int bk = 128 / (int)sizeof(T), steps = (g.K + bk - 1) / bk, stages = steps < SH::STAGES ? steps : SH::STAGES;
    const size_t smem = 1024 /* alignment */ + (size_t)SH::body(stages) + (size_t)stages * 8 /* the barriers */;
    dim3 grid;
    hpdl_status s = hpdl__gemm_grid(g.N, 64, g.M, BN, &grid);
    if (s != HPDL_OK) return s;
    if (steps >= 4) return hpdl__wg_thin_run<T, BMN, AMN, BN, SH::WGS, POST>(map_b, map_a, g, grid, stages, smem, stream);
    return hpdl__wg_thin_run<T, BMN, AMN, BN, 1, POST>(map_b, map_a, g, grid, stages, smem, stream);
}

/* Runs the thin kernel on g where it applies (f16/bf16,
   hpdl__wg_thin_takes, TMA-aligned operands); HPDL_ERR_UNSUPPORTED
   elsewhere. POST: the kernel built for hpdl__gemm_bias_act, for its
   layouts only (A K-major, B MN-major). */
template <typename T, int TRANSPOSABLE = hpdl__wg_type<T>::TRANSPOSABLE> struct hpdl__wg_thin {
    template <bool POST = false> static hpdl_status run(const hpdl__gemm_args<T, float> &g, int sms, cudaStream_t stream) {
        const int amn = !g.a.kcontig, rows = hpdl__wg_thin_rows(g.M, g.N, amn, sms);
        CUtensorMap map_b, map_a;
        hpdl_status s;
        if (!hpdl__wg_thin_takes(g.M, g.N, g.K, amn, sms) || g.K == 0 || !hpdl__wg_available() ||
            !hpdl__gemm_aligned(g.a.p, g.a.ld, 16 / sizeof(T), sizeof(T)) ||
            !hpdl__gemm_aligned(g.b.p, g.b.ld, 16 / sizeof(T), sizeof(T)))
            return HPDL_ERR_UNSUPPORTED;
        if ((s = hpdl__wg_map(&map_b, g.b, g.N, g.K)) != HPDL_OK ||
            (s = hpdl__wg_map(&map_a, g.a, g.M, g.K, rows)) != HPDL_OK)
            return s;
        if constexpr (POST)
            return amn || g.b.kcontig ? HPDL_ERR_UNSUPPORTED : k_major<true, true>(map_b, map_a, g, rows, stream);
        if (amn)
            return g.b.kcontig ? mn_major<false>(map_b, map_a, g, rows, stream)
                               : mn_major<true>(map_b, map_a, g, rows, stream);
        return g.b.kcontig ? k_major<false, false>(map_b, map_a, g, rows, stream)
                           : k_major<true, false>(map_b, map_a, g, rows, stream);
    }
    template <bool BMN, bool POST> /* A's K contiguous: any rows */
    static hpdl_status k_major(const CUtensorMap &map_b, const CUtensorMap &map_a, const hpdl__gemm_args<T, float> &g,
                               int rows, cudaStream_t stream) {
        switch (rows) {
        case 8: return hpdl__wg_thin_launch<T, BMN, false, 8, POST>(map_b, map_a, g, stream);
        case 16: return hpdl__wg_thin_launch<T, BMN, false, 16, POST>(map_b, map_a, g, stream);
        case 32: return hpdl__wg_thin_launch<T, BMN, false, 32, POST>(map_b, map_a, g, stream);
        case 64: return hpdl__wg_thin_launch<T, BMN, false, 64, POST>(map_b, map_a, g, stream);
        default: return hpdl__wg_thin_launch<T, BMN, false, 128, POST>(map_b, map_a, g, stream);
        }
    }
    template <bool BMN> /* A MN-major: 64 or 128 rows */
    static hpdl_status mn_major(const CUtensorMap &map_b, const CUtensorMap &map_a, const hpdl__gemm_args<T, float> &g,
                                int rows, cudaStream_t stream) {
        return rows == 64 ? hpdl__wg_thin_launch<T, BMN, true, 64, false>(map_b, map_a, g, stream)
                          : hpdl__wg_thin_launch<T, BMN, true, 128, false>(map_b, map_a, g, stream);
    }
};
template <typename T> struct hpdl__wg_thin<T, 0> { /* TF32 */
    template <bool POST = false> static hpdl_status run(const hpdl__gemm_args<T, float> &, int, cudaStream_t) {
        return HPDL_ERR_UNSUPPORTED;
    }
};

/* The slices the one-tile rung runs as clusters for a product it splits
   into `slices`: the most, up to `slices` and 8, whose clusters (one a tile)
   are all resident at once, if that is at most one slice fewer; 0: none
   (the second kernel adds them). On an H100, f16 784 x 512 x 3000 in 4
   slices as clusters took 16.4-16.5 us, in 5 slices and the second kernel
   17.2-17.4 (cuBLAS 11.7-12.3; 2026-11-28). */
#ifndef HPDL__WG_SLICE_CLUSTERS /* experiments build without them (0) */
#define HPDL__WG_SLICE_CLUSTERS 1
#endif
HPDL_LAZY int hpdl__wg_cluster_slices(const hpdl__wg_launch &l, int M, int N, int slices) {
    const int tiles = ((M + 63) / 64) * ((N + 255) / 256);
    int c = !HPDL__WG_SLICE_CLUSTERS ? 0 : slices < HPDL__WG_MAX_SLICE_CLUSTER ? slices : HPDL__WG_MAX_SLICE_CLUSTER;
    while (c > 1 && hpdl__wg_slice_clusters(l, c) < tiles) c--;
    return c >= 2 && c + 1 >= slices ? c : 0;
}

/* The one-tile-a-block rung l: the thin kernel where it applies, else K
   split where that pays (hpdl__wg_split_slices). The slices of a tile run
   as one cluster and add their sums through shared memory where all the
   tiles' clusters are resident at once with at most one slice fewer
   (hpdl__wg_cluster_slices; 784 x 512 x 3000 on 132 SMs: 26 tiles in 4
   slices rather than 5). Otherwise the kernel leaves each slice's f32 sums
   in the stream's splitk workspace, then hpdl__wg_add_slices_kernel,
   launched to start while the first kernel finishes (hpdl__launch_after),
   adds them. Both add in slice order with alpha and beta (the same bits
   every run). One slice, or no workspace inside a graph capture: the rung
   as it is. */
template <typename T, bool POST = false>
static inline hpdl_status hpdl__gemm_wgmma_split(hpdl__wg_launch l, const hpdl__gemm_args<T, float> &g,
                                                 cudaStream_t stream) {
    hpdl__splitk_space *sp;
    int sms = 0, slices;
    hpdl_status s = hpdl__sm_count(&sms);
    if (s != HPDL_OK) return s;
    s = hpdl__wg_thin<T>::template run<POST>(g, sms, stream);
    if (s != HPDL_ERR_UNSUPPORTED) return s;
    slices = hpdl__wg_split_slices(g.M, g.N, g.K, (int)(128 / sizeof(T)), sms);
    l.slices = hpdl__wg_cluster_slices(l, g.M, g.N, slices);
    if (l.slices > 1) return hpdl__gemm_run_wgmma(l, g, stream); /* no slice_sums: the clusters add them */
    l.slices = slices;
    sp = slices > 1 ? hpdl__splitk_space_for(stream) : NULL;
    if (!sp) { /* one slice, or no workspace (a graph capture before any split ran): the rung as it is */
        l.slices = 1;
        return hpdl__gemm_run_wgmma(l, g, stream);
    }
    l.slice_sums = sp->ws;
    s = hpdl__gemm_run_wgmma(l, g, stream);
    if (s != HPDL_OK) return s;
    return hpdl__launch_after(hpdl__wg_add_slices_kernel<T, POST>, hpdl__grid_for((int64_t)g.M * ((g.N + 3) / 4), 256), 256,
                              stream, g, (const float *)sp->ws, l.slices);
}

/* Whether the warp-specialized rung takes 128 x 192 tiles for an M x N
   product on `sms` SMs: where they fill one to four waves, the last at
   least 97 % full, and its 128 x 256 tiles leave the last wave under 90 %
   full. (One H200, f16 3000 x 2048 x 784: 264 tiles of 192 in two waves,
   24.9 us; 192 tiles of 256 on the persistent rung 27.0, cuBLAS 22.1.) */
HPDL_LAZY int hpdl__wg_ws_narrow(int M, int N, int sms) {
    const int64_t rows = (M + 127) / 128, t192 = rows * ((N + 191) / 192), t256 = rows * ((N + 255) / 256);
    const int64_t w192 = (t192 + sms - 1) / sms;
    return w192 >= 1 && w192 <= 4 && hpdl__wave_fill(t192, sms) >= 0.97 && hpdl__wave_fill(t256, sms) < 0.9;
}

/* The warp-specialized rung with 128 x 192 tiles: f16/bf16 with A K-major
   (kernel NULL elsewhere: no 192-wide wgmma for TF32, and the MN-major A
   layouts were not measured). */
template <typename T, bool BMN, int NARROW = sizeof(T) == 2> struct hpdl__wg_narrow {
    static hpdl__wg_launch launch() {
        hpdl__wg_launch l = {(const void *)hpdl__gemm_wgmma_ws<T, hpdl__gemm_args<T, float>, false, BMN, false, 1, 1, true, 192>,
                             384, 128, 1, 1, 0, 1, NULL, 192};
        return l;
    }
};
template <typename T, bool BMN> struct hpdl__wg_narrow<T, BMN, 0> {
    static hpdl__wg_launch launch() {
        hpdl__wg_launch none = {NULL, 0, 0, 1, 1, 0, 1, NULL, 0};
        return none;
    }
};

/* Runs one Hopper rung for the operands' layouts; the one-tile-a-block rung
   splits K where its tiles leave SMs idle, the warp-specialized one takes
   narrower tiles where they fill whole waves (hpdl__wg_ws_narrow). */
template <typename T>
static inline hpdl_status hpdl__gemm_launch_wgmma(hpdl_gemm_algo algo, const hpdl__gemm_args<T, float> &g,
                                                  cudaStream_t stream) {
    const hpdl__wg_launch l = hpdl__wg_picker<T>::pick(algo, !g.a.kcontig, !g.b.kcontig);
    int sms = 0;
    if (algo == HPDL_GEMM_WGMMA_WS && g.a.kcontig && hpdl__sm_count(&sms) == HPDL_OK &&
        hpdl__wg_ws_narrow(g.M, g.N, sms)) {
        const hpdl__wg_launch narrow = g.b.kcontig ? hpdl__wg_narrow<T, false>::launch() : hpdl__wg_narrow<T, true>::launch();
        if (narrow.kernel) return hpdl__gemm_run_wgmma(narrow, g, stream);
    }
    return algo == HPDL_GEMM_WGMMA ? hpdl__gemm_wgmma_split(l, g, stream) : hpdl__gemm_run_wgmma(l, g, stream);
}

HPDL_LAZY hpdl_status hpdl__gemm_launch_wgmma(hpdl_gemm_algo algo, const hpdl__gemm_args<double, double> &g,
                                                  cudaStream_t stream) {
    (void)algo; (void)g; (void)stream;
    return HPDL_ERR_UNSUPPORTED; /* wgmma has no f64 */
}

/* The Hopper rung AUTO picks for f16 and bf16: the persistent one, whose
   stream-K tail the cluster rung lacks (H100, 2026-11-24, each timed in
   turns with cuBLAS: 2048^3 0.99 against 0.94 for clusters, 4096^3
   0.99 both, 8192^3 1.04 against 1.01-1.02). */
enum { HPDL__GEMM_HOPPER_DEFAULT = HPDL_GEMM_WGMMA_PERSISTENT };

/* AUTO's Hopper rung for an M x N x K product of 16-bit elements on `sms`
   SMs: the one-tile-a-block rung of 64 x 256 tiles (twice as many blocks)
   where the persistent rung's 128 x 256 tiles would fill under half of the
   SMs and K is too short for its stream-K pieces (hpdl__wg_sk_blocks:
   fewer than 36 k-steps of 64), or its own blocks fill 3/4 of the SMs,
   or it splits K; else the persistent one. One H200, f16, seven products
   of 1 to 56 such tiles (32 x 512 x 784 to 784 x 2048 x 128): 0.54-0.94
   of cuBLAS against 0.49-0.79; with a k-step's wgmmas in flight (589849a)
   784 x 2048 x 3000 (104 blocks of 47 k-steps) 0.92 against 0.80. With A
   K-major (a_kmajor), the warp-specialized rung where its 128 x 192 tiles
   fill whole waves (hpdl__wg_ws_narrow). */
HPDL_LAZY int hpdl__gemm_auto_hopper(int M, int N, int K, int a_kmajor, int sms) {
    const int64_t tiles = (int64_t)((M + 127) / 128) * ((N + 255) / 256), k_steps = (K + 63) / 64;
    const int64_t own_blocks = (int64_t)((M + 63) / 64) * ((N + 255) / 256);
    if (tiles * 2 < sms &&
        (k_steps < 36 || 4 * own_blocks >= 3 * (int64_t)sms || hpdl__wg_split_slices(M, N, K, 64, sms) > 1))
        return (int)HPDL_GEMM_WGMMA;
    return a_kmajor && hpdl__wg_ws_narrow(M, N, sms) ? (int)HPDL_GEMM_WGMMA_WS : (int)HPDL__GEMM_HOPPER_DEFAULT;
}

/* Validates, then runs one rung (AUTO: for f32 the mma rung where
   hpdl__gemm_auto_tf32x3 says, then splitk for skinny products, then for
   f16/bf16 the Hopper rung where it can run, then the mma.sync rung where
   this binary and GPU can run it, else warptile). */
template <typename T, typename ACC>
static inline hpdl_status hpdl__cuda_gemm(hpdl_gemm_algo algo, hpdl_transpose ta, hpdl_transpose tb, int M, int N, int K,
                                          ACC alpha, const T *A, int lda, const T *B, int ldb, ACC beta, T *C, int ldc,
                                          cudaStream_t stream) {
    hpdl_status s = hpdl__gemm_check(ta, tb, M, N, K, A, lda, B, ldb, C, ldc); /* hpdl.h's CPU GEMM check */
    int tensor = algo == HPDL_GEMM_MMA || (algo == HPDL_GEMM_AUTO && sizeof(T) != sizeof(float));
    int hopper = algo >= HPDL_GEMM_WGMMA && algo <= HPDL_GEMM_WGMMA_CLUSTER;
    if (s != HPDL_OK || (int)algo < (int)HPDL_GEMM_AUTO || (int)algo > (int)HPDL_GEMM_CUBLAS) return HPDL_ERR_INVALID;
    /* A rung the type lacks is unsupported whatever the shape, an empty one
       too: f64 has no Hopper rung. */
    if (hopper && sizeof(T) == sizeof(double)) return HPDL_ERR_UNSUPPORTED;
    if (M == 0 || N == 0) return HPDL_OK;
    if (algo == HPDL_GEMM_CUBLAS) return hpdl__gemm_cublas(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, stream);
    if (algo == HPDL_GEMM_AUTO && sizeof(T) == sizeof(float)) {
        int sms = 0;
        if (hpdl__sm_count(&sms) != HPDL_OK) return HPDL_ERR_CUDA;
        tensor = hpdl__gemm_auto_tf32x3(M, N, K, sms); /* f32's mma comes before splitk */
        if (!tensor && hpdl__gemm_auto_splitk(M, N, K, (int)sizeof(T))) algo = HPDL_GEMM_SPLITK;
    } else if (algo == HPDL_GEMM_AUTO && hpdl__gemm_auto_splitk(M, N, K, (int)sizeof(T))) {
        algo = HPDL_GEMM_SPLITK;
    }
    if (algo == HPDL_GEMM_SPLITK)
        return hpdl__gemm_launch_splitk(
            hpdl__gemm_make_args(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, (int)(16 / sizeof(T))), stream);
    if (hopper || (algo == HPDL_GEMM_AUTO && sizeof(T) == 2)) {
        int sms = 0;
        if (!hopper && hpdl__sm_count(&sms) != HPDL_OK) return HPDL_ERR_CUDA;
        s = hpdl__gemm_launch_wgmma((hpdl_gemm_algo)(hopper ? (int)algo : hpdl__gemm_auto_hopper(M, N, K, ta == HPDL_NO_TRANS, sms)),
                                    hpdl__gemm_make_args(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc,
                                                         (int)(16 / sizeof(T))), stream);
        if (s != HPDL_ERR_UNSUPPORTED || hopper) return s;
    }
    if (tensor) {
        s = hpdl__gemm_launch_mma(hpdl__gemm_make_args(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc,
                                                       (int)(16 / sizeof(T))), stream);
        if (s != HPDL_ERR_UNSUPPORTED || algo == HPDL_GEMM_MMA) return s;
    }
    return hpdl__gemm_launch_simt(algo == HPDL_GEMM_AUTO ? HPDL_GEMM_WARPTILE : algo,
                                  hpdl__gemm_make_args(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, 4), stream);
}

/* The type-generic front end (C++): A's element type picks the kernels, for
   float, double, hpdl_f16 or __half, hpdl_bf16 or __nv_bfloat16; alpha and
   beta are in the type sums are carried in (double for double, else float).
       hpdl_cuda_gemm(HPDL_NO_TRANS, HPDL_NO_TRANS, M, N, K, 1.0f, dA, K, dB, N, 0.0f, dC, N);
   Same checks and results as the typed functions below, which call it. */
template <typename T>
static inline hpdl_status hpdl_cuda_gemm_algo(hpdl_gemm_algo algo, hpdl_transpose ta, hpdl_transpose tb, int M, int N,
                                              int K, typename hpdl__acc<T>::type alpha, const T *A, int lda, const T *B,
                                              int ldb, typename hpdl__acc<T>::type beta, T *C, int ldc,
                                              cudaStream_t stream = 0) {
    typedef typename hpdl__dev<T>::type D;
    static_assert(hpdl__is_float_type<D>::value, "hpdl_cuda_gemm: float, double, f16 or bf16 elements");
    return hpdl__cuda_gemm<D, typename hpdl__acc<T>::type>(algo, ta, tb, M, N, K, alpha, (const D *)A, lda,
                                                           (const D *)B, ldb, beta, (D *)C, ldc, stream);
}

/* hpdl_cuda_gemm_algo with HPDL_GEMM_AUTO: the rung AUTO picks for the type and the shape. */
template <typename T>
static inline hpdl_status hpdl_cuda_gemm(hpdl_transpose ta, hpdl_transpose tb, int M, int N, int K,
                                         typename hpdl__acc<T>::type alpha, const T *A, int lda, const T *B, int ldb,
                                         typename hpdl__acc<T>::type beta, T *C, int ldc, cudaStream_t stream = 0) {
    return hpdl_cuda_gemm_algo(HPDL_GEMM_AUTO, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, stream);
}

/* The typed launchers, for C-style callers: hpdl_cuda_gemm_algo_<t> and
   hpdl_cuda_gemm_<t>. T: the hpdl storage type; ACC_T: alpha and beta's. */
#define HPDL_DEFINE_CUDA_GEMM(SUFFIX, T, ACC_T)                                                                      \
    HPDL_CUDA_API hpdl_status hpdl_cuda_gemm_algo_##SUFFIX(hpdl_gemm_algo algo, hpdl_transpose ta, hpdl_transpose tb,  \
                                                           int M, int N, int K, ACC_T alpha, const T *A, int lda,     \
                                                           const T *B, int ldb, ACC_T beta, T *C, int ldc,            \
                                                           cudaStream_t stream) {                                     \
        return hpdl_cuda_gemm_algo(algo, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, stream);              \
    }                                                                                                                 \
    HPDL_CUDA_API hpdl_status hpdl_cuda_gemm_##SUFFIX(hpdl_transpose ta, hpdl_transpose tb, int M, int N, int K,       \
                                                      ACC_T alpha, const T *A, int lda, const T *B, int ldb,          \
                                                      ACC_T beta, T *C, int ldc, cudaStream_t stream) {               \
        return hpdl_cuda_gemm_algo(HPDL_GEMM_AUTO, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, stream);    \
    }

HPDL_DEFINE_CUDA_GEMM(f32, float, float)
/* hpdl_cuda_gemm_algo_f64 hpdl_cuda_gemm_f64 */
HPDL_DEFINE_CUDA_GEMM(f64, double, double)
/* hpdl_cuda_gemm_algo_f16 hpdl_cuda_gemm_f16 */
HPDL_DEFINE_CUDA_GEMM(f16, hpdl_f16, float)
/* hpdl_cuda_gemm_algo_bf16 hpdl_cuda_gemm_bf16 */
HPDL_DEFINE_CUDA_GEMM(bf16, hpdl_bf16, float)

/* ------------------------------------------------------------------------ */
/* Convolution                                                               */
/* ------------------------------------------------------------------------ */
/* conv2d forward, backward-data and backward-filter for f32, f64, f16 and
   bf16 (sums in f32, f64 for f64), NCHW or NHWC, any kernel size, stride,
   padding, dilation and groups. CPU twins: hpdl_conv2d_forward_<t>,
   hpdl_conv2d_backward_data_<t>, hpdl_conv2d_backward_filter_<t> in hpdl.h,
   which also define the tensor and filter layouts and the arguments' rules;
   test: tests/gpu_conv.cu.

   The ladder (hpdl_conv_algo), each rung a kernel:
     DIRECT         one thread per output element, the CPU twin's sum as written
     IMPLICIT_GEMM  the pass seen as a GEMM whose operands are gathered from the
                    tensors as they are loaded (no im2col buffer), tiled through
                    shared memory on CUDA cores; one kernel for the three passes:
         forward          Y[pixel, k]  = sum over (c,r,s) of X~[pixel, (c,r,s)] * W[k, (c,r,s)]
         backward-data    dX[pixel, c] = sum over (k,r,s) of dY~[pixel, (k,r,s)] * W[k, c, r, s]
         backward-filter  dW[k, (c,r,s)] = sum over pixels of dY[pixel, k] * X~[pixel, (c,r,s)]
       (X~ and dY~ read the element a tap reaches, or zero in the padding or
       between strides), one GEMM per group (blockIdx.z).
     MMA            f16/bf16 with x and y in NHWC: the three GEMMs on tensor
                    cores (mma.sync m16n8k16, f32 sums), the gathered operand
                    by cp.async 16 bytes along the channels where
                    channels/groups % 8 == 0, element by element otherwise
                    (forward and backward-data: any C, the 3-channel stem too);
                    backward-filter split along the pixels, the blocks adding
                    into an f32 copy of dW (needs C/groups % 8 == 0);
                    HPDL_ERR_UNSUPPORTED for other types, layouts and channel counts
     WGMMA          f16/bf16 in NHWC on Hopper (sm_90a): the implicit GEMM with
                    its operands brought by the tensor-copy engine (a 4-D box
                    of input pixels per filter tap, zeros outside the image)
                    into wgmma, warp-specialised; forward and stride-1
                    backward-data, one group, channels multiples of 8
     FEW_MMA        f16/bf16 NHWC forward and backward-filter with at most 8
                    input channels and one group (the stems): persistent
                    blocks stage each tile's input patch in shared memory and
                    read mma.sync's operand from it, (r, s, c) flattened and
                    padded to 16 (147 -> 160 for the 7x7 stem)
     CUDNN          cuDNN's fastest algorithm for the shape, found once by
                    cudnnFind*AlgorithmEx and remembered (tensor-op math for
                    f16/bf16; f32 without TF32); built with HPDL_HAVE_CUDNN
                    (-lcudnn), else HPDL_ERR_UNSUPPORTED
     WINOGRAD       f32 3x3 at stride 1 (one group, no dilation), all three
                    passes: Winograd's F(4x4, 3x3), its 36 products one batch
                    of the warptile GEMM; workspace from the stream's pool
                    (the rung's section says how much)
     IM2COL         f32 and f64 with x and y in NHWC, one group: the
                    gathered operand written out (at most 256 MB of it at a
                    time, from the stream's pool), the pass as
                    hpdl_cuda_gemm's AUTO
   AUTO takes the few-channel CUDA-core kernels where the GEMM is narrow
   (hpdl__conv_few_channels: under 32 columns), then FEW_MMA, WINOGRAD,
   WGMMA, MMA, IM2COL where they apply, else
   IMPLICIT_GEMM, or DIRECT for a GEMM too large for its grid
   (HPDL_ERR_UNSUPPORTED from IMPLICIT_GEMM itself).
   The rungs index with the CPU twin's helpers (hpdl_tensor4_offset,
   hpdl__tap_input, hpdl__tap_output). */

/* The convolution rungs described above; hpdl_conv_algo_name gives their names. */
typedef enum hpdl_conv_algo {
    HPDL_CONV_AUTO = 0,
    HPDL_CONV_DIRECT,
    HPDL_CONV_IMPLICIT_GEMM,
    HPDL_CONV_MMA,   /* f16/bf16, NHWC: tensor cores; HPDL_ERR_UNSUPPORTED elsewhere */
    HPDL_CONV_WGMMA, /* f16/bf16, NHWC, Hopper: TMA + wgmma (forward, stride-1 backward-data) */
    HPDL_CONV_FEW_MMA, /* f16/bf16, NHWC, at most 8 input channels (the stems): forward, backward-filter */
    HPDL_CONV_CUDNN, /* the vendor library (HPDL_HAVE_CUDNN; else HPDL_ERR_UNSUPPORTED) */
    HPDL_CONV_WINOGRAD, /* f32 3x3 stride 1: Winograd F(4x4, 3x3) (workspace from the stream's pool) */
    HPDL_CONV_IM2COL    /* f32/f64 NHWC, one group: explicit columns and hpdl_cuda_gemm (workspace from the stream's pool) */
} hpdl_conv_algo;

/* The rung's short name ("auto", "direct", "implicit-gemm", ...), a static string; "?" for any
   other value. */
HPDL_CUDA_API const char *hpdl_conv_algo_name(hpdl_conv_algo a) {
    switch (a) {
    case HPDL_CONV_AUTO: return "auto";
    case HPDL_CONV_DIRECT: return "direct";
    case HPDL_CONV_IMPLICIT_GEMM: return "implicit-gemm";
    case HPDL_CONV_MMA: return "mma";
    case HPDL_CONV_WGMMA: return "wgmma";
    case HPDL_CONV_FEW_MMA: return "few-mma";
    case HPDL_CONV_CUDNN: return "cudnn";
    case HPDL_CONV_WINOGRAD: return "winograd";
    case HPDL_CONV_IM2COL: return "im2col";
    }
    return "?";
}

/* Coordinates (n, c, h, w) of the element at offset i of a tensor. */
static __device__ __forceinline__ void hpdl__tensor4_coords(const hpdl_tensor4 &d, size_t i, int *n, int *c, int *h,
                                                            int *w) {
    if (d.layout == HPDL_NHWC) {
        *c = (int)(i % d.c); i /= d.c;
        *w = (int)(i % d.w); i /= d.w;
        *h = (int)(i % d.h); i /= d.h;
    } else {
        *w = (int)(i % d.w); i /= d.w;
        *h = (int)(i % d.h); i /= d.h;
        *c = (int)(i % d.c); i /= d.c;
    }
    *n = (int)i;
}

/* ---- rung 1: direct ------------------------------------------------------- */

/* One thread per output element, in memory order (neighbouring threads
   write neighbouring elements), each summing as the CPU twin does. */
template <typename T, typename ACC>
__global__ void hpdl__conv2d_forward_direct(hpdl__conv_geom g, const T *x, const T *w, T *y, size_t total) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x) {
        int n, k, oh, ow;
        hpdl__tensor4_coords(g.y, i, &n, &k, &oh, &ow);
        int c0 = k / g.k_per_group * g.c_per_group;
        ACC acc = 0;
        for (int c = 0; c < g.c_per_group; c++)
            for (int r = 0; r < g.p.kernel_h; r++) {
                int ih = hpdl__tap_input(oh, g.p.stride_h, g.p.pad_h, r, g.p.dilation_h);
                if (ih < 0 || ih >= g.x.h) continue;
                for (int s = 0; s < g.p.kernel_w; s++) {
                    int iw = hpdl__tap_input(ow, g.p.stride_w, g.p.pad_w, s, g.p.dilation_w);
                    if (iw < 0 || iw >= g.x.w) continue;
                    acc += (ACC)hpdl__gemm_acc(x[hpdl_tensor4_offset(&g.x, n, c0 + c, ih, iw)]) *
                           (ACC)hpdl__gemm_acc(w[hpdl_tensor4_offset(&g.w, k, c, r, s)]);
                }
            }
        hpdl__gemm_put(y + i, acc);
    }
}

template <typename T, typename ACC>
__global__ void hpdl__conv2d_backward_data_direct(hpdl__conv_geom g, const T *w, const T *dy, T *dx, size_t total) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x) {
        int n, c, ih, iw, oh, ow;
        hpdl__tensor4_coords(g.x, i, &n, &c, &ih, &iw);
        int k0 = c / g.c_per_group * g.k_per_group, cw = c % g.c_per_group;
        ACC acc = 0;
        for (int k = k0; k < k0 + g.k_per_group; k++)
            for (int r = 0; r < g.p.kernel_h; r++) {
                if (!hpdl__tap_output(ih, g.p.stride_h, g.p.pad_h, r, g.p.dilation_h, g.y.h, &oh)) continue;
                for (int s = 0; s < g.p.kernel_w; s++) {
                    if (!hpdl__tap_output(iw, g.p.stride_w, g.p.pad_w, s, g.p.dilation_w, g.y.w, &ow)) continue;
                    acc += (ACC)hpdl__gemm_acc(dy[hpdl_tensor4_offset(&g.y, n, k, oh, ow)]) *
                           (ACC)hpdl__gemm_acc(w[hpdl_tensor4_offset(&g.w, k, cw, r, s)]);
                }
            }
        hpdl__gemm_put(dx + i, acc);
    }
}

template <typename T, typename ACC>
__global__ void hpdl__conv2d_backward_filter_direct(hpdl__conv_geom g, const T *x, const T *dy, T *dw, size_t total) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x) {
        int k, c, r, s;
        hpdl__tensor4_coords(g.w, i, &k, &c, &r, &s);
        int cx = k / g.k_per_group * g.c_per_group + c;
        ACC acc = 0;
        for (int n = 0; n < g.x.n; n++)
            for (int oh = 0; oh < g.y.h; oh++) {
                int ih = hpdl__tap_input(oh, g.p.stride_h, g.p.pad_h, r, g.p.dilation_h);
                if (ih < 0 || ih >= g.x.h) continue;
                for (int ow = 0; ow < g.y.w; ow++) {
                    int iw = hpdl__tap_input(ow, g.p.stride_w, g.p.pad_w, s, g.p.dilation_w);
                    if (iw < 0 || iw >= g.x.w) continue;
                    acc += (ACC)hpdl__gemm_acc(dy[hpdl_tensor4_offset(&g.y, n, k, oh, ow)]) *
                           (ACC)hpdl__gemm_acc(x[hpdl_tensor4_offset(&g.x, n, cx, ih, iw)]);
                }
            }
        hpdl__gemm_put(dw + i, acc);
    }
}

/* ---- rung 2: implicit GEMM on CUDA cores ---------------------------------------- */

/* The three passes as GEMM views: a(grp, m, k) and b(grp, k, n) are the
   operands' elements (zero outside them), put(grp, m, n, v) stores C. Each
   GEMM index packs tensor coordinates, the first one slowest:
   pixel = (n, h, w), tap = (channel, r, s). */
struct hpdl__conv_gemm_dims {
    int m, n, k;       /* the GEMM of one group */
    int splits;        /* blocks sharing one C tile, each summing k_per_split of k (backward-filter) */
    int k_per_split;   /* a multiple of HPDL__CONV_BK */
};

static __device__ __forceinline__ void hpdl__split3(int i, int b, int c, int *x0, int *x1, int *x2) {
    *x2 = i % c; i /= c;
    *x1 = i % b;
    *x0 = i / b;
}

/* The input element tap (r, s) of output pixel (oh, ow) reads, or 0 in the padding. */
template <typename T, typename ACC>
static __device__ __forceinline__ ACC hpdl__conv_tap(const hpdl__conv_geom &g, const T *x, int n, int c, int oh,
                                                     int ow, int r, int s) {
    int ih = hpdl__tap_input(oh, g.p.stride_h, g.p.pad_h, r, g.p.dilation_h);
    int iw = hpdl__tap_input(ow, g.p.stride_w, g.p.pad_w, s, g.p.dilation_w);
    if (ih < 0 || ih >= g.x.h || iw < 0 || iw >= g.x.w) return (ACC)0;
    return (ACC)hpdl__gemm_acc(x[hpdl_tensor4_offset(&g.x, n, c, ih, iw)]);
}

/* forward: m = output pixel, n = output channel in the group, k = (c, r, s). */
template <typename T, typename ACC> struct hpdl__conv_forward_view {
    hpdl__conv_geom g;
    hpdl__conv_gemm_dims d;
    const T *x, *w;
    T *y;
    __device__ ACC a(int grp, int m, int k) const {
        int n, oh, ow, c, r, s;
        if (m >= d.m || k >= d.k) return (ACC)0;
        hpdl__split3(m, g.y.h, g.y.w, &n, &oh, &ow);
        hpdl__split3(k, g.p.kernel_h, g.p.kernel_w, &c, &r, &s);
        return hpdl__conv_tap<T, ACC>(g, x, n, grp * g.c_per_group + c, oh, ow, r, s);
    }
    __device__ ACC b(int grp, int k, int n) const {
        int c, r, s;
        if (k >= d.k || n >= d.n) return (ACC)0;
        hpdl__split3(k, g.p.kernel_h, g.p.kernel_w, &c, &r, &s);
        return (ACC)hpdl__gemm_acc(w[hpdl_tensor4_offset(&g.w, grp * g.k_per_group + n, c, r, s)]);
    }
    __device__ void put(int grp, int m, int n, ACC v) const {
        int nb, oh, ow;
        if (m >= d.m || n >= d.n) return;
        hpdl__split3(m, g.y.h, g.y.w, &nb, &oh, &ow);
        hpdl__gemm_put(y + hpdl_tensor4_offset(&g.y, nb, grp * g.k_per_group + n, oh, ow), v);
    }
};

/* backward-data: m = input pixel, n = input channel in the group, k = (k, r, s). */
template <typename T, typename ACC> struct hpdl__conv_backward_data_view {
    hpdl__conv_geom g;
    hpdl__conv_gemm_dims d;
    const T *w, *dy;
    T *dx;
    __device__ ACC a(int grp, int m, int k) const {
        int n, ih, iw, kk, r, s, oh, ow;
        if (m >= d.m || k >= d.k) return (ACC)0;
        hpdl__split3(m, g.x.h, g.x.w, &n, &ih, &iw);
        hpdl__split3(k, g.p.kernel_h, g.p.kernel_w, &kk, &r, &s);
        if (!hpdl__tap_output(ih, g.p.stride_h, g.p.pad_h, r, g.p.dilation_h, g.y.h, &oh) ||
            !hpdl__tap_output(iw, g.p.stride_w, g.p.pad_w, s, g.p.dilation_w, g.y.w, &ow))
            return (ACC)0;
        return (ACC)hpdl__gemm_acc(dy[hpdl_tensor4_offset(&g.y, n, grp * g.k_per_group + kk, oh, ow)]);
    }
    __device__ ACC b(int grp, int k, int n) const {
        int kk, r, s;
        if (k >= d.k || n >= d.n) return (ACC)0;
        hpdl__split3(k, g.p.kernel_h, g.p.kernel_w, &kk, &r, &s);
        return (ACC)hpdl__gemm_acc(w[hpdl_tensor4_offset(&g.w, grp * g.k_per_group + kk, n, r, s)]);
    }
    __device__ void put(int grp, int m, int n, ACC v) const {
        int nb, ih, iw;
        if (m >= d.m || n >= d.n) return;
        hpdl__split3(m, g.x.h, g.x.w, &nb, &ih, &iw);
        hpdl__gemm_put(dx + hpdl_tensor4_offset(&g.x, nb, grp * g.c_per_group + n, ih, iw), v);
    }
};

/* backward-filter: m = output channel in the group, n = (c, r, s), k = output pixel. */
/* A split's partial sum into dw: atomics for float and double; the 2-byte
   types never split (their launch keeps one split), so a store suffices. */
static __device__ __forceinline__ void hpdl__conv_atomic_add(float *at, float v) { atomicAdd(at, v); }
static __device__ __forceinline__ void hpdl__conv_atomic_add(double *at, double v) { atomicAdd(at, v); }
template <typename T, typename ACC> static __device__ __forceinline__ void hpdl__conv_atomic_add(T *at, ACC v) {
    hpdl__gemm_put(at, v);
}

template <typename T, typename ACC> struct hpdl__conv_backward_filter_view {
    hpdl__conv_geom g;
    hpdl__conv_gemm_dims d;
    const T *x, *dy;
    T *dw;
    __device__ ACC a(int grp, int m, int k) const {
        int n, oh, ow;
        if (m >= d.m || k >= d.k) return (ACC)0;
        hpdl__split3(k, g.y.h, g.y.w, &n, &oh, &ow);
        return (ACC)hpdl__gemm_acc(dy[hpdl_tensor4_offset(&g.y, n, grp * g.k_per_group + m, oh, ow)]);
    }
    __device__ ACC b(int grp, int k, int n) const {
        int nb, oh, ow, c, r, s;
        if (k >= d.k || n >= d.n) return (ACC)0;
        hpdl__split3(k, g.y.h, g.y.w, &nb, &oh, &ow);
        hpdl__split3(n, g.p.kernel_h, g.p.kernel_w, &c, &r, &s);
        return hpdl__conv_tap<T, ACC>(g, x, nb, grp * g.c_per_group + c, oh, ow, r, s);
    }
    __device__ void put(int grp, int m, int n, ACC v) const {
        int c, r, s;
        if (m >= d.m || n >= d.n) return;
        hpdl__split3(n, g.p.kernel_h, g.p.kernel_w, &c, &r, &s);
        T *at = dw + hpdl_tensor4_offset(&g.w, grp * g.k_per_group + m, c, r, s);
        if (d.splits > 1) hpdl__conv_atomic_add(at, v); /* split-K: float and double only (see the launch) */
        else hpdl__gemm_put(at, v);
    }
};

#define HPDL__CONV_BM 64      /* C tile rows per block */
#define HPDL__CONV_BN 64      /* C tile columns per block */
#define HPDL__CONV_BK 16      /* K step through shared memory */
#define HPDL__CONV_THREADS 256 /* 16 x 16 threads, 4 x 4 outputs each */

/* C tile (blockIdx.x, blockIdx.y) of group blockIdx.z / splits, over the
   K range of split blockIdx.z % splits. Thread (tx, ty) owns rows ty + 16*i
   and columns tx + 16*j, so a warp reads shared memory without bank
   conflicts. Gathered operands are converted to ACC on the way into shared
   memory. */
template <typename ACC, typename View>
__global__ void __launch_bounds__(HPDL__CONV_THREADS) hpdl__conv_implicit_gemm(View v) {
    __shared__ ACC As[HPDL__CONV_BK][HPDL__CONV_BM];
    __shared__ ACC Bs[HPDL__CONV_BK][HPDL__CONV_BN];
    const int grp = blockIdx.z / v.d.splits, m0 = blockIdx.x * HPDL__CONV_BM, n0 = blockIdx.y * HPDL__CONV_BN;
    const int k_begin = (blockIdx.z % v.d.splits) * v.d.k_per_split;
    const int k_end = v.d.k - k_begin < v.d.k_per_split ? v.d.k : k_begin + v.d.k_per_split;
    const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
    ACC acc[4][4];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) acc[i][j] = (ACC)0;
    for (int k0 = k_begin; k0 < k_end; k0 += HPDL__CONV_BK) {
        for (int e = tid; e < HPDL__CONV_BK * HPDL__CONV_BM; e += HPDL__CONV_THREADS)
            As[e / HPDL__CONV_BM][e % HPDL__CONV_BM] = v.a(grp, m0 + e % HPDL__CONV_BM, k0 + e / HPDL__CONV_BM);
        for (int e = tid; e < HPDL__CONV_BK * HPDL__CONV_BN; e += HPDL__CONV_THREADS)
            Bs[e / HPDL__CONV_BN][e % HPDL__CONV_BN] = v.b(grp, k0 + e / HPDL__CONV_BN, n0 + e % HPDL__CONV_BN);
        __syncthreads();
        for (int kk = 0; kk < HPDL__CONV_BK; kk++) {
            ACC a[4], b[4];
            for (int i = 0; i < 4; i++) a[i] = As[kk][ty + 16 * i];
            for (int j = 0; j < 4; j++) b[j] = Bs[kk][tx + 16 * j];
            for (int i = 0; i < 4; i++)
                for (int j = 0; j < 4; j++) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) v.put(grp, m0 + ty + 16 * i, n0 + tx + 16 * j, acc[i][j]);
}

/* ---- rung 3: implicit GEMM on tensor cores (f16/bf16, NHWC) ---------------------- */

/* Forward and backward-data as GEMMs on the GEMM's tensor-core machinery,
   m an output pixel, k = (r, s, channel) with the channel fastest (the
   order of NHWC tensors and KRSC filters):
     forward        Y[pixel, k]  = sum X~[pixel, (r,s,c)] * W[k, (r,s,c)]
     backward-data  dX[pixel, c] = sum dY~[pixel, (r,s,k)] * W[k, (r,s), c]
   Each block tile of pixels gathers its K tiles of the source tensor (x or
   dy) straight from memory with cp.async (16 bytes along the channels,
   zero-filled in the padding or between strides) into the swizzled layout
   ldmatrix reads, in a multi-stage pipeline. The filter tile is W's rows
   as stored (forward: K-contiguous) or gathered per tap (backward-data: W
   read along c, ldmatrix.trans). Tap (r, s) of pixel p reads source row
   (p * step + offset + r * tap) / src_stride: forward step = stride,
   offset = -pad, tap = dilation, src_stride = 1; backward-data step = 1,
   offset = pad, tap = -dilation, src_stride = stride (a position between
   strides reads zero). */
template <typename T> struct hpdl__conv_mma_args {
    const T *src, *w; /* NHWC source (x or dy), KRSC filter */
    T *out;           /* NHWC output (y or dx) */
    int src_h, src_w, src_c, out_h, out_w, out_c;
    int kernel_w, taps; /* S, R*S */
    int step_h, step_w, offset_h, offset_w, tap_h, tap_w, src_stride_h, src_stride_w;
    int M, N, K, inner;  /* the GEMM of one group: pixels, out channels, taps x inner (src channels per group) */
    int src_vec, w_vec;  /* 16-byte gathers of src (inner % 8 == 0, aligned); of W's rows (aligned) */
};

/* cp.async of 16 bytes, or 16 zero bytes when !valid (the source is not read). */
static __device__ __forceinline__ void hpdl__cp_async16_zfill(void *dst, const void *src, bool valid) {
#ifdef HPDL__GEMM_SM80
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(hpdl__smem_u32(dst)), "l"(src),
                 "r"(valid ? 16 : 0) : "memory");
#else
    (void)dst; (void)src; (void)valid;
#endif
}

/* The output pixels whose source rows this thread gathers: each pixel's
   first source position (p * step + offset; far outside when the pixel is
   past M, so every tap misses) and its image's first source row. Worked
   out once per block; a K tile then only adds the tap's offset. CHUNK:
   elements per 16-byte chunk (8 for f16/bf16, 16 for the int8 rung). */
template <typename SH, int CHUNK = 8> struct hpdl__conv_mma_rows {
    enum { CPR = SH::BK / CHUNK, ROWS = SH::BM * CPR / SH::THREADS, ROW_STEP = SH::THREADS / CPR };
    int h0[ROWS], w0[ROWS], image_row[ROWS];
    template <typename T> __device__ __forceinline__ void init(const hpdl__conv_mma_args<T> &a, int m0) {
#pragma unroll
        for (int i = 0; i < ROWS; i++) {
            int m = m0 + (int)threadIdx.x / CPR + i * ROW_STEP, n, ph, pw;
            hpdl__split3(m < a.M ? m : 0, a.out_h, a.out_w, &n, &ph, &pw);
            h0[i] = m < a.M ? ph * a.step_h + a.offset_h : INT_MIN / 2;
            w0[i] = pw * a.step_w + a.offset_w;
            image_row[i] = n * a.src_h;
        }
    }
};

/* Source position t (along an axis of `size`, taken every `stride`) as a
   row index, or -1 between strides or outside. */
static __device__ __forceinline__ int hpdl__conv_mma_pos(int t, int stride, int size) {
    if (stride > 1) {
        if (t < 0 || t % stride) return -1;
        t /= stride;
    }
    return t < size ? t : -1;
}

/* Where this thread's next K tile starts: the tap (r, s) and channel c of
   its chunk column in the source tile; for backward-data's filter tile,
   the tap rs and output channel kk of its first row. Tiles are loaded in K
   order, so each moves the cursor on by BK (no divisions per tile). */
struct hpdl__conv_mma_cursor {
    int r, s, c, rs, kk;
    template <typename T> __device__ __forceinline__ void init(const hpdl__conv_mma_args<T> &a, int col, int row) {
        int tap = col / a.inner;
        c = col - tap * a.inner;
        r = tap / a.kernel_w;
        s = tap - r * a.kernel_w;
        rs = row / a.inner;
        kk = row - rs * a.inner;
    }
    /* source: the vector gather uses (r, s, c); filter: backward-data uses (rs, kk) */
    template <typename T>
    __device__ __forceinline__ void next(const hpdl__conv_mma_args<T> &a, int bk, bool source, bool filter) {
        if (source)
            for (c += bk; c >= a.inner; c -= a.inner)
                if (++s == a.kernel_w) { s = 0; r++; }
        if (filter)
            for (kk += bk; kk >= a.inner; kk -= a.inner) rs++;
    }
};

/* K tile k0.. of the source rows into a stage (BM x BK, K-contiguous). VEC:
   one 16-byte cp.async per chunk, whose 8 channels share the cursor's tap
   (inner % 8 == 0); else element by element (any channel count), plain
   loads and shared stores. */
template <typename SH, bool VEC, typename T>
static __device__ __forceinline__ void hpdl__conv_mma_gather(const hpdl__conv_mma_args<T> &a,
                                                             const hpdl__conv_mma_rows<SH> &rows,
                                                             const hpdl__conv_mma_cursor &at, int c_base, T *s, int k0) {
    typedef hpdl__gemm_swizzle<SH::BM, SH::BK> L;
    typedef hpdl__conv_mma_rows<SH> R;
    const int col = (int)threadIdx.x % R::CPR * 8, row = (int)threadIdx.x / R::CPR;
#pragma unroll
    for (int j = 0; j < (VEC ? 1 : 8); j++) {
        int k = k0 + col + j, r = at.r, tap_s = at.s, c = at.c;
        if (!VEC) { /* this element's own tap and channel */
            int tap = k / a.inner;
            c = k - tap * a.inner;
            r = tap / a.kernel_w;
            tap_s = tap - r * a.kernel_w;
        }
        const int dh = r * a.tap_h, dw = tap_s * a.tap_w;
#pragma unroll
        for (int i = 0; i < R::ROWS; i++) {
            int ih = hpdl__conv_mma_pos(rows.h0[i] + dh, a.src_stride_h, a.src_h);
            int iw = hpdl__conv_mma_pos(rows.w0[i] + dw, a.src_stride_w, a.src_w);
            bool in = k < a.K && ih >= 0 && iw >= 0;
            const T *src = a.src + (in ? ((size_t)(rows.image_row[i] + ih) * a.src_w + iw) * a.src_c + c_base + c : 0);
            T *dst = s + L::at(row + i * R::ROW_STEP, col) + j;
            if (VEC) hpdl__cp_async16_zfill(dst, src, in);
            else *dst = in ? *src : T(0.0f);
        }
    }
}

/* Backward-data's filter tile: rows k0.. = (tap, k) of K, columns n0.. =
   input channels c, stored BK x BN (c contiguous, as W holds them): row
   (rs, kk) is W[kk, rs, n0..] of this group. 16 bytes per chunk where W's
   rows allow it (w_vec) and the chunk is inside N, else element by element. */
template <typename SH, typename T>
static __device__ __forceinline__ void hpdl__conv_mma_filter_rows(const hpdl__conv_mma_args<T> &a, const T *w,
                                                                  const hpdl__conv_mma_cursor &at, T *s, int n0) {
    typedef hpdl__gemm_swizzle<SH::BK, SH::BN> L;
    enum { CPR = SH::BN / 8, ROWS = SH::BK * CPR / SH::THREADS, ROW_STEP = SH::THREADS / CPR };
    const int col = (int)threadIdx.x % CPR * 8, row = (int)threadIdx.x / CPR, c = n0 + col;
    int rs = at.rs, kk = at.kk;
#pragma unroll
    for (int i = 0; i < ROWS; i++) {
        const T *src = w + ((size_t)kk * a.taps + rs) * a.N + c;
        T *dst = s + L::at(row + i * ROW_STEP, col);
        bool in = rs < a.taps;
        if (a.w_vec && c + 8 <= a.N) {
            hpdl__cp_async16_zfill(dst, in ? src : w, in);
        } else {
#pragma unroll
            for (int j = 0; j < 8; j++) dst[j] = in && c + j < a.N ? src[j] : T(0.0f);
        }
        for (kk += ROW_STEP; kk >= a.inner; kk -= a.inner) rs++; /* the row ROW_STEP further down K */
    }
}

/* The forward filter tile: W's rows (K-contiguous) as the GEMM loads an
   operand: by the GEMM's tile copier (addresses worked out once) where the
   block's tiles are whole and aligned, else with hpdl__gemm_stage's checks. */
template <typename SH, typename T> struct hpdl__conv_mma_filter {
    hpdl__gemm_operand<T> w;
    hpdl__tile_copier<T, SH::BN, SH::BK, SH::THREADS, true> copier;
    bool whole;
    __device__ __forceinline__ void init(const hpdl__conv_mma_args<T> &a, int grp, int n0) {
        hpdl__gemm_operand<T> wo = {a.w + (size_t)grp * a.N * a.K, a.K, 1, a.w_vec};
        w = wo;
        whole = a.w_vec && n0 + SH::BN <= a.N && a.K % SH::BK == 0;
        if (whole) copier.init(w, n0);
    }
    __device__ __forceinline__ void load(T *s, int k0, int n0, int N, int K) {
        if (whole) copier.copy(s, w.ld);
        else hpdl__gemm_stage<T, SH::BN, SH::BK, SH::THREADS, hpdl__gemm_swizzle, true, false>(s, w, n0, k0, N, K);
    }
};

/* K tile k of both operands into stage st (one cp.async group, committed
   by the caller); the cursor moves on to tile k+1. */
template <typename SH, bool VEC, bool DATA, typename T>
static __device__ __forceinline__ void hpdl__conv_mma_load(const hpdl__conv_mma_args<T> &a,
                                                           const hpdl__conv_mma_rows<SH> &rows,
                                                           hpdl__conv_mma_cursor &at, hpdl__conv_mma_filter<SH, T> &f,
                                                           int grp, T *sa, T *sb, int st, int k, int n0) {
    hpdl__conv_mma_gather<SH, VEC>(a, rows, at, grp * a.inner, sa + st * SH::BM * SH::BK, k * SH::BK);
    if (DATA) hpdl__conv_mma_filter_rows<SH>(a, a.w + (size_t)grp * a.K * a.N, at, sb + st * SH::BN * SH::BK, n0);
    else f.load(sb + st * SH::BN * SH::BK, k * SH::BK, n0, a.N, a.K);
    at.next(a, SH::BK, VEC, DATA);
}

/* The pipeline of the rung's kernels: K tiles kt0..kt1-1 through S stages,
   one barrier per tile, then mma.sync on it (acc += A B, fragments by the
   mma GEMM rung's hpdl__mma_frags). load(st, kt) issues tile kt's copies
   into stage st (tiles come in K order). */
template <typename SH, bool AK, bool BKC, typename T, typename LOADER>
static __device__ __forceinline__ void hpdl__conv_mma_mainloop(LOADER &load, const T *sa, const T *sb, int kt0, int kt1,
                                                               const hpdl__mma_lanes<SH, AK, BKC> &lanes,
                                                               float (&acc)[SH::WM / 16][SH::WN / 8][4]) {
    enum { BM = SH::BM, BN = SH::BN, BK = SH::BK, S = SH::S, MI = SH::WM / 16, NJ = SH::WN / 8, KS = BK / 16 };
    unsigned af[MI][4], bf[NJ][2];
    for (int i = 0; i < MI; i++)
        for (int j = 0; j < NJ; j++) acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0.0f;
    for (int st = 0; st < S - 1; st++) { /* the pipeline's first S-1 tiles */
        if (kt0 + st < kt1) load(st, kt0 + st);
        hpdl__cp_async_commit();
    }
    for (int kt = kt0; kt < kt1; kt++) {
        const int next = kt + S - 1, st = (kt - kt0) % S;
        hpdl__cp_async_wait<S - 2>(); /* tile kt has landed (this thread's copies) ... */
        __syncthreads();              /* ... everyone's, and every warp is done with tile kt-1's stage */
        if (next < kt1) load((next - kt0) % S, next);
        hpdl__cp_async_commit();
#pragma unroll
        for (int ks = 0; ks < KS; ks++) {
            hpdl__mma_frags(sa + st * BM * BK, sb + st * BN * BK, lanes, ks, af, bf);
#pragma unroll
            for (int i = 0; i < MI; i++)
#pragma unroll
                for (int j = 0; j < NJ; j++) hpdl__mma16816(T(), acc[i][j], af[i], bf[j]);
        }
    }
    hpdl__cp_async_wait<0>();
}

/* Forward and backward-data tiles for the mainloop. */
template <typename SH, bool VEC, bool DATA, typename T> struct hpdl__conv_mma_loader {
    const hpdl__conv_mma_args<T> &a;
    const hpdl__conv_mma_rows<SH> &rows;
    hpdl__conv_mma_cursor &at;
    hpdl__conv_mma_filter<SH, T> &filter;
    T *sa, *sb;
    int grp, n0;
    __device__ __forceinline__ void operator()(int st, int k) {
        hpdl__conv_mma_load<SH, VEC, DATA>(a, rows, at, filter, grp, sa, sb, st, k, n0);
    }
};

/* Block tile (blockIdx.y: pixels, blockIdx.x: channels) of group blockIdx.z;
   the epilogue is the mma GEMM rung's (hpdl__mma_store). DATA: backward-data. */
template <typename T, typename SH, bool VEC, bool DATA>
__global__ void __launch_bounds__(SH::THREADS, 2) hpdl__conv_mma(hpdl__conv_mma_args<T> a) {
#ifdef HPDL__GEMM_SM80
    extern __shared__ uint4 hpdl__conv_smem[];
    T *sa = (T *)hpdl__conv_smem, *sb = sa + SH::S * SH::BM * SH::BK;
    const int grp = blockIdx.z, m0 = blockIdx.y * SH::BM, n0 = blockIdx.x * SH::BN;
    const int lane = (int)threadIdx.x % 32, warp = (int)threadIdx.x / 32;
    const int wm = warp / SH::WARPS_N * SH::WM, wn = warp % SH::WARPS_N * SH::WN;
    hpdl__conv_mma_rows<SH> rows;
    hpdl__conv_mma_cursor at;
    hpdl__conv_mma_filter<SH, T> filter;
    hpdl__mma_lanes<SH, true, !DATA> lanes;
    float acc[SH::WM / 16][SH::WN / 8][4];
    rows.init(a, m0);
    at.init(a, (int)threadIdx.x % (SH::BK / 8) * 8, (int)threadIdx.x / (SH::BN / 8));
    if (!DATA) filter.init(a, grp, n0);
    lanes.init(wm, wn, lane);
    hpdl__conv_mma_loader<SH, VEC, DATA, T> load = {a, rows, at, filter, sa, sb, grp, n0};
    hpdl__conv_mma_mainloop<SH>(load, sa, sb, 0, (a.K + SH::BK - 1) / SH::BK, lanes, acc);
    hpdl__gemm_args<T, float> out = hpdl__gemm_args<T, float>();
    out.C = a.out + grp * a.N;
    out.ldc = a.out_c;
    out.cvec = ((uintptr_t)out.C % 8 == 0) && a.out_c % 4 == 0;
    out.M = a.M; out.N = a.N; out.K = a.K;
    out.alpha = 1.0f; out.beta = 0.0f;
    hpdl__mma_store<SH>(out, acc, (float *)sa, m0, n0, wm, wn, lane);
#else
    (void)a; /* host pass, or a GPU without mma.sync: the launcher never starts it */
#endif
}

/* ---- backward-filter on tensor cores ---- */

/* dW[k, (r,s,c)] = sum over pixels of dY[pixel, k] * X~[pixel, (r,s,c)]: a
   GEMM whose K (N*P*Q pixels) is long and whose M x N (the filter) is
   small, so the pixels are split among blocks (split-K) and each block adds
   its partial sums into an f32 copy of dW with atomics; a last pass rounds
   it to T. dY's tile is a plain operand (pixels x channels, channels
   contiguous); X's tile is gathered per pixel, 16 bytes along C (C/groups %
   8 == 0), each thread's column (tap, channel) fixed for the whole kernel. */
template <typename T> struct hpdl__conv_wgrad_args {
    const T *x, *dy;
    float *dw; /* f32 sums, KRSC */
    int x_h, x_w, x_c, y_h, y_w, y_c;
    int kernel_w, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
    int M, N, K, c_per_group, images; /* one group: output channels, taps x channels, pixels (N*P*Q) */
    int tiles_per_split, dy_vec;
};

/* The pixels of this thread's rows of X's tile (n, oh, ow), moved on by BK
   pixels per tile with carries (no divisions per tile). */
template <typename SH> struct hpdl__conv_wgrad_rows {
    enum { CPR = SH::BN / 8, ROWS = SH::BK * CPR / SH::THREADS, ROW_STEP = SH::THREADS / CPR };
    int n[ROWS], oh[ROWS], ow[ROWS];
    int dq, dp, dn; /* BK pixels as (images, rows, columns) */
    template <typename T> __device__ __forceinline__ void init(const hpdl__conv_wgrad_args<T> &a, int k0) {
        dq = SH::BK % a.y_w;
        dp = SH::BK / a.y_w % a.y_h;
        dn = SH::BK / (a.y_w * a.y_h);
#pragma unroll
        for (int i = 0; i < ROWS; i++)
            hpdl__split3(k0 + (int)threadIdx.x / CPR + i * ROW_STEP, a.y_h, a.y_w, &n[i], &oh[i], &ow[i]);
    }
    template <typename T> __device__ __forceinline__ void next(const hpdl__conv_wgrad_args<T> &a) {
#pragma unroll
        for (int i = 0; i < ROWS; i++) {
            ow[i] += dq;
            oh[i] += dp;
            n[i] += dn;
            if (ow[i] >= a.y_w) { ow[i] -= a.y_w; oh[i]++; }
            if (oh[i] >= a.y_h) { oh[i] -= a.y_h; n[i]++; }
        }
    }
};

/* Split-K tiles for the mainloop: dY's rows (stored BK x BM) and X's gathered rows (BK x BN). */
template <typename SH, typename T> struct hpdl__conv_wgrad_loader {
    const hpdl__conv_wgrad_args<T> &a;
    hpdl__conv_wgrad_rows<SH> &rows;
    T *sa, *sb;
    int grp, m0, n0, dh, dw, c; /* this thread's column of X's tile: tap offsets and channel; c < 0 outside N */
    __device__ __forceinline__ void operator()(int st, int k) {
        typedef hpdl__gemm_swizzle<SH::BK, SH::BN> L;
        typedef hpdl__conv_wgrad_rows<SH> R;
        const int col = (int)threadIdx.x % R::CPR * 8, row = (int)threadIdx.x / R::CPR;
        hpdl__gemm_operand<T> dy = {a.dy + grp * a.M, a.y_c, 0, a.dy_vec};
        hpdl__gemm_stage<T, SH::BM, SH::BK, SH::THREADS, hpdl__gemm_swizzle, false, false>(sa + st * SH::BM * SH::BK, dy,
                                                                                          m0, k * SH::BK, a.M, a.K);
#pragma unroll
        for (int i = 0; i < R::ROWS; i++) {
            int ih = rows.oh[i] * a.stride_h - a.pad_h + dh, iw = rows.ow[i] * a.stride_w - a.pad_w + dw;
            bool in = c >= 0 && rows.n[i] < a.images && ih >= 0 && ih < a.x_h && iw >= 0 && iw < a.x_w;
            const T *src = a.x + (in ? (((size_t)rows.n[i] * a.x_h + ih) * a.x_w + iw) * a.x_c + c : 0);
            hpdl__cp_async16_zfill(sb + st * SH::BN * SH::BK + L::at(row + i * R::ROW_STEP, col), src, in);
        }
        rows.next(a);
    }
};

/* Filter tile (blockIdx.y: output channels, blockIdx.x: (tap, channel)) of
   split blockIdx.z % splits, group blockIdx.z / splits. */
template <typename T, typename SH>
__global__ void __launch_bounds__(SH::THREADS, 2) hpdl__conv_mma_wgrad(hpdl__conv_wgrad_args<T> a, int splits) {
#ifdef HPDL__GEMM_SM80
    extern __shared__ uint4 hpdl__conv_smem[];
    T *sa = (T *)hpdl__conv_smem, *sb = sa + SH::S * SH::BM * SH::BK;
    const int grp = blockIdx.z / splits, split = blockIdx.z % splits, m0 = blockIdx.y * SH::BM, n0 = blockIdx.x * SH::BN;
    const int KT = (a.K + SH::BK - 1) / SH::BK, kt0 = split * a.tiles_per_split;
    const int kt1 = kt0 + a.tiles_per_split < KT ? kt0 + a.tiles_per_split : KT;
    const int lane = (int)threadIdx.x % 32, warp = (int)threadIdx.x / 32;
    const int wm = warp / SH::WARPS_N * SH::WM, wn = warp % SH::WARPS_N * SH::WN;
    const int col = n0 + (int)threadIdx.x % (SH::BN / 8) * 8, tap = col / a.c_per_group, r = tap / a.kernel_w;
    hpdl__conv_wgrad_rows<SH> rows;
    hpdl__mma_lanes<SH, false, false> lanes;
    float acc[SH::WM / 16][SH::WN / 8][4];
    if (kt0 >= kt1) return;
    rows.init(a, kt0 * SH::BK);
    lanes.init(wm, wn, lane);
    hpdl__conv_wgrad_loader<SH, T> load = {a, rows, sa, sb, grp, m0, n0, r * a.dilation_h,
                                           (tap - r * a.kernel_w) * a.dilation_w,
                                           col < a.N ? grp * a.c_per_group + col - tap * a.c_per_group : -1};
    hpdl__conv_mma_mainloop<SH>(load, sa, sb, kt0, kt1, lanes, acc);
    float *out = a.dw + (size_t)grp * a.M * a.N;
#pragma unroll
    for (int i = 0; i < SH::WM / 16; i++)
#pragma unroll
        for (int j = 0; j < SH::WN / 8; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) { /* fragment element e: row +8 for e >= 2, column +1 for odd e */
                int m = m0 + wm + i * 16 + lane / 4 + e / 2 * 8, n = n0 + wn + j * 8 + lane % 4 * 2 + e % 2;
                if (m < a.M && n < a.N) atomicAdd(out + (size_t)m * a.N + n, acc[i][j][e]);
            }
#else
    (void)a; (void)splits;
#endif
}

/* The f32 sums rounded to T. */
template <typename T> __global__ void hpdl__conv_round(const float *from, T *to, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        hpdl__gemm_put(to + i, from[i]);
}

/* ---- launchers ------------------------------------------------------------------ */

/* Which pass, and its GEMM's shape for one group (64-bit: checked to fit). */
HPDL_CUDA_API void hpdl__conv_gemm_shape(const hpdl__conv_geom &g, hpdl__conv_pass pass, int64_t *m, int64_t *n,
                                         int64_t *k) {
    int64_t out_pixels = (int64_t)g.y.n * g.y.h * g.y.w, taps = (int64_t)g.p.kernel_h * g.p.kernel_w;
    if (pass == HPDL__CONV_FORWARD) {
        *m = out_pixels; *n = g.k_per_group; *k = g.c_per_group * taps;
    } else if (pass == HPDL__CONV_INPUT_GRAD) {
        *m = (int64_t)g.x.n * g.x.h * g.x.w; *n = g.c_per_group; *k = g.k_per_group * taps;
    } else {
        *m = g.k_per_group; *n = g.c_per_group * taps; *k = out_pixels;
    }
}

/* Backward-filter sums over every output pixel of the batch (K = N*OH*OW)
   into a small C (filters x taps): its few tiles would leave most SMs idle
   while each block walks all of K. Split K so the grid has about two
   blocks per SM, each split at least 8 K steps long; the splits add into a
   zeroed dw with atomics (float and double only). */
template <int lazy = 0>
static inline hpdl_status hpdl__conv_split_k(hpdl__conv_gemm_dims *d, dim3 *grid, int groups, void *out, size_t bytes,
                                             cudaStream_t stream) {
    int sms = 0;
    int64_t tiles = (int64_t)grid->x * grid->y * groups, k_steps = (d->k + HPDL__CONV_BK - 1) / HPDL__CONV_BK, splits;
    if (hpdl__sm_count(&sms) != HPDL_OK) return HPDL_ERR_CUDA;
    splits = (2 * (int64_t)sms + tiles - 1) / tiles;
    if (splits > k_steps / 8) splits = k_steps / 8;
    if (splits * groups > 65535) splits = 65535 / groups;
    if (splits < 2) return HPDL_OK;
    d->k_per_split = (int)((k_steps + splits - 1) / splits) * HPDL__CONV_BK;
    d->splits = (d->k + d->k_per_split - 1) / d->k_per_split;
    grid->z = (unsigned)(groups * d->splits);
    HPDL_CUDA_TRY(cudaMemsetAsync(out, 0, bytes, stream));
    return HPDL_OK;
}

template <typename T, typename ACC>
static inline hpdl_status hpdl__conv_launch_implicit_gemm(const hpdl__conv_geom &g, hpdl__conv_pass pass,
                                                          const T *a, const T *b, T *out, cudaStream_t stream) {
    int64_t m, n, k;
    hpdl__conv_gemm_dims d;
    hpdl__conv_gemm_shape(g, pass, &m, &n, &k);
    if (m > INT_MAX || n > 65535LL * HPDL__CONV_BN || k > INT_MAX || g.p.groups > 65535) return HPDL_ERR_UNSUPPORTED;
    d.m = (int)m; d.n = (int)n; d.k = (int)k;
    d.splits = 1;
    d.k_per_split = (int)k;
    dim3 grid((unsigned)((m + HPDL__CONV_BM - 1) / HPDL__CONV_BM), (unsigned)((n + HPDL__CONV_BN - 1) / HPDL__CONV_BN),
              (unsigned)g.p.groups);
    if (pass == HPDL__CONV_FILTER_GRAD && sizeof(T) >= sizeof(float)) {
        hpdl_status s = hpdl__conv_split_k(&d, &grid, g.p.groups, out, hpdl_tensor4_count(&g.w) * sizeof(T), stream);
        if (s != HPDL_OK) return s;
    }
    if (pass == HPDL__CONV_FORWARD) {
        hpdl__conv_forward_view<T, ACC> v = {g, d, a, b, out};
        hpdl__conv_implicit_gemm<ACC><<<grid, HPDL__CONV_THREADS, 0, stream>>>(v);
    } else if (pass == HPDL__CONV_INPUT_GRAD) {
        hpdl__conv_backward_data_view<T, ACC> v = {g, d, a, b, out};
        hpdl__conv_implicit_gemm<ACC><<<grid, HPDL__CONV_THREADS, 0, stream>>>(v);
    } else {
        hpdl__conv_backward_filter_view<T, ACC> v = {g, d, a, b, out};
        hpdl__conv_implicit_gemm<ACC><<<grid, HPDL__CONV_THREADS, 0, stream>>>(v);
    }
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* Backward-filter with the batch's pixels split among threads: thread i
   takes weight i % W and every S-th pixel from i / W, adding its sum into
   dw (zeroed), so a filter of a few hundred weights still fills the GPU.
   float and double (atomics). */
template <typename T, typename ACC>
__global__ void hpdl__conv2d_backward_filter_split(hpdl__conv_geom g, const T *x, const T *dy, T *dw, int64_t weights,
                                                   int64_t splits) {
    const int64_t pixels = (int64_t)g.y.n * g.y.h * g.y.w;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < weights * splits;
         i += (int64_t)gridDim.x * blockDim.x) {
        int k, c, r, s;
        hpdl__tensor4_coords(g.w, (size_t)(i % weights), &k, &c, &r, &s);
        int cx = k / g.k_per_group * g.c_per_group + c;
        ACC acc = 0;
        for (int64_t p = i / weights; p < pixels; p += splits) {
            int n, oh, ow;
            hpdl__split3((int)p, g.y.h, g.y.w, &n, &oh, &ow);
            int ih = hpdl__tap_input(oh, g.p.stride_h, g.p.pad_h, r, g.p.dilation_h);
            int iw = hpdl__tap_input(ow, g.p.stride_w, g.p.pad_w, s, g.p.dilation_w);
            if (ih < 0 || ih >= g.x.h || iw < 0 || iw >= g.x.w) continue;
            acc += (ACC)hpdl__gemm_acc(dy[hpdl_tensor4_offset(&g.y, n, k, oh, ow)]) *
                   (ACC)hpdl__gemm_acc(x[hpdl_tensor4_offset(&g.x, n, cx, ih, iw)]);
        }
        hpdl__conv_atomic_add(dw + (i % weights), acc);
    }
}

/* About 8 threads' worth of work per SM thread slot: splits of the pixels
   so weights x splits fills the GPU, each split at least 16 pixels. */
template <typename T, typename ACC>
static inline hpdl_status hpdl__conv_launch_filter_split(const hpdl__conv_geom &g, const T *x, const T *dy, T *dw,
                                                         cudaStream_t stream) {
    int sms = 0;
    int64_t weights = (int64_t)hpdl_tensor4_count(&g.w), pixels = (int64_t)g.y.n * g.y.h * g.y.w, splits, blocks;
    if (hpdl__sm_count(&sms) != HPDL_OK) return HPDL_ERR_CUDA;
    splits = (int64_t)sms * 2048 / weights;
    splits = splits > pixels / 16 ? pixels / 16 : splits;
    splits = splits < 1 ? 1 : splits;
    blocks = (weights * splits + 255) / 256;
    HPDL_CUDA_TRY(cudaMemsetAsync(dw, 0, (size_t)weights * sizeof(T), stream));
    hpdl__conv2d_backward_filter_split<T, ACC>
        <<<(unsigned)(blocks < (1 << 20) ? blocks : (1 << 20)), 256, 0, stream>>>(g, x, dy, dw, weights, splits);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

template <typename T, typename ACC>
static inline hpdl_status hpdl__conv_launch_direct(const hpdl__conv_geom &g, hpdl__conv_pass pass, const T *a,
                                                   const T *b, T *out, cudaStream_t stream) {
    const hpdl_tensor4 *od = pass == HPDL__CONV_FORWARD ? &g.y : pass == HPDL__CONV_INPUT_GRAD ? &g.x : &g.w;
    size_t total = hpdl_tensor4_count(od), blocks = (total + 255) / 256;
    unsigned grid = (unsigned)(blocks < (1u << 20) ? blocks : (1u << 20)); /* the loops stride over the rest */
    if (pass == HPDL__CONV_FILTER_GRAD && sizeof(T) >= sizeof(float) && (int64_t)g.y.n * g.y.h * g.y.w <= INT_MAX)
        return hpdl__conv_launch_filter_split<T, ACC>(g, a, b, out, stream);
    if (pass == HPDL__CONV_FORWARD)
        hpdl__conv2d_forward_direct<T, ACC><<<grid, 256, 0, stream>>>(g, a, b, out, total);
    else if (pass == HPDL__CONV_INPUT_GRAD)
        hpdl__conv2d_backward_data_direct<T, ACC><<<grid, 256, 0, stream>>>(g, a, b, out, total);
    else
        hpdl__conv2d_backward_filter_direct<T, ACC><<<grid, 256, 0, stream>>>(g, a, b, out, total);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* The rung's tiles: the mma GEMM rung's 128 x 128 x 64 (4 warps of 64 x 64,
   3 stages), or 128 x 64 (4 stages) where a group has at most 64 output
   channels, so that half of each tile is not idle. */
typedef hpdl__tc_shape<128, 128, 64, 3, 64, 64> hpdl__conv_mma_shape;
typedef hpdl__tc_shape<128, 64, 64, 4, 64, 32> hpdl__conv_mma_narrow_shape;
typedef hpdl__tc_shape<64, 128, 64, 4, 32, 64> hpdl__conv_mma_short_shape; /* backward-filter, K <= 64 */

template <typename T, typename SH, bool DATA>
static inline hpdl_status hpdl__conv_mma_launch_shape(const hpdl__conv_mma_args<T> &a, int groups, cudaStream_t stream) {
    enum { STAGES = SH::S * (SH::BM + SH::BN) * SH::BK * (int)sizeof(T), OUT = SH::BM * (SH::BN + 8) * 4 };
    const size_t smem = STAGES > OUT ? STAGES : OUT;
    void (*kernel)(hpdl__conv_mma_args<T>) =
        a.src_vec ? hpdl__conv_mma<T, SH, true, DATA> : hpdl__conv_mma<T, SH, false, DATA>;
    dim3 grid((unsigned)((a.N + SH::BN - 1) / SH::BN), (unsigned)((a.M + SH::BM - 1) / SH::BM), (unsigned)groups);
    if (grid.y > 65535 || groups > 65535 || !hpdl__tc_kernel_ready(kernel, smem)) return HPDL_ERR_UNSUPPORTED;
    kernel<<<grid, SH::THREADS, smem, stream>>>(a);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* One f32 buffer per device for the backward-filter sums, grown on demand
   and kept for the life of the program (not thread-safe on growth). */
HPDL_LAZY hpdl_status hpdl__conv_workspace(size_t bytes, float **out) {
    static float *buffers[64];
    static size_t sizes[64];
    int device = 0;
    HPDL_CUDA_TRY(cudaGetDevice(&device));
    if (device < 0 || device >= 64) return HPDL_ERR_UNSUPPORTED;
    if (sizes[device] < bytes) {
        cudaFree(buffers[device]);
        sizes[device] = 0;
        if (cudaMalloc(&buffers[device], bytes) != cudaSuccess) { cudaGetLastError(); buffers[device] = NULL; return HPDL_ERR_NOMEM; }
        sizes[device] = bytes;
    }
    *out = buffers[device];
    return HPDL_OK;
}

/* Backward-filter: zeroed sums, the split-K kernel (about 8 blocks per SM
   in all, at least 8 K tiles each), then the rounding pass into dw. */
template <typename T, typename SH>
static inline hpdl_status hpdl__conv_mma_wgrad_launch(hpdl__conv_wgrad_args<T> a, int groups, T *dw, cudaStream_t stream) {
    enum { STAGES = SH::S * (SH::BM + SH::BN) * SH::BK * (int)sizeof(T) };
    void (*kernel)(hpdl__conv_wgrad_args<T>, int) = hpdl__conv_mma_wgrad<T, SH>;
    const int tiles_n = (a.N + SH::BN - 1) / SH::BN, tiles_m = (a.M + SH::BM - 1) / SH::BM, KT = (a.K + SH::BK - 1) / SH::BK;
    const size_t count = (size_t)groups * a.M * a.N;
    int sms = 0, most = KT / 8 > 1 ? KT / 8 : 1, splits;
    hpdl_status s;
    if (hpdl__sm_count(&sms) != HPDL_OK) return HPDL_ERR_CUDA;
    splits = (8 * sms + tiles_n * tiles_m * groups - 1) / (tiles_n * tiles_m * groups);
    splits = splits < 1 ? 1 : splits > most ? most : splits;
    a.tiles_per_split = (KT + splits - 1) / splits;
    splits = (KT + a.tiles_per_split - 1) / a.tiles_per_split;
    if (tiles_m > 65535 || (int64_t)groups * splits > 65535 || !hpdl__tc_kernel_ready(kernel, STAGES))
        return HPDL_ERR_UNSUPPORTED;
    if ((s = hpdl__conv_workspace(count * sizeof(float), &a.dw)) != HPDL_OK) return s;
    HPDL_CUDA_TRY(cudaMemsetAsync(a.dw, 0, count * sizeof(float), stream));
    kernel<<<dim3((unsigned)tiles_n, (unsigned)tiles_m, (unsigned)(groups * splits)), SH::THREADS, STAGES, stream>>>(a, splits);
    HPDL_CUDA_TRY_LAUNCH();
    hpdl__conv_round<<<(unsigned)((count + 255) / 256 < 65536 ? (count + 255) / 256 : 65536), 256, 0, stream>>>(a.dw, dw, count);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* Which types have the rung: f16 and bf16 (mma.sync m16n8k16). */
template <typename T> struct hpdl__conv_mma_type {
    static hpdl_status launch(const hpdl__conv_mma_args<T> &, bool, int, cudaStream_t) { return HPDL_ERR_UNSUPPORTED; }
    static hpdl_status wgrad(const hpdl__conv_wgrad_args<T> &, int, T *, cudaStream_t) { return HPDL_ERR_UNSUPPORTED; }
};
template <typename T> struct hpdl__conv_mma_16bit {
    static hpdl_status launch(const hpdl__conv_mma_args<T> &a, bool data, int groups, cudaStream_t stream) {
        if (data)
            return a.N <= 64 ? hpdl__conv_mma_launch_shape<T, hpdl__conv_mma_narrow_shape, true>(a, groups, stream)
                             : hpdl__conv_mma_launch_shape<T, hpdl__conv_mma_shape, true>(a, groups, stream);
        return a.N <= 64 ? hpdl__conv_mma_launch_shape<T, hpdl__conv_mma_narrow_shape, false>(a, groups, stream)
                         : hpdl__conv_mma_launch_shape<T, hpdl__conv_mma_shape, false>(a, groups, stream);
    }
    static hpdl_status wgrad(const hpdl__conv_wgrad_args<T> &a, int groups, T *dw, cudaStream_t stream) {
        return a.M <= 64 ? hpdl__conv_mma_wgrad_launch<T, hpdl__conv_mma_short_shape>(a, groups, dw, stream)
                         : hpdl__conv_mma_wgrad_launch<T, hpdl__conv_mma_shape>(a, groups, dw, stream);
    }
};
template <> struct hpdl__conv_mma_type<__half> : hpdl__conv_mma_16bit<__half> {};
template <> struct hpdl__conv_mma_type<__nv_bfloat16> : hpdl__conv_mma_16bit<__nv_bfloat16> {};

/* The rung's arguments for one pass, where it applies (f16/bf16 forward
   and backward-data, x and y NHWC), else HPDL_ERR_UNSUPPORTED. a_, b_,
   out as hpdl__cuda_conv2d takes them: (x, w, y) or (w, dy, dx). */
template <typename T>
static inline hpdl_status hpdl__conv_mma_make_args(const hpdl__conv_geom &g, hpdl__conv_pass pass, const T *a_,
                                                   const T *b_, T *out, hpdl__conv_mma_args<T> *args) {
    const bool data = pass == HPDL__CONV_INPUT_GRAD;
    const hpdl_tensor4 &src = data ? g.y : g.x, &dst = data ? g.x : g.y;
    hpdl__conv_mma_args<T> a;
    int64_t m, n, k;
    if (pass == HPDL__CONV_FILTER_GRAD || g.x.layout != HPDL_NHWC || g.y.layout != HPDL_NHWC) return HPDL_ERR_UNSUPPORTED;
    hpdl__conv_gemm_shape(g, pass, &m, &n, &k);
    if (m > INT_MAX || k > INT_MAX) return HPDL_ERR_UNSUPPORTED;
    a.src = data ? b_ : a_;
    a.w = data ? a_ : b_;
    a.out = out;
    a.src_h = src.h; a.src_w = src.w; a.src_c = src.c;
    a.out_h = dst.h; a.out_w = dst.w; a.out_c = dst.c;
    a.kernel_w = g.p.kernel_w;
    a.taps = g.p.kernel_h * g.p.kernel_w;
    a.step_h = data ? 1 : g.p.stride_h;
    a.step_w = data ? 1 : g.p.stride_w;
    a.offset_h = data ? g.p.pad_h : -g.p.pad_h;
    a.offset_w = data ? g.p.pad_w : -g.p.pad_w;
    a.tap_h = data ? -g.p.dilation_h : g.p.dilation_h;
    a.tap_w = data ? -g.p.dilation_w : g.p.dilation_w;
    a.src_stride_h = data ? g.p.stride_h : 1;
    a.src_stride_w = data ? g.p.stride_w : 1;
    a.M = (int)m; a.N = (int)n; a.K = (int)k;
    a.inner = data ? g.k_per_group : g.c_per_group;
    a.src_vec = a.inner % 8 == 0 && hpdl__gemm_aligned(a.src, src.c, 8, sizeof(T));
    a.w_vec = hpdl__gemm_aligned(a.w, data ? a.N : a.K, 8, sizeof(T));
    *args = a;
    return HPDL_OK;
}

/* Backward-filter on tensor cores where x and dy are NHWC and x's
   channels allow 16-byte gathers (C/groups % 8 == 0), else HPDL_ERR_UNSUPPORTED. */
template <typename T>
static inline hpdl_status hpdl__conv_mma_wgrad(const hpdl__conv_geom &g, const T *x, const T *dy, T *dw,
                                               cudaStream_t stream) {
    hpdl__conv_wgrad_args<T> a;
    int64_t m, n, k;
    if (g.x.layout != HPDL_NHWC || g.y.layout != HPDL_NHWC || g.c_per_group % 8 != 0 ||
        !hpdl__gemm_aligned(x, g.x.c, 8, sizeof(T)))
        return HPDL_ERR_UNSUPPORTED;
    hpdl__conv_gemm_shape(g, HPDL__CONV_FILTER_GRAD, &m, &n, &k);
    if (n > INT_MAX || k > INT_MAX) return HPDL_ERR_UNSUPPORTED;
    a.x = x; a.dy = dy; a.dw = NULL;
    a.x_h = g.x.h; a.x_w = g.x.w; a.x_c = g.x.c;
    a.y_h = g.y.h; a.y_w = g.y.w; a.y_c = g.y.c;
    a.kernel_w = g.p.kernel_w;
    a.stride_h = g.p.stride_h; a.stride_w = g.p.stride_w;
    a.pad_h = g.p.pad_h; a.pad_w = g.p.pad_w;
    a.dilation_h = g.p.dilation_h; a.dilation_w = g.p.dilation_w;
    a.M = (int)m; a.N = (int)n; a.K = (int)k;
    a.c_per_group = g.c_per_group;
    a.images = g.y.n;
    a.tiles_per_split = 0;
    a.dy_vec = g.k_per_group % 8 == 0 && hpdl__gemm_aligned(dy, g.y.c, 8, sizeof(T));
    return hpdl__conv_mma_type<T>::wgrad(a, g.p.groups, dw, stream);
}

/* The tensor-core rung where it applies, else HPDL_ERR_UNSUPPORTED. */
template <typename T>
static inline hpdl_status hpdl__conv_launch_mma(const hpdl__conv_geom &g, hpdl__conv_pass pass, const T *a, const T *b,
                                                T *out, cudaStream_t stream) {
    hpdl__conv_mma_args<T> args;
    if (pass == HPDL__CONV_FILTER_GRAD) return hpdl__conv_mma_wgrad(g, a, b, out, stream);
    hpdl_status s = hpdl__conv_mma_make_args(g, pass, a, b, out, &args);
    if (s != HPDL_OK) return s;
    return hpdl__conv_mma_type<T>::launch(args, pass == HPDL__CONV_INPUT_GRAD, g.p.groups, stream);
}

/* ---- wgmma rung (Hopper): implicit GEMM fed by the tensor-copy engine ------------ */

/* Forward, backward-data and backward-filter for f16/bf16 in NHWC on sm_90a.
   The GEMM's rows are output pixels, taken 128 at a time as a box of
   box_w columns x box_h rows x box_n images; its K steps are (filter tap,
   64 input channels). For each step one 4-D tensor copy brings the box of
   input pixels that tap reads, shifted by the tap and strided by the
   convolution's stride (the engine's element strides), with zeros where it
   falls outside the image (negative and too-large coordinates are filled):
   the padding costs no code. The filter's tile comes by a 3-D copy of the
   KRSC array. Backward-data at stride 1 is the forward convolution of dy
   with the filter turned 180 degrees and transposed: the same kernel
   reads dy moved by -r for tap r and takes the filter tile MN-major
   (wgmma's transpose bit); at stride s it runs once per phase of dx's
   pixels (hpdl__conv_wg_run). Warp-specialised as the GEMM's wgmma_ws: one thread of
   warpgroup 0 copies, warpgroups 1 and 2 multiply 64 rows each. The int8
   convolution's forward pass runs the same kernel (INT8 QUANTIZATION:
   hpdl__qconv_wg_run), 128 or 64 channels a k step. */

/* One box of a 3-D or 4-D tensor map (coordinates innermost first, signed:
   outside the tensor the engine writes zeros). */
static __device__ __forceinline__ void hpdl__tma_load_3d(const CUtensorMap *map, void *dst, uint64_t *bar, int x, int y,
                                                         int z) {
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3, %4}], [%5];" ::"r"(hpdl__smem_u32(dst)),
                 "l"(map), "r"(x), "r"(y), "r"(z), "r"(hpdl__smem_u32(bar))
                 : "memory");
}
static __device__ __forceinline__ void hpdl__tma_load_4d(const CUtensorMap *map, void *dst, uint64_t *bar, int x, int y,
                                                         int z, int w) {
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3, %4, %5}], [%6];" ::"r"(hpdl__smem_u32(dst)),
                 "l"(map), "r"(x), "r"(y), "r"(z), "r"(w), "r"(hpdl__smem_u32(bar))
                 : "memory");
}

/* The rung's arguments: where a tile's pixels are, how a tap shifts them,
   and the output (hpdl__wg_store's G). */
template <typename T> struct hpdl__conv_wg_args {
    T *y;                        /* output, NHWC */
    int images, rows, cols;      /* the output pixels computed (one phase of dx: see below) */
    int y_rows, y_cols;          /* y's size */
    int y_step_h, y_step_w;      /* computed row h is row h * y_step_h + phase_h of y */
    int phase_h, phase_w;        /* (forward: steps 1, phases 0) */
    int channels;                /* output channels: the GEMM's columns */
    int vec;                     /* channels % 4 == 0 and y 8-byte aligned: 4 outputs per store */
    int tma_y;                   /* f16/bf16, y's steps 1: a tile's box is stored by the copy engine */
    int box_w, box_h, box_n;     /* a tile's output pixels, box_w * box_h * box_n <= 128 */
    int tiles_w, tiles_h, tiles; /* boxes across, down, in all */
    int kernel_w, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
    int taps_h, taps_w;          /* filter rows and columns summed (backward-data: the phase's) */
    int tap_h0, tap_w0;          /* backward-data: the phase's first filter row and column */
    int chunks;                  /* k steps per tap: slices of ROW bytes of the summed channels (hpdl__conv_wg_desc) */
};

/* The first output pixel (image, row, column) of tile `tile`. */
template <typename T>
static __device__ __forceinline__ void hpdl__conv_wg_tile(const hpdl__conv_wg_args<T> &g, int tile, int *n0, int *h0,
                                                          int *w0) {
    int rest = tile / g.tiles_w;
    *w0 = tile % g.tiles_w * g.box_w;
    *h0 = rest % g.tiles_h * g.box_h;
    *n0 = rest / g.tiles_h * g.box_n;
}

template <typename T>
static __device__ __forceinline__ hpdl__wg_nocols hpdl__wg_cols(const hpdl__conv_wg_args<T> &, int) {
    return hpdl__wg_nocols();
}

/* The element-wise epilogue (hpdl__conv_wg_store) gives each thread four
   rows of its consumer's 64, the same in every tile: rows first, +4, +8,
   +12 of the tile, first = 64 (consumer) + 16 (warp) + lane / 8. Their
   places in a tile's box of pixels (column, row, image: divisions by the
   box's sides) are found once, before the first tile; a tile then adds
   its corner (hpdl__conv_wg_pixels). Before, every row of every
   32-column chunk divided again: ~170 instructions a row, most of a
   ResNet-18 stage-1 tile's instructions. */
struct hpdl__conv_wg_rows {
    int bw[4], bh[4], bn[4];
};
/* Row m of a tile as (column, row, image) of its box. */
template <typename T>
static __device__ __forceinline__ void hpdl__conv_wg_place(const hpdl__conv_wg_args<T> &g, int m, int *bw, int *bh, int *bn) {
    *bw = m % g.box_w, *bh = m / g.box_w % g.box_h, *bn = m / (g.box_w * g.box_h);
}
template <typename T>
static __device__ __forceinline__ hpdl__conv_wg_rows hpdl__conv_wg_rows_of(const hpdl__conv_wg_args<T> &g, int row0) {
    const int t = (int)threadIdx.x % 128, first = row0 + t / 32 * 16 + t % 32 / (HPDL__WG_EPI_COLS / 4);
    hpdl__conv_wg_rows r;
#pragma unroll
    for (int i = 0; i < 4; i++) hpdl__conv_wg_place(g, first + 4 * i, &r.bw[i], &r.bh[i], &r.bn[i]);
    return r;
}

/* A tile's four rows of this thread: where each pixel's outputs start in
   y, its computed row and column, and which of the four are inside the
   box and y (bit i). */
struct hpdl__conv_wg_px {
    size_t at[4];
    int h[4], w[4];
    unsigned inside;
};
template <typename T>
static __device__ __forceinline__ hpdl__conv_wg_px hpdl__conv_wg_pixels(const hpdl__conv_wg_args<T> &g,
                                                                        const hpdl__conv_wg_rows &r, int tile) {
    hpdl__conv_wg_px px;
    int n0, h0, w0;
    hpdl__conv_wg_tile(g, tile, &n0, &h0, &w0);
    px.inside = 0;
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const int image = n0 + r.bn[i];
        px.h[i] = h0 + r.bh[i], px.w[i] = w0 + r.bw[i];
        if (r.bn[i] < g.box_n && image < g.images && px.h[i] < g.rows && px.w[i] < g.cols) px.inside |= 1u << i;
        px.at[i] = (((size_t)image * g.y_rows + px.h[i] * g.y_step_h + g.phase_h) * g.y_cols + px.w[i] * g.y_step_w +
                    g.phase_w) * g.channels;
    }
    return px;
}

/* Output channels n..n+3 of the thread's row i (hpdl__conv_wg_store). */
template <typename T>
static __device__ __forceinline__ void hpdl__conv_wg_put4(const hpdl__conv_wg_args<T> &g, hpdl__wg_nocols,
                                                          const hpdl__conv_wg_px &px, int i, int n, const float v[4]) {
    int j;
    if (!(px.inside >> i & 1) || n >= g.channels) return;
    T *p = g.y + px.at[i] + n;
    if (g.vec) {
        hpdl__gemm_vstore4(p, v);
        return;
    }
    for (j = 0; j < 4 && n + j < g.channels; j++) p[j] = T(v[j]);
}

/* A consumer's 64 x BN outputs element-wise, a 32-column chunk at a time
   through its buffer (hpdl__wg_store's scheme, with the rows' pixels found
   once per tile): the int8 convolution's, and the f16/bf16 one's where the
   copy engine cannot store a box (the phases of strided backward-data). */
template <typename G, typename ACC, int BN>
static __device__ __forceinline__ void hpdl__conv_wg_store(const G &g, const hpdl__conv_wg_px &px, const ACC *d, int n0,
                                                           ACC *buf) {
    const int t = (int)threadIdx.x % 128, lane = t % 32, first = t / 32 * 16 + lane / (HPDL__WG_EPI_COLS / 4);
    const int col = lane % (HPDL__WG_EPI_COLS / 4) * 4;
#pragma unroll
    for (int chunk = 0; chunk < BN / HPDL__WG_EPI_COLS; chunk++) {
        const int n = n0 + chunk * HPDL__WG_EPI_COLS + col;
        hpdl__wg_buffer_chunk(d, chunk, buf);
        __syncwarp();
        const auto cols = hpdl__wg_cols(g, n);
#pragma unroll
        for (int i = 0; i < 4; i++) hpdl__conv_wg_put4(g, cols, px, i, n, buf + (first + 4 * i) * HPDL__WG_EPI_LD + col);
        __syncwarp(); /* the warp's rows of the buffer are free for the next chunk */
    }
}

/* The consumers' barrier (named barrier 3, both warpgroups). */
static __device__ __forceinline__ void hpdl__conv_wg_bar_consumers() { asm volatile("bar.sync 3, 256;" ::: "memory"); }
/* The same barrier, telling whether `flag` was set in any of the 256 threads. */
static __device__ __forceinline__ bool hpdl__conv_wg_bar_consumers_any(bool flag) {
    unsigned any;
    asm volatile("{\n.reg .pred p;\nsetp.ne.u32 p, %1, 0;\nbar.red.or.pred p, 3, 256, p;\nselp.u32 %0, 1, 0, p;\n}"
                 : "=r"(any) : "r"((unsigned)flag) : "memory");
    return any != 0;
}

/* One box of a 4-D tensor map from shared memory (the engine clips it at
   the tensor's edges); committed as this thread's bulk group. */
static __device__ __forceinline__ void hpdl__tma_store_4d(const CUtensorMap *map, const void *src, int x, int y, int z,
                                                          int w) {
    asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [%0, {%1, %2, %3, %4}], [%5];\n"
                 "cp.async.bulk.commit_group;" ::"l"(map), "r"(x), "r"(y), "r"(z), "r"(w), "r"(hpdl__smem_u32(src))
                 : "memory");
}

/* The f16/bf16 tile (pixel box `tile`, channels n0..n0 + BN - 1) by the
   copy engine: for each 64 channels both consumers write their 64 rows
   into one 128-row box buffer (row r = pixel r of the box, 128 bytes,
   swizzled as the engine reads it), and thread 128 stores it as a 4-D box
   of y (channels, box_w, box_h, box_n), clipped at y's edges and at the
   box's own pixels (fewer than 128 where the box is smaller). The two
   16 KB buffers alternate over the block's chunks (`done`: the tiles this
   block stored before); one barrier per chunk, before which the storing
   thread waits until the copy of the chunk before has read the other
   buffer, the next one written. The consumers go on to the next tile while
   the engine writes y. Before, a tile that is not 128 consecutive pixels
   (every 3x3 layer) was stored element-wise at ~190 instructions per
   thread and row of 4 outputs. */
template <typename T, int BN>
static __device__ __forceinline__ void hpdl__conv_wg_store_box(const hpdl__conv_wg_args<T> &g, const CUtensorMap *map_y,
                                                               const float *d, int tile, int n0, int row0, int done,
                                                               unsigned char *bufs) {
    enum { CHUNKS = BN / 64, BOX_BYTES = 128 * 128 };
    const bool issuer = threadIdx.x == 128;
    int image0, h0, w0;
    hpdl__conv_wg_tile(g, tile, &image0, &h0, &w0);
#pragma unroll
    for (int c = 0; c < CHUNKS; c++) {
        unsigned char *box = bufs + (done * CHUNKS + c) % 2 * BOX_BYTES;
        unsigned p[16];
        hpdl__wg_pack_chunk<T>(d, 1.0f, c, p);
        hpdl__wg_stmatrix_chunk(box + row0 * 128, p);
        hpdl__fence_async_smem();
        if (issuer) hpdl__tma_wait_read<0>(); /* the chunk before has read the other buffer */
        hpdl__conv_wg_bar_consumers();
        if (issuer) hpdl__tma_store_4d(map_y, box, n0 + 64 * c, w0, h0, image0);
    }
}

/* A stage: 128 rows of the pixels' channels and BN rows of the filter's,
   each ROW bytes of one tap's channels (see hpdl__conv_wg_desc). Stages
   that fit beside the epilogue's buffers: rows of 128 bytes 4 for BN =
   256, 6 for 128, 8 for 64; rows of 64 bytes 8. */
template <int BN, int ROW = 128> struct hpdl__conv_wg_shape {
    enum { BM = 128, A_BYTES = BM * ROW, PIECE = 64 * ROW, STAGE = (BM + BN) * ROW,
           S = 196608 / STAGE > 8 ? 8 : 196608 / STAGE };
    static size_t smem() { return (size_t)S * STAGE + 2 * HPDL__WG_EPI_BYTES + 2 * S * 8 + 1024 /* alignment */; }
};

/* A consumer's 64 x BN share of tile `tile`'s f16/bf16 outputs (its rows
   row0.., columns n0..; `done`: tiles this block stored before; epi: the
   two consumers' 2 x HPDL__WG_EPI_BYTES of shared memory): by the copy
   engine where it can (hpdl__conv_wg_store_box), else element-wise. (The
   int8 convolution's, with its requantisation, is in the int8 section.) */
template <typename T, int BN>
static __device__ __forceinline__ void hpdl__conv_wg_epilogue(const hpdl__conv_wg_args<T> &g, const hpdl__conv_wg_rows &rows,
                                                              const CUtensorMap *map_y, const float *d, int tile, int n0,
                                                              int row0, int done, unsigned char *epi) {
    if (g.tma_y)
        hpdl__conv_wg_store_box<T, BN>(g, map_y, d, tile, n0, row0, done, epi);
    else
        hpdl__conv_wg_store<hpdl__conv_wg_args<T>, float, BN>(g, hpdl__conv_wg_pixels(g, rows, tile), d, n0,
                                                              (float *)(epi + row0 / 64 * HPDL__WG_EPI_BYTES));
}

/* Descriptor of k step j (32 bytes) of the 64-row slice at row0 of a
   stage's operand tile whose rows are ROW bytes of one tap's channels:
   128, swizzled by 128 bytes (hpdl__wg_step_desc; MN: the filter for
   backward-data), or 64, swizzled by 64 bytes (8-row groups 512 bytes
   apart; wgmma's swizzle field 2), for int8 convolutions of at most 64
   input channels, which 128-byte rows would fill half with zeros. */
template <typename T, int ROW, bool MN>
static __device__ __forceinline__ uint64_t hpdl__conv_wg_desc(const unsigned char *tile, int row0, int j) {
    if (ROW == 128) return hpdl__wg_step_desc<T, MN>(tile, row0, j);
    return (hpdl__wg_desc(tile + row0 * ROW + j * 32, 16, 8 * ROW) & ~(3ull << 62)) | 2ull << 62;
}

/* The stages' barriers, made by thread 0 before any copy: full[s] waits for
   the copier's bytes, empty[s] for both consumers to be done with stage s.
   Every thread of the block calls it. */
static __device__ __forceinline__ void hpdl__conv_wg_barriers(uint64_t *full, uint64_t *empty, int stages) {
    if (threadIdx.x == 0) {
        for (int k = 0; k < stages; k++) {
            hpdl__mbar_init(&full[k], 1);
            hpdl__mbar_init(&empty[k], 2);
        }
        hpdl__mbar_init_fence();
    }
    __syncthreads();
}

/* DATA: backward-data (the filter turned and taken MN-major). Persistent:
   block b takes tiles b, b + grid, ... (tile = pixel box + 64..256 output
   channels), and its copier runs on into the next tile's stages while the
   consumers store the last one: the pipeline fills once per block, not
   once per tile (ResNet-50 conv2_x has 9 k-steps a tile). G: the
   arguments, hpdl__conv_wg_args<T> or a type built on it with its own
   hpdl__conv_wg_epilogue (the int8 convolution's); T's accumulators. ROW:
   bytes of channels per k step (hpdl__conv_wg_desc). */
template <typename T, int BN, bool DATA, typename G, int ROW>
__global__ void __launch_bounds__(384, 1) hpdl__conv_wgmma(const __grid_constant__ CUtensorMap map_src,
                                                           const __grid_constant__ CUtensorMap map_w,
                                                           const __grid_constant__ CUtensorMap map_y, G g) {
#ifdef HPDL__SM90A
    typedef hpdl__conv_wg_shape<BN, ROW> SH;
    typedef typename hpdl__wg_type<T>::acc ACC;
    enum { S = SH::S, STAGE = SH::STAGE, A_BYTES = SH::A_BYTES, CHANNELS = ROW / sizeof(T) /* per k step */ };
    static_assert(ROW == 128 || !DATA, "the MN-major filter (backward-data) needs rows of 128 bytes");
    static_assert(HPDL__WG_EPI_BYTES >= 128 * 128, "the two box buffers of hpdl__conv_wg_store_box");
    unsigned char *smem = hpdl__wg_smem_base(), *epi = smem + S * STAGE;
    uint64_t *full = (uint64_t *)(smem + S * STAGE + 2 * HPDL__WG_EPI_BYTES), *empty = full + S;
    const int wg = (int)threadIdx.x / 128, KT = g.taps_h * g.taps_w * g.chunks;
    const int tiles_n = (g.channels + BN - 1) / BN;
    int kt, t, it = 0; /* it: stages used so far, over all of this block's tiles */
    hpdl__conv_wg_barriers(full, empty, S);
    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (threadIdx.x == 0)
            for (t = (int)blockIdx.x; t < g.tiles * tiles_n; t += (int)gridDim.x) {
                int n0, h0, w0, p;
                const int n_base = t % tiles_n * BN;
                hpdl__conv_wg_tile(g, t / tiles_n, &n0, &h0, &w0);
                const unsigned bytes = (unsigned)ROW * (unsigned)(g.box_w * g.box_h * g.box_n + BN);
                int chunk = 0, i = 0, j = 0; /* k step kt's channel chunk and tap (column i, row j): counted, not
                                                divided, as the single producing thread is short of time */
                for (kt = 0; kt < KT; kt++, it++) {
                    unsigned char *st = smem + it % S * STAGE;
                    const int c0 = chunk * CHANNELS;
                    int r, s, h_src, w_src;
                    if (DATA) { /* dx(h) sums dy((h + pad - r dil) / stride) over the phase's taps r */
                        r = g.tap_h0 + j * g.stride_h, s = g.tap_w0 + i * g.stride_w;
                        h_src = h0 + (g.phase_h + g.pad_h - r * g.dilation_h) / g.stride_h;
                        w_src = w0 + (g.phase_w + g.pad_w - s * g.dilation_w) / g.stride_w;
                    } else { /* y(h) sums x(h stride - pad + r dil) */
                        r = j, s = i;
                        h_src = h0 * g.stride_h - g.pad_h + r * g.dilation_h;
                        w_src = w0 * g.stride_w - g.pad_w + s * g.dilation_w;
                    }
                    const int filter_tap = r * g.kernel_w + s;
                    hpdl__mbar_wait(&empty[it % S], (unsigned)(it / S + 1) & 1); /* first pass: free */
                    hpdl__mbar_expect_bytes(&full[it % S], bytes);
                    hpdl__tma_load_4d(&map_src, st, &full[it % S], c0, w_src, h_src, n0);
                    for (p = 0; p < BN / 64; p++) /* filter map (C, R*S, K): forward sums over C, backward-data over K */
                        if (DATA)
                            hpdl__tma_load_3d(&map_w, st + A_BYTES + p * SH::PIECE, &full[it % S], n_base + 64 * p,
                                              filter_tap, c0);
                        else
                            hpdl__tma_load_3d(&map_w, st + A_BYTES + p * SH::PIECE, &full[it % S], c0, filter_tap,
                                              n_base + 64 * p);
                    if (++chunk == g.chunks) {
                        chunk = 0;
                        if (++i == g.taps_w) i = 0, j++;
                    }
                }
            }
    } else {
        ACC d[BN / 2];
        const int row0 = (wg - 1) * 64;
        const auto rows = hpdl__conv_wg_rows_of(g, row0); /* G's own type of rows (the int8 epilogue's) */
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
        auto k_step = [&]() {
            const unsigned char *st = smem + it % S * STAGE;
            hpdl__mbar_wait(&full[it % S], (unsigned)(it / S) & 1);
            hpdl__wg_fence_accs<BN / 2>(d);
            hpdl__wg_fence();
#pragma unroll
            for (int j = 0; j < ROW / 32; j++) /* 32 bytes of channels a step: k16 (f16/bf16) or k32 (int8) */
                hpdl__wgmma_bn<BN, DATA, T>(d, hpdl__conv_wg_desc<T, ROW, false>(st, row0, j),
                                            hpdl__conv_wg_desc<T, ROW, DATA>(st + A_BYTES, 0, j));
            hpdl__wg_commit();
            hpdl__wg_fence_accs<BN / 2>(d);
            hpdl__wg_wait<1>(); /* the previous step's wgmmas are done: its stage can go */
            if (kt > 0) hpdl__wg_release<1>(&empty[(it - 1) % S]);
            kt++, it++;
        };
        for (t = (int)blockIdx.x; t < g.tiles * tiles_n; t += (int)gridDim.x) {
#pragma unroll
            for (kt = 0; kt < BN / 2; kt++) d[kt] = 0;
            kt = 0;
            k_step(); /* peeled, as the GEMM's: ptxas folds the zeros into the first wgmma */
            while (kt < KT) k_step();
            hpdl__wg_wait<0>();
            hpdl__wg_release<1>(&empty[(it - 1) % S]);
            hpdl__wg_fence_accs<BN / 2>(d);
            hpdl__conv_wg_epilogue<T, BN>(g, rows, &map_y, d, t / tiles_n, t % tiles_n * BN, row0,
                                          t / (int)gridDim.x, epi);
        }
        hpdl__wg_epilogue_done();
    }
#else
    (void)map_src; (void)map_w; (void)map_y; (void)g; /* no sm_90a code in this pass: never launched */
#endif
}

/* The tile's box of output pixels: the fewest boxes of at most `most`
   pixels (ties: the widest rows, contiguous in memory); a box of w columns
   spans w * stride input columns, and the engine's boxes stop at 256. */
static inline void hpdl__conv_wg_box(int cols, int rows, int images, int stride_w, int stride_h, int most, int *box_w,
                                     int *box_h, int *box_n) {
    long long best = -1;
    int w, h;
    for (w = cols < most ? cols : most; w >= 1; w--)
        for (h = 1; h <= rows && w * h <= most; h++) {
            int n = most / (w * h) < images ? most / (w * h) : images;
            long long tiles = (long long)((cols + w - 1) / w) * ((rows + h - 1) / h) * ((images + n - 1) / n);
            if (w * stride_w > 256 || h * stride_h > 256 || (best >= 0 && tiles >= best)) continue;
            best = tiles;
            *box_w = w, *box_h = h, *box_n = n;
        }
}

/* The copy engine's swizzle for rows of `row` bytes (128 or 64). */
static inline CUtensorMapSwizzle hpdl__conv_wg_swizzle(int row) {
    return row == 64 ? CU_TENSOR_MAP_SWIZZLE_64B : CU_TENSOR_MAP_SWIZZLE_128B;
}

/* A 4-D NHWC tensor as (C, W, H, N) in boxes of `row` bytes of channels x a
   box of pixels, every stride_w-th column and stride_h-th row of the box_w
   * stride_w x box_h * stride_h x box_n it spans. */
template <typename T>
static inline hpdl_status hpdl__conv_wg_map4(CUtensorMap *map, const hpdl_tensor4 &t, const T *p, int box_w, int box_h,
                                             int box_n, int stride_w, int stride_h, int row = 128) {
    PFN_cuTensorMapEncodeTiled_v12000 encode = hpdl__tma_encoder();
    const size_t e = sizeof(T);
    cuuint64_t dims[4] = {(cuuint64_t)t.c, (cuuint64_t)t.w, (cuuint64_t)t.h, (cuuint64_t)t.n};
    cuuint64_t strides[3] = {t.c * e, (cuuint64_t)t.w * t.c * e, (cuuint64_t)t.h * t.w * t.c * e};
    cuuint32_t box[4] = {(cuuint32_t)(row / e), (cuuint32_t)(box_w * stride_w), (cuuint32_t)(box_h * stride_h),
                         (cuuint32_t)box_n};
    cuuint32_t steps[4] = {1, (cuuint32_t)stride_w, (cuuint32_t)stride_h, 1};
    if (!encode || encode(map, hpdl__wg_type<T>::tma(), 4, (void *)p, dims, strides, box, steps,
                          CU_TENSOR_MAP_INTERLEAVE_NONE, hpdl__conv_wg_swizzle(row), CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                          CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS)
        return HPDL_ERR_UNSUPPORTED;
    return HPDL_OK;
}

/* Tensor maps: the summed-over tensor (x, or dy) in boxes of `row` bytes
   of channels x the tile's pixels (strided), the filter as (C, R*S, K) in
   boxes of `row` bytes x 1 x 64, its rows ldw elements apart. */
template <typename T>
static inline hpdl_status hpdl__conv_wg_maps(const hpdl_tensor4 &src, const T *src_p, const hpdl__conv_geom &geo,
                                             const T *w, size_t ldw, int row, const hpdl__conv_wg_args<T> &g,
                                             int stride_w, int stride_h, CUtensorMap *map_src, CUtensorMap *map_w) {
    PFN_cuTensorMapEncodeTiled_v12000 encode = hpdl__tma_encoder();
    const size_t e = sizeof(T);
    const int taps = geo.p.kernel_h * geo.p.kernel_w, cin = geo.x.c, kout = geo.y.c;
    cuuint64_t dims3[3] = {(cuuint64_t)cin, (cuuint64_t)taps, (cuuint64_t)kout};
    cuuint64_t strides3[2] = {cin * e, (cuuint64_t)(ldw * e)};
    cuuint32_t box3[3] = {(cuuint32_t)(row / e), 1, 64}, ones[3] = {1, 1, 1};
    if (!encode ||
        hpdl__conv_wg_map4(map_src, src, src_p, g.box_w, g.box_h, g.box_n, stride_w, stride_h, row) != HPDL_OK ||
        encode(map_w, hpdl__wg_type<T>::tma(), 3, (void *)w, dims3, strides3, box3, ones, CU_TENSOR_MAP_INTERLEAVE_NONE,
               hpdl__conv_wg_swizzle(row), CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
               CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS)
        return HPDL_ERR_UNSUPPORTED;
    return HPDL_OK;
}

template <typename T, int BN, bool DATA, int ROW = 128, typename G>
static inline hpdl_status hpdl__conv_wg_launch(const CUtensorMap &map_src, const CUtensorMap &map_w,
                                               const CUtensorMap &map_y, const G &g, cudaStream_t stream) {
    void (*kernel)(const CUtensorMap, const CUtensorMap, const CUtensorMap, G) = hpdl__conv_wgmma<T, BN, DATA, G, ROW>;
    const size_t smem = hpdl__conv_wg_shape<BN, ROW>::smem();
    const long long work = (long long)g.tiles * ((g.channels + BN - 1) / BN);
    int sms = 0;
    if (hpdl__sm_count(&sms) != HPDL_OK) return HPDL_ERR_CUDA;
    if (work > INT_MAX) return HPDL_ERR_UNSUPPORTED;
    HPDL_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    kernel<<<(unsigned)(work < sms ? work : sms), 384, smem, stream>>>(map_src, map_w, map_y, g);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* Where the rung applies: one group, NHWC with channel counts that are
   multiples of 8, 16-byte aligned tensors, strides up to 8, an sm_90a
   binary on a Hopper GPU. */
static inline bool hpdl__conv_wg_applies(const hpdl__conv_geom &geo, const void *a, const void *b, long long pixels) {
    return geo.p.groups == 1 && geo.x.layout == HPDL_NHWC && geo.y.layout == HPDL_NHWC && geo.x.c % 8 == 0 &&
           geo.y.c % 8 == 0 && geo.p.stride_h <= 8 && geo.p.stride_w <= 8 && (uintptr_t)a % 16 == 0 &&
           (uintptr_t)b % 16 == 0 && pixels <= INT_MAX && hpdl__wg_available();
}

/* 1x1, stride 1, no padding: a GEMM over the pixels. */
static inline bool hpdl__conv_is_pointwise(const hpdl_conv2d_params &p) {
    return p.kernel_h == 1 && p.kernel_w == 1 && p.stride_h == 1 && p.stride_w == 1 && p.pad_h == 0 && p.pad_w == 0;
}

/* A pointwise convolution's tensors seen as one image of one row: boxes
   are runs of consecutive pixels, none wasted at the ends of rows. */
static inline void hpdl__conv_flatten(hpdl_tensor4 *src, hpdl_tensor4 *dst, long long pixels) {
    src->w = dst->w = (int)pixels;
    src->h = dst->h = src->n = dst->n = 1;
}

/* n elements converted, S -> D, on the stream. */
template <typename S, typename D> static inline hpdl_status hpdl__conv_cast(size_t n, const S *in, D *out, cudaStream_t stream) {
    hpdl__convert_kernel<D, S><<<hpdl__grid_for((int64_t)n, 256), 256, 0, stream>>>((int64_t)n, in, out);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* ---- backward-filter on the wgmma rung ----

   dw[k][r][s][c] = sum over output pixels of dy[pixel][k] x[pixel moved by
   tap (r, s)][c]: a GEMM whose rows are output channels k (A: dy, k
   contiguous, MN-major), whose columns are the (tap, c) pairs (B: that
   tap's box of x, c contiguous, MN-major) and whose k steps are boxes of at
   most 64 output pixels, brought by the same 4-D copies as the forward
   pass. A tile is 128 rows (64 when K <= 64) x 256 columns: four 64-channel
   pieces, each of one tap (channels padded to 64 per tap); three or one
   where that wastes fewer columns (hpdl__conv_wg_wgrad). The sum runs
   over every pixel of the batch (401,408 for ResNet-50's conv2_x at batch
   128) into a small output (64 x 576 there), so the work is split
   stream-K: the tiles' k steps laid end to end, each block takes an equal
   run and, at the end of each tile of its run, adds its sums into an f32
   copy of dw with atomics; dw is that copy rounded. With K <= 64 both
   consumers take the same 64 rows and two of each stage's four k16 steps,
   and add their sums alike. */
struct hpdl__conv_wgrad_wg_args {
    float *dw;                               /* f32 sums, K x R x S x C, zeroed */
    int out_channels, in_channels, taps;     /* K, C, R * S */
    int chunks;                              /* 64-channel pieces per tap */
    int kernel_w, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
    int box_w, box_h, box_n, tiles_w, tiles_h; /* k steps: boxes of output pixels */
    int tiles_m, steps;                      /* row tiles; k steps per tile */
    long long work;                          /* tiles x steps */
};

/* Stages of A (1 or 2 pieces) and B (BN / 64 pieces), each piece 64
   pixels x 64 channels (HPDL__WG_PIECE_BYTES). 32-pixel k steps, with
   twice the stages in flight, measured slower: 0.40 of cuDNN's time
   against 0.54 on ResNet-50's 3x3 layers (f16, H200, 2026-11-26). */
/* TALL: a 3x3 filter at stride 1 takes its three filter rows r of one
   filter column s from one box of x two image rows taller than dy's (boxes
   a multiple of 8 pixels wide: a shift of one image row is then a whole
   number of 8-row swizzle atoms, so tap r's operand is that box r rows
   on, wgmma's piece stride being one image row); x's bytes a stage fall
   from 3 boxes to 1.25. */
template <bool SHARED_ROWS_, int BN_, bool TALL_ = false> struct hpdl__conv_wgrad_shape {
    enum { SHARED_ROWS = SHARED_ROWS_, BN = BN_, TALL = TALL_, X_PIECES = TALL_ ? 2 : BN_ / 64, PIX = 64,
           A_PIECES = SHARED_ROWS_ ? 1 : 2, PIECES = A_PIECES + X_PIECES, A_BYTES = A_PIECES * HPDL__WG_PIECE_BYTES,
           STAGE = PIECES * HPDL__WG_PIECE_BYTES, S = 196608 / STAGE };
    static size_t smem() { return (size_t)S * STAGE + 2 * S * 8 + 1024 /* alignment */; }
};

/* The (image, row, column) of the first output pixel of k step `step`. */
static __device__ __forceinline__ void hpdl__conv_wgrad_box(const hpdl__conv_wgrad_wg_args &g, int step, int *n0,
                                                            int *h0, int *w0) {
    int rest = step / g.tiles_w;
    *w0 = step % g.tiles_w * g.box_w;
    *h0 = rest % g.tiles_h * g.box_h;
    *n0 = rest / g.tiles_h * g.box_n;
}

/* What the producer needs of one tile, found once per tile: its rows of
   dy, and for each of its 64-column pieces of x the first channel and
   the tap's offset (the pieces inside the filter come first). Found per
   stage, these divisions made the single producing thread the bottleneck:
   ~480 instructions a stage, the consumers waiting on the full barrier for
   65 % of their samples (ncu, ResNet-50 conv4_x, H100, 2026-11-26). */
struct hpdl__conv_wgrad_plan {
    int m0, pieces;              /* first row of dy; pieces of x to copy (<= 4) */
    int ch[4], off_w[4], off_h[4]; /* per piece: channel, tap offset in x */
    unsigned bytes;              /* a stage's bytes */
};

template <typename SH>
static __device__ __forceinline__ hpdl__conv_wgrad_plan hpdl__conv_wgrad_plan_tile(const hpdl__conv_wgrad_wg_args &g,
                                                                                  int tile) {
    const int n_base = tile / g.tiles_m * SH::BN, padded = g.chunks * 64;
    hpdl__conv_wgrad_plan t;
    t.m0 = tile % g.tiles_m * SH::A_PIECES * 64;
    t.pieces = 0;
#pragma unroll
    for (int p = 0; p < SH::X_PIECES; p++) {
        const int col = n_base + 64 * p, tap = col / padded;
        t.ch[p] = col % padded;
        t.off_w[p] = tap % g.kernel_w * g.dilation_w - g.pad_w;
        t.off_h[p] = tap / g.kernel_w * g.dilation_h - g.pad_h;
        if (tap < g.taps) t.pieces = p + 1;
    }
    t.bytes = 128u * (unsigned)((SH::A_PIECES + t.pieces) * g.box_w * g.box_h * g.box_n);
    return t;
}

/* The same for the tall boxes: a column tile is (channel chunk, filter
   column s), one box of x from the filter's first row on. */
template <typename SH>
static __device__ __forceinline__ hpdl__conv_wgrad_plan hpdl__conv_wgrad_plan_tall(const hpdl__conv_wgrad_wg_args &g,
                                                                                  int tile) {
    hpdl__conv_wgrad_plan t;
    t.m0 = tile % g.tiles_m * SH::A_PIECES * 64;
    t.pieces = 1;
    t.ch[0] = tile / g.tiles_m / g.kernel_w * 64;
    t.off_w[0] = tile / g.tiles_m % g.kernel_w * g.dilation_w - g.pad_w;
    t.off_h[0] = -g.pad_h;
    t.bytes = 128u * (unsigned)(SH::A_PIECES * 64 + g.box_w * (g.box_h + 2));
    return t;
}

/* One stage: dy's box (A) at output pixel (n0, h0, w0) and the tile's
   (tap, 64 channels) boxes of x (B), or its one tall box (TALL). */
template <typename SH>
static __device__ __forceinline__ void hpdl__conv_wgrad_copy(const hpdl__conv_wgrad_wg_args &g, const CUtensorMap *map_dy,
                                                             const CUtensorMap *map_x, const hpdl__conv_wgrad_plan &t,
                                                             unsigned char *st, uint64_t *full, int n0, int h0, int w0) {
    const int xw = w0 * g.stride_w, xh = h0 * g.stride_h;
    hpdl__mbar_expect_bytes(full, t.bytes);
#pragma unroll
    for (int p = 0; p < SH::A_PIECES; p++)
        hpdl__tma_load_4d(map_dy, st + p * HPDL__WG_PIECE_BYTES, full, t.m0 + 64 * p, w0, h0, n0);
#pragma unroll
    for (int p = 0; p < (SH::TALL ? 1 : SH::X_PIECES); p++)
        if (p < t.pieces)
            hpdl__tma_load_4d(map_x, st + SH::A_BYTES + p * HPDL__WG_PIECE_BYTES, full, t.ch[p], xw + t.off_w[p],
                              xh + t.off_h[p], n0);
}

/* The next k step's box: along the row, then down, then to the next images. */
static __device__ __forceinline__ void hpdl__conv_wgrad_advance(const hpdl__conv_wgrad_wg_args &g, int *n0, int *h0,
                                                                int *w0) {
    *w0 += g.box_w;
    if (*w0 < g.tiles_w * g.box_w) return;
    *w0 = 0;
    *h0 += g.box_h;
    if (*h0 < g.tiles_h * g.box_h) return;
    *h0 = 0;
    *n0 += g.box_n;
}

/* This warpgroup's 64 x BN sums of tile `tile` added into g.dw (wgmma's
   accumulator layout: see hpdl__wg_store). */
template <typename SH>
static __device__ __forceinline__ void hpdl__conv_wgrad_flush(const hpdl__conv_wgrad_wg_args &g, const float *d,
                                                              int tile, int row0) {
#ifdef HPDL__SM90A
    const int t = (int)threadIdx.x % 128, lane = t % 32, r = t / 32 * 16 + lane / 4, c = lane % 4 * 2;
    const int m0 = tile % g.tiles_m * (SH::SHARED_ROWS ? 64 : 128) + row0;
    const int n_base = tile / g.tiles_m * SH::BN, padded = g.chunks * 64, cols = g.taps * g.in_channels;
#pragma unroll
    for (int j = 0; j < SH::BN / 8; j++) {
        const int n = n_base + 8 * j + c, s = tile / g.tiles_m % g.kernel_w; /* TALL: piece j / 8 is filter row r */
        const int tap = SH::TALL ? j / 8 * g.kernel_w + s : n / padded;
        const int ch = SH::TALL ? tile / g.tiles_m / g.kernel_w * 64 + (8 * j + c) % 64 : n % padded;
        if (tap >= g.taps || ch >= g.in_channels) continue; /* ch even, C a multiple of 8: ch + 1 < C */
#pragma unroll
        for (int half = 0; half < 2; half++) {
            const int m = m0 + r + 8 * half;
            if (m < g.out_channels)
                atomicAdd((float2 *)(g.dw + (size_t)m * cols + tap * g.in_channels + ch),
                          make_float2(d[4 * j + 2 * half], d[4 * j + 2 * half + 1]));
        }
    }
#else
    (void)g; (void)d; (void)tile; (void)row0;
#endif
}

/* d (64 x BN) += A B, both operands MN-major; 192 wide as well (f16 and
   bf16 only, so not in hpdl__wgmma_bn, which int8 instantiates too). */
template <int BN, typename T> static __device__ __forceinline__ void hpdl__wgmma_mn(float *d, uint64_t a, uint64_t b) {
    if (BN == 192) hpdl__wgmma_192<1, 1>(d, a, b, T());
    else hpdl__wgmma_bn<BN, 1, T, 1>(d, a, b);
}

template <typename T, typename SH>
__global__ void __launch_bounds__(384, 1) hpdl__conv_wgmma_wgrad(const __grid_constant__ CUtensorMap map_dy,
                                                                 const __grid_constant__ CUtensorMap map_x,
                                                                 hpdl__conv_wgrad_wg_args g) {
#ifdef HPDL__SM90A
    enum { SHARED_ROWS = SH::SHARED_ROWS, S = SH::S, STAGE = SH::STAGE, STEPS = SH::PIX / 16 /* k16 steps a stage */ };
    unsigned char *smem = hpdl__wg_smem_base();
    uint64_t *full = (uint64_t *)(smem + S * STAGE), *empty = full + S;
    const int wg = (int)threadIdx.x / 128, box = g.box_w * g.box_h * g.box_n, tail = (SH::PIX - box) * 8;
    const long long begin = (long long)blockIdx.x * g.work / gridDim.x,
                    end = (long long)(blockIdx.x + 1) * g.work / gridDim.x;
    long long i;
    int it = 0; /* stages used so far */
    /* Rows past the box are never copied: zero them once in every piece
       (stale values times zeros could still be NaN). */
    for (i = threadIdx.x; i < (long long)S * SH::PIECES * tail; i += blockDim.x)
        ((uint4 *)(smem + i / tail * HPDL__WG_PIECE_BYTES + box * 128))[i % tail] = make_uint4(0, 0, 0, 0);
    hpdl__fence_async_smem();
    hpdl__conv_wg_barriers(full, empty, S);
    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (threadIdx.x == 0)
            for (i = begin; i < end;) { /* a tile at a time: its plan, then its k steps */
                const int tile = (int)(i / g.steps);
                const long long tile_end = (tile + 1) * (long long)g.steps < end ? (tile + 1) * (long long)g.steps : end;
                const hpdl__conv_wgrad_plan t =
                    SH::TALL ? hpdl__conv_wgrad_plan_tall<SH>(g, tile) : hpdl__conv_wgrad_plan_tile<SH>(g, tile);
                int n0, h0, w0;
                hpdl__conv_wgrad_box(g, (int)(i % g.steps), &n0, &h0, &w0);
                for (; i < tile_end; i++, it++) {
                    hpdl__mbar_wait(&empty[it % S], (unsigned)(it / S + 1) & 1); /* first pass: free */
                    hpdl__conv_wgrad_copy<SH>(g, &map_dy, &map_x, t, smem + it % S * STAGE, &full[it % S], n0,
                                                       h0, w0);
                    hpdl__conv_wgrad_advance(g, &n0, &h0, &w0);
                }
            }
    } else {
        float d[SH::BN / 2];
        const int row0 = SHARED_ROWS ? 0 : (wg - 1) * 64;
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
        for (i = begin; i < end;) {
            const int tile = (int)(i / g.steps);
            const long long tile_end = (tile + 1) * (long long)g.steps < end ? (tile + 1) * (long long)g.steps : end;
            const long long first = i;
#pragma unroll
            for (int k = 0; k < SH::BN / 2; k++) d[k] = 0.0f;
            for (; i < tile_end; i++, it++) {
                const unsigned char *st = smem + it % S * STAGE;
                hpdl__mbar_wait(&full[it % S], (unsigned)(it / S) & 1);
                hpdl__wg_fence_accs<SH::BN / 2>(d);
                hpdl__wg_fence();
#pragma unroll
                for (int j = 0; j < (SHARED_ROWS ? STEPS / 2 : STEPS); j++) { /* shared rows: half the steps each */
                    const int step = SHARED_ROWS ? (wg - 1) * STEPS / 2 + j : j;
                    hpdl__wgmma_mn<SH::BN, T>(
                        d, hpdl__wg_step_desc<T, true>(st, row0, step),
                        SH::TALL ? hpdl__wg_desc(st + SH::A_BYTES + step * 16 * 128, (unsigned)g.box_w * 128, 1024)
                                 : hpdl__wg_step_desc<T, true>(st + SH::A_BYTES, 0, step));
                }
                hpdl__wg_commit();
                hpdl__wg_fence_accs<SH::BN / 2>(d);
                hpdl__wg_wait<1>(); /* the previous stage's wgmmas are done: it can go */
                if (i > first) hpdl__wg_release<1>(&empty[(it - 1) % S]);
            }
            hpdl__wg_wait<0>();
            hpdl__wg_release<1>(&empty[(it - 1) % S]);
            hpdl__wg_fence_accs<SH::BN / 2>(d);
            hpdl__conv_wgrad_flush<SH>(g, d, tile, row0);
        }
    }
#else
    (void)map_dy; (void)map_x; (void)g; /* no sm_90a code in this pass: never launched */
#endif
}

/* Whether `tiles` tiles line up on `sms` SMs: every tile the same number
   of blocks, at most 5 % of the SMs idle. The tiles' blocks then walk the
   same pixels at the same time and each box of x and dy comes from DRAM
   once. With runs across tile borders, ResNet-50's conv3_x (5 tiles) read
   3.6 times x and dy from DRAM (L2 hit rate 46 %, DRAM 69 % busy; ncu,
   H100, 2026-11-26). */
static inline bool hpdl__conv_wgrad_lined_up(long long tiles, int sms) {
    return tiles > 0 && tiles <= sms && tiles * (sms / tiles) * 20 >= 19LL * sms;
}

template <typename T, typename SH>
static inline hpdl_status hpdl__conv_wgrad_launch(const CUtensorMap &map_dy, const CUtensorMap &map_x,
                                                  const hpdl__conv_wgrad_wg_args &g, cudaStream_t stream) {
    void (*kernel)(const CUtensorMap, const CUtensorMap, hpdl__conv_wgrad_wg_args) = hpdl__conv_wgmma_wgrad<T, SH>;
    const size_t smem = SH::smem();
    const long long tiles = g.work / g.steps;
    int sms = 0;
    if (hpdl__sm_count(&sms) != HPDL_OK) return HPDL_ERR_CUDA;
    long long grid = g.work < sms ? g.work : sms;
    if (hpdl__conv_wgrad_lined_up(tiles, sms)) grid = tiles * (sms / tiles);
    HPDL_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    kernel<<<(unsigned)grid, 384, smem, stream>>>(map_dy, map_x, g);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

template <typename T, bool SHARED_ROWS>
static inline hpdl_status hpdl__conv_wgrad_launch_bn(int bn, bool tall, const CUtensorMap &map_dy,
                                                     const CUtensorMap &map_x, const hpdl__conv_wgrad_wg_args &g,
                                                     cudaStream_t stream) {
    if (tall)
        return hpdl__conv_wgrad_launch<T, hpdl__conv_wgrad_shape<SHARED_ROWS, 192, true> >(map_dy, map_x, g, stream);
    if (bn == 64) return hpdl__conv_wgrad_launch<T, hpdl__conv_wgrad_shape<SHARED_ROWS, 64> >(map_dy, map_x, g, stream);
    if (bn == 192) return hpdl__conv_wgrad_launch<T, hpdl__conv_wgrad_shape<SHARED_ROWS, 192> >(map_dy, map_x, g, stream);
    return hpdl__conv_wgrad_launch<T, hpdl__conv_wgrad_shape<SHARED_ROWS, 256> >(map_dy, map_x, g, stream);
}

/* The boxes along y's rows and columns, and the k steps of a tile. */
static inline void hpdl__conv_wgrad_steps(hpdl__conv_wgrad_wg_args *g, const hpdl_tensor4 &y) {
    g->tiles_w = (y.w + g->box_w - 1) / g->box_w;
    g->tiles_h = (y.h + g->box_h - 1) / g->box_h;
    g->steps = g->tiles_w * g->tiles_h * ((y.n + g->box_n - 1) / g->box_n);
}

/* Whether the tall boxes (hpdl__conv_wgrad_shape's TALL) apply: a 3x3
   filter at stride and dilation 1, boxes of 64 pixels of one image a
   multiple of 8 wide taking no more k steps than the ordinary boxes
   (`steps`), and tiles that line up on the SMs. Then sets the box. */
static inline bool hpdl__conv_wgrad_tall(const hpdl_conv2d_params &p, const hpdl_tensor4 &y, int tiles_m, int chunks,
                                         long long steps, int *box_w, int *box_h) {
    long long best = -1, tiles = (long long)tiles_m * p.kernel_w * chunks;
    int sms = 0, best_w = 8;
    if (p.kernel_h != 3 || p.stride_h != 1 || p.stride_w != 1 || p.dilation_h != 1 || p.dilation_w != 1 ||
        hpdl__sm_count(&sms) != HPDL_OK || !hpdl__conv_wgrad_lined_up(tiles, sms))
        return false;
    for (int w = 8; w <= 32; w *= 2) {
        const long long count = (long long)((y.w + w - 1) / w) * ((y.h + 64 / w - 1) / (64 / w)) * y.n;
        if (best < 0 || count < best) best = count, best_w = w;
    }
    if (best > steps) return false; /* the ordinary boxes stay */
    *box_w = best_w, *box_h = 64 / best_w;
    return true;
}

/* Backward-filter: x, dy -> dw through f32 sums (see above). The caller
   checked hpdl__conv_wg_applies. */
template <typename T>
static inline hpdl_status hpdl__conv_wg_wgrad(const hpdl__conv_geom &geo, const T *x, const T *dy, T *dw,
                                              cudaStream_t stream) {
    const hpdl_conv2d_params &p = geo.p;
    hpdl_tensor4 xt = geo.x, yt = geo.y;
    const size_t nw = hpdl_tensor4_count(&geo.w);
    const bool shared_rows = yt.c <= 64;
    hpdl__conv_wgrad_wg_args g;
    CUtensorMap map_dy, map_x;
    hpdl_status s;
    long long tiles;
    int pieces, bn, x_rows;
    bool tall;
    if (hpdl__conv_is_pointwise(p)) hpdl__conv_flatten(&xt, &yt, (long long)yt.n * yt.h * yt.w);
    hpdl__conv_wg_box(yt.w, yt.h, yt.n, p.stride_w, p.stride_h, hpdl__conv_wgrad_shape<true, 256>::PIX, &g.box_w,
                      &g.box_h, &g.box_n);
    g.out_channels = yt.c; g.in_channels = xt.c;
    g.taps = p.kernel_h * p.kernel_w; g.kernel_w = p.kernel_w;
    g.chunks = (xt.c + 63) / 64;
    g.stride_h = p.stride_h; g.stride_w = p.stride_w; g.pad_h = p.pad_h; g.pad_w = p.pad_w;
    g.dilation_h = p.dilation_h; g.dilation_w = p.dilation_w;
    g.tiles_m = (yt.c + (shared_rows ? 63 : 127)) / (shared_rows ? 64 : 128);
    /* Tiles of 4 pieces of (tap, 64 channels); of 3 where the pieces come
       in threes and not fours (a 3x3 filter over 64 or 128 channels: 9 or
       18 pieces, the last tile of 4 a quarter or half full); of 1 where
       there is one. */
    pieces = g.taps * g.chunks;
    bn = pieces == 1 ? 64 : pieces % 4 != 0 && pieces % 3 == 0 ? 192 : 256;
    tiles = (long long)g.tiles_m * ((pieces * 64 + bn - 1) / bn);
    hpdl__conv_wgrad_steps(&g, yt);
    tall = hpdl__conv_wgrad_tall(p, yt, g.tiles_m, g.chunks, g.steps, &g.box_w, &g.box_h);
    if (tall) { /* column tiles (channel chunk, filter column), one image a box */
        g.box_n = 1;
        hpdl__conv_wgrad_steps(&g, yt);
        bn = 192;
        tiles = (long long)g.tiles_m * p.kernel_w * g.chunks;
    }
    g.work = tiles * g.steps;
    x_rows = tall ? g.box_h + 2 : g.box_h;
    if (tiles > INT_MAX || hpdl__conv_wg_map4(&map_dy, yt, dy, g.box_w, g.box_h, g.box_n, 1, 1) != HPDL_OK ||
        hpdl__conv_wg_map4(&map_x, xt, x, g.box_w, x_rows, g.box_n, p.stride_w, p.stride_h) != HPDL_OK)
        return HPDL_ERR_UNSUPPORTED;
    HPDL_CUDA_TRY(cudaMallocAsync((void **)&g.dw, nw * sizeof(float), stream));
    if (cudaMemsetAsync(g.dw, 0, nw * sizeof(float), stream) != cudaSuccess) s = HPDL_ERR_CUDA;
    else s = shared_rows ? hpdl__conv_wgrad_launch_bn<T, true>(bn, tall, map_dy, map_x, g, stream)
                         : hpdl__conv_wgrad_launch_bn<T, false>(bn, tall, map_dy, map_x, g, stream);
    if (s == HPDL_OK) s = hpdl__conv_cast(nw, (const float *)g.dw, dw, stream);
    if (cudaFreeAsync(g.dw, stream) != cudaSuccess && s == HPDL_OK) s = HPDL_ERR_CUDA;
    return s;
}

/* The pixels of y (dx when backward-data) that g's phase computes, and
   their tiles. */
template <typename T> static inline hpdl_status hpdl__conv_wg_tiles(hpdl__conv_wg_args<T> *g, const hpdl_tensor4 &dst) {
    long long tiles;
    g->rows = (dst.h - g->phase_h + g->y_step_h - 1) / g->y_step_h;
    g->cols = (dst.w - g->phase_w + g->y_step_w - 1) / g->y_step_w;
    g->tiles_w = (g->cols + g->box_w - 1) / g->box_w;
    g->tiles_h = (g->rows + g->box_h - 1) / g->box_h;
    tiles = (long long)g->tiles_w * g->tiles_h * ((dst.n + g->box_n - 1) / g->box_n);
    if (tiles >= INT_MAX) return HPDL_ERR_UNSUPPORTED;
    g->tiles = (int)tiles;
    return HPDL_OK;
}

/* The width of a tile's columns: as wide as the output channels (up to
   256), unless narrower tiles finish sooner. The persistent grid (one block
   an SM) takes ceil(tiles * column tiles / SMs) rounds, a round costing
   about the width plus 64 (a k step brings 128 rows of A whatever the
   width). ResNet-50's 1x1 1024->256 layer at batch 128 has 196 tiles of
   pixels: 256 wide, two rounds on 132 SMs, the second 48 % full (0.85 of
   cuDNN, H100, 2026-11-26); 128 wide, three full ones. */
static inline int hpdl__conv_wg_columns(long long tiles, int channels) {
    int sms = 0, best = channels <= 64 ? 64 : channels <= 128 ? 128 : 256, bn;
    long long best_cost = -1;
    if (hpdl__sm_count(&sms) != HPDL_OK || sms <= 0) return best;
    for (bn = best; bn >= 64; bn /= 2) {
        const long long rounds = (tiles * ((channels + bn - 1) / bn) + sms - 1) / sms, cost = rounds * (bn + 64);
        if (best_cost < 0 || cost < best_cost) best_cost = cost, best = bn;
    }
    return best;
}

/* One launch over the pixels of y (dx when data) that g's phase computes. */
template <typename T>
static inline hpdl_status hpdl__conv_wg_phase(hpdl__conv_wg_args<T> g, bool data, const hpdl_tensor4 &dst,
                                              const CUtensorMap &map_src, const CUtensorMap &map_w, cudaStream_t stream) {
    CUtensorMap map_y = CUtensorMap();
    if (hpdl__conv_wg_tiles(&g, dst) != HPDL_OK) return HPDL_ERR_UNSUPPORTED;
    /* y in the tiles' boxes of pixels x 64 channels (hpdl__conv_wg_store_box), unless a phase's pixels are strided */
    g.tma_y = g.y_step_h == 1 && g.y_step_w == 1 &&
              hpdl__conv_wg_map4(&map_y, dst, g.y, g.box_w, g.box_h, g.box_n, 1, 1) == HPDL_OK;
    const int bn = hpdl__conv_wg_columns(g.tiles, dst.c);
    if (bn == 64)
        return data ? hpdl__conv_wg_launch<T, 64, true>(map_src, map_w, map_y, g, stream)
                    : hpdl__conv_wg_launch<T, 64, false>(map_src, map_w, map_y, g, stream);
    if (bn == 128)
        return data ? hpdl__conv_wg_launch<T, 128, true>(map_src, map_w, map_y, g, stream)
                    : hpdl__conv_wg_launch<T, 128, false>(map_src, map_w, map_y, g, stream);
    return data ? hpdl__conv_wg_launch<T, 256, true>(map_src, map_w, map_y, g, stream)
                : hpdl__conv_wg_launch<T, 256, false>(map_src, map_w, map_y, g, stream);
}

/* The arguments but the phase's, and the tensor maps, of a pass that sums
   over src (x; dy for backward-data) into dst (y; dx) at out, `row` bytes
   of channels a k step: the filter's rows are ldw elements apart.
   Forward: the one phase, all taps. */
template <typename T>
static inline hpdl_status hpdl__conv_wg_setup(const hpdl__conv_geom &geo, bool data, const hpdl_tensor4 &src,
                                              const hpdl_tensor4 &dst, const T *src_p, const T *w, size_t ldw, int row,
                                              T *out, hpdl__conv_wg_args<T> *g, CUtensorMap *map_src,
                                              CUtensorMap *map_w) {
    const hpdl_conv2d_params &p = geo.p;
    g->y = out;
    g->images = dst.n; g->y_rows = dst.h; g->y_cols = dst.w; g->channels = dst.c;
    g->vec = dst.c % 4 == 0 && (uintptr_t)out % 8 == 0;
    g->tma_y = 0;
    g->kernel_w = p.kernel_w;
    g->stride_h = p.stride_h; g->stride_w = p.stride_w;
    g->pad_h = p.pad_h; g->pad_w = p.pad_w;
    g->dilation_h = p.dilation_h; g->dilation_w = p.dilation_w;
    g->y_step_h = data ? p.stride_h : 1; g->y_step_w = data ? p.stride_w : 1;
    g->phase_h = g->phase_w = g->tap_h0 = g->tap_w0 = 0;
    g->taps_h = p.kernel_h; g->taps_w = p.kernel_w;
    g->chunks = (int)((src.c * sizeof(T) + row - 1) / row);
    /* boxes of the largest phase's pixels (backward-data), else of y's */
    hpdl__conv_wg_box((dst.w + g->y_step_w - 1) / g->y_step_w, (dst.h + g->y_step_h - 1) / g->y_step_h, dst.n,
                      data ? 1 : p.stride_w, data ? 1 : p.stride_h, 128, &g->box_w, &g->box_h, &g->box_n);
    return hpdl__conv_wg_maps(src, src_p, geo, w, ldw, row, *g, data ? 1 : p.stride_w, data ? 1 : p.stride_h, map_src,
                              map_w);
}

/* The rung for f16/bf16 where it applies (hpdl__conv_wg_applies; backward-
   data with both stride and dilation excepted), else HPDL_ERR_UNSUPPORTED. (a, b, out) as hpdl__cuda_conv2d takes them. */
template <typename T>
static inline hpdl_status hpdl__conv_wg_run(const hpdl__conv_geom &geo, hpdl__conv_pass pass, const T *a, const T *b,
                                            T *out, cudaStream_t stream) {
    const bool data = pass == HPDL__CONV_INPUT_GRAD;
    hpdl_tensor4 src = data ? geo.y : geo.x, dst = data ? geo.x : geo.y;
    const hpdl_conv2d_params &p = geo.p;
    const long long pixels = (long long)dst.n * dst.h * dst.w;
    hpdl__conv_wg_args<T> g;
    CUtensorMap map_src, map_w;
    if ((data && (p.stride_h != 1 || p.stride_w != 1) && (p.dilation_h != 1 || p.dilation_w != 1)) ||
        !hpdl__conv_wg_applies(geo, a, b, pixels))
        return HPDL_ERR_UNSUPPORTED;
    if (pass == HPDL__CONV_FILTER_GRAD) return hpdl__conv_wg_wgrad(geo, a, b, out, stream);
    if (hpdl__conv_is_pointwise(p)) hpdl__conv_flatten(&src, &dst, pixels);
    if (hpdl__conv_wg_setup(geo, data, src, dst, data ? b : a, data ? a : b, (size_t)p.kernel_h * p.kernel_w * geo.x.c,
                            128, out, &g, &map_src, &map_w) != HPDL_OK)
        return HPDL_ERR_UNSUPPORTED;
    if (!data) return hpdl__conv_wg_phase(g, false, dst, map_src, map_w, stream);
    /* Backward-data at stride s: dx's rows h with h mod s = phase sum the
       filter rows r with r = phase + pad (mod s), those alone: one launch
       per phase (one at stride 1), each a stride-1 convolution of dy over
       that phase's pixels. A phase without taps is zero. */
    if (p.kernel_h < p.stride_h || p.kernel_w < p.stride_w)
        HPDL_CUDA_TRY(cudaMemsetAsync(out, 0, hpdl_tensor4_count(&geo.x) * sizeof(T), stream));
    for (g.phase_h = 0; g.phase_h < p.stride_h; g.phase_h++)
        for (g.phase_w = 0; g.phase_w < p.stride_w; g.phase_w++) {
            g.tap_h0 = (g.phase_h + p.pad_h) % p.stride_h;
            g.tap_w0 = (g.phase_w + p.pad_w) % p.stride_w;
            g.taps_h = g.tap_h0 < p.kernel_h ? (p.kernel_h - g.tap_h0 + p.stride_h - 1) / p.stride_h : 0;
            g.taps_w = g.tap_w0 < p.kernel_w ? (p.kernel_w - g.tap_w0 + p.stride_w - 1) / p.stride_w : 0;
            if (g.taps_h * g.taps_w == 0) continue;
            hpdl_status s = hpdl__conv_wg_phase(g, true, dst, map_src, map_w, stream);
            if (s != HPDL_OK) return s;
        }
    return HPDL_OK;
}

/* A rung that only f16 and bf16 have, as one call for every element type:
   RUNG::run for those two, HPDL_ERR_UNSUPPORTED for the others. (The
   specialisations' run is a template so that the rung's kernels are built
   only where it is called: an explicit specialisation's ordinary member
   would build them in every file that includes this.) */
template <typename RUNG, typename T> struct hpdl__conv_16bit {
    static hpdl_status run(const hpdl__conv_geom &, hpdl__conv_pass, const T *, const T *, T *, cudaStream_t) {
        return HPDL_ERR_UNSUPPORTED;
    }
};
template <typename RUNG> struct hpdl__conv_16bit<RUNG, __half> {
    HPDL_LAZY hpdl_status run(const hpdl__conv_geom &g, hpdl__conv_pass pass, const __half *a, const __half *b,
                              __half *out, cudaStream_t stream) {
        return RUNG::run(g, pass, a, b, out, stream);
    }
};
template <typename RUNG> struct hpdl__conv_16bit<RUNG, __nv_bfloat16> {
    HPDL_LAZY hpdl_status run(const hpdl__conv_geom &g, hpdl__conv_pass pass, const __nv_bfloat16 *a,
                              const __nv_bfloat16 *b, __nv_bfloat16 *out, cudaStream_t stream) {
        return RUNG::run(g, pass, a, b, out, stream);
    }
};

/* The wgmma rung, for hpdl__conv_16bit. */
struct hpdl__conv_wg_rung {
    template <typename T>
    static hpdl_status run(const hpdl__conv_geom &g, hpdl__conv_pass pass, const T *a, const T *b, T *out,
                           cudaStream_t stream) {
        return hpdl__conv_wg_run(g, pass, a, b, out, stream);
    }
};

/* ---- few-channel rung: tensor cores for C <= 8 (the stems) ----------------------------

   Forward, f16/bf16, x and y NHWC, one group, at most 8 input channels: the
   GEMM's K = R*S*C is short (147 for ResNet-50's 7x7 stem) and C % 8 != 0
   leaves the mma rung only its element-by-element gather. Here each block is
   persistent: it keeps BN filters in shared memory for the whole run (KRSC
   rows, whose R*S*C taps are contiguous, padded with zeros to KP, a multiple
   of 16) and walks tiles of 128 output pixels, TH rows x TW columns of one
   image (TW a power of two). For a tile it stages the input patch those
   pixels read, patch_h rows of patch_w pixels x C channels, zeros in the
   padding: each patch row is one contiguous run of x, copied by cp.async
   in 4-byte pairs of elements, and the next tile's patch is copied into a
   second buffer while the block computes on this one. mma.sync's A operand
   is then read straight from the patch: element (pixel, kk), kk = (r, s, c),
   is patch[rowbase(pixel) + koff(kk)], the pixel's and the tap's parts each
   worked out once per block (taps past R*S*C point into a zeroed region
   between the two buffers), so no im2col tile is built. Four warps of 32
   pixels x BN channels; the output goes through a per-warp shared tile as
   16-byte stores of whole pixels. Backward-filter (below) reuses the tiles
   and the patch. */
template <typename T> struct hpdl__conv_fm_args {
    const T *x, *w; /* NHWC input, KRSC filter */
    T *y;           /* NHWC output */
    int h, w_, c, p, q, k; /* x: H W C, y: P Q K (images: tiles / (tiles_h * tiles_w)) */
    int s, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w;
    int tw_log2, th, tiles_h, tiles_w, tiles; /* tiles of th x 2^tw_log2 output pixels */
    int patch_h, patch_w;                     /* the input pixels a tile reads */
    int patch_ld;                             /* elements per patch row in shared memory (even, > patch_w C) */
    int patch_buf;                            /* elements per patch buffer (a multiple of 8) */
    int x_pairs; /* x's rows are whole 4-byte pairs of elements (W C even, x aligned): cp.async */
    int taps, kp;                             /* R*S*C, rounded up to 16 */
    int y_vec;                                /* 16-byte accesses of y or dy (K % 8 == 0, aligned) */
    const T *dy;                              /* backward-filter: NHWC dy (x, y: unused) ... */
    float *dw;                                /* ... and the f32 sums of dw, KRSC, zeroed */
};

/* Shared memory of a block: the filter (BN rows of kp + 8: ldmatrix's rows
   then fall on distinct banks), an offset table (kp ints) per patch buffer,
   patch buffer 0, a zeroed region as large, patch buffer 1, the warps'
   output tiles (32 rows of BN + 8). */
template <int BN> struct hpdl__conv_fm_smem {
    static __host__ __device__ size_t filter(int kp) { return (size_t)BN * (kp + 8) * 2; }
    static __host__ __device__ size_t patches(int patch_buf) { return (size_t)3 * patch_buf * 2; }
    static size_t bytes(int kp, int patch_buf) {
        return filter(kp) + (size_t)2 * kp * 4 + patches(patch_buf) + 4 * 32 * (BN + 8) * 2;
    }
};

/* The two parts of a patch offset: tap kk = (r, s, c) (past the taps:
   padded) and the tile's output pixel m (its row m / TW, column m % TW). */
template <typename T>
static __device__ __forceinline__ int hpdl__conv_fm_tap_offset(const hpdl__conv_fm_args<T> &a, int kk, int padded) {
    const int c = kk % a.c, r = kk / a.c / a.s, s = kk / a.c % a.s;
    return kk < a.taps ? r * a.dil_h * a.patch_ld + s * a.dil_w * a.c + c : padded;
}
template <typename T> static __device__ __forceinline__ int hpdl__conv_fm_pixel_offset(const hpdl__conv_fm_args<T> &a, int m) {
    return (m >> a.tw_log2) * a.stride_h * a.patch_ld + (m & ((1 << a.tw_log2) - 1)) * a.stride_w * a.c;
}

/* Where index i of a run of 16-deep steps goes in a table read as one int4
   per lane t and step: i = 16 ks + 2t, +1, +8, +9 (the fragment's pairs). */
static __device__ __forceinline__ int hpdl__conv_fm_slot(int i) {
    const int j = i % 16;
    return i / 16 * 16 + j % 8 / 2 * 4 + j / 8 * 2 + j % 2;
}

/* Tile t's image and first output pixel. */
template <typename T>
static __device__ __forceinline__ void hpdl__conv_fm_tile_at(const hpdl__conv_fm_args<T> &a, int t, int *n, int *oh0,
                                                             int *ow0) {
    *ow0 = (t % a.tiles_w) << a.tw_log2;
    *oh0 = t / a.tiles_w % a.tiles_h * a.th;
    *n = t / a.tiles_w / a.tiles_h;
}

/* Once per block: the filter rows n0.. (zeros past K and past the taps), the
   tap offsets of the A fragments (hpdl__conv_fm_slot's table), one table per
   patch buffer, whose padded taps point into the zeros after buffer 0 or
   before buffer 1, and those zeros. */
template <typename T, int BN>
static __device__ void hpdl__conv_fm_setup(const hpdl__conv_fm_args<T> &a, T *ws, int *koff, unsigned short *zeros,
                                           int n0) {
    const int wld = a.kp + 8;
    for (int e = threadIdx.x; e < BN * a.kp; e += blockDim.x) {
        const int row = e / a.kp, kk = e - row * a.kp;
        ws[row * wld + kk] = n0 + row < a.k && kk < a.taps ? a.w[(size_t)(n0 + row) * a.taps + kk] : T(0.0f);
    }
    for (int kk = threadIdx.x; kk < a.kp; kk += blockDim.x) {
        koff[hpdl__conv_fm_slot(kk)] = hpdl__conv_fm_tap_offset(a, kk, a.patch_buf);
        koff[a.kp + hpdl__conv_fm_slot(kk)] = hpdl__conv_fm_tap_offset(a, kk, -a.patch_buf);
    }
    for (int e = threadIdx.x; e < a.patch_buf; e += blockDim.x) zeros[e] = 0;
}

/* Starts copying the input patch of the tile whose first output pixel is
   (n, oh0, ow0) into buf: row i is x's row ih0 + i from element e0 (its
   pixel iw0 = ow0 * stride - pad), zeros outside the image, in pairs of
   elements. Where x_pairs, a pair is one 4-byte cp.async (or zeros), aligned
   as in x: for an odd e0 each row is copied from element e0 - 1 and the
   patch starts at buf + 1. Returns that shift (0 or 1). Else plain loads,
   pairs from e0, done on return. Raw 16-bit copies (the zero is 0 in both
   types). The pairs of a row cover patch_ld elements, one more than the
   patch row or one before it: patch_ld >= patch_w C + 1. */
template <typename T>
static __device__ __forceinline__ int hpdl__conv_fm_stage(const hpdl__conv_fm_args<T> &a, unsigned short *buf, int n,
                                                          int oh0, int ow0) {
    const int x_row = a.w_ * a.c, ih0 = oh0 * a.stride_h - a.pad_h, pairs = a.patch_ld / 2;
    const int e0 = (ow0 * a.stride_w - a.pad_w) * a.c, shift = a.x_pairs ? e0 & 1 : 0;
    const unsigned short *x = (const unsigned short *)a.x + (size_t)n * a.h * x_row;
    for (int u = threadIdx.x; u < a.patch_h * pairs; u += blockDim.x) {
        const int i = u / pairs, e = 2 * (u - i * pairs), ih = ih0 + i, ge = e0 - shift + e;
        const bool row_in = ih >= 0 && ih < a.h;
        const unsigned short *row = x + (size_t)(row_in ? ih : 0) * x_row;
        unsigned short *dst = buf + i * a.patch_ld + e;
        if (a.x_pairs) { /* ge and x_row even: the pair is inside the row or outside it */
            const bool in = row_in && ge >= 0 && ge < x_row;
            hpdl__cp_async_or_zero<4>(dst, row + (in ? ge : 0), in);
        } else {
            dst[0] = row_in && ge >= 0 && ge < x_row ? __ldg(row + ge) : 0;
            dst[1] = row_in && ge + 1 >= 0 && ge + 1 < x_row ? __ldg(row + ge + 1) : 0;
        }
    }
    return shift;
}

/* Two 16-bit patch elements as one A-fragment register (the lower k in the low half). */
static __device__ __forceinline__ unsigned hpdl__conv_fm_pair(const unsigned short *p, int lo, int hi) {
    return (unsigned)p[lo] | (unsigned)p[hi] << 16;
}

/* The warp's 32 pixels x BN channels of the tile: acc = A B over kp / 16
   steps. rowbase[2i], rowbase[2i + 1]: the patch offsets of this lane's rows
   g and g + 8 of the warp's 16-pixel tile i. B by ldmatrix from the filter rows. */
template <typename T, int NJ>
static __device__ __forceinline__ void hpdl__conv_fm_mma(const hpdl__conv_fm_args<T> &a, const T *ws, const int *koff,
                                                         const unsigned short *patch, const int (&rowbase)[4],
                                                         float (&acc)[2][NJ][4]) {
    const int lane = (int)threadIdx.x % 32, wld = a.kp + 8;
    const T *bp = ws + (lane / 16 * 8 + lane % 8) * wld + lane / 8 % 2 * 8;
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < NJ; j++) acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0.0f;
    for (int ks = 0; ks < a.kp / 16; ks++) {
        const int4 o = *(const int4 *)(koff + ks * 16 + lane % 4 * 4);
        unsigned af[2][4], bf[NJ][2];
#pragma unroll
        for (int i = 0; i < 2; i++) {
            const unsigned short *p0 = patch + rowbase[2 * i], *p1 = patch + rowbase[2 * i + 1];
            af[i][0] = hpdl__conv_fm_pair(p0, o.x, o.y);
            af[i][1] = hpdl__conv_fm_pair(p1, o.x, o.y);
            af[i][2] = hpdl__conv_fm_pair(p0, o.z, o.w);
            af[i][3] = hpdl__conv_fm_pair(p1, o.z, o.w);
        }
#pragma unroll
        for (int j = 0; j < NJ; j += 2) { /* channels 8j..8j+15: two n8 fragments */
            unsigned r[4];
            hpdl__ldmatrix_x4<false>(r, bp + j * 8 * wld + ks * 16);
            bf[j][0] = r[0]; bf[j][1] = r[1]; bf[j + 1][0] = r[2]; bf[j + 1][1] = r[3];
        }
#pragma unroll
        for (int i = 0; i < 2; i++)
#pragma unroll
            for (int j = 0; j < NJ; j++) hpdl__mma16816(T(), acc[i][j], af[i], bf[j]);
    }
}

/* The warp's results: fragments into its shared tile (rows = pixels), then
   each lane writes 8 channels of a pixel (16 bytes where y_vec), pixels
   outside y skipped. */
template <typename T, int NJ>
static __device__ __forceinline__ void hpdl__conv_fm_store(const hpdl__conv_fm_args<T> &a, const float (&acc)[2][NJ][4],
                                                           T *tile, int n, int oh0, int ow0, int n0) {
    enum { BN = 8 * NJ, LD = BN + 8, CHUNKS = BN / 8 };
    const int lane = (int)threadIdx.x % 32, g = lane / 4, t = lane % 4, m0 = (int)threadIdx.x / 32 * 32;
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < NJ; j++) {
            T *p = tile + (i * 16 + g) * LD + j * 8 + 2 * t;
            *(unsigned *)p = hpdl__wg_pair(acc[i][j][0], acc[i][j][1], T());
            *(unsigned *)(p + 8 * LD) = hpdl__wg_pair(acc[i][j][2], acc[i][j][3], T());
        }
    __syncwarp();
    for (int u = lane; u < 32 * CHUNKS; u += 32) {
        const int row = u / CHUNKS, col = u % CHUNKS * 8, m = m0 + row;
        const int oh = oh0 + (m >> a.tw_log2), ow = ow0 + (m & ((1 << a.tw_log2) - 1));
        if (oh >= a.p || ow >= a.q || n0 + col >= a.k) continue;
        T *dst = a.y + (((size_t)n * a.p + oh) * a.q + ow) * a.k + n0 + col;
        const T *src = tile + row * LD + col;
        if (a.y_vec && n0 + col + 8 <= a.k) *(uint4 *)dst = *(const uint4 *)src;
        else
            for (int e = 0; e < 8 && n0 + col + e < a.k; e++) dst[e] = src[e];
    }
    __syncwarp(); /* the tile is read before the next one overwrites it */
}

/* Starts copying the patch of tile t into buf; returns hpdl__conv_fm_stage's shift. */
template <typename T>
static __device__ __forceinline__ int hpdl__conv_fm_stage_tile(const hpdl__conv_fm_args<T> &a, unsigned short *buf,
                                                               int t) {
    int n, oh0, ow0;
    hpdl__conv_fm_tile_at(a, t, &n, &oh0, &ow0);
    return hpdl__conv_fm_stage(a, buf, n, oh0, ow0);
}

/* Persistent blocks of 128 threads: blockIdx.y picks the BN = 8 NJ filters,
   blockIdx.x strides over the pixel tiles. Tile t is computed from patch
   buffer b while the next tile's patch is copied into buffer b ^ 1. */
template <typename T, int NJ>
__global__ void __launch_bounds__(128, 4) hpdl__conv_fm(hpdl__conv_fm_args<T> a) {
#ifdef HPDL__GEMM_SM80
    typedef hpdl__conv_fm_smem<8 * NJ> SM;
    extern __shared__ uint4 hpdl__fm_smem[];
    const int n0 = blockIdx.y * 8 * NJ, warp = (int)threadIdx.x / 32, lane = (int)threadIdx.x % 32;
    unsigned char *base = (unsigned char *)hpdl__fm_smem;
    T *ws = (T *)base;
    int *koff = (int *)(base + SM::filter(a.kp));                   /* buffer 0's table, buffer 1's */
    unsigned short *patches = (unsigned short *)(koff + 2 * a.kp); /* buffer 0, zeros, buffer 1 */
    T *tile = (T *)((unsigned char *)patches + SM::patches(a.patch_buf)) + warp * 32 * (8 * NJ + 8);
    int rowbase[4], shift = 0, b = 0;
#pragma unroll
    for (int u = 0; u < 4; u++) /* rows g, g + 8, g + 16, g + 24 of the warp's 32 pixels */
        rowbase[u] = hpdl__conv_fm_pixel_offset(a, warp * 32 + u / 2 * 16 + u % 2 * 8 + lane / 4);
    hpdl__conv_fm_setup<T, 8 * NJ>(a, ws, koff, patches + a.patch_buf, n0);
    if ((int)blockIdx.x < a.tiles) shift = hpdl__conv_fm_stage_tile(a, patches, blockIdx.x);
    hpdl__cp_async_commit();
    for (int t = blockIdx.x; t < a.tiles; t += gridDim.x, b ^= 1) {
        int n, oh0, ow0, next_shift = 0;
        float acc[2][NJ][4];
        __syncthreads(); /* buffer b ^ 1, the previous tile's, is read */
        if (a.tiles - t > (int)gridDim.x)
            next_shift = hpdl__conv_fm_stage_tile(a, patches + 2 * (b ^ 1) * a.patch_buf, t + gridDim.x);
        hpdl__cp_async_commit();
        hpdl__cp_async_wait<1>(); /* this thread's copies of tile t have landed ... */
        __syncthreads();          /* ... and every thread's */
        hpdl__conv_fm_mma<T, NJ>(a, ws, koff + b * a.kp, patches + 2 * b * a.patch_buf + shift, rowbase, acc);
        hpdl__conv_fm_tile_at(a, t, &n, &oh0, &ow0);
        hpdl__conv_fm_store<T, NJ>(a, acc, tile, n, oh0, ow0, n0);
        shift = next_shift;
    }
#else
    (void)a; /* host pass, or a GPU without mma.sync: the launcher never starts it */
#endif
}

/* How many 128-thread blocks of a few-mma kernel with `smem` bytes fit on
   the GPU at once (*resident); HPDL_ERR_UNSUPPORTED when none can run. */
template <typename KERNEL> static inline hpdl_status hpdl__conv_fm_resident(KERNEL kernel, size_t smem, int *resident) {
    int per_sm = 0, sms = 0;
    if (!hpdl__tc_kernel_ready(kernel, smem)) return HPDL_ERR_UNSUPPORTED;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, 128, smem) != cudaSuccess || per_sm == 0) {
        cudaGetLastError();
        return HPDL_ERR_UNSUPPORTED;
    }
    if (hpdl__sm_count(&sms) != HPDL_OK) return HPDL_ERR_CUDA;
    *resident = sms * per_sm;
    return HPDL_OK;
}

template <typename T, int NJ>
static inline hpdl_status hpdl__conv_fm_launch(const hpdl__conv_fm_args<T> &a, cudaStream_t stream) {
    const size_t smem = hpdl__conv_fm_smem<8 * NJ>::bytes(a.kp, a.patch_buf);
    void (*kernel)(hpdl__conv_fm_args<T>) = hpdl__conv_fm<T, NJ>;
    int resident = 0;
    const hpdl_status s = hpdl__conv_fm_resident(kernel, smem, &resident);
    if (s != HPDL_OK) return s;
    const int blocks = a.tiles < resident ? a.tiles : resident;
    kernel<<<dim3((unsigned)blocks, (unsigned)((a.k + 8 * NJ - 1) / (8 * NJ))), 128, smem, stream>>>(a);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* ---- backward-filter on the few-channel rung ----
   dW[k, kk] = sum over pixels of dY[pixel, k] X~[pixel, kk]: a GEMM with rows k, columns kk =
   (r, s, c) and the 128 pixels of a tile as its depth, on the forward pass's tiles and patch.
   For each tile the block stages the patch and dY's 128 x 64 slice (zeros for pixels outside y
   and channels past K), both by cp.async into double buffers, the next tile's while this one
   is summed; A = dY^T comes by ldmatrix.trans, B is read from the patch as the forward pass
   reads its A, with the roles swapped: the pixels' offsets per 16-deep step from a table (an
   int4 per lane and step), the taps' offsets per fragment column in registers (the padded
   columns read anything in the patch: their sums are dropped). Warp w sums all 64 filters for
   the n8 column fragments w, w + 4, ..., NT of them, of this block's column group
   (blockIdx.z); the sums stay in registers over all the block's tiles and are added into dw
   (f32) by atomics at the end. */
enum { HPDL__FM_WGRAD_BN = 64, HPDL__FM_WGRAD_LD = HPDL__FM_WGRAD_BN + 8 };

struct hpdl__conv_fm_wgrad_smem { /* dY's tile twice, the pixel offsets, the patch twice */
    static __host__ __device__ size_t dys() { return (size_t)128 * HPDL__FM_WGRAD_LD * 2; }
    static __host__ __device__ size_t bytes(int patch_buf) { return 2 * dys() + 8 * 16 * 4 + (size_t)2 * patch_buf * 2; }
};

/* Starts copying dY's rows for the tile's 128 pixels (zeros outside y), channels n0..n0+63
   (zeros past K): 16-byte cp.async where y_vec (K % 8 == 0: a chunk is past K whole or not at
   all), else plain loads, done on return. */
template <typename T>
static __device__ __forceinline__ void hpdl__conv_fm_stage_dy(const hpdl__conv_fm_args<T> &a, T *dys, int n, int oh0,
                                                              int ow0, int n0) {
    enum { CHUNKS = HPDL__FM_WGRAD_BN / 8 };
    for (int u = threadIdx.x; u < 128 * CHUNKS; u += blockDim.x) {
        const int m = u / CHUNKS, col = u % CHUNKS * 8;
        const int oh = oh0 + (m >> a.tw_log2), ow = ow0 + (m & ((1 << a.tw_log2) - 1));
        const bool in = oh < a.p && ow < a.q;
        const T *src = a.dy + (((size_t)n * a.p + (in ? oh : 0)) * a.q + (in ? ow : 0)) * a.k + n0 + col;
        T *dst = dys + m * HPDL__FM_WGRAD_LD + col;
        if (a.y_vec) {
            hpdl__cp_async_or_zero<16>(dst, src, in && n0 + col < a.k);
        } else {
#pragma unroll
            for (int e = 0; e < 8; e++) dst[e] = in && n0 + col + e < a.k ? src[e] : T(0.0f);
        }
    }
}

/* One tile's contribution to the warp's sums: 8 steps of 16 pixels. koff[j]: the patch offset
   of tap column g of the warp's fragment j. */
template <typename T, int NT>
static __device__ __forceinline__ void hpdl__conv_fm_wgrad_mma(const T *dys, const int *pixoff,
                                                               const unsigned short *patch, const int (&koff)[NT],
                                                               float (&acc)[4][NT][4]) {
    const int lane = (int)threadIdx.x % 32;
    const T *ap = dys + (lane / 16 * 8 + lane % 8) * HPDL__FM_WGRAD_LD + lane / 8 % 2 * 8;
#pragma unroll 2
    for (int ks = 0; ks < 8; ks++) {
        const int4 o = *(const int4 *)(pixoff + ks * 16 + lane % 4 * 4);
        unsigned af[4][4], bf[NT][2];
#pragma unroll
        for (int i = 0; i < 4; i++) hpdl__ldmatrix_x4<true>(af[i], ap + ks * 16 * HPDL__FM_WGRAD_LD + i * 16);
#pragma unroll
        for (int j = 0; j < NT; j++) {
            const unsigned short *p = patch + koff[j];
            bf[j][0] = hpdl__conv_fm_pair(p, o.x, o.y);
            bf[j][1] = hpdl__conv_fm_pair(p, o.z, o.w);
        }
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int j = 0; j < NT; j++) hpdl__mma16816(T(), acc[i][j], af[i], bf[j]);
    }
}

/* Starts copying tile t's patch and dY's slice into buffers; returns the patch's shift. */
template <typename T>
static __device__ __forceinline__ int hpdl__conv_fm_wgrad_stage_tile(const hpdl__conv_fm_args<T> &a, unsigned short *buf,
                                                                     T *dys, int t, int n0) {
    int n, oh0, ow0;
    hpdl__conv_fm_tile_at(a, t, &n, &oh0, &ow0);
    hpdl__conv_fm_stage_dy(a, dys, n, oh0, ow0, n0);
    return hpdl__conv_fm_stage(a, buf, n, oh0, ow0);
}

/* Persistent blocks of 128 threads: blockIdx.y picks 64 filters, blockIdx.z a group of 32 NT
   tap columns, blockIdx.x strides over the pixel tiles; tile t is summed from buffers b while
   the next tile is copied into buffers b ^ 1. */
template <typename T, int NT>
__global__ void __launch_bounds__(128, 3) hpdl__conv_fm_wgrad(hpdl__conv_fm_args<T> a) {
#ifdef HPDL__GEMM_SM80
    typedef hpdl__conv_fm_wgrad_smem SM;
    extern __shared__ uint4 hpdl__fm_smem[];
    const int n0 = blockIdx.y * HPDL__FM_WGRAD_BN, warp = (int)threadIdx.x / 32, lane = (int)threadIdx.x % 32;
    unsigned char *base = (unsigned char *)hpdl__fm_smem;
    T *dys = (T *)base;                                            /* buffer 0, buffer 1 */
    int *pixoff = (int *)(base + 2 * SM::dys());
    unsigned short *patches = (unsigned short *)(pixoff + 8 * 16); /* buffer 0, buffer 1 */
    int koff[NT], col0[NT], shift = 0, b = 0;
    float acc[4][NT][4];
#pragma unroll
    for (int j = 0; j < NT; j++) { /* the warp's fragment j: tap columns col0[j] .. + 7 */
        col0[j] = ((int)blockIdx.z * 4 * NT + warp + 4 * j) * 8;
        koff[j] = hpdl__conv_fm_tap_offset(a, col0[j] + lane / 4, 0);
#pragma unroll
        for (int i = 0; i < 4; i++) acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0.0f;
    }
    for (int m = threadIdx.x; m < 128; m += blockDim.x) pixoff[hpdl__conv_fm_slot(m)] = hpdl__conv_fm_pixel_offset(a, m);
    if ((int)blockIdx.x < a.tiles) shift = hpdl__conv_fm_wgrad_stage_tile(a, patches, dys, blockIdx.x, n0);
    hpdl__cp_async_commit();
    for (int t = blockIdx.x; t < a.tiles; t += gridDim.x, b ^= 1) {
        int next_shift = 0;
        __syncthreads(); /* buffers b ^ 1, the previous tile's, are read */
        if (a.tiles - t > (int)gridDim.x)
            next_shift = hpdl__conv_fm_wgrad_stage_tile(a, patches + (b ^ 1) * a.patch_buf,
                                                        dys + (b ^ 1) * 128 * HPDL__FM_WGRAD_LD, t + gridDim.x, n0);
        hpdl__cp_async_commit();
        hpdl__cp_async_wait<1>(); /* this thread's copies of tile t have landed ... */
        __syncthreads();          /* ... and every thread's */
        hpdl__conv_fm_wgrad_mma<T, NT>(dys + b * 128 * HPDL__FM_WGRAD_LD, pixoff, patches + b * a.patch_buf + shift, koff,
                                       acc);
        shift = next_shift;
    }
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < NT; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int k = n0 + i * 16 + lane / 4 + e / 2 * 8, kk = col0[j] + lane % 4 * 2 + e % 2;
                if (k < a.k && kk < a.taps) atomicAdd(a.dw + (size_t)k * a.taps + kk, acc[i][j][e]);
            }
#else
    (void)a; /* host pass, or a GPU without mma.sync: the launcher never starts it */
#endif
}

/* Zeroed f32 sums, the kernel (NT column fragments a warp: 1, 2, 3 or 5, the fewest covering
   the taps, else 5 in several column groups), then dw rounded to T. */
template <typename T, int NT>
static inline hpdl_status hpdl__conv_fm_wgrad_launch(hpdl__conv_fm_args<T> a, T *dw, cudaStream_t stream) {
    const size_t smem = hpdl__conv_fm_wgrad_smem::bytes(a.patch_buf);
    const size_t count = (size_t)a.k * a.taps;
    const int groups_k = (a.k + HPDL__FM_WGRAD_BN - 1) / HPDL__FM_WGRAD_BN, groups_col = (a.kp / 8 + 4 * NT - 1) / (4 * NT);
    void (*kernel)(hpdl__conv_fm_args<T>) = hpdl__conv_fm_wgrad<T, NT>;
    int resident = 0;
    hpdl_status s;
    if ((s = hpdl__conv_fm_resident(kernel, smem, &resident)) != HPDL_OK) return s;
    if ((s = hpdl__conv_workspace(count * sizeof(float), &a.dw)) != HPDL_OK) return s;
    HPDL_CUDA_TRY(cudaMemsetAsync(a.dw, 0, count * sizeof(float), stream));
    int blocks = resident / (groups_k * groups_col);
    blocks = blocks < 1 ? 1 : blocks < a.tiles ? blocks : a.tiles;
    kernel<<<dim3((unsigned)blocks, (unsigned)groups_k, (unsigned)groups_col), 128, smem, stream>>>(a);
    HPDL_CUDA_TRY_LAUNCH();
    hpdl__conv_round<<<(unsigned)((count + 255) / 256 < 65536 ? (count + 255) / 256 : 65536), 256, 0, stream>>>(a.dw, dw, count);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* The tile's width (a power of two, 8 to 64, its height 128 / width) that
   pads the output least, then reads the smallest patch, then is widest
   (longer runs of x per patch row). */
static inline void hpdl__conv_fm_tile_shape(const hpdl__conv_geom &g, int *tw_log2) {
    int64_t best = -1, best_patch = 0;
    for (int l = 6; l >= 3; l--) {
        const int tw = 1 << l, th = 128 / tw;
        const int64_t padded = (int64_t)(g.y.h + th - 1) / th * th * ((g.y.w + tw - 1) / tw * tw);
        const int64_t patch = (int64_t)((th - 1) * g.p.stride_h + (g.p.kernel_h - 1) * g.p.dilation_h + 1) *
                              ((tw - 1) * g.p.stride_w + (g.p.kernel_w - 1) * g.p.dilation_w + 1);
        if (best < 0 || padded < best || (padded == best && patch < best_patch)) {
            best = padded;
            best_patch = patch;
            *tw_log2 = l;
        }
    }
}

/* The rung where it applies (forward or backward-filter, x and y NHWC, one
   group, at most 8 input channels), else HPDL_ERR_UNSUPPORTED. a, b, out as
   hpdl__cuda_conv2d takes them: (x, w, y) or (x, dy, dw). Forward: BN, the
   fewest of 16, 32, 64 filters that cover K (64 past it, blocks side by side
   along K). */
template <typename T>
static inline hpdl_status hpdl__conv_fm_run(const hpdl__conv_geom &g, hpdl__conv_pass pass, const T *x, const T *b,
                                            T *out, cudaStream_t stream) {
    const bool wgrad = pass == HPDL__CONV_FILTER_GRAD;
    hpdl__conv_fm_args<T> a;
    if (pass == HPDL__CONV_INPUT_GRAD || g.x.layout != HPDL_NHWC || g.y.layout != HPDL_NHWC || g.p.groups != 1 ||
        g.x.c > 8)
        return HPDL_ERR_UNSUPPORTED;
    a.x = x;
    a.w = wgrad ? NULL : b;
    a.y = wgrad ? NULL : out;
    a.dy = wgrad ? b : NULL;
    a.dw = NULL;
    a.h = g.x.h; a.w_ = g.x.w; a.c = g.x.c;
    a.p = g.y.h; a.q = g.y.w; a.k = g.y.c;
    a.s = g.p.kernel_w;
    a.stride_h = g.p.stride_h; a.stride_w = g.p.stride_w;
    a.pad_h = g.p.pad_h; a.pad_w = g.p.pad_w;
    a.dil_h = g.p.dilation_h; a.dil_w = g.p.dilation_w;
    hpdl__conv_fm_tile_shape(g, &a.tw_log2);
    a.th = 128 >> a.tw_log2;
    a.tiles_h = (a.p + a.th - 1) / a.th;
    a.tiles_w = (a.q + (1 << a.tw_log2) - 1) >> a.tw_log2;
    a.patch_h = (a.th - 1) * a.stride_h + (g.p.kernel_h - 1) * a.dil_h + 1;
    a.patch_w = ((1 << a.tw_log2) - 1) * a.stride_w + (a.s - 1) * a.dil_w + 1;
    a.patch_ld = (a.patch_w * a.c + 2) / 2 * 2;
    a.patch_buf = (a.patch_h * a.patch_ld + 7) / 8 * 8;
    a.x_pairs = a.w_ * a.c % 2 == 0 && (uintptr_t)x % 4 == 0;
    a.taps = g.p.kernel_h * a.s * a.c;
    a.kp = (a.taps + 15) / 16 * 16;
    a.y_vec = a.k % 8 == 0 && (uintptr_t)(wgrad ? b : out) % 16 == 0;
    const int64_t tiles = (int64_t)g.y.n * a.tiles_h * a.tiles_w, patch = (int64_t)a.patch_h * a.patch_ld;
    if (tiles > INT_MAX || patch > 32768 || a.kp > 1024) return HPDL_ERR_UNSUPPORTED;
    a.tiles = (int)tiles;
    if (wgrad)
        return a.kp <= 32   ? hpdl__conv_fm_wgrad_launch<T, 1>(a, out, stream)
               : a.kp <= 64 ? hpdl__conv_fm_wgrad_launch<T, 2>(a, out, stream)
               : a.kp <= 96 ? hpdl__conv_fm_wgrad_launch<T, 3>(a, out, stream)
                            : hpdl__conv_fm_wgrad_launch<T, 5>(a, out, stream);
    return a.k <= 16 ? hpdl__conv_fm_launch<T, 2>(a, stream)
           : a.k <= 32 ? hpdl__conv_fm_launch<T, 4>(a, stream)
                       : hpdl__conv_fm_launch<T, 8>(a, stream);
}

/* The few-channel rung (f16 and bf16: mma.sync m16n8k16), for hpdl__conv_16bit. */
struct hpdl__conv_fm_rung {
    template <typename T>
    static hpdl_status run(const hpdl__conv_geom &g, hpdl__conv_pass pass, const T *a, const T *b, T *out,
                           cudaStream_t stream) {
        return hpdl__conv_fm_run(g, pass, a, b, out, stream);
    }
};

/* ---- rung: Winograd F(4x4, 3x3), f32 ------------------------------------------------ */

/* 3x3 convolutions at stride 1 (any padding, one group, dilation 1) in f32,
   NCHW or NHWC, all three passes, by Winograd's minimal filtering F(4x4,
   3x3): each 4x4 block of outputs ("tile") of each image and output channel
   is
       Y = A^T [ sum over c of (G g_kc G^T) . (B^T d_c B) ] A
   where d_c is the 6x6 block of input channel c under the tile (zeros
   outside the image) and "." multiplies element by element: 36 products
   per tile, channel pair instead of the direct sum's 144. Gathered by the
   36 positions i of the 6x6 blocks, the sums are 36 GEMMs:
       U_i [C x K]     = (G g G^T)_i of every filter          (hpdl__wino_filter)
       V_i [C x tiles] = (B^T d B)_i of every channel, tile   (hpdl__wino_input)
       M_i [tiles x K] = V_i^T U_i                            (the warptile GEMM, one strided batch of 36)
       y               = A^T M A of every tile and channel    (hpdl__wino_output)
   tiles = N ceil(P/4) ceil(Q/4) for a P x Q output, rounded up to a multiple
   of 128 (the GEMM's rows; the extra columns of V are zeros) so that the
   GEMM's whole-tile path applies when C % 8 == 0 and K % 64 == 0. The
   workspace of 36 (C K + (C + K) tiles) floats (ResNet-50's conv2_x at batch
   128: 463 MB) is taken from the stream's pool (cudaMallocAsync) and given
   back after the call.

   Backward-data at stride 1 is the forward convolution of dy by the filters
   turned half a turn with C and K swapped, at padding 2 - pad: the same
   steps on dy (hpdl__wino_filter reads the filters that way).

   Backward-filter is the forward map's transpose: Y is linear in g, so
       dg = G^T [ sum over tiles of (A dY A^T) . (B^T d B) ] G
   where dY is the 4x4 block of dy at the tile (zeros past the output):
       V_i [C x tiles], Y_i [K x tiles] = (A dY A^T)_i         (hpdl__wino_dy)
       Z_i [K x C] = Y_i V_i^T                                  (the warptile GEMM)
       dw = G^T Z G of every filter                             (hpdl__wino_filter_grad)
   The GEMMs' depth is the tiles (thousands) and their outputs are small,
   so the tiles are cut into `slices` of `chunk` columns, each slice its own
   GEMM of the batch (36 x slices), and the last kernel adds the slices' Z
   in f64. V and Y are stored slice by slice for that: position i, slice s
   is one [rows x chunk] matrix (one slice: the forward's layout).

   The points are 0, 1, -1, 2, -1/2 and infinity (Toom-Cook): with them the
   f32 error on random data is a sixth of that with the textbook 0, +-1,
   +-2 (2.5e-4 against 1.4e-3 of the output's scale at C = 512, simulated
   on the host, 2026-11-26), but still up to twice the direct sum's: the
   transformed values are larger than the outputs they cancel into, so the
   f32 sums over C round more of them. tests/gpu_conv.cu allows it four
   times the f32 tolerance (notes/conv.md). Backward-filter's G^T shrinks
   what it transforms: simulated, its error is 1e-6 to 1e-5 of the output's
   scale over 252 to 16384 terms. */

/* v = B^T d for one column (or row) d of a 6x6 block: elements ds apart in
   d, vs apart in v. The helpers below take their strides the same way. */
template <typename T>
static __device__ __forceinline__ void hpdl__wino_input_1d(const T *d, int ds, T *v, int vs) {
    const T d0 = d[0], d1 = d[ds], d2 = d[2 * ds], d3 = d[3 * ds], d4 = d[4 * ds], d5 = d[5 * ds];
    v[0] = d0 + (T)1.5 * d1 - (T)2 * d2 - (T)1.5 * d3 + d4;
    v[vs] = -d1 - (T)2.5 * d2 - (T)0.5 * d3 + d4;
    v[2 * vs] = d1 + (T)0.5 * d2 - (T)2.5 * d3 + d4;
    v[3 * vs] = (T)-0.5 * d1 - d2 + (T)0.5 * d3 + d4;
    v[4 * vs] = (T)2 * d1 - d2 - (T)2 * d3 + d4;
    v[5 * vs] = d1 + (T)1.5 * d2 - (T)2 * d3 - (T)1.5 * d4 + d5;
}

/* u = G g for one column (or row) g of a 3x3 filter (in f64: one rounding
   to f32 at the end). */
static __device__ __forceinline__ void hpdl__wino_filter_1d(const double *g, int gs, double *u, int us) {
    const double g0 = g[0], g1 = g[gs], g2 = g[2 * gs];
    u[0] = g0;
    u[us] = -(g0 + g1 + g2) / 3;
    u[2 * us] = (g0 - g1 + g2) / 3;
    u[3 * us] = (g0 + 2 * g1 + 4 * g2) / 15;
    u[4 * us] = (-16 * g0 + 8 * g1 - 4 * g2) / 15;
    u[5 * us] = g2;
}

/* y = A^T m for one column (or row) m of a 6x6 block: 4 values. */
template <typename T>
static __device__ __forceinline__ void hpdl__wino_output_1d(const T *m, int ms, T *y, int ys) {
    const T m0 = m[0], m1 = m[ms], m2 = m[2 * ms], m3 = m[3 * ms], m4 = m[4 * ms], m5 = m[5 * ms];
    y[0] = m0 + m1 + m2 + m3 + m4;
    y[ys] = m1 - m2 + (T)2 * m3 - (T)0.5 * m4;
    y[2 * ys] = m1 + m2 + (T)4 * m3 + (T)0.25 * m4;
    y[3 * ys] = m1 - m2 + (T)8 * m3 - (T)0.125 * m4 + m5;
}

/* m = A d for one column (or row) d of a 4x4 block of dy: 6 values. */
template <typename T>
static __device__ __forceinline__ void hpdl__wino_dy_1d(const T *d, int ds, T *m, int ms) {
    const T d0 = d[0], d1 = d[ds], d2 = d[2 * ds], d3 = d[3 * ds];
    m[0] = d0;
    m[ms] = d0 + d1 + d2 + d3;
    m[2 * ms] = d0 - d1 + d2 - d3;
    m[3 * ms] = d0 + (T)2 * d1 + (T)4 * d2 + (T)8 * d3;
    m[4 * ms] = d0 - (T)0.5 * d1 + (T)0.25 * d2 - (T)0.125 * d3;
    m[5 * ms] = d3;
}

/* g = G^T z for one column (or row) z of a 6x6 block of Z: 3 values. */
static __device__ __forceinline__ void hpdl__wino_filter_grad_1d(const double *z, int zs, double *g, int gs) {
    const double z0 = z[0], z1 = z[zs], z2 = z[2 * zs], z3 = z[3 * zs], z4 = z[4 * zs], z5 = z[5 * zs];
    g[0] = z0 + (z2 - z1) / 3 + (z3 - 16 * z4) / 15;
    g[gs] = -(z1 + z2) / 3 + (2 * z3 + 8 * z4) / 15;
    g[2 * gs] = (z2 - z1) / 3 + (4 * z3 - 4 * z4) / 15 + z5;
}

/* The tiles of the output and the workspace's three arrays. */
struct hpdl__wino_plan {
    int tiles_h, tiles_w, tiles;  /* tiles: N tiles_h tiles_w */
    int cols;                     /* tiles rounded up to a multiple of 128: V's and M's row length */
    int slices, chunk;            /* cols = slices x chunk (backward-filter; else one slice) */
    float *u, *v, *m;             /* U: 36 x C x K, V: 36 x C x cols, M: 36 x cols x K */
};

/* V and Y are stored by tile (each tile's channels contiguous) when they
   come from an NHWC tensor, so that the threads of a transform, along the
   channels, read the tensor and write V or Y in contiguous runs; by channel
   (each channel's tiles contiguous) from NCHW, the threads along the tiles. */
static __host__ __device__ __forceinline__ int hpdl__wino_by_tile(const hpdl_tensor4 &d) { return d.layout == HPDL_NHWC; }

/* Where position i of row r (a channel) and tile t lies in V or Y (rows
   rows each): slice by slice, each slice a [rows x chunk] matrix, or
   [chunk x rows] by tile. */
static __device__ __forceinline__ int64_t hpdl__wino_at(const hpdl__wino_plan &plan, int by_tile, int i, int rows,
                                                       int r, int t) {
    const int64_t slice = (int64_t)i * plan.slices + t / plan.chunk;
    return by_tile ? (slice * plan.chunk + t % plan.chunk) * rows + r : (slice * rows + r) * plan.chunk + t % plan.chunk;
}

/* Steps between neighbouring channels, rows and columns of a tensor. */
static __device__ __forceinline__ void hpdl__wino_steps(const hpdl_tensor4 &d, int64_t *chan, int64_t *row,
                                                       int64_t *col) {
    *chan = d.layout == HPDL_NHWC ? 1 : (int64_t)d.h * d.w;
    *col = d.layout == HPDL_NHWC ? d.c : 1;
    *row = *col * d.w;
}

/* What thread i of a transform of tensor d (channels `rows`, `chan` apart)
   takes: its channel r and tile t (along the channels by tile, else along
   the tiles), the tile's first row and column, and the offset of its
   channel in its image (image 0 for the padding tiles t >= tiles). */
static __device__ __forceinline__ int64_t hpdl__wino_block(const hpdl__wino_plan &plan, const hpdl_tensor4 &d,
                                                           int64_t chan, int64_t i, int *r, int *t, int *h0, int *w0) {
    const int by_tile = hpdl__wino_by_tile(d), rows = d.c;
    *r = (int)(by_tile ? i % rows : i / plan.cols);
    *t = (int)(by_tile ? i / rows : i % plan.cols);
    *w0 = *t % plan.tiles_w * 4;
    *h0 = *t / plan.tiles_w % plan.tiles_h * 4;
    return hpdl_tensor4_offset(&d, *t < plan.tiles ? *t / plan.tiles_w / plan.tiles_h : 0, 0, 0, 0) + *r * chan;
}

/* d = the N x N block of a channel plane (`base`, rows `row` and columns
   `col` apart) whose first element is at (h0, w0), zeros outside the H x W
   plane and for a padding tile (!real). */
template <int N, typename T>
static __device__ __forceinline__ void hpdl__wino_load(const T *base, int64_t row, int64_t col, int h0, int w0, int H,
                                                       int W, int real, T *d) {
#pragma unroll
    for (int a = 0; a < N; a++)
#pragma unroll
        for (int b = 0; b < N; b++) {
            const int h = h0 + a, w = w0 + b;
            d[N * a + b] = real && h >= 0 && h < H && w >= 0 && w < W ? base[h * row + w * col] : (T)0;
        }
}

/* U_i[c][k] = (G g G^T)_i for each filter (k, c); threads along k. With
   `turned`, g is filter (c, k) of g.w turned half a turn (backward-data:
   g.x and g.y are then dy and dx). */
template <typename T>
__global__ void hpdl__wino_filter(hpdl__conv_geom g, const T *w, T *u, int turned) {
    const int C = g.x.c, K = g.y.c;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (int64_t)C * K; i += (int64_t)gridDim.x * blockDim.x) {
        const int k = (int)(i % K), c = (int)(i / K);
        double f[9], t[18], r[36];
        for (int j = 0; j < 9; j++)
            f[j] = turned ? w[hpdl_tensor4_offset(&g.w, c, k, 2 - j / 3, 2 - j % 3)]
                          : w[hpdl_tensor4_offset(&g.w, k, c, j / 3, j % 3)];
#pragma unroll
        for (int j = 0; j < 3; j++) hpdl__wino_filter_1d(f + j, 3, t + j, 3); /* columns: G g, 6 x 3 */
#pragma unroll
        for (int j = 0; j < 6; j++) hpdl__wino_filter_1d(t + 3 * j, 1, r + 6 * j, 1); /* rows: (G g) G^T */
#pragma unroll
        for (int j = 0; j < 36; j++) u[(int64_t)j * C * K + i] = (T)r[j];
    }
}

/* V_i[c][t] = (B^T d B)_i for each channel c and tile t (zeros for the
   padding tiles t >= tiles). */
template <typename T>
__global__ void hpdl__wino_input(hpdl__conv_geom g, hpdl__wino_plan plan, const T *x, T *v) {
    const int C = g.x.c, H = g.x.h, W = g.x.w;
    int64_t chan, row, col;
    hpdl__wino_steps(g.x, &chan, &row, &col);
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (int64_t)C * plan.cols;
         i += (int64_t)gridDim.x * blockDim.x) {
        int c, t, h0, w0;
        const T *base = x + hpdl__wino_block(plan, g.x, chan, i, &c, &t, &h0, &w0);
        T d[36], e[36];
        hpdl__wino_load<6>(base, row, col, h0 - g.p.pad_h, w0 - g.p.pad_w, H, W, t < plan.tiles, d);
#pragma unroll
        for (int j = 0; j < 6; j++) hpdl__wino_input_1d(d + j, 6, e + j, 6); /* columns: B^T d */
#pragma unroll
        for (int j = 0; j < 6; j++) hpdl__wino_input_1d(e + 6 * j, 1, d + 6 * j, 1); /* rows: (B^T d) B */
#pragma unroll
        for (int j = 0; j < 36; j++) v[hpdl__wino_at(plan, hpdl__wino_by_tile(g.x), j, C, c, t)] = d[j];
    }
}

/* Y_i[k][t] = (A dY A^T)_i for each output channel k and tile t of dy (zeros
   past the output and for the padding tiles t >= tiles). */
template <typename T>
__global__ void hpdl__wino_dy(hpdl__conv_geom g, hpdl__wino_plan plan, const T *dy, T *yt) {
    const int K = g.y.c, P = g.y.h, Q = g.y.w;
    int64_t chan, row, col;
    hpdl__wino_steps(g.y, &chan, &row, &col);
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (int64_t)K * plan.cols;
         i += (int64_t)gridDim.x * blockDim.x) {
        int k, t, h0, w0;
        const T *base = dy + hpdl__wino_block(plan, g.y, chan, i, &k, &t, &h0, &w0);
        T d[16], e[24], m[36];
        hpdl__wino_load<4>(base, row, col, h0, w0, P, Q, t < plan.tiles, d);
#pragma unroll
        for (int j = 0; j < 4; j++) hpdl__wino_dy_1d(d + j, 4, e + j, 4); /* columns: A dY, 6 x 4 */
#pragma unroll
        for (int j = 0; j < 6; j++) hpdl__wino_dy_1d(e + 4 * j, 1, m + 6 * j, 1); /* rows: (A dY) A^T */
#pragma unroll
        for (int j = 0; j < 36; j++) yt[hpdl__wino_at(plan, hpdl__wino_by_tile(g.y), j, K, k, t)] = m[j];
    }
}

/* dw = G^T Z G for each filter (k, c), Z_i the sum of the slices' products
   Z[i][s] [K x C] in f64; threads along c (Z's contiguous axis). */
template <typename T>
__global__ void hpdl__wino_filter_grad(hpdl__conv_geom g, hpdl__wino_plan plan, const T *z, T *dw) {
    const int C = g.x.c, K = g.y.c;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (int64_t)C * K; i += (int64_t)gridDim.x * blockDim.x) {
        const int c = (int)(i % C), k = (int)(i / C);
        double sum[36], t[18], f[9];
#pragma unroll
        for (int j = 0; j < 36; j++) {
            sum[j] = 0;
            for (int s = 0; s < plan.slices; s++) sum[j] += z[((int64_t)j * plan.slices + s) * C * K + i];
        }
#pragma unroll
        for (int j = 0; j < 6; j++) hpdl__wino_filter_grad_1d(sum + j, 6, t + j, 6); /* columns: G^T Z, 3 x 6 */
#pragma unroll
        for (int j = 0; j < 3; j++) hpdl__wino_filter_grad_1d(t + 6 * j, 1, f + 3 * j, 1); /* rows: (G^T Z) G */
#pragma unroll
        for (int j = 0; j < 9; j++) dw[hpdl_tensor4_offset(&g.w, k, c, j / 3, j % 3)] = (T)f[j];
    }
}

/* y = A^T M A for 8 tiles and 32 output channels a block of 256 threads:
   each thread transforms one (tile, channel), reading M along k (its rows'
   contiguous axis), into shared memory; then the block stores along y's
   contiguous axis, w in NCHW (a tile row of 8 tiles x 4 columns a warp),
   k in NHWC. Storing from the threads that read along k would scatter
   4-byte pieces over 32 channel planes per warp instruction in NCHW. */
enum { HPDL__WINO_OUT_TILES = 8, HPDL__WINO_OUT_K = 32 };

template <typename T>
__global__ void __launch_bounds__(256) hpdl__wino_output(hpdl__conv_geom g, hpdl__wino_plan plan, const T *m, T *y) {
    enum { NT = HPDL__WINO_OUT_TILES, NK = HPDL__WINO_OUT_K, LD = NT * 16 + 1 /* a channel's row, padded */ };
    __shared__ T out[NK * LD];
    __shared__ int64_t image[NT];
    __shared__ int first_h[NT], first_w[NT];
    const int K = g.y.c, P = g.y.h, Q = g.y.w, t0 = (int)blockIdx.x * NT, k0 = (int)blockIdx.y * NK;
    const int mine_t = (int)threadIdx.x / NK, mine_k = (int)threadIdx.x % NK;
    int64_t chan, row, col;
    hpdl__wino_steps(g.y, &chan, &row, &col);
    if (threadIdx.x < NT) {
        const int t = t0 + (int)threadIdx.x, tw = t % plan.tiles_w, th = t / plan.tiles_w % plan.tiles_h;
        image[threadIdx.x] = hpdl_tensor4_offset(&g.y, t < plan.tiles ? t / plan.tiles_w / plan.tiles_h : 0, 0, 0, 0);
        first_h[threadIdx.x] = th * 4;
        first_w[threadIdx.x] = tw * 4;
    }
    if (t0 + mine_t < plan.tiles && k0 + mine_k < K) {
        const T *at = m + (int64_t)(t0 + mine_t) * K + k0 + mine_k;
        T s[36], e[24], o[16];
#pragma unroll
        for (int j = 0; j < 36; j++) s[j] = at[(int64_t)j * plan.cols * K];
#pragma unroll
        for (int j = 0; j < 6; j++) hpdl__wino_output_1d(s + j, 6, e + j, 6); /* columns: A^T M, 4 x 6 */
#pragma unroll
        for (int j = 0; j < 4; j++) hpdl__wino_output_1d(e + 6 * j, 1, o + 4 * j, 1); /* rows: (A^T M) A */
#pragma unroll
        for (int j = 0; j < 16; j++) out[mine_k * LD + mine_t * 16 + j] = o[j];
    }
    __syncthreads();
    for (int i = (int)threadIdx.x; i < NK * NT * 16; i += (int)blockDim.x) {
        int kk, tt, a, b; /* channel and tile in the block, row and column in the tile */
        if (col == 1) { kk = i / (NT * 16); a = i / (NT * 4) % 4; tt = i % (NT * 4) / 4; b = i % 4; }
        else { kk = i % NK; tt = i / NK % NT; a = i / (NK * NT) % 4; b = i / (NK * NT * 4); }
        const int h = first_h[tt] + a, w = first_w[tt] + b;
        if (t0 + tt < plan.tiles && k0 + kk < K && h < P && w < Q)
            y[image[tt] + (k0 + kk) * chan + h * row + w * col] = out[kk * LD + tt * 16 + a * 4 + b];
    }
}

/* The 4x4 tiles of an output y: N ceil(P/4) ceil(Q/4). */
HPDL_CUDA_API int64_t hpdl__wino_tiles(const hpdl_tensor4 &y) { return (int64_t)y.n * ((y.h + 3) / 4) * ((y.w + 3) / 4); }

/* Where the rung applies: 3x3, stride 1, dilation 1, one group, and sizes
   whose GEMM indices fit in int (the tiles of x for backward-data, of y
   otherwise). */
HPDL_CUDA_API int hpdl__wino_applies(const hpdl__conv_geom &g, hpdl__conv_pass pass) {
    const hpdl_conv2d_params &p = g.p;
    const int64_t tiles = hpdl__wino_tiles(pass == HPDL__CONV_INPUT_GRAD ? g.x : g.y);
    return p.kernel_h == 3 && p.kernel_w == 3 && p.stride_h == 1 && p.stride_w == 1 && p.dilation_h == 1 &&
           p.dilation_w == 1 && p.groups == 1 && tiles + 127 <= INT_MAX;
}

/* The tiles of a P x Q output y in `slices` slices (fewer if the tiles run
   out), each a multiple of 128 tiles. */
HPDL_LAZY hpdl__wino_plan hpdl__wino_plan_for(const hpdl_tensor4 &y, int slices) {
    hpdl__wino_plan plan = hpdl__wino_plan();
    plan.tiles_h = (y.h + 3) / 4;
    plan.tiles_w = (y.w + 3) / 4;
    plan.tiles = (int)hpdl__wino_tiles(y);
    plan.chunk = ((plan.tiles + slices - 1) / slices + 127) / 128 * 128;
    plan.slices = (plan.tiles + plan.chunk - 1) / plan.chunk;
    plan.cols = plan.slices * plan.chunk;
    return plan;
}

/* One strided batch of `count` warptile GEMMs: 128 x 64 tiles where N <= 64
   (ResNet's conv2_x), else 128 x 128. */
HPDL_LAZY hpdl_status hpdl__wino_gemms(const hpdl__gemm_args<float, float> &a, const hpdl__gemm_batch &batch, int count,
                                       cudaStream_t stream) {
    if (a.N <= 64) return hpdl__gemm_launch_warptile<float, float, 16, 4>(a, batch, count, stream);
    return hpdl__gemm_launch_warptile<float, float, HPDL__WARPTILE_BK, 8>(a, batch, count, stream);
}

/* The forward steps (filters, input, products M_i = V_i^T U_i, output) on
   the stream; `turned` reads the filters turned half a turn (backward-data). */
HPDL_LAZY hpdl_status hpdl__wino_forward(const hpdl__conv_geom &g, const float *x, const float *w, float *y, int turned,
                                         cudaStream_t stream) {
    const int C = g.x.c, K = g.y.c, v_by_tile = hpdl__wino_by_tile(g.x);
    hpdl__wino_plan plan = hpdl__wino_plan_for(g.y, 1);
    hpdl__gemm_batch batch = hpdl__gemm_batch();
    hpdl_status s;
    HPDL_CUDA_TRY(cudaMallocAsync((void **)&plan.u, 36 * ((size_t)C * K + ((size_t)C + K) * plan.cols) * sizeof(float), stream));
    plan.v = plan.u + 36 * (size_t)C * K;
    plan.m = plan.v + 36 * (size_t)C * plan.cols;
    batch.a = (int64_t)C * plan.cols;
    batch.b = (int64_t)C * K;
    batch.c = (int64_t)plan.cols * K;
    hpdl__wino_filter<float><<<hpdl__grid_for((int64_t)C * K, 256), 256, 0, stream>>>(g, w, plan.u, turned);
    hpdl__wino_input<float><<<hpdl__grid_for((int64_t)C * plan.cols, 256), 256, 0, stream>>>(g, plan, x, plan.v);
    s = cudaGetLastError() == cudaSuccess
            ? hpdl__wino_gemms(hpdl__gemm_make_args(v_by_tile ? HPDL_NO_TRANS : HPDL_TRANS, HPDL_NO_TRANS, plan.cols, K,
                                                    C, 1.0f, plan.v, v_by_tile ? C : plan.cols, plan.u, K, 0.0f, plan.m,
                                                    K, 4),
                               batch, 36, stream)
            : HPDL_ERR_CUDA;
    if (s == HPDL_OK) {
        const dim3 grid((unsigned)((plan.tiles + HPDL__WINO_OUT_TILES - 1) / HPDL__WINO_OUT_TILES),
                        (unsigned)((K + HPDL__WINO_OUT_K - 1) / HPDL__WINO_OUT_K));
        hpdl__wino_output<float><<<grid, 256, 0, stream>>>(g, plan, plan.m, y);
        if (cudaGetLastError() != cudaSuccess) s = HPDL_ERR_CUDA;
    }
    if (cudaFreeAsync(plan.u, stream) != cudaSuccess && s == HPDL_OK) s = HPDL_ERR_CUDA;
    return s;
}

/* Backward-data's geometry: dy as the input, dx as the output, padding 2 - pad. */
HPDL_LAZY hpdl__conv_geom hpdl__wino_turned(const hpdl__conv_geom &g) {
    hpdl__conv_geom t = g;
    t.x = g.y;
    t.y = g.x;
    t.p.pad_h = 2 - g.p.pad_h;
    t.p.pad_w = 2 - g.p.pad_w;
    t.c_per_group = g.k_per_group;
    t.k_per_group = g.c_per_group;
    return t;
}

/* Backward-filter's slices: enough GEMMs in the batch for about four blocks
   an SM (the warptile runs two an SM), each slice at least 512 tiles deep.
   A K x C product takes 128 x 64 tiles where C <= 64, else 128 x 128
   (hpdl__wino_gemms). */
HPDL_LAZY int hpdl__wino_slices(int tiles, int C, int K, int sms) {
    const int bn = C <= 64 ? 64 : 128;
    const int64_t per_gemm = (int64_t)((K + 127) / 128) * ((C + bn - 1) / bn);
    int64_t slices = (4 * (int64_t)sms + 36 * per_gemm - 1) / (36 * per_gemm);
    if (slices > tiles / 512) slices = tiles / 512;
    return slices < 1 ? 1 : (int)slices;
}

/* Backward-filter: V of x, Y of dy, the slices' products Z = Y V^T, then
   dw = G^T (their sum) G. Z takes U's place in the workspace. */
HPDL_LAZY hpdl_status hpdl__wino_backward_filter(const hpdl__conv_geom &g, const float *x, const float *dy, float *dw,
                                                 cudaStream_t stream) {
    const int C = g.x.c, K = g.y.c, v_by_tile = hpdl__wino_by_tile(g.x), y_by_tile = hpdl__wino_by_tile(g.y);
    int sms = 0;
    if (hpdl__sm_count(&sms) != HPDL_OK) return HPDL_ERR_CUDA;
    hpdl__wino_plan plan = hpdl__wino_plan_for(g.y, hpdl__wino_slices((int)hpdl__wino_tiles(g.y), C, K, sms));
    hpdl__gemm_batch batch = hpdl__gemm_batch();
    hpdl_status s;
    const size_t z_count = 36 * (size_t)plan.slices * C * K;
    HPDL_CUDA_TRY(cudaMallocAsync((void **)&plan.u, (z_count + 36 * ((size_t)C + K) * plan.cols) * sizeof(float), stream));
    plan.v = plan.u + z_count;
    plan.m = plan.v + 36 * (size_t)C * plan.cols;
    batch.a = (int64_t)K * plan.chunk;
    batch.b = (int64_t)C * plan.chunk;
    batch.c = (int64_t)K * C;
    hpdl__wino_input<float><<<hpdl__grid_for((int64_t)C * plan.cols, 256), 256, 0, stream>>>(g, plan, x, plan.v);
    hpdl__wino_dy<float><<<hpdl__grid_for((int64_t)K * plan.cols, 256), 256, 0, stream>>>(g, plan, dy, plan.m);
    s = cudaGetLastError() == cudaSuccess
            ? hpdl__wino_gemms(hpdl__gemm_make_args(y_by_tile ? HPDL_TRANS : HPDL_NO_TRANS,
                                                    v_by_tile ? HPDL_NO_TRANS : HPDL_TRANS, K, C, plan.chunk, 1.0f, plan.m,
                                                    y_by_tile ? K : plan.chunk, plan.v, v_by_tile ? C : plan.chunk, 0.0f,
                                                    plan.u, C, 4),
                               batch, 36 * plan.slices, stream)
            : HPDL_ERR_CUDA;
    if (s == HPDL_OK) {
        hpdl__wino_filter_grad<float><<<hpdl__grid_for((int64_t)C * K, 256), 256, 0, stream>>>(g, plan, plan.u, dw);
        if (cudaGetLastError() != cudaSuccess) s = HPDL_ERR_CUDA;
    }
    if (cudaFreeAsync(plan.u, stream) != cudaSuccess && s == HPDL_OK) s = HPDL_ERR_CUDA;
    return s;
}

/* The rung, by pass: (a, b) are (x, w), (w, dy) or (x, dy). */
template <int lazy = 0>
static inline hpdl_status hpdl__wino_run(const hpdl__conv_geom &g, hpdl__conv_pass pass, const float *a, const float *b,
                                         float *out, cudaStream_t stream) {
    if (!hpdl__wino_applies(g, pass)) return HPDL_ERR_UNSUPPORTED;
    if (pass == HPDL__CONV_FORWARD) return hpdl__wino_forward(g, a, b, out, 0, stream);
    if (pass == HPDL__CONV_INPUT_GRAD) return hpdl__wino_forward(hpdl__wino_turned(g), b, a, out, 1, stream);
    return hpdl__wino_backward_filter(g, a, b, out, stream);
}

/* hpdl__wino_run for f32; HPDL_ERR_UNSUPPORTED for the other types. */
template <typename T> struct hpdl__conv_winograd {
    static hpdl_status run(const hpdl__conv_geom &, hpdl__conv_pass, const T *, const T *, T *, cudaStream_t) {
        return HPDL_ERR_UNSUPPORTED;
    }
};
template <> struct hpdl__conv_winograd<float> {
    HPDL_LAZY hpdl_status run(const hpdl__conv_geom &g, hpdl__conv_pass pass, const float *a, const float *b, float *out,
                              cudaStream_t stream) {
        return hpdl__wino_run(g, pass, a, b, out, stream);
    }
};

/* ---- rung: im2col + the GEMM ladder ------------------------------------------------ */

/* Convolutions with x and y in NHWC and one group as GEMMs of
   hpdl_cuda_gemm's AUTO (f32: 3xTF32 tensor cores, splitk or warptile by
   shape), the gathered operand made explicit ("im2col"): the columns
   col [pixels x R S C] of some images, one row for each pixel (n, p, q) of
   y, one column for each tap (r, s, c), zeros in the padding. NHWC's
   filters are [K x R S C] and its y [pixels x K], so
       forward          y          = col w^T
       backward-data    dcol       = dy w, then dx (col2im: each element of
                                     x sums the entries of dcol that read it)
       backward-filter  dw        += dy^T col
   A 1x1 convolution at stride 1 without padding reads x itself as col (and
   backward-data writes dx as dcol). The columns are made for as many images
   at a time as fit in HPDL__IM2COL_BYTES (at least one), from the stream's
   pool; backward-filter adds each batch's product into dw (beta = 1 after
   the first). Any kernel size, stride, padding and dilation. */
#ifndef HPDL__IM2COL_BYTES /* tests/gpu_conv.cu sets it small, so that its cases come in several batches */
#define HPDL__IM2COL_BYTES ((size_t)256 << 20)
#endif

/* col [images P Q x R S C] from x, images n0..n0+images-1. */
template <typename T>
__global__ void hpdl__im2col(hpdl__conv_geom g, int n0, int images, const T *x, T *col) {
    const int C = g.x.c, R = g.p.kernel_h, S = g.p.kernel_w, P = g.y.h, Q = g.y.w;
    const int64_t total = (int64_t)images * P * Q * R * S * C;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t rest = i / C;
        const int c = (int)(i % C), s = (int)(rest % S), r = (int)(rest / S % R);
        rest /= (int64_t)S * R;
        const int q = (int)(rest % Q), p = (int)(rest / Q % P), n = n0 + (int)(rest / Q / P);
        const int h = hpdl__tap_input(p, g.p.stride_h, g.p.pad_h, r, g.p.dilation_h);
        const int w = hpdl__tap_input(q, g.p.stride_w, g.p.pad_w, s, g.p.dilation_w);
        col[i] = h >= 0 && h < g.x.h && w >= 0 && w < g.x.w ? x[hpdl_tensor4_offset(&g.x, n, c, h, w)] : (T)0;
    }
}

/* dx of images n0..n0+images-1 from dcol: each element the sum, in ACC, of
   the entries of the taps that read it. */
template <typename T, typename ACC>
__global__ void hpdl__col2im(hpdl__conv_geom g, int n0, int images, const T *dcol, T *dx) {
    const int C = g.x.c, H = g.x.h, W = g.x.w, R = g.p.kernel_h, S = g.p.kernel_w, P = g.y.h, Q = g.y.w;
    const int64_t total = (int64_t)images * H * W * C;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
        const int c = (int)(i % C), w = (int)(i / C % W), h = (int)(i / C / W % H), image = (int)(i / C / W / H);
        ACC sum = 0;
        for (int r = 0; r < R; r++) {
            int p, q;
            if (!hpdl__tap_output(h, g.p.stride_h, g.p.pad_h, r, g.p.dilation_h, P, &p)) continue;
            for (int s = 0; s < S; s++)
                if (hpdl__tap_output(w, g.p.stride_w, g.p.pad_w, s, g.p.dilation_w, Q, &q))
                    sum += (ACC)dcol[((((int64_t)image * P + p) * Q + q) * R + r) * S * C + (int64_t)s * C + c];
        }
        dx[hpdl_tensor4_offset(&g.x, n0 + image, c, h, w)] = (T)sum;
    }
}

/* Where the rung applies: f32 or f64 (16-bit types would round dcol and
   each batch's dw to the type; their tensor-core rungs serve them), x and y
   in NHWC, one group, and an image's pixels and taps (the GEMMs' rows and
   columns) within int. */
HPDL_CUDA_API int hpdl__im2col_applies(const hpdl__conv_geom &g, size_t elem_bytes) {
    const int64_t taps = (int64_t)g.p.kernel_h * g.p.kernel_w * g.x.c, pixels = (int64_t)g.y.h * g.y.w;
    return elem_bytes >= 4 && g.x.layout == HPDL_NHWC && g.y.layout == HPDL_NHWC && g.p.groups == 1 &&
           taps <= INT_MAX && pixels <= INT_MAX;
}

/* x itself is col: 1x1, stride 1, no padding. */
HPDL_CUDA_API int hpdl__im2col_is_x(const hpdl__conv_geom &g) {
    return g.p.kernel_h == 1 && g.p.kernel_w == 1 && g.p.stride_h == 1 && g.p.stride_w == 1 && g.p.pad_h == 0 &&
           g.p.pad_w == 0;
}

/* One pass by im2col and GEMMs, a batch of images at a time; (a, b) are (x, w), (w, dy) or (x, dy). */
template <typename T>
static inline hpdl_status hpdl__conv_im2col(const hpdl__conv_geom &g, hpdl__conv_pass pass, const T *a, const T *b,
                                            T *out, cudaStream_t stream) {
    typedef typename hpdl__acc<T>::type ACC;
    if (!hpdl__im2col_applies(g, sizeof(T))) return HPDL_ERR_UNSUPPORTED;
    const int K = g.y.c, taps = g.p.kernel_h * g.p.kernel_w * g.x.c, pixels = g.y.h * g.y.w, direct = hpdl__im2col_is_x(g);
    const size_t image_bytes = (size_t)pixels * taps * sizeof(T), x_image = (size_t)g.x.h * g.x.w * g.x.c;
    int batch = direct ? g.x.n : (int)(HPDL__IM2COL_BYTES / image_bytes);
    if (batch < 1) batch = 1;
    if (batch > g.x.n) batch = g.x.n;
    if ((int64_t)batch * pixels > INT_MAX) batch = INT_MAX / pixels;
    T *col = NULL;
    hpdl_status s = HPDL_OK;
    if (!direct) HPDL_CUDA_TRY(cudaMallocAsync((void **)&col, (size_t)batch * image_bytes, stream));
    for (int n0 = 0; n0 < g.x.n && s == HPDL_OK; n0 += batch) {
        const int images = g.x.n - n0 < batch ? g.x.n - n0 : batch, rows = images * pixels;
        const size_t x_at = (size_t)n0 * x_image, y_at = (size_t)n0 * pixels * K;
        const int grid = hpdl__grid_for((int64_t)rows * taps, 256);
        if (pass == HPDL__CONV_FORWARD) {
            if (!direct) hpdl__im2col<T><<<grid, 256, 0, stream>>>(g, n0, images, a, col);
            s = hpdl__cuda_gemm<T, ACC>(HPDL_GEMM_AUTO, HPDL_NO_TRANS, HPDL_TRANS, rows, K, taps, (ACC)1,
                                        direct ? a + x_at : col, taps, b, taps, (ACC)0, out + y_at, K, stream);
        } else if (pass == HPDL__CONV_INPUT_GRAD) {
            s = hpdl__cuda_gemm<T, ACC>(HPDL_GEMM_AUTO, HPDL_NO_TRANS, HPDL_NO_TRANS, rows, taps, K, (ACC)1, b + y_at, K,
                                        a, taps, (ACC)0, direct ? out + x_at : col, taps, stream);
            if (s == HPDL_OK && !direct)
                hpdl__col2im<T, ACC><<<hpdl__grid_for((int64_t)images * x_image, 256), 256, 0, stream>>>(g, n0, images,
                                                                                                       col, out);
        } else {
            if (!direct) hpdl__im2col<T><<<grid, 256, 0, stream>>>(g, n0, images, a, col);
            s = hpdl__cuda_gemm<T, ACC>(HPDL_GEMM_AUTO, HPDL_TRANS, HPDL_NO_TRANS, K, taps, rows, (ACC)1, b + y_at, K,
                                        direct ? a + x_at : col, taps, (ACC)(n0 > 0), out, taps, stream);
        }
        if (s == HPDL_OK && cudaGetLastError() != cudaSuccess) s = HPDL_ERR_CUDA;
    }
    if (col && cudaFreeAsync(col, stream) != cudaSuccess && s == HPDL_OK) s = HPDL_ERR_CUDA;
    return s;
}

/* ---- cuDNN backend ------------------------------------------------------------------ */

#ifdef HPDL_HAVE_CUDNN
/* cuDNN's names for an element type: data, compute (sums) and math mode
   (tensor cores for f16/bf16; f32 stays off TF32, as the f32 rungs do).
   NCHW: whether an NHWC call may run in NCHW (hpdl__conv_cudnn): cuDNN's
   f32 algorithms for NHWC are few and slow. */
template <typename T> struct hpdl__cudnn_type;
template <> struct hpdl__cudnn_type<float> {
    enum { DATA = CUDNN_DATA_FLOAT, COMPUTE = CUDNN_DATA_FLOAT, MATH = CUDNN_FMA_MATH, NCHW = 1 };
    typedef float scale;
};
template <> struct hpdl__cudnn_type<double> {
    enum { DATA = CUDNN_DATA_DOUBLE, COMPUTE = CUDNN_DATA_DOUBLE, MATH = CUDNN_DEFAULT_MATH, NCHW = 0 };
    typedef double scale;
};
template <> struct hpdl__cudnn_type<__half> {
    enum { DATA = CUDNN_DATA_HALF, COMPUTE = CUDNN_DATA_FLOAT, MATH = CUDNN_TENSOR_OP_MATH, NCHW = 0 };
    typedef float scale;
};
template <> struct hpdl__cudnn_type<__nv_bfloat16> {
    enum { DATA = CUDNN_DATA_BFLOAT16, COMPUTE = CUDNN_DATA_FLOAT, MATH = CUDNN_TENSOR_OP_MATH, NCHW = 0 };
    typedef float scale;
};

#define HPDL__CUDNN_WORKSPACE_MAX ((size_t)1 << 30) /* most workspace an algorithm may have */
#define HPDL__CUDNN_PLANS 256                       /* shapes whose algorithm is remembered */

/* One cuDNN handle and workspace per device, made on first use and kept for
   the life of the program (not thread-safe on that first use). The
   workspace is HPDL__CUDNN_WORKSPACE_MAX or a quarter of the free memory,
   whichever is less. */
HPDL_LAZY hpdl_status hpdl__cudnn_handle(cudnnHandle_t *out, void **workspace, size_t *workspace_bytes) {
    static cudnnHandle_t handles[64];
    static void *spaces[64];
    static size_t sizes[64];
    int device = 0;
    HPDL_CUDA_TRY(cudaGetDevice(&device));
    if (device < 0 || device >= 64) return HPDL_ERR_UNSUPPORTED;
    if (!handles[device]) {
        size_t free_b = 0, total_b = 0;
        if (cudnnCreate(&handles[device]) != CUDNN_STATUS_SUCCESS) { handles[device] = NULL; return HPDL_ERR_UNSUPPORTED; }
        HPDL_CUDA_TRY(cudaMemGetInfo(&free_b, &total_b));
        sizes[device] = free_b / 4 < HPDL__CUDNN_WORKSPACE_MAX ? free_b / 4 : HPDL__CUDNN_WORKSPACE_MAX;
        if (cudaMalloc(&spaces[device], sizes[device]) != cudaSuccess) { cudaGetLastError(); sizes[device] = 0; spaces[device] = NULL; }
    }
    *out = handles[device];
    *workspace = spaces[device];
    *workspace_bytes = sizes[device];
    return HPDL_OK;
}

/* The descriptors of one convolution, made from its checked geometry. */
struct hpdl__cudnn_descs {
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
};

HPDL_LAZY void hpdl__cudnn_descs_destroy(hpdl__cudnn_descs *d) {
    cudnnDestroyTensorDescriptor(d->x);
    cudnnDestroyTensorDescriptor(d->y);
    cudnnDestroyFilterDescriptor(d->w);
    cudnnDestroyConvolutionDescriptor(d->conv);
}

HPDL_LAZY cudnnTensorFormat_t hpdl__cudnn_format(hpdl_layout layout) {
    return layout == HPDL_NHWC ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
}

template <typename T> static inline hpdl_status hpdl__cudnn_descs_make(const hpdl__conv_geom &g, hpdl__cudnn_descs *d) {
    typedef hpdl__cudnn_type<T> CT;
    const cudnnDataType_t data = (cudnnDataType_t)CT::DATA;
    int ok = 1;
    memset(d, 0, sizeof *d);
    ok &= cudnnCreateTensorDescriptor(&d->x) == CUDNN_STATUS_SUCCESS;
    ok &= cudnnCreateTensorDescriptor(&d->y) == CUDNN_STATUS_SUCCESS;
    ok &= cudnnCreateFilterDescriptor(&d->w) == CUDNN_STATUS_SUCCESS;
    ok &= cudnnCreateConvolutionDescriptor(&d->conv) == CUDNN_STATUS_SUCCESS;
    ok = ok && cudnnSetTensor4dDescriptor(d->x, hpdl__cudnn_format(g.x.layout), data, g.x.n, g.x.c, g.x.h, g.x.w) ==
                   CUDNN_STATUS_SUCCESS;
    ok = ok && cudnnSetTensor4dDescriptor(d->y, hpdl__cudnn_format(g.y.layout), data, g.y.n, g.y.c, g.y.h, g.y.w) ==
                   CUDNN_STATUS_SUCCESS;
    ok = ok && cudnnSetFilter4dDescriptor(d->w, data, hpdl__cudnn_format(g.w.layout), g.w.n, g.w.c, g.w.h, g.w.w) ==
                   CUDNN_STATUS_SUCCESS;
    ok = ok && cudnnSetConvolution2dDescriptor(d->conv, g.p.pad_h, g.p.pad_w, g.p.stride_h, g.p.stride_w, g.p.dilation_h,
                                               g.p.dilation_w, CUDNN_CROSS_CORRELATION,
                                               (cudnnDataType_t)CT::COMPUTE) == CUDNN_STATUS_SUCCESS;
    ok = ok && cudnnSetConvolutionGroupCount(d->conv, g.p.groups) == CUDNN_STATUS_SUCCESS;
    ok = ok && cudnnSetConvolutionMathType(d->conv, (cudnnMathType_t)CT::MATH) == CUDNN_STATUS_SUCCESS;
    if (!ok) hpdl__cudnn_descs_destroy(d);
    return ok ? HPDL_OK : HPDL_ERR_UNSUPPORTED;
}

/* A remembered choice: the shape (geometry, pass, type, device) and the
   algorithm cudnnFind*AlgorithmEx ranked first, with its workspace and the
   math mode it was timed with (it runs with that mode); nchw: run in NCHW
   (hpdl__conv_cudnn). */
struct hpdl__cudnn_plan {
    hpdl__conv_geom g;
    int pass, type, device, algo, math, nchw;
    size_t workspace;
};

/* The remembered plan for a shape, or NULL; `fresh` is where a new one goes
   (the oldest is overwritten when all are taken). */
HPDL_LAZY hpdl__cudnn_plan *hpdl__cudnn_plan_find(const hpdl__cudnn_plan *key, hpdl__cudnn_plan **fresh) {
    static hpdl__cudnn_plan plans[HPDL__CUDNN_PLANS];
    static int used, next;
    for (int i = 0; i < used; i++)
        if (memcmp(&plans[i].g, &key->g, sizeof key->g) == 0 && plans[i].pass == key->pass &&
            plans[i].type == key->type && plans[i].device == key->device)
            return &plans[i];
    *fresh = &plans[next];
    next = (next + 1) % HPDL__CUDNN_PLANS;
    if (used < HPDL__CUDNN_PLANS) used++;
    return NULL;
}

/* cuDNN's ranking of its algorithms for one pass, run on the caller's
   buffers (the output is written): the first that ran, or -1. Filters
   wider than 3 skip the non-fused Winograd algorithms: on one H200
   (cuDNN 9.14, 2026-11-27) the forward one gave f32 results 0.2-0.4 off (worst
   relative error; the others 1e-5 to 1e-4) on 12 x 256 x 8 x 8 images and
   40 5x5 filters, and it ties for fastest there, so it won cudnnFind's
   timing in some runs (notes/experiments/2026-11-27-conv-cudnn). */
HPDL_LAZY int hpdl__cudnn_find(cudnnHandle_t h, const hpdl__cudnn_descs &d, hpdl__conv_pass pass, const void *a,
                               const void *b, void *out, void *ws, size_t ws_bytes, int wide_filter, size_t *need,
                               int *math) {
    int n = 0;
    cudnnStatus_t st;
    if (pass == HPDL__CONV_FORWARD) {
        const cudnnConvolutionFwdAlgo_t WINOGRAD = CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
        cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
        st = cudnnFindConvolutionForwardAlgorithmEx(h, d.x, a, d.w, b, d.conv, d.y, out,
                                                    CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, perf, ws, ws_bytes);
        for (int i = 0; st == CUDNN_STATUS_SUCCESS && i < n; i++)
            if (perf[i].status == CUDNN_STATUS_SUCCESS && !(wide_filter && perf[i].algo == WINOGRAD)) {
                *need = perf[i].memory;
                *math = (int)perf[i].mathType;
                return (int)perf[i].algo;
            }
    } else if (pass == HPDL__CONV_INPUT_GRAD) {
        const cudnnConvolutionBwdDataAlgo_t WINOGRAD = CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED;
        cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
        st = cudnnFindConvolutionBackwardDataAlgorithmEx(h, d.w, a, d.y, b, d.conv, d.x, out,
                                                         CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n, perf, ws, ws_bytes);
        for (int i = 0; st == CUDNN_STATUS_SUCCESS && i < n; i++)
            if (perf[i].status == CUDNN_STATUS_SUCCESS && !(wide_filter && perf[i].algo == WINOGRAD)) {
                *need = perf[i].memory;
                *math = (int)perf[i].mathType;
                return (int)perf[i].algo;
            }
    } else {
        const cudnnConvolutionBwdFilterAlgo_t WINOGRAD = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED;
        cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
        st = cudnnFindConvolutionBackwardFilterAlgorithmEx(h, d.x, a, d.y, b, d.conv, d.w, out,
                                                           CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n, perf, ws,
                                                           ws_bytes);
        for (int i = 0; st == CUDNN_STATUS_SUCCESS && i < n; i++)
            if (perf[i].status == CUDNN_STATUS_SUCCESS && !(wide_filter && perf[i].algo == WINOGRAD)) {
                *need = perf[i].memory;
                *math = (int)perf[i].mathType;
                return (int)perf[i].algo;
            }
    }
    return -1;
}

/* One pass by algorithm `algo` (out = 1 * conv + 0 * out). */
template <typename T>
static inline cudnnStatus_t hpdl__cudnn_run(cudnnHandle_t h, const hpdl__cudnn_descs &d, hpdl__conv_pass pass, int algo,
                                            const void *a, const void *b, void *out, void *ws, size_t ws_bytes) {
    const typename hpdl__cudnn_type<T>::scale one = 1, zero = 0;
    if (pass == HPDL__CONV_FORWARD)
        return cudnnConvolutionForward(h, &one, d.x, a, d.w, b, d.conv, (cudnnConvolutionFwdAlgo_t)algo, ws, ws_bytes,
                                       &zero, d.y, out);
    if (pass == HPDL__CONV_INPUT_GRAD)
        return cudnnConvolutionBackwardData(h, &one, d.w, a, d.y, b, d.conv, (cudnnConvolutionBwdDataAlgo_t)algo, ws,
                                            ws_bytes, &zero, d.x, out);
    return cudnnConvolutionBackwardFilter(h, &one, d.x, a, d.y, b, d.conv, (cudnnConvolutionBwdFilterAlgo_t)algo, ws,
                                          ws_bytes, &zero, d.w, out);
}

/* out[b] = in[b] transposed, for `batch` matrices of rows x cols, through
   32 x 32 tiles in shared memory (a block of 32 x 8 threads a tile). */
template <typename T>
__global__ void __launch_bounds__(256) hpdl__transpose_kernel(const T *in, T *out, int rows, int cols) {
    __shared__ T tile[32][33]; /* 33: a column of the tile spans all banks */
    const size_t matrix = (size_t)rows * cols * blockIdx.z;
    int r = blockIdx.y * 32 + threadIdx.y, c = blockIdx.x * 32 + threadIdx.x, j;
    for (j = 0; j < 32; j += 8)
        if (r + j < rows && c < cols) tile[threadIdx.y + j][threadIdx.x] = in[matrix + (size_t)(r + j) * cols + c];
    __syncthreads();
    r = blockIdx.x * 32 + threadIdx.y;
    c = blockIdx.y * 32 + threadIdx.x;
    for (j = 0; j < 32; j += 8)
        if (r + j < cols && c < rows) out[matrix + (size_t)(r + j) * rows + c] = tile[threadIdx.x][threadIdx.y + j];
}

/* A tensor's NHWC elements into NCHW order (to_nchw) or back. */
template <typename T>
static inline hpdl_status hpdl__cudnn_relayout(const hpdl_tensor4 &t, const T *in, T *out, int to_nchw,
                                               cudaStream_t stream) {
    const int pixels = t.h * t.w, rows = to_nchw ? pixels : t.c, cols = to_nchw ? t.c : pixels;
    hpdl__transpose_kernel<T><<<dim3((cols + 31) / 32, (rows + 31) / 32, t.n), dim3(32, 8), 0, stream>>>(in, out, rows,
                                                                                                           cols);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* The tensors behind a pass's operands a, b and out (hpdl__cudnn_run's order). */
HPDL_LAZY void hpdl__cudnn_operands(const hpdl__conv_geom &g, hpdl__conv_pass pass, hpdl_tensor4 t[3]) {
    t[0] = pass == HPDL__CONV_INPUT_GRAD ? g.w : g.x;
    t[1] = pass == HPDL__CONV_FORWARD ? g.w : g.y;
    t[2] = pass == HPDL__CONV_FORWARD ? g.y : pass == HPDL__CONV_INPUT_GRAD ? g.x : g.w;
}

/* Device memory for a pass's operands in NCHW, one buffer per device,
   grown when a call needs more; NULL above HPDL__CUDNN_WORKSPACE_MAX or
   where it cannot be had. An outgrown buffer stays allocated: a CUDA graph
   captured before may still use it. A buffer grows on a shape's first
   call, outside any capture, as cudnnFind runs. */
HPDL_LAZY void *hpdl__cudnn_scratch(size_t bytes) {
    static void *buffers[64];
    static size_t sizes[64];
    int device = 0;
    if (bytes > HPDL__CUDNN_WORKSPACE_MAX || cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= 64)
        return NULL;
    if (sizes[device] < bytes) {
        void *grown = NULL;
        if (cudaMalloc(&grown, bytes) != cudaSuccess) { cudaGetLastError(); return NULL; }
        buffers[device] = grown;
        sizes[device] = bytes;
    }
    return buffers[device];
}

/* The descriptors of a call in its own layout, or in NCHW. */
template <typename T>
static inline hpdl_status hpdl__cudnn_descs_for(const hpdl__conv_geom &g, int nchw, hpdl__cudnn_descs *d) {
    hpdl__conv_geom in = g;
    if (nchw) in.x.layout = in.w.layout = in.y.layout = HPDL_NCHW;
    return hpdl__cudnn_descs_make<T>(in, d);
}

/* A pass's operands a and b copied in NCHW order into the scratch
   memory, where *at and *bt point, and *outt where its output goes. */
template <typename T>
static inline hpdl_status hpdl__cudnn_nchw_operands(const hpdl__conv_geom &g, hpdl__conv_pass pass, const void *a,
                                                    const void *b, cudaStream_t stream, T **at, T **bt, T **outt) {
    hpdl_tensor4 t[3];
    hpdl__cudnn_operands(g, pass, t);
    const size_t na = hpdl_tensor4_count(&t[0]), nb = hpdl_tensor4_count(&t[1]), nout = hpdl_tensor4_count(&t[2]);
    if (!(*at = (T *)hpdl__cudnn_scratch(sizeof(T) * (na + nb + nout)))) return HPDL_ERR_NOMEM;
    *bt = *at + na;
    *outt = *bt + nb;
    hpdl_status s = hpdl__cudnn_relayout(t[0], (const T *)a, *at, 1, stream);
    return s == HPDL_OK ? hpdl__cudnn_relayout(t[1], (const T *)b, *bt, 1, stream) : s;
}

/* The pass in NCHW (d: NCHW descriptors): a and b copied into scratch
   memory in that order, cuDNN's algorithm there, its output copied back
   into out. */
template <typename T>
static inline cudnnStatus_t hpdl__cudnn_run_nchw(cudnnHandle_t h, const hpdl__cudnn_descs &d, const hpdl__conv_geom &g,
                                                 hpdl__conv_pass pass, int algo, const void *a, const void *b, void *out,
                                                 void *ws, size_t ws_bytes, cudaStream_t stream) {
    hpdl_tensor4 t[3];
    T *at, *bt, *outt;
    if (hpdl__cudnn_nchw_operands<T>(g, pass, a, b, stream, &at, &bt, &outt) != HPDL_OK)
        return CUDNN_STATUS_EXECUTION_FAILED;
    cudnnStatus_t st = hpdl__cudnn_run<T>(h, d, pass, algo, at, bt, outt, ws, ws_bytes);
    hpdl__cudnn_operands(g, pass, t);
    if (st == CUDNN_STATUS_SUCCESS && hpdl__cudnn_relayout(t[2], (const T *)outt, (T *)out, 0, stream) != HPDL_OK)
        st = CUDNN_STATUS_EXECUTION_FAILED;
    return st;
}

/* One call of a plan (d: descriptors of its layout). */
template <typename T>
static inline cudnnStatus_t hpdl__cudnn_run_plan(cudnnHandle_t h, const hpdl__cudnn_descs &d, const hpdl__conv_geom &g,
                                                 const hpdl__cudnn_plan &plan, const void *a, const void *b, void *out,
                                                 void *ws, cudaStream_t stream) {
    const hpdl__conv_pass pass = (hpdl__conv_pass)plan.pass;
    cudnnStatus_t st = plan.algo < 0 ? CUDNN_STATUS_NOT_SUPPORTED
                                     : cudnnSetConvolutionMathType(d.conv, (cudnnMathType_t)plan.math);
    if (st != CUDNN_STATUS_SUCCESS) return st;
    return plan.nchw ? hpdl__cudnn_run_nchw<T>(h, d, g, pass, plan.algo, a, b, out, ws, plan.workspace, stream)
                     : hpdl__cudnn_run<T>(h, d, pass, plan.algo, a, b, out, ws, plan.workspace);
}

/* Microseconds of one call of a plan, the second of two (the first warms
   up); -1 where it failed. */
template <typename T>
static inline double hpdl__cudnn_time(cudnnHandle_t h, const hpdl__cudnn_descs &d, const hpdl__conv_geom &g,
                                      const hpdl__cudnn_plan &plan, const void *a, const void *b, void *out, void *ws,
                                      cudaStream_t stream) {
    cudaEvent_t e[2] = {NULL, NULL};
    float ms = -1.0f;
    cudnnStatus_t st = cudaEventCreate(&e[0]) == cudaSuccess && cudaEventCreate(&e[1]) == cudaSuccess
                           ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_ALLOC_FAILED;
    for (int i = 0; i < 2 && st == CUDNN_STATUS_SUCCESS; i++) {
        cudaEventRecord(e[0], stream);
        st = hpdl__cudnn_run_plan<T>(h, d, g, plan, a, b, out, ws, stream);
        cudaEventRecord(e[1], stream);
    }
    if (st == CUDNN_STATUS_SUCCESS && cudaEventSynchronize(e[1]) == cudaSuccess) cudaEventElapsedTime(&ms, e[0], e[1]);
    for (int i = 0; i < 2; i++)
        if (e[i]) cudaEventDestroy(e[i]);
    cudaGetLastError();
    return st == CUDNN_STATUS_SUCCESS && ms >= 0 ? 1e3 * ms : -1.0;
}

/* A plan for the shape (key): cuDNN's fastest algorithm in the call's
   layout, and for f32 in NHWC also in NCHW (hpdl__cudnn_run_nchw), each
   timed once, the faster kept. On ResNet-18's 3x3 convolutions at batch
   128 (one H200, cuDNN 9.14) the three passes took 1.07-1.24 ms a shape in
   NHWC and 0.34-0.78 ms in NCHW, mostly Winograd, before the copies
   (notes/experiments/2026-11-28-resnet-convs). */
template <typename T>
static inline hpdl__cudnn_plan hpdl__cudnn_plan_make(cudnnHandle_t h, const hpdl__cudnn_plan &key, const void *a,
                                                     const void *b, void *out, void *ws, size_t ws_bytes,
                                                     cudaStream_t stream) {
    const hpdl__conv_geom &g = key.g;
    const hpdl__conv_pass pass = (hpdl__conv_pass)key.pass;
    const int wide = g.w.h > 3 || g.w.w > 3;
    hpdl__cudnn_plan plan = key, alt = key;
    hpdl__cudnn_descs d, dn;
    T *at, *bt, *outt;
    plan.algo = -1;
    if (hpdl__cudnn_descs_for<T>(g, 0, &d) != HPDL_OK) return plan;
    plan.algo = hpdl__cudnn_find(h, d, pass, a, b, out, ws, ws_bytes, wide, &plan.workspace, &plan.math);
    if (hpdl__cudnn_type<T>::NCHW && g.x.layout == HPDL_NHWC && hpdl__cudnn_descs_for<T>(g, 1, &dn) == HPDL_OK) {
        alt.nchw = 1;
        alt.algo = -1;
        if (hpdl__cudnn_nchw_operands<T>(g, pass, a, b, stream, &at, &bt, &outt) == HPDL_OK)
            alt.algo = hpdl__cudnn_find(h, dn, pass, at, bt, outt, ws, ws_bytes, wide, &alt.workspace, &alt.math);
        const double nhwc_us = hpdl__cudnn_time<T>(h, d, g, plan, a, b, out, ws, stream);
        const double nchw_us = hpdl__cudnn_time<T>(h, dn, g, alt, a, b, out, ws, stream);
        if (nchw_us >= 0 && (nhwc_us < 0 || nchw_us < nhwc_us)) plan = alt;
        hpdl__cudnn_descs_destroy(&dn);
    }
    hpdl__cudnn_descs_destroy(&d);
    return plan;
}

/* The CUDNN rung: the remembered plan for this shape, made on the first
   call (which then takes as long as cuDNN's trials). */
template <typename T>
static inline hpdl_status hpdl__conv_cudnn(const hpdl__conv_geom &g, hpdl__conv_pass pass, const void *a, const void *b,
                                           void *out, cudaStream_t stream) {
    cudnnHandle_t h;
    hpdl__cudnn_descs d;
    hpdl__cudnn_plan key, *plan, *fresh = NULL;
    void *ws;
    size_t ws_bytes;
    hpdl_status s = hpdl__cudnn_handle(&h, &ws, &ws_bytes);
    if (s != HPDL_OK) return s;
    if (cudnnSetStream(h, stream) != CUDNN_STATUS_SUCCESS) return HPDL_ERR_CUDA;
    memset(&key, 0, sizeof key);
    key.g = g;
    key.pass = (int)pass;
    key.type = hpdl__cudnn_type<T>::DATA;
    HPDL_CUDA_TRY(cudaGetDevice(&key.device));
    plan = hpdl__cudnn_plan_find(&key, &fresh);
    if (!plan) {
        *fresh = hpdl__cudnn_plan_make<T>(h, key, a, b, out, ws, ws_bytes, stream);
        plan = fresh;
    }
    if ((s = hpdl__cudnn_descs_for<T>(g, plan->nchw, &d)) != HPDL_OK) return s;
    cudnnStatus_t st = hpdl__cudnn_run_plan<T>(h, d, g, *plan, a, b, out, ws, stream);
    hpdl__cudnn_descs_destroy(&d);
    if (st == CUDNN_STATUS_NOT_SUPPORTED || st == CUDNN_STATUS_BAD_PARAM) return HPDL_ERR_UNSUPPORTED;
    return st == CUDNN_STATUS_SUCCESS ? HPDL_OK : HPDL_ERR_CUDA;
}
#else
template <typename T>
static inline hpdl_status hpdl__conv_cudnn(const hpdl__conv_geom &, hpdl__conv_pass, const void *, const void *, void *,
                                           cudaStream_t) {
    return HPDL_ERR_UNSUPPORTED; /* built without cuDNN */
}
#endif

/* One pass on the device. a, b, out as the CPU twin's helpers take them:
   forward (x, w, y), backward-data (w, dy, dx), backward-filter (x, dy, dw).
   Arguments are checked by the CPU twin's rules before anything runs. */
/* ---- few channels: the first layers of small CNNs ----------------------------
   With 3 -> 6 -> 16 channels a GEMM tile is mostly padding (the tensor-core
   rungs also pad channels to multiples of 8), and a thread per output
   element spends more instructions on indices than on products. These
   kernels keep the index arithmetic out of the inner loops: 32-bit strides
   within an image, the filter staged once per block, a tap's position
   found once for all its channels. Every type (groups == 1), 16-bit values
   summed in f32:
     forward, backward-data  (one kernel) thread = output pixel (forward) or
                    input pixel (backward-data) and KPT of its channels,
                    the filter in shared memory;
     backward-filter  stage 1: a block stages P pixels at a time (their dy
                    rows and their input patches, im2col-style, plus a
                    column of ones, whose sums are the bias gradient); a
                    thread keeps a 4 x 4 tile of sums (4 filters x 4 taps,
                    read as two 4-wide loads per pixel); each block writes
                    its sums to a workspace row. Stage 2 adds the rows in a
                    fixed order (deterministic, and no atomics, so 16-bit
                    dw too). */
#define HPDL__FC_MAX 32     /* most channels on the registers' side (forward: K, backward-data: C) */
#define HPDL__FC_THREADS 256 /* backward-filter blocks */
#define HPDL__FC_ROUNDS 2   /* most 4 x 4 tiles a backward-filter thread keeps */
#define HPDL__FC_SMEM (48 * 1024)

/* A tensor's element strides: between images (64 bits), and between
   channels, rows and columns within one (32 bits). */
typedef struct hpdl__fc_strides {
    int64_t n;
    int c, h, w;
} hpdl__fc_strides;

static inline hpdl__fc_strides hpdl__fc_strides_of(const hpdl_tensor4 &d) {
    hpdl__fc_strides s;
    s.n = (int64_t)d.c * d.h * d.w;
    s.c = d.layout == HPDL_NHWC ? 1 : d.h * d.w;
    s.h = d.layout == HPDL_NHWC ? d.w * d.c : d.w;
    s.w = d.layout == HPDL_NHWC ? d.c : 1;
    return s;
}

typedef struct hpdl__fc_args {
    hpdl__conv_geom g;
    hpdl__fc_strides x, y;
    int chunks; /* channel chunks per pixel (forward, backward-data); filter quads (backward-filter) */
    int wide;   /* channels on the registers' side, padded with zeros: a multiple of KPT or of 4 */
} hpdl__fc_args;

/* Copies the filter into shared memory as ws[((a * R + r) * S + s) * wide + b],
   (a, b) = (c, k) forward and (k, c) backward-data, zeros for b past the
   channels: a thread's inner loop reads KPT consecutive words, the same
   for every thread of the warp on the same tap (a broadcast). */
template <typename T, typename ACC>
static __device__ void hpdl__fc_stage_filter(const hpdl__fc_args &f, const T *w, ACC *ws, int forward) {
    const int K = f.g.w.n, C = f.g.w.c, RS = f.g.w.h * f.g.w.w, A = forward ? C : K, B = forward ? K : C;
    const int nhwc = f.g.w.layout == HPDL_NHWC, c_stride = nhwc ? 1 : RS, rs_stride = nhwc ? C : 1;
    for (int e = threadIdx.x; e < A * RS * f.wide; e += blockDim.x) {
        int b = e % f.wide, rs = e / f.wide % RS, a = e / f.wide / RS;
        int k = forward ? b : a, c = forward ? a : b;
        ws[e] = b < B ? (ACC)hpdl__gemm_acc(w[(size_t)k * C * RS + c * c_stride + rs * rs_stride]) : (ACC)0;
    }
    __syncthreads();
}

/* The position of the tensor read through tap r along one axis: forward,
   the input position output position o reads; backward-data, the output
   position whose tap r reads input position o. 0 when there is none. */
static __device__ __forceinline__ int hpdl__fc_source(int forward, int o, int stride, int pad, int r, int dilation,
                                                      int size, int *i) {
    if (forward) *i = hpdl__tap_input(o, stride, pad, r, dilation);
    else if (stride == 1) *i = o + pad - r * dilation; /* hpdl__tap_output without its division */
    else return hpdl__tap_output(o, stride, pad, r, dilation, size, i);
    return *i >= 0 && *i < size;
}

/* Thread t: pixel t / chunks of the tensor written (y forward, dx
   backward-data) and its KPT channels from (t % chunks) * KPT, summing
   over the taps and the channels of the tensor read (x, dy). */
template <typename T, typename ACC, int KPT, int FORWARD>
__global__ void __launch_bounds__(128) hpdl__fc_direct(hpdl__fc_args f, const T *in, const T *w, T *out) {
    extern __shared__ uint4 hpdl__fc_smem[];
    ACC *ws = (ACC *)hpdl__fc_smem;
    const hpdl_conv2d_params &p = f.g.p;
    const hpdl_tensor4 &id = FORWARD ? f.g.x : f.g.y, &od = FORWARD ? f.g.y : f.g.x;
    const hpdl__fc_strides &is = FORWARD ? f.x : f.y, &os = FORWARD ? f.y : f.x;
    hpdl__fc_stage_filter<T, ACC>(f, w, ws, FORWARD);
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= od.n * od.h * od.w * f.chunks) return;
    const int k0 = t % f.chunks * KPT, pixel = t / f.chunks, ow = pixel % od.w, oh = pixel / od.w % od.h;
    const int n = pixel / od.w / od.h, RS = p.kernel_h * p.kernel_w;
    const T *src = in + n * is.n;
    ACC acc[KPT];
    for (int k = 0; k < KPT; k++) acc[k] = 0;
    for (int r = 0; r < p.kernel_h; r++) {
        int ih, iw;
        if (!hpdl__fc_source(FORWARD, oh, p.stride_h, p.pad_h, r, p.dilation_h, id.h, &ih)) continue;
        for (int s = 0; s < p.kernel_w; s++) {
            if (!hpdl__fc_source(FORWARD, ow, p.stride_w, p.pad_w, s, p.dilation_w, id.w, &iw)) continue;
            const T *v = src + ih * is.h + iw * is.w;
            const ACC *wr = ws + (r * p.kernel_w + s) * f.wide + k0;
            for (int c = 0; c < id.c; c++, wr += RS * f.wide) {
                ACC vc = (ACC)hpdl__gemm_acc(v[c * is.c]);
#pragma unroll
                for (int k = 0; k < KPT; k++) acc[k] += vc * wr[k];
            }
        }
    }
    T *dst = out + n * os.n + oh * os.h + ow * os.w;
    for (int k = 0; k < KPT && k0 + k < od.c; k++) hpdl__gemm_put(dst + (k0 + k) * os.c, acc[k]);
}

/* Four consecutive values of shared memory (16-byte aligned) in one or two loads. */
static __device__ __forceinline__ void hpdl__fc_load4(const float *p, float v[4]) {
    float4 q = *(const float4 *)p;
    v[0] = q.x; v[1] = q.y; v[2] = q.z; v[3] = q.w;
}
static __device__ __forceinline__ void hpdl__fc_load4(const double *p, double v[4]) {
    double2 a = *(const double2 *)p, b = *(const double2 *)(p + 2);
    v[0] = a.x; v[1] = a.y; v[2] = b.x; v[3] = b.y;
}

/* The backward-filter's shared memory: P staged pixels' input patches
   xs[i][j] (taps4 = taps + 1 rounded up to 4: the taps, the bias's column of
   ones, zeros) and gradients dys[i][k] (wide = K rounded up to 4, zeros
   past K), then each tap's offsets within a patch: channel, row, column. */
template <typename ACC> struct hpdl__fc_stage {
    ACC *xs, *dys;
    int *tap_c, *tap_h, *tap_w;
};

template <typename ACC>
static __device__ hpdl__fc_stage<ACC> hpdl__fc_stage_make(char *smem, int taps, int P, int taps4, size_t acc_bytes) {
    hpdl__fc_stage<ACC> st;
    st.xs = (ACC *)smem;
    st.dys = st.xs + (size_t)P * taps4;
    st.tap_c = (int *)(smem + acc_bytes);
    st.tap_h = st.tap_c + taps;
    st.tap_w = st.tap_h + taps;
    return st;
}

/* Stages pixels [p0, p0 + P) of dy's N*H*W, zeros past the last: a warp per
   pixel, its lanes over the taps. */
template <typename T, typename ACC>
static __device__ void hpdl__fc_stage_pixels(const hpdl__fc_args &f, const hpdl__fc_stage<ACC> &st, int P, int taps4,
                                             int p0, const T *x, const T *dy) {
    const hpdl__conv_geom &g = f.g;
    const int taps = g.x.c * g.p.kernel_h * g.p.kernel_w, lane = threadIdx.x % 32;
    for (int i = threadIdx.x / 32; i < P; i += blockDim.x / 32) {
        const int pixel = p0 + i, valid = pixel < g.y.n * g.y.h * g.y.w;
        const int ow = pixel % g.y.w, oh = pixel / g.y.w % g.y.h, n = pixel / g.y.w / g.y.h;
        const int ih0 = oh * g.p.stride_h - g.p.pad_h, iw0 = ow * g.p.stride_w - g.p.pad_w;
        const T *xn = x + n * f.x.n, *dyp = dy + n * f.y.n + oh * f.y.h + ow * f.y.w;
        for (int j = lane; j < taps4; j += 32) {
            ACC v = 0;
            if (valid && j < taps) {
                int ih = ih0 + st.tap_h[j], iw = iw0 + st.tap_w[j];
                if (ih >= 0 && ih < g.x.h && iw >= 0 && iw < g.x.w)
                    v = (ACC)hpdl__gemm_acc(xn[st.tap_c[j] + ih * f.x.h + iw * f.x.w]);
            } else if (valid && j == taps) {
                v = 1;
            }
            st.xs[i * taps4 + j] = v;
        }
        for (int k = lane; k < f.wide; k += 32)
            st.dys[i * f.wide + k] = valid && k < g.y.c ? (ACC)hpdl__gemm_acc(dyp[k * f.y.c]) : (ACC)0;
    }
}

/* Stage 1. Tile u of thread t is q = t + u * blockDim.x when the block is one
   group, else q = t % tiles of group t / tiles, the groups taking every
   groups-th staged pixel (summed in shared memory at the end); tile q
   covers filters 4 * (q / quads) .. + 3 and taps 4 * (q % quads) .. + 3.
   Writes part[blockIdx.x][k * (taps + 1) + j] (j == taps: the bias). */
template <typename T, typename ACC>
__global__ void __launch_bounds__(HPDL__FC_THREADS)
    hpdl__fc_filter_sums(hpdl__fc_args f, int P, int groups, size_t acc_bytes, const T *x, const T *dy, ACC *part) {
    const hpdl__conv_geom &g = f.g;
    const int K = g.y.c, S = g.p.kernel_w, RS = g.p.kernel_h * S, taps = g.x.c * RS, taps4 = (taps + 4) / 4 * 4;
    const int quads = taps4 / 4, tiles = quads * f.chunks, pixels = g.y.n * g.y.h * g.y.w;
    const int group = groups > 1 ? threadIdx.x / tiles : 0, first = groups > 1 ? threadIdx.x % tiles : threadIdx.x;
    const int step = groups > 1 ? tiles : blockDim.x;
    extern __shared__ uint4 hpdl__fc_smem[];
    const hpdl__fc_stage<ACC> st = hpdl__fc_stage_make<ACC>((char *)hpdl__fc_smem, taps, P, taps4, acc_bytes);
    ACC acc[HPDL__FC_ROUNDS][16];
    for (int j = threadIdx.x; j < taps; j += blockDim.x) {
        st.tap_c[j] = j / RS * f.x.c;
        st.tap_h[j] = j % RS / S * g.p.dilation_h;
        st.tap_w[j] = j % S * g.p.dilation_w;
    }
    for (int u = 0; u < HPDL__FC_ROUNDS; u++)
        for (int e = 0; e < 16; e++) acc[u][e] = 0;
    __syncthreads();
    for (int p0 = blockIdx.x * P; p0 < pixels; p0 += gridDim.x * P) {
        hpdl__fc_stage_pixels<T, ACC>(f, st, P, taps4, p0, x, dy);
        __syncthreads();
#pragma unroll
        for (int u = 0; u < HPDL__FC_ROUNDS; u++) {
            const int q = first + u * step;
            if (group >= groups || q >= tiles) continue;
            const ACC *xp = st.xs + q % quads * 4, *dp = st.dys + q / quads * 4;
            for (int i = group; i < P; i += groups) {
                ACC xv[4], dv[4];
                hpdl__fc_load4(xp + i * taps4, xv);
                hpdl__fc_load4(dp + i * f.wide, dv);
#pragma unroll
                for (int e = 0; e < 16; e++) acc[u][e] += dv[e / 4] * xv[e % 4];
            }
        }
        __syncthreads();
    }
    /* the groups' sums: group 0 adds the others' (they fit in the staging area: checked on the host) */
    ACC *others = st.xs;
    if (groups > 1 && group > 0 && group < groups)
        for (int e = 0; e < 16; e++) others[((group - 1) * tiles + first) * 16 + e] = acc[0][e];
    __syncthreads();
    if (group != 0) return;
    for (int u = 0; u < HPDL__FC_ROUNDS; u++) {
        const int q = first + u * step;
        if (q >= tiles) break;
        for (int e = 0; e < 16; e++) {
            const int k = q / quads * 4 + e / 4, j = q % quads * 4 + e % 4;
            ACC sum = acc[u][e];
            for (int o = 1; o < groups; o++) sum += others[((o - 1) * tiles + first) * 16 + e];
            if (k < K && j <= taps) part[(size_t)blockIdx.x * K * (taps + 1) + k * (taps + 1) + j] = sum;
        }
    }
}

/* Stage 2: dw (and db, when not NULL) from the sum of the rows of part,
   32 weights a block, its 8 warps each adding every 8th row. */
template <typename T, typename ACC>
__global__ void __launch_bounds__(256) hpdl__fc_filter_total(hpdl__fc_args f, int rows, const ACC *part, T *dw, T *db) {
    __shared__ ACC sums[8][33];
    const int R = f.g.p.kernel_h, S = f.g.p.kernel_w, taps = f.g.x.c * R * S, weights = f.g.y.c * (taps + 1);
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, e = blockIdx.x * 32 + lane;
    ACC sum = 0;
    if (e < weights)
        for (int row = warp; row < rows; row += 8) sum += part[(size_t)row * weights + e];
    sums[warp][lane] = sum;
    __syncthreads();
    if (warp != 0 || e >= weights) return;
    for (int w = 1; w < 8; w++) sum += sums[w][lane];
    const int k = e / (taps + 1), j = e % (taps + 1);
    if (j < taps) hpdl__gemm_put(dw + hpdl_tensor4_offset(&f.g.w, k, j / (R * S), j / S % R, j % S), sum);
    else if (db) hpdl__gemm_put(db + k, sum);
}

/* The most channels a forward or backward-data thread keeps (16 down to 1,
   no more than `wide` rounded up to a power of two) while the grid still
   has a block of 256 threads for every SM. */
static inline int hpdl__fc_per_thread(int64_t pixels, int wide, int sms) {
    int per = 16;
    while (per > 1 && per / 2 >= wide) per /= 2;
    while (per > 1 && pixels * ((wide + per - 1) / per) < (int64_t)sms * 256) per /= 2;
    return per;
}

template <typename T, typename ACC, int FORWARD>
static inline hpdl_status hpdl__fc_launch_direct(hpdl__fc_args f, const T *in, const T *w, T *out, int sms,
                                                 cudaStream_t stream) {
    const hpdl_tensor4 &od = FORWARD ? f.g.y : f.g.x;
    const int wide = od.c, taps = (FORWARD ? f.g.x.c : f.g.y.c) * f.g.p.kernel_h * f.g.p.kernel_w;
    const int64_t pixels = (int64_t)od.n * od.h * od.w;
    const int per = hpdl__fc_per_thread(pixels, wide, sms);
    f.chunks = (wide + per - 1) / per;
    f.wide = f.chunks * per;
    const size_t filter_bytes = (size_t)taps * f.wide * sizeof(ACC);
    if (wide > HPDL__FC_MAX || filter_bytes > HPDL__FC_SMEM || pixels * f.chunks > INT_MAX) return HPDL_ERR_UNSUPPORTED;
    void (*kernel)(hpdl__fc_args, const T *, const T *, T *) =
        per == 16  ? hpdl__fc_direct<T, ACC, 16, FORWARD>
        : per == 8 ? hpdl__fc_direct<T, ACC, 8, FORWARD>
        : per == 4 ? hpdl__fc_direct<T, ACC, 4, FORWARD>
        : per == 2 ? hpdl__fc_direct<T, ACC, 2, FORWARD>
                   : hpdl__fc_direct<T, ACC, 1, FORWARD>;
    kernel<<<(unsigned)((pixels * f.chunks + 127) / 128), 128, filter_bytes, stream>>>(f, in, w, out);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* Backward-filter, db optional (NULL). P, the pixels staged at once, grows
   from 16 while it fits and the grid keeps two blocks an SM; the grid is
   at most that, so the workspace holds at most 2 * SMs rows of sums. */
template <typename T, typename ACC>
static inline hpdl_status hpdl__fc_launch_filter(hpdl__fc_args f, const T *x, const T *dy, T *dw, T *db, int sms,
                                                 cudaStream_t stream) {
    const int taps = f.g.x.c * f.g.p.kernel_h * f.g.p.kernel_w, taps4 = (taps + 4) / 4 * 4, K = f.g.y.c;
    const int64_t pixels = (int64_t)f.g.y.n * f.g.y.h * f.g.y.w;
    f.chunks = (K + 3) / 4;
    f.wide = f.chunks * 4;
    const int tiles = taps4 / 4 * f.chunks, groups = tiles <= HPDL__FC_THREADS / 2 ? HPDL__FC_THREADS / tiles : 1;
    const size_t per_pixel = (size_t)(taps4 + f.wide) * sizeof(ACC), table = 3 * (size_t)taps * sizeof(int);
    const size_t reduce = (size_t)(groups - 1) * tiles * 16 * sizeof(ACC);
    int P = 16;
    while ((2 * P) * per_pixel + table <= HPDL__FC_SMEM && pixels / (2 * P) >= 2 * sms) P *= 2;
    const size_t acc_bytes = P * per_pixel > reduce ? P * per_pixel : reduce;
    if (tiles > HPDL__FC_ROUNDS * HPDL__FC_THREADS || acc_bytes + table > HPDL__FC_SMEM) return HPDL_ERR_UNSUPPORTED;
    const int64_t chunks = (pixels + P - 1) / P;
    const int rows = (int)(chunks < 2 * sms ? chunks : 2 * sms), weights = K * (taps + 1);
    const int threads = groups > 1 ? (groups * tiles + 31) / 32 * 32 : HPDL__FC_THREADS;
    ACC *part;
    HPDL_CUDA_TRY(cudaMallocAsync((void **)&part, (size_t)rows * weights * sizeof(ACC), stream));
    hpdl__fc_filter_sums<T, ACC><<<rows, threads, acc_bytes + table, stream>>>(f, P, groups, acc_bytes, x, dy, part);
    hpdl__fc_filter_total<T, ACC><<<(weights + 31) / 32, 256, 0, stream>>>(f, rows, part, dw, db);
    cudaError_t e = cudaGetLastError();
    if (cudaFreeAsync(part, stream) != cudaSuccess || e != cudaSuccess) return HPDL_ERR_CUDA;
    return HPDL_OK;
}

/* The few-channel kernels when they apply (groups 1, at most HPDL__FC_MAX
   channels on the registers' side, the filter or the staged pixels within
   HPDL__FC_SMEM, an image's elements and the threads' count within int);
   HPDL_ERR_UNSUPPORTED otherwise. db: backward-filter's bias gradient too
   (NULL: none). */
template <typename T, typename ACC>
static inline hpdl_status hpdl__conv_launch_few_channels(const hpdl__conv_geom &g, hpdl__conv_pass pass, const T *a,
                                                         const T *b, T *out, T *db, cudaStream_t stream) {
    hpdl__fc_args f;
    int sms = 0;
    const int64_t x_image = (int64_t)g.x.c * g.x.h * g.x.w, y_image = (int64_t)g.y.c * g.y.h * g.y.w;
    const int64_t pixels = (int64_t)g.x.n * (g.x.h > g.y.h ? g.x.h : g.y.h) * (g.x.w > g.y.w ? g.x.w : g.y.w);
    if (g.p.groups != 1 || x_image > INT_MAX || y_image > INT_MAX || pixels > INT_MAX) return HPDL_ERR_UNSUPPORTED;
    if (hpdl__sm_count(&sms) != HPDL_OK) return HPDL_ERR_CUDA;
    f.g = g;
    f.x = hpdl__fc_strides_of(g.x);
    f.y = hpdl__fc_strides_of(g.y);
    if (pass == HPDL__CONV_FORWARD) return hpdl__fc_launch_direct<T, ACC, 1>(f, a, b, out, sms, stream);
    if (pass == HPDL__CONV_INPUT_GRAD) return hpdl__fc_launch_direct<T, ACC, 0>(f, b, a, out, sms, stream);
    return hpdl__fc_launch_filter<T, ACC>(f, a, b, out, db, sms, stream);
}

/* AUTO's choice for the few-channel kernels: the implicit GEMM's 64 x 64 tile
   is mostly padding when the GEMM has few columns (forward: output
   channels, backward-data: input channels) or few rows (backward-filter:
   filters), as in the first layers of small CNNs (3 -> 6 -> 16 channels).
   For 16-bit types only where the tensor-core rungs would pad channels to
   multiples of 8 as well. */
HPDL_CUDA_API int hpdl__conv_few_channels(const hpdl__conv_geom &g, hpdl__conv_pass pass, int half) {
    int64_t m, n, k;
    hpdl__conv_gemm_shape(g, pass, &m, &n, &k);
    if (half && g.x.c % 8 == 0 && g.y.c % 8 == 0) return 0;
    return pass == HPDL__CONV_FILTER_GRAD ? m < 32 : n < 32;
}

template <typename T>
static inline hpdl_status hpdl__cuda_conv2d(hpdl_conv_algo algo, hpdl__conv_pass pass, const hpdl_conv2d_params *p,
                                            const hpdl_tensor4 *xd, const hpdl_tensor4 *yd, const T *a, const T *b,
                                            T *out, cudaStream_t stream);

/* 16-bit backward-filter where the tensor-core rungs do not apply (channels
   not a multiple of 8, 32 filters or more: the stems): the f32 kernels
   (the split-K implicit GEMM: its partial sums arrive by f32 atomics) on
   f32 copies of x and dy, dw rounded back. The copies cost
   two element-wise passes; without them AUTO fell to the direct rung, one
   thread per weight over every pixel (ResNet-18's stem: most of a step). */
template <typename D>
static inline hpdl_status hpdl__conv_wgrad_in_f32(const hpdl__conv_geom &g, const D *x, const D *dy, D *dw,
                                                  cudaStream_t stream) {
    const size_t nx = hpdl_tensor4_count(&g.x), ny = hpdl_tensor4_count(&g.y), nw = hpdl_tensor4_count(&g.w);
    float *x32, *dy32, *dw32;
    hpdl_status s;
    HPDL_CUDA_TRY(cudaMallocAsync((void **)&x32, (nx + ny + nw) * sizeof(float), stream));
    dy32 = x32 + nx;
    dw32 = dy32 + ny;
    if ((s = hpdl__conv_cast(nx, x, x32, stream)) == HPDL_OK && (s = hpdl__conv_cast(ny, dy, dy32, stream)) == HPDL_OK &&
        (s = hpdl__cuda_conv2d<float>(HPDL_CONV_AUTO, HPDL__CONV_FILTER_GRAD, &g.p, &g.x, &g.y, x32, dy32, dw32,
                                      stream)) == HPDL_OK)
        s = hpdl__conv_cast(nw, (const float *)dw32, dw, stream);
    if (cudaFreeAsync(x32, stream) != cudaSuccess && s == HPDL_OK) s = HPDL_ERR_CUDA;
    return s;
}

template <typename T>
static inline hpdl_status hpdl__cuda_conv2d(hpdl_conv_algo algo, hpdl__conv_pass pass, const hpdl_conv2d_params *p,
                                            const hpdl_tensor4 *xd, const hpdl_tensor4 *yd, const T *a, const T *b,
                                            T *out, cudaStream_t stream) {
    typedef typename hpdl__dev<T>::type D;
    typedef typename hpdl__acc<T>::type ACC;
    hpdl__conv_geom g = hpdl__conv_geom();
    if (algo < HPDL_CONV_AUTO || algo > HPDL_CONV_IM2COL) return HPDL_ERR_INVALID;
    if (hpdl__conv_geom_make(p, xd, yd, a, b, out, &g) != HPDL_OK) return HPDL_ERR_INVALID;
    if (algo == HPDL_CONV_CUDNN) return hpdl__conv_cudnn<D>(g, pass, a, b, out, stream);
    if (algo == HPDL_CONV_AUTO && hpdl__conv_few_channels(g, pass, sizeof(D) == 2)) {
        hpdl_status s = hpdl__conv_launch_few_channels<D, ACC>(g, pass, (const D *)a, (const D *)b, (D *)out,
                                                               (D *)NULL, stream);
        if (s != HPDL_ERR_UNSUPPORTED) return s;
    }
    if (algo == HPDL_CONV_AUTO || algo == HPDL_CONV_FEW_MMA) {
        hpdl_status s =
            hpdl__conv_16bit<hpdl__conv_fm_rung, D>::run(g, pass, (const D *)a, (const D *)b, (D *)out, stream);
        if (s != HPDL_ERR_UNSUPPORTED || algo == HPDL_CONV_FEW_MMA) return s;
    }
    if (algo == HPDL_CONV_AUTO || algo == HPDL_CONV_WINOGRAD) {
        hpdl_status s = hpdl__conv_winograd<D>::run(g, pass, (const D *)a, (const D *)b, (D *)out, stream);
        if (s != HPDL_ERR_UNSUPPORTED || algo == HPDL_CONV_WINOGRAD) return s;
    }
    if (algo == HPDL_CONV_AUTO || algo == HPDL_CONV_WGMMA) {
        hpdl_status s =
            hpdl__conv_16bit<hpdl__conv_wg_rung, D>::run(g, pass, (const D *)a, (const D *)b, (D *)out, stream);
        if (s != HPDL_ERR_UNSUPPORTED || algo == HPDL_CONV_WGMMA) return s;
    }
    if (algo == HPDL_CONV_AUTO || algo == HPDL_CONV_MMA) {
        hpdl_status s = hpdl__conv_launch_mma<D>(g, pass, (const D *)a, (const D *)b, (D *)out, stream);
        if (s != HPDL_ERR_UNSUPPORTED || algo == HPDL_CONV_MMA) return s;
    }
    if (algo == HPDL_CONV_AUTO || algo == HPDL_CONV_IM2COL) {
        hpdl_status s = hpdl__conv_im2col<D>(g, pass, (const D *)a, (const D *)b, (D *)out, stream);
        if (s != HPDL_ERR_UNSUPPORTED || algo == HPDL_CONV_IM2COL) return s;
    }
    if (algo == HPDL_CONV_AUTO && pass == HPDL__CONV_FILTER_GRAD && sizeof(D) == 2)
        return hpdl__conv_wgrad_in_f32<D>(g, (const D *)a, (const D *)b, (D *)out, stream);
    if (algo == HPDL_CONV_AUTO && hpdl__conv_few_channels(g, pass, 0)) /* the few-channel kernels refused */
        return hpdl__conv_launch_direct<D, ACC>(g, pass, (const D *)a, (const D *)b, (D *)out, stream);
    if (algo != HPDL_CONV_DIRECT) {
        hpdl_status s = hpdl__conv_launch_implicit_gemm<D, ACC>(g, pass, (const D *)a, (const D *)b, (D *)out, stream);
        if (s != HPDL_ERR_UNSUPPORTED || algo == HPDL_CONV_IMPLICIT_GEMM) return s;
    }
    return hpdl__conv_launch_direct<D, ACC>(g, pass, (const D *)a, (const D *)b, (D *)out, stream);
}

/* The type-generic front ends (C++): the tensors' element type picks the
   kernels (float, double, hpdl_f16 or __half, hpdl_bf16 or __nv_bfloat16).
   hpdl_cuda_conv2d_<pass>_algo runs one rung, hpdl_cuda_conv2d_<pass> the
   best (AUTO). Same arguments as the CPU twins, device pointers, plus the
   stream. */
template <typename T>
static inline hpdl_status hpdl_cuda_conv2d_forward_algo(hpdl_conv_algo algo, const hpdl_conv2d_params *p,
                                                        const hpdl_tensor4 *xd, const T *x, const T *w,
                                                        const hpdl_tensor4 *yd, T *y, cudaStream_t stream = 0) {
    return hpdl__cuda_conv2d<T>(algo, HPDL__CONV_FORWARD, p, xd, yd, x, w, y, stream);
}

/* dx from dy and w by one rung, as hpdl_conv2d_backward_data_<t> computes it; HPDL_ERR_UNSUPPORTED
   where that rung does not apply, HPDL_ERR_INVALID for an unknown algo or invalid arguments. */
template <typename T>
static inline hpdl_status hpdl_cuda_conv2d_backward_data_algo(hpdl_conv_algo algo, const hpdl_conv2d_params *p,
                                                              const hpdl_tensor4 *yd, const T *dy, const T *w,
                                                              const hpdl_tensor4 *xd, T *dx, cudaStream_t stream = 0) {
    return hpdl__cuda_conv2d<T>(algo, HPDL__CONV_INPUT_GRAD, p, xd, yd, w, dy, dx, stream);
}

/* dw from x and dy by one rung, as hpdl_conv2d_backward_filter_<t> computes it; HPDL_ERR_UNSUPPORTED
   where that rung does not apply, HPDL_ERR_INVALID for an unknown algo or invalid arguments. */
template <typename T>
static inline hpdl_status hpdl_cuda_conv2d_backward_filter_algo(hpdl_conv_algo algo, const hpdl_conv2d_params *p,
                                                                const hpdl_tensor4 *xd, const T *x,
                                                                const hpdl_tensor4 *yd, const T *dy, T *dw,
                                                                cudaStream_t stream = 0) {
    return hpdl__cuda_conv2d<T>(algo, HPDL__CONV_FILTER_GRAD, p, xd, yd, x, dy, dw, stream);
}

/* hpdl_cuda_conv2d_forward_algo with HPDL_CONV_AUTO: the rung AUTO picks (see above). */
template <typename T>
static inline hpdl_status hpdl_cuda_conv2d_forward(const hpdl_conv2d_params *p, const hpdl_tensor4 *xd, const T *x,
                                                   const T *w, const hpdl_tensor4 *yd, T *y, cudaStream_t stream = 0) {
    return hpdl_cuda_conv2d_forward_algo(HPDL_CONV_AUTO, p, xd, x, w, yd, y, stream);
}

/* hpdl_cuda_conv2d_backward_data_algo with HPDL_CONV_AUTO: the rung AUTO picks (see above). */
template <typename T>
static inline hpdl_status hpdl_cuda_conv2d_backward_data(const hpdl_conv2d_params *p, const hpdl_tensor4 *yd,
                                                         const T *dy, const T *w, const hpdl_tensor4 *xd, T *dx,
                                                         cudaStream_t stream = 0) {
    return hpdl_cuda_conv2d_backward_data_algo(HPDL_CONV_AUTO, p, yd, dy, w, xd, dx, stream);
}

/* hpdl_cuda_conv2d_backward_filter_algo with HPDL_CONV_AUTO: the rung AUTO picks (see above). */
template <typename T>
static inline hpdl_status hpdl_cuda_conv2d_backward_filter(const hpdl_conv2d_params *p, const hpdl_tensor4 *xd,
                                                           const T *x, const hpdl_tensor4 *yd, const T *dy, T *dw,
                                                           cudaStream_t stream = 0) {
    return hpdl_cuda_conv2d_backward_filter_algo(HPDL_CONV_AUTO, p, xd, x, yd, dy, dw, stream);
}

/* The typed launchers, for C-style callers, each a call of the above. */
#define HPDL_DEFINE_CUDA_CONV(SUFFIX, T)                                                                          \
    HPDL_CUDA_API hpdl_status hpdl_cuda_conv2d_forward_algo_##SUFFIX(                                             \
        hpdl_conv_algo algo, const hpdl_conv2d_params *p, const hpdl_tensor4 *xd, const T *x, const T *w,         \
        const hpdl_tensor4 *yd, T *y, cudaStream_t stream) {                                                      \
        return hpdl_cuda_conv2d_forward_algo(algo, p, xd, x, w, yd, y, stream);                                   \
    }                                                                                                             \
    HPDL_CUDA_API hpdl_status hpdl_cuda_conv2d_backward_data_algo_##SUFFIX(                                       \
        hpdl_conv_algo algo, const hpdl_conv2d_params *p, const hpdl_tensor4 *yd, const T *dy, const T *w,        \
        const hpdl_tensor4 *xd, T *dx, cudaStream_t stream) {                                                     \
        return hpdl_cuda_conv2d_backward_data_algo(algo, p, yd, dy, w, xd, dx, stream);                           \
    }                                                                                                             \
    HPDL_CUDA_API hpdl_status hpdl_cuda_conv2d_backward_filter_algo_##SUFFIX(                                     \
        hpdl_conv_algo algo, const hpdl_conv2d_params *p, const hpdl_tensor4 *xd, const T *x,                     \
        const hpdl_tensor4 *yd, const T *dy, T *dw, cudaStream_t stream) {                                        \
        return hpdl_cuda_conv2d_backward_filter_algo(algo, p, xd, x, yd, dy, dw, stream);                         \
    }                                                                                                             \
    HPDL_CUDA_API hpdl_status hpdl_cuda_conv2d_forward_##SUFFIX(const hpdl_conv2d_params *p, const hpdl_tensor4 *xd, \
                                                                const T *x, const T *w, const hpdl_tensor4 *yd,   \
                                                                T *y, cudaStream_t stream) {                      \
        return hpdl_cuda_conv2d_forward(p, xd, x, w, yd, y, stream);                                              \
    }                                                                                                             \
    HPDL_CUDA_API hpdl_status hpdl_cuda_conv2d_backward_data_##SUFFIX(const hpdl_conv2d_params *p,                \
                                                                      const hpdl_tensor4 *yd, const T *dy,        \
                                                                      const T *w, const hpdl_tensor4 *xd, T *dx,  \
                                                                      cudaStream_t stream) {                      \
        return hpdl_cuda_conv2d_backward_data(p, yd, dy, w, xd, dx, stream);                                      \
    }                                                                                                             \
    HPDL_CUDA_API hpdl_status hpdl_cuda_conv2d_backward_filter_##SUFFIX(const hpdl_conv2d_params *p,              \
                                                                        const hpdl_tensor4 *xd, const T *x,       \
                                                                        const hpdl_tensor4 *yd, const T *dy,      \
                                                                        T *dw, cudaStream_t stream) {             \
        return hpdl_cuda_conv2d_backward_filter(p, xd, x, yd, dy, dw, stream);                                    \
    }

/* hpdl_cuda_conv2d_forward_algo_f32 hpdl_cuda_conv2d_backward_data_algo_f32
   hpdl_cuda_conv2d_backward_filter_algo_f32 hpdl_cuda_conv2d_forward_f32
   hpdl_cuda_conv2d_backward_data_f32 hpdl_cuda_conv2d_backward_filter_f32 */
HPDL_DEFINE_CUDA_CONV(f32, float)
/* hpdl_cuda_conv2d_forward_algo_f64 hpdl_cuda_conv2d_backward_data_algo_f64
   hpdl_cuda_conv2d_backward_filter_algo_f64 hpdl_cuda_conv2d_forward_f64
   hpdl_cuda_conv2d_backward_data_f64 hpdl_cuda_conv2d_backward_filter_f64 */
HPDL_DEFINE_CUDA_CONV(f64, double)
/* hpdl_cuda_conv2d_forward_algo_f16 hpdl_cuda_conv2d_backward_data_algo_f16
   hpdl_cuda_conv2d_backward_filter_algo_f16 hpdl_cuda_conv2d_forward_f16
   hpdl_cuda_conv2d_backward_data_f16 hpdl_cuda_conv2d_backward_filter_f16 */
HPDL_DEFINE_CUDA_CONV(f16, hpdl_f16)
/* hpdl_cuda_conv2d_forward_algo_bf16 hpdl_cuda_conv2d_backward_data_algo_bf16
   hpdl_cuda_conv2d_backward_filter_algo_bf16 hpdl_cuda_conv2d_forward_bf16
   hpdl_cuda_conv2d_backward_data_bf16 hpdl_cuda_conv2d_backward_filter_bf16 */
HPDL_DEFINE_CUDA_CONV(bf16, hpdl_bf16)

/* ---- bias, pooling, batch normalization ------------------------------------------ */
/* The CPU twins' formulas on the device (hpdl_conv2d_bias_add_<t>, ...,
   hpdl_batchnorm_backward_<t>), same arguments plus the stream; parameters
   and statistics of batch normalization are device arrays of float (double
   for f64). Elementwise passes take one thread per output element; sums over
   a channel (bias gradient, batch statistics) take one block per channel,
   its threads striding over the channel's N*H*W values. One difference: the
   inference pass cannot check running_var on the host, so a running_var +
   eps <= 0 gives NaN where the CPU twin returns HPDL_ERR_INVALID. */

#define HPDL__CHANNEL_THREADS 256 /* a power of two: hpdl__block_sum halves it */

/* Offset of the j-th value of channel c, j = (n*H + h)*W + w. */
static __device__ __forceinline__ size_t hpdl__channel_offset(const hpdl_tensor4 &d, int c, size_t j) {
    if (d.layout == HPDL_NHWC) return j * d.c + c; /* no divisions: j is the pixel */
    int w = (int)(j % d.w), h = (int)(j / d.w % d.h), n = (int)(j / ((size_t)d.w * d.h));
    return hpdl_tensor4_offset(&d, n, c, h, w);
}

/* Sum of v over the block's threads (blockDim.x a power of two), returned to
   every thread. */
template <typename ACC> static __device__ ACC hpdl__block_sum(ACC v) {
    __shared__ ACC part[HPDL__CHANNEL_THREADS];
    part[threadIdx.x] = v;
    __syncthreads();
    for (unsigned half = blockDim.x / 2; half > 0; half >>= 1) {
        if (threadIdx.x < half) part[threadIdx.x] += part[threadIdx.x + half];
        __syncthreads();
    }
    ACC total = part[0];
    __syncthreads(); /* part is free for the next call */
    return total;
}

/* Sum of channel c of x over n, h, w, by the whole block (every thread gets it). */
template <typename ACC, typename T>
static __device__ ACC hpdl__channel_sum_dev(const hpdl_tensor4 &d, const T *x, int c) {
    size_t count = (size_t)d.n * d.h * d.w;
    ACC acc = 0;
    for (size_t j = threadIdx.x; j < count; j += blockDim.x) acc += (ACC)hpdl__gemm_acc(x[hpdl__channel_offset(d, c, j)]);
    return hpdl__block_sum(acc);
}

template <typename T, typename ACC>
__global__ void hpdl__bias_add_kernel(hpdl_tensor4 yd, T *y, const T *bias, size_t total) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x) {
        int n, c, h, w;
        hpdl__tensor4_coords(yd, i, &n, &c, &h, &w);
        hpdl__gemm_put(y + i, (ACC)hpdl__gemm_acc(y[i]) + (ACC)hpdl__gemm_acc(bias[c]));
    }
}

template <typename T, typename ACC>
__global__ void hpdl__bias_grad_kernel(hpdl_tensor4 yd, const T *dy, T *dbias) {
    ACC sum = hpdl__channel_sum_dev<ACC>(yd, dy, blockIdx.x);
    if (threadIdx.x == 0) hpdl__gemm_put(dbias + blockIdx.x, sum);
}

/* The same with gridDim.y blocks per channel, each summing every
   gridDim.y-th stretch of 256 values and adding into dbias (zeroed): a few
   channels over a large batch no longer leave the GPU idle. */
template <typename T, typename ACC>
__global__ void hpdl__bias_grad_split_kernel(hpdl_tensor4 yd, const T *dy, T *dbias) {
    size_t count = (size_t)yd.n * yd.h * yd.w;
    ACC acc = 0;
    for (size_t j = blockIdx.y * (size_t)blockDim.x + threadIdx.x; j < count; j += (size_t)gridDim.y * blockDim.x)
        acc += (ACC)hpdl__gemm_acc(dy[hpdl__channel_offset(yd, blockIdx.x, j)]);
    acc = hpdl__block_sum(acc);
    if (threadIdx.x == 0) hpdl__conv_atomic_add(dbias + blockIdx.x, acc);
}

/* The window's largest element (the first on ties), as the CPU twin picks it. */
template <typename T, typename ACC>
static __device__ void hpdl__maxpool_argmax_dev(const hpdl_pool2d_params &p, const hpdl_tensor4 &xd, const T *x, int n,
                                                int c, int oh, int ow, int *best_h, int *best_w) {
    int h0, h1, w0, w1;
    ACC best = 0;
    hpdl__pool_window(&p, &xd, oh, ow, &h0, &h1, &w0, &w1);
    *best_h = h0;
    *best_w = w0;
    for (int h = h0; h < h1; h++)
        for (int w = w0; w < w1; w++) {
            ACC v = (ACC)hpdl__gemm_acc(x[hpdl_tensor4_offset(&xd, n, c, h, w)]);
            if ((h == h0 && w == w0) || v > best) { best = v; *best_h = h; *best_w = w; }
        }
}

template <typename T, typename ACC>
__global__ void hpdl__pool_forward_kernel(int is_max, hpdl_pool2d_params p, hpdl_tensor4 xd, const T *x, hpdl_tensor4 yd,
                                          T *y, size_t total) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x) {
        int n, c, oh, ow, h0, h1, w0, w1;
        hpdl__tensor4_coords(yd, i, &n, &c, &oh, &ow);
        if (is_max) {
            hpdl__maxpool_argmax_dev<T, ACC>(p, xd, x, n, c, oh, ow, &h0, &w0);
            y[i] = x[hpdl_tensor4_offset(&xd, n, c, h0, w0)];
            continue;
        }
        ACC acc = 0;
        hpdl__pool_window(&p, &xd, oh, ow, &h0, &h1, &w0, &w1);
        for (int h = h0; h < h1; h++)
            for (int w = w0; w < w1; w++) acc += (ACC)hpdl__gemm_acc(x[hpdl_tensor4_offset(&xd, n, c, h, w)]);
        hpdl__gemm_put(y + i, acc / ((ACC)(h1 - h0) * (ACC)(w1 - w0)));
    }
}

/* dx gathers dy from the windows that hold it (x is read by max pooling only). */
template <typename T, typename ACC>
__global__ void hpdl__pool_backward_kernel(int is_max, hpdl_pool2d_params p, hpdl_tensor4 xd, const T *x,
                                           hpdl_tensor4 yd, const T *dy, T *dx, size_t total) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x) {
        int n, c, ih, iw, oh, ow, h0, h1, w0, w1;
        hpdl__tensor4_coords(xd, i, &n, &c, &ih, &iw);
        ACC acc = 0;
        for (int r = 0; r < p.kernel_h; r++) {
            if (!hpdl__tap_output(ih, p.stride_h, p.pad_h, r, 1, yd.h, &oh)) continue;
            for (int s = 0; s < p.kernel_w; s++) {
                if (!hpdl__tap_output(iw, p.stride_w, p.pad_w, s, 1, yd.w, &ow)) continue;
                ACC g = (ACC)hpdl__gemm_acc(dy[hpdl_tensor4_offset(&yd, n, c, oh, ow)]);
                if (is_max) {
                    hpdl__maxpool_argmax_dev<T, ACC>(p, xd, x, n, c, oh, ow, &h0, &w0);
                    if (h0 == ih && w0 == iw) acc += g;
                } else {
                    hpdl__pool_window(&p, &xd, oh, ow, &h0, &h1, &w0, &w1);
                    acc += g / ((ACC)(h1 - h0) * (ACC)(w1 - w0));
                }
            }
        }
        hpdl__gemm_put(dx + i, acc);
    }
}

/* Global average pooling: one thread per (n, c) sums its H*W values. */
template <typename T, typename ACC>
__global__ void hpdl__global_avgpool_forward_kernel(hpdl_tensor4 xd, const T *x, T *y, size_t total) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x) {
        int n = (int)(i / xd.c), c = (int)(i % xd.c);
        ACC acc = 0;
        for (int h = 0; h < xd.h; h++)
            for (int w = 0; w < xd.w; w++) acc += (ACC)hpdl__gemm_acc(x[hpdl_tensor4_offset(&xd, n, c, h, w)]);
        hpdl__gemm_put(y + i, acc / (ACC)((double)xd.h * xd.w));
    }
}

template <typename T, typename ACC>
__global__ void hpdl__global_avgpool_backward_kernel(hpdl_tensor4 xd, const T *dy, T *dx, size_t total) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x) {
        int n, c, h, w;
        hpdl__tensor4_coords(xd, i, &n, &c, &h, &w);
        hpdl__gemm_put(dx + i, (ACC)hpdl__gemm_acc(dy[(size_t)n * xd.c + c]) / (ACC)((double)xd.h * xd.w));
    }
}

/* Training: block c computes channel c's mean and biased variance (two
   passes), writes y, and thread 0 updates the running statistics. */
template <typename T, typename ACC>
__global__ void hpdl__batchnorm_training_kernel(hpdl_tensor4 xd, const T *x, const ACC *gamma, const ACC *beta,
                                                double momentum, double eps, ACC *running_mean, ACC *running_var,
                                                T *y, ACC *save_mean, ACC *save_invstd) {
    const int c = blockIdx.x;
    const size_t count = (size_t)xd.n * xd.h * xd.w;
    ACC mean = hpdl__channel_sum_dev<ACC>(xd, x, c) / (ACC)count, sq = 0;
    for (size_t j = threadIdx.x; j < count; j += blockDim.x) {
        ACC v = (ACC)hpdl__gemm_acc(x[hpdl__channel_offset(xd, c, j)]) - mean;
        sq += v * v;
    }
    ACC var = hpdl__block_sum(sq) / (ACC)count;
    ACC invstd = (ACC)(1.0 / sqrt((double)var + eps)), scale = gamma[c] * invstd, shift = beta[c] - scale * mean;
    for (size_t j = threadIdx.x; j < count; j += blockDim.x) {
        size_t at = hpdl__channel_offset(xd, c, j);
        hpdl__gemm_put(y + at, scale * (ACC)hpdl__gemm_acc(x[at]) + shift);
    }
    if (threadIdx.x == 0) {
        running_mean[c] = (ACC)((1.0 - momentum) * running_mean[c] + momentum * mean);
        running_var[c] = (ACC)((1.0 - momentum) * running_var[c] + momentum * var * count / (count - 1.0));
        if (save_mean) save_mean[c] = mean;
        if (save_invstd) save_invstd[c] = invstd;
    }
}

template <typename T, typename ACC>
__global__ void hpdl__batchnorm_inference_kernel(hpdl_tensor4 xd, const T *x, const ACC *gamma, const ACC *beta,
                                                 const ACC *running_mean, const ACC *running_var, double eps, T *y,
                                                 size_t total) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x) {
        int n, c, h, w;
        hpdl__tensor4_coords(xd, i, &n, &c, &h, &w);
        ACC scale = (ACC)(gamma[c] / sqrt((double)running_var[c] + eps));
        hpdl__gemm_put(y + i, scale * ((ACC)hpdl__gemm_acc(x[i]) - running_mean[c]) + beta[c]);
    }
}

/* Backward: block c sums dy and dy*xhat over channel c, then writes dx. */
template <typename T, typename ACC>
__global__ void hpdl__batchnorm_backward_kernel(hpdl_tensor4 xd, const T *x, const T *dy, const ACC *gamma,
                                                const ACC *save_mean, const ACC *save_invstd, T *dx, ACC *dgamma,
                                                ACC *dbeta) {
    const int c = blockIdx.x;
    const size_t count = (size_t)xd.n * xd.h * xd.w;
    const ACC mean = save_mean[c], invstd = save_invstd[c];
    ACC dot = 0;
    for (size_t j = threadIdx.x; j < count; j += blockDim.x) {
        size_t at = hpdl__channel_offset(xd, c, j);
        dot += (ACC)hpdl__gemm_acc(dy[at]) * ((ACC)hpdl__gemm_acc(x[at]) - mean) * invstd;
    }
    ACC sum_dy_xhat = hpdl__block_sum(dot), sum_dy = hpdl__channel_sum_dev<ACC>(xd, dy, c), m = (ACC)count;
    for (size_t j = threadIdx.x; j < count; j += blockDim.x) {
        size_t at = hpdl__channel_offset(xd, c, j);
        ACC xhat = ((ACC)hpdl__gemm_acc(x[at]) - mean) * invstd;
        hpdl__gemm_put(dx + at, gamma[c] * invstd / m * (m * (ACC)hpdl__gemm_acc(dy[at]) - sum_dy - xhat * sum_dy_xhat));
    }
    if (threadIdx.x == 0) {
        dgamma[c] = sum_dy_xhat;
        dbeta[c] = sum_dy;
    }
}

/* Blocks for a grid-stride kernel over `total` elements, 256 threads each. */
HPDL_CUDA_API unsigned hpdl__elementwise_blocks(size_t total) {
    size_t blocks = (total + 255) / 256;
    return (unsigned)(blocks < (1u << 20) ? blocks : (1u << 20)); /* the loops stride over the rest */
}

/* Element-wise passes out[i] = op(c, a[i], b[i]), c = i mod channels (the
   channel of NHWC element i; 0 for operations without channels), that
   move 16 bytes a thread (8 f16/bf16, 4 f32 or 2 f64 values) where the
   arrays are 16-byte aligned: with one 2-byte value a thread, a warp moves
   64 bytes an instruction, and ResNet-18's 16-bit ReLU, residual sums and
   batch-norm passes ran at about a third of the memory's speed (H200,
   2026-11-26). A thread's channel moves by a fixed step from one pack to
   its next, so no pack pays a 64-bit division (one per value made the
   batch-norm passes twice as slow as a ReLU). b may be NULL (op then sees
   a[i] twice). The tail, unaligned arrays and channel counts that are not
   multiples of the pack go one value a thread. */
template <typename T> struct __align__(16) hpdl__pack { T v[16 / sizeof(T)]; };

template <typename T, typename OP, bool VEC>
__global__ void hpdl__elementwise_kernel(int64_t n, int channels, const T *a, const T *b, T *out, OP op) {
    enum { N = VEC ? 16 / sizeof(T) : 1 };
    const int64_t stride = (int64_t)gridDim.x * blockDim.x, first = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    const int64_t vectors = VEC ? n / N : 0;
    if (VEC) {
        const int step = (int)(stride * N % channels), lanes = channels > 1 ? N : 1; /* lanes 1: c stays 0 */
        int c = (int)(first * N % channels);
        for (int64_t p = first; p < vectors; p += stride) {
            const hpdl__pack<T> x = ((const hpdl__pack<T> *)a)[p], y = b ? ((const hpdl__pack<T> *)b)[p] : x;
            hpdl__pack<T> r;
#pragma unroll
            for (int j = 0; j < N; j++) r.v[j] = op(c + j % lanes, x.v[j], y.v[j]);
            ((hpdl__pack<T> *)out)[p] = r;
            c += step;
            if (c >= channels) c -= channels;
        }
    }
    for (int64_t i = vectors * N + first; i < n; i += stride) out[i] = op((int)(i % channels), a[i], b ? b[i] : a[i]);
}

template <typename T, typename OP>
static inline hpdl_status hpdl__elementwise(int64_t n, int channels, const T *a, const T *b, T *out, OP op,
                                            cudaStream_t stream) {
    const int64_t per_pack = 16 / sizeof(T);
    const bool vec = ((uintptr_t)a | (uintptr_t)b | (uintptr_t)out) % 16 == 0 && (channels == 1 || channels % per_pack == 0);
    const int64_t per_thread = vec ? per_pack : 1;
    const unsigned blocks = hpdl__elementwise_blocks((size_t)((n + per_thread - 1) / per_thread));
    if (n < 1) return HPDL_OK;
    if (vec) hpdl__elementwise_kernel<T, OP, true><<<blocks, 256, 0, stream>>>(n, channels, a, b, out, op);
    else hpdl__elementwise_kernel<T, OP, false><<<blocks, 256, 0, stream>>>(n, channels, a, b, out, op);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* Batch norm in NHWC for f32/f16/bf16. A channel's values are C apart in
   memory, so the one-block-per-channel kernels above read a 32-byte sector
   per value and keep only C blocks busy (ResNet-18's first layers: 64).
   Here neighbouring threads read neighbouring channels of one pixel
   (coalesced; 16-bit types 8 channels a thread), the blocks split the
   pixels, each thread sums its channels over its pixels in double (forward: x and x^2; backward: dy and dy (x - mean)), and the
   blocks add their sums into 2C doubles with atomics; one thread per
   channel then turns the sums into the statistics and the per-channel
   coefficients of an element-wise pass: y = a (x - mean) + beta, or
   dx = a dy + b (x - mean) + k.
   (f64 keeps the two-pass kernels above: it is the checking type, and
   E[x^2] - mean^2 would cost it digits.) */
enum { HPDL__BN_LANES = 32, HPDL__BN_UNROLL = 4, HPDL__BN_COPIES = 16 };

/* Sums over pixels of N neighbouring channels a thread (N = 8 for f16/bf16
   when C % 8 == 0: one 16-byte load per tensor and pixel; else 1): `lanes`
   threads across a pixel's slab of lanes * N channels, 256 / lanes pixels
   at a time down the block. A thread takes HPDL__BN_UNROLL pixels at once
   (their loads in flight together) and sums them in float before adding
   them to its double sums (one conversion per four values). The block
   then adds its threads' sums in shared memory, all values in parallel,
   and adds them with one atomic per value into one of HPDL__BN_COPIES
   copies of the 2C sums (block y mod copies). Atomics on one address
   follow each other at ~65 ns on an H200: with every block on the same
   2C addresses they, not the loads, set the pace (1024 blocks: 72 us a
   call, 264 blocks: 17.5 us; ResNet-18, 2026-11-26). hpdl__bn_sum adds
   the copies up. */
template <typename T, typename ACC, int N>
__global__ void __launch_bounds__(256) hpdl__bn_nhwc_sums(int64_t pixels, int C, int lanes, const T *x, const T *dy,
                                                          const ACC *mean, double *sums) {
    __shared__ double part[2 * N][256];
    const int lane = (int)threadIdx.x % lanes, row = (int)threadIdx.x / lanes, rows = 256 / lanes;
    const int c0 = ((int)blockIdx.x * lanes + lane) * N;
    const int64_t stride = (int64_t)gridDim.y * rows;
    double s0[N], s1[N];
    float m[N];
#pragma unroll
    for (int j = 0; j < N; j++) s0[j] = s1[j] = 0, m[j] = dy && c0 + j < C ? (float)mean[c0 + j] : 0.0f;
    if (c0 < C && row < rows)
        for (int64_t p = (int64_t)blockIdx.y * rows + row; p < pixels; p += HPDL__BN_UNROLL * stride) {
            float a0[N], a1[N];
#pragma unroll
            for (int j = 0; j < N; j++) a0[j] = a1[j] = 0;
#pragma unroll
            for (int u = 0; u < HPDL__BN_UNROLL; u++) {
                const int64_t q = p + u * stride;
                if (q >= pixels) break;
                hpdl__pack<T> v, g;
                if (N > 1) v = *(const hpdl__pack<T> *)(x + q * C + c0);
                else v.v[0] = x[q * C + c0];
                if (dy && N > 1) g = *(const hpdl__pack<T> *)(dy + q * C + c0);
                else if (dy) g.v[0] = dy[q * C + c0];
#pragma unroll
                for (int j = 0; j < N; j++) {
                    const float xv = hpdl__gemm_acc(v.v[j]);
                    if (dy) {
                        const float gv = hpdl__gemm_acc(g.v[j]);
                        a0[j] += gv, a1[j] += gv * (xv - m[j]);
                    } else {
                        a0[j] += xv, a1[j] += xv * xv;
                    }
                }
            }
#pragma unroll
            for (int j = 0; j < N; j++) s0[j] += a0[j], s1[j] += a1[j];
        }
#pragma unroll
    for (int j = 0; j < N; j++) part[j][threadIdx.x] = s0[j], part[N + j][threadIdx.x] = s1[j];
    __syncthreads();
    for (int t = (int)threadIdx.x; t < 2 * N * lanes; t += 256) { /* value v of lane l: summed down the rows */
        const int l = t % lanes, v = t / lanes, c = ((int)blockIdx.x * lanes + l) * N + v % N;
        double sum = 0;
        for (int r = 0; r < rows; r++) sum += part[v][r * lanes + l];
        if (c < C) atomicAdd(&sums[(size_t)(blockIdx.y % HPDL__BN_COPIES) * 2 * C + (v < N ? 0 : C) + c], sum);
    }
}

/* Value v (0 .. 2C-1) of the sums: its copies added. */
static __device__ __forceinline__ double hpdl__bn_sum(const double *sums, int C, int v) {
    double total = 0;
    for (int k = 0; k < HPDL__BN_COPIES; k++) total += sums[(size_t)k * 2 * C + v];
    return total;
}

/* Forward: statistics, running averages, and the coefficients of the
   element-wise pass (coef: 3C, a = gamma invstd, mean, beta). */
template <typename ACC>
__global__ void hpdl__bn_nhwc_forward_stats(int C, double count, const double *sums, const ACC *gamma, const ACC *beta,
                                            double momentum, double eps, ACC *running_mean, ACC *running_var,
                                            ACC *save_mean, ACC *save_invstd, ACC *coef) {
    const int c = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (c >= C) return;
    const double mean = hpdl__bn_sum(sums, C, c) / count;
    const double var = fmax(hpdl__bn_sum(sums, C, C + c) / count - mean * mean, 0.0);
    const double invstd = 1.0 / sqrt(var + eps);
    coef[c] = (ACC)((double)gamma[c] * invstd);
    coef[C + c] = (ACC)mean;
    coef[2 * C + c] = beta[c];
    running_mean[c] = (ACC)((1.0 - momentum) * running_mean[c] + momentum * mean);
    running_var[c] = (ACC)((1.0 - momentum) * running_var[c] + momentum * var * count / (count - 1.0));
    if (save_mean) save_mean[c] = (ACC)mean;
    if (save_invstd) save_invstd[c] = (ACC)invstd;
}

/* Backward: dgamma = sum dy xhat, dbeta = sum dy, and the coefficients of
   the element-wise pass (coef: 4C, a = gamma invstd, b = -a invstd
   dgamma / m, mean, k = -a dbeta / m). */
template <typename ACC>
__global__ void hpdl__bn_nhwc_backward_stats(int C, double count, const double *sums, const ACC *gamma,
                                             const ACC *save_mean, const ACC *save_invstd, ACC *dgamma, ACC *dbeta,
                                             ACC *coef) {
    const int c = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (c >= C) return;
    const double invstd = save_invstd[c], sum_dy = hpdl__bn_sum(sums, C, c);
    const double sum_dy_xhat = hpdl__bn_sum(sums, C, C + c) * invstd;
    const double a = (double)gamma[c] * invstd, b = -a * invstd * sum_dy_xhat / count;
    coef[c] = (ACC)a;
    coef[C + c] = (ACC)b;
    coef[2 * C + c] = save_mean[c];
    coef[3 * C + c] = (ACC)(-a * sum_dy / count);
    dgamma[c] = (ACC)sum_dy_xhat;
    dbeta[c] = (ACC)sum_dy;
}

/* y = a (x - mean) + beta, element-wise (coef: a, mean, beta). */
template <typename T, typename ACC> struct hpdl__bn_nhwc_forward_apply {
    const ACC *coef;
    int C;
    __device__ T operator()(int c, T x, T) const {
        return T(coef[c] * ((ACC)hpdl__gemm_acc(x) - coef[C + c]) + coef[2 * C + c]);
    }
};

/* dx = a dy + b (x - mean) + k, element-wise (coef: a, b, mean, k; a = dy, b = x). */
template <typename T, typename ACC> struct hpdl__bn_nhwc_backward_apply {
    const ACC *coef;
    int C;
    __device__ T operator()(int c, T dy, T x) const {
        return T(coef[c] * (ACC)hpdl__gemm_acc(dy) + coef[C + c] * ((ACC)hpdl__gemm_acc(x) - coef[2 * C + c]) +
                 coef[3 * C + c]);
    }
};

/* The sums over pixels (x alone, or dy and x) into sums: 8 channels a
   thread where C % 8 == 0 and the tensors are 16-byte aligned; channel
   slabs across the grid, pixel slices down, two blocks per SM in all. */
template <typename T, typename ACC>
static inline hpdl_status hpdl__bn_nhwc_sums_launch(int64_t pixels, int C, const T *x, const T *dy, const ACC *mean,
                                                    double *sums, cudaStream_t stream) {
    const bool vec = sizeof(T) == 2 && C % 8 == 0 && ((uintptr_t)x | (uintptr_t)dy) % 16 == 0;
    const int per = vec ? 8 : 1, groups = (C + per - 1) / per;
    const int lanes = groups < HPDL__BN_LANES ? groups : HPDL__BN_LANES, across = (groups + lanes - 1) / lanes;
    int sms = 0;
    if (hpdl__sm_count(&sms) != HPDL_OK) return HPDL_ERR_CUDA;
    int64_t down = 2 * sms / across, most = (pixels + 256 / lanes - 1) / (256 / lanes);
    down = down < 1 ? 1 : down > most ? most : down;
    const dim3 grid((unsigned)across, (unsigned)(down < 65535 ? down : 65535));
    if (vec) hpdl__bn_nhwc_sums<T, ACC, 8><<<grid, 256, 0, stream>>>(pixels, C, lanes, x, dy, mean, sums);
    else hpdl__bn_nhwc_sums<T, ACC, 1><<<grid, 256, 0, stream>>>(pixels, C, lanes, x, dy, mean, sums);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* Scratch of the NHWC passes: HPDL__BN_COPIES x 2C sums (zeroed) and 4C coefficients, stream-ordered. */
template <typename ACC>
static inline hpdl_status hpdl__bn_nhwc_scratch(int C, double **sums, ACC **coef, cudaStream_t stream) {
    const size_t sum_bytes = HPDL__BN_COPIES * 2 * (size_t)C * sizeof(double);
    const size_t bytes = sum_bytes + 4 * (size_t)C * sizeof(ACC);
    HPDL_CUDA_TRY(cudaMallocAsync((void **)sums, bytes, stream));
    *coef = (ACC *)((char *)*sums + sum_bytes);
    HPDL_CUDA_TRY(cudaMemsetAsync(*sums, 0, sum_bytes, stream));
    return HPDL_OK;
}

template <typename T, typename ACC>
static inline hpdl_status hpdl__bn_nhwc_forward(const hpdl_tensor4 *xd, const T *x, const ACC *gamma, const ACC *beta,
                                                double momentum, double eps, ACC *running_mean, ACC *running_var, T *y,
                                                ACC *save_mean, ACC *save_invstd, cudaStream_t stream) {
    const int64_t pixels = (int64_t)xd->n * xd->h * xd->w;
    const int C = xd->c;
    double *sums;
    ACC *coef;
    hpdl_status s = hpdl__bn_nhwc_scratch(C, &sums, &coef, stream);
    if (s != HPDL_OK) return s;
    s = hpdl__bn_nhwc_sums_launch(pixels, C, x, (const T *)NULL, (const ACC *)NULL, sums, stream);
    if (s == HPDL_OK) {
        const hpdl__bn_nhwc_forward_apply<T, ACC> apply = {coef, C};
        hpdl__bn_nhwc_forward_stats<ACC><<<(C + 255) / 256, 256, 0, stream>>>(
            C, (double)pixels, sums, gamma, beta, momentum, eps, running_mean, running_var, save_mean, save_invstd, coef);
        s = hpdl__elementwise(pixels * C, C, x, (const T *)NULL, y, apply, stream);
    }
    if (cudaFreeAsync(sums, stream) != cudaSuccess && s == HPDL_OK) s = HPDL_ERR_CUDA;
    return s;
}

template <typename T, typename ACC>
static inline hpdl_status hpdl__bn_nhwc_backward(const hpdl_tensor4 *xd, const T *x, const T *dy, const ACC *gamma,
                                                 const ACC *save_mean, const ACC *save_invstd, T *dx, ACC *dgamma,
                                                 ACC *dbeta, cudaStream_t stream) {
    const int64_t pixels = (int64_t)xd->n * xd->h * xd->w;
    const int C = xd->c;
    double *sums;
    ACC *coef;
    hpdl_status s = hpdl__bn_nhwc_scratch(C, &sums, &coef, stream);
    if (s != HPDL_OK) return s;
    s = hpdl__bn_nhwc_sums_launch(pixels, C, x, dy, save_mean, sums, stream);
    if (s == HPDL_OK) {
        const hpdl__bn_nhwc_backward_apply<T, ACC> apply = {coef, C};
        hpdl__bn_nhwc_backward_stats<ACC><<<(C + 255) / 256, 256, 0, stream>>>(
            C, (double)pixels, sums, gamma, save_mean, save_invstd, dgamma, dbeta, coef);
        s = hpdl__elementwise(pixels * C, C, dy, x, dx, apply, stream);
    }
    if (cudaFreeAsync(sums, stream) != cudaSuccess && s == HPDL_OK) s = HPDL_ERR_CUDA;
    return s;
}

/* The private launchers, after the CPU twin's checks. D: the CUDA element type. */
template <typename T>
static inline hpdl_status hpdl__cuda_pool_forward(int is_max, const hpdl_pool2d_params *p, const hpdl_tensor4 *xd,
                                                  const T *x, const hpdl_tensor4 *yd, T *y, cudaStream_t stream) {
    typedef typename hpdl__dev<T>::type D;
    if (!hpdl__pool2d_args_ok(p, xd, yd, x, x, y)) return HPDL_ERR_INVALID;
    size_t total = hpdl_tensor4_count(yd);
    hpdl__pool_forward_kernel<D, typename hpdl__acc<T>::type>
        <<<hpdl__elementwise_blocks(total), 256, 0, stream>>>(is_max, *p, *xd, (const D *)x, *yd, (D *)y, total);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

template <typename T>
static inline hpdl_status hpdl__cuda_pool_backward(int is_max, const hpdl_pool2d_params *p, const hpdl_tensor4 *xd,
                                                   const T *x, const hpdl_tensor4 *yd, const T *dy, T *dx,
                                                   cudaStream_t stream) {
    typedef typename hpdl__dev<T>::type D;
    if ((is_max && !x) || !hpdl__pool2d_args_ok(p, xd, yd, dy, dy, dx)) return HPDL_ERR_INVALID;
    size_t total = hpdl_tensor4_count(xd);
    hpdl__pool_backward_kernel<D, typename hpdl__acc<T>::type><<<hpdl__elementwise_blocks(total), 256, 0, stream>>>(
        is_max, *p, *xd, (const D *)x, *yd, (const D *)dy, (D *)dx, total);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* The type-generic front ends (C++): the element type of the tensors picks
   the kernels (float, double, hpdl_f16 or __half, hpdl_bf16 or
   __nv_bfloat16); batch-norm parameters are in hpdl__acc<T>::type. */
template <typename T>
static inline hpdl_status hpdl_cuda_conv2d_bias_add(const hpdl_tensor4 *yd, T *y, const T *bias,
                                                    cudaStream_t stream = 0) {
    typedef typename hpdl__dev<T>::type D;
    if (!hpdl__tensor4_valid(yd) || !y || !bias) return HPDL_ERR_INVALID;
    size_t total = hpdl_tensor4_count(yd);
    hpdl__bias_add_kernel<D, typename hpdl__acc<T>::type>
        <<<hpdl__elementwise_blocks(total), 256, 0, stream>>>(*yd, (D *)y, (const D *)bias, total);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* dbias[c] = sum of dy over n, h and w, for every channel c of yd, on `stream`.
   HPDL_ERR_INVALID for an invalid yd or a NULL pointer. */
template <typename T>
static inline hpdl_status hpdl_cuda_conv2d_bias_grad(const hpdl_tensor4 *yd, const T *dy, T *dbias,
                                                     cudaStream_t stream = 0) {
    typedef typename hpdl__dev<T>::type D;
    if (!hpdl__tensor4_valid(yd) || !dy || !dbias) return HPDL_ERR_INVALID;
    size_t per_channel = (size_t)yd->n * yd->h * yd->w;
    unsigned splits = (unsigned)(per_channel / (16 * HPDL__CHANNEL_THREADS)); /* 16+ values a thread */
    splits = splits > 256 ? 256 : splits;
    if (sizeof(D) >= sizeof(float) && splits > 1) {
        HPDL_CUDA_TRY(cudaMemsetAsync(dbias, 0, (size_t)yd->c * sizeof(D), stream));
        hpdl__bias_grad_split_kernel<D, typename hpdl__acc<T>::type>
            <<<dim3((unsigned)yd->c, splits), HPDL__CHANNEL_THREADS, 0, stream>>>(*yd, (const D *)dy, (D *)dbias);
    } else {
        hpdl__bias_grad_kernel<D, typename hpdl__acc<T>::type>
            <<<yd->c, HPDL__CHANNEL_THREADS, 0, stream>>>(*yd, (const D *)dy, (D *)dbias);
    }
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* y = max pooling of x over p's windows, as hpdl_maxpool2d_forward_<t>; HPDL_ERR_INVALID for
   arguments the CPU twin refuses. */
template <typename T>
static inline hpdl_status hpdl_cuda_maxpool2d_forward(const hpdl_pool2d_params *p, const hpdl_tensor4 *xd, const T *x,
                                                      const hpdl_tensor4 *yd, T *y, cudaStream_t stream = 0) {
    return hpdl__cuda_pool_forward(1, p, xd, x, yd, y, stream);
}

/* dx from dy, each window's gradient going to its largest x (the first on ties), as
   hpdl_maxpool2d_backward_<t>; x is required. */
template <typename T>
static inline hpdl_status hpdl_cuda_maxpool2d_backward(const hpdl_pool2d_params *p, const hpdl_tensor4 *xd,
                                                       const T *x, const hpdl_tensor4 *yd, const T *dy, T *dx,
                                                       cudaStream_t stream = 0) {
    return hpdl__cuda_pool_backward(1, p, xd, x, yd, dy, dx, stream);
}

/* y = average pooling of x over p's windows, as hpdl_avgpool2d_forward_<t>; HPDL_ERR_INVALID for
   arguments the CPU twin refuses. */
template <typename T>
static inline hpdl_status hpdl_cuda_avgpool2d_forward(const hpdl_pool2d_params *p, const hpdl_tensor4 *xd, const T *x,
                                                      const hpdl_tensor4 *yd, T *y, cudaStream_t stream = 0) {
    return hpdl__cuda_pool_forward(0, p, xd, x, yd, y, stream);
}

/* dx from dy, as hpdl_avgpool2d_backward_<t> (no x needed); HPDL_ERR_INVALID for arguments the CPU
   twin refuses. */
template <typename T>
static inline hpdl_status hpdl_cuda_avgpool2d_backward(const hpdl_pool2d_params *p, const hpdl_tensor4 *yd,
                                                       const T *dy, const hpdl_tensor4 *xd, T *dx,
                                                       cudaStream_t stream = 0) {
    return hpdl__cuda_pool_backward(0, p, xd, (const T *)NULL, yd, dy, dx, stream);
}

/* y[n*C + c] = mean of x's channel c of image n over h and w (y holds N x C values), on `stream`.
   HPDL_ERR_INVALID for an invalid xd or a NULL pointer. */
template <typename T>
static inline hpdl_status hpdl_cuda_global_avgpool_forward(const hpdl_tensor4 *xd, const T *x, T *y,
                                                           cudaStream_t stream = 0) {
    typedef typename hpdl__dev<T>::type D;
    if (!hpdl__tensor4_valid(xd) || !x || !y) return HPDL_ERR_INVALID;
    size_t total = (size_t)xd->n * xd->c;
    hpdl__global_avgpool_forward_kernel<D, typename hpdl__acc<T>::type>
        <<<hpdl__elementwise_blocks(total), 256, 0, stream>>>(*xd, (const D *)x, (D *)y, total);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* dx[n, c, h, w] = dy[n*C + c] / (H*W), the backward of hpdl_cuda_global_avgpool_forward.
   HPDL_ERR_INVALID for an invalid xd or a NULL pointer. */
template <typename T>
static inline hpdl_status hpdl_cuda_global_avgpool_backward(const hpdl_tensor4 *xd, const T *dy, T *dx,
                                                            cudaStream_t stream = 0) {
    typedef typename hpdl__dev<T>::type D;
    if (!hpdl__tensor4_valid(xd) || !dy || !dx) return HPDL_ERR_INVALID;
    size_t total = hpdl_tensor4_count(xd);
    hpdl__global_avgpool_backward_kernel<D, typename hpdl__acc<T>::type>
        <<<hpdl__elementwise_blocks(total), 256, 0, stream>>>(*xd, (const D *)dy, (D *)dx, total);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* y from the batch's per-channel mean and variance, running_mean/var moved by momentum, as
   hpdl_batchnorm_forward_training_<t>; save_mean and save_invstd may be NULL. HPDL_ERR_INVALID for
   momentum outside [0, 1], eps not positive and finite, under 2 values a channel, or a NULL pointer. */
template <typename T>
static inline hpdl_status hpdl_cuda_batchnorm_forward_training(
    const hpdl_tensor4 *xd, const T *x, const typename hpdl__acc<T>::type *gamma,
    const typename hpdl__acc<T>::type *beta, double momentum, double eps, typename hpdl__acc<T>::type *running_mean,
    typename hpdl__acc<T>::type *running_var, T *y, typename hpdl__acc<T>::type *save_mean,
    typename hpdl__acc<T>::type *save_invstd, cudaStream_t stream = 0) {
    typedef typename hpdl__dev<T>::type D;
    if (!hpdl__tensor4_valid(xd) || !x || !gamma || !beta || !running_mean || !running_var || !y ||
        !(momentum >= 0.0 && momentum <= 1.0) || !hpdl__bn_eps_ok(eps) || (double)xd->n * xd->h * xd->w < 2)
        return HPDL_ERR_INVALID;
    if (xd->layout == HPDL_NHWC && sizeof(D) < sizeof(double))
        return hpdl__bn_nhwc_forward<D>(xd, (const D *)x, gamma, beta, momentum, eps, running_mean, running_var, (D *)y,
                                        save_mean, save_invstd, stream);
    hpdl__batchnorm_training_kernel<D, typename hpdl__acc<T>::type><<<xd->c, HPDL__CHANNEL_THREADS, 0, stream>>>(
        *xd, (const D *)x, gamma, beta, momentum, eps, running_mean, running_var, (D *)y, save_mean, save_invstd);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* y = gamma (x - running_mean) / sqrt(running_var + eps) + beta per channel, as
   hpdl_batchnorm_forward_inference_<t> (running_var + eps <= 0 gives NaN, see above). */
template <typename T>
static inline hpdl_status hpdl_cuda_batchnorm_forward_inference(
    const hpdl_tensor4 *xd, const T *x, const typename hpdl__acc<T>::type *gamma,
    const typename hpdl__acc<T>::type *beta, const typename hpdl__acc<T>::type *running_mean,
    const typename hpdl__acc<T>::type *running_var, double eps, T *y, cudaStream_t stream = 0) {
    typedef typename hpdl__dev<T>::type D;
    if (!hpdl__tensor4_valid(xd) || !x || !gamma || !beta || !running_mean || !running_var || !y ||
        !hpdl__bn_eps_ok(eps))
        return HPDL_ERR_INVALID;
    size_t total = hpdl_tensor4_count(xd);
    hpdl__batchnorm_inference_kernel<D, typename hpdl__acc<T>::type>
        <<<hpdl__elementwise_blocks(total), 256, 0, stream>>>(*xd, (const D *)x, gamma, beta, running_mean,
                                                               running_var, eps, (D *)y, total);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* dx, dgamma and dbeta (written, not added to) from dy and the training pass's save_mean and
   save_invstd, as hpdl_batchnorm_backward_<t>. HPDL_ERR_INVALID for an invalid xd or a NULL pointer. */
template <typename T>
static inline hpdl_status hpdl_cuda_batchnorm_backward(const hpdl_tensor4 *xd, const T *x, const T *dy,
                                                       const typename hpdl__acc<T>::type *gamma,
                                                       const typename hpdl__acc<T>::type *save_mean,
                                                       const typename hpdl__acc<T>::type *save_invstd, T *dx,
                                                       typename hpdl__acc<T>::type *dgamma,
                                                       typename hpdl__acc<T>::type *dbeta, cudaStream_t stream = 0) {
    typedef typename hpdl__dev<T>::type D;
    if (!hpdl__tensor4_valid(xd) || !x || !dy || !gamma || !save_mean || !save_invstd || !dx || !dgamma || !dbeta)
        return HPDL_ERR_INVALID;
    if (xd->layout == HPDL_NHWC && sizeof(D) < sizeof(double))
        return hpdl__bn_nhwc_backward<D>(xd, (const D *)x, (const D *)dy, gamma, save_mean, save_invstd, (D *)dx, dgamma,
                                         dbeta, stream);
    hpdl__batchnorm_backward_kernel<D, typename hpdl__acc<T>::type><<<xd->c, HPDL__CHANNEL_THREADS, 0, stream>>>(
        *xd, (const D *)x, (const D *)dy, gamma, save_mean, save_invstd, (D *)dx, dgamma, dbeta);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* Typed launchers: the CPU twin's name with hpdl_cuda_ in front and a
   stream at the end, each a call of the front end above. */
#define HPDL_DEFINE_CUDA_CONV_LAYERS(SUFFIX, T, ACC_T)                                                             \
    HPDL_CUDA_API hpdl_status hpdl_cuda_conv2d_bias_add_##SUFFIX(const hpdl_tensor4 *yd, T *y, const T *bias,     \
                                                                 cudaStream_t stream) {                           \
        return hpdl_cuda_conv2d_bias_add(yd, y, bias, stream);                                                    \
    }                                                                                                             \
    HPDL_CUDA_API hpdl_status hpdl_cuda_conv2d_bias_grad_##SUFFIX(const hpdl_tensor4 *yd, const T *dy, T *dbias,  \
                                                                  cudaStream_t stream) {                          \
        return hpdl_cuda_conv2d_bias_grad(yd, dy, dbias, stream);                                                 \
    }                                                                                                             \
    HPDL_CUDA_API hpdl_status hpdl_cuda_maxpool2d_forward_##SUFFIX(const hpdl_pool2d_params *p,                   \
                                                                   const hpdl_tensor4 *xd, const T *x,            \
                                                                   const hpdl_tensor4 *yd, T *y,                  \
                                                                   cudaStream_t stream) {                         \
        return hpdl_cuda_maxpool2d_forward(p, xd, x, yd, y, stream);                                              \
    }                                                                                                             \
    HPDL_CUDA_API hpdl_status hpdl_cuda_maxpool2d_backward_##SUFFIX(const hpdl_pool2d_params *p,                  \
                                                                    const hpdl_tensor4 *xd, const T *x,           \
                                                                    const hpdl_tensor4 *yd, const T *dy, T *dx,   \
                                                                    cudaStream_t stream) {                        \
        return hpdl_cuda_maxpool2d_backward(p, xd, x, yd, dy, dx, stream);                                        \
    }                                                                                                             \
    HPDL_CUDA_API hpdl_status hpdl_cuda_avgpool2d_forward_##SUFFIX(const hpdl_pool2d_params *p,                   \
                                                                   const hpdl_tensor4 *xd, const T *x,            \
                                                                   const hpdl_tensor4 *yd, T *y,                  \
                                                                   cudaStream_t stream) {                         \
        return hpdl_cuda_avgpool2d_forward(p, xd, x, yd, y, stream);                                              \
    }                                                                                                             \
    HPDL_CUDA_API hpdl_status hpdl_cuda_avgpool2d_backward_##SUFFIX(const hpdl_pool2d_params *p,                  \
                                                                    const hpdl_tensor4 *yd, const T *dy,          \
                                                                    const hpdl_tensor4 *xd, T *dx,                \
                                                                    cudaStream_t stream) {                        \
        return hpdl_cuda_avgpool2d_backward(p, yd, dy, xd, dx, stream);                                           \
    }                                                                                                             \
    HPDL_CUDA_API hpdl_status hpdl_cuda_global_avgpool_forward_##SUFFIX(const hpdl_tensor4 *xd, const T *x, T *y, \
                                                                        cudaStream_t stream) {                    \
        return hpdl_cuda_global_avgpool_forward(xd, x, y, stream);                                                \
    }                                                                                                             \
    HPDL_CUDA_API hpdl_status hpdl_cuda_global_avgpool_backward_##SUFFIX(const hpdl_tensor4 *xd, const T *dy,     \
                                                                         T *dx, cudaStream_t stream) {            \
        return hpdl_cuda_global_avgpool_backward(xd, dy, dx, stream);                                             \
    }                                                                                                             \
    HPDL_CUDA_API hpdl_status hpdl_cuda_batchnorm_forward_training_##SUFFIX(                                      \
        const hpdl_tensor4 *xd, const T *x, const ACC_T *gamma, const ACC_T *beta, double momentum, double eps,   \
        ACC_T *running_mean, ACC_T *running_var, T *y, ACC_T *save_mean, ACC_T *save_invstd, cudaStream_t stream) { \
        return hpdl_cuda_batchnorm_forward_training(xd, x, gamma, beta, momentum, eps, running_mean, running_var, \
                                                    y, save_mean, save_invstd, stream);                           \
    }                                                                                                             \
    HPDL_CUDA_API hpdl_status hpdl_cuda_batchnorm_forward_inference_##SUFFIX(                                     \
        const hpdl_tensor4 *xd, const T *x, const ACC_T *gamma, const ACC_T *beta, const ACC_T *running_mean,     \
        const ACC_T *running_var, double eps, T *y, cudaStream_t stream) {                                        \
        return hpdl_cuda_batchnorm_forward_inference(xd, x, gamma, beta, running_mean, running_var, eps, y,       \
                                                     stream);                                                     \
    }                                                                                                             \
    HPDL_CUDA_API hpdl_status hpdl_cuda_batchnorm_backward_##SUFFIX(                                              \
        const hpdl_tensor4 *xd, const T *x, const T *dy, const ACC_T *gamma, const ACC_T *save_mean,              \
        const ACC_T *save_invstd, T *dx, ACC_T *dgamma, ACC_T *dbeta, cudaStream_t stream) {                      \
        return hpdl_cuda_batchnorm_backward(xd, x, dy, gamma, save_mean, save_invstd, dx, dgamma, dbeta, stream); \
    }

/* hpdl_cuda_conv2d_bias_add_f32 hpdl_cuda_conv2d_bias_grad_f32 hpdl_cuda_maxpool2d_forward_f32
   hpdl_cuda_maxpool2d_backward_f32 hpdl_cuda_avgpool2d_forward_f32 hpdl_cuda_avgpool2d_backward_f32
   hpdl_cuda_global_avgpool_forward_f32 hpdl_cuda_global_avgpool_backward_f32
   hpdl_cuda_batchnorm_forward_training_f32 hpdl_cuda_batchnorm_forward_inference_f32
   hpdl_cuda_batchnorm_backward_f32 */
HPDL_DEFINE_CUDA_CONV_LAYERS(f32, float, float)
/* hpdl_cuda_conv2d_bias_add_f64 hpdl_cuda_conv2d_bias_grad_f64 hpdl_cuda_maxpool2d_forward_f64
   hpdl_cuda_maxpool2d_backward_f64 hpdl_cuda_avgpool2d_forward_f64 hpdl_cuda_avgpool2d_backward_f64
   hpdl_cuda_global_avgpool_forward_f64 hpdl_cuda_global_avgpool_backward_f64
   hpdl_cuda_batchnorm_forward_training_f64 hpdl_cuda_batchnorm_forward_inference_f64
   hpdl_cuda_batchnorm_backward_f64 */
HPDL_DEFINE_CUDA_CONV_LAYERS(f64, double, double)
/* hpdl_cuda_conv2d_bias_add_f16 hpdl_cuda_conv2d_bias_grad_f16 hpdl_cuda_maxpool2d_forward_f16
   hpdl_cuda_maxpool2d_backward_f16 hpdl_cuda_avgpool2d_forward_f16 hpdl_cuda_avgpool2d_backward_f16
   hpdl_cuda_global_avgpool_forward_f16 hpdl_cuda_global_avgpool_backward_f16
   hpdl_cuda_batchnorm_forward_training_f16 hpdl_cuda_batchnorm_forward_inference_f16
   hpdl_cuda_batchnorm_backward_f16 */
HPDL_DEFINE_CUDA_CONV_LAYERS(f16, hpdl_f16, float)
/* hpdl_cuda_conv2d_bias_add_bf16 hpdl_cuda_conv2d_bias_grad_bf16 hpdl_cuda_maxpool2d_forward_bf16
   hpdl_cuda_maxpool2d_backward_bf16 hpdl_cuda_avgpool2d_forward_bf16
   hpdl_cuda_avgpool2d_backward_bf16 hpdl_cuda_global_avgpool_forward_bf16
   hpdl_cuda_global_avgpool_backward_bf16 hpdl_cuda_batchnorm_forward_training_bf16
   hpdl_cuda_batchnorm_forward_inference_bf16 hpdl_cuda_batchnorm_backward_bf16 */
HPDL_DEFINE_CUDA_CONV_LAYERS(bf16, hpdl_bf16, float)
/* ======================================================================== */
/* OPTIMISERS                                                               */
/* ======================================================================== */
/* SGD with momentum and AdamW over device arrays, and a finiteness check for
   gradients (CPU twins: hpdl_sgd_momentum_<t>, hpdl_adamw_<t> in hpdl.h;
   test: tests/gpu_optim.cu).

   A training step replayed from a CUDA graph replays the same kernel
   arguments, so what changes from step to step (the learning rate, AdamW's
   bias corrections, whether to skip the step) is read from device memory: an
   hpdl_optim_step that the host uploads before each replay, or that a kernel
   writes. When its skip is non-zero the optimiser kernels write nothing: a
   step whose gradients are not finite or an AMP step whose loss scale
   overflowed leaves the weights and the state as they were, without a round
   trip to the host. hpdl_cuda_flag_nonfinite_<t> can raise skip itself:
   give it &d_step->skip as its flag, before the optimiser on the stream.

   The update is computed in the parameters' type (f32 in float, as
   PyTorch's kernels do; f64 in double, matching the CPU twin to rounding);
   the per-step values and the hyper-parameters come in double. A plain
   grid-stride loop: the update is memory-bound. */

/* Per-step values that the optimiser kernels read from device memory. */
typedef struct hpdl_optim_step {
    double lr;
    double bias_correction1, bias_correction2; /* AdamW at step t: 1 - beta1^t, 1 - beta2^t */
    int skip;                                  /* non-zero: the optimiser kernels write nothing */
} hpdl_optim_step;

/* Host: *out for step t >= 1, with lr and betas in the ranges of
   hpdl_adamw_<t> (SGD reads only lr; pass betas of 0), skip = 0.
   HPDL_ERR_INVALID, *out untouched, otherwise. */
HPDL_CUDA_API hpdl_status hpdl_optim_step_make(double lr, double beta1, double beta2, int64_t step,
                                               hpdl_optim_step *out) {
    if (!out || !hpdl__adamw_params_ok(step, lr, beta1, beta2, 1, 0)) return HPDL_ERR_INVALID;
    memset(out, 0, sizeof *out);
    out->lr = lr;
    out->bias_correction1 = 1 - pow(beta1, (double)step); /* as hpdl__adamw_coef_make computes them */
    out->bias_correction2 = 1 - pow(beta2, (double)step);
    return HPDL_OK;
}

/* The parameter types of the optimisers (master weights): float and double. */
template <typename T> struct hpdl__is_master_type { enum { value = 0 }; };
template <> struct hpdl__is_master_type<float> { enum { value = 1 }; };
template <> struct hpdl__is_master_type<double> { enum { value = 1 }; };

/* The bits of an element type and its exponent mask: an element whose
   exponent bits are all ones is inf or NaN (no float compare, so fast-math
   flags cannot hide a NaN). */
template <typename T> struct hpdl__float_bits;
template <> struct hpdl__float_bits<float> { typedef uint32_t type; static const uint32_t exponent = 0x7f800000u; };
template <> struct hpdl__float_bits<double> {
    typedef uint64_t type;
    static const uint64_t exponent = 0x7ff0000000000000ull;
};
template <> struct hpdl__float_bits<__half> { typedef uint16_t type; static const uint16_t exponent = 0x7c00u; };
template <> struct hpdl__float_bits<__nv_bfloat16> { typedef uint16_t type; static const uint16_t exponent = 0x7f80u; };

/* SGD with momentum, as hpdl_sgd_momentum_<t>. */
template <typename T>
__global__ void hpdl__sgd_momentum_kernel(int64_t n, T *HPDL_RESTRICT w, const T *HPDL_RESTRICT grad,
                                          T *HPDL_RESTRICT velocity, const hpdl_optim_step *step, T momentum,
                                          T weight_decay, int nesterov) {
    if (step->skip) return;
    const T lr = (T)step->lr;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        T wi = w[i], g = grad[i] + weight_decay * wi;
        T v = momentum * velocity[i] + g;
        velocity[i] = v;
        w[i] = wi - lr * (nesterov ? g + momentum * v : v);
    }
}

/* AdamW's hyper-parameters as the kernel takes them; 1 - beta is worked out
   in double on the host, as the CPU twin does. */
template <typename T> struct hpdl__adamw_args {
    T beta1, one_minus_beta1, beta2, one_minus_beta2, eps;
    double weight_decay;
};

/* AdamW, as hpdl_adamw_<t>. */
template <typename T>
__global__ void hpdl__adamw_kernel(int64_t n, T *HPDL_RESTRICT w, const T *HPDL_RESTRICT grad, T *HPDL_RESTRICT m,
                                   T *HPDL_RESTRICT v, const hpdl_optim_step *step, hpdl__adamw_args<T> a) {
    if (step->skip) return;
    const T decay = (T)(1 - step->lr * a.weight_decay);
    const T step_size = (T)(step->lr / step->bias_correction1);
    const T bc2_sqrt = (T)sqrt(step->bias_correction2);
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        T g = grad[i];
        T mi = a.beta1 * m[i] + a.one_minus_beta1 * g;
        T vi = a.beta2 * v[i] + a.one_minus_beta2 * (g * g);
        m[i] = mi;
        v[i] = vi;
        w[i] = w[i] * decay - step_size * mi / (sqrt(vi) / bc2_sqrt + a.eps);
    }
}

/* Sets *flag = 1 when an element of x (as bits U) is inf or NaN. */
template <typename U, U EXPONENT>
__global__ void hpdl__flag_nonfinite_kernel(int64_t n, const U *HPDL_RESTRICT x, int *flag) {
    int found = 0;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        found |= (x[i] & EXPONENT) == EXPONENT;
    if (found) *flag = 1; /* every writer writes 1: no atomics needed */
}

/* n >= 0, and every pointer set unless n == 0. */
HPDL_CUDA_API int hpdl__optim_args_ok(int64_t n, const void *a, const void *b, const void *c, const void *d,
                                      const void *e) {
    return n >= 0 && (n == 0 || (a && b && c && d && e));
}

/* The type-generic front ends (C++), for float or double parameters: one
   step on device arrays, asynchronously on `stream`, reading lr, the bias
   corrections and skip from d_step (device memory). Hyper-parameters as
   for the CPU twin; HPDL_ERR_INVALID, nothing launched, otherwise or for
   n < 0 or a NULL pointer when n > 0. The arrays must not overlap. */
template <typename T>
static inline hpdl_status hpdl_cuda_sgd_momentum(int64_t n, T *w, const T *grad, T *velocity,
                                                 const hpdl_optim_step *d_step, double momentum, double weight_decay,
                                                 int nesterov, cudaStream_t stream = 0) {
    static_assert(hpdl__is_master_type<T>::value, "hpdl: the optimisers take float or double parameters");
    if (!hpdl__optim_args_ok(n, w, grad, velocity, velocity, d_step) ||
        !hpdl__sgd_params_ok(0, momentum, weight_decay, nesterov))
        return HPDL_ERR_INVALID;
    if (n == 0) return HPDL_OK;
    hpdl__sgd_momentum_kernel<T><<<hpdl__elementwise_blocks((size_t)n), 256, 0, stream>>>(
        n, w, grad, velocity, d_step, (T)momentum, (T)weight_decay, nesterov ? 1 : 0);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* AdamW, as hpdl_adamw_<t>: updates m, v and w in place; lr and the bias corrections come from
   d_step, and nothing is written while d_step->skip is set. */
template <typename T>
static inline hpdl_status hpdl_cuda_adamw(int64_t n, T *w, const T *grad, T *m, T *v, const hpdl_optim_step *d_step,
                                          double beta1, double beta2, double eps, double weight_decay,
                                          cudaStream_t stream = 0) {
    static_assert(hpdl__is_master_type<T>::value, "hpdl: the optimisers take float or double parameters");
    hpdl__adamw_args<T> a;
    if (!hpdl__optim_args_ok(n, w, grad, m, v, d_step) || !hpdl__adamw_params_ok(1, 0, beta1, beta2, eps, weight_decay))
        return HPDL_ERR_INVALID;
    if (n == 0) return HPDL_OK;
    a.beta1 = (T)beta1;
    a.one_minus_beta1 = (T)(1 - beta1);
    a.beta2 = (T)beta2;
    a.one_minus_beta2 = (T)(1 - beta2);
    a.eps = (T)eps;
    a.weight_decay = weight_decay;
    hpdl__adamw_kernel<T><<<hpdl__elementwise_blocks((size_t)n), 256, 0, stream>>>(n, w, grad, m, v, d_step, a);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* Sets *d_flag = 1 (and never clears it) when any of x[0..n) is NaN or inf;
   for float, double, hpdl_f16 or __half, hpdl_bf16 or __nv_bfloat16. Clear
   the flag before the first check; several checks can share one flag. */
template <typename T>
static inline hpdl_status hpdl_cuda_flag_nonfinite(int64_t n, const T *x, int *d_flag, cudaStream_t stream = 0) {
    typedef hpdl__float_bits<typename hpdl__dev<T>::type> B;
    typedef typename B::type U;
    if (!hpdl__optim_args_ok(n, x, x, x, x, d_flag)) return HPDL_ERR_INVALID;
    if (n == 0) return HPDL_OK;
    hpdl__flag_nonfinite_kernel<U, B::exponent>
        <<<hpdl__elementwise_blocks((size_t)n), 256, 0, stream>>>(n, (const U *)x, d_flag);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* The typed launchers hpdl_cuda_sgd_momentum_<t> and hpdl_cuda_adamw_<t> (float, double) for
   C-style callers, each a call of its front end above. */
#define HPDL_DEFINE_CUDA_OPTIM(SUFFIX, T)                                                                   \
    HPDL_CUDA_API hpdl_status hpdl_cuda_sgd_momentum_##SUFFIX(int64_t n, T *w, const T *grad, T *velocity,  \
                                                              const hpdl_optim_step *d_step, double momentum, \
                                                              double weight_decay, int nesterov,          \
                                                              cudaStream_t stream) {                       \
        return hpdl_cuda_sgd_momentum(n, w, grad, velocity, d_step, momentum, weight_decay, nesterov, stream); \
    }                                                                                                       \
    HPDL_CUDA_API hpdl_status hpdl_cuda_adamw_##SUFFIX(int64_t n, T *w, const T *grad, T *m, T *v,          \
                                                       const hpdl_optim_step *d_step, double beta1, double beta2, \
                                                       double eps, double weight_decay, cudaStream_t stream) { \
        return hpdl_cuda_adamw(n, w, grad, m, v, d_step, beta1, beta2, eps, weight_decay, stream);         \
    }

/* The typed launchers hpdl_cuda_flag_nonfinite_<t> for C-style callers, each a call of
   hpdl_cuda_flag_nonfinite. */
#define HPDL_DEFINE_CUDA_FLAG_NONFINITE(SUFFIX, T)                                                          \
    HPDL_CUDA_API hpdl_status hpdl_cuda_flag_nonfinite_##SUFFIX(int64_t n, const T *x, int *d_flag,         \
                                                                cudaStream_t stream) {                      \
        return hpdl_cuda_flag_nonfinite(n, x, d_flag, stream);                                             \
    }

/* hpdl_cuda_sgd_momentum_f32 hpdl_cuda_adamw_f32 */
HPDL_DEFINE_CUDA_OPTIM(f32, float)
/* hpdl_cuda_sgd_momentum_f64 hpdl_cuda_adamw_f64 */
HPDL_DEFINE_CUDA_OPTIM(f64, double)
/* hpdl_cuda_flag_nonfinite_f32 */
HPDL_DEFINE_CUDA_FLAG_NONFINITE(f32, float)
/* hpdl_cuda_flag_nonfinite_f64 */
HPDL_DEFINE_CUDA_FLAG_NONFINITE(f64, double)
/* hpdl_cuda_flag_nonfinite_f16 */
HPDL_DEFINE_CUDA_FLAG_NONFINITE(f16, hpdl_f16)
/* hpdl_cuda_flag_nonfinite_bf16 */
HPDL_DEFINE_CUDA_FLAG_NONFINITE(bf16, hpdl_bf16)

/* ======================================================================== */
/* MLP TRAINING                                                             */
/* ======================================================================== */
/* hpdl_cuda_mlp_<s> mirrors the CPU hpdl_mlp_<s> (same widths, same row-major
   W[l] of widths[l] x widths[l+1], Y = X.W + b) with its parameters on the
   device. One training step is
       gather   A0 = batch rows of the data set (a device permutation picks them)
       forward  Z = A.W (GEMM), A' = act(Z + b) (one fused elementwise pass)
       loss     softmax + cross-entropy + its gradient, one kernel, loss summed
                on the device
       backward dW = A^T.D, dA = D.W^T (GEMMs), D = dA * act'(A) fused with
                the column sums that give db
       update   one SGD kernel over all parameters, L2 on the weights
   and is captured once per batch size in a CUDA graph, then replayed: the host
   launches one graph per step and synchronises once per epoch.

   Precisions: f32 and f64 (everything in that type), and f16, mixed precision
   in the style of PyTorch AMP:
     - autocast's role: the matrix products run on f16 copies of the weights
       and activations (hpdl_cuda_gemm_f16, f32 accumulation); bias, activation,
       softmax and loss are computed in f32 from the f16 values. The f16 weight
       copy is refreshed by the SGD kernel, not re-cast before each forward.
     - GradScaler's role: the loss gradient is multiplied by a scale S (start
       2^16) so small gradients survive f16; a check kernel looks for inf/NaN
       in the f16 gradients and raises a device flag; the SGD kernel unscales
       (x 1/S) into the f32 master weights, or skips the step when the flag is
       up; the SGD kernel's last block then halves S (overflow) or doubles it
       after 2000 clean steps. All on the device, so the graph stays replayable.

   Data: hpdl_cuda_dataset keeps images (f32) and labels on the device when
   they fit, else in pinned host memory, from which shuffled chunks are
   gathered on the host and copied on a second stream while the GPU trains on
   the previous chunk. Shuffling is a device permutation (a Feistel
   bijection of [0, n), keyed by seed and epoch): no image moves host->device
   per epoch in the resident case. */

#define HPDL_CUDA_MLP_GRAPHS 4        /* graphs cached per model (batch sizes) */
#define HPDL_CUDA_MLP_SCALE_INIT 65536.0f
#define HPDL_CUDA_MLP_SCALE_GROWTH_INTERVAL 2000

/* Device-side training state: hyper-parameters, accumulators, the data feed
   and the loss scaler. Graphs read it through one pointer, so values that
   change between steps (lr, feed cursor, scale) never force a re-capture. */
typedef struct hpdl__mlp_state {
    double lr, l2;
    double loss_sum;                 /* sum of per-sample losses since reset */
    unsigned long long correct;      /* argmax == label, since reset */
    double eval_loss_sum;
    unsigned long long eval_correct;
    /* feed: batch row i comes from src row perm[cursor + i] (cursor + i when perm is NULL) */
    const void *src;
    const int32_t *labels;
    const int32_t *perm;
    long long cursor;
    int src_f64;
    /* loss scaler (mixed precision only) */
    float loss_scale;
    int found_inf, good_steps;
    unsigned int blocks_done;        /* SGD blocks finished (last one updates S) */
    long long skipped_steps;
    long long nonfinite_steps;       /* f32/f64: steps not applied, a gradient not finite, since reset */
    int last_skipped;                /* the last step was not applied (FP8: its amaxes are not recorded) */
} hpdl__mlp_state;

/* What an epoch or an evaluation reports. */
typedef struct hpdl_cuda_mlp_stats {
    double loss;        /* mean cross-entropy over the samples seen */
    double accuracy;    /* training: running accuracy of the steps' forward passes */
    int64_t samples;
    double loss_scale;  /* mixed precision: current S (1 otherwise) */
    int64_t skipped_steps;
    int64_t nonfinite_steps; /* f32/f64: steps not applied because a gradient was not finite */
} hpdl_cuda_mlp_stats;

/* ------------------------------------------------------------------------ */
/* Device helpers: load/store between storage and compute types             */
/* ------------------------------------------------------------------------ */

template <typename T> struct hpdl__is_half { enum { value = 0 }; };
template <> struct hpdl__is_half<__half> { enum { value = 1 }; };

__device__ __forceinline__ float hpdl__ld(float x) { return x; }
__device__ __forceinline__ double hpdl__ld(double x) { return x; }
__device__ __forceinline__ float hpdl__ld(__half x) { return __half2float(x); }
__device__ __forceinline__ float hpdl__ld(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T> __device__ __forceinline__ T hpdl__st(double v) { return (T)v; }
template <> __device__ __forceinline__ float hpdl__st<float>(double v) { return (float)v; }
template <> __device__ __forceinline__ __half hpdl__st<__half>(double v) { return __float2half_rn((float)v); }
__device__ __forceinline__ void hpdl__st_to(float *p, float v) { *p = v; }
__device__ __forceinline__ void hpdl__st_to(double *p, double v) { *p = v; }
__device__ __forceinline__ void hpdl__st_to(__half *p, float v) { *p = __float2half_rn(v); }
__device__ __forceinline__ void hpdl__st_to(__nv_bfloat16 *p, float v) { *p = __float2bfloat16_rn(v); }

__device__ __forceinline__ int hpdl__finite(float v) { return isfinite(v); }
__device__ __forceinline__ int hpdl__finite(double v) { return isfinite(v); }
__device__ __forceinline__ int hpdl__finite(__half v) { return (__half_as_ushort(v) & 0x7c00u) != 0x7c00u; }

__device__ __forceinline__ float hpdl__exp(float v) { return expf(v); }
__device__ __forceinline__ double hpdl__exp(double v) { return exp(v); }
__device__ __forceinline__ float hpdl__log(float v) { return logf(v); }
__device__ __forceinline__ double hpdl__log(double v) { return log(v); }

/* act(v); NaN passes through ReLU (v < 0 is false for NaN), as in PyTorch,
   so the loss scaler still sees it. */
template <typename A> __device__ __forceinline__ A hpdl__act(A v, hpdl_activation act) {
    if (act == HPDL_ACT_RELU) return v < (A)0 ? (A)0 : v;
    return (A)1 / ((A)1 + hpdl__exp(-v));
}

/* ------------------------------------------------------------------------ */
/* Shuffling: a keyed Feistel bijection of [0, n)                           */
/* ------------------------------------------------------------------------ */

/* A permutation of [0, 2^(2*half_bits)) from 4 rounds of a mixing function,
   restricted to [0, n) by cycle walking (re-apply until the value is < n;
   the domain is < 4n, so under 4 applications on average). Host and device
   compute the same permutation, so a streamed data set shuffles like a
   resident one. */
HPDL_HD static inline uint32_t hpdl__feistel_round(uint32_t x, uint64_t key, int round) {
    uint64_t z = ((uint64_t)x << 8 | (uint64_t)round) + key * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return (uint32_t)(z ^ (z >> 31));
}

HPDL_HD static inline int hpdl__feistel_half_bits(int64_t n) {
    int bits = 1;
    while (bits < 31 && ((int64_t)1 << (2 * bits)) < n) bits++;
    return bits;
}

HPDL_HD static inline int32_t hpdl__shuffle_index(int64_t i, int64_t n, uint64_t key) {
    int half = hpdl__feistel_half_bits(n), r;
    uint32_t mask = (1u << half) - 1u;
    uint64_t x = (uint64_t)i;
    do {
        uint32_t left = (uint32_t)(x >> half) & mask, right = (uint32_t)x & mask;
        for (r = 0; r < 4; r++) {
            uint32_t t = right;
            right = left ^ (hpdl__feistel_round(right, key, r) & mask);
            left = t;
        }
        x = ((uint64_t)left << half) | right;
    } while ((int64_t)x >= n);
    return (int32_t)x;
}

/* The key of one epoch's permutation. */
HPDL_HD static inline uint64_t hpdl__shuffle_key(uint64_t seed, int64_t epoch) {
    return seed * 0x2545f4914f6cdd1dull + (uint64_t)epoch + 1u;
}

__global__ void hpdl__shuffle_kernel(int64_t n, uint64_t key, int32_t *perm) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) perm[i] = hpdl__shuffle_index(i, n, key);
}

/* ------------------------------------------------------------------------ */
/* Kernels                                                                  */
/* ------------------------------------------------------------------------ */

/* Small state updates, one thread: hyper-parameters and accumulators at the
   start of an epoch, the feed before a run of steps. */
__global__ void hpdl__mlp_begin_kernel(hpdl__mlp_state *st, double lr, double l2, int reset_train, int reset_eval) {
    st->lr = lr;
    st->l2 = l2;
    if (reset_train) { st->loss_sum = 0.0; st->correct = 0; st->nonfinite_steps = 0; }
    if (reset_eval) { st->eval_loss_sum = 0.0; st->eval_correct = 0; }
}

__global__ void hpdl__mlp_feed_kernel(hpdl__mlp_state *st, const void *src, int src_f64, const int32_t *labels,
                                      const int32_t *perm, long long cursor) {
    st->src = src;
    st->src_f64 = src_f64;
    st->labels = labels;
    st->perm = perm;
    st->cursor = cursor;
}

__global__ void hpdl__mlp_scaler_init_kernel(hpdl__mlp_state *st, float scale) {
    st->loss_scale = scale;
    st->found_inf = 0;
    st->good_steps = 0;
    st->skipped_steps = 0;
}

/* A0[i, :] = src[row(i), :] converted to the compute type; labels too. One
   block per batch row. */
template <typename C>
__global__ void hpdl__mlp_gather_kernel(int batch, int cols, const hpdl__mlp_state *st, C *A0, int32_t *labels) {
    int i = blockIdx.x, j;
    long long pos = st->cursor + i;
    long long row = st->perm ? (long long)st->perm[pos] : pos;
    C *dst = A0 + (size_t)i * cols;
    if (i >= batch) return;
    if (threadIdx.x == 0) labels[i] = st->labels[row];
    if (st->src_f64) {
        const double *s = (const double *)st->src + (size_t)row * cols;
        for (j = threadIdx.x; j < cols; j += blockDim.x) dst[j] = hpdl__st<C>(s[j]);
    } else {
        const float *s = (const float *)st->src + (size_t)row * cols;
        for (j = threadIdx.x; j < cols; j += blockDim.x) dst[j] = hpdl__st<C>(s[j]);
    }
}

/* A = act(A + b), in place over rows x cols (A holds X.W from the GEMM). */
template <typename C, typename T>
__global__ void hpdl__mlp_bias_act_kernel(int rows, int cols, C *A, const T *bias, hpdl_activation act) {
    typedef typename hpdl__acc<T>::type Acc;
    size_t n = (size_t)rows * cols, i;
    for (i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        Acc v = (Acc)hpdl__ld(A[i]) + (Acc)bias[i % cols];
        hpdl__st_to(A + i, hpdl__act<Acc>(v, act));
    }
}

/* Warp reductions. */
template <typename A> __device__ __forceinline__ A hpdl__warp_sum(A v) {
    int o;
    for (o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* Max and its first index over the warp (NaN never wins: idx stays -1). */
template <typename A> __device__ __forceinline__ void hpdl__warp_argmax(A *v, int *idx) {
    int o;
    for (o = 16; o > 0; o >>= 1) {
        A ov = __shfl_xor_sync(0xffffffffu, *v, o);
        int oi = __shfl_xor_sync(0xffffffffu, *idx, o);
        if (oi >= 0 && (*idx < 0 || ov > *v || (ov == *v && oi < *idx))) { *v = ov; *idx = oi; }
    }
}

/* The last of the loss kernel's blocks to finish adds every block's column
   sums (parts[block][col]) into db, in block order: the block's threads
   split the blocks into runs, one run and one column a thread, then a
   thread a column adds the runs in order (through `scratch`, 2048 sums). */
template <typename Acc, typename G>
static __device__ void hpdl__xent_add_block_sums(int cols, const Acc *parts, unsigned *count, G *db, Acc *scratch) {
    const int blocks = (int)gridDim.x, runs = (int)blockDim.x / cols, c = (int)threadIdx.x % cols;
    const int run = (int)threadIdx.x / cols;
    int b, r;
    if (!hpdl__last_block_in(count, (unsigned)blocks)) return;
    if (run < runs) {
        Acc sum = 0;
        for (b = blocks * run / runs; b < blocks * (run + 1) / runs; b++) sum += __ldcg(&parts[(size_t)b * cols + c]);
        scratch[run * cols + c] = sum;
    }
    __syncthreads();
    if ((int)threadIdx.x < cols) {
        Acc sum = 0;
        for (r = 0; r < runs; r++) sum += scratch[r * cols + threadIdx.x];
        hpdl__st_to(db + threadIdx.x, sum);
    }
}

/* Softmax + cross-entropy + gradient, one warp per row (warps stride over
   the rows), numerically stable:
       z = logits + bias (bias may be NULL), m = max z, s = sum exp(z - m)
       loss_row = log s + m - z[y]
       grad = (exp(z - m)/s - onehot(y)) * grad_scale * (*loss_scale)
   Per-row losses times loss_weight are summed per block and added to
   *loss_sum (atomics: one per block); rows whose argmax is the label are
   counted into *correct. grad, loss_sum, correct and loss_scale may each be
   NULL. A label outside [0, cols) makes that row's loss NaN.
   db (optional, cols <= HPDL__XENT_DB_MAX_COLS): the column sums of grad,
   i.e. the last layer's bias gradient, summed in a fixed order (per warp,
   then over the warps), which saves the column-sum kernel's launch. With
   more than one block, each leaves its sums in db_parts[block][col] (sums'
   type: T's, f32 or f64) and the last block to finish (db_count, set back
   to 0) adds them in block order (hpdl__xent_add_block_sums). */
#define HPDL__XENT_DB_MAX_COLS 64
#define HPDL__XENT_MAX_THREADS 512 /* f64 needs ~80 registers: 1024 threads would not fit an SM */
template <typename C, typename T, typename G>
__global__ void __launch_bounds__(HPDL__XENT_MAX_THREADS) hpdl__mlp_xent_kernel(int rows, int cols, const C *logits, int ld, const T *bias,
                                      const int32_t *labels, G *grad, int ldg, double grad_scale,
                                      const float *loss_scale, double loss_weight, double *loss_sum,
                                      unsigned long long *correct, G *db, void *db_parts, unsigned *db_count) {
    typedef typename hpdl__acc<T>::type Acc;
    __shared__ double block_loss[32];
    __shared__ int block_hits[32];
    __shared__ Acc db_part[32][HPDL__XENT_DB_MAX_COLS];
    int lane = threadIdx.x & 31, wib = threadIdx.x >> 5, warps = (int)(blockDim.x >> 5), row;
    double warp_loss = 0.0;
    int warp_hits = 0;
    Acc db0 = 0, db1 = 0; /* this lane's columns: lane and lane + 32 */
    Acc gs = (Acc)grad_scale * (loss_scale ? (Acc)*loss_scale : (Acc)1);
    for (row = blockIdx.x * warps + wib; row < rows; row += gridDim.x * warps) {
        const C *z = logits + (size_t)row * ld;
        int y = labels[row], j, arg = -1;
        Acc m = -(Acc)INFINITY, s = 0;
        for (j = lane; j < cols; j += 32) {
            Acc v = (Acc)hpdl__ld(z[j]) + (bias ? (Acc)bias[j] : (Acc)0);
            if (v > m || (arg < 0 && v == m)) { m = v; arg = j; }
        }
        hpdl__warp_argmax(&m, &arg);
        for (j = lane; j < cols; j += 32)
            s += hpdl__exp((Acc)hpdl__ld(z[j]) + (bias ? (Acc)bias[j] : (Acc)0) - m);
        s = hpdl__warp_sum(s);
        if (y >= 0 && y < cols)
            warp_loss += (double)(hpdl__log(s) + m - ((Acc)hpdl__ld(z[y]) + (bias ? (Acc)bias[y] : (Acc)0)));
        else
            warp_loss = (double)NAN;
        warp_hits += arg == y;
        if (grad) {
            G *g = grad + (size_t)row * ldg;
            for (j = lane; j < cols; j += 32) {
                Acc p = hpdl__exp((Acc)hpdl__ld(z[j]) + (bias ? (Acc)bias[j] : (Acc)0) - m) / s;
                Acc v = (p - (j == y ? (Acc)1 : (Acc)0)) * gs;
                hpdl__st_to(g + j, v);
                if (j == lane) db0 += v; else db1 += v;
            }
        }
    }
    if (lane == 0) { block_loss[wib] = warp_loss; block_hits[wib] = warp_hits; }
    if (db) {
        db_part[wib][lane] = db0;
        if (lane + 32 < HPDL__XENT_DB_MAX_COLS) db_part[wib][lane + 32] = db1;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        double sum = 0.0;
        int w, hits = 0;
        for (w = 0; w < warps; w++) { sum += block_loss[w]; hits += block_hits[w]; }
        if (loss_sum) atomicAdd(loss_sum, sum * loss_weight);
        if (correct) atomicAdd(correct, (unsigned long long)hits);
    }
    if (db && (int)threadIdx.x < cols) {
        Acc sum = 0;
        int w;
        for (w = 0; w < warps; w++) sum += db_part[w][threadIdx.x];
        if (gridDim.x == 1) hpdl__st_to(db + threadIdx.x, sum);
        else ((Acc *)db_parts)[(size_t)blockIdx.x * cols + threadIdx.x] = sum;
    }
    if (db && gridDim.x > 1) hpdl__xent_add_block_sums(cols, (const Acc *)db_parts, db_count, db, &db_part[0][0]);
}

/* Column sums of D (rows x cols) into db, deterministically (no atomics on
   the sums): block (x, y) owns 32 columns and run y of gridDim.y runs of
   rows; its 32 thread rows stride over the run, loading 4 rows before
   adding any. (One block per 32 columns, each thread's rows loaded one
   after another, was latency-bound: one H100, f16, 3000 x 512 in 16
   blocks 26.7 us, 3000 x 10 in one block 21.3.) With one run a block
   writes db; with more each leaves its sums in parts[y][col], and the last
   of a column group's blocks to finish (counts, set back to 0) adds them
   in run order. When A is given, D is first multiplied in place by
   act'(A): the backward pass's activation derivative and bias gradient in
   one read of D. */
template <typename C>
__global__ void __launch_bounds__(1024) hpdl__mlp_delta_colsum_kernel(int rows, int cols, C *D, const C *A,
                                                                     hpdl_activation act, C *db,
                                                                     typename hpdl__acc<C>::type *parts,
                                                                     unsigned *counts) {
    typedef typename hpdl__acc<C>::type Acc;
    enum { AT_ONCE = 4 };
    __shared__ Acc part[32][33];
    const int tx = threadIdx.x, ty = threadIdx.y, col = blockIdx.x * 32 + tx, runs = (int)gridDim.y;
    const int r1 = (int)((int64_t)rows * (blockIdx.y + 1) / runs);
    int r, u;
    Acc sum = 0;
    if (col < cols)
        for (r = (int)((int64_t)rows * blockIdx.y / runs) + ty; r < r1; r += 32 * AT_ONCE) {
            Acc v[AT_ONCE], a[AT_ONCE];
#pragma unroll
            for (u = 0; u < AT_ONCE; u++) {
                const size_t k = (size_t)(r + 32 * u) * cols + col;
                v[u] = r + 32 * u < r1 ? (Acc)hpdl__ld(D[k]) : (Acc)0;
                a[u] = A && r + 32 * u < r1 ? (Acc)hpdl__ld(A[k]) : (Acc)0;
            }
#pragma unroll
            for (u = 0; u < AT_ONCE && r + 32 * u < r1; u++) {
                if (A) {
                    v[u] *= hpdl__act_grad<Acc>(a[u], act);
                    hpdl__st_to(D + (size_t)(r + 32 * u) * cols + col, v[u]);
                }
                sum += v[u];
            }
        }
    part[ty][tx] = sum;
    __syncthreads();
    if (ty == 0 && col < cols)
        for (r = 1; r < 32; r++) sum += part[r][tx];
    hpdl__colsum_finish(sum, ty == 0 && col < cols, col, cols, (int)blockIdx.y, runs, parts, counts, (int)blockIdx.x, db);
}

/* Raises st->found_inf if any of this grid's share of the n gradients is
   inf or NaN (GradScaler's check). */
template <typename C> __device__ void hpdl__mlp_check_finite(int64_t n, const C *g, hpdl__mlp_state *st) {
    int64_t i;
    int bad = 0;
    for (i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        bad |= !hpdl__finite(g[i]);
    if (__syncthreads_or(bad) && threadIdx.x == 0) st->found_inf = 1;
}

/* GradScaler's update (mixed precision), by one thread: halve S and count a
   skipped step on overflow; double S after HPDL_CUDA_MLP_SCALE_GROWTH_INTERVAL
   clean steps; clear the flag. */
__device__ inline void hpdl__mlp_scaler_update(hpdl__mlp_state *st) {
    if (st->found_inf) {
        st->loss_scale *= 0.5f;
        st->good_steps = 0;
        st->skipped_steps++;
    } else if (++st->good_steps >= HPDL_CUDA_MLP_SCALE_GROWTH_INTERVAL) {
        st->loss_scale *= 2.0f;
        st->good_steps = 0;
    }
    st->found_inf = 0;
}

/* One parameter after an SGD step: weights also decay (L2), biases do not. */
template <typename Acc>
static __device__ __forceinline__ Acc hpdl__mlp_sgd_one(Acc p, Acc g, Acc lr, Acc l2, bool weight) {
    return p - (weight ? lr * (g + l2 * p) : lr * g);
}

/* The end of an SGD launch: the last block to finish (every block has read
   S and found_inf by then) runs the scaler update, or without mixed
   precision counts a skipped step as non-finite; both clear the flag. */
__device__ inline void hpdl__mlp_sgd_finish(hpdl__mlp_state *st, int amp) {
    __syncthreads();
    if (threadIdx.x == 0 && atomicAdd(&st->blocks_done, 1u) == gridDim.x - 1) {
        st->last_skipped = st->found_inf;
        if (amp) {
            hpdl__mlp_scaler_update(st);
        } else {
            st->nonfinite_steps += st->found_inf;
            st->found_inf = 0;
        }
        st->blocks_done = 0;
    }
}

/* SGD with L2 over all parameters: P = [weights (n_w) | biases];
       W -= lr (dW/S + l2 W),  b -= lr db/S
   S is the loss scale (mixed precision; else 1). First every block looks
   for a NaN or inf gradient; after a grid-wide barrier (a cooperative
   launch: every block resident) a raised found_inf skips the step (the
   parameters stay as they were). One kernel instead of a check kernel and
   an update kernel, whose extra launch cost ~5 us a step (10-19 % of an
   f32 epoch at batch 32; H200, bench/mlp, 2026-11-26). With mixed precision the f16
   weight copy cW is refreshed from the updated master; hpdl__mlp_sgd_finish
   ends it. Block 0 also advances the feed cursor. */
template <typename T, typename C>
__global__ void hpdl__mlp_sgd_kernel(int64_t n_w, int64_t n, T *P, C *cW, const C *G, hpdl__mlp_state *st,
                                     int amp, int batch) {
    typedef typename hpdl__acc<T>::type Acc;
    int64_t i;
    Acc lr = (Acc)st->lr, l2 = (Acc)st->l2, inv = amp ? (Acc)1 / (Acc)st->loss_scale : (Acc)1;
    hpdl__mlp_check_finite(n, G, st);
    cooperative_groups::this_grid().sync();
    if (blockIdx.x == 0 && threadIdx.x == 0) st->cursor += batch;
    if (!st->found_inf)
        for (i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
            Acc p = hpdl__mlp_sgd_one((Acc)P[i], (Acc)hpdl__ld(G[i]) * inv, lr, l2, i < n_w);
            P[i] = (T)p;
            if (cW && i < n_w) hpdl__st_to(cW + i, p);
        }
    hpdl__mlp_sgd_finish(st, amp);
}

/* ------------------------------------------------------------------------ */
/* Host helpers                                                             */
/* ------------------------------------------------------------------------ */

/* C = A.B in the compute type (the f16 products accumulate in f32). */
template <typename C>
static inline hpdl_status hpdl__mlp_gemm(hpdl_gemm_algo algo, hpdl_transpose ta, hpdl_transpose tb, int M, int N, int K,
                                         const C *A, int lda, const C *B, int ldb, C *Out, int ldc, cudaStream_t s) {
    return hpdl_cuda_gemm_algo(algo, ta, tb, M, N, K, 1, A, lda, B, ldb, 0, Out, ldc, s);
}

/* Element offsets rounded up to 64 elements keep every sub-buffer aligned to
   at least 128 bytes (vector loads in the GEMM kernels). */
HPDL_CUDA_API int64_t hpdl__mlp_align(int64_t n) { return (n + 63) / 64 * 64; }

/* One cached graph: the training step for one batch size and GEMM algorithm. */
typedef struct hpdl__mlp_graph {
    int batch;
    hpdl_gemm_algo algo;
    cudaGraphExec_t exec;
} hpdl__mlp_graph;

/* ------------------------------------------------------------------------ */
/* Data on the device                                                       */
/* ------------------------------------------------------------------------ */

/* Images (n x features, f32) and labels for training or evaluation. Resident:
   both live in device memory. Streamed: both live in pinned host memory; an
   epoch gathers shuffled chunks into two pinned staging buffers and copies
   them on copy_stream while the GPU trains on the other one. */
typedef struct hpdl_cuda_dataset {
    int64_t n;
    int features, n_classes; /* n_classes: largest label + 1 */
    int resident;
    float *images;           /* device (resident) or pinned host (streamed) */
    int32_t *labels;         /* likewise */
    int32_t *perm;           /* device permutation of [0, n) for one epoch */
    int64_t epoch;           /* epochs shuffled so far: keys the next permutation */
    /* streamed only */
    int64_t chunk_rows;
    int32_t *host_perm;
    float *stage_host[2], *stage_dev[2];
    int32_t *stage_host_labels[2], *stage_dev_labels[2];
    cudaStream_t copy_stream;
    cudaEvent_t copied[2], consumed[2];
} hpdl_cuda_dataset;

/* Placement of a data set: HPDL_DATA_AUTO keeps it on the device when it
   takes under half of the free device memory. */
typedef enum hpdl_data_placement { HPDL_DATA_AUTO = -1, HPDL_DATA_STREAMED = 0, HPDL_DATA_RESIDENT = 1 } hpdl_data_placement;

/* Frees what hpdl_cuda_dataset_upload or _create made (buffers, staging, events, the copy stream)
   and zeroes *d; NULL does nothing, and a zeroed struct is left as it is. */
HPDL_CUDA_API void hpdl_cuda_dataset_destroy(hpdl_cuda_dataset *d) {
    int k;
    if (!d) return;
    if (d->resident) {
        hpdl_cuda_free(d->images);
        hpdl_cuda_free(d->labels);
    } else {
        hpdl_cuda_free_pinned(d->images);
        hpdl_cuda_free_pinned(d->labels);
        for (k = 0; k < 2; k++) {
            hpdl_cuda_free_pinned(d->stage_host[k]);
            hpdl_cuda_free_pinned(d->stage_host_labels[k]);
            hpdl_cuda_free(d->stage_dev[k]);
            hpdl_cuda_free(d->stage_dev_labels[k]);
            if (d->copied[k]) cudaEventDestroy(d->copied[k]);
            if (d->consumed[k]) cudaEventDestroy(d->consumed[k]);
        }
        if (d->copy_stream) cudaStreamDestroy(d->copy_stream);
        HPDL_FREE(d->host_perm);
    }
    hpdl_cuda_free(d->perm);
    memset(d, 0, sizeof *d);
}

HPDL_CUDA_API hpdl_status hpdl__dataset_alloc_streamed(hpdl_cuda_dataset *d, size_t img_bytes, size_t lab_bytes) {
    size_t chunk_img = (size_t)d->chunk_rows * d->features * sizeof(float), chunk_lab = (size_t)d->chunk_rows * 4;
    int k;
    if (hpdl_cuda_alloc_pinned((void **)&d->images, img_bytes) || hpdl_cuda_alloc_pinned((void **)&d->labels, lab_bytes))
        return HPDL_ERR_NOMEM;
    d->host_perm = (int32_t *)hpdl_alloc((size_t)d->n, sizeof(int32_t));
    if (!d->host_perm) return HPDL_ERR_NOMEM;
    for (k = 0; k < 2; k++) {
        if (hpdl_cuda_alloc_pinned((void **)&d->stage_host[k], chunk_img) ||
            hpdl_cuda_alloc_pinned((void **)&d->stage_host_labels[k], chunk_lab) ||
            hpdl_cuda_alloc((void **)&d->stage_dev[k], chunk_img) ||
            hpdl_cuda_alloc((void **)&d->stage_dev_labels[k], chunk_lab))
            return HPDL_ERR_NOMEM;
        HPDL_CUDA_TRY(cudaEventCreateWithFlags(&d->copied[k], cudaEventDisableTiming));
        HPDL_CUDA_TRY(cudaEventCreateWithFlags(&d->consumed[k], cudaEventDisableTiming));
    }
    HPDL_CUDA_TRY(cudaStreamCreateWithFlags(&d->copy_stream, cudaStreamNonBlocking));
    return HPDL_OK;
}

/* Copies n_images images of `features` floats and n_labels labels (host
   memory) into a device data set. chunk_rows: rows per streamed chunk (0: a
   default); placement: HPDL_DATA_AUTO / _RESIDENT / _STREAMED. Mismatched
   counts, labels < 0 and non-positive sizes are HPDL_ERR_INVALID. */
HPDL_CUDA_API hpdl_status hpdl_cuda_dataset_upload(hpdl_cuda_dataset *d, int64_t n_images, int features,
                                              const float *images, int64_t n_labels, const int32_t *labels,
                                              hpdl_data_placement placement, int64_t chunk_rows) {
    size_t img_bytes, lab_bytes, free_b = 0, total_b = 0;
    int64_t i;
    int max_label = -1;
    hpdl_status s;
    if (!d || !images || !labels || n_images <= 0 || features <= 0 || n_images != n_labels ||
        n_images > INT32_MAX || chunk_rows < 0)
        return HPDL_ERR_INVALID;
    for (i = 0; i < n_labels; i++) {
        if (labels[i] < 0) return HPDL_ERR_INVALID;
        if (labels[i] > max_label) max_label = labels[i];
    }
    memset(d, 0, sizeof *d);
    d->n = n_images;
    d->features = features;
    d->n_classes = max_label + 1;
    img_bytes = (size_t)n_images * features * sizeof(float);
    lab_bytes = (size_t)n_images * sizeof(int32_t);
    HPDL_CUDA_TRY(cudaMemGetInfo(&free_b, &total_b));
    d->resident = placement == HPDL_DATA_AUTO ? img_bytes + lab_bytes < free_b / 2 : placement == HPDL_DATA_RESIDENT;
    d->chunk_rows = chunk_rows ? chunk_rows : 8192;
    if (d->chunk_rows > n_images) d->chunk_rows = n_images;
    if (hpdl_cuda_alloc((void **)&d->perm, lab_bytes)) s = HPDL_ERR_NOMEM;
    else if (d->resident)
        s = hpdl_cuda_alloc((void **)&d->images, img_bytes) || hpdl_cuda_alloc((void **)&d->labels, lab_bytes)
                ? HPDL_ERR_NOMEM : HPDL_OK;
    else
        s = hpdl__dataset_alloc_streamed(d, img_bytes, lab_bytes);
    if (s != HPDL_OK) { hpdl_cuda_dataset_destroy(d); return s; }
    HPDL_NVTX_PUSH("dataset upload");
    if (d->resident) {
        if (cudaMemcpy(d->images, images, img_bytes, cudaMemcpyHostToDevice) != cudaSuccess ||
            cudaMemcpy(d->labels, labels, lab_bytes, cudaMemcpyHostToDevice) != cudaSuccess)
            s = HPDL_ERR_CUDA;
    } else {
        memcpy(d->images, images, img_bytes);
        memcpy(d->labels, labels, lab_bytes);
    }
    HPDL_NVTX_POP();
    if (s != HPDL_OK) hpdl_cuda_dataset_destroy(d);
    return s;
}

/* The same from a loaded hpdl_dataset (features = channels x rows x cols). */
HPDL_CUDA_API hpdl_status hpdl_cuda_dataset_create(hpdl_cuda_dataset *d, const hpdl_dataset *src,
                                              hpdl_data_placement placement) {
    int64_t features = hpdl_dataset_features(src);
    if (!src || features > INT_MAX) return HPDL_ERR_INVALID;
    return hpdl_cuda_dataset_upload(d, src->n, (int)features, src->images, src->n, src->labels, placement, 0);
}

/* Draws the next epoch's permutation into d->perm (device), and into
   d->host_perm for a streamed set. */
HPDL_CUDA_API hpdl_status hpdl_cuda_dataset_shuffle(hpdl_cuda_dataset *d, uint64_t seed, cudaStream_t stream) {
    uint64_t key;
    int64_t i;
    if (!d || !d->perm) return HPDL_ERR_INVALID;
    key = hpdl__shuffle_key(seed, d->epoch++);
    HPDL_NVTX_PUSH("shuffle");
    hpdl__shuffle_kernel<<<(unsigned)((d->n + 255) / 256), 256, 0, stream>>>(d->n, key, d->perm);
    if (!d->resident)
        for (i = 0; i < d->n; i++) d->host_perm[i] = hpdl__shuffle_index(i, d->n, key);
    HPDL_NVTX_POP();
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* Streamed set: puts rows [r0, r1) of the epoch (shuffled order when
   shuffled, else file order) in staging buffer k on copy_stream, after the
   compute stream has finished with that buffer; the compute stream then
   waits for the copy. */
HPDL_CUDA_API hpdl_status hpdl__dataset_stage(hpdl_cuda_dataset *d, int k, int64_t r0, int64_t r1, int shuffled,
                                         cudaStream_t compute) {
    int64_t i, rows = r1 - r0;
    size_t row_bytes = (size_t)d->features * sizeof(float);
    HPDL_NVTX_PUSH("data copy");
    HPDL_CUDA_TRY(cudaEventSynchronize(d->copied[k])); /* the previous copy out of this pinned buffer */
    for (i = 0; i < rows; i++) {
        int64_t src = shuffled ? d->host_perm[r0 + i] : r0 + i;
        memcpy(d->stage_host[k] + i * d->features, d->images + src * d->features, row_bytes);
        d->stage_host_labels[k][i] = d->labels[src];
    }
    HPDL_CUDA_TRY(cudaStreamWaitEvent(d->copy_stream, d->consumed[k], 0));
    HPDL_CUDA_TRY(cudaMemcpyAsync(d->stage_dev[k], d->stage_host[k], (size_t)rows * row_bytes,
                                  cudaMemcpyHostToDevice, d->copy_stream));
    HPDL_CUDA_TRY(cudaMemcpyAsync(d->stage_dev_labels[k], d->stage_host_labels[k], (size_t)rows * 4,
                                  cudaMemcpyHostToDevice, d->copy_stream));
    HPDL_CUDA_TRY(cudaEventRecord(d->copied[k], d->copy_stream));
    HPDL_CUDA_TRY(cudaStreamWaitEvent(compute, d->copied[k], 0));
    HPDL_NVTX_POP();
    return HPDL_OK;
}

/* ------------------------------------------------------------------------ */
/* NVML utilisation sampler (libnvidia-ml loaded at run time)               */
/* ------------------------------------------------------------------------ */

/* NVML's own header is not needed: the few entry points are declared here and
   looked up with dlsym, so programs build without the NVML development files
   and run (reporting HPDL_ERR_UNSUPPORTED) without the driver library. */
typedef struct hpdl__nvml_utilization { unsigned int gpu, memory; } hpdl__nvml_utilization;
typedef struct hpdl__nvml_memory { unsigned long long total, free, used; } hpdl__nvml_memory;
typedef int (*hpdl__nvml_init_fn)(void);
typedef int (*hpdl__nvml_handle_fn)(const char *pci_bus_id, void **device);
typedef int (*hpdl__nvml_util_fn)(void *device, hpdl__nvml_utilization *u);
typedef int (*hpdl__nvml_mem_fn)(void *device, hpdl__nvml_memory *m);
typedef int (*hpdl__nvml_clock_fn)(void *device, int clock_type, unsigned int *mhz);
typedef int (*hpdl__nvml_power_fn)(void *device, unsigned int *milliwatts);
typedef int (*hpdl__nvml_reasons_fn)(void *device, unsigned long long *reasons);
enum {
    HPDL__NVML_CLOCK_SM = 1,
    /* clock-slowdown reasons that mean "at the power limit": software power
       cap, hardware power brake */
    HPDL__NVML_POWER_REASONS = 0x4 | 0x80
};

/* What a sampler saw, averaged over its samples. */
typedef struct hpdl_nvml_stats {
    double gpu_util, mem_util; /* percent of the time a kernel / the memory controller was busy */
    double sm_clock_mhz;       /* SM clock */
    double power_w;            /* board power draw */
    double power_capped;       /* fraction of samples with clocks held down by the power limit */
    int64_t samples;
} hpdl_nvml_stats;

/* A thread that reads NVML every period_ms, summing what it reads and writing it to an optional CSV
   (hpdl_nvml_sampler_start, then hpdl_nvml_sampler_finish or _stop). */
typedef struct hpdl_nvml_sampler {
    void *lib, *device;
    hpdl__nvml_init_fn shutdown;
    hpdl__nvml_util_fn get_util;
    hpdl__nvml_mem_fn get_mem;
    hpdl__nvml_clock_fn get_clock;     /* these three may be missing (old drivers): then 0 */
    hpdl__nvml_power_fn get_power;
    hpdl__nvml_reasons_fn get_reasons;
    FILE *csv; /* time series: t_s,gpu_util_pct,mem_util_pct,mem_used_mib,sm_clock_mhz,power_w,power_capped */
    int period_ms;
    volatile int stop;
    pthread_t thread;
    double t0;
    hpdl_nvml_stats sum;
} hpdl_nvml_sampler;

HPDL_CUDA_API void *hpdl__nvml_thread(void *arg) {
    hpdl_nvml_sampler *s = (hpdl_nvml_sampler *)arg;
    struct timespec nap;
    nap.tv_sec = s->period_ms / 1000;
    nap.tv_nsec = (long)(s->period_ms % 1000) * 1000000L;
    while (!s->stop) {
        hpdl__nvml_utilization u;
        hpdl__nvml_memory m;
        unsigned int mhz = 0, mw = 0;
        unsigned long long reasons = 0;
        if (s->get_util(s->device, &u) == 0) {
            int capped;
            memset(&m, 0, sizeof m);
            if (s->get_mem) s->get_mem(s->device, &m);
            if (s->get_clock) s->get_clock(s->device, HPDL__NVML_CLOCK_SM, &mhz);
            if (s->get_power) s->get_power(s->device, &mw);
            if (s->get_reasons) s->get_reasons(s->device, &reasons);
            capped = (reasons & HPDL__NVML_POWER_REASONS) != 0;
            s->sum.gpu_util += u.gpu;
            s->sum.mem_util += u.memory;
            s->sum.sm_clock_mhz += mhz;
            s->sum.power_w += mw / 1000.0;
            s->sum.power_capped += capped;
            s->sum.samples++;
            if (s->csv)
                fprintf(s->csv, "%.3f,%u,%u,%.1f,%u,%.1f,%d\n", hpdl_time_now() - s->t0, u.gpu, u.memory, m.used / 1048576.0,
                        mhz, mw / 1000.0, capped);
        }
        nanosleep(&nap, NULL);
    }
    return NULL;
}

/* Starts sampling CUDA device `device` every period_ms: GPU and memory-
   controller utilisation, SM clock, power draw, power-limit throttling;
   into csv_path (NULL: averages only; its folder made when missing, the
   run's context beside it as for every CSV: hpdl_csv_set_context). Returns
   HPDL_ERR_UNSUPPORTED when libnvidia-ml.so.1 or the device is not found. */
HPDL_CUDA_API hpdl_status hpdl_nvml_sampler_start(hpdl_nvml_sampler *s, int device, int period_ms, const char *csv_path) {
    char bus[64];
    hpdl__nvml_init_fn init;
    hpdl__nvml_handle_fn by_bus;
    if (!s || period_ms <= 0) return HPDL_ERR_INVALID;
    memset(s, 0, sizeof *s);
    if (cudaDeviceGetPCIBusId(bus, (int)sizeof bus, device) != cudaSuccess) { cudaGetLastError(); return HPDL_ERR_INVALID; }
    s->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!s->lib) return HPDL_ERR_UNSUPPORTED;
    init = (hpdl__nvml_init_fn)dlsym(s->lib, "nvmlInit_v2");
    s->shutdown = (hpdl__nvml_init_fn)dlsym(s->lib, "nvmlShutdown");
    by_bus = (hpdl__nvml_handle_fn)dlsym(s->lib, "nvmlDeviceGetHandleByPciBusId_v2");
    s->get_util = (hpdl__nvml_util_fn)dlsym(s->lib, "nvmlDeviceGetUtilizationRates");
    s->get_mem = (hpdl__nvml_mem_fn)dlsym(s->lib, "nvmlDeviceGetMemoryInfo");
    s->get_clock = (hpdl__nvml_clock_fn)dlsym(s->lib, "nvmlDeviceGetClockInfo");
    s->get_power = (hpdl__nvml_power_fn)dlsym(s->lib, "nvmlDeviceGetPowerUsage");
    s->get_reasons = (hpdl__nvml_reasons_fn)dlsym(s->lib, "nvmlDeviceGetCurrentClocksEventReasons");
    if (!s->get_reasons) /* its name before driver 535 */
        s->get_reasons = (hpdl__nvml_reasons_fn)dlsym(s->lib, "nvmlDeviceGetCurrentClocksThrottleReasons");
    if (!init || !s->shutdown || !by_bus || !s->get_util || init() != 0) { dlclose(s->lib); s->lib = NULL; return HPDL_ERR_UNSUPPORTED; }
    if (by_bus(bus, &s->device) != 0) { s->shutdown(); dlclose(s->lib); s->lib = NULL; return HPDL_ERR_UNSUPPORTED; }
    if (csv_path) {
        hpdl__make_parent_dirs(csv_path);
        s->csv = fopen(csv_path, "w");
        if (!s->csv) { s->shutdown(); dlclose(s->lib); s->lib = NULL; return HPDL_ERR_IO; }
        fprintf(s->csv, "t_s,gpu_util_pct,mem_util_pct,mem_used_mib,sm_clock_mhz,power_w,power_capped\n");
        hpdl__csv_write_context(csv_path);
    }
    s->period_ms = period_ms;
    s->t0 = hpdl_time_now();
    if (pthread_create(&s->thread, NULL, hpdl__nvml_thread, s) != 0) {
        if (s->csv) fclose(s->csv);
        s->shutdown(); dlclose(s->lib); s->lib = NULL;
        return HPDL_ERR_UNSUPPORTED;
    }
    return HPDL_OK;
}

/* Stops the sampler; writes what it saw, averaged, when asked. */
HPDL_CUDA_API void hpdl_nvml_sampler_finish(hpdl_nvml_sampler *s, hpdl_nvml_stats *out) {
    double n;
    if (!s || !s->lib) return;
    s->stop = 1;
    pthread_join(s->thread, NULL);
    n = s->sum.samples > 0 ? (double)s->sum.samples : 1.0;
    if (out) {
        out->gpu_util = s->sum.gpu_util / n;
        out->mem_util = s->sum.mem_util / n;
        out->sm_clock_mhz = s->sum.sm_clock_mhz / n;
        out->power_w = s->sum.power_w / n;
        out->power_capped = s->sum.power_capped / n;
        out->samples = s->sum.samples;
    }
    if (s->csv) fclose(s->csv);
    s->shutdown();
    dlclose(s->lib);
    memset(s, 0, sizeof *s);
}

/* Stops the sampler; writes the mean utilisations (percent) when asked. */
HPDL_CUDA_API void hpdl_nvml_sampler_stop(hpdl_nvml_sampler *s, double *mean_gpu, double *mean_mem, int64_t *samples) {
    hpdl_nvml_stats st;
    memset(&st, 0, sizeof st);
    hpdl_nvml_sampler_finish(s, &st);
    if (mean_gpu) *mean_gpu = st.gpu_util;
    if (mean_mem) *mean_mem = st.mem_util;
    if (samples) *samples = st.samples;
}

/* ------------------------------------------------------------------------ */
/* The GPU MLP                                                              */
/* ------------------------------------------------------------------------ */

/* Fields shared by every precision; T is the master (parameter) type, CT the
   type of the matrix products' operands (T itself, or hpdl_f16). */
#define HPDL__CUDA_MLP_FIELDS(T, CT)                                                          \
    int n_layers, widths[HPDL_MLP_MAX_LAYERS + 1];                                            \
    hpdl_activation act;                                                                      \
    int max_batch;                                                                            \
    int amp;          /* 1: 16-bit products, f32 master weights, loss scaling */             \
    int use_graphs;   /* 1 (default): capture each batch size's step once, replay it */      \
    hpdl_gemm_algo algo; /* GEMM rung for every product (default: see create) */             \
    cudaStream_t stream;                                                                      \
    int64_t n_weights, n_params;  /* params = [W0..W(L-1) | b0..b(L-1)], padded */           \
    T *params, *W[HPDL_MLP_MAX_LAYERS], *b[HPDL_MLP_MAX_LAYERS];                              \
    CT *cparams, *cW[HPDL_MLP_MAX_LAYERS];  /* product copy of W (aliases W unless amp) */   \
    CT *grads, *dW[HPDL_MLP_MAX_LAYERS], *db[HPDL_MLP_MAX_LAYERS];                            \
    CT *acts;         /* A[0] input batch, A[l] hidden outputs, A[L] logits before bias */   \
    CT *A[HPDL_MLP_MAX_LAYERS + 1], *D[HPDL_MLP_MAX_LAYERS]; /* D[l]: dLoss/dZ of layer l */ \
    int32_t *batch_labels;                                                                    \
    hpdl__mlp_state *state;                                                                   \
    void *colsum;     /* column sums' runs, then their counts (hpdl__cmlp_colsum) */         \
    hpdl__mlp_graph graphs[HPDL_CUDA_MLP_GRAPHS];                                             \
    int next_graph

/* Each model type's types and passes (hpdl__cmlp_plain), one per model
   type: HPDL_DEFINE_CUDA_MLP, and the FP8 model in section FP8. */
template <typename M> struct hpdl__cmlp_types;

enum { HPDL__COLSUM_RUNS = 16, HPDL__COLSUM_SPACE_RUNS = 64 };
/* The column sums' workspace: HPDL__COLSUM_SPACE_RUNS runs of the widest
   layer's sums (8 bytes each: f64 too), then a count per group of 32
   columns. The column-sum kernel takes up to HPDL__COLSUM_RUNS runs
   (hpdl__cmlp_colsum), the short-K kernel's backward epilogue up to all
   of them (hpdl__cmlp_delta_fused). */
template <typename M> static inline size_t hpdl__colsum_widest(const M *g) {
    int l, w = 0;
    for (l = 1; l <= g->n_layers; l++) w = g->widths[l] > w ? g->widths[l] : w;
    return (size_t)w;
}
template <typename M> static inline size_t hpdl__colsum_parts(const M *g) {
    return (size_t)HPDL__COLSUM_SPACE_RUNS * hpdl__colsum_widest(g) * (8 / sizeof(float)); /* in floats: f64 takes two */
}
template <typename M> static inline size_t hpdl__colsum_bytes(const M *g) {
    return hpdl__colsum_parts(g) * sizeof(float) + (hpdl__colsum_widest(g) + 31) / 32 * sizeof(unsigned);
}

/* Lays out parameters, gradients and activations; offsets in elements. */
template <typename M>
static inline void hpdl__cmlp_layout(M *g, int64_t *off_w, int64_t *off_b, int64_t *off_a, int64_t *off_d,
                                     int64_t *n_acts) {
    int l, L = g->n_layers;
    int64_t o = 0;
    for (l = 0; l < L; l++) { off_w[l] = o; o += hpdl__mlp_align((int64_t)g->widths[l] * g->widths[l + 1]); }
    g->n_weights = o;
    for (l = 0; l < L; l++) { off_b[l] = o; o += hpdl__mlp_align(g->widths[l + 1]); }
    g->n_params = o;
    o = 0;
    for (l = 0; l <= L; l++) { off_a[l] = o; o += hpdl__mlp_align((int64_t)g->max_batch * g->widths[l]); }
    for (l = 0; l < L; l++) { off_d[l] = o; o += hpdl__mlp_align((int64_t)g->max_batch * g->widths[l + 1]); }
    *n_acts = o;
}

template <typename M> static inline void hpdl__cmlp_destroy(M *g) {
    int k;
    if (!g) return;
    hpdl__cmlp_types<M>::passes::destroy(g);
    for (k = 0; k < HPDL_CUDA_MLP_GRAPHS; k++)
        if (g->graphs[k].exec) cudaGraphExecDestroy(g->graphs[k].exec);
    hpdl_cuda_free(g->params);
    if (g->amp) hpdl_cuda_free(g->cparams);
    hpdl_cuda_free(g->grads);
    hpdl_cuda_free(g->acts);
    hpdl_cuda_free(g->batch_labels);
    hpdl_cuda_free(g->state);
    hpdl_cuda_free(g->colsum);
    if (g->stream) hpdl__stream_destroy(g->stream);
    memset(g, 0, sizeof *g);
}

/* Allocates everything (zeroed: padding stays finite for the inf check). */
template <typename T, typename CT, typename M> static inline hpdl_status hpdl__cmlp_alloc(M *g) {
    /* zeroed: gcc -O3 cannot see that the layout fills every entry the loops below read */
    int64_t off_w[HPDL_MLP_MAX_LAYERS] = {0}, off_b[HPDL_MLP_MAX_LAYERS] = {0}, off_a[HPDL_MLP_MAX_LAYERS + 1] = {0},
            off_d[HPDL_MLP_MAX_LAYERS] = {0}, n_acts;
    int l;
    hpdl__cmlp_layout(g, off_w, off_b, off_a, off_d, &n_acts);
    if (hpdl_cuda_alloc((void **)&g->params, (size_t)g->n_params * sizeof(T)) ||
        (g->amp && hpdl_cuda_alloc((void **)&g->cparams, (size_t)g->n_weights * sizeof(CT))) ||
        hpdl_cuda_alloc((void **)&g->grads, (size_t)g->n_params * sizeof(CT)) ||
        hpdl_cuda_alloc((void **)&g->acts, (size_t)n_acts * sizeof(CT)) ||
        hpdl_cuda_alloc((void **)&g->batch_labels, (size_t)g->max_batch * sizeof(int32_t)) ||
        hpdl_cuda_alloc((void **)&g->state, sizeof(hpdl__mlp_state)) ||
        hpdl_cuda_alloc(&g->colsum, hpdl__colsum_bytes(g)))
        return HPDL_ERR_NOMEM;
    HPDL_CUDA_TRY(cudaMemset(g->colsum, 0, hpdl__colsum_bytes(g)));
    if (!g->amp) g->cparams = (CT *)(void *)g->params;
    HPDL_CUDA_TRY(cudaMemset(g->params, 0, (size_t)g->n_params * sizeof(T)));
    HPDL_CUDA_TRY(cudaMemset(g->grads, 0, (size_t)g->n_params * sizeof(CT)));
    HPDL_CUDA_TRY(cudaMemset(g->state, 0, sizeof(hpdl__mlp_state)));
    for (l = 0; l < g->n_layers; l++) {
        g->W[l] = g->params + off_w[l];
        g->b[l] = g->params + off_b[l];
        g->cW[l] = g->cparams + off_w[l];
        g->dW[l] = g->grads + off_w[l];
        g->db[l] = g->grads + off_b[l];
        g->D[l] = g->acts + off_d[l];
    }
    for (l = 0; l <= g->n_layers; l++) g->A[l] = g->acts + off_a[l];
    HPDL_CUDA_TRY(cudaStreamCreate(&g->stream)); /* blocking: ordered after legacy-stream work */
    hpdl__mlp_scaler_init_kernel<<<1, 1, 0, g->stream>>>(g->state, g->amp ? HPDL_CUDA_MLP_SCALE_INIT : 1.0f);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

template <typename M, typename CPU> static inline int hpdl__cmlp_same_shape(const M *g, const CPU *m) {
    int l;
    if (g->n_layers != m->n_layers || g->act != m->act) return 0;
    for (l = 0; l <= g->n_layers; l++)
        if (g->widths[l] != m->widths[l]) return 0;
    for (l = 0; l < g->n_layers; l++)
        if (!m->W[l] || !m->b[l]) return 0;
    return 1;
}

/* Copies the CPU model's weights to the device (and into the f16 copy). */
template <typename T, typename C, typename M, typename CPU> static inline hpdl_status hpdl__cmlp_upload(M *g, const CPU *m) {
    int l;
    if (!g || !m || !g->params || !hpdl__cmlp_same_shape(g, m)) return HPDL_ERR_INVALID;
    for (l = 0; l < g->n_layers; l++) {
        HPDL_CUDA_TRY(cudaMemcpyAsync(g->W[l], m->W[l], sizeof(T) * g->widths[l] * g->widths[l + 1],
                                      cudaMemcpyHostToDevice, g->stream));
        HPDL_CUDA_TRY(cudaMemcpyAsync(g->b[l], m->b[l], sizeof(T) * g->widths[l + 1], cudaMemcpyHostToDevice, g->stream));
    }
    if (g->amp) {
        hpdl__convert_kernel<C, T><<<hpdl__grid_for(g->n_weights, 256), 256, 0, g->stream>>>(
            g->n_weights, g->params, (C *)(void *)g->cparams);
        HPDL_CUDA_TRY_LAUNCH();
    }
    HPDL_CUDA_TRY(cudaStreamSynchronize(g->stream));
    return HPDL_OK;
}

/* Copies the (master) weights back into a CPU model of the same shape. */
template <typename T, typename M, typename CPU> static inline hpdl_status hpdl__cmlp_download(const M *g, CPU *m) {
    int l;
    if (!g || !m || !g->params || !hpdl__cmlp_same_shape(g, m)) return HPDL_ERR_INVALID;
    HPDL_CUDA_TRY(cudaStreamSynchronize(g->stream));
    for (l = 0; l < g->n_layers; l++) {
        HPDL_CUDA_TRY(cudaMemcpy(m->W[l], g->W[l], sizeof(T) * g->widths[l] * g->widths[l + 1], cudaMemcpyDeviceToHost));
        HPDL_CUDA_TRY(cudaMemcpy(m->b[l], g->b[l], sizeof(T) * g->widths[l + 1], cudaMemcpyDeviceToHost));
    }
    return HPDL_OK;
}

/* A GPU model with the CPU model's shape and weights; room for batches of up
   to max_batch rows. */
template <typename T, typename C, typename CT, typename M, typename CPU>
static inline hpdl_status hpdl__cmlp_create(M *g, const CPU *m, int max_batch) {
    hpdl_status s;
    int l;
    if (!g || !m || max_batch <= 0 || !hpdl__mlp_widths_ok(m->n_layers + 1, m->widths) || !hpdl__activation_ok(m->act))
        return HPDL_ERR_INVALID;
    for (l = 0; l < m->n_layers; l++)
        if (!m->W[l] || !m->b[l]) return HPDL_ERR_INVALID;
    memset(g, 0, sizeof *g);
    g->n_layers = m->n_layers;
    for (l = 0; l <= m->n_layers; l++) g->widths[l] = m->widths[l];
    g->act = m->act;
    g->max_batch = max_batch;
    g->amp = hpdl__is_half<C>::value;
    g->use_graphs = 1;
    /* The products here are small or skinny (a batch of 32 against
       784x512): hpdl's own kernels by default (AUTO), which at f36bfea ran
       every epoch of bench/mlp on one H200 faster than the same model on
       cuBLAS (f32 0.85-0.95 of its time, f16 0.87-0.97; notes/mlp.md). Only
       H100 and H200 were measured. Any rung, cuBLAS too, can be set in
       g->algo. */
    g->algo = HPDL_GEMM_AUTO;
    s = hpdl__cmlp_alloc<T, CT>(g);
    if (s == HPDL_OK) s = hpdl__cmlp_upload<T, C>(g, m);
    if (s == HPDL_OK) s = hpdl__cmlp_types<M>::passes::create(g);
    if (s != HPDL_OK) hpdl__cmlp_destroy(g);
    return s;
}

/* A[l+1] = act(A[l+1] + b[l]) in place, after hidden layer l's GEMM. */
template <typename C, typename M> static inline hpdl_status hpdl__cmlp_bias_act(M *g, int batch, int l) {
    const int n = g->widths[l + 1];
    hpdl__mlp_bias_act_kernel<<<hpdl__grid_for((int64_t)batch * n, 256), 256, 0, g->stream>>>(
        batch, n, (C *)g->A[l + 1], g->b[l], g->act);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* Out = relu(A W + bias) (row-major: A M x K, W K x N, no transposes) in
   one kernel, where AUTO takes the one-tile Hopper rung or the thin kernel
   for 16-bit elements: the MLP's first layer from batch 32 to 512, and at
   3000 with 512 hidden units. Those kernels are built a second time for it
   (POST): the bias is where the accumulators start (loaded while the first
   tiles of A and W arrive), ReLU is applied as C is written. With the bias
   added after the product instead, in the TMA store, the one-tile rung
   took 13.3 us for 3000 x 512 x 784 against 9.2 without (H100, ncu).
   HPDL_ERR_UNSUPPORTED elsewhere (other types, rungs and activations, and
   C whose rows the TMA store cannot take): the caller runs the product,
   then hpdl__mlp_bias_act_kernel. */
template <typename T, int SIXTEEN = sizeof(T) == 2> struct hpdl__gemm_bias_act {
    static hpdl_status run(int M, int N, int K, const T *A, const T *W, const float *bias, hpdl_activation act, T *Out,
                           cudaStream_t stream) {
        hpdl__gemm_args<T, float> g;
        int sms = 0;
        if (!bias) return HPDL_ERR_INVALID;
        if (act != HPDL_ACT_RELU || M == 0 || N == 0 || K == 0 || hpdl__gemm_auto_splitk(M, N, K, 2) ||
            hpdl__sm_count(&sms) != HPDL_OK ||
            hpdl__gemm_auto_hopper(M, N, K, 1, sms) != (int)HPDL_GEMM_WGMMA)
            return HPDL_ERR_UNSUPPORTED;
        hpdl__wg_launch l = hpdl__wg_rung<T, false, true>(HPDL_GEMM_WGMMA);
        l.kernel = (const void *)hpdl__gemm_wgmma<T, false, true, true>; /* A K-major, W MN-major, the epilogue built in */
        g = hpdl__gemm_make_args(HPDL_NO_TRANS, HPDL_NO_TRANS, M, N, K, 1.0f, A, K, W, N, 0.0f, Out, N, 8);
        g.bias = bias;
        g.relu = 1;
        return hpdl__gemm_wgmma_split<T, true>(l, g, stream);
    }
};
template <typename T> struct hpdl__gemm_bias_act<T, 0> {
    static hpdl_status run(int, int, int, const T *, const T *, const typename hpdl__acc<T>::type *, hpdl_activation, T *,
                           cudaStream_t) {
        return HPDL_ERR_UNSUPPORTED;
    }
};

/* Forward from A[0] (batch rows): hidden layers get bias + activation in
   their GEMM's epilogue on AUTO where hpdl__gemm_bias_act takes the
   product, else in one pass after it; the last layer's bias is left to the
   loss kernel. */
template <typename C, typename M> static inline hpdl_status hpdl__cmlp_forward(M *g, int batch) {
    int l, L = g->n_layers;
    hpdl_status s;
    for (l = 0; l < L; l++) {
        int k = g->widths[l], n = g->widths[l + 1];
        s = l < L - 1 && g->algo == HPDL_GEMM_AUTO
                ? hpdl__gemm_bias_act<C>::run(batch, n, k, (const C *)g->A[l], (const C *)g->cW[l], g->b[l], g->act,
                                              (C *)g->A[l + 1], g->stream)
                : HPDL_ERR_UNSUPPORTED;
        if (s == HPDL_ERR_UNSUPPORTED) {
            s = hpdl__mlp_gemm(g->algo, HPDL_NO_TRANS, HPDL_NO_TRANS, batch, n, k, (const C *)g->A[l], k,
                               (const C *)g->cW[l], n, (C *)g->A[l + 1], n, g->stream);
            if (s == HPDL_OK && l < L - 1) s = hpdl__cmlp_bias_act<C>(g, batch, l);
        }
        if (s != HPDL_OK) return s;
    }
    return HPDL_OK;
}

/* Whether one block of the loss kernel gives the last layer's bias gradient
   (at most 2 rows a warp). One block's warps walking 4+ rows each cost
   more than the launch they saved (H100: batch 128 and 512 epochs were 7%
   and 23% slower, batch 32 1.5% faster), so larger batches run a block per
   8 rows, which add their sums at the end (hpdl__cmlp_xent_blocks). */
HPDL_CUDA_API int hpdl__mlp_xent_fuses_db(int batch, int classes) {
    return batch <= 2 * (HPDL__XENT_MAX_THREADS / 32) && classes <= HPDL__XENT_DB_MAX_COLS;
}

/* The loss kernel's blocks for a batch, and whether it also gives the last
   layer's bias gradient (fuse; train only, at most HPDL__XENT_DB_MAX_COLS
   classes): one block for batches up to 32 rows; else a block per 8 rows,
   which, with the model's column-sum workspace, fuse too, as many as its
   runs hold sums for. Otherwise the column-sum kernel gives db
   (hpdl__cmlp_output_db). */
template <typename M> static inline int hpdl__cmlp_xent_blocks(const M *g, int batch, int train, int *fuse) {
    const int classes = g->widths[g->n_layers], blocks = (batch + 7) / 8;
    const int most = (int)(hpdl__colsum_parts(g) * sizeof(float) / sizeof(double) / (size_t)classes);
    *fuse = train && hpdl__mlp_xent_fuses_db(batch, classes);
    if (*fuse) return 1;
    *fuse = train && g->colsum && classes <= HPDL__XENT_DB_MAX_COLS;
    return *fuse && blocks > most ? most : blocks;
}

/* Loss kernel over the logits A[L] + b[L-1]: gradient into D[L-1] (scaled
   by 1/batch, and by S under mixed precision) when train, else only the
   evaluation sums. */
template <typename C, typename M> static inline hpdl_status hpdl__cmlp_loss(M *g, int batch, int train) {
    int L = g->n_layers, classes = g->widths[L], fuse, blocks = hpdl__cmlp_xent_blocks(g, batch, train, &fuse);
    hpdl__mlp_state *st = g->state;
    int warps = HPDL__XENT_MAX_THREADS / 32;
    int threads = fuse && blocks == 1 ? 32 * (batch < warps ? batch : warps) : 256;
    float *parts = fuse && blocks > 1 ? (float *)g->colsum : (float *)NULL; /* the blocks' sums, then their count */
    hpdl__mlp_xent_kernel<<<blocks, threads, 0, g->stream>>>(
        batch, classes, (const C *)g->A[L], classes, g->b[L - 1], g->batch_labels, train ? (C *)g->D[L - 1] : (C *)NULL,
        classes, 1.0 / batch, g->amp ? &st->loss_scale : (const float *)NULL, 1.0,
        train ? &st->loss_sum : &st->eval_loss_sum, train ? &st->correct : &st->eval_correct,
        fuse ? (C *)g->db[L - 1] : (C *)NULL, (void *)parts,
        parts ? (unsigned *)(parts + hpdl__colsum_parts(g)) : (unsigned *)NULL);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* Launches hpdl__mlp_delta_colsum_kernel on the model's stream: runs of at
   least 256 rows, at most HPDL__COLSUM_RUNS (one run without the model's
   workspace for them). */
template <typename C, typename M>
static inline hpdl_status hpdl__cmlp_colsum(M *g, int rows, int cols, C *D, const C *A, C *db) {
    typedef typename hpdl__acc<C>::type Acc;
    float *parts = (float *)g->colsum;
    int runs = parts ? (rows + 255) / 256 : 1;
    if (runs > HPDL__COLSUM_RUNS) runs = HPDL__COLSUM_RUNS;
    hpdl__mlp_delta_colsum_kernel<<<dim3((unsigned)(cols + 31) / 32, (unsigned)runs), dim3(32, 32), 0, g->stream>>>(
        rows, cols, D, A, g->act, db, (Acc *)parts, parts ? (unsigned *)(parts + hpdl__colsum_parts(g)) : NULL);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* The output layer's bias gradient, unless the loss kernel gave it: the
   column sums of D[L-1]. First step of the backward pass. */
template <typename C, typename M> static inline hpdl_status hpdl__cmlp_output_db(M *g, int batch) {
    int L = g->n_layers, fuse;
    hpdl__cmlp_xent_blocks(g, batch, 1, &fuse);
    if (fuse) return HPDL_OK;
    return hpdl__cmlp_colsum<C>(g, batch, g->widths[L], (C *)g->D[L - 1], (const C *)NULL, (C *)g->db[L - 1]);
}

/* Backward at layer l (top down, after hpdl__cmlp_output_db), in two steps
   so the data-parallel driver can hand each piece of dW[l] to its reduction
   as soon as it is queued: rows r0..r1 of dW[l] = A[l]^T D[l] ... */
template <typename C, typename M>
static inline hpdl_status hpdl__cmlp_backward_dw(M *g, int batch, int l, int r0, int r1) {
    int k = g->widths[l], n = g->widths[l + 1];
    if (r1 <= r0) return HPDL_OK;
    return hpdl__mlp_gemm(g->algo, HPDL_TRANS, HPDL_NO_TRANS, r1 - r0, n, batch, (const C *)g->A[l] + r0, k,
                          (const C *)g->D[l], n, (C *)g->dW[l] + (size_t)r0 * n, n, g->stream);
}

/* D[l-1] (holding dA, the gradient of A[l]) times act'(A[l]) in place,
   fused with the column sums that give db[l-1]. */
template <typename C, typename M> static inline hpdl_status hpdl__cmlp_delta_mask(M *g, int batch, int l) {
    return hpdl__cmlp_colsum<C>(g, batch, g->widths[l], (C *)g->D[l - 1], (const C *)g->A[l], (C *)g->db[l - 1]);
}

/* The delta carried down in one kernel on hpdl's own kernels (AUTO; f32,
   f16, bf16: f64 was not measured) where the next layer is at most
   HPDL__SHORTK_MAX wide: the short-K product D[l] W[l]^T with the mask and
   the column sums as its epilogue (hpdl__shortk_delta), the model's
   column-sum workspace holding its runs' sums. HPDL_ERR_UNSUPPORTED
   elsewhere. On one H200 (f16, H 512, batch 3000) it replaced the product
   (5.2 us under ncu) and the column-sum kernel (8.4 us). */
template <typename C, typename M> static inline hpdl_status hpdl__cmlp_delta_fused(M *g, int batch, int l) {
    typedef typename hpdl__acc<C>::type Acc;
    const int k = g->widths[l], n = g->widths[l + 1];
    hpdl__gemm_args<C, Acc> a;
    hpdl__shortk_delta<C, Acc> d;
    if (g->algo != HPDL_GEMM_AUTO || sizeof(C) == 8 || !g->colsum) return HPDL_ERR_UNSUPPORTED;
    a = hpdl__gemm_make_args(HPDL_NO_TRANS, HPDL_TRANS, batch, k, n, (Acc)1, (const C *)g->D[l], n, (const C *)g->cW[l], n,
                             (Acc)0, (C *)g->D[l - 1], k, (int)(16 / sizeof(C)));
    d.out = (const C *)g->A[l];
    d.out_vec = hpdl__gemm_aligned(d.out, k, 4, sizeof(C));
    d.act = g->act;
    d.db = (C *)g->db[l - 1];
    d.parts = (Acc *)g->colsum;
    d.counts = (unsigned *)((float *)g->colsum + hpdl__colsum_parts(g));
    return hpdl__gemm_launch_shortk_delta(a, d, (int)(hpdl__colsum_parts(g) * sizeof(float) / sizeof(Acc) / (size_t)k),
                                          g->stream);
}

/* ... then, for l > 0, the delta carried down: dA = D[l] W[l]^T, and
   D[l-1] = dA * act'(A[l]) with db[l-1] (hpdl__cmlp_delta_fused, else the
   product and hpdl__cmlp_delta_mask). */
template <typename C, typename M> static inline hpdl_status hpdl__cmlp_backward_delta(M *g, int batch, int l) {
    int k = g->widths[l], n = g->widths[l + 1];
    hpdl_status s = hpdl__cmlp_delta_fused<C>(g, batch, l);
    if (s != HPDL_ERR_UNSUPPORTED) return s;
    s = hpdl__mlp_gemm(g->algo, HPDL_NO_TRANS, HPDL_TRANS, batch, k, n, (const C *)g->D[l], n, (const C *)g->cW[l], n,
                       (C *)g->D[l - 1], k, g->stream);
    return s == HPDL_OK ? hpdl__cmlp_delta_mask<C>(g, batch, l) : s;
}

/* Backward over whole layers, last to first. */
template <typename C, typename M> static inline hpdl_status hpdl__cmlp_backward(M *g, int batch) {
    int l;
    hpdl_status s = hpdl__cmlp_output_db<C>(g, batch);
    for (l = g->n_layers - 1; l >= 0 && s == HPDL_OK; l--) {
        s = hpdl__cmlp_backward_dw<C>(g, batch, l, 0, g->widths[l]);
        if (s == HPDL_OK && l > 0) s = hpdl__cmlp_backward_delta<C>(g, batch, l);
    }
    return s;
}

/* Launches hpdl__mlp_sgd_kernel cooperatively: its grid-wide barrier needs
   every block resident at once, so the grid is at most what fits, and at
   most 4 blocks an SM: on an H200 (bench/mlp, 2026-11-26) f32 epochs at
   batch 32 took 84.9 / 85.2 / 86.9 ms at 4 / 2 / 1 blocks an SM and 88.6 at
   the 8 that fit (H = 512), 108 / 112 / 123 / 112 ms (H = 2048). */
template <typename T, typename C>
static inline hpdl_status hpdl__mlp_launch_sgd(int64_t n_w, int64_t n, T *P, C *cW, const C *G, hpdl__mlp_state *st,
                                               int amp, int batch, cudaStream_t stream) {
    void (*kernel)(int64_t, int64_t, T *, C *, const C *, hpdl__mlp_state *, int, int) = hpdl__mlp_sgd_kernel<T, C>;
    void *args[] = {&n_w, &n, &P, &cW, (void *)&G, &st, &amp, &batch};
    int threads = 256, blocks = hpdl__grid_for(n, threads), per_sm = 0, sms = 0;
    if (hpdl__sm_count(&sms) != HPDL_OK) return HPDL_ERR_CUDA;
    HPDL_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0));
    if (per_sm > 4) per_sm = 4; /* a barrier over fewer blocks is quicker (below) */
    if (blocks > per_sm * sms) blocks = per_sm * sms;
    HPDL_CUDA_TRY(cudaLaunchCooperativeKernel((const void *)kernel, blocks, threads, args, 0, stream));
    return HPDL_OK;
}

/* SGD over all parameters after a check that every gradient is finite,
   on the GPU (no host sync): a step with a NaN or inf gradient is not
   applied. Under mixed precision that is GradScaler's overflow skip (the
   scale update runs at the end of the SGD kernel); in f32/f64 the step is
   counted as non-finite (a NaN input, or training that diverged). Data
   parallel ranks reduce their gradients first, so all skip the same steps. */
template <typename C, typename M> static inline hpdl_status hpdl__cmlp_update(M *g, int batch) {
    return hpdl__mlp_launch_sgd(g->n_weights, g->n_params, g->params, g->amp ? (C *)g->cparams : (C *)NULL,
                                (const C *)g->grads, g->state, g->amp, batch, g->stream);
}

/* Batch rows from the feed into A[0] and batch_labels. */
template <typename C, typename M> static inline hpdl_status hpdl__cmlp_gather(M *g, int batch) {
    hpdl__mlp_gather_kernel<<<batch, 256, 0, g->stream>>>(batch, g->widths[0], g->state, (C *)g->A[0], g->batch_labels);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* What a step does after the gather, and what a model type keeps beyond
   the fields every precision shares: each model type's hpdl__cmlp_types
   names one such struct as `passes`. This one is f32, f64 and f16's (no
   state of its own); the FP8 model's (section FP8) casts to FP8 around its
   GEMMs and keeps its scales. Templates, so only a program that trains a
   model builds its kernels. */
struct hpdl__cmlp_plain {
    template <typename M> static hpdl_status create(M *) { return HPDL_OK; }
    template <typename M> static void destroy(M *) {}
    template <typename C, typename M> static hpdl_status train(M *g, int batch) {
        hpdl_status s;
        HPDL_NVTX_PUSH("forward");
        s = hpdl__cmlp_forward<C>(g, batch);
        if (s == HPDL_OK) s = hpdl__cmlp_loss<C>(g, batch, 1);
        HPDL_NVTX_POP();
        HPDL_NVTX_PUSH("backward");
        if (s == HPDL_OK) s = hpdl__cmlp_backward<C>(g, batch);
        HPDL_NVTX_POP();
        HPDL_NVTX_PUSH("update");
        if (s == HPDL_OK) s = hpdl__cmlp_update<C>(g, batch);
        HPDL_NVTX_POP();
        return s;
    }
};

/* One whole training step, issued on g->stream (run, or recorded into a graph). */
template <typename C, typename M> static inline hpdl_status hpdl__cmlp_step(M *g, int batch) {
    hpdl_status s;
    HPDL_NVTX_PUSH("data copy (gather)");
    s = hpdl__cmlp_gather<C>(g, batch);
    HPDL_NVTX_POP();
    return s == HPDL_OK ? hpdl__cmlp_types<M>::passes::template train<C>(g, batch) : s;
}

/* Records the step for this batch size into a graph (evicting the oldest
   when all slots are taken). A capture that fails turns graphs off for this
   model: steps then run eagerly, which is slower but correct. */
template <typename C, typename M> static inline void hpdl__cmlp_capture(M *g, int batch) {
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    hpdl__mlp_graph *slot = &g->graphs[g->next_graph];
    hpdl_status s;
    if (cudaStreamBeginCapture(g->stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
        cudaGetLastError();
        g->use_graphs = 0;
        return;
    }
    s = hpdl__cmlp_step<C>(g, batch);
    if (cudaStreamEndCapture(g->stream, &graph) != cudaSuccess || s != HPDL_OK ||
        cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess) {
        cudaGetLastError();
        g->use_graphs = 0;
    } else {
        if (slot->exec) cudaGraphExecDestroy(slot->exec);
        slot->exec = exec;
        slot->batch = batch;
        slot->algo = g->algo;
        g->next_graph = (g->next_graph + 1) % HPDL_CUDA_MLP_GRAPHS;
    }
    if (graph) cudaGraphDestroy(graph);
}

/* Runs one step: replays this batch size's graph; the first time, runs the
   step eagerly (which also warms up lazily initialised GEMM back ends) and
   captures the graph for the next steps. */
template <typename C, typename M> static inline hpdl_status hpdl__cmlp_run_step(M *g, int batch) {
    int k;
    hpdl_status s;
    if (g->use_graphs)
        for (k = 0; k < HPDL_CUDA_MLP_GRAPHS; k++)
            if (g->graphs[k].exec && g->graphs[k].batch == batch && g->graphs[k].algo == g->algo) {
                HPDL_NVTX_PUSH("train step (graph)");
                HPDL_CUDA_TRY(cudaGraphLaunch(g->graphs[k].exec, g->stream));
                HPDL_NVTX_POP();
                return HPDL_OK;
            }
    s = hpdl__cmlp_step<C>(g, batch);
    if (s == HPDL_OK && g->use_graphs) hpdl__cmlp_capture<C>(g, batch);
    return s;
}

HPDL_CUDA_API hpdl_status hpdl__mlp_set_feed(hpdl__mlp_state *st, const void *src, int src_f64, const int32_t *labels,
                                        const int32_t *perm, long long cursor, cudaStream_t stream) {
    hpdl__mlp_feed_kernel<<<1, 1, 0, stream>>>(st, src, src_f64, labels, perm, cursor);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

HPDL_CUDA_API hpdl_status hpdl__mlp_begin(hpdl__mlp_state *st, double lr, double l2, int reset_train, int reset_eval,
                                     cudaStream_t stream) {
    hpdl__mlp_begin_kernel<<<1, 1, 0, stream>>>(st, lr, l2, reset_train, reset_eval);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* Waits for the stream and reads the state back (the one host sync). */
HPDL_CUDA_API hpdl_status hpdl__mlp_read_state(const hpdl__mlp_state *st, hpdl__mlp_state *host, cudaStream_t stream) {
    HPDL_CUDA_TRY(cudaMemcpyAsync(host, st, sizeof *host, cudaMemcpyDeviceToHost, stream));
    HPDL_CUDA_TRY(cudaStreamSynchronize(stream));
    return HPDL_OK;
}

/* One step on device arrays X (batch x widths[0], type T) and labels. loss
   (optional) receives the batch's mean loss, which costs a host sync; with
   it, f32/f64 return HPDL_ERR_NUMERIC when a gradient was not finite (the
   step was not applied). */
template <typename T, typename C, typename M>
static inline hpdl_status hpdl__cmlp_train_step(M *g, int batch, const T *X, const int32_t *labels, double lr,
                                                double l2, double *loss) {
    hpdl__mlp_state h;
    hpdl_status s;
    if (!g || !g->params || !X || !labels || batch <= 0 || batch > g->max_batch || !hpdl__hyper_ok(lr, l2))
        return HPDL_ERR_INVALID;
    s = hpdl__mlp_begin(g->state, lr, l2, 1, 0, g->stream);
    if (s == HPDL_OK) s = hpdl__mlp_set_feed(g->state, X, sizeof(T) == 8, labels, NULL, 0, g->stream);
    if (s == HPDL_OK) s = hpdl__cmlp_run_step<C>(g, batch);
    if (s == HPDL_OK && loss) {
        s = hpdl__mlp_read_state(g->state, &h, g->stream);
        if (s == HPDL_OK) *loss = h.loss_sum / batch;
        if (s == HPDL_OK && h.nonfinite_steps > 0) s = HPDL_ERR_NUMERIC;
    }
    return s;
}

/* Fills stats from the device state for n samples. */
template <typename M>
static inline hpdl_status hpdl__cmlp_stats(const M *g, int64_t n, int eval, hpdl_cuda_mlp_stats *out) {
    hpdl__mlp_state h;
    hpdl_status s = hpdl__mlp_read_state(g->state, &h, g->stream);
    if (s != HPDL_OK) return s;
    out->samples = n;
    out->loss = (eval ? h.eval_loss_sum : h.loss_sum) / (double)n;
    out->accuracy = (double)(eval ? h.eval_correct : h.correct) / (double)n;
    out->loss_scale = h.loss_scale;
    out->skipped_steps = h.skipped_steps;
    out->nonfinite_steps = h.nonfinite_steps;
    return HPDL_OK;
}

HPDL_CUDA_API int hpdl__mlp_data_fits(const hpdl_cuda_dataset *d, int in_width, int classes) {
    return d && d->perm && d->n > 0 && d->features == in_width && d->n_classes <= classes;
}

/* One epoch over a data set in a fresh shuffled order: graph replays, one
   sync at the end when out is given (loss, running accuracy). With out,
   f32/f64 return HPDL_ERR_NUMERIC (out filled) when some steps were not
   applied because a gradient was not finite: out->nonfinite_steps. */
template <typename C, typename M>
static inline hpdl_status hpdl__cmlp_train_epoch(M *g, hpdl_cuda_dataset *d, int batch, double lr, double l2,
                                                 uint64_t seed, hpdl_cuda_mlp_stats *out) {
    int64_t chunk, r0, step;
    int k = 0;
    hpdl_status s;
    if (!g || !g->params || !hpdl__mlp_data_fits(d, g->widths[0], g->widths[g->n_layers]) || batch <= 0 ||
        batch > g->max_batch || !hpdl__hyper_ok(lr, l2) || (!d->resident && batch > d->chunk_rows))
        return HPDL_ERR_INVALID;
    chunk = d->resident ? d->n : d->chunk_rows / batch * batch;
    s = hpdl__mlp_begin(g->state, lr, l2, 1, 0, g->stream);
    if (s == HPDL_OK) s = hpdl_cuda_dataset_shuffle(d, seed, g->stream);
    for (r0 = 0; s == HPDL_OK && r0 < d->n; r0 += chunk, k ^= 1) {
        int64_t r1 = r0 + chunk < d->n ? r0 + chunk : d->n;
        if (d->resident) {
            s = hpdl__mlp_set_feed(g->state, d->images, 0, d->labels, d->perm, 0, g->stream);
        } else {
            s = hpdl__dataset_stage(d, k, r0, r1, 1, g->stream);
            if (s == HPDL_OK) s = hpdl__mlp_set_feed(g->state, d->stage_dev[k], 0, d->stage_dev_labels[k], NULL, 0, g->stream);
        }
        for (step = r0; s == HPDL_OK && step < r1; step += batch)
            s = hpdl__cmlp_run_step<C>(g, (int)(r1 - step < batch ? r1 - step : batch));
        if (s == HPDL_OK && !d->resident) HPDL_CUDA_TRY(cudaEventRecord(d->consumed[k], g->stream));
    }
    if (s == HPDL_OK && out) s = hpdl__cmlp_stats(g, d->n, 0, out);
    if (s == HPDL_OK && out && out->nonfinite_steps > 0) s = HPDL_ERR_NUMERIC;
    return s;
}

/* Loss and accuracy over rows [0, n) of a source (no training). The source is
   device arrays (X, labels) or a data set (d). */
template <typename T, typename C, typename M>
static inline hpdl_status hpdl__cmlp_eval(M *g, int64_t n, const T *X, const int32_t *labels, hpdl_cuda_dataset *d,
                                          hpdl_cuda_mlp_stats *out) {
    int64_t r0, rows_max = g->max_batch;
    hpdl_status s = hpdl__mlp_begin(g->state, 0.0, 0.0, 0, 1, g->stream);
    if (d && !d->resident && d->chunk_rows < rows_max) rows_max = d->chunk_rows;
    HPDL_NVTX_PUSH("evaluate");
    for (r0 = 0; s == HPDL_OK && r0 < n; r0 += rows_max) {
        int rows = (int)(n - r0 < rows_max ? n - r0 : rows_max);
        if (!d) {
            s = hpdl__mlp_set_feed(g->state, X, sizeof(T) == 8, labels, NULL, r0, g->stream);
        } else if (d->resident) {
            s = hpdl__mlp_set_feed(g->state, d->images, 0, d->labels, NULL, r0, g->stream);
        } else {
            HPDL_CUDA_TRY(cudaMemcpyAsync(d->stage_dev[0], d->images + r0 * d->features,
                                          (size_t)rows * d->features * sizeof(float), cudaMemcpyHostToDevice, g->stream));
            HPDL_CUDA_TRY(cudaMemcpyAsync(d->stage_dev_labels[0], d->labels + r0, (size_t)rows * 4,
                                          cudaMemcpyHostToDevice, g->stream));
            s = hpdl__mlp_set_feed(g->state, d->stage_dev[0], 0, d->stage_dev_labels[0], NULL, 0, g->stream);
        }
        if (s == HPDL_OK) s = hpdl__cmlp_gather<C>(g, rows);
        if (s == HPDL_OK) s = hpdl__cmlp_forward<C>(g, rows);
        if (s == HPDL_OK) s = hpdl__cmlp_loss<C>(g, rows, 0);
    }
    HPDL_NVTX_POP();
    if (s == HPDL_OK) s = hpdl__cmlp_stats(g, n, 1, out);
    return s;
}

/* The type-generic front end (C++): hpdl_cuda_mlp_create(g, m, max_batch),
   hpdl_cuda_mlp_train_epoch(g, ...), ... for every hpdl_cuda_mlp_<s>. The
   model's type picks the rest through hpdl__cmlp_types: its master type T,
   the device type DC of the products and the CPU twin. */
#define HPDL__CMLP_T typename hpdl__cmlp_types<M>::master
#define HPDL__CMLP_DC typename hpdl__cmlp_types<M>::dev

/* Makes a GPU model with the CPU model m's shape and weights, for batches of up to max_batch rows,
   on a stream of its own; free with hpdl_cuda_mlp_destroy. On failure everything made is freed. */
template <typename M>
static inline hpdl_status hpdl_cuda_mlp_create(M *g, const typename hpdl__cmlp_types<M>::cpu *m, int max_batch) {
    return hpdl__cmlp_create<HPDL__CMLP_T, HPDL__CMLP_DC, typename hpdl__cmlp_types<M>::storage>(g, m, max_batch);
}
/* Frees what hpdl_cuda_mlp_create made (buffers, graphs, stream) and zeroes *g; NULL does nothing. */
template <typename M> static inline void hpdl_cuda_mlp_destroy(M *g) {
    (void)sizeof(hpdl__cmlp_types<M>); /* models only */
    hpdl__cmlp_destroy(g);
}
/* Copies the CPU model m's weights into the GPU model (same widths and activation, else
   HPDL_ERR_INVALID); waits for the model's stream. */
template <typename M>
static inline hpdl_status hpdl_cuda_mlp_upload(M *g, const typename hpdl__cmlp_types<M>::cpu *m) {
    return hpdl__cmlp_upload<HPDL__CMLP_T, HPDL__CMLP_DC>(g, m);
}
/* Copies the GPU model's master weights into the CPU model m of the same shape (else
   HPDL_ERR_INVALID), after waiting for the model's stream. */
template <typename M>
static inline hpdl_status hpdl_cuda_mlp_download(const M *g, typename hpdl__cmlp_types<M>::cpu *m) {
    return hpdl__cmlp_download<HPDL__CMLP_T>(g, m);
}
/* One SGD step on a device batch X (batch x widths[0]) and labels; with loss, *loss = the batch's mean
   loss (a host sync), and f32/f64 return HPDL_ERR_NUMERIC when a gradient was not finite. */
template <typename M>
static inline hpdl_status hpdl_cuda_mlp_train_step(M *g, int batch, const HPDL__CMLP_T *X, const int32_t *labels,
                                                   double lr, double l2, double *loss) {
    return hpdl__cmlp_train_step<HPDL__CMLP_T, HPDL__CMLP_DC>(g, batch, X, labels, lr, l2, loss);
}
/* One epoch over d in a fresh order drawn from seed, batch rows a step; with out, waits and fills it
   (HPDL_ERR_NUMERIC for f32/f64 when steps were not applied: a gradient was not finite). */
template <typename M>
static inline hpdl_status hpdl_cuda_mlp_train_epoch(M *g, hpdl_cuda_dataset *d, int batch, double lr, double l2,
                                                    uint64_t seed, hpdl_cuda_mlp_stats *out) {
    return hpdl__cmlp_train_epoch<HPDL__CMLP_DC>(g, d, batch, lr, l2, seed, out);
}
/* Mean loss and accuracy over every row of d, without training; waits and fills *out.
   HPDL_ERR_INVALID for a NULL out or a data set that does not fit the model. */
template <typename M> static inline hpdl_status hpdl_cuda_mlp_evaluate(M *g, hpdl_cuda_dataset *d, hpdl_cuda_mlp_stats *out) {
    if (!g || !g->params || !out || !hpdl__mlp_data_fits(d, g->widths[0], g->widths[g->n_layers])) return HPDL_ERR_INVALID;
    return hpdl__cmlp_eval<HPDL__CMLP_T, HPDL__CMLP_DC>(g, d->n, (const HPDL__CMLP_T *)NULL, (const int32_t *)NULL, d, out);
}
/* *acc = fraction of the n rows of device arrays X and labels whose largest logit is at the label;
   no training, waits for the model's stream. */
template <typename M>
static inline hpdl_status hpdl_cuda_mlp_accuracy(M *g, int64_t n, const HPDL__CMLP_T *X, const int32_t *labels,
                                                 double *acc) {
    hpdl_cuda_mlp_stats st;
    hpdl_status s;
    if (!g || !g->params || n <= 0 || !X || !labels || !acc) return HPDL_ERR_INVALID;
    s = hpdl__cmlp_eval<HPDL__CMLP_T, HPDL__CMLP_DC>(g, n, X, labels, (hpdl_cuda_dataset *)NULL, &st);
    if (s == HPDL_OK) *acc = st.accuracy;
    return s;
}
/* The loss scaler's state (1 and 0 unless mixed precision); syncs. */
template <typename M> static inline hpdl_status hpdl_cuda_mlp_scaler(M *g, double *scale, int64_t *skipped_steps) {
    hpdl__mlp_state h;
    hpdl_status s;
    (void)sizeof(hpdl__cmlp_types<M>);
    if (!g || !g->state) return HPDL_ERR_INVALID;
    s = hpdl__mlp_read_state(g->state, &h, g->stream);
    if (s == HPDL_OK && scale) *scale = h.loss_scale;
    if (s == HPDL_OK && skipped_steps) *skipped_steps = h.skipped_steps;
    return s;
}

/* hpdl_cuda_mlp_<SUFFIX> and its typed functions: master type T, product
   storage type CT (device type DC), CPU twin hpdl_mlp_<CPU>. */
#define HPDL_DEFINE_CUDA_MLP(SUFFIX, T, CT, DC, CPU)                                                              \
    typedef struct hpdl_cuda_mlp_##SUFFIX { HPDL__CUDA_MLP_FIELDS(T, CT); } hpdl_cuda_mlp_##SUFFIX;               \
    template <> struct hpdl__cmlp_types<hpdl_cuda_mlp_##SUFFIX> {                                                 \
        typedef T master; typedef DC dev; typedef CT storage; typedef hpdl_mlp_##CPU cpu;                         \
        typedef hpdl__cmlp_plain passes;                                                                          \
    };                                                                                                            \
    HPDL__CUDA_MLP_TYPED(SUFFIX, hpdl_cuda_mlp_##SUFFIX, T, hpdl_mlp_##CPU)

/* The typed names, each a call of the front end above. */
#define HPDL__CUDA_MLP_TYPED(SUFFIX, M, T, CPU)                                                                   \
    HPDL_CUDA_API hpdl_status hpdl_cuda_mlp_create_##SUFFIX(M *g, const CPU *m, int max_batch) {                  \
        return hpdl_cuda_mlp_create(g, m, max_batch);                                                             \
    }                                                                                                             \
    HPDL_CUDA_API void hpdl_cuda_mlp_destroy_##SUFFIX(M *g) { hpdl_cuda_mlp_destroy(g); }                         \
    HPDL_CUDA_API hpdl_status hpdl_cuda_mlp_upload_##SUFFIX(M *g, const CPU *m) { return hpdl_cuda_mlp_upload(g, m); } \
    HPDL_CUDA_API hpdl_status hpdl_cuda_mlp_download_##SUFFIX(const M *g, CPU *m) {                               \
        return hpdl_cuda_mlp_download(g, m);                                                                      \
    }                                                                                                             \
    HPDL_CUDA_API hpdl_status hpdl_cuda_mlp_train_step_##SUFFIX(M *g, int batch, const T *X, const int32_t *labels, \
                                                                double lr, double l2, double *loss) {            \
        return hpdl_cuda_mlp_train_step(g, batch, X, labels, lr, l2, loss);                                       \
    }                                                                                                             \
    HPDL_CUDA_API hpdl_status hpdl_cuda_mlp_train_epoch_##SUFFIX(M *g, hpdl_cuda_dataset *d, int batch, double lr, \
                                                                 double l2, uint64_t seed, hpdl_cuda_mlp_stats *out) { \
        return hpdl_cuda_mlp_train_epoch(g, d, batch, lr, l2, seed, out);                                         \
    }                                                                                                             \
    HPDL_CUDA_API hpdl_status hpdl_cuda_mlp_evaluate_##SUFFIX(M *g, hpdl_cuda_dataset *d, hpdl_cuda_mlp_stats *out) { \
        return hpdl_cuda_mlp_evaluate(g, d, out);                                                                 \
    }                                                                                                             \
    HPDL_CUDA_API hpdl_status hpdl_cuda_mlp_accuracy_##SUFFIX(M *g, int64_t n, const T *X, const int32_t *labels, \
                                                              double *acc) {                                      \
        return hpdl_cuda_mlp_accuracy(g, n, X, labels, acc);                                                      \
    }                                                                                                             \
    HPDL_CUDA_API hpdl_status hpdl_cuda_mlp_scaler_##SUFFIX(M *g, double *scale, int64_t *skipped_steps) {        \
        return hpdl_cuda_mlp_scaler(g, scale, skipped_steps);                                                     \
    }

/* hpdl_cuda_mlp_create_f32 hpdl_cuda_mlp_destroy_f32 hpdl_cuda_mlp_upload_f32
   hpdl_cuda_mlp_download_f32 hpdl_cuda_mlp_train_step_f32 hpdl_cuda_mlp_train_epoch_f32
   hpdl_cuda_mlp_evaluate_f32 hpdl_cuda_mlp_accuracy_f32 hpdl_cuda_mlp_scaler_f32 */
HPDL_DEFINE_CUDA_MLP(f32, float, float, float, f32)
/* hpdl_cuda_mlp_create_f64 hpdl_cuda_mlp_destroy_f64 hpdl_cuda_mlp_upload_f64
   hpdl_cuda_mlp_download_f64 hpdl_cuda_mlp_train_step_f64 hpdl_cuda_mlp_train_epoch_f64
   hpdl_cuda_mlp_evaluate_f64 hpdl_cuda_mlp_accuracy_f64 hpdl_cuda_mlp_scaler_f64 */
HPDL_DEFINE_CUDA_MLP(f64, double, double, double, f64)
/* hpdl_cuda_mlp_create_f16 hpdl_cuda_mlp_destroy_f16 hpdl_cuda_mlp_upload_f16
   hpdl_cuda_mlp_download_f16 hpdl_cuda_mlp_train_step_f16 hpdl_cuda_mlp_train_epoch_f16
   hpdl_cuda_mlp_evaluate_f16 hpdl_cuda_mlp_accuracy_f16 hpdl_cuda_mlp_scaler_f16 */
HPDL_DEFINE_CUDA_MLP(f16, float, hpdl_f16, __half, f32)

/* Softmax + cross-entropy + gradient on the device, the twin of
   hpdl_softmax_xent_<s>: grad = (softmax(logits) - onehot)/rows, *d_loss (a
   device double) = mean loss. One kernel, no host sync. */
#define HPDL_DEFINE_CUDA_SOFTMAX_XENT(SUFFIX, T)                                                                   \
    HPDL_CUDA_API hpdl_status hpdl_cuda_softmax_xent_##SUFFIX(int rows, int cols, const T *logits, int ld,             \
                                                         const int32_t *labels, T *grad, int ldg, double *d_loss, \
                                                         cudaStream_t stream) {                                   \
        if (rows <= 0 || cols <= 0 || ld < cols || ldg < cols || !logits || !labels || !grad || !d_loss)          \
            return HPDL_ERR_INVALID;                                                                              \
        HPDL_CUDA_TRY(cudaMemsetAsync(d_loss, 0, sizeof(double), stream));                                        \
        hpdl__mlp_xent_kernel<<<(rows + 7) / 8, 256, 0, stream>>>(rows, cols, logits, ld, (const T *)NULL, labels, \
                                                                  grad, ldg, 1.0 / rows, (const float *)NULL,     \
                                                                  1.0 / rows, d_loss,                             \
                                                                  (unsigned long long *)NULL, (T *)NULL, NULL,    \
                                                                  (unsigned *)NULL);                              \
        HPDL_CUDA_TRY_LAUNCH();                                                                                   \
        return HPDL_OK;                                                                                           \
    }

/* hpdl_cuda_softmax_xent_f32 */
HPDL_DEFINE_CUDA_SOFTMAX_XENT(f32, float)
/* hpdl_cuda_softmax_xent_f64 */
HPDL_DEFINE_CUDA_SOFTMAX_XENT(f64, double)
/* ======================================================================== */
/* SEVERAL GPUS: device sets, transfers, matrix powers, model parallelism   */
/* ======================================================================== */
/* Everything here drives several GPUs from one host thread: one stream per
   GPU, events for the hand-offs, peer-to-peer copies where the GPUs allow
   them and copies staged through pinned host memory where they do not.

   Logical devices. A device set names G logical devices; logical d runs on
   CUDA device d % (visible count) when virtual devices are allowed, so the
   multi-GPU logic (streams, events, transfers) runs and is tested on one GPU.
   CUDA_VISIBLE_DEVICES is honoured because the runtime applies it first.

   Functions that take a device set leave the caller's current device as
   they found it. */

#ifndef HPDL_CUDA_MAX_DEVICES
#define HPDL_CUDA_MAX_DEVICES 16
#endif

/* Counts of device-to-device moves, by the path they took. */
typedef struct hpdl_cuda_xfer_stats {
    long long transfers, bytes;
    long long local;  /* both logical devices on one GPU: a plain device copy */
    long long peer;   /* GPU to GPU directly (NVLink or PCIe peer access) */
    long long staged; /* through pinned host memory: no peer access */
} hpdl_cuda_xfer_stats;

/* A device set (hpdl_cuda_devices_open): count logical devices, the CUDA device each runs on, and
   which pairs have peer access. It holds nothing to free. */
typedef struct hpdl_cuda_devices {
    int count;                                /* logical devices */
    int visible;                              /* GPUs the runtime shows */
    int physical[HPDL_CUDA_MAX_DEVICES];      /* logical -> CUDA device */
    unsigned char peer[HPDL_CUDA_MAX_DEVICES][HPDL_CUDA_MAX_DEVICES]; /* a reads/writes b directly */
} hpdl_cuda_devices;

/* Number of visible GPUs (0 without a driver: never an error). */
HPDL_CUDA_API int hpdl_cuda_device_count(void) {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) { cudaGetLastError(); return 0; }
    return count;
}

/* Device memory in use (total - free, every process counted) on one GPU. */
HPDL_CUDA_API hpdl_status hpdl_cuda_mem_in_use(int device, size_t *used, size_t *total) {
    size_t free_b = 0, total_b = 0;
    int current = 0;
    if (!used || !total || device < 0 || device >= hpdl_cuda_device_count()) return HPDL_ERR_INVALID;
    HPDL_CUDA_TRY(cudaGetDevice(&current));
    HPDL_CUDA_TRY(cudaSetDevice(device));
    HPDL_CUDA_TRY(cudaMemGetInfo(&free_b, &total_b));
    HPDL_CUDA_TRY(cudaSetDevice(current));
    *used = total_b - free_b;
    *total = total_b;
    return HPDL_OK;
}

/* Lists the visible GPUs (name, memory, peer access) as a small table. */
HPDL_CUDA_API hpdl_status hpdl_cuda_devices_print(FILE *f) {
    const char *visible = getenv("CUDA_VISIBLE_DEVICES");
    int n = hpdl_cuda_device_count(), a, b;
    if (!f) return HPDL_ERR_INVALID;
    fprintf(f, "GPUs visible: %d (CUDA_VISIBLE_DEVICES=%s)\n", n, visible ? visible : "unset");
    for (a = 0; a < n; a++) {
        hpdl_cuda_device_info info;
        size_t used = 0, total = 0;
        hpdl_status s = hpdl_cuda_device_query(a, &info);
        if (s == HPDL_OK) s = hpdl_cuda_mem_in_use(a, &used, &total);
        if (s != HPDL_OK) return s;
        fprintf(f, "  GPU %d: %s, sm_%d%d, %d SMs, %.1f GiB, %.2f GiB in use, peer access to:", a, info.name,
                info.cc_major, info.cc_minor, info.sm_count, total / 1073741824.0, used / 1073741824.0);
        for (b = 0; b < n; b++) {
            int can = 0;
            if (b != a && cudaDeviceCanAccessPeer(&can, a, b) == cudaSuccess && can) fprintf(f, " %d", b);
        }
        fprintf(f, "\n");
    }
    return HPDL_OK;
}

/* Lets GPU a read and write GPU b's memory when the hardware allows it.
   Idempotent: enabling twice is fine. *enabled says whether it is on. */
HPDL_CUDA_API hpdl_status hpdl_cuda_enable_peer(int a, int b, int *enabled) {
    int can = 0, current = 0;
    cudaError_t e;
    if (!enabled) return HPDL_ERR_INVALID;
    *enabled = 0;
    if (a == b) { *enabled = 1; return HPDL_OK; }
    HPDL_CUDA_TRY(cudaDeviceCanAccessPeer(&can, a, b));
    if (!can) return HPDL_OK;
    HPDL_CUDA_TRY(cudaGetDevice(&current));
    HPDL_CUDA_TRY(cudaSetDevice(a));
    e = cudaDeviceEnablePeerAccess(b, 0);
    if (e == cudaErrorPeerAccessAlreadyEnabled) { cudaGetLastError(); e = cudaSuccess; }
    HPDL_CUDA_TRY(cudaSetDevice(current));
    HPDL_CUDA_TRY(e);
    *enabled = 1;
    return HPDL_OK;
}

/* Whether n logical devices can be opened: 1 <= n <= HPDL_CUDA_MAX_DEVICES
   and a GPU visible. Without allow_virtual, asking for more GPUs than are
   visible is an error (with a message naming both numbers), not a silent
   fold onto fewer. */
HPDL_CUDA_API hpdl_status hpdl__cuda_check_gpus(int n, int allow_virtual) {
    int visible = hpdl_cuda_device_count();
    const char *env = getenv("CUDA_VISIBLE_DEVICES");
    if (n < 1 || n > HPDL_CUDA_MAX_DEVICES) return HPDL_ERR_INVALID;
    if (visible > 0 && (n <= visible || allow_virtual)) return HPDL_OK;
    fprintf(stderr, "hpdl: %d GPU%s requested but %d visible (CUDA_VISIBLE_DEVICES=%s)\n", n, n > 1 ? "s" : "",
            visible, env ? env : "unset");
    return HPDL_ERR_INVALID;
}

/* Fills set with n logical devices (logical d on GPU d % visible) and enables peer access between
   their GPUs. HPDL_ERR_INVALID for a NULL set, n outside [1, HPDL_CUDA_MAX_DEVICES], no GPU, or more
   GPUs than are visible without allow_virtual; HPDL_ERR_CUDA when peer access cannot be set. */
HPDL_CUDA_API hpdl_status hpdl_cuda_devices_open(hpdl_cuda_devices *set, int n, int allow_virtual) {
    int visible = hpdl_cuda_device_count(), a, b;
    hpdl_status s = hpdl__cuda_check_gpus(n, allow_virtual);
    if (!set) return HPDL_ERR_INVALID;
    if (s != HPDL_OK) return s;
    memset(set, 0, sizeof *set);
    set->count = n;
    set->visible = visible;
    for (a = 0; a < n; a++) set->physical[a] = a % visible;
    for (a = 0; a < n; a++)
        for (b = 0; b < n; b++) {
            int on = 0;
            hpdl_status s = hpdl_cuda_enable_peer(set->physical[a], set->physical[b], &on);
            if (s != HPDL_OK) return s;
            set->peer[a][b] = (unsigned char)on;
        }
    return HPDL_OK;
}

/* Staged copy: device -> pinned host -> device, chunk by chunk, in order on
   one stream (so one staging buffer serves all chunks). */
HPDL_CUDA_API hpdl_status hpdl__cuda_move_staged(void *dst, const void *src, size_t bytes, void *stage,
                                            size_t stage_bytes, cudaStream_t stream) {
    size_t done = 0;
    while (done < bytes) {
        size_t chunk = bytes - done < stage_bytes ? bytes - done : stage_bytes;
        HPDL_CUDA_TRY(cudaMemcpyAsync(stage, (const char *)src + done, chunk, cudaMemcpyDeviceToHost, stream));
        HPDL_CUDA_TRY(cudaMemcpyAsync((char *)dst + done, stage, chunk, cudaMemcpyHostToDevice, stream));
        done += chunk;
    }
    return HPDL_OK;
}

/* Copies `bytes` from logical device src_dev to dst_dev, ordered on `stream`
   (any of the two devices' streams): a device copy when both are one GPU, a
   peer copy when peer access is on, else staged through `stage` (pinned,
   stage_bytes) or, without one, through the driver's own staging. Counts the
   move in *stats when given. Transfers sharing a staging buffer must go on
   one stream. */
HPDL_CUDA_API hpdl_status hpdl_cuda_move(const hpdl_cuda_devices *set, void *dst, int dst_dev, const void *src,
                                    int src_dev, size_t bytes, void *stage, size_t stage_bytes,
                                    cudaStream_t stream, hpdl_cuda_xfer_stats *stats) {
    int pa, pb;
    if (!set || dst_dev < 0 || dst_dev >= set->count || src_dev < 0 || src_dev >= set->count) return HPDL_ERR_INVALID;
    if ((!dst || !src) && bytes) return HPDL_ERR_INVALID;
    if (stage && !stage_bytes) return HPDL_ERR_INVALID;
    if (!bytes) return HPDL_OK;
    pa = set->physical[src_dev];
    pb = set->physical[dst_dev];
    if (pa == pb) {
        HPDL_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
        if (stats) stats->local++;
    } else if (set->peer[dst_dev][src_dev] || !stage) {
        HPDL_CUDA_TRY(cudaMemcpyPeerAsync(dst, pb, src, pa, bytes, stream));
        if (stats) { if (set->peer[dst_dev][src_dev]) stats->peer++; else stats->staged++; }
    } else {
        hpdl_status s = hpdl__cuda_move_staged(dst, src, bytes, stage, stage_bytes, stream);
        if (s != HPDL_OK) return s;
        if (stats) stats->staged++;
    }
    if (stats) { stats->transfers++; stats->bytes += (long long)bytes; }
    return HPDL_OK;
}

/* True when some pair of the set's GPUs has no peer access (staging needed). */
HPDL_CUDA_API int hpdl__cuda_devices_need_staging(const hpdl_cuda_devices *set) {
    int a, b;
    for (a = 0; a < set->count; a++)
        for (b = 0; b < set->count; b++)
            if (set->physical[a] != set->physical[b] && !set->peer[a][b]) return 1;
    return 0;
}

/* Per-device streams and events that most multi-GPU helpers here need. */
typedef struct hpdl__cuda_lanes {
    hpdl_cuda_devices dev;
    cudaStream_t stream[HPDL_CUDA_MAX_DEVICES];
    cudaEvent_t ready[HPDL_CUDA_MAX_DEVICES]; /* hand-off point of each lane */
    cudaEvent_t fork;                          /* on device 0: where a run starts */
    void *stage[HPDL_CUDA_MAX_DEVICES];        /* pinned, for pulls into lane g */
    size_t stage_bytes;
    int current;                               /* caller's device, restored at the end */
    int shared;                                /* lanes on one GPU use the stream of the first */
} hpdl__cuda_lanes;

/* Whether lane g uses the stream of an earlier lane on its GPU. */
HPDL_CUDA_API int hpdl__cuda_lane_borrows(const hpdl__cuda_lanes *l, int g) {
    return l->shared && g >= l->dev.visible;
}

#define HPDL__STAGE_BYTES ((size_t)4 << 20)

HPDL_CUDA_API void hpdl__cuda_lanes_destroy(hpdl__cuda_lanes *l) {
    int g;
    for (g = 0; g < l->dev.count; g++) {
        cudaSetDevice(l->dev.physical[g]);
        if (l->stream[g] && !hpdl__cuda_lane_borrows(l, g)) hpdl__stream_destroy(l->stream[g]);
        if (l->ready[g]) cudaEventDestroy(l->ready[g]);
        hpdl_cuda_free_pinned(l->stage[g]);
        l->stream[g] = NULL; l->ready[g] = NULL; l->stage[g] = NULL;
    }
    if (l->fork) { cudaSetDevice(l->dev.physical[0]); cudaEventDestroy(l->fork); l->fork = NULL; }
    cudaSetDevice(l->current);
}

/* n lanes (logical devices, folded onto the GPUs with allow_virtual); with
   `share`, lanes on one GPU share its first lane's stream, so that GPU runs
   their work in the order it is queued. */
HPDL_CUDA_API hpdl_status hpdl__cuda_lanes_create(hpdl__cuda_lanes *l, int n, int allow_virtual, int share) {
    int g, staging;
    hpdl_status s;
    memset(l, 0, sizeof *l);
    l->shared = share;
    if (cudaGetDevice(&l->current) != cudaSuccess) { cudaGetLastError(); l->current = 0; }
    s = hpdl_cuda_devices_open(&l->dev, n, allow_virtual);
    if (s != HPDL_OK) { l->dev.count = 0; return s; }
    staging = hpdl__cuda_devices_need_staging(&l->dev);
    l->stage_bytes = staging ? HPDL__STAGE_BYTES : 0;
    for (g = 0; g < n && s == HPDL_OK; g++) {
        if (hpdl__cuda_lane_borrows(l, g)) l->stream[g] = l->stream[l->dev.physical[g]];
        if (cudaSetDevice(l->dev.physical[g]) != cudaSuccess ||
            (!l->stream[g] && cudaStreamCreateWithFlags(&l->stream[g], cudaStreamNonBlocking) != cudaSuccess) ||
            cudaEventCreateWithFlags(&l->ready[g], cudaEventDisableTiming) != cudaSuccess) s = HPDL_ERR_CUDA;
        if (s == HPDL_OK && staging) s = hpdl_cuda_alloc_pinned(&l->stage[g], l->stage_bytes);
    }
    if (s == HPDL_OK && (cudaSetDevice(l->dev.physical[0]) != cudaSuccess ||
                         cudaEventCreateWithFlags(&l->fork, cudaEventDisableTiming) != cudaSuccess)) s = HPDL_ERR_CUDA;
    if (s != HPDL_OK) { cudaGetLastError(); hpdl__cuda_lanes_destroy(l); return s; }
    cudaSetDevice(l->current);
    return HPDL_OK;
}

/* Every lane starts after the work issued so far on `origin` (a stream of
   device 0; 0 means device 0's default stream). */
HPDL_CUDA_API hpdl_status hpdl__cuda_lanes_fork(hpdl__cuda_lanes *l, cudaStream_t origin) {
    int g;
    if (cudaGetDevice(&l->current) != cudaSuccess) return HPDL_ERR_CUDA;
    HPDL_CUDA_TRY(cudaSetDevice(l->dev.physical[0]));
    HPDL_CUDA_TRY(cudaEventRecord(l->fork, origin));
    for (g = 0; g < l->dev.count; g++) HPDL_CUDA_TRY(cudaStreamWaitEvent(l->stream[g], l->fork, 0));
    return HPDL_OK;
}

/* Marks the work issued so far on lane g; lanes that wait_mark(g) wait for
   it (marking every lane first, then waiting, keeps the waits parallel). */
HPDL_CUDA_API hpdl_status hpdl__cuda_lanes_mark(hpdl__cuda_lanes *l, int g) {
    HPDL_CUDA_TRY(cudaSetDevice(l->dev.physical[g]));
    HPDL_CUDA_TRY(cudaEventRecord(l->ready[g], l->stream[g]));
    return HPDL_OK;
}

HPDL_CUDA_API hpdl_status hpdl__cuda_lanes_wait_mark(hpdl__cuda_lanes *l, int to, int from) {
    HPDL_CUDA_TRY(cudaStreamWaitEvent(l->stream[to], l->ready[from], 0));
    return HPDL_OK;
}

/* Lane `to` waits for the work issued so far on lane `from`. */
HPDL_CUDA_API hpdl_status hpdl__cuda_lanes_wait(hpdl__cuda_lanes *l, int to, int from) {
    hpdl_status s = hpdl__cuda_lanes_mark(l, from);
    return s != HPDL_OK ? s : hpdl__cuda_lanes_wait_mark(l, to, from);
}

/* `origin` waits for every lane; the caller's device is restored. */
HPDL_CUDA_API hpdl_status hpdl__cuda_lanes_join(hpdl__cuda_lanes *l, cudaStream_t origin) {
    int g;
    for (g = 0; g < l->dev.count; g++) {
        hpdl_status s = hpdl__cuda_lanes_mark(l, g);
        if (s != HPDL_OK) return s;
    }
    HPDL_CUDA_TRY(cudaSetDevice(l->dev.physical[0]));
    for (g = 0; g < l->dev.count; g++) HPDL_CUDA_TRY(cudaStreamWaitEvent(origin, l->ready[g], 0));
    HPDL_CUDA_TRY(cudaSetDevice(l->current));
    return HPDL_OK;
}

/* Lane g pulls bytes from lane src's memory, counted in *stats. */
HPDL_CUDA_API hpdl_status hpdl__cuda_lanes_pull(hpdl__cuda_lanes *l, int g, void *dst, int src, const void *from,
                                           size_t bytes, hpdl_cuda_xfer_stats *stats) {
    return hpdl_cuda_move(&l->dev, dst, g, from, src, bytes, l->stage[g], l->stage_bytes, l->stream[g], stats);
}

HPDL_CUDA_API hpdl_status hpdl__cuda_lanes_sync(hpdl__cuda_lanes *l) {
    int g;
    for (g = 0; g < l->dev.count; g++) HPDL_CUDA_TRY(cudaStreamSynchronize(l->stream[g]));
    return HPDL_OK;
}

/* ------------------------------------------------------------------------ */
/* Matrix power by repeated squaring (one GPU)                               */
/* ------------------------------------------------------------------------ */
/* A^p as a list of products over five named buffers: the input, three
   workspace matrices and the output. Squaring takes floor(log2 p) squarings
   and one product per further set bit of p, e.g. A^10 = A^8 * A^2: A^2, A^4,
   A^8 and one product, 4 GEMMs instead of the naive 9. Two matrices are
   alive at any time (the running product and the current square A^(2^i)),
   so three workspace buffers always leave one free for the next result. The
   last product writes the output directly. */
enum { HPDL__MP_INPUT = 0, HPDL__MP_WS = 1 /* 1, 2, 3 */, HPDL__MP_BUFFERS = 4 };

typedef struct hpdl__matpow_step { int dst, lhs, rhs; } hpdl__matpow_step;

typedef struct hpdl__matpow_plan {
    int power, naive, count; /* count: products; the last one writes the output */
    hpdl__matpow_step step[64];
} hpdl__matpow_plan;

HPDL_CUDA_API int hpdl__matpow_free_slot(int a, int b) {
    int w;
    for (w = HPDL__MP_WS; w < HPDL__MP_WS + 3; w++)
        if (w != a && w != b) return w;
    return -1; /* unreachable: two live buffers leave one of three free */
}

HPDL_CUDA_API void hpdl__matpow_plan_push(hpdl__matpow_plan *p, int dst, int lhs, int rhs) {
    p->step[p->count].dst = dst;
    p->step[p->count].lhs = lhs;
    p->step[p->count].rhs = rhs;
    p->count++;
}

/* power >= 0. Naive: p - 1 products A*A*...*A, ping-ponging two buffers. */
HPDL_CUDA_API void hpdl__matpow_plan_init(hpdl__matpow_plan *p, int power, int naive) {
    int base = HPDL__MP_INPUT, res = -1, bit, top = 0;
    p->power = power;
    p->naive = naive;
    p->count = 0;
    if (naive) { p->count = power > 1 ? power - 1 : 0; return; }
    while (top < 30 && (power >> (top + 1))) top++;
    for (bit = 0; power > 1 && bit <= top; bit++) {
        if ((power >> bit) & 1) {
            if (res < 0) res = base;
            else { int d = hpdl__matpow_free_slot(res, base); hpdl__matpow_plan_push(p, d, res, base); res = d; }
        }
        if (bit < top) { int d = hpdl__matpow_free_slot(res, base); hpdl__matpow_plan_push(p, d, base, base); base = d; }
    }
}

HPDL_CUDA_API hpdl__matpow_step hpdl__matpow_plan_step(const hpdl__matpow_plan *p, int i) {
    hpdl__matpow_step s;
    if (!p->naive) return p->step[i];
    s.lhs = i == 0 ? HPDL__MP_INPUT : HPDL__MP_WS + (i - 1) % 2;
    s.rhs = HPDL__MP_INPUT;
    s.dst = HPDL__MP_WS + i % 2;
    return s;
}

/* Workspace of hpdl_cuda_matpow_ws_*: three n x n matrices. */
HPDL_CUDA_API size_t hpdl_cuda_matpow_workspace_bytes(int n, size_t elem_bytes) {
    return n > 0 ? 3 * (size_t)n * (size_t)n * elem_bytes : 0;
}

HPDL_CUDA_API hpdl_status hpdl__matpow_check(int n, int power, const void *A, int lda, const void *out, int ldo,
                                        size_t elem_bytes) {
    if (n < 1 || power < 0 || hpdl__check_matrix(A, n, n, lda) != HPDL_OK ||
        hpdl__check_matrix(out, n, n, ldo) != HPDL_OK || hpdl__square_views_overlap(A, lda, out, ldo, n, elem_bytes))
        return HPDL_ERR_INVALID;
    return HPDL_OK;
}

/* Blocks for an elementwise grid-stride kernel over `count` items. */
HPDL_CUDA_API int hpdl__cuda_grid(long long count) {
    long long blocks = (count + 255) / 256;
    return (int)(blocks < 1 ? 1 : blocks > 65535 ? 65535 : blocks);
}

/* f32 products on TF32 tensor cores: cuBLAS with CUBLAS_TF32_TENSOR_OP_MATH.
   Inputs are rounded to a 10-bit mantissa, so expect ~1e-3 relative error
   instead of f32's ~1e-6, at several times the f32 rate. Other types ignore
   it (cuBLAS's plain path). A value outside the GEMM part's algo list: the
   functions here that take an algo accept it. */
#define HPDL_GEMM_TF32 ((hpdl_gemm_algo)(HPDL_GEMM_CUBLAS + 100))

/* Turns TF32 on or off for the current device's cuBLAS handle. */
HPDL_CUDA_API hpdl_status hpdl__cuda_tf32_math(int on) {
    cublasHandle_t h;
    hpdl_status s = hpdl__cublas_handle(&h);
    if (s != HPDL_OK) return s;
    return cublasSetMathMode(h, on ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH) == CUBLAS_STATUS_SUCCESS
               ? HPDL_OK : HPDL_ERR_CUDA;
}

/* A storage type's elements loaded into and stored from its sum type,
   rounding as the CPU twin does (hpdl_f16/bf16 have __half's bits). */
template <typename T> struct hpdl__elem {
    static __host__ __device__ T load(T x) { return x; }
    static __host__ __device__ T store(double v) { return (T)v; }
};
template <> struct hpdl__elem<hpdl_f16> {
    static __host__ __device__ float load(hpdl_f16 x) { return hpdl_f16_to_f32(x); }
    static __host__ __device__ hpdl_f16 store(float v) { return hpdl_f16_from_f32(v); }
};
template <> struct hpdl__elem<hpdl_bf16> {
    static __host__ __device__ float load(hpdl_bf16 x) { return hpdl_bf16_to_f32(x); }
    static __host__ __device__ hpdl_bf16 store(float v) { return hpdl_bf16_from_f32(v); }
};

/* The matrix power on one GPU, any storage type T: the identity and
   elementwise-sum kernels, the products (with TF32 as an algo), the plan's
   steps, and the one entry point the typed functions call. */
template <typename T> __global__ void hpdl__cuda_eye_kernel(int n, T *out, int ldo) {
    long long i, total = (long long)n * n;
    for (i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
         i += (long long)gridDim.x * blockDim.x)
        out[(i / n) * ldo + i % n] = hpdl__elem<T>::store(i / n == i % n ? 1.0f : 0.0f);
}
template <typename T> __global__ void hpdl__cuda_add_kernel(long long count, T *acc, const T *x) {
    long long i;
    for (i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count;
         i += (long long)gridDim.x * blockDim.x)
        acc[i] = hpdl__elem<T>::store(hpdl__elem<T>::load(acc[i]) + hpdl__elem<T>::load(x[i]));
}
/* hpdl_cuda_gemm_algo, plus HPDL_GEMM_TF32. */
template <typename T>
static inline hpdl_status hpdl__cuda_multi_gemm(hpdl_gemm_algo algo, hpdl_transpose ta, hpdl_transpose tb, int M,
                                                int N, int K, typename hpdl__acc<T>::type alpha, const T *A, int lda,
                                                const T *B, int ldb, typename hpdl__acc<T>::type beta, T *C, int ldc,
                                                cudaStream_t stream) {
    hpdl_status s, off;
    if (algo != HPDL_GEMM_TF32)
        return hpdl_cuda_gemm_algo(algo, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, stream);
    s = hpdl__cuda_tf32_math(1);
    if (s == HPDL_OK)
        s = hpdl_cuda_gemm_algo(HPDL_GEMM_CUBLAS, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, stream);
    off = hpdl__cuda_tf32_math(0);
    return s != HPDL_OK ? s : off;
}
template <typename T>
static inline hpdl_status hpdl__cuda_matpow_run(const hpdl__matpow_plan *p, int n, const T *A, int lda, T *out,
                                                int ldo, hpdl_gemm_algo algo, T *ws, cudaStream_t stream) {
    const T *in[HPDL__MP_BUFFERS];
    int i, w;
    if (p->power == 0) {
        hpdl__cuda_eye_kernel<T><<<hpdl__cuda_grid((long long)n * n), 256, 0, stream>>>(n, out, ldo);
        HPDL_CUDA_TRY_LAUNCH();
        return HPDL_OK;
    }
    if (p->power == 1) {
        HPDL_CUDA_TRY(cudaMemcpy2DAsync(out, (size_t)ldo * sizeof(T), A, (size_t)lda * sizeof(T),
                                        (size_t)n * sizeof(T), (size_t)n, cudaMemcpyDeviceToDevice, stream));
        return HPDL_OK;
    }
    in[HPDL__MP_INPUT] = A;
    for (w = 0; w < 3; w++) in[HPDL__MP_WS + w] = ws + (size_t)w * n * n;
    for (i = 0; i < p->count; i++) {
        hpdl__matpow_step s = hpdl__matpow_plan_step(p, i);
        int last = i == p->count - 1;
        hpdl_status st = hpdl__cuda_multi_gemm<T>(algo, HPDL_NO_TRANS, HPDL_NO_TRANS, n, n, n, 1, in[s.lhs],
                                                  s.lhs == HPDL__MP_INPUT ? lda : n, in[s.rhs],
                                                  s.rhs == HPDL__MP_INPUT ? lda : n, 0, last ? out : (T *)in[s.dst],
                                                  last ? ldo : n, stream);
        if (st != HPDL_OK) return st;
    }
    return HPDL_OK;
}
template <typename T>
static inline hpdl_status hpdl__cuda_matpow_any(int naive, int n, int power, const T *A, int lda, T *out, int ldo,
                                                hpdl_gemm_algo algo, T *ws, int own_ws, cudaStream_t stream) {
    hpdl__matpow_plan p;
    hpdl_status s = hpdl__matpow_check(n, power, A, lda, out, ldo, sizeof(T));
    if (s != HPDL_OK) return s;
    if (!own_ws && !ws && power > 1) return HPDL_ERR_INVALID;
    hpdl__matpow_plan_init(&p, power, naive);
    if (own_ws && power > 1 &&
        cudaMallocAsync((void **)&ws, hpdl_cuda_matpow_workspace_bytes(n, sizeof(T)), stream) != cudaSuccess) {
        cudaGetLastError();
        return HPDL_ERR_NOMEM;
    }
    s = hpdl__cuda_matpow_run<T>(&p, n, A, lda, out, ldo, algo, ws, stream);
    if (own_ws && power > 1) cudaFreeAsync(ws, stream);
    return s;
}
template <typename T>
static inline hpdl_status hpdl__cuda_add(long long count, T *acc, const T *x, cudaStream_t stream) {
    hpdl__cuda_add_kernel<T><<<hpdl__cuda_grid(count), 256, 0, stream>>>(count, acc, x);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* ------------------------------------------------------------------------ */
/* Sum of powers A_1^p + ... + A_k^p over several GPUs                       */
/* ------------------------------------------------------------------------ */
/* The k matrices are split evenly over G GPUs (the layer placement math,
   matrices for layers). Each GPU computes its matrices' powers on its own
   stream and sums them; the G partial sums then meet on GPU 0 by a tree of
   pairwise moves (log2 G rounds), each a peer copy where peer access exists
   and staged through pinned host memory otherwise, then one add. For k = G =
   2 and n = 10000 in f32 that is one 400 MB copy (~1.5 ms over NVLink)
   against ~0.15 s of products. */
typedef struct hpdl_cuda_powsum {
    hpdl__cuda_lanes lanes;
    int k, n, power;
    size_t elem_bytes;
    int first[HPDL_CUDA_MAX_DEVICES + 1]; /* matrices [first[g], first[g+1]) on GPU g */
    void *mats[HPDL_CUDA_MAX_DEVICES];    /* GPU g: its matrices, n x n each, back to back */
    void *ws[HPDL_CUDA_MAX_DEVICES];      /* GPU g: power workspace; receives a partial sum */
    void *pow[HPDL_CUDA_MAX_DEVICES];     /* GPU g: one power before it is added (k_g > 1) */
    void *acc[HPDL_CUDA_MAX_DEVICES];     /* GPU g: partial sum; acc[0] holds the total */
    hpdl_cuda_xfer_stats xfer;            /* partial sums moved, over all runs */
} hpdl_cuda_powsum;

/* Frees each GPU's buffers and the streams, events and staging buffers that
   hpdl_cuda_powsum_create_<t> made; NULL does nothing. */
HPDL_CUDA_API void hpdl_cuda_powsum_destroy(hpdl_cuda_powsum *p) {
    int g;
    if (!p) return;
    for (g = 0; g < p->lanes.dev.count; g++) {
        cudaSetDevice(p->lanes.dev.physical[g]);
        hpdl_cuda_free(p->mats[g]); hpdl_cuda_free(p->ws[g]);
        hpdl_cuda_free(p->pow[g]); hpdl_cuda_free(p->acc[g]);
        p->mats[g] = p->ws[g] = p->pow[g] = p->acc[g] = NULL;
    }
    hpdl__cuda_lanes_destroy(&p->lanes);
}

/* Plans k matrices of n x n to the power `power` on n_gpus GPUs (at most k of
   them are used). More GPUs than visible: HPDL_ERR_INVALID with a message,
   unless allow_virtual (several logical GPUs on one, for tests). */
HPDL_CUDA_API hpdl_status hpdl__cuda_powsum_create(hpdl_cuda_powsum *p, int k, int n, int power, int n_gpus,
                                              int allow_virtual, size_t elem_bytes) {
    size_t mat;
    int g, used;
    hpdl_status s;
    if (!p || k < 1 || n < 1 || power < 0 || n_gpus < 1) return HPDL_ERR_INVALID;
    memset(p, 0, sizeof *p);
    used = n_gpus < k ? n_gpus : k;
    s = hpdl__cuda_check_gpus(n_gpus, allow_virtual);
    if (s == HPDL_OK) s = hpdl_place_even(k, used, p->first);
    if (s == HPDL_OK) s = hpdl__cuda_lanes_create(&p->lanes, used, allow_virtual, 0);
    if (s != HPDL_OK) return s;
    p->k = k; p->n = n; p->power = power; p->elem_bytes = elem_bytes;
    mat = (size_t)n * (size_t)n * elem_bytes;
    for (g = 0; g < used && s == HPDL_OK; g++) {
        int count = p->first[g + 1] - p->first[g];
        cudaSetDevice(p->lanes.dev.physical[g]);
        s = hpdl_cuda_alloc(&p->mats[g], (size_t)count * mat);
        if (s == HPDL_OK) s = hpdl_cuda_alloc(&p->ws[g], hpdl_cuda_matpow_workspace_bytes(n, elem_bytes));
        if (s == HPDL_OK && count > 1) s = hpdl_cuda_alloc(&p->pow[g], mat);
        if (s == HPDL_OK) s = hpdl_cuda_alloc(&p->acc[g], mat);
    }
    cudaSetDevice(p->lanes.current);
    if (s != HPDL_OK) hpdl_cuda_powsum_destroy(p);
    return s;
}

/* Copies host matrix j (n x n, contiguous) to the GPU that owns it. */
HPDL_CUDA_API hpdl_status hpdl__cuda_powsum_upload(hpdl_cuda_powsum *p, const void *const *host_mats) {
    size_t mat;
    int g, j;
    if (!p || !host_mats) return HPDL_ERR_INVALID;
    for (j = 0; j < p->k; j++) if (!host_mats[j]) return HPDL_ERR_INVALID;
    mat = (size_t)p->n * (size_t)p->n * p->elem_bytes;
    for (g = 0; g < p->lanes.dev.count; g++) {
        HPDL_CUDA_TRY(cudaSetDevice(p->lanes.dev.physical[g]));
        for (j = p->first[g]; j < p->first[g + 1]; j++)
            HPDL_CUDA_TRY(cudaMemcpyAsync((char *)p->mats[g] + (size_t)(j - p->first[g]) * mat, host_mats[j], mat,
                                          cudaMemcpyHostToDevice, p->lanes.stream[g]));
    }
    HPDL_CUDA_TRY(cudaSetDevice(p->lanes.current));
    return hpdl__cuda_lanes_sync(&p->lanes);
}

/* Waits for the last run and copies the sum (n x n) to the host. */
HPDL_CUDA_API hpdl_status hpdl__cuda_powsum_download(hpdl_cuda_powsum *p, void *host_out) {
    hpdl_status s;
    if (!p || !host_out) return HPDL_ERR_INVALID;
    s = hpdl__cuda_lanes_sync(&p->lanes);
    if (s != HPDL_OK) return s;
    HPDL_CUDA_TRY(cudaMemcpy(host_out, p->acc[0], (size_t)p->n * (size_t)p->n * p->elem_bytes, cudaMemcpyDeviceToHost));
    return HPDL_OK;
}

/* GPU g: its matrices' powers summed into acc[g] (on the current device). */
template <typename T>
static inline hpdl_status hpdl__cuda_powsum_local(hpdl_cuda_powsum *p, int g, int naive, hpdl_gemm_algo algo) {
    size_t mat = (size_t)p->n * (size_t)p->n;
    int j;
    for (j = p->first[g]; j < p->first[g + 1]; j++) {
        int into_acc = j == p->first[g];
        T *dst = (T *)(into_acc ? p->acc[g] : p->pow[g]);
        const T *A = (const T *)p->mats[g] + (size_t)(j - p->first[g]) * mat;
        hpdl_status s = hpdl__cuda_matpow_any<T>(naive, p->n, p->power, A, p->n, dst, p->n, algo, (T *)p->ws[g], 0,
                                                 p->lanes.stream[g]);
        if (s == HPDL_OK && !into_acc) s = hpdl__cuda_add<T>((long long)mat, (T *)p->acc[g], dst, p->lanes.stream[g]);
        if (s != HPDL_OK) return s;
    }
    return HPDL_OK;
}
/* One round of the tree: GPU g takes GPU g+step's partial sum. */
template <typename T>
static inline hpdl_status hpdl__cuda_powsum_combine(hpdl_cuda_powsum *p, int g, int src) {
    size_t mat = (size_t)p->n * (size_t)p->n;
    hpdl_status s = hpdl__cuda_lanes_wait(&p->lanes, g, src);
    if (s == HPDL_OK) s = hpdl__cuda_lanes_pull(&p->lanes, g, p->ws[g], src, p->acc[src], mat * sizeof(T), &p->xfer);
    if (s == HPDL_OK && cudaSetDevice(p->lanes.dev.physical[g]) != cudaSuccess) s = HPDL_ERR_CUDA;
    if (s == HPDL_OK) s = hpdl__cuda_add<T>((long long)mat, (T *)p->acc[g], (const T *)p->ws[g], p->lanes.stream[g]);
    return s;
}
/* Computes the sum into GPU 0's buffer, ordered after and before `origin`
   (a stream of GPU 0); naive: p - 1 products per power instead of
   squaring. */
template <typename T>
static inline hpdl_status hpdl__cuda_powsum_run(hpdl_cuda_powsum *p, int naive, hpdl_gemm_algo algo,
                                                cudaStream_t origin) {
    int g, step, G;
    hpdl_status s;
    if (!p || p->elem_bytes != sizeof(T) || !p->lanes.dev.count) return HPDL_ERR_INVALID;
    G = p->lanes.dev.count;
    s = hpdl__cuda_lanes_fork(&p->lanes, origin);
    for (g = 0; g < G && s == HPDL_OK; g++) {
        if (cudaSetDevice(p->lanes.dev.physical[g]) != cudaSuccess) return HPDL_ERR_CUDA;
        s = hpdl__cuda_powsum_local<T>(p, g, naive, algo);
    }
    for (step = 1; step < G && s == HPDL_OK; step *= 2)
        for (g = 0; g + step < G && s == HPDL_OK; g += 2 * step)
            s = hpdl__cuda_powsum_combine<T>(p, g, g + step);
    if (s == HPDL_OK) s = hpdl__cuda_lanes_join(&p->lanes, origin);
    cudaSetDevice(p->lanes.current);
    return s;
}
/* host_out = sum_j host_mats[j]^power, the k matrices spread over n_gpus
   GPUs; everything allocated and freed here. */
template <typename T>
static inline hpdl_status hpdl__cuda_sum_of_powers(int k, const T *const *host_mats, int n, int power, int n_gpus,
                                                   T *host_out, hpdl_gemm_algo algo) {
    hpdl_cuda_powsum p;
    hpdl_status s;
    int j;
    if (!host_mats || !host_out || k < 1) return HPDL_ERR_INVALID;
    for (j = 0; j < k; j++) if (!host_mats[j]) return HPDL_ERR_INVALID;
    s = hpdl__cuda_powsum_create(&p, k, n, power, n_gpus, 0, sizeof(T));
    if (s != HPDL_OK) return s;
    s = hpdl__cuda_powsum_upload(&p, (const void *const *)host_mats);
    if (s == HPDL_OK) s = hpdl__cuda_powsum_run<T>(&p, 0, algo, p.lanes.stream[0]);
    if (s == HPDL_OK) s = hpdl__cuda_powsum_download(&p, host_out);
    hpdl_cuda_powsum_destroy(&p);
    return s;
}

/* ------------------------------------------------------------------------ */
/* One matrix's power over several GPUs, by row blocks                       */
/* ------------------------------------------------------------------------ */
/* GPU g computes rows [r_g, r_g+1) of every product: (X Y)[rows] = X[rows] Y
   needs X's row block but all of Y. The running product is only ever a left
   factor, so its row blocks never move; each square A^(2^i) is a right
   factor next, so after every squaring each GPU gathers the other G-1 row
   blocks: (G-1)/G n^2 elements into each GPU, (G-1) n^2 in all, per
   squaring, plus broadcasting A first and gathering the result on GPU 0 at
   the end. With n = 10000, f32 and G = 2: 200 MB into each GPU per squaring
   (~0.6 ms over NVLink) beside ~20 ms of products each; a step also cannot
   start until every block of its right factor has arrived, so the slowest
   GPU sets the pace. */
typedef struct hpdl_cuda_rowpow {
    hpdl__cuda_lanes lanes;
    int n;
    size_t elem_bytes;
    int rows[HPDL_CUDA_MAX_DEVICES + 1]; /* GPU g computes rows [rows[g], rows[g+1]) */
    void *buf[HPDL_CUDA_MAX_DEVICES];    /* GPU g: input copy + 3 workspace matrices */
    hpdl_cuda_xfer_stats xfer;           /* broadcast, gathers, result: all runs */
} hpdl_cuda_rowpow;

/* Frees each GPU's buffer and the streams, events and staging buffers that
   hpdl_cuda_rowpow_create_<t> made; NULL does nothing. */
HPDL_CUDA_API void hpdl_cuda_rowpow_destroy(hpdl_cuda_rowpow *p) {
    int g;
    if (!p) return;
    for (g = 0; g < p->lanes.dev.count; g++) {
        cudaSetDevice(p->lanes.dev.physical[g]);
        hpdl_cuda_free(p->buf[g]);
        p->buf[g] = NULL;
    }
    hpdl__cuda_lanes_destroy(&p->lanes);
}

/* allow_virtual: several logical GPUs may share one (for tests). */
HPDL_CUDA_API hpdl_status hpdl__cuda_rowpow_create(hpdl_cuda_rowpow *p, int n, int n_gpus, int allow_virtual,
                                              size_t elem_bytes) {
    size_t mat;
    int g;
    hpdl_status s;
    if (!p || n < 1 || n_gpus < 1 || n_gpus > n) return HPDL_ERR_INVALID;
    memset(p, 0, sizeof *p);
    s = hpdl_place_even(n, n_gpus, p->rows);
    if (s == HPDL_OK) s = hpdl__cuda_lanes_create(&p->lanes, n_gpus, allow_virtual, 0);
    if (s != HPDL_OK) return s;
    p->n = n;
    p->elem_bytes = elem_bytes;
    mat = (size_t)n * (size_t)n * elem_bytes;
    for (g = 0; g < n_gpus && s == HPDL_OK; g++) {
        cudaSetDevice(p->lanes.dev.physical[g]);
        s = hpdl_cuda_alloc(&p->buf[g], HPDL__MP_BUFFERS * mat);
    }
    cudaSetDevice(p->lanes.current);
    if (s != HPDL_OK) hpdl_cuda_rowpow_destroy(p);
    return s;
}

/* After a squaring into slot w: every GPU pulls the others' row blocks. */
HPDL_CUDA_API hpdl_status hpdl__cuda_rowpow_gather(hpdl_cuda_rowpow *p, int w) {
    size_t row = (size_t)p->n * p->elem_bytes, slot = row * (size_t)p->n, at;
    int G = p->lanes.dev.count, g, h;
    hpdl_status s = HPDL_OK;
    for (g = 0; g < G && s == HPDL_OK; g++) s = hpdl__cuda_lanes_mark(&p->lanes, g);
    for (h = 0; h < G && s == HPDL_OK; h++)
        for (g = 0; g < G && s == HPDL_OK; g++) {
            if (g == h) continue;
            at = (size_t)w * slot + (size_t)p->rows[g] * row;
            s = hpdl__cuda_lanes_wait_mark(&p->lanes, h, g);
            if (s == HPDL_OK)
                s = hpdl__cuda_lanes_pull(&p->lanes, h, (char *)p->buf[h] + at, g, (const char *)p->buf[g] + at,
                                          (size_t)(p->rows[g + 1] - p->rows[g]) * row, &p->xfer);
        }
    return s;
}

/* GPU 0 collects the result's row blocks (slot w) from the others. */
HPDL_CUDA_API hpdl_status hpdl__cuda_rowpow_collect(hpdl_cuda_rowpow *p, int w) {
    size_t row = (size_t)p->n * p->elem_bytes, at;
    int g;
    hpdl_status s = HPDL_OK;
    for (g = 1; g < p->lanes.dev.count && s == HPDL_OK; g++) {
        at = (size_t)w * row * (size_t)p->n + (size_t)p->rows[g] * row;
        s = hpdl__cuda_lanes_wait(&p->lanes, 0, g);
        if (s == HPDL_OK)
            s = hpdl__cuda_lanes_pull(&p->lanes, 0, (char *)p->buf[0] + at, g, (const char *)p->buf[g] + at,
                                      (size_t)(p->rows[g + 1] - p->rows[g]) * row, &p->xfer);
    }
    return s;
}

/* GPU 0 broadcasts its copy of the input (slot 0) to the others. */
HPDL_CUDA_API hpdl_status hpdl__cuda_rowpow_broadcast(hpdl_cuda_rowpow *p) {
    size_t mat = (size_t)p->n * (size_t)p->n * p->elem_bytes;
    int g;
    hpdl_status s = hpdl__cuda_lanes_mark(&p->lanes, 0);
    for (g = 1; g < p->lanes.dev.count && s == HPDL_OK; g++) {
        s = hpdl__cuda_lanes_wait_mark(&p->lanes, g, 0);
        if (s == HPDL_OK) s = hpdl__cuda_lanes_pull(&p->lanes, g, p->buf[g], 0, p->buf[0], mat, &p->xfer);
    }
    return s;
}

/* Step i of the squaring plan on every GPU, for its own rows. */
template <typename T>
static inline hpdl_status hpdl__cuda_rowpow_step(hpdl_cuda_rowpow *p, hpdl__matpow_step st, hpdl_gemm_algo algo) {
    size_t slot = (size_t)p->n * (size_t)p->n;
    int g;
    for (g = 0; g < p->lanes.dev.count; g++) {
        T *b = (T *)p->buf[g];
        size_t off = (size_t)p->rows[g] * (size_t)p->n;
        hpdl_status s;
        if (cudaSetDevice(p->lanes.dev.physical[g]) != cudaSuccess) return HPDL_ERR_CUDA;
        s = hpdl__cuda_multi_gemm<T>(algo, HPDL_NO_TRANS, HPDL_NO_TRANS, p->rows[g + 1] - p->rows[g], p->n, p->n, 1,
                                     b + st.lhs * slot + off, p->n, b + st.rhs * slot, p->n, 0, b + st.dst * slot + off,
                                     p->n, p->lanes.stream[g]);
        if (s != HPDL_OK) return s;
    }
    return HPDL_OK;
}
/* out = A^power with A and out on GPU 0 (n x n), every GPU computing a
   row block of each product; ordered after and before `origin`. */
template <typename T>
static inline hpdl_status hpdl__cuda_rowpow_run(hpdl_cuda_rowpow *p, int power, const T *A, int lda, T *out, int ldo,
                                                hpdl_gemm_algo algo, cudaStream_t origin) {
    hpdl__matpow_plan plan;
    size_t row = (size_t)p->n * sizeof(T);
    int i, result = HPDL__MP_INPUT;
    hpdl_status s;
    if (!p || p->elem_bytes != sizeof(T) || !p->lanes.dev.count) return HPDL_ERR_INVALID;
    s = hpdl__matpow_check(p->n, power, A, lda, out, ldo, sizeof(T));
    if (s != HPDL_OK) return s;
    hpdl__matpow_plan_init(&plan, power, 0);
    s = hpdl__cuda_lanes_fork(&p->lanes, origin);
    if (s == HPDL_OK && power <= 1)
        s = hpdl__cuda_matpow_any<T>(0, p->n, power, A, lda, out, ldo, algo, NULL, 0, p->lanes.stream[0]);
    if (s == HPDL_OK && power > 1 &&
        cudaMemcpy2DAsync(p->buf[0], row, A, (size_t)lda * sizeof(T), row, (size_t)p->n,
                          cudaMemcpyDeviceToDevice, p->lanes.stream[0]) != cudaSuccess) s = HPDL_ERR_CUDA;
    if (s == HPDL_OK && power > 1) s = hpdl__cuda_rowpow_broadcast(p);
    for (i = 0; i < plan.count && s == HPDL_OK; i++) {
        hpdl__matpow_step st = hpdl__matpow_plan_step(&plan, i);
        s = hpdl__cuda_rowpow_step<T>(p, st, algo);
        if (s == HPDL_OK && st.lhs == st.rhs && i < plan.count - 1) s = hpdl__cuda_rowpow_gather(p, st.dst);
        result = st.dst;
    }
    if (s == HPDL_OK && power > 1) s = hpdl__cuda_rowpow_collect(p, result);
    if (s == HPDL_OK && power > 1 && (cudaSetDevice(p->lanes.dev.physical[0]) != cudaSuccess ||
        cudaMemcpy2DAsync(out, (size_t)ldo * sizeof(T), (const T *)p->buf[0] + (size_t)result * p->n * p->n, row, row,
                          (size_t)p->n, cudaMemcpyDeviceToDevice, p->lanes.stream[0]) != cudaSuccess)) s = HPDL_ERR_CUDA;
    if (s == HPDL_OK) s = hpdl__cuda_lanes_join(&p->lanes, origin);
    cudaSetDevice(p->lanes.current);
    return s;
}

/* The typed names of the matrix-power family, each a call of the templates
   above (T: the storage type; the sums in ACC, rounding by LOAD/STORE as the
   CPU twin does, are the templates' hpdl__elem<T>).
   hpdl_cuda_matpow_ws_<t>: out = A^power (n x n, row-major) on the current
   device, ordered on stream; ws: hpdl_cuda_matpow_workspace_bytes(n,
   sizeof(T)) of device memory (unused for power <= 1); out must not overlap
   A. hpdl_cuda_matpow_<t>: the same, the workspace allocated and freed on
   the stream. _naive: power - 1 products, the baseline the squaring is
   measured against. powsum / sum_of_powers / rowpow: see their sections. */
#define HPDL_DEFINE_CUDA_MATPOW(SUFFIX, T, ACC, LOAD, STORE)                                                        \
    HPDL_CUDA_API hpdl_status hpdl_cuda_matpow_ws_##SUFFIX(int n, int power, const T *A, int lda, T *out, int ldo,  \
                                                           hpdl_gemm_algo algo, T *ws, cudaStream_t stream) {     \
        return hpdl__cuda_matpow_any<T>(0, n, power, A, lda, out, ldo, algo, ws, 0, stream);                       \
    }                                                                                                             \
    HPDL_CUDA_API hpdl_status hpdl_cuda_matpow_##SUFFIX(int n, int power, const T *A, int lda, T *out, int ldo,     \
                                                        hpdl_gemm_algo algo, cudaStream_t stream) {               \
        return hpdl__cuda_matpow_any<T>(0, n, power, A, lda, out, ldo, algo, (T *)NULL, 1, stream);                \
    }                                                                                                             \
    HPDL_CUDA_API hpdl_status hpdl_cuda_matpow_naive_ws_##SUFFIX(int n, int power, const T *A, int lda, T *out,   \
                                                                 int ldo, hpdl_gemm_algo algo, T *ws,             \
                                                                 cudaStream_t stream) {                           \
        return hpdl__cuda_matpow_any<T>(1, n, power, A, lda, out, ldo, algo, ws, 0, stream);                       \
    }                                                                                                             \
    HPDL_CUDA_API hpdl_status hpdl_cuda_matpow_naive_##SUFFIX(int n, int power, const T *A, int lda, T *out,      \
                                                              int ldo, hpdl_gemm_algo algo, cudaStream_t stream) { \
        return hpdl__cuda_matpow_any<T>(1, n, power, A, lda, out, ldo, algo, (T *)NULL, 1, stream);                \
    }                                                                                                             \
    HPDL_CUDA_API hpdl_status hpdl_cuda_powsum_create_##SUFFIX(hpdl_cuda_powsum *p, int k, int n, int power,       \
                                                               int n_gpus, int allow_virtual) {                   \
        return hpdl__cuda_powsum_create(p, k, n, power, n_gpus, allow_virtual, sizeof(T));                         \
    }                                                                                                             \
    HPDL_CUDA_API hpdl_status hpdl_cuda_powsum_upload_##SUFFIX(hpdl_cuda_powsum *p, const T *const *host_mats) {  \
        if (!p || p->elem_bytes != sizeof(T)) return HPDL_ERR_INVALID;                                            \
        return hpdl__cuda_powsum_upload(p, (const void *const *)host_mats);                                       \
    }                                                                                                             \
    HPDL_CUDA_API hpdl_status hpdl_cuda_powsum_download_##SUFFIX(hpdl_cuda_powsum *p, T *host_out) {              \
        if (!p || p->elem_bytes != sizeof(T)) return HPDL_ERR_INVALID;                                            \
        return hpdl__cuda_powsum_download(p, host_out);                                                           \
    }                                                                                                             \
    HPDL_CUDA_API hpdl_status hpdl_cuda_powsum_run_##SUFFIX(hpdl_cuda_powsum *p, int naive, hpdl_gemm_algo algo,  \
                                                            cudaStream_t origin) {                                \
        return hpdl__cuda_powsum_run<T>(p, naive, algo, origin);                                                  \
    }                                                                                                             \
    HPDL_CUDA_API hpdl_status hpdl_cuda_sum_of_powers_##SUFFIX(int k, const T *const *host_mats, int n, int power, \
                                                               int n_gpus, T *host_out, hpdl_gemm_algo algo) {    \
        return hpdl__cuda_sum_of_powers<T>(k, host_mats, n, power, n_gpus, host_out, algo);                       \
    }                                                                                                             \
    HPDL_CUDA_API hpdl_status hpdl_cuda_rowpow_create_##SUFFIX(hpdl_cuda_rowpow *p, int n, int n_gpus,            \
                                                               int allow_virtual) {                               \
        return hpdl__cuda_rowpow_create(p, n, n_gpus, allow_virtual, sizeof(T));                                  \
    }                                                                                                             \
    HPDL_CUDA_API hpdl_status hpdl_cuda_rowpow_run_##SUFFIX(hpdl_cuda_rowpow *p, int power, const T *A, int lda,  \
                                                            T *out, int ldo, hpdl_gemm_algo algo,                 \
                                                            cudaStream_t origin) {                                \
        return hpdl__cuda_rowpow_run<T>(p, power, A, lda, out, ldo, algo, origin);                                \
    }

/* hpdl_cuda_matpow_ws_f32 hpdl_cuda_matpow_f32 hpdl_cuda_matpow_naive_ws_f32
   hpdl_cuda_matpow_naive_f32 hpdl_cuda_powsum_create_f32 hpdl_cuda_powsum_upload_f32
   hpdl_cuda_powsum_download_f32 hpdl_cuda_powsum_run_f32 hpdl_cuda_sum_of_powers_f32
   hpdl_cuda_rowpow_create_f32 hpdl_cuda_rowpow_run_f32 hpdl_cuda_matpow_ws_f64 hpdl_cuda_matpow_f64
   hpdl_cuda_matpow_naive_ws_f64 hpdl_cuda_matpow_naive_f64 hpdl_cuda_powsum_create_f64
   hpdl_cuda_powsum_upload_f64 hpdl_cuda_powsum_download_f64 hpdl_cuda_powsum_run_f64
   hpdl_cuda_sum_of_powers_f64 hpdl_cuda_rowpow_create_f64 hpdl_cuda_rowpow_run_f64
   hpdl_cuda_matpow_ws_f16 hpdl_cuda_matpow_f16 hpdl_cuda_matpow_naive_ws_f16
   hpdl_cuda_matpow_naive_f16 hpdl_cuda_powsum_create_f16 hpdl_cuda_powsum_upload_f16
   hpdl_cuda_powsum_download_f16 hpdl_cuda_powsum_run_f16 hpdl_cuda_sum_of_powers_f16
   hpdl_cuda_rowpow_create_f16 hpdl_cuda_rowpow_run_f16 hpdl_cuda_matpow_ws_bf16
   hpdl_cuda_matpow_bf16 hpdl_cuda_matpow_naive_ws_bf16 hpdl_cuda_matpow_naive_bf16
   hpdl_cuda_powsum_create_bf16 hpdl_cuda_powsum_upload_bf16 hpdl_cuda_powsum_download_bf16
   hpdl_cuda_powsum_run_bf16 hpdl_cuda_sum_of_powers_bf16 hpdl_cuda_rowpow_create_bf16
   hpdl_cuda_rowpow_run_bf16 */
HPDL_FOR_EACH_FLOAT_TYPE(HPDL_DEFINE_CUDA_MATPOW)

/* ------------------------------------------------------------------------ */
/* Model parallelism: a deep stack of linear layers over several GPUs        */
/* ------------------------------------------------------------------------ */
/* The course's "LargeLinearModel": depth layers h_{l+1} = relu(h_l W_l) of
   dim x dim (no ReLU after the last), loss = 1/(2 batch) sum ||h_depth -
   target||^2, plain SGD, f32. Device g owns the contiguous layers
   [first[g], first[g+1]) (hpdl_place_even / _balanced / _from_map).

   Each GPU has one stream, and events hand activations forward and
   gradients backward (the receiver pulls: a peer copy, or staged through
   pinned host memory). More devices than GPUs (allow_virtual) fold onto
   them, device d on GPU d % GPUs: with hpdl_place_even that interleaves
   the pipeline, each GPU holding several chunks of layers that are not
   adjacent, and the schedules below queue the chunks of one GPU
   breadth-first (2 GPUs, DEPTH 24, 4 chunks a GPU: GPipe 0.57 of naive,
   against 0.63 with one chunk; notes/multi.md). Three schedules of the
   same arithmetic:

   naive (micro = HPDL_DL_NAIVE): textbook model parallelism, as autograd
   runs it. Forward device by device, then backward device by device, each
   layer taking its input gradient and then its weight update W -= lr h^T dz
   (SGD fused into the weight-gradient product, beta = 1). A device starts
   only when the previous one has finished everything, so exactly one GPU
   is busy at any time: the step takes as long as on one GPU.

   pipelined with m micro-batches (GPipe): the batch's rows are split into
   m slices; all forwards, then all backwards (input gradients only), slice
   by slice, then each device computes its weight gradients for the whole
   batch in one product per layer, fused with the update as above. With G
   devices and equal stages the forward/backward phases leave a bubble
   (G-1)/(m+G-1) of each device's time idle. Deferring the weight gradients
   is exact (it is the sum over micro-batches that GPipe accumulates, as one
   product over the whole batch) and keeps those products large. Even m = 1
   overlaps: device G-1's weight gradients run while device G-2 is still in
   its backward, so "pipelined m = 1" is faster than naive. GPipe holds
   every micro-batch's activations (and dz) until the update: m of them.

   1F1B with m micro-batches (PipeDream-flush, micro = HPDL_DL_1F1B(m), a
   model made by hpdl_cuda_deep_linear_create_1f1b): stage g runs
   min(m, G-1-g) warm-up forwards, then one forward and one backward
   alternately, then the remaining backwards; each backward adds its
   micro-batch's weight gradients to a buffer (dw = -lr sum h^T dz) and
   frees its activations, and one update per batch adds dw to W. Same
   bubble as GPipe, same gradient to rounding, but stage g never holds
   more than G - g micro-batches' activations (a ring of that many slots)
   instead of m; the price is a weight-sized gradient buffer and weight
   gradients taken in products of batch/m rows. Hand-offs are events per
   micro-batch (forward done, backward done, gradient pulled: the last
   lets a stage reuse its one outgoing gradient slot). */

__global__ void hpdl__cuda_relu_kernel(long long n, float *x) {
    long long i;
    for (i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        x[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

/* dz = dh where the layer's output was positive (relu'), else 0. */
__global__ void hpdl__cuda_relu_backward_kernel(long long n, const float *dh, const float *out, float *dz) {
    long long i;
    for (i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        dz[i] = out[i] > 0.0f ? dh[i] : 0.0f;
}

/* dz = (y - t) * scale and *loss += scale/2 * sum (y - t)^2 (block sums, one
   atomic add per block). Launched with 256 threads. */
__global__ void hpdl__cuda_mse_kernel(long long n, const float *y, const float *t, float *dz, float scale, float *loss) {
    __shared__ float part[256];
    float sum = 0.0f;
    long long i;
    int k;
    for (i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        float d = y[i] - t[i];
        dz[i] = d * scale;
        sum += d * d;
    }
    part[threadIdx.x] = sum;
    __syncthreads();
    for (k = 128; k > 0; k >>= 1) {
        if ((int)threadIdx.x < k) part[threadIdx.x] += part[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(loss, 0.5f * scale * part[0]);
}

/* x[i] = uniform in [-a, a) from a hash of (seed, first + i): the same
   values whatever device or buffer holds element first + i. */
__global__ void hpdl__cuda_fill_uniform_kernel(long long n, float *x, unsigned long long seed, long long first, float a) {
    long long i;
    for (i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        unsigned long long z = seed + 0x9e3779b97f4a7c15ull * (unsigned long long)(first + i + 1);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull; /* splitmix64 finaliser */
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        z ^= z >> 31;
        x[i] = a * (2.0f * (float)(z >> 40) * (1.0f / 16777216.0f) - 1.0f);
    }
}

/* The `micro` argument of hpdl_cuda_deep_linear_step / _profile that asks
   for the naive schedule instead of GPipe with that many micro-batches. */
#define HPDL_DL_NAIVE 0

/* The `micro` argument of a 1F1B step with m micro-batches (negative, so
   that one int names every schedule); only a model made by
   hpdl_cuda_deep_linear_create_1f1b for m runs it. */
#define HPDL_DL_1F1B(m) (-(m))

/* How many micro-batch slices a step with this `micro` runs (naive: one). */
HPDL_CUDA_API int hpdl_cuda_deep_linear_slices(int micro) {
    return micro == HPDL_DL_NAIVE ? 1 : micro < 0 ? -micro : micro;
}

/* A deep linear model over a device set (hpdl_cuda_deep_linear_create, _create_1f1b): each device's
   layers, activations and gradients, the hand-off events, and the last step's transfer counts. */
typedef struct hpdl_cuda_deep_linear {
    hpdl__cuda_lanes lanes;                 /* one stream per GPU, shared by its stages */
    int depth, dim, batch;
    int ring;                               /* 1F1B model: its micro-batch count; 0: whole-batch buffers */
    int first[HPDL_CUDA_MAX_DEVICES + 1];   /* device g owns layers [first[g], first[g+1]) */
    int rows_cap[HPDL_CUDA_MAX_DEVICES];    /* rows of each layer's activations that device g stores */
    hpdl_gemm_algo algo;                    /* HPDL_GEMM_CUBLAS unless changed */
    float *w[HPDL_CUDA_MAX_DEVICES];        /* g: its layers' weights, dim x dim each */
    float *dw[HPDL_CUDA_MAX_DEVICES];       /* 1F1B: -lr x the weight gradients summed over micro-batches */
    float *x;                               /* the input rows, batch x dim, on device 0 */
    float *h[HPDL_CUDA_MAX_DEVICES];        /* g: its received input (g > 0) and its layers' outputs */
    float *dz[HPDL_CUDA_MAX_DEVICES];       /* g: loss gradient w.r.t. its layers' pre-activations */
    float *dh_in[HPDL_CUDA_MAX_DEVICES];    /* g: gradient arriving from device g + 1 */
    float *dh[HPDL_CUDA_MAX_DEVICES];       /* g: gradient going down its layers, then to g - 1 */
    float *target, *loss;                   /* on the last device */
    size_t bytes[HPDL_CUDA_MAX_DEVICES];    /* device memory the model holds, per device */
    size_t act_bytes[HPDL_CUDA_MAX_DEVICES]; /* of which activations and their gradients (h, dz, dh_in, dh) */
    int live[HPDL_CUDA_MAX_DEVICES];        /* micro-batches whose activations device g holds now */
    int peak_live[HPDL_CUDA_MAX_DEVICES];   /* and the most it held during the last step */
    cudaEvent_t *flow[HPDL_CUDA_MAX_DEVICES]; /* per micro-batch: forward done, backward done (1F1B: gradient pulled) */
    int n_flow;                             /* events in each flow[g] */
    hpdl_cuda_xfer_stats fwd, bwd;          /* moves of the last step, each way */
    cudaEvent_t *marks[HPDL_CUDA_MAX_DEVICES]; /* while profiling: busy intervals' ends */
    int n_marks[HPDL_CUDA_MAX_DEVICES];
} hpdl_cuda_deep_linear;

/* A contiguous placement: first[0] = 0 < first[1] < ... < first[G] = layers. */
HPDL_CUDA_API hpdl_status hpdl__placement_check(int n_layers, int n_devices, const int *first) {
    int d;
    if (!first || n_devices < 1 || n_devices > HPDL_CUDA_MAX_DEVICES) return HPDL_ERR_INVALID;
    if (first[0] != 0 || first[n_devices] != n_layers) return HPDL_ERR_INVALID;
    for (d = 0; d < n_devices; d++) if (first[d + 1] <= first[d]) return HPDL_ERR_INVALID;
    return HPDL_OK;
}

HPDL_CUDA_API int hpdl__dl_layers(const hpdl_cuda_deep_linear *m, int g) { return m->first[g + 1] - m->first[g]; }

/* Where device g stores micro-batch i (of `rows` rows): whole-batch buffers
   keep every micro-batch at its own rows; a 1F1B model's ring of
   rows_cap / rows slots reuses a slot once its micro-batch's backward is
   done (the schedule never holds more, see hpdl__dl_1f1b_op). */
HPDL_CUDA_API int hpdl__dl_row(const hpdl_cuda_deep_linear *m, int g, int i, int rows) {
    return (i % (m->rows_cap[g] / rows)) * rows;
}

/* Input (s = 0) or output of device g's layer s - 1 for micro-batch i; on
   device 0 the input is the data itself. */
HPDL_CUDA_API float *hpdl__dl_act(const hpdl_cuda_deep_linear *m, int g, int s, int i, int rows) {
    int k = g == 0 ? s - 1 : s;
    if (k < 0) return m->x + (size_t)i * rows * m->dim;
    return m->h[g] + ((size_t)k * m->rows_cap[g] + hpdl__dl_row(m, g, i, rows)) * m->dim;
}

/* dz of device g's layer s for micro-batch i. A 1F1B model takes each
   layer's weight gradient as soon as dz is made, so one micro-batch's dz
   serves every layer in turn. */
HPDL_CUDA_API float *hpdl__dl_dz(const hpdl_cuda_deep_linear *m, int g, int s, int i, int rows) {
    if (m->ring) return m->dz[g];
    return m->dz[g] + ((size_t)s * m->batch + (size_t)i * rows) * m->dim;
}

/* A gradient in flight (buf: dh_in or dh) for micro-batch i: at its rows, or
   a 1F1B model's one micro-batch slot. */
HPDL_CUDA_API float *hpdl__dl_grad(const hpdl_cuda_deep_linear *m, float *buf, int i, int rows) {
    return m->ring ? buf : buf + (size_t)i * rows * m->dim;
}

HPDL_CUDA_API float *hpdl__dl_w(const hpdl_cuda_deep_linear *m, int g, int s) {
    return m->w[g] + (size_t)s * m->dim * m->dim;
}

HPDL_CUDA_API void hpdl__dl_events_free(hpdl_cuda_deep_linear *m, int g) {
    int k;
    for (k = 0; m->flow[g] && k < m->n_flow; k++)
        if (m->flow[g][k]) cudaEventDestroy(m->flow[g][k]);
    HPDL_FREE(m->flow[g]);
    m->flow[g] = NULL;
}

/* Device g's n hand-off events (current device set by the caller). */
HPDL_CUDA_API hpdl_status hpdl__dl_events_alloc(hpdl_cuda_deep_linear *m, int g, int n) {
    int k;
    m->flow[g] = (cudaEvent_t *)hpdl_alloc((size_t)n, sizeof(cudaEvent_t));
    if (!m->flow[g]) return HPDL_ERR_NOMEM;
    memset(m->flow[g], 0, (size_t)n * sizeof(cudaEvent_t));
    for (k = 0; k < n; k++)
        if (cudaEventCreateWithFlags(&m->flow[g][k], cudaEventDisableTiming) != cudaSuccess) return HPDL_ERR_CUDA;
    return HPDL_OK;
}

/* GPipe's hand-offs of `micro` micro-batches: 2 micro events a device
   (forward i done, backward i done), made again when a step needs more. */
HPDL_CUDA_API hpdl_status hpdl__dl_gpipe_events(hpdl_cuda_deep_linear *m, int micro) {
    int g;
    hpdl_status s = HPDL_OK;
    if (m->n_flow >= 2 * micro) return HPDL_OK;
    for (g = 0; g < m->lanes.dev.count; g++) hpdl__dl_events_free(m, g);
    m->n_flow = 2 * micro;
    for (g = 0; g < m->lanes.dev.count && s == HPDL_OK; g++) {
        if (cudaSetDevice(m->lanes.dev.physical[g]) != cudaSuccess) return HPDL_ERR_CUDA;
        s = hpdl__dl_events_alloc(m, g, m->n_flow);
    }
    return s;
}

/* Frees every device's weights, activations, gradients and hand-off events, the input, target and
   loss, and its lanes (streams, events, pinned staging); NULL does nothing. */
HPDL_CUDA_API void hpdl_cuda_deep_linear_destroy(hpdl_cuda_deep_linear *m) {
    int g;
    if (!m) return;
    for (g = 0; g < m->lanes.dev.count; g++) {
        cudaSetDevice(m->lanes.dev.physical[g]);
        hpdl__dl_events_free(m, g);
        hpdl_cuda_free(m->w[g]); hpdl_cuda_free(m->dw[g]); hpdl_cuda_free(m->h[g]); hpdl_cuda_free(m->dz[g]);
        hpdl_cuda_free(m->dh_in[g]); hpdl_cuda_free(m->dh[g]);
        m->w[g] = m->dw[g] = m->h[g] = m->dz[g] = m->dh_in[g] = m->dh[g] = NULL;
    }
    if (m->lanes.dev.count) {
        cudaSetDevice(m->lanes.dev.physical[0]);
        hpdl_cuda_free(m->x);
        cudaSetDevice(m->lanes.dev.physical[m->lanes.dev.count - 1]);
        hpdl_cuda_free(m->target); hpdl_cuda_free(m->loss);
    }
    m->x = m->target = m->loss = NULL;
    hpdl__cuda_lanes_destroy(&m->lanes);
}

/* One buffer of `count` floats on the current device, counted in *bytes. */
HPDL_CUDA_API hpdl_status hpdl__dl_buffer(float **p, size_t count, size_t *bytes) {
    *bytes += count * sizeof(float);
    return hpdl_cuda_alloc((void **)p, count * sizeof(float));
}

/* Device g's activation buffers (current device set by the caller): the
   received input and L outputs of rows_cap rows each; dz of every layer for
   the whole batch, or (1F1B) of one micro-batch; one gradient each way. */
HPDL_CUDA_API hpdl_status hpdl__dl_alloc_act(hpdl_cuda_deep_linear *m, int g) {
    size_t L = (size_t)hpdl__dl_layers(m, g), row = (size_t)m->dim, in = g > 0;
    size_t grad_rows = m->ring ? (size_t)(m->batch / m->ring) : (size_t)m->batch;
    hpdl_status s = hpdl__dl_buffer(&m->h[g], (L + in) * m->rows_cap[g] * row, &m->act_bytes[g]);
    if (s == HPDL_OK) s = hpdl__dl_buffer(&m->dz[g], (m->ring ? 1 : L) * grad_rows * row, &m->act_bytes[g]);
    if (s == HPDL_OK) s = hpdl__dl_buffer(&m->dh_in[g], grad_rows * row, &m->act_bytes[g]);
    if (s == HPDL_OK) s = hpdl__dl_buffer(&m->dh[g], grad_rows * row, &m->act_bytes[g]);
    return s;
}

/* Allocates device g's share (current device set by the caller): weights,
   activations, the data (device 0: input, last device: targets) and, for
   1F1B, the weight gradients and the hand-off events. */
HPDL_CUDA_API hpdl_status hpdl__dl_alloc(hpdl_cuda_deep_linear *m, int g) {
    size_t act = (size_t)m->batch * m->dim, ww = (size_t)hpdl__dl_layers(m, g) * m->dim * m->dim;
    hpdl_status s = hpdl__dl_buffer(&m->w[g], ww, &m->bytes[g]);
    if (s == HPDL_OK) s = hpdl__dl_alloc_act(m, g);
    m->bytes[g] += m->act_bytes[g];
    if (s == HPDL_OK && g == 0) s = hpdl__dl_buffer(&m->x, act, &m->bytes[g]);
    if (s == HPDL_OK && g == m->lanes.dev.count - 1) {
        s = hpdl__dl_buffer(&m->target, act, &m->bytes[g]);
        if (s == HPDL_OK) s = hpdl__dl_buffer(&m->loss, 1, &m->bytes[g]);
    }
    if (s != HPDL_OK || !m->ring) return s;
    s = hpdl__dl_buffer(&m->dw[g], ww, &m->bytes[g]);
    m->n_flow = 3 * m->ring;
    return s == HPDL_OK ? hpdl__dl_events_alloc(m, g, m->n_flow) : s;
}

/* Both creates: ring = 0 (whole-batch buffers) or a 1F1B micro-batch count. */
HPDL_CUDA_API hpdl_status hpdl__dl_create(hpdl_cuda_deep_linear *m, int depth, int dim, int batch, int ring,
                                     const int *first, int n_devices, int allow_virtual) {
    hpdl_status s;
    int g;
    if (!m || depth < 1 || dim < 1 || batch < 1 || ring < 0 || (ring && batch % ring)) return HPDL_ERR_INVALID;
    s = hpdl__placement_check(depth, n_devices, first);
    if (s != HPDL_OK) return s;
    memset(m, 0, sizeof *m);
    s = hpdl__cuda_lanes_create(&m->lanes, n_devices, allow_virtual, 1);
    if (s != HPDL_OK) return s;
    m->depth = depth; m->dim = dim; m->batch = batch; m->ring = ring;
    m->algo = HPDL_GEMM_CUBLAS;
    memcpy(m->first, first, (size_t)(n_devices + 1) * sizeof *first);
    for (g = 0; g < n_devices; g++) /* 1F1B: stage g holds at most G - g micro-batches */
        m->rows_cap[g] = ring ? (ring < n_devices - g ? ring : n_devices - g) * (batch / ring) : batch;
    for (g = 0; g < n_devices && s == HPDL_OK; g++) {
        if (cudaSetDevice(m->lanes.dev.physical[g]) != cudaSuccess) s = HPDL_ERR_CUDA;
        if (s == HPDL_OK) s = hpdl__dl_alloc(m, g);
    }
    cudaSetDevice(m->lanes.current);
    if (s != HPDL_OK) hpdl_cuda_deep_linear_destroy(m);
    return s;
}

/* A model of `depth` layers of dim x dim for batches of `batch` rows, placed
   on n_devices logical devices by `first` (n_devices + 1 entries, e.g. from
   hpdl_place_even), for the naive and GPipe schedules: every layer's
   activations of the whole batch are stored. allow_virtual maps more
   devices than GPUs onto the GPUs (d % count) so the same code runs on one
   GPU. Weights are not yet set. */
HPDL_CUDA_API hpdl_status hpdl_cuda_deep_linear_create(hpdl_cuda_deep_linear *m, int depth, int dim, int batch,
                                                  const int *first, int n_devices, int allow_virtual) {
    return hpdl__dl_create(m, depth, dim, batch, 0, first, n_devices, allow_virtual);
}

/* The same model for the 1F1B schedule with `micro` micro-batches (batch %
   micro == 0): device g stores min(micro, n_devices - g) micro-batches'
   activations, one micro-batch's dz and gradients, and a weight-gradient
   buffer the size of its weights. Runs hpdl_cuda_deep_linear_step with
   HPDL_DL_1F1B(micro) only. */
HPDL_CUDA_API hpdl_status hpdl_cuda_deep_linear_create_1f1b(hpdl_cuda_deep_linear *m, int depth, int dim, int batch,
                                                       int micro, const int *first, int n_devices,
                                                       int allow_virtual) {
    if (micro < 1) return HPDL_ERR_INVALID;
    return hpdl__dl_create(m, depth, dim, batch, micro, first, n_devices, allow_virtual);
}

HPDL_CUDA_API hpdl_status hpdl__cuda_fill_uniform(float *x, long long n, unsigned long long seed, long long first, float a,
                                             cudaStream_t stream) {
    hpdl__cuda_fill_uniform_kernel<<<hpdl__cuda_grid(n), 256, 0, stream>>>(n, x, seed, first, a);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* Weights uniform in +-sqrt(6/dim) (He: activations keep their scale
   through the ReLUs); layer l's values depend on (seed, l) only, so every
   placement starts from the same model. */
HPDL_CUDA_API hpdl_status hpdl_cuda_deep_linear_init(hpdl_cuda_deep_linear *m, unsigned long long seed) {
    long long per = 0;
    int g;
    hpdl_status s = HPDL_OK;
    if (!m || !m->lanes.dev.count) return HPDL_ERR_INVALID;
    per = (long long)m->dim * m->dim;
    for (g = 0; g < m->lanes.dev.count && s == HPDL_OK; g++) {
        HPDL_CUDA_TRY(cudaSetDevice(m->lanes.dev.physical[g]));
        s = hpdl__cuda_fill_uniform(m->w[g], hpdl__dl_layers(m, g) * per, seed, m->first[g] * per,
                                    sqrtf(6.0f / (float)m->dim), m->lanes.stream[g]);
    }
    if (s == HPDL_OK) s = hpdl__cuda_lanes_sync(&m->lanes);
    cudaSetDevice(m->lanes.current);
    return s;
}

/* Input rows (device 0) and targets (last device), uniform in [-1, 1). */
HPDL_CUDA_API hpdl_status hpdl_cuda_deep_linear_random_batch(hpdl_cuda_deep_linear *m, unsigned long long seed) {
    long long n;
    int last;
    hpdl_status s;
    if (!m || !m->lanes.dev.count) return HPDL_ERR_INVALID;
    n = (long long)m->batch * m->dim;
    last = m->lanes.dev.count - 1;
    HPDL_CUDA_TRY(cudaSetDevice(m->lanes.dev.physical[0]));
    s = hpdl__cuda_fill_uniform(m->x, n, seed, 0, 1.0f, m->lanes.stream[0]);
    if (s == HPDL_OK && cudaSetDevice(m->lanes.dev.physical[last]) != cudaSuccess) s = HPDL_ERR_CUDA;
    if (s == HPDL_OK) s = hpdl__cuda_fill_uniform(m->target, n, seed, n, 1.0f, m->lanes.stream[last]);
    if (s == HPDL_OK) s = hpdl__cuda_lanes_sync(&m->lanes);
    cudaSetDevice(m->lanes.current);
    return s;
}

/* Copies layer l's weights (dim x dim) to the host. */
HPDL_CUDA_API hpdl_status hpdl_cuda_deep_linear_get_weights(hpdl_cuda_deep_linear *m, int layer, float *host) {
    int g = 0;
    hpdl_status s;
    if (!m || !host || layer < 0 || layer >= m->depth) return HPDL_ERR_INVALID;
    while (layer >= m->first[g + 1]) g++;
    s = hpdl__cuda_lanes_sync(&m->lanes);
    if (s != HPDL_OK) return s;
    HPDL_CUDA_TRY(cudaMemcpy(host, hpdl__dl_w(m, g, layer - m->first[g]), (size_t)m->dim * m->dim * sizeof(float),
                             cudaMemcpyDeviceToHost));
    return HPDL_OK;
}

/* Copies the input rows (batch x dim) or the targets to the host. */
HPDL_CUDA_API hpdl_status hpdl_cuda_deep_linear_get_batch(hpdl_cuda_deep_linear *m, float *host_x, float *host_target) {
    size_t bytes;
    hpdl_status s;
    if (!m || !m->lanes.dev.count) return HPDL_ERR_INVALID;
    bytes = (size_t)m->batch * m->dim * sizeof(float);
    s = hpdl__cuda_lanes_sync(&m->lanes);
    if (s != HPDL_OK) return s;
    if (host_x) HPDL_CUDA_TRY(cudaMemcpy(host_x, m->x, bytes, cudaMemcpyDeviceToHost));
    if (host_target) HPDL_CUDA_TRY(cudaMemcpy(host_target, m->target, bytes, cudaMemcpyDeviceToHost));
    return HPDL_OK;
}

/* Loss of the last step (waits for it). */
HPDL_CUDA_API hpdl_status hpdl_cuda_deep_linear_loss(hpdl_cuda_deep_linear *m, float *loss) {
    hpdl_status s;
    if (!m || !loss || !m->lanes.dev.count) return HPDL_ERR_INVALID;
    s = hpdl__cuda_lanes_sync(&m->lanes);
    if (s != HPDL_OK) return s;
    HPDL_CUDA_TRY(cudaMemcpy(loss, m->loss, sizeof *loss, cudaMemcpyDeviceToHost));
    return HPDL_OK;
}

/* Bytes of activations device g held at the worst moment of the last step:
   the micro-batches it held at once (peak_live) times one micro-batch's
   stored activations, plus the buffers every micro-batch passes through
   (a 1F1B model's dz and gradient slots; the whole-batch buffers' dz is
   per micro-batch and counted with it). `micro` as for the step. */
HPDL_CUDA_API size_t hpdl_cuda_deep_linear_peak_act_bytes(const hpdl_cuda_deep_linear *m, int g, int micro) {
    size_t rows = (size_t)(m->batch / hpdl_cuda_deep_linear_slices(micro)), row = (size_t)m->dim * sizeof(float);
    size_t L = (size_t)hpdl__dl_layers(m, g), in = g > 0, held = m->ring ? L + in : 2 * L + in;
    size_t transit = m->ring ? 3 * rows : 2 * (size_t)m->batch; /* dz, dh_in, dh; or dh_in, dh */
    return ((size_t)m->peak_live[g] * held * rows + transit) * row;
}

/* Prints the layer -> GPU map and the memory each device holds. */
HPDL_CUDA_API void hpdl_cuda_deep_linear_print_map(const hpdl_cuda_deep_linear *m, FILE *f) {
    int g;
    for (g = 0; g < m->lanes.dev.count; g++)
        fprintf(f, "  device %d (GPU %d): layers %d..%d, %.1f MiB, of which activations %.1f MiB\n", g,
                m->lanes.dev.physical[g], m->first[g], m->first[g + 1] - 1, m->bytes[g] / 1048576.0,
                m->act_bytes[g] / 1048576.0);
}

/* While profiling, records the start or the end of a busy interval. */
HPDL_CUDA_API void hpdl__dl_mark(hpdl_cuda_deep_linear *m, int g) {
    if (m->marks[g]) cudaEventRecord(m->marks[g][m->n_marks[g]++], m->lanes.stream[g]);
}

HPDL_CUDA_API hpdl_status hpdl__dl_gemm(hpdl_cuda_deep_linear *m, int g, hpdl_transpose ta, hpdl_transpose tb, int M, int K,
                                   float alpha, const float *A, const float *B, float beta, float *C) {
    return hpdl__cuda_multi_gemm<float>(m->algo, ta, tb, M, m->dim, K, alpha, A, m->dim, B, m->dim, beta, C, m->dim,
                                   m->lanes.stream[g]);
}

/* Device g now holds one more micro-batch's activations. */
HPDL_CUDA_API void hpdl__dl_hold(hpdl_cuda_deep_linear *m, int g) {
    if (++m->live[g] > m->peak_live[g]) m->peak_live[g] = m->live[g];
}

/* Forward of micro-batch i (`rows` rows) through device g's layers. */
HPDL_CUDA_API hpdl_status hpdl__dl_forward(hpdl_cuda_deep_linear *m, int g, int i, int rows) {
    size_t bytes = (size_t)rows * m->dim * sizeof(float);
    long long count = (long long)rows * m->dim;
    int s, L = hpdl__dl_layers(m, g), last = m->lanes.dev.count - 1;
    hpdl_status st = HPDL_OK;
    if (g > 0) st = hpdl__cuda_lanes_pull(&m->lanes, g, hpdl__dl_act(m, g, 0, i, rows), g - 1,
                                          hpdl__dl_act(m, g - 1, hpdl__dl_layers(m, g - 1), i, rows), bytes, &m->fwd);
    hpdl__dl_mark(m, g);
    hpdl__dl_hold(m, g);
    for (s = 0; s < L && st == HPDL_OK; s++) {
        float *out = hpdl__dl_act(m, g, s + 1, i, rows);
        st = hpdl__dl_gemm(m, g, HPDL_NO_TRANS, HPDL_NO_TRANS, rows, m->dim, 1.0f, hpdl__dl_act(m, g, s, i, rows),
                           hpdl__dl_w(m, g, s), 0.0f, out);
        if (st == HPDL_OK && m->first[g] + s < m->depth - 1) {
            hpdl__cuda_relu_kernel<<<hpdl__cuda_grid(count), 256, 0, m->lanes.stream[g]>>>(count, out);
            if (cudaGetLastError() != cudaSuccess) st = HPDL_ERR_CUDA;
        }
    }
    if (st == HPDL_OK && g == last) { /* the loss gradient is the last layer's dz */
        hpdl__cuda_mse_kernel<<<hpdl__cuda_grid(count), 256, 0, m->lanes.stream[g]>>>(
            count, hpdl__dl_act(m, g, L, i, rows), m->target + (size_t)i * rows * m->dim,
            hpdl__dl_dz(m, g, L - 1, i, rows), 1.0f / (float)m->batch, m->loss);
        if (cudaGetLastError() != cudaSuccess) st = HPDL_ERR_CUDA;
    }
    hpdl__dl_mark(m, g);
    return st;
}

/* W -= lr h^T dz over the whole batch for device g's layer s: the weight
   gradient and the SGD update in one product (beta = 1). */
HPDL_CUDA_API hpdl_status hpdl__dl_update_layer(hpdl_cuda_deep_linear *m, int g, int s, float lr) {
    return hpdl__dl_gemm(m, g, HPDL_TRANS, HPDL_NO_TRANS, m->dim, m->batch, -lr, hpdl__dl_act(m, g, s, 0, m->batch),
                         hpdl__dl_dz(m, g, s, 0, m->batch), 1.0f, hpdl__dl_w(m, g, s));
}

/* What a backward does with the weight gradients: leave them for the
   update (GPipe: dz is kept), update each layer right after its input
   gradient (naive, whole batch), or add micro-batch i's to dw (1F1B: its
   activations are free afterwards). */
typedef enum { HPDL__DL_DEFER, HPDL__DL_UPDATE, HPDL__DL_ACCUMULATE } hpdl__dl_wgrad;

/* Backward of micro-batch i through device g's layers, top to bottom; with
   `pulled` (1F1B), an event recorded once the incoming gradient is copied,
   after which device g + 1 may overwrite it. */
HPDL_CUDA_API hpdl_status hpdl__dl_backward(hpdl_cuda_deep_linear *m, int g, int i, int rows, hpdl__dl_wgrad wgrad, float lr,
                                       cudaEvent_t pulled) {
    size_t bytes = (size_t)rows * m->dim * sizeof(float);
    long long count = (long long)rows * m->dim;
    float *grad = hpdl__dl_grad(m, m->dh_in[g], i, rows), *dh = hpdl__dl_grad(m, m->dh[g], i, rows);
    int s;
    hpdl_status st = HPDL_OK;
    if (g < m->lanes.dev.count - 1)
        st = hpdl__cuda_lanes_pull(&m->lanes, g, grad, g + 1, hpdl__dl_grad(m, m->dh[g + 1], i, rows), bytes, &m->bwd);
    if (st == HPDL_OK && pulled && cudaEventRecord(pulled, m->lanes.stream[g]) != cudaSuccess) st = HPDL_ERR_CUDA;
    hpdl__dl_mark(m, g);
    for (s = hpdl__dl_layers(m, g) - 1; s >= 0 && st == HPDL_OK; s--) {
        int layer = m->first[g] + s;
        float *dz = hpdl__dl_dz(m, g, s, i, rows);
        if (layer < m->depth - 1) {
            hpdl__cuda_relu_backward_kernel<<<hpdl__cuda_grid(count), 256, 0, m->lanes.stream[g]>>>(
                count, grad, hpdl__dl_act(m, g, s + 1, i, rows), dz);
            if (cudaGetLastError() != cudaSuccess) st = HPDL_ERR_CUDA;
        }
        if (st == HPDL_OK && wgrad == HPDL__DL_ACCUMULATE) /* dw = -lr sum over micro-batches of h^T dz */
            st = hpdl__dl_gemm(m, g, HPDL_TRANS, HPDL_NO_TRANS, m->dim, rows, -lr, hpdl__dl_act(m, g, s, i, rows), dz,
                               i == 0 ? 0.0f : 1.0f, m->dw[g] + (size_t)s * m->dim * m->dim);
        if (st == HPDL_OK && layer > 0) { /* the model's input needs no gradient */
            st = hpdl__dl_gemm(m, g, HPDL_NO_TRANS, HPDL_TRANS, rows, m->dim, 1.0f, dz, hpdl__dl_w(m, g, s), 0.0f, dh);
            grad = dh;
        }
        if (st == HPDL_OK && wgrad == HPDL__DL_UPDATE) st = hpdl__dl_update_layer(m, g, s, lr);
    }
    if (wgrad != HPDL__DL_DEFER) m->live[g]--;
    hpdl__dl_mark(m, g);
    return st;
}

/* The last phase of the pipelined schedules: every layer of device g
   updated, by the deferred whole-batch products (GPipe) or by adding the
   accumulated -lr x gradient (1F1B). */
HPDL_CUDA_API hpdl_status hpdl__dl_update(hpdl_cuda_deep_linear *m, int g, float lr) {
    long long per = (long long)m->dim * m->dim;
    int s;
    hpdl_status st = HPDL_OK;
    hpdl__dl_mark(m, g);
    for (s = 0; s < hpdl__dl_layers(m, g) && st == HPDL_OK; s++) {
        if (!m->ring) { st = hpdl__dl_update_layer(m, g, s, lr); continue; }
        hpdl__cuda_add_kernel<float><<<hpdl__cuda_grid(per), 256, 0, m->lanes.stream[g]>>>(
            per, hpdl__dl_w(m, g, s), m->dw[g] + (size_t)s * per);
        if (cudaGetLastError() != cudaSuccess) st = HPDL_ERR_CUDA;
    }
    m->live[g] = 0;
    hpdl__dl_mark(m, g);
    return st;
}

/* Stages are taken in rounds of one stage a GPU (G = the GPUs the stages
   use): the rounds are stages [0, G), [G, 2G), ... With one stage a GPU
   there is one round. Stages on one GPU share its stream, so the order queued is the
   order run: breadth-first, every micro-batch of a round before the next
   round (interleaved stages: the GPU works on one stage while another waits
   for the other GPU). Stage g's micro-batch i waits for its neighbour's
   hand-off of micro-batch i (flow events: forward i done at i, backward i
   done at micro + i). */
HPDL_CUDA_API int hpdl__dl_round_width(const hpdl_cuda_deep_linear *m) {
    int S = m->lanes.dev.count, visible = m->lanes.dev.visible;
    return visible > 0 && visible < S ? visible : S;
}

/* The forward phase: round by round, micro-batch by micro-batch, stage by stage. */
HPDL_CUDA_API hpdl_status hpdl__dl_forward_all(hpdl_cuda_deep_linear *m, int micro) {
    int S = m->lanes.dev.count, G = hpdl__dl_round_width(m), rows = m->batch / micro, r, i, g;
    hpdl_status s = HPDL_OK;
    for (r = 0; r < S; r += G)
        for (i = 0; i < micro; i++)
            for (g = r; g < r + G && g < S && s == HPDL_OK; g++) {
                cudaStream_t stream = m->lanes.stream[g];
                if (cudaSetDevice(m->lanes.dev.physical[g]) != cudaSuccess) return HPDL_ERR_CUDA;
                if (g > 0) HPDL_CUDA_TRY(cudaStreamWaitEvent(stream, m->flow[g - 1][i], 0));
                s = hpdl__dl_forward(m, g, i, rows);
                if (s == HPDL_OK) HPDL_CUDA_TRY(cudaEventRecord(m->flow[g][i], stream));
            }
    return s;
}

/* The backward phase: rounds from the last, micro-batch by micro-batch,
   stages down (naive: one micro-batch, each stage's updates inside its
   backward). */
HPDL_CUDA_API hpdl_status hpdl__dl_backward_all(hpdl_cuda_deep_linear *m, int micro, int naive, float lr) {
    int S = m->lanes.dev.count, G = hpdl__dl_round_width(m), rows = m->batch / micro, r, i, g;
    hpdl_status s = HPDL_OK;
    for (r = (S - 1) / G * G; r >= 0; r -= G)
        for (i = 0; i < micro; i++)
            for (g = (r + G < S ? r + G : S) - 1; g >= r && s == HPDL_OK; g--) {
                cudaStream_t stream = m->lanes.stream[g];
                if (cudaSetDevice(m->lanes.dev.physical[g]) != cudaSuccess) return HPDL_ERR_CUDA;
                if (g < S - 1) HPDL_CUDA_TRY(cudaStreamWaitEvent(stream, m->flow[g + 1][micro + i], 0));
                s = hpdl__dl_backward(m, g, i, rows, naive ? HPDL__DL_UPDATE : HPDL__DL_DEFER, lr, NULL);
                if (s == HPDL_OK) HPDL_CUDA_TRY(cudaEventRecord(m->flow[g][micro + i], stream));
            }
    return s;
}

/* Stage g's k-th operation of 2 m in the 1F1B order (PipeDream-flush):
   w = min(m, G - 1 - g) warm-up forwards, then forward w + j and backward
   j alternately, then the last w backwards. Returns the micro-batch; sets
   *backward. At most w + 1 <= G - g micro-batches are ever held. */
HPDL_CUDA_API int hpdl__dl_1f1b_op(int g, int G, int m, int k, int *backward) {
    int w = m < G - 1 - g ? m : G - 1 - g, pairs = m - w;
    *backward = k >= w && (k >= w + 2 * pairs || (k - w) % 2 == 1);
    if (k < w) return k;
    if (k < w + 2 * pairs) return (k - w) % 2 ? (k - w) / 2 : w + (k - w) / 2;
    return k - w - pairs;
}

/* Whether stage g's next 1F1B operation may be queued: what it waits for
   is queued (forward i: stage g - 1's forward i; backward i: stage g + 1's
   backward i, and stage g - 1's backward i - 1, which pulls the gradient
   slot that backward i overwrites). done[g][0/1]: forwards / backwards queued. */
HPDL_CUDA_API int hpdl__dl_1f1b_ready(int g, int G, int i, int backward, int (*done)[2]) {
    if (!backward) return g == 0 || done[g - 1][0] > i;
    return (g == G - 1 || done[g + 1][1] > i) && (g == 0 || i == 0 || done[g - 1][1] >= i);
}

/* Queues stage g's forward or backward of micro-batch i with its waits and
   its hand-off event (flow: [0, m) forward done, [m, 2m) backward done,
   [2m, 3m) incoming gradient pulled). */
HPDL_CUDA_API hpdl_status hpdl__dl_1f1b_issue(hpdl_cuda_deep_linear *m, int g, int i, int backward, float lr) {
    int G = m->lanes.dev.count, M = m->ring, rows = m->batch / M;
    cudaStream_t stream = m->lanes.stream[g];
    hpdl_status s;
    HPDL_CUDA_TRY(cudaSetDevice(m->lanes.dev.physical[g]));
    if (!backward) {
        if (g > 0) HPDL_CUDA_TRY(cudaStreamWaitEvent(stream, m->flow[g - 1][i], 0));
        s = hpdl__dl_forward(m, g, i, rows);
        if (s == HPDL_OK) HPDL_CUDA_TRY(cudaEventRecord(m->flow[g][i], stream));
        return s;
    }
    if (g < G - 1) HPDL_CUDA_TRY(cudaStreamWaitEvent(stream, m->flow[g + 1][M + i], 0));
    if (g > 0 && i > 0) HPDL_CUDA_TRY(cudaStreamWaitEvent(stream, m->flow[g - 1][2 * M + i - 1], 0));
    s = hpdl__dl_backward(m, g, i, rows, HPDL__DL_ACCUMULATE, lr, m->flow[g][2 * M + i]);
    if (s == HPDL_OK) HPDL_CUDA_TRY(cudaEventRecord(m->flow[g][M + i], stream));
    return s;
}

/* The 1F1B forward and backward phases: each stage's operations in order,
   queued stage by stage as far as their waits allow. */
HPDL_CUDA_API hpdl_status hpdl__dl_1f1b_all(hpdl_cuda_deep_linear *m, float lr) {
    int G = m->lanes.dev.count, M = m->ring, next[HPDL_CUDA_MAX_DEVICES] = {0}, done[HPDL_CUDA_MAX_DEVICES][2];
    int g, queued = 1, left = 2 * M * G;
    hpdl_status s = HPDL_OK;
    memset(done, 0, sizeof done);
    while (left > 0 && queued && s == HPDL_OK) {
        queued = 0;
        for (g = 0; g < G && s == HPDL_OK; g++)
            while (s == HPDL_OK && next[g] < 2 * M) {
                int backward, i = hpdl__dl_1f1b_op(g, G, M, next[g], &backward);
                if (!hpdl__dl_1f1b_ready(g, G, i, backward, done)) break;
                s = hpdl__dl_1f1b_issue(m, g, i, backward, lr);
                done[g][backward]++;
                next[g]++;
                left--;
                queued = 1;
            }
    }
    return s != HPDL_OK ? s : left ? HPDL_ERR_INVALID : HPDL_OK; /* left: a cycle of waits, not reachable */
}

/* One SGD step on the current batch, ordered after and before `origin` (a
   stream of device 0): micro = HPDL_DL_NAIVE for the naive schedule,
   HPDL_DL_1F1B(m) for 1F1B (a model from _create_1f1b for m), else GPipe
   with `micro` micro-batches (batch % micro == 0; 1 still defers the
   weight gradients). The moves it made are in m->fwd and m->bwd, the most
   micro-batches each device held in m->peak_live. */
HPDL_CUDA_API hpdl_status hpdl_cuda_deep_linear_step(hpdl_cuda_deep_linear *m, int micro, float lr, cudaStream_t origin) {
    int g, last, naive = micro == HPDL_DL_NAIVE, slices = hpdl_cuda_deep_linear_slices(micro);
    hpdl_status s;
    if (!m || !m->lanes.dev.count || slices < 1 || slices > m->batch || m->batch % slices) return HPDL_ERR_INVALID;
    if (m->ring ? micro != HPDL_DL_1F1B(m->ring) : micro < 0) return HPDL_ERR_INVALID;
    last = m->lanes.dev.count - 1;
    memset(&m->fwd, 0, sizeof m->fwd);
    memset(&m->bwd, 0, sizeof m->bwd);
    memset(m->live, 0, sizeof m->live);
    memset(m->peak_live, 0, sizeof m->peak_live);
    s = hpdl__cuda_lanes_fork(&m->lanes, origin);
    if (s == HPDL_OK && (cudaSetDevice(m->lanes.dev.physical[last]) != cudaSuccess ||
                         cudaMemsetAsync(m->loss, 0, sizeof(float), m->lanes.stream[last]) != cudaSuccess)) s = HPDL_ERR_CUDA;
    if (s == HPDL_OK && m->ring) s = hpdl__dl_1f1b_all(m, lr);
    if (s == HPDL_OK && !m->ring) s = hpdl__dl_gpipe_events(m, slices);
    if (s == HPDL_OK && !m->ring) s = hpdl__dl_forward_all(m, slices);
    if (s == HPDL_OK && !m->ring) s = hpdl__dl_backward_all(m, slices, naive, lr);
    for (g = 0; g < m->lanes.dev.count && s == HPDL_OK && !naive; g++) {
        if (cudaSetDevice(m->lanes.dev.physical[g]) != cudaSuccess) s = HPDL_ERR_CUDA;
        if (s == HPDL_OK) s = hpdl__dl_update(m, g, lr);
    }
    if (s == HPDL_OK) s = hpdl__cuda_lanes_join(&m->lanes, origin);
    cudaSetDevice(m->lanes.current);
    return s;
}

/* Timing events for one profiled step: at most 2 slices + 1 busy intervals a device. */
HPDL_CUDA_API void hpdl__dl_marks_free(hpdl_cuda_deep_linear *m, int per) {
    int g, k;
    for (g = 0; g < m->lanes.dev.count; g++) {
        if (!m->marks[g]) continue;
        cudaSetDevice(m->lanes.dev.physical[g]);
        for (k = 0; k < per; k++) if (m->marks[g][k]) cudaEventDestroy(m->marks[g][k]);
        HPDL_FREE(m->marks[g]);
        m->marks[g] = NULL;
    }
    cudaSetDevice(m->lanes.current);
}

HPDL_CUDA_API hpdl_status hpdl__dl_marks_alloc(hpdl_cuda_deep_linear *m, int per) {
    int g, k;
    for (g = 0; g < m->lanes.dev.count; g++) {
        m->n_marks[g] = 0;
        m->marks[g] = (cudaEvent_t *)hpdl_alloc((size_t)per, sizeof(cudaEvent_t));
        if (!m->marks[g]) return HPDL_ERR_NOMEM;
        memset(m->marks[g], 0, (size_t)per * sizeof(cudaEvent_t));
        HPDL_CUDA_TRY(cudaSetDevice(m->lanes.dev.physical[g]));
        for (k = 0; k < per; k++) HPDL_CUDA_TRY(cudaEventCreate(&m->marks[g][k]));
    }
    return HPDL_OK;
}

/* Sum of device g's recorded busy intervals, in ms. */
HPDL_CUDA_API double hpdl__dl_busy_ms(const hpdl_cuda_deep_linear *m, int g) {
    double total = 0.0;
    int k;
    for (k = 0; k + 1 < m->n_marks[g]; k += 2) {
        float ms = 0.0f;
        cudaEventElapsedTime(&ms, m->marks[g][k], m->marks[g][k + 1]);
        total += ms;
    }
    return total;
}

/* One step (micro as for _step) with each device's busy time measured by
   events around its forwards, backwards and update (transfers and waits
   count as idle):
   *step_ms, and busy_ms[g] per device. Idle fraction of device g =
   1 - busy_ms[g] / *step_ms, to set beside the bubble (G-1)/(m+G-1). */
HPDL_CUDA_API hpdl_status hpdl_cuda_deep_linear_profile(hpdl_cuda_deep_linear *m, int micro, float lr, double *step_ms,
                                                   double *busy_ms) {
    int g, per;
    cudaEvent_t start = NULL, stop = NULL;
    float ms = 0.0f;
    hpdl_status s;
    if (!m || !step_ms || !busy_ms) return HPDL_ERR_INVALID;
    per = 2 * (2 * hpdl_cuda_deep_linear_slices(micro) + 1);
    s = hpdl__dl_marks_alloc(m, per);
    if (s == HPDL_OK && (cudaSetDevice(m->lanes.dev.physical[0]) != cudaSuccess || cudaEventCreate(&start) != cudaSuccess ||
                         cudaEventCreate(&stop) != cudaSuccess ||
                         cudaEventRecord(start, m->lanes.stream[0]) != cudaSuccess)) s = HPDL_ERR_CUDA;
    if (s == HPDL_OK) s = hpdl_cuda_deep_linear_step(m, micro, lr, m->lanes.stream[0]);
    if (s == HPDL_OK && (cudaSetDevice(m->lanes.dev.physical[0]) != cudaSuccess ||
                         cudaEventRecord(stop, m->lanes.stream[0]) != cudaSuccess ||
                         cudaEventSynchronize(stop) != cudaSuccess ||
                         cudaEventElapsedTime(&ms, start, stop) != cudaSuccess)) s = HPDL_ERR_CUDA;
    if (s == HPDL_OK) s = hpdl__cuda_lanes_sync(&m->lanes);
    if (s == HPDL_OK) {
        *step_ms = ms;
        for (g = 0; g < m->lanes.dev.count; g++) busy_ms[g] = hpdl__dl_busy_ms(m, g);
    }
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
    hpdl__dl_marks_free(m, per);
    return s;
}
/* ======================================================================== */
/* INT8 QUANTIZATION                                                        */
/* ======================================================================== */
/* int8 GEMM (tensor cores and dp4a) with fused requantization, the int8
   convolution (implicit GEMM on the same tensor-core pipeline; on Hopper
   the f16 convolution's wgmma kernel on int8 operands), and
   quantized MLP and CNN inference (uses the GEMM section's cp.async /
   ldmatrix helpers, the convolution section's gather, and hpdl.h's
   hpdl_quant_mlp, hpdl_quant_conv2d_i8 and hpdl_quant_cnn).

   Every function computes exactly what its CPU twin in hpdl.h computes, bit
   for bit: hpdl_quant_gemm_i8, hpdl_quant_gemm_requant_i8,
   hpdl_quant_gemm_requant_i32, hpdl_quant_quantize_f32, hpdl_quant_conv2d_i8
   and the integer-only hpdl_quant_mlp and hpdl_quant_cnn. Pointers to
   matrices and tensors are device pointers.

   LAYOUT. The CPU twins take A (M x K) and B (K x N) row-major. The int8
   tensor-core instruction (mma.sync m16n8k32 .row.col) wants both operands
   with K contiguous, i.e. B as N x K ("NT" layout: Bt[n * ldb + k] = B(k, n)),
   and ldmatrix cannot transpose 8-bit elements. So:
       hpdl_cuda_quant_gemm_nt_i8 / _requant_nt_i8 / _requant_nt_i32
           take Bt (N x K) directly: the fast path, for weights transposed once;
       hpdl_cuda_quant_gemm_i8 / _requant_i8
           take B (K x N) like the CPU and transpose it into a stream-ordered
           temporary (hpdl_cuda_quant_transpose_i8, N * K bytes) first.
   hpdl_cuda_quant_mlp keeps its weights transposed.

       hpdl_cuda_quant_gemm_i8(HPDL_QUANT_AUTO, M, N, K, dA, K, za, dB, N, zb, dC, N, stream);

   ALGORITHMS (hpdl_quant_algo)
       mma   128x256x64 block tiles, 8 warps of 64x64, 4-stage cp.async
             pipeline into XOR-swizzled shared tiles, fragments by ldmatrix,
             mma.sync.m16n8k32.s32.s8.s8.s32 (sm_80+)
       dp4a  128x128x32 block tiles, 8x8 outputs per thread, __dp4a (any GPU;
             the fallback where the binary or GPU has no sm_80 path)
       wgmma the GEMM part's wgmma_persistent kernel (TMA, warp-specialised,
             128x256x128 tiles) with wgmma.m64n256k32.s32.s8.s8 (sm_90a, rows
             16-byte aligned); zero-point row sums from a small kernel first
       auto  wgmma, else mma, else dp4a, whichever can run first

   ZERO POINTS. The kernels multiply the raw int8 values and correct
       sum_k (a - za)(b - zb) = sum_k ab - zb sum_k a - za sum_k b + K za zb
   in the epilogue, with the row sums of A and column sums of B taken from
   the shared-memory tiles as they pass (dp4a with 0x01010101), only when
   the other operand's zero point is not 0. For K <= HPDL_QUANT_MAX_K every
   term fits, so the result is the CPU's exact int32 accumulator. */

/* The int8 kernels' rungs: AUTO (the fastest that applies), the mma.sync
   and dp4a kernels, wgmma on Hopper, and for the convolution only
   HPDL_QUANT_IM2COL (rows written out, then multiplied). */
typedef enum hpdl_quant_algo {
    HPDL_QUANT_AUTO = 0,
    HPDL_QUANT_MMA,
    HPDL_QUANT_DP4A,
    HPDL_QUANT_WGMMA,
    HPDL_QUANT_IM2COL
} hpdl_quant_algo;

/* The rung's short name ("auto", "mma", "dp4a", "wgmma", "im2col"), a static string; "unknown" for
   any other value. */
HPDL_CUDA_API const char *hpdl_quant_algo_name(hpdl_quant_algo a) {
    switch (a) {
    case HPDL_QUANT_AUTO: return "auto";
    case HPDL_QUANT_MMA: return "mma";
    case HPDL_QUANT_DP4A: return "dp4a";
    case HPDL_QUANT_WGMMA: return "wgmma";
    case HPDL_QUANT_IM2COL: return "im2col";
    }
    return "unknown";
}

/* ------------------------------------------------------------------------ */
/* Fixed-point requantization, device twins of hpdl.h's                      */
/* ------------------------------------------------------------------------ */

/* hpdl_quant_sat_rounding_doubling_high_mul, same results (host and
   device, so tests can compare the two on the host as well). The CPU adds
   a nudge of 2^30 (ab >= 0) or 1 - 2^30 and truncates toward zero; for
   ab < 0 that truncation is the ceiling, ceil((ab + 1 - 2^30) / 2^31) =
   floor((ab + 2^30) / 2^31), so both signs are one floor, and that floor
   lies in int32 (|ab| <= 2^62 - 2^31 but for INT32_MIN^2), so it is bits
   31..62 of v: one funnel shift, where the division took a 64-bit sign
   fix-up and a branch. */
HPDL_HD static inline int32_t hpdl__q_srdhm(int32_t a, int32_t b) {
    const int64_t v = (int64_t)a * b + ((int64_t)1 << 30);
    if (a == INT32_MIN && b == INT32_MIN) return INT32_MAX;
    return (int32_t)(uint32_t)((uint64_t)v >> 31);
}

/* hpdl_quant_rounding_divide_by_pot, same arithmetic. */
HPDL_HD static inline int32_t hpdl__q_rdbpot(int32_t x, int e) {
    int32_t mask = (int32_t)(((int64_t)1 << e) - 1), remainder = x & mask;
    int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
    return (x >= 0 ? x >> e : ~(~x >> e)) + (remainder > threshold ? 1 : 0);
}

/* ------------------------------------------------------------------------ */
/* Kernel arguments and the epilogue                                         */
/* ------------------------------------------------------------------------ */

struct hpdl__qgemm_args {
    const int8_t *A, *B;          /* A: M x K (lda), B: N x K (ldb); K contiguous in both */
    void *C;                      /* M x N (ldc), int32_t or int8_t */
    int M, N, K, lda, ldb, ldc;
    int avec, bvec;               /* rows 16-byte aligned: cp.async / vector loads allowed */
    int32_t za, zb;
    const int32_t *bias;          /* N entries, or NULL */
    const int32_t *multiplier;    /* N entries, or NULL: no requantization (raw int32) */
    const int *shift;             /* N entries */
    int32_t zero_point, lo, hi;   /* output zero point and clamp range */
};

/* acc saturated to int32, then (when the GEMM requantizes) scaled by the
   fixed-point multiplier and shift, moved by the output zero point and
   clamped: the CPU's arithmetic, bit for bit. */
static __device__ __forceinline__ int32_t hpdl__qgemm_requant(const hpdl__qgemm_args &g, int64_t acc, int32_t multiplier,
                                                              int shift) {
    int64_t v;
    acc = acc < INT32_MIN ? INT32_MIN : acc > INT32_MAX ? INT32_MAX : acc;
    if (!g.multiplier) return (int32_t)acc;
    v = (int64_t)hpdl__q_rdbpot(hpdl__q_srdhm((int32_t)acc, multiplier), shift) + g.zero_point;
    return (int32_t)(v < g.lo ? g.lo : v > g.hi ? g.hi : v);
}

/* hpdl__qgemm_requant for an accumulator already in int32 and an int8
   output, the multiplier M0 in [2^30, 2^31) and the shift e in [0, 31] (as
   hpdl_cuda_quant_output_create admits them; mask = 2^e - 1): in 32-bit
   operations but the one wide multiply. SRDHM's saturating case (M0 = INT32_MIN) cannot occur,
   so it is bits 31..62 of acc M0 + 2^30; RDBPOT is hpdl__q_rdbpot with the
   mask in 32 bits ((x >> 31) is -1 for x < 0); and the zero point is added
   after the clamp, moved by it, so that no sum can overflow (RDBPOT of
   SRDHM lies within int32, and adds 1 only when e >= 1, where x >> e <= 2^30). */
static __device__ __forceinline__ int32_t hpdl__q_requant32(int32_t acc, int32_t m0, int e, int32_t mask, int32_t zero_point,
                                                            int32_t lo, int32_t hi) {
    int64_t product;
    asm("mul.wide.s32 %0, %1, %2;" : "=l"(product) : "r"(acc), "r"(m0)); /* (C's 64-bit product: 4 more instructions) */
    const int32_t x = (int32_t)(uint32_t)((uint64_t)(product + ((int64_t)1 << 30)) >> 31);
    const int32_t v = (x >> e) + ((x & mask) > (mask >> 1) - (x >> 31) ? 1 : 0);
    return min(max(v, lo - zero_point), hi - zero_point) + zero_point;
}

/* The CPU's accumulator for C(m, n) from the raw product sum: the
   zero-point correction and the bias in 64 bits, then hpdl__qgemm_requant. */
static __device__ __forceinline__ int32_t hpdl__qgemm_finish(const hpdl__qgemm_args &g, int n, int32_t dot, int32_t rsum,
                                                             int32_t csum) {
    int64_t acc = (int64_t)dot - (int64_t)g.zb * rsum - (int64_t)g.za * csum + (int64_t)g.K * g.za * g.zb;
    if (g.bias) acc += g.bias[n];
    return hpdl__qgemm_requant(g, acc, g.multiplier ? g.multiplier[n] : 0, g.multiplier ? g.shift[n] : 0);
}

static __device__ __forceinline__ void hpdl__qgemm_put(int8_t *p, int32_t v) { *p = (int8_t)v; }
static __device__ __forceinline__ void hpdl__qgemm_put(int32_t *p, int32_t v) { *p = v; }

template <typename TC>
static __device__ __forceinline__ void hpdl__qgemm_out(const hpdl__qgemm_args &g, int m, int n, int32_t dot,
                                                       int32_t rsum, int32_t csum) {
    if (m < g.M && n < g.N) hpdl__qgemm_put((TC *)g.C + (size_t)m * g.ldc + n, hpdl__qgemm_finish(g, n, dot, rsum, csum));
}

static __device__ __forceinline__ void hpdl__qgemm_put2(int8_t *p, int32_t a, int32_t b) {
    *(char2 *)p = make_char2((signed char)a, (signed char)b);
}
static __device__ __forceinline__ void hpdl__qgemm_put2(int32_t *p, int32_t a, int32_t b) { *(int2 *)p = make_int2(a, b); }

/* C(m, n) and C(m, n+1): one paired store when both are inside and aligned. */
template <typename TC>
static __device__ __forceinline__ void hpdl__qgemm_out2(const hpdl__qgemm_args &g, int m, int n, int32_t d0, int32_t d1,
                                                        int32_t rsum, int32_t cs0, int32_t cs1) {
    TC *p = (TC *)g.C + (size_t)m * g.ldc + n;
    if (m < g.M && n + 1 < g.N && (uintptr_t)p % (2 * sizeof(TC)) == 0) {
        hpdl__qgemm_put2(p, hpdl__qgemm_finish(g, n, d0, rsum, cs0), hpdl__qgemm_finish(g, n + 1, d1, rsum, cs1));
        return;
    }
    hpdl__qgemm_out<TC>(g, m, n, d0, rsum, cs0);
    hpdl__qgemm_out<TC>(g, m, n + 1, d1, rsum, cs1);
}

/* Sum of the four int8 lanes of each word of u, added to acc. */
static __device__ __forceinline__ int32_t hpdl__qsum16(int4 u, int32_t acc) {
    const int ones = 0x01010101;
    return __dp4a(u.w, ones, __dp4a(u.z, ones, __dp4a(u.y, ones, __dp4a(u.x, ones, acc))));
}

/* Sums of a row split over `lanes` adjacent lanes (1 or 2), in every lane. */
static __device__ __forceinline__ int32_t hpdl__qrow_total(int32_t part, int lanes) {
    return lanes == 2 ? part + __shfl_xor_sync(0xffffffffu, part, 1) : part;
}

/* ------------------------------------------------------------------------ */
/* Tensor-core kernel (sm_80+)                                               */
/* ------------------------------------------------------------------------ */

enum { HPDL__QMMA_BM = 128, HPDL__QMMA_BN = 256, HPDL__QMMA_BK = 64, HPDL__QMMA_STAGES = 4 };

/* The tile shape as hpdl__gemm_launch_tc (GEMM section) takes it. */
struct hpdl__qmma_shape {
    enum { BM = HPDL__QMMA_BM, BN = HPDL__QMMA_BN, THREADS = 256 };
};

/* Byte offset of 16-byte chunk c (0..3) of row r in a tile of 64-byte rows:
   chunks XOR-permuted by (r/2)%4 so that the 8 rows of an ldmatrix phase
   fall in 8 different 16-byte bank groups. */
static __device__ __forceinline__ int hpdl__qswz(int r, int c) { return r * 64 + ((c ^ ((r >> 1) & 3)) << 4); }

/* Rows r0.. (ROWS of them) and bytes k0..k0+63 of the stored matrix X
   (rows x K, K contiguous) into a swizzled stage: cp.async 16 bytes where
   the chunk lies inside X and vec allows it, byte by byte (zeros outside)
   where not; THREADS threads share the copies. */
template <int ROWS, int THREADS = 256>
static __device__ __forceinline__ void hpdl__qgemm_stage(int8_t *s, const int8_t *X, int ld, int r0, int k0, int rows,
                                                         int K, int vec) {
    int i, j;
    static_assert(ROWS * 4 % THREADS == 0, "whole chunks per thread");
#pragma unroll
    for (i = 0; i < ROWS * 4 / THREADS; i++) {
        int chunk = (int)threadIdx.x + i * THREADS, r = chunk >> 2, c = chunk & 3, gr = r0 + r, gk = k0 + c * 16;
        int8_t *dst = s + hpdl__qswz(r, c);
        const int8_t *src = X + (ptrdiff_t)gr * ld + gk;
        if (vec && gr < rows && gk + 16 <= K) {
            hpdl__cp_async16(dst, src);
        } else {
            int8_t v[16];
            int4 u;
#pragma unroll
            for (j = 0; j < 16; j++) v[j] = (gr < rows && gk + j < K) ? src[j] : (int8_t)0;
            memcpy(&u, v, sizeof u);
            *(int4 *)dst = u;
        }
    }
}

/* This thread's share of the row sums of a landed ROWS x 64-byte stage: row
   threadIdx.x * ROWS / 256, chunks split over 256 / ROWS adjacent lanes. */
template <int ROWS> static __device__ __forceinline__ int32_t hpdl__qgemm_stage_sum(const int8_t *s, int32_t acc) {
    enum { CPT = ROWS * 4 / 256 }; /* chunks per thread */
    int t = (int)threadIdx.x, r = t * CPT / 4, c0 = t * CPT % 4, q;
#pragma unroll
    for (q = 0; q < CPT; q++) acc = hpdl__qsum16(*(const int4 *)(s + hpdl__qswz(r, c0 + q)), acc);
    return acc;
}

/* d += a (16x32 s8, row) * b (32x8 s8, col), s32 accumulation. */
static __device__ __forceinline__ void hpdl__mma_s8(int32_t d[4], const unsigned a[4], const unsigned b[2]) {
#ifdef HPDL__GEMM_SM80
    asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
    (void)d; (void)a; (void)b;
#endif
}

/* One 64-byte K tile for a warp's 64x64 outputs: two k32 steps, each 4 A
   fragments (ldmatrix.x4: rows 0-15 x bytes 0-15 and 16-31) and 8 B
   fragments (two per ldmatrix.x4), then 4x8 mma. */
static __device__ __forceinline__ void hpdl__qgemm_mma_tile(const int8_t *ta, const int8_t *tb, int wm, int wn,
                                                            int32_t acc[4][8][4]) {
    int lane = (int)threadIdx.x % 32, ks, i, j;
    unsigned af[4][4], bf[8][2];
#pragma unroll
    for (ks = 0; ks < 4; ks += 2) { /* chunk index of the k32 step */
#pragma unroll
        for (i = 0; i < 4; i++) hpdl__ldmatrix_x4<false>(af[i], ta + hpdl__qswz(wm + i * 16 + lane % 16, ks + lane / 16));
#pragma unroll
        for (j = 0; j < 4; j++) {
            unsigned r[4];
            hpdl__ldmatrix_x4<false>(r, tb + hpdl__qswz(wn + j * 16 + lane % 8 + lane / 16 * 8, ks + lane / 8 % 2));
            bf[2 * j][0] = r[0];
            bf[2 * j][1] = r[1];
            bf[2 * j + 1][0] = r[2];
            bf[2 * j + 1][1] = r[3];
        }
#pragma unroll
        for (i = 0; i < 4; i++)
#pragma unroll
            for (j = 0; j < 8; j++) hpdl__mma_s8(acc[i][j], af[i], bf[j]);
    }
}

/* Writes the row sums (rsum over this block's A rows, csum over its B rows)
   to shared memory; zeros when that zero-point term is not needed. */
static __device__ __forceinline__ void hpdl__qgemm_mma_sums(int32_t *rs, int32_t *cs, int32_t rsum, int32_t csum) {
    int t = (int)threadIdx.x;
    rsum = hpdl__qrow_total(rsum, 256 / HPDL__QMMA_BM);
    if (t % (256 / HPDL__QMMA_BM) == 0) rs[t / (256 / HPDL__QMMA_BM)] = rsum;
    cs[t] = csum; /* HPDL__QMMA_BN == 256: one row per thread */
}

/* The int8 tensor-core pipeline: KT tiles of BK = 64 bytes of K through S
   stages (BM x 64 and BN x 64 bytes, swizzled), one barrier per tile.
   tiles.load(st, kt) issues tile kt's copies into stage st (tiles come in
   K order; one cp.async group, committed here); tiles.landed(ta, tb) sees
   each tile once it is in shared memory; then the warp's 64 x 64 outputs
   at (wm, wn) take it (hpdl__qgemm_mma_tile). */
template <int BM, int BN, int S, typename TILES>
static __device__ __forceinline__ void hpdl__qmma_mainloop(TILES &tiles, const int8_t *sa, const int8_t *sb, int KT, int wm,
                                                           int wn, int32_t (&acc)[4][8][4]) {
    enum { BK = HPDL__QMMA_BK };
    int kt, i, j;
#pragma unroll
    for (i = 0; i < 4; i++)
#pragma unroll
        for (j = 0; j < 8; j++) acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0;
    for (kt = 0; kt < S - 1; kt++) {
        if (kt < KT) tiles.load(kt, kt);
        hpdl__cp_async_commit();
    }
    for (kt = 0; kt < KT; kt++) {
        const int8_t *ta = sa + kt % S * BM * BK, *tb = sb + kt % S * BN * BK;
        int next = kt + S - 1;
        hpdl__cp_async_wait<S - 2>(); /* tile kt has landed (for this thread) ... */
        __syncthreads();              /* ... for all threads, and stage (kt-1)%S is free */
        if (next < KT) tiles.load(next % S, next);
        hpdl__cp_async_commit();
        tiles.landed(ta, tb);
        hpdl__qgemm_mma_tile(ta, tb, wm, wn, acc);
    }
    hpdl__cp_async_wait<0>();
}

/* The GEMM's tiles: A's rows tm.. and Bt's rows tn.., summed as they land
   where the other operand's zero point needs them. */
struct hpdl__qgemm_tiles {
    const hpdl__qgemm_args &g;
    int8_t *sa, *sb;
    int tm, tn;
    int32_t rsum, csum;
    __device__ __forceinline__ void load(int st, int kt) {
        hpdl__qgemm_stage<HPDL__QMMA_BM>(sa + st * HPDL__QMMA_BM * HPDL__QMMA_BK, g.A, g.lda, tm, kt * HPDL__QMMA_BK, g.M,
                                         g.K, g.avec);
        hpdl__qgemm_stage<HPDL__QMMA_BN>(sb + st * HPDL__QMMA_BN * HPDL__QMMA_BK, g.B, g.ldb, tn, kt * HPDL__QMMA_BK, g.N,
                                         g.K, g.bvec);
    }
    __device__ __forceinline__ void landed(const int8_t *ta, const int8_t *tb) {
        if (g.zb) rsum = hpdl__qgemm_stage_sum<HPDL__QMMA_BM>(ta, rsum);
        if (g.za) csum = hpdl__qgemm_stage_sum<HPDL__QMMA_BN>(tb, csum);
    }
};

template <typename TC> __global__ void __launch_bounds__(256, 1) hpdl__qgemm_mma(hpdl__qgemm_args g) {
#ifdef HPDL__GEMM_SM80
    enum { BM = HPDL__QMMA_BM, BN = HPDL__QMMA_BN, BK = HPDL__QMMA_BK, S = HPDL__QMMA_STAGES };
    extern __shared__ int4 hpdl__qgemm_smem[];
    int8_t *sa = (int8_t *)hpdl__qgemm_smem, *sb = sa + S * BM * BK;
    int32_t *rs = (int32_t *)(sb + S * BN * BK), *cs = rs + BM;
    int lane = (int)threadIdx.x % 32, warp = (int)threadIdx.x / 32, wm = warp / 4 * 64, wn = warp % 4 * 64;
    int tm, tn, i, j;
    int32_t acc[4][8][4];
    static_assert(BN == 256 && BM * 2 == BN, "hpdl__qgemm_mma_sums assumes these tile sizes");
    hpdl__gemm_tile_order(&tm, &tn);
    hpdl__qgemm_tiles tiles = {g, sa, sb, tm * BM, tn * BN, 0, 0};
    hpdl__qmma_mainloop<BM, BN, S>(tiles, sa, sb, (g.K + BK - 1) / BK, wm, wn, acc);
    hpdl__qgemm_mma_sums(rs, cs, tiles.rsum, tiles.csum);
    __syncthreads();
#pragma unroll
    for (i = 0; i < 4; i++)
#pragma unroll
        for (j = 0; j < 8; j++) { /* c0, c1: row lane/4, columns 2(lane%4), +1; c2, c3: 8 rows down */
            int m = wm + i * 16 + lane / 4, n = wn + j * 8 + lane % 4 * 2;
            hpdl__qgemm_out2<TC>(g, tiles.tm + m, tiles.tn + n, acc[i][j][0], acc[i][j][1], rs[m], cs[n], cs[n + 1]);
            hpdl__qgemm_out2<TC>(g, tiles.tm + m + 8, tiles.tn + n, acc[i][j][2], acc[i][j][3], rs[m + 8], cs[n], cs[n + 1]);
        }
#else
    (void)g; /* host pass, or a GPU without mma.sync: the launcher never starts it */
#endif
}

/* ------------------------------------------------------------------------ */
/* dp4a kernel (any GPU)                                                     */
/* ------------------------------------------------------------------------ */

enum { HPDL__QDP4A_BM = 128, HPDL__QDP4A_BN = 128, HPDL__QDP4A_BK = 32 };

/* Bytes k..k+15 of row r of X (rows x K), zeros outside: one 16-byte load
   when inside and vec allows it, else byte by byte. */
static __device__ __forceinline__ int4 hpdl__qload16(const int8_t *X, int ld, int r, int k, int rows, int K, int vec) {
    const int8_t *p = X + (ptrdiff_t)r * ld + k;
    int8_t v[16];
    int4 u;
    int j;
    if (vec && r < rows && k + 16 <= K) return *(const int4 *)p;
#pragma unroll
    for (j = 0; j < 16; j++) v[j] = (r < rows && k + j < K) ? p[j] : (int8_t)0;
    memcpy(&u, v, sizeof u);
    return u;
}

/* Stores a thread's 16 bytes (4 words of K) into S[kword][row] (row length LDS). */
static __device__ __forceinline__ void hpdl__qdp4a_stash(int32_t *S, int lds, int row, int half, int4 u) {
    S[(half * 4 + 0) * lds + row] = u.x;
    S[(half * 4 + 1) * lds + row] = u.y;
    S[(half * 4 + 2) * lds + row] = u.z;
    S[(half * 4 + 3) * lds + row] = u.w;
}

/* 128x128x32 tiles; thread (tx, ty) computes rows ty + 16i and columns
   tx + 16j (i, j < 8), so a warp's shared reads are broadcasts (A) and 16
   consecutive words (B); the next tile is loaded into registers while the
   current one is multiplied. Each thread loads 16 bytes of one A row and one
   B row per tile, and sums them for the zero-point terms. */
template <typename TC> __global__ void __launch_bounds__(256) hpdl__qgemm_dp4a(hpdl__qgemm_args g) {
    enum { BM = HPDL__QDP4A_BM, BN = HPDL__QDP4A_BN, BK = HPDL__QDP4A_BK, KW = BK / 4, LDS = BM + 4 };
    __shared__ int32_t As[KW * LDS], Bs[KW * LDS], rs[BM], cs[BN];
    int tid = (int)threadIdx.x, tx = tid % 16, ty = tid / 16, row = tid / 2, half = tid % 2, tm, tn, k0, kw, i, j;
    int32_t acc[8][8], a[8], b[8], rsum = 0, csum = 0;
    int4 wa, wb;
    hpdl__gemm_tile_order(&tm, &tn);
    tm *= BM;
    tn *= BN;
#pragma unroll
    for (i = 0; i < 8; i++)
#pragma unroll
        for (j = 0; j < 8; j++) acc[i][j] = 0;
    wa = hpdl__qload16(g.A, g.lda, tm + row, half * 16, g.M, g.K, g.avec);
    wb = hpdl__qload16(g.B, g.ldb, tn + row, half * 16, g.N, g.K, g.bvec);
    for (k0 = 0; k0 < g.K; k0 += BK) {
        if (g.zb) rsum = hpdl__qsum16(wa, rsum);
        if (g.za) csum = hpdl__qsum16(wb, csum);
        hpdl__qdp4a_stash(As, LDS, row, half, wa);
        hpdl__qdp4a_stash(Bs, LDS, row, half, wb);
        __syncthreads();
        if (k0 + BK < g.K) {
            wa = hpdl__qload16(g.A, g.lda, tm + row, k0 + BK + half * 16, g.M, g.K, g.avec);
            wb = hpdl__qload16(g.B, g.ldb, tn + row, k0 + BK + half * 16, g.N, g.K, g.bvec);
        }
#pragma unroll
        for (kw = 0; kw < KW; kw++) {
#pragma unroll
            for (i = 0; i < 8; i++) a[i] = As[kw * LDS + ty + 16 * i];
#pragma unroll
            for (j = 0; j < 8; j++) b[j] = Bs[kw * LDS + tx + 16 * j];
#pragma unroll
            for (i = 0; i < 8; i++)
#pragma unroll
                for (j = 0; j < 8; j++) acc[i][j] = __dp4a(a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }
    rsum = hpdl__qrow_total(rsum, 2);
    csum = hpdl__qrow_total(csum, 2);
    if (!half) { rs[row] = rsum; cs[row] = csum; }
    __syncthreads();
#pragma unroll
    for (i = 0; i < 8; i++)
#pragma unroll
        for (j = 0; j < 8; j++)
            hpdl__qgemm_out<TC>(g, tm + ty + 16 * i, tn + tx + 16 * j, acc[i][j], rs[ty + 16 * i], cs[tx + 16 * j]);
}

/* ------------------------------------------------------------------------ */
/* Layout transformation and quantization kernels                            */
/* ------------------------------------------------------------------------ */

/* Y (cols x rows) = X^T through 32x32 shared tiles (both sides coalesced). */
__global__ void hpdl__qtranspose(int rows, int cols, const int8_t *X, int ldx, int8_t *Y, int ldy) {
    __shared__ int8_t t[32][33];
    int c0 = (int)blockIdx.x * 32, r0 = (int)blockIdx.y * 32, tx = (int)threadIdx.x, i;
    for (i = (int)threadIdx.y; i < 32; i += 8)
        if (r0 + i < rows && c0 + tx < cols) t[i][tx] = X[(size_t)(r0 + i) * ldx + c0 + tx];
    __syncthreads();
    for (i = (int)threadIdx.y; i < 32; i += 8)
        if (c0 + i < cols && r0 + tx < rows) Y[(size_t)(c0 + i) * ldy + r0 + tx] = t[tx][i];
}

/* hpdl.h's quantize, element for element: clamp(round(x / scale) + zero
   point) in double (IEEE division and round-half-away, as on the CPU).
   NaN is not checked here: it becomes the zero point. */
__global__ void hpdl__qquantize(int rows, int cols, const float *X, int ldx, hpdl_quant_params p, int8_t *Q, int ldq) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x, n = (int64_t)rows * cols;
    for (; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = i / cols, c = i % cols;
        float x = X[r * ldx + c];
        double q = x != x ? (double)p.zero_point : round((double)x / p.scale) + p.zero_point;
        Q[r * ldq + c] = (int8_t)(q < HPDL_QUANT_QMIN ? HPDL_QUANT_QMIN : q > HPDL_QUANT_QMAX ? HPDL_QUANT_QMAX : q);
    }
}

/* Rows whose largest logit (first on ties) is at their label, added to *hits. */
__global__ void hpdl__qargmax_hits(int rows, int cols, const int32_t *logits, const int32_t *labels,
                                   unsigned long long *hits) {
    int r = (int)(blockIdx.x * blockDim.x + threadIdx.x), c, best = 0;
    if (r >= rows) return;
    for (c = 1; c < cols; c++) best = logits[(size_t)r * cols + c] > logits[(size_t)r * cols + best] ? c : best;
    if (best == labels[r]) atomicAdd(hits, 1ull);
}

/* Y (cols x rows) = X^T for int8 matrices, on `stream`. HPDL_ERR_INVALID for negative sizes, an ld
   below the row length, a NULL pointer with elements, or more than 65535 x 32 rows. */
HPDL_CUDA_API hpdl_status hpdl_cuda_quant_transpose_i8(int rows, int cols, const int8_t *X, int ldx, int8_t *Y, int ldy,
                                                  cudaStream_t stream) {
    if (hpdl__check_matrix(X, rows, cols, ldx) != HPDL_OK || hpdl__check_matrix(Y, cols, rows, ldy) != HPDL_OK ||
        (rows + 31) / 32 > 65535)
        return HPDL_ERR_INVALID;
    if (rows == 0 || cols == 0) return HPDL_OK;
    hpdl__qtranspose<<<dim3((unsigned)(cols + 31) / 32, (unsigned)(rows + 31) / 32), dim3(32, 8), 0, stream>>>(
        rows, cols, X, ldx, Y, ldy);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* Q (rows x cols, int8) = quantize(X) with p, like hpdl_quant_quantize_f32
   row by row (NaN: see hpdl__qquantize). */
HPDL_CUDA_API hpdl_status hpdl_cuda_quant_quantize_f32(int rows, int cols, const float *X, int ldx, hpdl_quant_params p,
                                                  int8_t *Q, int ldq, cudaStream_t stream) {
    int64_t n = (int64_t)rows * cols;
    if (hpdl__check_matrix(X, rows, cols, ldx) != HPDL_OK || hpdl__check_matrix(Q, rows, cols, ldq) != HPDL_OK ||
        !hpdl__quant_params_valid(p))
        return HPDL_ERR_INVALID;
    if (n == 0) return HPDL_OK;
    hpdl__qquantize<<<(unsigned)(n < 65536 * 256 ? (n + 255) / 256 : 65536), 256, 0, stream>>>(rows, cols, X, ldx, p, Q, ldq);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* ------------------------------------------------------------------------ */
/* Requantization parameters on the device                                   */
/* ------------------------------------------------------------------------ */

/* hpdl_quant_output with its arrays on the device, N entries each (a
   per-tensor multiplier is repeated), validated once when made. */
typedef struct hpdl_cuda_quant_output {
    int n;
    int32_t *bias;       /* n, or NULL */
    int32_t *multiplier; /* n */
    int *shift;          /* n */
    int32_t zero_point;
    int relu;
} hpdl_cuda_quant_output;

/* Frees the device arrays that hpdl_cuda_quant_output_create made and zeroes *d; NULL does nothing. */
HPDL_CUDA_API void hpdl_cuda_quant_output_destroy(hpdl_cuda_quant_output *d) {
    if (!d) return;
    hpdl_cuda_free(d->bias);
    hpdl_cuda_free(d->multiplier);
    hpdl_cuda_free(d->shift);
    memset(d, 0, sizeof *d);
}

/* Copies host parameters *o for n output channels to the device (checked
   like the CPU's hpdl_quant_gemm_requant_i8 checks them). */
HPDL_CUDA_API hpdl_status hpdl_cuda_quant_output_create(hpdl_cuda_quant_output *d, const hpdl_quant_output *o, int n) {
    hpdl_cuda_quant_output made;
    int32_t *m0;
    int *sh, j;
    hpdl_status s = HPDL_OK;
    if (!d || n < 1 || !hpdl__quant_output_valid(o, n)) return HPDL_ERR_INVALID;
    memset(&made, 0, sizeof made);
    made.n = n;
    made.zero_point = o->zero_point;
    made.relu = o->relu;
    m0 = (int32_t *)hpdl_alloc((size_t)n, sizeof *m0);
    sh = (int *)hpdl_alloc((size_t)n, sizeof *sh);
    if (!m0 || !sh) s = HPDL_ERR_NOMEM;
    for (j = 0; s == HPDL_OK && j < n; j++) {
        m0[j] = o->multiplier[o->per_channel ? j : 0];
        sh[j] = o->shift[o->per_channel ? j : 0];
    }
    if (s == HPDL_OK) s = hpdl_cuda_alloc((void **)&made.multiplier, (size_t)n * sizeof *m0);
    if (s == HPDL_OK) s = hpdl_cuda_alloc((void **)&made.shift, (size_t)n * sizeof *sh);
    if (s == HPDL_OK && o->bias) s = hpdl_cuda_alloc((void **)&made.bias, (size_t)n * sizeof *made.bias);
    if (s == HPDL_OK && (cudaMemcpy(made.multiplier, m0, (size_t)n * sizeof *m0, cudaMemcpyHostToDevice) != cudaSuccess ||
                         cudaMemcpy(made.shift, sh, (size_t)n * sizeof *sh, cudaMemcpyHostToDevice) != cudaSuccess ||
                         (o->bias && cudaMemcpy(made.bias, o->bias, (size_t)n * sizeof *made.bias,
                                                cudaMemcpyHostToDevice) != cudaSuccess)))
        s = HPDL_ERR_CUDA;
    HPDL_FREE(m0);
    HPDL_FREE(sh);
    if (s != HPDL_OK) { hpdl_cuda_quant_output_destroy(&made); return s; }
    *d = made;
    return HPDL_OK;
}

/* ------------------------------------------------------------------------ */
/* GEMM launchers                                                            */
/* ------------------------------------------------------------------------ */

/* What the epilogue writes. */
typedef enum hpdl__qgemm_out_kind { HPDL__QOUT_I32, HPDL__QOUT_REQUANT_I8, HPDL__QOUT_REQUANT_I32 } hpdl__qgemm_out_kind;

static inline int hpdl__qgemm_rows16(const void *p, int ld) { return (uintptr_t)p % 16 == 0 && ld % 16 == 0; }

static inline hpdl__qgemm_args hpdl__qgemm_make_args(int M, int N, int K, const int8_t *A, int lda, int32_t za,
                                                     const int8_t *Bt, int ldb, int32_t zb, const hpdl_cuda_quant_output *o,
                                                     hpdl__qgemm_out_kind kind, void *C, int ldc) {
    hpdl__qgemm_args g;
    int relu = kind != HPDL__QOUT_I32 && o->relu;
    g.A = A; g.B = Bt; g.C = C;
    g.M = M; g.N = N; g.K = K; g.lda = lda; g.ldb = ldb; g.ldc = ldc;
    g.avec = hpdl__qgemm_rows16(A, lda);
    g.bvec = hpdl__qgemm_rows16(Bt, ldb);
    g.za = za; g.zb = zb;
    g.bias = kind != HPDL__QOUT_I32 ? o->bias : NULL;
    g.multiplier = kind != HPDL__QOUT_I32 ? o->multiplier : NULL;
    g.shift = kind != HPDL__QOUT_I32 ? o->shift : NULL;
    g.zero_point = kind != HPDL__QOUT_I32 ? o->zero_point : 0;
    g.lo = relu ? g.zero_point : kind == HPDL__QOUT_REQUANT_I8 ? HPDL_QUANT_QMIN : INT32_MIN;
    g.hi = kind == HPDL__QOUT_REQUANT_I8 ? HPDL_QUANT_QMAX : INT32_MAX;
    return g;
}

/* ---- wgmma (Hopper): the persistent warp-specialised GEMM kernel on int8 ---- */

/* The epilogue's arguments: the mma/dp4a kernels' (q), plus the row sums of
   A and of Bt that the zero-point correction needs (NULL when the other
   operand's zero point is 0): the wgmma kernel never sees the tiles in
   registers, so a small kernel sums them first. */
template <typename TC> struct hpdl__wg_qargs {
    int M, N, K;
    hpdl__qgemm_args q;
    const int32_t *rsum, *csum;
};

static __device__ __forceinline__ void hpdl__q_vstore4(int32_t *p, const int32_t v[4]) {
    *(int4 *)p = make_int4(v[0], v[1], v[2], v[3]);
}
static __device__ __forceinline__ void hpdl__q_vstore4(int8_t *p, const int8_t v[4]) {
    *(char4 *)p = make_char4(v[0], v[1], v[2], v[3]);
}

/* What C(., n..n+3) of the int8 GEMM needs besides the product sums: each
   column's share of the zero-point correction plus its bias, and its
   requantization multiplier and shift (columns past N repeat the last). */
struct hpdl__wg_qcols {
    int64_t add[4];
    int32_t multiplier[4];
    int shift[4];
};

template <typename TC>
static __device__ __forceinline__ hpdl__wg_qcols hpdl__wg_cols(const hpdl__wg_qargs<TC> &e, int n) {
    const hpdl__qgemm_args &q = e.q;
    hpdl__wg_qcols c;
    int i;
#pragma unroll
    for (i = 0; i < 4; i++) {
        int j = n + i < e.N ? n + i : e.N - 1;
        c.add[i] = (int64_t)q.K * q.za * q.zb - (e.csum ? (int64_t)q.za * e.csum[j] : 0) + (q.bias ? q.bias[j] : 0);
        c.multiplier[i] = q.multiplier ? q.multiplier[j] : 0;
        c.shift[i] = q.multiplier ? q.shift[j] : 0;
    }
    return c;
}

/* C(m, n..n+3) of the int8 GEMM (hpdl__wg_store's vector step): the
   accumulators corrected by the row and column terms, requantized; one
   vector store when all four are inside and aligned for it. The column
   terms come from hpdl__wg_cols, loaded once per chunk: before, every
   element re-read five per-column arrays (H100, 8192^3: 866 TOPS). */
template <typename TC>
static __device__ __forceinline__ void hpdl__wg_put4(const hpdl__wg_qargs<TC> &e, const hpdl__wg_qcols &c, int m, int n,
                                                     const int *v) {
    const int4 dot = *(const int4 *)v; /* a 16-byte row piece of the shared buffer */
    const int d[4] = {dot.x, dot.y, dot.z, dot.w};
    TC out[4], *p = (TC *)e.q.C + (size_t)m * e.q.ldc + n;
    int64_t row;
    int i;
    if (m >= e.M || n >= e.N) return;
    row = e.rsum ? -(int64_t)e.q.zb * e.rsum[m] : 0;
#pragma unroll
    for (i = 0; i < 4; i++) out[i] = (TC)hpdl__qgemm_requant(e.q, d[i] + row + c.add[i], c.multiplier[i], c.shift[i]);
    if (n + 3 < e.N && (uintptr_t)p % (4 * sizeof(TC)) == 0) {
        hpdl__q_vstore4(p, out);
        return;
    }
    for (i = 0; i < 4 && n + i < e.N; i++) p[i] = out[i];
}

/* The int8 GEMM's tile epilogue (hpdl__wg_epilogue's other overload). */
template <typename TC>
static __device__ __forceinline__ void hpdl__wg_epilogue(const hpdl__wg_qargs<TC> &e, const CUtensorMap *, int,
                                                         const int d[128], int m0, int n0, int *buf) {
    hpdl__wg_store(e, d, m0, n0, buf);
}

/* out[r] = sum_k X[r][k], one warp per row. */
__global__ void hpdl__q_row_sums(const int8_t *X, int rows, int K, int ld, int32_t *out) {
    int r = (int)(blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32), lane = (int)threadIdx.x % 32, k, sum = 0;
    if (r >= rows) return;
    for (k = lane; k < K; k += 32) sum += X[(size_t)r * ld + k];
    for (k = 16; k > 0; k /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, k);
    if (lane == 0) out[r] = sum;
}

/* The int8 GEMM as the persistent wgmma kernel; HPDL_ERR_UNSUPPORTED where
   it cannot run (not Hopper, rows not 16-byte aligned, K = 0). */
template <typename TC> static inline hpdl_status hpdl__qgemm_launch_wgmma(const hpdl__qgemm_args &q, cudaStream_t stream) {
    hpdl__wg_launch l = {(const void *)hpdl__gemm_wgmma_ws<int8_t, hpdl__wg_qargs<TC>, false, false, true, 1, 1, true>,
                         384, 128, 1, 1, 1, 1, NULL, 0};
    hpdl__gemm_operand<int8_t> a = {q.A, q.lda, 1, 1}, b = {q.B, q.ldb, 1, 1};
    hpdl__wg_qargs<TC> e;
    CUtensorMap map_a, map_b;
    int32_t *sums = NULL;
    hpdl_status s;
    if (q.K == 0 || !q.avec || !q.bvec || !hpdl__wg_available()) return HPDL_ERR_UNSUPPORTED;
    if ((s = hpdl__wg_map(&map_a, a, q.M, q.K)) != HPDL_OK || (s = hpdl__wg_map(&map_b, b, q.N, q.K)) != HPDL_OK) return s;
    e.M = q.M; e.N = q.N; e.K = q.K; e.q = q; e.rsum = e.csum = NULL;
    if (q.za != 0 || q.zb != 0) {
        HPDL_CUDA_TRY(cudaMallocAsync((void **)&sums, (size_t)(q.M + q.N) * sizeof(int32_t), stream));
        if (q.zb != 0) hpdl__q_row_sums<<<(q.M + 7) / 8, 256, 0, stream>>>(q.A, q.M, q.K, q.lda, sums);
        if (q.za != 0) hpdl__q_row_sums<<<(q.N + 7) / 8, 256, 0, stream>>>(q.B, q.N, q.K, q.ldb, sums + q.M);
        e.rsum = q.zb != 0 ? sums : NULL;
        e.csum = q.za != 0 ? sums + q.M : NULL;
    }
    s = hpdl__wg_run(l, map_a, map_b, NULL, e, 0 /* no stream-K: its tests cover f16/bf16/TF32 */, 0, stream);
    if (sums && cudaFreeAsync(sums, stream) != cudaSuccess && s == HPDL_OK) s = HPDL_ERR_CUDA;
    return s;
}

/* Runs the kernel of `algo` (AUTO: wgmma on Hopper, else mma where this
   binary and GPU can, else dp4a). */
template <typename TC>
static inline hpdl_status hpdl__qgemm_launch(hpdl_quant_algo algo, const hpdl__qgemm_args &g, cudaStream_t stream) {
    dim3 grid;
    hpdl_status s;
    if (algo == HPDL_QUANT_WGMMA || algo == HPDL_QUANT_AUTO) {
        s = hpdl__qgemm_launch_wgmma<TC>(g, stream);
        if (s != HPDL_ERR_UNSUPPORTED || algo == HPDL_QUANT_WGMMA) return s;
    }
    if (algo != HPDL_QUANT_DP4A) {
        const size_t smem = (size_t)HPDL__QMMA_STAGES * (HPDL__QMMA_BM + HPDL__QMMA_BN) * HPDL__QMMA_BK +
                            (HPDL__QMMA_BM + HPDL__QMMA_BN) * sizeof(int32_t);
        s = hpdl__gemm_launch_tc<hpdl__qmma_shape>(hpdl__qgemm_mma<TC>, g, smem, stream);
        if (s != HPDL_ERR_UNSUPPORTED || algo == HPDL_QUANT_MMA) return s;
    }
    if ((s = hpdl__gemm_grid(g.N, HPDL__QDP4A_BN, g.M, HPDL__QDP4A_BM, &grid)) != HPDL_OK) return s;
    hpdl__qgemm_dp4a<TC><<<grid, 256, 0, stream>>>(g);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* The shared checks: shapes like the CPU twin (B stored K x N when b_kxn,
   else N x K), zero points, the device output parameters for N channels. */
static inline int hpdl__qgemm_valid(hpdl_quant_algo algo, int b_kxn, int M, int N, int K, const int8_t *A, int lda,
                                    int32_t za, const int8_t *B, int ldb, int32_t zb, const hpdl_cuda_quant_output *o,
                                    hpdl__qgemm_out_kind kind, const void *C, int ldc) {
    if ((int)algo < (int)HPDL_QUANT_AUTO || (int)algo > (int)HPDL_QUANT_WGMMA) return 0;
    if (kind != HPDL__QOUT_I32 && (!o || o->n != N || !o->multiplier || !o->shift)) return 0;
    if (b_kxn) return hpdl__gemm_i8_valid(M, N, K, A, lda, za, B, ldb, zb, C, ldc);
    return K <= HPDL_QUANT_MAX_K && za >= HPDL_QUANT_QMIN && za <= HPDL_QUANT_QMAX && zb >= HPDL_QUANT_QMIN &&
           zb <= HPDL_QUANT_QMAX && hpdl__check_matrix(A, M, K, lda) == HPDL_OK &&
           hpdl__check_matrix(B, N, K, ldb) == HPDL_OK && hpdl__check_matrix(C, M, N, ldc) == HPDL_OK;
}

HPDL_LAZY hpdl_status hpdl__qgemm_run(hpdl_quant_algo algo, int M, int N, int K, const int8_t *A, int lda, int32_t za,
                                          const int8_t *Bt, int ldb, int32_t zb, const hpdl_cuda_quant_output *o,
                                          hpdl__qgemm_out_kind kind, void *C, int ldc, cudaStream_t stream) {
    hpdl__qgemm_args g = hpdl__qgemm_make_args(M, N, K, A, lda, za, Bt, ldb, zb, o, kind, C, ldc);
    return kind == HPDL__QOUT_REQUANT_I8 ? hpdl__qgemm_launch<int8_t>(algo, g, stream)
                                         : hpdl__qgemm_launch<int32_t>(algo, g, stream);
}

/* Validates, transposes B into a temporary when it is K x N, runs. */
HPDL_LAZY hpdl_status hpdl__qgemm(hpdl_quant_algo algo, int b_kxn, int M, int N, int K, const int8_t *A, int lda,
                                      int32_t za, const int8_t *B, int ldb, int32_t zb, const hpdl_cuda_quant_output *o,
                                      hpdl__qgemm_out_kind kind, void *C, int ldc, cudaStream_t stream) {
    int8_t *bt = NULL;
    int ldt = (K + 15) / 16 * 16;
    hpdl_status s;
    if (!hpdl__qgemm_valid(algo, b_kxn, M, N, K, A, lda, za, B, ldb, zb, o, kind, C, ldc)) return HPDL_ERR_INVALID;
    if (M == 0 || N == 0) return HPDL_OK;
    if (!b_kxn || K == 0) return hpdl__qgemm_run(algo, M, N, K, A, lda, za, B, ldb, zb, o, kind, C, ldc, stream);
    if (cudaMallocAsync((void **)&bt, (size_t)N * ldt, stream) != cudaSuccess) {
        cudaGetLastError();
        return HPDL_ERR_NOMEM;
    }
    s = hpdl_cuda_quant_transpose_i8(K, N, B, ldb, bt, ldt, stream);
    if (s == HPDL_OK) s = hpdl__qgemm_run(algo, M, N, K, A, lda, za, bt, ldt, zb, o, kind, C, ldc, stream);
    if (cudaFreeAsync(bt, stream) != cudaSuccess && s == HPDL_OK) s = HPDL_ERR_CUDA;
    return s;
}

/* C (int32) = (A - za)(B - zb): hpdl_quant_gemm_i8's arguments, B K x N. */
HPDL_CUDA_API hpdl_status hpdl_cuda_quant_gemm_i8(hpdl_quant_algo algo, int M, int N, int K, const int8_t *A, int lda,
                                             int32_t za, const int8_t *B, int ldb, int32_t zb, int32_t *C, int ldc,
                                             cudaStream_t stream) {
    return hpdl__qgemm(algo, 1, M, N, K, A, lda, za, B, ldb, zb, NULL, HPDL__QOUT_I32, C, ldc, stream);
}

/* The same with B given transposed: Bt is N x K (ldb >= K). */
HPDL_CUDA_API hpdl_status hpdl_cuda_quant_gemm_nt_i8(hpdl_quant_algo algo, int M, int N, int K, const int8_t *A, int lda,
                                                int32_t za, const int8_t *Bt, int ldb, int32_t zb, int32_t *C, int ldc,
                                                cudaStream_t stream) {
    return hpdl__qgemm(algo, 0, M, N, K, A, lda, za, Bt, ldb, zb, NULL, HPDL__QOUT_I32, C, ldc, stream);
}

/* C (int8) = requantize((A - za)(B - zb) + bias): hpdl_quant_gemm_requant_i8, B K x N. */
HPDL_CUDA_API hpdl_status hpdl_cuda_quant_gemm_requant_i8(hpdl_quant_algo algo, int M, int N, int K, const int8_t *A, int lda,
                                                     int32_t za, const int8_t *B, int ldb, int32_t zb,
                                                     const hpdl_cuda_quant_output *o, int8_t *C, int ldc,
                                                     cudaStream_t stream) {
    return hpdl__qgemm(algo, 1, M, N, K, A, lda, za, B, ldb, zb, o, HPDL__QOUT_REQUANT_I8, C, ldc, stream);
}

/* C (int8) = requantize((A - za)(B - zb) + bias) with B given transposed: Bt is N x K (ldb >= K). */
HPDL_CUDA_API hpdl_status hpdl_cuda_quant_gemm_requant_nt_i8(hpdl_quant_algo algo, int M, int N, int K, const int8_t *A,
                                                        int lda, int32_t za, const int8_t *Bt, int ldb, int32_t zb,
                                                        const hpdl_cuda_quant_output *o, int8_t *C, int ldc,
                                                        cudaStream_t stream) {
    return hpdl__qgemm(algo, 0, M, N, K, A, lda, za, Bt, ldb, zb, o, HPDL__QOUT_REQUANT_I8, C, ldc, stream);
}

/* C (int32) as hpdl_quant_gemm_requant_i32 (logits at a chosen scale), Bt N x K. */
HPDL_CUDA_API hpdl_status hpdl_cuda_quant_gemm_requant_nt_i32(hpdl_quant_algo algo, int M, int N, int K, const int8_t *A,
                                                         int lda, int32_t za, const int8_t *Bt, int ldb, int32_t zb,
                                                         const hpdl_cuda_quant_output *o, int32_t *C, int ldc,
                                                         cudaStream_t stream) {
    return hpdl__qgemm(algo, 0, M, N, K, A, lda, za, Bt, ldb, zb, o, HPDL__QOUT_REQUANT_I32, C, ldc, stream);
}

/* ------------------------------------------------------------------------ */
/* int8 convolution: implicit GEMM on the int8 tensor cores (NHWC)           */
/* ------------------------------------------------------------------------ */
/* hpdl_quant_conv2d_i8 on the GPU, bit for bit: the GEMM Y[pixel, k] =
   sum over (r, s, c) of X~[pixel, (r,s,c)] W[k, (r,s,c)] with the int8
   GEMM's pipeline, tiles and requantising epilogue (hpdl__qmma_mainloop,
   hpdl__qgemm_out2), the source rows gathered as the f16 rung gathers them
   (hpdl__conv_mma_args, _rows, _cursor: 16 channels per 16-byte chunk
   here). The filter is KRSC (output channels x taps, K contiguous: the
   tensor-core "Bt" layout).
   ZERO POINT. A tap in the padding reads the input's zero point zx, as the
   CPU's im2col does, so it adds (zx - zx) w = 0; the raw products then
   need one correction per output channel: sum (x - zx) w = sum x w - zx
   sum w, with sum w the filter row's sum (wsum), the GEMM epilogue's column
   term. The weights are symmetric (zero point 0): no row term. On Hopper
   the wgmma rung (below) runs it where it applies (HPDL_QUANT_AUTO). */

/* Tiles of WARPS_M x WARPS_N warps of 64 x 64 outputs. */
template <int WARPS_M, int WARPS_N> struct hpdl__qconv_shape {
    enum { BM = 64 * WARPS_M, BN = 64 * WARPS_N, BK = HPDL__QMMA_BK, S = HPDL__QMMA_STAGES, WN = WARPS_N,
           THREADS = 32 * WARPS_M * WARPS_N };
};

/* Source element k (= (r, s, c)) of gathered row i, or zx in the padding
   and past K: the element-by-element path for any channel count. */
template <typename SH>
static __device__ __forceinline__ int8_t hpdl__qconv_element(const hpdl__conv_mma_args<int8_t> &a,
                                                             const hpdl__conv_mma_rows<SH, 16> &rows, int i, int k,
                                                             int8_t zx) {
    int tap = k / a.inner, c = k - tap * a.inner, r = tap / a.kernel_w, s = tap - r * a.kernel_w;
    int ih = hpdl__conv_mma_pos(rows.h0[i] + r * a.tap_h, 1, a.src_h), iw = hpdl__conv_mma_pos(rows.w0[i] + s * a.tap_w, 1, a.src_w);
    return k < a.K && ih >= 0 && iw >= 0 ? a.src[((size_t)(rows.image_row[i] + ih) * a.src_w + iw) * a.src_c + c] : zx;
}

/* K tile k0.. of the block's source rows into a swizzled stage (BM rows of
   64 bytes). VEC (channels % 16 == 0): the 16 channels of a chunk share the
   cursor's tap: one cp.async, or 16 bytes of zx stored directly in the
   padding; else element by element. */
template <typename SH, bool VEC>
static __device__ __forceinline__ void hpdl__qconv_gather(const hpdl__conv_mma_args<int8_t> &a,
                                                          const hpdl__conv_mma_rows<SH, 16> &rows,
                                                          const hpdl__conv_mma_cursor &at, int8_t zx, int8_t *s, int k0) {
    typedef hpdl__conv_mma_rows<SH, 16> R;
    const int chunk = (int)threadIdx.x % R::CPR, row = (int)threadIdx.x / R::CPR, k = k0 + chunk * 16;
    const int fill = (int)(0x01010101u * (uint8_t)zx);
#pragma unroll
    for (int i = 0; i < R::ROWS; i++) {
        int8_t *dst = s + hpdl__qswz(row + i * R::ROW_STEP, chunk);
        if (VEC) {
            int ih = hpdl__conv_mma_pos(rows.h0[i] + at.r * a.tap_h, 1, a.src_h);
            int iw = hpdl__conv_mma_pos(rows.w0[i] + at.s * a.tap_w, 1, a.src_w);
            if (k < a.K && ih >= 0 && iw >= 0)
                hpdl__cp_async16(dst, a.src + ((size_t)(rows.image_row[i] + ih) * a.src_w + iw) * a.src_c + at.c);
            else
                *(int4 *)dst = make_int4(fill, fill, fill, fill);
        } else {
            int8_t v[16];
            int4 u;
#pragma unroll
            for (int j = 0; j < 16; j++) v[j] = hpdl__qconv_element(a, rows, i, k + j, zx);
            memcpy(&u, v, sizeof u);
            *(int4 *)dst = u;
        }
    }
}

/* The convolution's tiles for hpdl__qmma_mainloop: gathered source rows,
   the filter's rows n0.. as the GEMM loads Bt. */
template <typename SH, bool VEC> struct hpdl__qconv_tiles {
    const hpdl__qgemm_args &g;
    const hpdl__conv_mma_args<int8_t> &a;
    const hpdl__conv_mma_rows<SH, 16> &rows;
    hpdl__conv_mma_cursor &at;
    int8_t *sa, *sb;
    int n0;
    __device__ __forceinline__ void load(int st, int kt) {
        hpdl__qconv_gather<SH, VEC>(a, rows, at, (int8_t)g.za, sa + st * SH::BM * SH::BK, kt * SH::BK);
        hpdl__qgemm_stage<SH::BN, SH::THREADS>(sb + st * SH::BN * SH::BK, g.B, g.ldb, n0, kt * SH::BK, g.N, g.K, g.bvec);
        at.next(a, SH::BK, true, false);
    }
    __device__ __forceinline__ void landed(const int8_t *, const int8_t *) {}
};

/* Column n's share of the zero-point correction: the filter row's sum (0 past N). */
static __device__ __forceinline__ int32_t hpdl__qconv_wsum(const hpdl__qgemm_args &g, const int32_t *wsum, int n) {
    return n < g.N ? wsum[n] : 0;
}

/* Block tile (blockIdx: pixels x output channels, grouped order) of the
   convolution; g: the GEMM (B = the filter, C = y), a: the geometry. */
template <typename TC, typename SH, bool VEC>
__global__ void __launch_bounds__(SH::THREADS) hpdl__qconv_mma(hpdl__qgemm_args g, hpdl__conv_mma_args<int8_t> a,
                                                                const int32_t *wsum) {
#ifdef HPDL__GEMM_SM80
    extern __shared__ int4 hpdl__qgemm_smem[];
    int8_t *sa = (int8_t *)hpdl__qgemm_smem, *sb = sa + SH::S * SH::BM * SH::BK;
    const int lane = (int)threadIdx.x % 32, warp = (int)threadIdx.x / 32, wm = warp / SH::WN * 64, wn = warp % SH::WN * 64;
    int tm, tn, i, j;
    int32_t acc[4][8][4];
    hpdl__conv_mma_rows<SH, 16> rows;
    hpdl__conv_mma_cursor at;
    hpdl__gemm_tile_order(&tm, &tn);
    rows.init(a, tm * SH::BM);
    at.init(a, (int)threadIdx.x % (SH::BK / 16) * 16, 0);
    hpdl__qconv_tiles<SH, VEC> tiles = {g, a, rows, at, sa, sb, tn * SH::BN};
    hpdl__qmma_mainloop<SH::BM, SH::BN, SH::S>(tiles, sa, sb, (g.K + SH::BK - 1) / SH::BK, wm, wn, acc);
#pragma unroll
    for (j = 0; j < 8; j++) { /* c0, c1: row lane/4, columns 2(lane%4), +1; c2, c3: 8 rows down */
        int n = tn * SH::BN + wn + j * 8 + lane % 4 * 2;
        int32_t cs0 = hpdl__qconv_wsum(g, wsum, n), cs1 = hpdl__qconv_wsum(g, wsum, n + 1);
#pragma unroll
        for (i = 0; i < 4; i++) {
            int m = tm * SH::BM + wm + i * 16 + lane / 4;
            hpdl__qgemm_out2<TC>(g, m, n, acc[i][j][0], acc[i][j][1], 0, cs0, cs1);
            hpdl__qgemm_out2<TC>(g, m + 8, n, acc[i][j][2], acc[i][j][3], 0, cs0, cs1);
        }
    }
#else
    (void)g; (void)a; (void)wsum; /* host pass, or a GPU without mma.sync: the launcher never starts it */
#endif
}

/* ---- the wgmma rung (Hopper, sm_90a) ----
   The f16/bf16 convolution's kernel (hpdl__conv_wgmma: pixel boxes by 4-D
   tensor copies per tap, the filter by 3-D copies, warp-specialised,
   persistent) on int8 operands: a 128-byte swizzled row holds 128
   channels, so a k step is (tap, 128 input channels), four wgmma k32 steps
   into s32 accumulators; then the requantising epilogue below.
   PADDING. The copy engine fills taps outside x with 0, where the CPU (and
   the mma rung) put zx. Over the taps inside the image the CPU sums
   (x - zx) w = x w - zx w, so with zeros outside:
       acc = dot - zx wsum + zx (weights of the taps outside),
   dot being what the tensor cores summed. The last term is nothing for a
   pixel whose window lies inside x, and one entry of the border table
   below (from each output channel's per-tap weight sums, wtap) on the
   border. */
/* BORDER CLASSES. Along one side, output positions o whose window lies
   inside x form one class (`inner`); the `top` positions before them and
   the `bottom` ones after each form their own (o*stride - pad < 0, or the
   last tap past the edge). Where they leave no inner position (tiny
   images), every position is its own class. A pixel's class is
   (class of h) * classes_w + (class of w), and one table holds zx times
   the weights of the taps outside x for each class and output channel:
   the epilogue adds one entry per output of a border pixel, where it
   looped over the outside taps (FLO/BREV and a load a tap: on 8x8 images
   most of the int8 3x3 layers' time). */
struct hpdl__qconv_edges {
    int top, bottom, classes, inner; /* inner: -1 where every position is its own class */
};

static inline hpdl__qconv_edges hpdl__qconv_edges_make(int out, int in, int kernel, int stride, int pad, int dilation) {
    hpdl__qconv_edges e;
    const int last_inside = in + pad - (kernel - 1) * dilation; /* o stride < this: the last tap inside */
    const int first_bottom = last_inside <= 0 ? 0 : (last_inside + stride - 1) / stride;
    e.top = (pad + stride - 1) / stride < out ? (pad + stride - 1) / stride : out;
    e.bottom = out - first_bottom > 0 ? out - first_bottom : 0;
    if (e.top + e.bottom < out) {
        e.classes = e.top + 1 + e.bottom;
        e.inner = e.top;
    } else {
        e.top = out, e.bottom = 0, e.classes = out, e.inner = -1;
    }
    return e;
}

/* The class of position o, and a position of class c. */
static __host__ __device__ __forceinline__ int hpdl__qconv_edge_class(const hpdl__qconv_edges &e, int o, int out) {
    return o < e.top ? o : o >= out - e.bottom ? e.top + 1 + (o - (out - e.bottom)) : e.top;
}
static __host__ __device__ __forceinline__ int hpdl__qconv_edge_position(const hpdl__qconv_edges &e, int c, int out) {
    return c <= e.top ? c : out - e.bottom + (c - e.top - 1);
}

struct hpdl__qconv_border_args {
    hpdl__qconv_edges eh, ew;
    int out_h, out_w, x_h, x_w, kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, channels;
    int32_t zx;
};

/* border[(ch * classes_w + cw) * channels + n] = zx times output channel
   n's weights on the taps outside x of a pixel of class (ch, cw). */
__global__ void hpdl__qconv_border(hpdl__qconv_border_args a, const int32_t *wtap, int32_t *border) {
    const int count = a.eh.classes * a.ew.classes * a.channels;
    for (int i = (int)(blockIdx.x * blockDim.x + threadIdx.x); i < count; i += (int)(gridDim.x * blockDim.x)) {
        const int n = i % a.channels, cls = i / a.channels, cw = cls % a.ew.classes, ch = cls / a.ew.classes;
        const int h0 = hpdl__qconv_edge_position(a.eh, ch, a.out_h) * a.stride_h - a.pad_h;
        const int w0 = hpdl__qconv_edge_position(a.ew, cw, a.out_w) * a.stride_w - a.pad_w;
        int32_t sum = 0;
        for (int r = 0; r < a.kernel_h; r++)
            for (int s = 0; s < a.kernel_w; s++) {
                const int ih = h0 + r * a.dilation_h, iw = w0 + s * a.dilation_w;
                if (ih < 0 || ih >= a.x_h || iw < 0 || iw >= a.x_w)
                    sum += wtap[(size_t)n * a.kernel_h * a.kernel_w + r * a.kernel_w + s];
            }
        border[i] = sum * a.zx; /* |zx| 128 K 128 < 2^31 for K <= HPDL_QUANT_MAX_K */
    }
}

struct hpdl__qconv_wg_args : hpdl__conv_wg_args<int8_t> {
    hpdl__qgemm_args q;  /* bias, multiplier, shift, output zero point, clamp; q.za = zx */
    const int32_t *wsum; /* output channel k's weight sum */
    const int32_t *wtap; /* its sums per tap: wtap[k * taps + r * kernel_w + s] */
    hpdl__qconv_edges edges_h, edges_w; /* output rows' and columns' border classes */
    const int32_t *border; /* the padding correction per class and channel (hpdl__qconv_wg_border) */
};

/* Columns n..n+3 (past N: the last): the bias and -zx wsum, the multiplier and shift. */
static __device__ __forceinline__ hpdl__wg_qcols hpdl__wg_cols(const hpdl__qconv_wg_args &g, int n) {
    hpdl__wg_qcols c;
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const int j = n + i < g.channels ? n + i : g.channels - 1;
        c.add[i] = (g.q.bias ? g.q.bias[j] : 0) - (int64_t)g.q.za * g.wsum[j];
        c.multiplier[i] = g.q.multiplier[j];
        c.shift[i] = g.q.shift[j];
    }
    return c;
}

/* The border class of output pixel (h, w) (hpdl__qconv_edges), or -1
   when its window lies inside x. */
static __device__ __forceinline__ int hpdl__qconv_wg_class(const hpdl__qconv_wg_args &g, int h, int w) {
    /* (rows past y, which the copy engine clips, take the last row's class) */
    const int ch = hpdl__qconv_edge_class(g.edges_h, min(h, g.rows - 1), g.rows);
    const int cw = hpdl__qconv_edge_class(g.edges_w, min(w, g.cols - 1), g.cols);
    return ch == g.edges_h.inner && cw == g.edges_w.inner ? -1 : ch * g.edges_w.classes + cw;
}

/* y(the thread's row i, n..n+3): the product sums from the epilogue
   buffer, corrected and requantised (hpdl__qgemm_requant); one 4-byte
   store when all four are inside and aligned. */
static __device__ __forceinline__ void hpdl__conv_wg_put4(const hpdl__qconv_wg_args &g, const hpdl__wg_qcols &c,
                                                          const hpdl__conv_wg_px &px, int i, int n, const int *v) {
    const int4 dot = *(const int4 *)v;
    const int d[4] = {dot.x, dot.y, dot.z, dot.w};
    const int border = hpdl__qconv_wg_class(g, px.h[i], px.w[i]);
    int64_t fix[4] = {0, 0, 0, 0};
    int8_t out[4];
    if (!(px.inside >> i & 1) || n >= g.channels) return;
    int8_t *p = g.y + px.at[i] + n;
    if (border >= 0)
        for (int k = 0; k < 4 && n + k < g.channels; k++) fix[k] = g.border[(size_t)border * g.channels + n + k];
#pragma unroll
    for (int k = 0; k < 4; k++) out[k] = (int8_t)hpdl__qgemm_requant(g.q, d[k] + c.add[k] + fix[k], c.multiplier[k], c.shift[k]);
    if (n + 3 < g.channels && (uintptr_t)p % 4 == 0) {
        hpdl__q_vstore4(p, out);
        return;
    }
    for (int k = 0; k < 4 && n + k < g.channels; k++) p[k] = out[k];
}

/* ---- the int8 epilogue from the registers, stored by the copy engine ----
   Where y can be stored as boxes (tma_y: channels a multiple of 16, y
   16-byte aligned), each thread requantises
   its own accumulators as wgmma left them (hpdl__wg_buffer_chunk: rows r
   and r + 8, columns 8j + 2(lane % 4), +1), packs each pair of int8
   outputs into 16 bits and writes it into a box of 128 pixels x 64
   channels (64-byte rows, the copy engine's 64-byte swizzle); one thread
   stores the box as hpdl__conv_wg_store_box does for f16. Per output (see
   notes/quant.md): the sum of the product sum, the column's constant and
   the padding correction in one 32-bit add, hpdl__q_requant32, half a
   16-bit shared store; the columns' constants come from a table in shared
   memory (hpdl__qconv_wg_columns), the padding correction from the border
   table, for border pixels only. Before, the outputs went through a
   shared buffer of int32 and
   were requantised in 64 bits with the per-pixel padding test, ~40
   instructions each.
   The 32-bit sum is exact when the true sum bias + sum over the taps inside
   of (x - zx) w fits in int32, sure when |bias| + 255 * 128 * K <= INT32_MAX:
   the sum wraps on its way but lands on the exact value. A tile with a
   column beyond that takes the 64-bit sum and hpdl__qgemm_requant
   (WIDE), as every column did before. */

/* Column n's constants: bias - zx wsum (the 32-bit sum's term: its low
   word), the multiplier, the shift e and 2^e - 1. */
struct __align__(16) hpdl__qconv_wg_col {
    int32_t add, multiplier, shift, mask;
};

/* The places in their box of this thread's rows r and r + 8 (the
   registers' rows), and the element-wise path's rows (hpdl__conv_wg_rows_of). */
struct hpdl__qconv_wg_rows {
    hpdl__conv_wg_rows buffer;
    int bw[2], bh[2], bn[2];
};
static __device__ __forceinline__ hpdl__qconv_wg_rows hpdl__conv_wg_rows_of(const hpdl__qconv_wg_args &g, int row0) {
    const int t = (int)threadIdx.x % 128;
    hpdl__qconv_wg_rows r;
    r.buffer = hpdl__conv_wg_rows_of<int8_t>(g, row0);
#pragma unroll
    for (int i = 0; i < 2; i++) hpdl__conv_wg_place(g, row0 + t / 32 * 16 + t % 32 / 4 + 8 * i, &r.bw[i], &r.bh[i], &r.bn[i]);
    return r;
}

/* The tile's table of BN columns from n0 (past N: the last), filled by the
   256 consumer threads; returns, after the consumers' barrier, whether a
   column needs the 64-bit sum. */
static __device__ __forceinline__ bool hpdl__qconv_wg_columns(const hpdl__qconv_wg_args &g, int n0, int bn,
                                                              hpdl__qconv_wg_col *cols) {
    const int64_t terms = (int64_t)255 * 128 * g.q.K; /* bounds |sum over the taps inside of (x - zx) w| */
    bool wide = false;
    for (int i = (int)threadIdx.x - 128; i < bn; i += 256) {
        const int n = n0 + i < g.channels ? n0 + i : g.channels - 1;
        const int64_t bias = g.q.bias ? g.q.bias[n] : 0, add = bias - (int64_t)g.q.za * g.wsum[n];
        hpdl__qconv_wg_col c = {(int32_t)add, g.q.multiplier[n], g.q.shift[n], (int32_t)((1u << g.q.shift[n]) - 1)};
        cols[i] = c;
        wide = wide || (bias < 0 ? -bias : bias) + terms > INT32_MAX;
    }
    return hpdl__conv_wg_bar_consumers_any(wide);
}

/* Output channel n of one pixel: the product sum dot, the padding
   correction fix (as the tensor cores and the border table give them),
   the column's constants (WIDE: the 64-bit sum, its terms read again). */
template <bool WIDE>
static __device__ __forceinline__ int32_t hpdl__qconv_wg_requant(const hpdl__qconv_wg_args &g, const hpdl__qconv_wg_col &c,
                                                                 int n, int32_t dot, uint32_t fix) {
    if (WIDE)
        return hpdl__qgemm_requant(g.q, (int64_t)dot + (int32_t)fix + (g.q.bias ? g.q.bias[n] : 0) - (int64_t)g.q.za * g.wsum[n],
                                   c.multiplier, c.shift);
    return hpdl__q_requant32((int32_t)((uint32_t)dot + (uint32_t)c.add + fix), c.multiplier, c.shift, c.mask,
                             g.q.zero_point, g.q.lo, g.q.hi);
}

/* Byte b of row `row` in a box of 64-byte rows in the copy engine's 64-byte
   swizzle: 16-byte chunk b / 16 XOR bits 7-8 of the row's offset, so that
   the eight rows a warp writes at once fall on distinct banks. */
static __device__ __forceinline__ int hpdl__wg_swizzle64(int row, int b) {
    return row * 64 + (((b >> 4) ^ (row >> 1)) & 3) * 16 + (b & 15);
}

/* The output channel of this thread's k-th column (k = 2 jj + 0 or 1) in
   chunk c of the tile at n0; past N, the last (its outputs are clipped). */
static __device__ __forceinline__ int hpdl__qconv_wg_n(const hpdl__qconv_wg_args &g, int n0, int c, int k) {
    return min(n0 + 64 * c + 8 * (k / 2) + (int)threadIdx.x % 4 * 2 + k % 2, g.channels - 1);
}

/* The consumer's 64 x BN outputs of tile `tile` into the box buffers (two
   of 8 KB, alternating over the block's chunks as in
   hpdl__conv_wg_store_box), one box of 64 channels at a time. */
template <int BN, bool WIDE>
static __device__ __forceinline__ void hpdl__qconv_wg_put_boxes(const hpdl__qconv_wg_args &g, const hpdl__qconv_wg_rows &rows,
                                                                const CUtensorMap *map_y, const int *d, int tile, int n0,
                                                                int row0, int done, const hpdl__qconv_wg_col *cols,
                                                                unsigned char *bufs) {
    enum { CHUNKS = BN / 64, BOX_BYTES = 128 * 64 };
    const int t = (int)threadIdx.x % 128, lane = t % 32, row = row0 + t / 32 * 16 + lane / 4, pair = lane % 4 * 2;
    const bool issuer = threadIdx.x == 128;
    int image0, h0, w0, border[2];
    hpdl__conv_wg_tile(g, tile, &image0, &h0, &w0);
#pragma unroll
    for (int i = 0; i < 2; i++) border[i] = hpdl__qconv_wg_class(g, h0 + rows.bh[i], w0 + rows.bw[i]);
#pragma unroll
    for (int c = 0; c < CHUNKS; c++) {
        unsigned char *box = bufs + (done * CHUNKS + c) % 2 * BOX_BYTES;
        uint32_t fix[2][16] = {{0}}; /* rows r, r + 8: all 16 loads issued at once, border pixels only */
#pragma unroll
        for (int i = 0; i < 2; i++)
            if (border[i] >= 0)
#pragma unroll
                for (int k = 0; k < 16; k++)
                    fix[i][k] = (uint32_t)g.border[(size_t)border[i] * g.channels + hpdl__qconv_wg_n(g, n0, c, k)];
#pragma unroll
        for (int jj = 0; jj < 8; jj++) { /* column pair jj's constants, loaded once for both rows */
            const int j = 8 * c + jj, col = 8 * j + pair, n_lo = hpdl__qconv_wg_n(g, n0, c, 2 * jj);
            const int n_hi = hpdl__qconv_wg_n(g, n0, c, 2 * jj + 1);
            const hpdl__qconv_wg_col c0 = cols[col], c1 = cols[col + 1];
#pragma unroll
            for (int i = 0; i < 2; i++) { /* rows r, r + 8: accumulators 4j + 2i, +1 of 8-column groups j */
                const int32_t lo = hpdl__qconv_wg_requant<WIDE>(g, c0, n_lo, d[4 * j + 2 * i], fix[i][2 * jj]);
                const int32_t hi = hpdl__qconv_wg_requant<WIDE>(g, c1, n_hi, d[4 * j + 2 * i + 1], fix[i][2 * jj + 1]);
                *(uint16_t *)(box + hpdl__wg_swizzle64(row + 8 * i, 8 * jj + pair)) = (uint16_t)((lo & 0xff) | (hi & 0xff) << 8);
            }
        }
        hpdl__fence_async_smem();
        if (issuer) hpdl__tma_wait_read<0>(); /* the chunk before has read the other buffer */
        hpdl__conv_wg_bar_consumers();
        if (issuer) hpdl__tma_store_4d(map_y, box, n0 + 64 * c, w0, h0, image0);
    }
}

/* The kernel's epilogue for the int8 convolution: from the registers into
   boxes of y where it can (above; the columns' table after the two box
   buffers), else element-wise (hpdl__conv_wg_store), in the consumer's own
   buffer. */
template <typename T, int BN>
static __device__ __forceinline__ void hpdl__conv_wg_epilogue(const hpdl__qconv_wg_args &g, const hpdl__qconv_wg_rows &rows,
                                                              const CUtensorMap *map_y, const int *d, int tile, int n0,
                                                              int row0, int done, unsigned char *epi) {
    static_assert(2 * 128 * 64 + 2 * BN * sizeof(hpdl__qconv_wg_col) + sizeof(int) <= 2 * HPDL__WG_EPI_BYTES,
                  "box buffers, tables and their flag");
    if (!g.tma_y) {
        hpdl__conv_wg_store<hpdl__qconv_wg_args, int, BN>(g, hpdl__conv_wg_pixels(g, rows.buffer, tile), d, n0,
                                                          (int *)(epi + row0 / 64 * HPDL__WG_EPI_BYTES));
        return;
    }
    hpdl__qconv_wg_col *tables = (hpdl__qconv_wg_col *)(epi + 2 * 128 * 64);
    int *wide_flag = (int *)(tables + 2 * BN);
    /* A block whose tiles all have the same columns (the grid a multiple of
       the column tiles: ResNet-18's layers) fills its table once, the
       first tile; else every tile, two tables alternating. (Filling it per
       tile, global loads and a barrier, was a fifth of a 64-channel layer's
       time.) The flag keeps whether the table needs the 64-bit sum. */
    const bool same_columns = gridDim.x % ((g.channels + BN - 1) / BN) == 0;
    hpdl__qconv_wg_col *cols = tables + (same_columns ? 0 : done % 2 * BN);
    bool wide;
    if (!same_columns || done == 0) {
        wide = hpdl__qconv_wg_columns(g, n0, BN, cols);
        if (threadIdx.x == 128) *wide_flag = wide; /* seen by all after put_boxes' barrier */
    } else {
        wide = *wide_flag != 0;
    }
    if (wide)
        hpdl__qconv_wg_put_boxes<BN, true>(g, rows, map_y, d, tile, n0, row0, done, cols, epi);
    else
        hpdl__qconv_wg_put_boxes<BN, false>(g, rows, map_y, d, tile, n0, row0, done, cols, epi);
}

/* One launch of the int8 kernel with BN-wide column tiles and k steps of
   `row` bytes of channels. */
template <int BN>
static inline hpdl_status hpdl__qconv_wg_launch(int row, const CUtensorMap &map_src, const CUtensorMap &map_w,
                                                const CUtensorMap &map_y, const hpdl__qconv_wg_args &g,
                                                cudaStream_t stream) {
    return row == 64 ? hpdl__conv_wg_launch<int8_t, BN, false, 64>(map_src, map_w, map_y, g, stream)
                     : hpdl__conv_wg_launch<int8_t, BN, false, 128>(map_src, map_w, map_y, g, stream);
}

/* The border table of a convolution (hpdl__qconv_border): its arguments
   from the geometry, and its entries (0 where every window lies inside x:
   no table). */
static inline hpdl__qconv_border_args hpdl__qconv_border_of(const hpdl__conv_geom &geo, int32_t zx) {
    const hpdl_conv2d_params &p = geo.p;
    hpdl__qconv_border_args a;
    a.eh = hpdl__qconv_edges_make(geo.y.h, geo.x.h, p.kernel_h, p.stride_h, p.pad_h, p.dilation_h);
    a.ew = hpdl__qconv_edges_make(geo.y.w, geo.x.w, p.kernel_w, p.stride_w, p.pad_w, p.dilation_w);
    a.out_h = geo.y.h, a.out_w = geo.y.w, a.x_h = geo.x.h, a.x_w = geo.x.w;
    a.kernel_h = p.kernel_h, a.kernel_w = p.kernel_w, a.stride_h = p.stride_h, a.stride_w = p.stride_w;
    a.pad_h = p.pad_h, a.pad_w = p.pad_w, a.dilation_h = p.dilation_h, a.dilation_w = p.dilation_w;
    a.channels = geo.y.c, a.zx = zx;
    return a;
}
static inline int hpdl__qconv_border_count(const hpdl__qconv_border_args &a) {
    const bool none = a.eh.inner == 0 && a.eh.classes == 1 && a.ew.inner == 0 && a.ew.classes == 1;
    return none ? 0 : a.eh.classes * a.ew.classes * a.channels;
}

/* Fills `border` (hpdl__qconv_border_count entries, > 0) from the filter's per-tap sums. */
static inline hpdl_status hpdl__qconv_border_fill(const hpdl__qconv_border_args &a, const int32_t *wtap, int32_t *border,
                                                  cudaStream_t stream) {
    const int count = hpdl__qconv_border_count(a);
    hpdl__qconv_border<<<(unsigned)((count + 255) / 256 < 1024 ? (count + 255) / 256 : 1024), 256, 0, stream>>>(a, wtap,
                                                                                                            border);
    return cudaGetLastError() == cudaSuccess ? HPDL_OK : HPDL_ERR_CUDA;
}

/* g's border classes, and its table: `made` (hpdl__qconv_border_fill of
   the same geometry and zx, as a network makes it once), else a
   stream-ordered temporary in *temp (the caller frees it), else none. */
static inline hpdl_status hpdl__qconv_wg_border(hpdl__qconv_wg_args *g, const hpdl__conv_geom &geo, const int32_t *made,
                                                int32_t **temp, cudaStream_t stream) {
    const hpdl__qconv_border_args a = hpdl__qconv_border_of(geo, g->q.za);
    const int count = hpdl__qconv_border_count(a);
    g->edges_h = a.eh;
    g->edges_w = a.ew;
    g->border = made;
    if (count == 0 || made) return HPDL_OK;
    if (cudaMallocAsync((void **)temp, (size_t)count * sizeof(int32_t), stream) != cudaSuccess) {
        cudaGetLastError();
        return HPDL_ERR_NOMEM;
    }
    g->border = *temp;
    return hpdl__qconv_border_fill(a, g->wtap, *temp, stream);
}

/* The int8 convolution (int8 y) on the wgmma rung where it applies: input
   channels a multiple of 16 (the copy engine's 16-byte strides), filter
   rows unpadded (ldw = K), x and the filter 16-byte aligned, strides up
   to 8, an sm_90a binary on a Hopper GPU; else HPDL_ERR_UNSUPPORTED.
   border: the geometry's border table made before (hpdl__qconv_border_fill), or NULL. */
HPDL_LAZY hpdl_status hpdl__qconv_wg_run(const hpdl__conv_geom &geo, const int8_t *x, int32_t zx, const int8_t *wt,
                                         int ldw, const int32_t *wsum, const int32_t *wtap, const int32_t *border,
                                         const hpdl_cuda_quant_output *o, int8_t *y, cudaStream_t stream) {
    const hpdl_conv2d_params &p = geo.p;
    hpdl_tensor4 src = geo.x, dst = geo.y;
    const long long pixels = (long long)dst.n * dst.h * dst.w;
    const int K = p.kernel_h * p.kernel_w * src.c;
    hpdl__qconv_wg_args g;
    CUtensorMap map_src, map_w, map_y = CUtensorMap();
    const int row = src.c <= 64 ? 64 : 128; /* bytes of channels a k step: no more than half of them zeros */
    int sms = 0, bn;
    int32_t *temp = NULL;
    hpdl_status s;
    if (!wtap || src.c % 16 != 0 || ldw != K || (uintptr_t)x % 16 != 0 || (uintptr_t)wt % 16 != 0 || p.stride_h > 8 ||
        p.stride_w > 8 || !hpdl__wg_available())
        return HPDL_ERR_UNSUPPORTED;
    if (hpdl__sm_count(&sms) != HPDL_OK) return HPDL_ERR_CUDA;
    if (hpdl__conv_is_pointwise(p)) hpdl__conv_flatten(&src, &dst, pixels);
    if (hpdl__conv_wg_setup<int8_t>(geo, false, src, dst, x, wt, (size_t)ldw, row, y, &g, &map_src, &map_w) != HPDL_OK ||
        hpdl__conv_wg_tiles<int8_t>(&g, dst) != HPDL_OK)
        return HPDL_ERR_UNSUPPORTED;
    g.q = hpdl__qgemm_make_args((int)pixels, dst.c, K, x, K, zx, wt, ldw, 0, o, HPDL__QOUT_REQUANT_I8, y, dst.c);
    g.wsum = wsum;
    g.wtap = wtap;
    /* Tiles as wide as the output channels (up to 256), narrower while the
       narrower ones still fit in one wave: the deep layers have few pixels
       (ResNet-18's last stage at batch 256: 32 pixel tiles, which 256-wide
       column tiles would give 64 of 132 SMs). */
    bn = dst.c <= 64 ? 64 : dst.c <= 128 ? 128 : 256;
    while (bn > 64 && 2LL * g.tiles * ((dst.c + bn - 1) / bn) <= sms) bn /= 2;
    /* y in boxes of the tiles' pixels x 64 channels (hpdl__qconv_wg_put_boxes) where the engine takes it */
    g.tma_y = dst.c % 16 == 0 && (uintptr_t)y % 16 == 0 &&
              hpdl__conv_wg_map4(&map_y, dst, y, g.box_w, g.box_h, g.box_n, 1, 1, 64) == HPDL_OK;
    if ((s = hpdl__qconv_wg_border(&g, geo, border, &temp, stream)) != HPDL_OK) return s;
    s = bn == 64    ? hpdl__qconv_wg_launch<64>(row, map_src, map_w, map_y, g, stream)
        : bn == 128 ? hpdl__qconv_wg_launch<128>(row, map_src, map_w, map_y, g, stream)
                    : hpdl__qconv_wg_launch<256>(row, map_src, map_w, map_y, g, stream);
    if (temp && cudaFreeAsync(temp, stream) != cudaSuccess && s == HPDL_OK) s = HPDL_ERR_CUDA;
    return s;
}

/* int32 outputs (a convolution giving the logits) have no wgmma rung. */
HPDL_LAZY hpdl_status hpdl__qconv_wg_run(const hpdl__conv_geom &, const int8_t *, int32_t, const int8_t *, int,
                                         const int32_t *, const int32_t *, const int32_t *, const hpdl_cuda_quant_output *,
                                         int32_t *, cudaStream_t) {
    return HPDL_ERR_UNSUPPORTED;
}

template <typename TC, typename SH>
static inline hpdl_status hpdl__qconv_launch_shape(const hpdl__qgemm_args &g, const hpdl__conv_mma_args<int8_t> &a,
                                                   const int32_t *wsum, cudaStream_t stream) {
    const size_t smem = (size_t)SH::S * (SH::BM + SH::BN) * SH::BK;
    return hpdl__gemm_launch_tc<SH>(a.src_vec ? hpdl__qconv_mma<TC, SH, true> : hpdl__qconv_mma<TC, SH, false>, g, smem,
                                    stream, a, wsum);
}

/* ---- the im2col rung ----
   For inputs whose channels are not a multiple of 16 (a network's first
   layer: 1 or 3 channels; the lab's CNN's 6) the implicit GEMMs gather
   byte by byte, and the copy engine cannot take their pixels. Here the
   rows are written out once, as the CPU's hpdl__quant_im2col lays them out
   (zx in the padding), padded with zeros to ld = K rounded up to 16
   bytes (rows 16-byte aligned: cudaMallocAsync's are), and multiplied by
   the filter as a 1x1 convolution of ld channels on the wgmma rung (its
   epilogue stores by the copy engine), else by the int8 GEMM. K = R S C is short, so the rows cost little memory: the
   ResNet stem's are 32 bytes a pixel. */
struct hpdl__q_im2col_args {
    int src_h, src_w, src_c, out_h, out_w;
    int kernel_w, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
    int K, ld; /* taps x channels; bytes between rows */
};

/* Bytes 16j..16j+15 (j = blockIdx.y) of the rows of pixels m (a
   grid-stride loop over M), built in registers and stored at once: zx in
   the padding, zeros past K. (Byte stores, a tap's C codes at a time,
   made the stem's rows cost 5x its products.) */
__global__ void hpdl__q_im2col(hpdl__q_im2col_args a, int M, const int8_t *x, int8_t zx, int8_t *rows) {
    const int k0 = (int)blockIdx.y * 16, tap0 = k0 / a.src_c, c0 = k0 - tap0 * a.src_c;
    for (int m = (int)(blockIdx.x * blockDim.x + threadIdx.x); m < M; m += (int)(gridDim.x * blockDim.x)) {
        const int ow = m % a.out_w, rest = m / a.out_w, oh = rest % a.out_h, n = rest / a.out_h;
        const int8_t *image = x + (size_t)n * a.src_h * a.src_w * a.src_c;
        int4 chunk;
        int8_t *b = (int8_t *)&chunk;
        int tap = tap0, c = c0;
#pragma unroll
        for (int j = 0; j < 16; j++) {
            const int r = tap / a.kernel_w, s = tap - r * a.kernel_w;
            const int ih = oh * a.stride_h - a.pad_h + r * a.dilation_h, iw = ow * a.stride_w - a.pad_w + s * a.dilation_w;
            const bool inside = ih >= 0 && ih < a.src_h && iw >= 0 && iw < a.src_w;
            b[j] = k0 + j >= a.K ? 0 : inside ? image[((size_t)ih * a.src_w + iw) * a.src_c + c] : zx;
            if (++c == a.src_c) c = 0, tap++;
        }
        *(int4 *)(rows + (size_t)m * a.ld + k0) = chunk;
    }
}

/* The M x ld rows as a 1x1 convolution's input (ld channels) and y as its
   output: the geometry for hpdl__qconv_wg_run. */
static inline hpdl__conv_geom hpdl__qconv_rows_geom(int M, int ld, int N) {
    hpdl__conv_geom g;
    g.p = hpdl_conv2d_params_make(1, 1, 0, 1, 1);
    g.x = hpdl_tensor4_make(M, ld, 1, 1, HPDL_NHWC);
    g.y = hpdl_tensor4_make(M, N, 1, 1, HPDL_NHWC);
    g.w = hpdl_tensor4_make(N, ld, 1, 1, HPDL_NHWC);
    g.c_per_group = ld;
    g.k_per_group = N;
    return g;
}

/* The convolution as im2col rows (a stream-ordered temporary) times the
   filter wt (rows ldw bytes apart, its row sums wsum), requantised by o. */
template <typename TC>
static inline hpdl_status hpdl__qconv_im2col_run(const hpdl__conv_geom &geo, const int8_t *x, int32_t zx, const int8_t *wt,
                                                 int ldw, const int32_t *wsum, const hpdl_cuda_quant_output *o,
                                                 hpdl__qgemm_out_kind kind, TC *y, cudaStream_t stream) {
    const hpdl_conv2d_params &p = geo.p;
    const int M = geo.x.n * geo.y.h * geo.y.w, K = p.kernel_h * p.kernel_w * geo.x.c, ld = (K + 15) / 16 * 16;
    const hpdl__q_im2col_args a = {geo.x.h, geo.x.w, geo.x.c, geo.y.h, geo.y.w, p.kernel_w, p.stride_h, p.stride_w,
                                   p.pad_h, p.pad_w, p.dilation_h, p.dilation_w, K, ld};
    const dim3 grid((unsigned)((M + 255) / 256 < 4096 ? (M + 255) / 256 : 4096), (unsigned)(ld / 16));
    int8_t *rows = NULL;
    hpdl_status s;
    if (cudaMallocAsync((void **)&rows, (size_t)M * ld, stream) != cudaSuccess) {
        cudaGetLastError();
        return HPDL_ERR_NOMEM;
    }
    hpdl__q_im2col<<<grid, 256, 0, stream>>>(a, M, x, (int8_t)zx, rows);
    s = cudaGetLastError() == cudaSuccess ? HPDL_OK : HPDL_ERR_CUDA;
    if (s == HPDL_OK) /* one tap: its sums are the rows' sums */
        s = ldw == ld ? hpdl__qconv_wg_run(hpdl__qconv_rows_geom(M, ld, geo.y.c), rows, zx, wt, ldw, wsum, wsum, NULL, o, y,
                                           stream)
                      : HPDL_ERR_UNSUPPORTED;
    if (s == HPDL_ERR_UNSUPPORTED)
        s = hpdl__qgemm_launch<TC>(HPDL_QUANT_AUTO, hpdl__qgemm_make_args(M, geo.y.c, K, rows, ld, zx, wt, ldw, 0, o, kind,
                                                                         y, geo.y.c), stream);
    if (cudaFreeAsync(rows, stream) != cudaSuccess && s == HPDL_OK) s = HPDL_ERR_CUDA;
    return s;
}

/* The convolution of a checked geometry: x (zero point zx), the filter wt
   (KRSC, rows ldw bytes apart) with row sums wsum and per-tap sums wtap
   (NULL: no wgmma rung), requantised by o into y (int8, or int32 for
   logits). algo: HPDL_QUANT_WGMMA (HPDL_ERR_UNSUPPORTED where it does not
   apply), HPDL_QUANT_MMA, HPDL_QUANT_IM2COL, or AUTO (wgmma; im2col for
   input channels not a multiple of 16; else mma). The mma rung: 256 x
   64 tiles for at most 64 output channels, else 128 x 128;
   HPDL_ERR_UNSUPPORTED without an sm_80 path. */
template <typename TC>
static inline hpdl_status hpdl__qconv_run(hpdl_quant_algo algo, const hpdl__conv_geom &geo, const int8_t *x, int32_t zx,
                                          const int8_t *wt, int ldw, const int32_t *wsum, const int32_t *wtap,
                                          const int32_t *border,
                                          const hpdl_cuda_quant_output *o, hpdl__qgemm_out_kind kind, TC *y,
                                          cudaStream_t stream) {
    hpdl__conv_mma_args<int8_t> a;
    hpdl__qgemm_args g;
    hpdl_status s;
    if (hpdl_tensor4_count(&geo.y) == 0) return HPDL_OK;
    if (algo == HPDL_QUANT_WGMMA || algo == HPDL_QUANT_AUTO) {
        s = hpdl__qconv_wg_run(geo, x, zx, wt, ldw, wsum, wtap, border, o, y, stream);
        if (s != HPDL_ERR_UNSUPPORTED || algo == HPDL_QUANT_WGMMA) return s;
    }
    if (algo == HPDL_QUANT_IM2COL || (algo == HPDL_QUANT_AUTO && geo.x.c % 16 != 0))
        return hpdl__qconv_im2col_run<TC>(geo, x, zx, wt, ldw, wsum, o, kind, y, stream);
    if (algo != HPDL_QUANT_AUTO && algo != HPDL_QUANT_MMA) return HPDL_ERR_UNSUPPORTED; /* no dp4a convolution */
    if ((s = hpdl__conv_mma_make_args<int8_t>(geo, HPDL__CONV_FORWARD, x, wt, NULL, &a)) != HPDL_OK) return s;
    a.src_vec = a.inner % 16 == 0 && hpdl__gemm_aligned(x, a.src_c, 16, 1);
    g = hpdl__qgemm_make_args(a.M, a.N, a.K, x, a.K, zx, wt, ldw, 0, o, kind, y, geo.y.c);
    return a.N <= 64 ? hpdl__qconv_launch_shape<TC, hpdl__qconv_shape<4, 1> >(g, a, wsum, stream)
                     : hpdl__qconv_launch_shape<TC, hpdl__qconv_shape<2, 2> >(g, a, wsum, stream);
}

/* Row length of a filter of K taps on the device: 16-byte rows, for cp.async. */
static inline int hpdl__qconv_ldw(int K) { return (K + 15) / 16 * 16; }

/* Whether a filter of `taps` taps over C channels has per-tap sums (its
   rows unpadded, as the wgmma rung needs them). */
static inline int hpdl__qconv_has_taps(int taps, int C) { return taps * C == hpdl__qconv_ldw(taps * C); }

/* wt (N x ldw) = w^T for w taps x outputs (K = taps * C by N, as the CPU
   keeps it), wsum[n] = row n's sum and, unless wtap is NULL (it must be
   where not hpdl__qconv_has_taps), wtap[n * taps + t] = the sum of row
   n's tap t; stream-ordered. */
HPDL_LAZY hpdl_status hpdl__qconv_filter(int taps, int C, int N, const int8_t *w, int8_t *wt, int32_t *wsum,
                                         int32_t *wtap, cudaStream_t stream) {
    const int K = taps * C;
    hpdl_status s = hpdl_cuda_quant_transpose_i8(K, N, w, N, wt, hpdl__qconv_ldw(K), stream);
    if (s != HPDL_OK) return s;
    hpdl__q_row_sums<<<(unsigned)(N + 7) / 8, 256, 0, stream>>>(wt, N, K, hpdl__qconv_ldw(K), wsum);
    HPDL_CUDA_TRY_LAUNCH();
    if (!wtap) return HPDL_OK;
    hpdl__q_row_sums<<<(unsigned)(((int64_t)N * taps + 7) / 8), 256, 0, stream>>>(wt, N * taps, C, C, wtap);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* y = hpdl_quant_conv2d_i8(p, xd, x, zx, w, o, yd) on the device, bit for
   bit, by the rung algo asks for: HPDL_QUANT_WGMMA (Hopper, input
   channels a multiple of 16, x 16-byte aligned: HPDL_ERR_UNSUPPORTED
   elsewhere), HPDL_QUANT_MMA (sm_80+), HPDL_QUANT_IM2COL (im2col rows in
   a stream-ordered temporary, then the wgmma 1x1 kernel or the int8 GEMM:
   any GPU), or HPDL_QUANT_AUTO (wgmma where it applies; im2col where the
   input channels are not a multiple of 16; else mma); there is no dp4a
   convolution (HPDL_ERR_UNSUPPORTED).
   x and y NHWC int8, w taps x outputs ((r, s, c) x K, as the CPU takes it;
   transposed into a stream-ordered temporary with its sums), o for yd->c
   channels. */
HPDL_CUDA_API hpdl_status hpdl_cuda_quant_conv2d_algo_i8(hpdl_quant_algo algo, const hpdl_conv2d_params *p,
                                                         const hpdl_tensor4 *xd, const int8_t *x, int32_t zx,
                                                         const int8_t *w, const hpdl_cuda_quant_output *o,
                                                         const hpdl_tensor4 *yd, int8_t *y, cudaStream_t stream) {
    hpdl__conv_geom g;
    int8_t *wt = NULL;
    int32_t *wsum, *wtap;
    int taps, K, N;
    size_t wt_bytes;
    hpdl_status s = hpdl__quant_conv_geom(p, xd, x, zx, w, yd, y, &g);
    if (s != HPDL_OK || !o || o->n != yd->c || !o->multiplier || !o->shift || (int)algo < (int)HPDL_QUANT_AUTO ||
        (int)algo > (int)HPDL_QUANT_IM2COL)
        return HPDL_ERR_INVALID;
    taps = p->kernel_h * p->kernel_w;
    K = taps * xd->c;
    N = yd->c;
    wt_bytes = (size_t)N * hpdl__qconv_ldw(K); /* a multiple of 16: the sums follow, aligned */
    if (cudaMallocAsync((void **)&wt, wt_bytes + (size_t)N * (1 + taps) * sizeof(int32_t), stream) != cudaSuccess) {
        cudaGetLastError();
        return HPDL_ERR_NOMEM;
    }
    wsum = (int32_t *)(wt + wt_bytes);
    wtap = hpdl__qconv_has_taps(taps, xd->c) ? wsum + N : NULL;
    s = hpdl__qconv_filter(taps, xd->c, N, w, wt, wsum, wtap, stream);
    if (s == HPDL_OK)
        s = hpdl__qconv_run<int8_t>(algo, g, x, zx, wt, hpdl__qconv_ldw(K), wsum, wtap, NULL, o, HPDL__QOUT_REQUANT_I8, y,
                                    stream);
    if (cudaFreeAsync(wt, stream) != cudaSuccess && s == HPDL_OK) s = HPDL_ERR_CUDA;
    return s;
}

/* y = hpdl_quant_conv2d_i8(p, xd, x, zx, w, o, yd) on the device, bit for
   bit: hpdl_cuda_quant_conv2d_algo_i8 with HPDL_QUANT_AUTO (the wgmma rung
   where it applies; im2col where the input channels are not a multiple of
   16; else mma, HPDL_ERR_UNSUPPORTED without an sm_80 path). */
HPDL_CUDA_API hpdl_status hpdl_cuda_quant_conv2d_i8(const hpdl_conv2d_params *p, const hpdl_tensor4 *xd, const int8_t *x,
                                                    int32_t zx, const int8_t *w, const hpdl_cuda_quant_output *o,
                                                    const hpdl_tensor4 *yd, int8_t *y, cudaStream_t stream) {
    return hpdl_cuda_quant_conv2d_algo_i8(HPDL_QUANT_AUTO, p, xd, x, zx, w, o, yd, y, stream);
}

/* ------------------------------------------------------------------------ */
/* Quantized MLP inference (integer-only, as hpdl_quant_mlp HPDL_QUANT_INTEGER) */
/* ------------------------------------------------------------------------ */

/* An integer-only MLP on the device (hpdl_cuda_quant_mlp_create): transposed int8 weights, each
   layer's requantization, and buffers for batches of up to max_batch rows. */
typedef struct hpdl_cuda_quant_mlp {
    int n_layers, max_batch;
    int widths[HPDL_MLP_MAX_LAYERS + 1];
    int ld[HPDL_MLP_MAX_LAYERS];                 /* row length of layer l's int8 input (16-byte rows) */
    hpdl_quant_algo algo;
    int8_t *Wt[HPDL_MLP_MAX_LAYERS];             /* widths[l+1] x ld[l]: the int8 weights, transposed */
    hpdl_cuda_quant_output out[HPDL_MLP_MAX_LAYERS];
    hpdl_quant_params x_params[HPDL_MLP_MAX_LAYERS];
    int8_t *act[2];                              /* int8 layer inputs, ping-pong */
    int32_t *logits;                             /* max_batch x classes, after a forward */
    unsigned long long *hits;
    double logit_scale;
} hpdl_cuda_quant_mlp;

/* Frees what hpdl_cuda_quant_mlp_create made and zeroes *g; NULL does nothing. */
HPDL_CUDA_API void hpdl_cuda_quant_mlp_destroy(hpdl_cuda_quant_mlp *g) {
    int l;
    if (!g) return;
    for (l = 0; l < HPDL_MLP_MAX_LAYERS; l++) {
        hpdl_cuda_free(g->Wt[l]);
        hpdl_cuda_quant_output_destroy(&g->out[l]);
    }
    hpdl_cuda_free(g->act[0]);
    hpdl_cuda_free(g->act[1]);
    hpdl_cuda_free(g->logits);
    hpdl_cuda_free(g->hits);
    memset(g, 0, sizeof *g);
}

/* Layer l's weights: uploaded K x N as built, transposed on the device to N x ld. */
HPDL_LAZY hpdl_status hpdl__cuda_quant_mlp_weights(hpdl_cuda_quant_mlp *g, const hpdl_quant_mlp *q, int l) {
    int K = q->widths[l], N = q->widths[l + 1];
    int8_t *w = NULL;
    hpdl_quant_output o;
    hpdl_status s = hpdl_quant_mlp_layer_output(q, l, &o);
    if (s == HPDL_OK) s = hpdl_cuda_alloc((void **)&w, (size_t)K * N);
    if (s == HPDL_OK) s = hpdl_cuda_alloc((void **)&g->Wt[l], (size_t)N * g->ld[l]);
    if (s == HPDL_OK && cudaMemcpy(w, q->W[l], (size_t)K * N, cudaMemcpyHostToDevice) != cudaSuccess) s = HPDL_ERR_CUDA;
    if (s == HPDL_OK) s = hpdl_cuda_quant_transpose_i8(K, N, w, N, g->Wt[l], g->ld[l], 0);
    if (s == HPDL_OK && cudaDeviceSynchronize() != cudaSuccess) s = HPDL_ERR_CUDA;
    hpdl_cuda_free(w);
    return s == HPDL_OK ? hpdl_cuda_quant_output_create(&g->out[l], &o, N) : s;
}

/* Uploads an integer-only model (q built from a ReLU MLP) for batches of up
   to max_batch rows. */
HPDL_CUDA_API hpdl_status hpdl_cuda_quant_mlp_create(hpdl_cuda_quant_mlp *g, const hpdl_quant_mlp *q, int max_batch,
                                                hpdl_quant_algo algo) {
    hpdl_cuda_quant_mlp made;
    size_t big = 0;
    int l, L;
    hpdl_status s = HPDL_OK;
    if (!g || !q || q->n_layers < 1 || !q->W[0] || max_batch < 1 || (int)algo < (int)HPDL_QUANT_AUTO ||
        (int)algo > (int)HPDL_QUANT_WGMMA)
        return HPDL_ERR_INVALID;
    if (!q->integer) return HPDL_ERR_UNSUPPORTED;
    L = q->n_layers;
    memset(&made, 0, sizeof made);
    made.n_layers = L;
    made.max_batch = max_batch;
    made.algo = algo;
    made.logit_scale = q->logit_scale;
    memcpy(made.widths, q->widths, sizeof made.widths);
    memcpy(made.x_params, q->x_params, sizeof made.x_params);
    for (l = 0; l < L; l++) {
        made.ld[l] = (q->widths[l] + 15) / 16 * 16;
        big = (size_t)max_batch * made.ld[l] > big ? (size_t)max_batch * made.ld[l] : big;
    }
    for (l = 0; s == HPDL_OK && l < L; l++) s = hpdl__cuda_quant_mlp_weights(&made, q, l);
    if (s == HPDL_OK) s = hpdl_cuda_alloc((void **)&made.act[0], big);
    if (s == HPDL_OK) s = hpdl_cuda_alloc((void **)&made.act[1], big);
    if (s == HPDL_OK) s = hpdl_cuda_alloc((void **)&made.logits, (size_t)max_batch * q->widths[L] * sizeof(int32_t));
    if (s == HPDL_OK) s = hpdl_cuda_alloc((void **)&made.hits, sizeof *made.hits);
    if (s != HPDL_OK) { hpdl_cuda_quant_mlp_destroy(&made); return s; }
    *g = made;
    return HPDL_OK;
}

/* int32 logits of a batch (X: batch x widths[0] floats on the device) into
   g->logits (batch x classes), the same as the CPU's w->logits. */
HPDL_CUDA_API hpdl_status hpdl_cuda_quant_mlp_forward(hpdl_cuda_quant_mlp *g, int batch, const float *X, cudaStream_t stream) {
    int l, L;
    hpdl_status s;
    if (!g || !g->logits || !X || batch < 1 || batch > g->max_batch) return HPDL_ERR_INVALID;
    L = g->n_layers;
    s = hpdl_cuda_quant_quantize_f32(batch, g->widths[0], X, g->widths[0], g->x_params[0], g->act[0], g->ld[0], stream);
    for (l = 0; s == HPDL_OK && l < L; l++) {
        int n_in = g->widths[l], n_out = g->widths[l + 1];
        const int8_t *in = g->act[l % 2];
        if (l < L - 1)
            s = hpdl_cuda_quant_gemm_requant_nt_i8(g->algo, batch, n_out, n_in, in, g->ld[l], g->x_params[l].zero_point,
                                                   g->Wt[l], g->ld[l], 0, &g->out[l], g->act[(l + 1) % 2], g->ld[l + 1],
                                                   stream);
        else
            s = hpdl_cuda_quant_gemm_requant_nt_i32(g->algo, batch, n_out, n_in, in, g->ld[l], g->x_params[l].zero_point,
                                                    g->Wt[l], g->ld[l], 0, &g->out[l], g->logits, n_out, stream);
    }
    return s;
}

/* Test accuracy over n rows of X (device floats) and labels (device int32,
   each in [0, classes): not checked here); waits for the stream. */
HPDL_CUDA_API hpdl_status hpdl_cuda_quant_mlp_accuracy(hpdl_cuda_quant_mlp *g, int64_t n, const float *X, const int32_t *labels,
                                                  double *accuracy, cudaStream_t stream) {
    unsigned long long hits = 0;
    int64_t i0;
    hpdl_status s = HPDL_OK;
    int classes;
    if (!g || !g->hits || !X || !labels || !accuracy || n < 1) return HPDL_ERR_INVALID;
    classes = g->widths[g->n_layers];
    HPDL_CUDA_TRY(cudaMemsetAsync(g->hits, 0, sizeof *g->hits, stream));
    for (i0 = 0; s == HPDL_OK && i0 < n; i0 += g->max_batch) {
        int batch = (int)(n - i0 < g->max_batch ? n - i0 : g->max_batch);
        s = hpdl_cuda_quant_mlp_forward(g, batch, X + (size_t)i0 * g->widths[0], stream);
        if (s == HPDL_OK) {
            hpdl__qargmax_hits<<<(unsigned)(batch + 255) / 256, 256, 0, stream>>>(batch, classes, g->logits, labels + i0,
                                                                                g->hits);
            HPDL_CUDA_TRY_LAUNCH();
        }
    }
    if (s != HPDL_OK) return s;
    HPDL_CUDA_TRY(cudaMemcpyAsync(&hits, g->hits, sizeof hits, cudaMemcpyDeviceToHost, stream));
    HPDL_CUDA_TRY(cudaStreamSynchronize(stream));
    *accuracy = (double)hits / (double)n;
    return HPDL_OK;
}

/* ------------------------------------------------------------------------ */
/* Quantized CNN inference (integer-only, as hpdl_quant_cnn)                 */
/* ------------------------------------------------------------------------ */
/* hpdl_quant_cnn_logits on the GPU, bit for bit: the image quantised as
   the CPU quantises it (hpdl_cuda_quant_quantize_f32), convolutions by the
   int8 implicit GEMM above, linear layers by the int8 GEMM
   (hpdl_cuda_quant_gemm_requant_nt_*), and the kernels below for max
   pooling, residual sums, global average pooling and an unfolded ReLU,
   each the CPU loop's arithmetic per element (hpdl__quant_maxpool,
   hpdl__quant_add, hpdl__quant_global_avgpool). Every layer keeps its own
   output buffer (max_batch images), so a forward is a fixed sequence of
   launches on one stream. */

/* hpdl.h's hpdl__quant_fixed_apply, same arithmetic (host and device). */
HPDL_HD static inline int32_t hpdl__q_fixed(int32_t x, hpdl_quant_fixed f) {
    return hpdl__q_rdbpot(hpdl__q_srdhm(x * (1 << f.left), f.m0), f.shift);
}

/* The pooling window's geometry of layer i for the kernels. */
struct hpdl__qpool_args {
    int in_h, in_w, c, out_h, out_w, kernel, stride, pad;
};

/* The largest int8 code in each window (padding skipped), NHWC. */
__global__ void hpdl__qmaxpool(hpdl__qpool_args p, int64_t count, const int8_t *x, int8_t *y) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count; i += (int64_t)gridDim.x * blockDim.x) {
        int c = (int)(i % p.c), ow = (int)(i / p.c % p.out_w), oh = (int)(i / p.c / p.out_w % p.out_h);
        int64_t n = i / p.c / p.out_w / p.out_h;
        int best = -129;
        for (int r = 0; r < p.kernel; r++)
            for (int s = 0; s < p.kernel; s++) {
                int ih = oh * p.stride - p.pad + r, iw = ow * p.stride - p.pad + s;
                if (ih < 0 || ih >= p.in_h || iw < 0 || iw >= p.in_w) continue;
                int v = x[((n * p.in_h + ih) * p.in_w + iw) * p.c + c];
                best = v > best ? v : best;
            }
        y[i] = (int8_t)best;
    }
}

/* What a residual sum or a pooling needs of the quantisation. */
struct hpdl__qsum_args {
    int32_t za, zb, zy, lo;  /* zero points of the two inputs and the output; the clamp's floor */
    hpdl_quant_fixed fa, fb; /* rescales to the output's scale */
};

/* The residual sum y = clamp(zy + rdbpot(fa(2^10 (a - za)) + fb(2^10 (b -
   zb)), 10), lo, 127) of count codes. Each rescaled term depends on one
   int8 code only, so the block first tabulates both for all 256 codes in
   shared memory (blockDim.x must be 256); then an output is two lookups,
   an add and the rounding shift (the fixed-point multiplies per element
   made it compute-bound). 16 codes a thread where a, b and y are 16-byte
   aligned, the rest one by one. */
static __device__ __forceinline__ int8_t hpdl__qadd_one(const hpdl__qsum_args &q, const int32_t *ta, const int32_t *tb,
                                                        int8_t a, int8_t b) {
    const int32_t v = hpdl__q_rdbpot(ta[a + 128] + tb[b + 128], 10) + q.zy;
    return (int8_t)(v < q.lo ? q.lo : v > HPDL_QUANT_QMAX ? HPDL_QUANT_QMAX : v);
}

__global__ void __launch_bounds__(256) hpdl__qadd(hpdl__qsum_args q, int64_t count, const int8_t *a, const int8_t *b,
                                                  int8_t *y) {
    __shared__ int32_t ta[256], tb[256];
    const int code = (int)threadIdx.x - 128;
    const int64_t first = blockIdx.x * (int64_t)blockDim.x + threadIdx.x, step = (int64_t)gridDim.x * blockDim.x;
    const int64_t vectors = ((uintptr_t)a | (uintptr_t)b | (uintptr_t)y) % 16 == 0 ? count / 16 : 0;
    ta[threadIdx.x] = hpdl__q_fixed((code - q.za) * 1024, q.fa);
    tb[threadIdx.x] = hpdl__q_fixed((code - q.zb) * 1024, q.fb);
    __syncthreads();
    for (int64_t v = first; v < vectors; v += step) {
        int4 va = ((const int4 *)a)[v], vb = ((const int4 *)b)[v], vy;
        const int8_t *pa = (const int8_t *)&va, *pb = (const int8_t *)&vb;
        int8_t *py = (int8_t *)&vy;
#pragma unroll
        for (int j = 0; j < 16; j++) py[j] = hpdl__qadd_one(q, ta, tb, pa[j], pb[j]);
        ((int4 *)y)[v] = vy;
    }
    for (int64_t i = vectors * 16 + first; i < count; i += step) y[i] = hpdl__qadd_one(q, ta, tb, a[i], b[i]);
}

/* One (image, channel) per thread: fa(sum over the pixels of x - za) + zy. */
__global__ void hpdl__qglobal_avgpool(hpdl__qsum_args q, int images, int pixels, int c, const int8_t *x, int8_t *y) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= (int64_t)images * c) return;
    const int8_t *px = x + i / c * pixels * c + i % c;
    int32_t sum = 0, v;
    for (int p = 0; p < pixels; p++) sum += px[(int64_t)p * c] - q.za;
    v = hpdl__q_fixed(sum, q.fa) + q.zy;
    y[i] = (int8_t)(v < HPDL_QUANT_QMIN ? HPDL_QUANT_QMIN : v > HPDL_QUANT_QMAX ? HPDL_QUANT_QMAX : v);
}

/* A ReLU on its own: codes below the zero point raised to it. */
__global__ void hpdl__qrelu(int64_t count, int32_t zero_point, const int8_t *x, int8_t *y) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = x[i] < zero_point ? (int8_t)zero_point : x[i];
}

/* An integer-only CNN on the device (hpdl_cuda_quant_cnn_create): its
   layers, quantisation, transposed weights and one code buffer per layer. */
typedef struct hpdl_cuda_quant_cnn {
    hpdl_cnn net;
    int max_batch;
    hpdl_quant_params act[HPDL_CNN_MAX_LAYERS + 1];
    int relu_after[HPDL_CNN_MAX_LAYERS];
    hpdl_quant_fixed rescale[HPDL_CNN_MAX_LAYERS][2];
    int base[HPDL_CNN_MAX_LAYERS + 1];               /* hpdl__quant_cnn_slots */
    int8_t *wt[HPDL_CNN_MAX_LAYERS];                 /* conv/linear: outputs x taps (16-byte rows), transposed */
    int32_t *wsum[HPDL_CNN_MAX_LAYERS];              /* conv: each output channel's weight sum */
    int32_t *wtap[HPDL_CNN_MAX_LAYERS];              /* conv: ... per tap, where hpdl__qconv_has_taps */
    int32_t *border[HPDL_CNN_MAX_LAYERS];            /* conv: its border table where it has one (hpdl__qconv_border) */
    hpdl_quant_algo conv_algo;                       /* the convolutions' rung: AUTO when made (MMA to compare) */
    hpdl_cuda_quant_output out[HPDL_CNN_MAX_LAYERS];
    int8_t *codes[HPDL_CNN_MAX_LAYERS + 1];          /* [0]: the image; [i + 1]: layer i's output (own slots only) */
    int32_t *logits;                                 /* max_batch x classes, after a forward */
    unsigned long long *hits;
    double logit_scale;                              /* real value of one int32 logit */
} hpdl_cuda_quant_cnn;

/* Frees what hpdl_cuda_quant_cnn_create made; g is zeroed. */
HPDL_CUDA_API void hpdl_cuda_quant_cnn_destroy(hpdl_cuda_quant_cnn *g) {
    int i;
    if (!g) return;
    for (i = 0; i < HPDL_CNN_MAX_LAYERS; i++) {
        hpdl_cuda_free(g->wt[i]);
        hpdl_cuda_free(g->wsum[i]);
        hpdl_cuda_free(g->wtap[i]);
        hpdl_cuda_free(g->border[i]);
        hpdl_cuda_quant_output_destroy(&g->out[i]);
    }
    for (i = 0; i <= HPDL_CNN_MAX_LAYERS; i++) hpdl_cuda_free(g->codes[i]);
    hpdl_cuda_free(g->logits);
    hpdl_cuda_free(g->hits);
    memset(g, 0, sizeof *g);
}

/* Layer i's weights (taps x outputs on the host) transposed on the device,
   their sums (per tap too for a convolution the wgmma rung can run) and
   the requantisation (int32 logits for the last). */
HPDL_LAZY hpdl_status hpdl__cuda_quant_cnn_weights(hpdl_cuda_quant_cnn *g, const hpdl_quant_cnn *q, int i) {
    const hpdl_cnn *net = &q->net;
    int N = net->out[i].c, K = (int)(hpdl__cnn_weight_count(net, i) / N);
    int taps = net->layer[i].op == HPDL_CNN_CONV ? net->layer[i].kernel * net->layer[i].kernel : 1;
    int8_t *w = NULL;
    hpdl_quant_output o;
    hpdl_status s;
    o.bias = q->bias32[i];
    o.multiplier = q->m0[i];
    o.shift = q->shift[i];
    o.per_channel = 1;
    o.relu = q->relu_after[i];
    o.zero_point = i == net->n_layers - 1 ? 0 : q->act[i + 1].zero_point;
    s = hpdl_cuda_alloc((void **)&w, (size_t)K * N);
    if (s == HPDL_OK) s = hpdl_cuda_alloc((void **)&g->wt[i], (size_t)N * hpdl__qconv_ldw(K));
    if (s == HPDL_OK) s = hpdl_cuda_alloc((void **)&g->wsum[i], (size_t)N * sizeof(int32_t));
    if (s == HPDL_OK && net->layer[i].op == HPDL_CNN_CONV && hpdl__qconv_has_taps(taps, K / taps))
        s = hpdl_cuda_alloc((void **)&g->wtap[i], (size_t)N * taps * sizeof(int32_t));
    if (s == HPDL_OK && cudaMemcpy(w, q->w[i], (size_t)K * N, cudaMemcpyHostToDevice) != cudaSuccess) s = HPDL_ERR_CUDA;
    if (s == HPDL_OK) s = hpdl__qconv_filter(taps, K / taps, N, w, g->wt[i], g->wsum[i], g->wtap[i], 0);
    if (s == HPDL_OK && cudaDeviceSynchronize() != cudaSuccess) s = HPDL_ERR_CUDA;
    hpdl_cuda_free(w);
    return s == HPDL_OK ? hpdl_cuda_quant_output_create(&g->out[i], &o, N) : s;
}

/* Conv layer i's border table (the padding correction of the wgmma rung),
   made once: it depends on the layer's shapes and input zero point only.
   (Made per call, its kernel was 4 % of ResNet-18's int8 forward.) */
HPDL_LAZY hpdl_status hpdl__cuda_quant_cnn_border(hpdl_cuda_quant_cnn *g, int i) {
    const hpdl_cnn *net = &g->net;
    const hpdl_cnn_layer *l = &net->layer[i];
    const hpdl_conv2d_params p = hpdl__cnn_conv_params(l);
    const hpdl_shape in = hpdl__cnn_in_shape(net, i), out = net->out[i];
    hpdl__conv_geom geo;
    hpdl__qconv_border_args a;
    hpdl_status s;
    geo.p = p;
    geo.x = hpdl_tensor4_make(1, in.c, in.h, in.w, HPDL_NHWC);
    geo.y = hpdl_tensor4_make(1, out.c, out.h, out.w, HPDL_NHWC);
    a = hpdl__qconv_border_of(geo, g->act[l->input + 1].zero_point);
    if (!g->wtap[i] || hpdl__qconv_border_count(a) == 0) return HPDL_OK;
    s = hpdl_cuda_alloc((void **)&g->border[i], (size_t)hpdl__qconv_border_count(a) * sizeof(int32_t));
    return s == HPDL_OK ? hpdl__qconv_border_fill(a, g->wtap[i], g->border[i], 0) : s;
}

/* Uploads an integer-only CNN (q from hpdl_quant_cnn_build) for batches of
   up to max_batch images. */
HPDL_CUDA_API hpdl_status hpdl_cuda_quant_cnn_create(hpdl_cuda_quant_cnn *g, const hpdl_quant_cnn *q, int max_batch) {
    hpdl_cuda_quant_cnn made;
    const hpdl_cnn *net;
    int i;
    hpdl_status s = HPDL_OK;
    if (!g || !q || q->net.n_layers < 1 || !q->w[q->net.n_layers - 1] || max_batch < 1) return HPDL_ERR_INVALID;
    net = &q->net;
    memset(&made, 0, sizeof made);
    made.net = *net;
    made.max_batch = max_batch;
    made.conv_algo = HPDL_QUANT_AUTO;
    made.logit_scale = q->logit_scale;
    memcpy(made.act, q->act, sizeof made.act);
    memcpy(made.relu_after, q->relu_after, sizeof made.relu_after);
    memcpy(made.rescale, q->rescale, sizeof made.rescale);
    hpdl__quant_cnn_slots(q, made.base);
    s = hpdl_cuda_alloc((void **)&made.codes[0], (size_t)max_batch * hpdl__shape_count(net->input));
    for (i = 0; s == HPDL_OK && i < net->n_layers; i++) {
        if (net->weight_at[i] >= 0) s = hpdl__cuda_quant_cnn_weights(&made, q, i);
        if (s == HPDL_OK && net->layer[i].op == HPDL_CNN_CONV) s = hpdl__cuda_quant_cnn_border(&made, i);
        if (s == HPDL_OK && made.base[i + 1] == i + 1 && i < net->n_layers - 1)
            s = hpdl_cuda_alloc((void **)&made.codes[i + 1], (size_t)max_batch * hpdl__shape_count(net->out[i]));
    }
    if (s == HPDL_OK) s = hpdl_cuda_alloc((void **)&made.logits, (size_t)max_batch * net->classes * sizeof(int32_t));
    if (s == HPDL_OK) s = hpdl_cuda_alloc((void **)&made.hits, sizeof *made.hits);
    if (s != HPDL_OK) { hpdl_cuda_quant_cnn_destroy(&made); return s; }
    *g = made;
    return HPDL_OK;
}

/* Blocks for a grid-stride loop over count elements. */
static inline unsigned hpdl__qblocks(int64_t count) { return (unsigned)(count < 65536 * 256 ? (count + 255) / 256 : 65536); }

/* Conv layer i of a batch: int8 codes, or int32 logits when it is the last. */
HPDL_LAZY hpdl_status hpdl__cuda_quant_cnn_conv(const hpdl_cuda_quant_cnn *g, int i, int batch, const int8_t *x, void *y,
                                                cudaStream_t stream) {
    const hpdl_cnn *net = &g->net;
    const hpdl_cnn_layer *l = &net->layer[i];
    hpdl_conv2d_params p = hpdl__cnn_conv_params(l);
    hpdl_shape in = hpdl__cnn_in_shape(net, i), out = net->out[i];
    hpdl_tensor4 xd = hpdl_tensor4_make(batch, in.c, in.h, in.w, HPDL_NHWC);
    hpdl_tensor4 yd = hpdl_tensor4_make(batch, out.c, out.h, out.w, HPDL_NHWC);
    hpdl__conv_geom geo;
    int32_t zx = g->act[l->input + 1].zero_point;
    int K = (int)(hpdl__cnn_weight_count(net, i) / out.c);
    hpdl_status s = hpdl__quant_conv_geom(&p, &xd, x, zx, g->wt[i], &yd, y, &geo);
    if (s != HPDL_OK) return s;
    if (i == net->n_layers - 1)
        return hpdl__qconv_run<int32_t>(g->conv_algo, geo, x, zx, g->wt[i], hpdl__qconv_ldw(K), g->wsum[i], g->wtap[i],
                                        g->border[i], &g->out[i], HPDL__QOUT_REQUANT_I32, (int32_t *)y, stream);
    return hpdl__qconv_run<int8_t>(g->conv_algo, geo, x, zx, g->wt[i], hpdl__qconv_ldw(K), g->wsum[i], g->wtap[i],
                                   g->border[i], &g->out[i], HPDL__QOUT_REQUANT_I8, (int8_t *)y, stream);
}

/* Linear layer i: the int8 GEMM against the transposed weights. */
HPDL_LAZY hpdl_status hpdl__cuda_quant_cnn_linear(const hpdl_cuda_quant_cnn *g, int i, int batch, const int8_t *x, void *y,
                                                  cudaStream_t stream) {
    const hpdl_cnn *net = &g->net;
    int N = net->out[i].c, K = (int)(hpdl__cnn_weight_count(net, i) / N);
    int32_t zx = g->act[net->layer[i].input + 1].zero_point;
    if (i == net->n_layers - 1)
        return hpdl_cuda_quant_gemm_requant_nt_i32(HPDL_QUANT_AUTO, batch, N, K, x, K, zx, g->wt[i], hpdl__qconv_ldw(K), 0,
                                                   &g->out[i], (int32_t *)y, N, stream);
    return hpdl_cuda_quant_gemm_requant_nt_i8(HPDL_QUANT_AUTO, batch, N, K, x, K, zx, g->wt[i], hpdl__qconv_ldw(K), 0,
                                              &g->out[i], (int8_t *)y, N, stream);
}

/* The residual sum's or global pooling's quantisation (hpdl__quant_add's,
   hpdl__quant_global_avgpool's). */
static inline hpdl__qsum_args hpdl__cuda_quant_cnn_sum_args(const hpdl_cuda_quant_cnn *g, int i) {
    const hpdl_cnn_layer *l = &g->net.layer[i];
    hpdl__qsum_args q;
    q.za = g->act[l->input + 1].zero_point;
    q.zb = l->op == HPDL_CNN_ADD ? g->act[l->other + 1].zero_point : 0;
    q.zy = g->act[i + 1].zero_point;
    q.lo = g->relu_after[i] ? q.zy : HPDL_QUANT_QMIN;
    q.fa = g->rescale[i][0];
    q.fb = g->rescale[i][1];
    return q;
}

/* Layer i of a batch from its input codes x (b: a sum's other) into y. */
HPDL_LAZY hpdl_status hpdl__cuda_quant_cnn_layer(const hpdl_cuda_quant_cnn *g, int i, int batch, const int8_t *x,
                                                 const int8_t *b, void *y, cudaStream_t stream) {
    const hpdl_cnn *net = &g->net;
    const hpdl_cnn_layer *l = &net->layer[i];
    hpdl_shape in = hpdl__cnn_in_shape(net, i), out = net->out[i];
    int64_t count = (int64_t)batch * hpdl__shape_count(out);
    switch (l->op) {
    case HPDL_CNN_CONV: return hpdl__cuda_quant_cnn_conv(g, i, batch, x, y, stream);
    case HPDL_CNN_LINEAR: return hpdl__cuda_quant_cnn_linear(g, i, batch, x, y, stream);
    case HPDL_CNN_MAXPOOL: {
        hpdl__qpool_args p = {in.h, in.w, in.c, out.h, out.w, l->kernel, l->stride, l->pad};
        hpdl__qmaxpool<<<hpdl__qblocks(count), 256, 0, stream>>>(p, count, x, (int8_t *)y);
        break;
    }
    case HPDL_CNN_ADD:
        hpdl__qadd<<<hpdl__qblocks((count + 15) / 16), 256, 0, stream>>>(hpdl__cuda_quant_cnn_sum_args(g, i), count, x, b,
                                                                        (int8_t *)y);
        break;
    case HPDL_CNN_GLOBAL_AVGPOOL:
        hpdl__qglobal_avgpool<<<(unsigned)((count + 255) / 256), 256, 0, stream>>>(hpdl__cuda_quant_cnn_sum_args(g, i), batch,
                                                                                 in.h * in.w, in.c, x, (int8_t *)y);
        break;
    case HPDL_CNN_RELU:
        hpdl__qrelu<<<hpdl__qblocks(count), 256, 0, stream>>>(count, g->act[i + 1].zero_point, x, (int8_t *)y);
        break;
    default: return HPDL_ERR_UNSUPPORTED;
    }
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* int32 logits of a batch (X: batch images of floats on the device, the
   network's NHWC layout) into g->logits (batch x classes), the CPU's
   hpdl_quant_cnn_logits bit for bit; queued on stream, not waited for. */
HPDL_CUDA_API hpdl_status hpdl_cuda_quant_cnn_forward(hpdl_cuda_quant_cnn *g, int batch, const float *X, cudaStream_t stream) {
    const hpdl_cnn *net;
    int i, features;
    hpdl_status s;
    if (!g || !g->logits || !X || batch < 1 || batch > g->max_batch) return HPDL_ERR_INVALID;
    net = &g->net;
    features = (int)hpdl__shape_count(net->input);
    s = hpdl_cuda_quant_quantize_f32(batch, features, X, features, g->act[0], g->codes[0], features, stream);
    for (i = 0; s == HPDL_OK && i < net->n_layers; i++) {
        const hpdl_cnn_layer *l = &net->layer[i];
        const int8_t *b = l->op == HPDL_CNN_ADD ? g->codes[g->base[l->other + 1]] : NULL;
        if (g->base[i + 1] != i + 1) continue; /* a ReLU folded into its producer */
        s = hpdl__cuda_quant_cnn_layer(g, i, batch, g->codes[g->base[l->input + 1]], b,
                                       i == net->n_layers - 1 ? (void *)g->logits : (void *)g->codes[i + 1], stream);
    }
    return s;
}

/* The logits of `batch` images X (device floats) copied to the host
   (batch x classes int32); waits for the stream. */
HPDL_CUDA_API hpdl_status hpdl_cuda_quant_cnn_logits(hpdl_cuda_quant_cnn *g, int batch, const float *X, int32_t *logits,
                                                     cudaStream_t stream) {
    hpdl_status s;
    if (!logits) return HPDL_ERR_INVALID;
    if ((s = hpdl_cuda_quant_cnn_forward(g, batch, X, stream)) != HPDL_OK) return s;
    HPDL_CUDA_TRY(cudaMemcpyAsync(logits, g->logits, (size_t)batch * g->net.classes * sizeof(int32_t),
                                  cudaMemcpyDeviceToHost, stream));
    HPDL_CUDA_TRY(cudaStreamSynchronize(stream));
    return HPDL_OK;
}

/* Fraction of n images X (device floats) whose largest logit (the first on
   ties) is at their label (device int32, each in [0, classes): not checked
   here); waits for the stream. */
HPDL_CUDA_API hpdl_status hpdl_cuda_quant_cnn_accuracy(hpdl_cuda_quant_cnn *g, int64_t n, const float *X,
                                                       const int32_t *labels, double *accuracy, cudaStream_t stream) {
    unsigned long long hits = 0;
    int64_t i0, features;
    hpdl_status s = HPDL_OK;
    if (!g || !g->hits || !X || !labels || !accuracy || n < 1) return HPDL_ERR_INVALID;
    features = hpdl__shape_count(g->net.input);
    HPDL_CUDA_TRY(cudaMemsetAsync(g->hits, 0, sizeof *g->hits, stream));
    for (i0 = 0; s == HPDL_OK && i0 < n; i0 += g->max_batch) {
        int batch = (int)(n - i0 < g->max_batch ? n - i0 : g->max_batch);
        s = hpdl_cuda_quant_cnn_forward(g, batch, X + i0 * features, stream);
        if (s == HPDL_OK) {
            hpdl__qargmax_hits<<<(unsigned)(batch + 255) / 256, 256, 0, stream>>>(batch, g->net.classes, g->logits,
                                                                                labels + i0, g->hits);
            HPDL_CUDA_TRY_LAUNCH();
        }
    }
    if (s != HPDL_OK) return s;
    HPDL_CUDA_TRY(cudaMemcpyAsync(&hits, g->hits, sizeof hits, cudaMemcpyDeviceToHost, stream));
    HPDL_CUDA_TRY(cudaStreamSynchronize(stream));
    *accuracy = (double)hits / (double)n;
    return HPDL_OK;
}

/* ======================================================================== */
/* FP8: casts with amax, the FP8 GEMM on Hopper (e4m3, e5m2)                */
/* ======================================================================== */
/* CPU twins: hpdl_fp8_cast_<fmt>_<t> and hpdl_fp8_gemm_<t> in hpdl.h, whose
   "Per-tensor scaling" comment defines the formats, the casts and the GEMM:
       C = out_scale * a_scale_inv * b_scale_inv * A B^T,
   A (M x K) and B (N x K) row-major, both K-major, f32 sums, C f32, f16 or
   bf16, and the output's amax before out_scale. Test: tests/gpu_fp8.cu;
   bench: bench/gemm.cu --fp8; notes/fp8.md.

   Scales and amax are device pointers (NULL: a scale of 1, no amax), so
   that the amax of one step can become the scale of the next on the GPU
   (delayed scaling) without a copy to the host. amax is written, not
   accumulated: each call zeroes it first, then every warp adds its
   maximum with one atomicMax on the float's bits (non-negative floats
   order as unsigned integers; a NaN above every number).

   CASTS. A grid-stride loop over pairs of elements; the pair goes through
   cvt.rn.satfinite.{e4m3,e5m2}x2.f32 (sm_89+; elsewhere hpdl.h's
   conversion, which gives the same bits for every number).

   GEMM. The GEMM part's wgmma_persistent kernel (hpdl__gemm_wgmma_ws: TMA
   copies, a producer warpgroup and two consumers, 128 x 256 tiles, a
   stream-K tail) on operands of one byte, as the int8 GEMM runs it: a
   stage of 128 bytes of K is 128 elements, four
   wgmma.m64n256k32.f32.<fa>.<fb> (the element type hpdl__fp8_pair names
   both formats). The epilogue reads the scales, takes the tile's amax from
   the accumulators (amax = s max|acc| = max|s acc| for s > 0) and stores
   alpha * acc as the f16/bf16 GEMM does: by TMA, holding three of a
   tile's four chunks into the next tile's first k-steps, where C's rows
   are 16-byte aligned; else (and for f32) through hpdl__wg_store.
   HPDL_ERR_UNSUPPORTED without sm_90a code and a Hopper GPU, or where A,
   B or their rows (lda, ldb) are not 16-byte aligned (TMA). */

/* The GEMM's scales and output amax, as device pointers (see above). */
typedef struct hpdl_cuda_fp8_scales {
    const float *a_scale_inv, *b_scale_inv, *out_scale; /* device pointers; NULL: 1 */
    float *amax;                                        /* device; the output's amax before out_scale, or NULL */
} hpdl_cuda_fp8_scales;

/* The warp's largest `bits` (of non-negative floats) into *amax: one
   atomicMax per warp. Every lane calls. */
static __device__ __forceinline__ void hpdl__fp8_amax_warp(float *amax, unsigned bits) {
    int o;
    for (o = 16; o > 0; o /= 2) bits = max(bits, __shfl_xor_sync(0xffffffffu, bits, o));
    if (threadIdx.x % 32 == 0 && bits != 0) atomicMax((unsigned *)amax, bits);
}

/* ---- casts ------------------------------------------------------------------- */

/* Two floats as two FP8 codes of format FMT, lo in the low byte. */
template <int FMT> static __device__ __forceinline__ unsigned hpdl__fp8x2(float lo, float hi) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    unsigned short d;
    if (FMT == HPDL_FP8_E4M3)
        asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(d) : "f"(hi), "f"(lo));
    else
        asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(d) : "f"(hi), "f"(lo));
    return d;
#else
    if (FMT == HPDL_FP8_E4M3) return hpdl_e4m3_from_f32(lo).bits | (unsigned)hpdl_e4m3_from_f32(hi).bits << 8;
    return hpdl_e5m2_from_f32(lo).bits | (unsigned)hpdl_e5m2_from_f32(hi).bits << 8;
#endif
}

/* q = fp8(x * scale) and the amax of x, two elements per step. */
template <int FMT, typename T>
__global__ void hpdl__fp8_cast(const T *x, int64_t n, const float *scale, uint8_t *q, float *amax) {
    const float sc = scale ? *scale : 1.0f;
    unsigned top = 0;
    int64_t i;
    for (i = 2 * ((int64_t)blockIdx.x * blockDim.x + threadIdx.x); i < n; i += 2 * (int64_t)gridDim.x * blockDim.x) {
        const float a = hpdl__gemm_acc(x[i]), b = i + 1 < n ? hpdl__gemm_acc(x[i + 1]) : 0.0f;
        const unsigned pair = hpdl__fp8x2<FMT>(a * sc, b * sc);
        top = max(top, max(hpdl__abs_bits(a), hpdl__abs_bits(b)));
        q[i] = (uint8_t)pair;
        if (i + 1 < n) q[i + 1] = (uint8_t)(pair >> 8);
    }
    if (amax) hpdl__fp8_amax_warp(amax, top);
}

template <int FMT, typename T>
static inline hpdl_status hpdl__cuda_fp8_cast(const T *x, int64_t n, const float *scale, uint8_t *q, float *amax,
                                              cudaStream_t stream) {
    if (n < 0 || ((!x || !q) && n > 0)) return HPDL_ERR_INVALID;
    if (amax) HPDL_CUDA_TRY(cudaMemsetAsync(amax, 0, sizeof *amax, stream));
    if (n == 0) return HPDL_OK;
    hpdl__fp8_cast<FMT><<<hpdl__grid_for((n + 1) / 2, 256), 256, 0, stream>>>(x, n, scale, q, amax);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* hpdl_cuda_fp8_cast_<FMT>_<SUFFIX>: hpdl_fp8_cast_<FMT>_<SUFFIX> on device
   arrays, the scale a device pointer (NULL: 1), amax a device pointer (or
   NULL). */
#define HPDL_DEFINE_CUDA_FP8_CAST(FMT, FMT_ID, SUFFIX, T)                                                           \
    HPDL_CUDA_API hpdl_status hpdl_cuda_fp8_cast_##FMT##_##SUFFIX(const T *x, int64_t n, const float *scale,         \
                                                                  hpdl_##FMT *q, float *amax, cudaStream_t stream) { \
        return hpdl__cuda_fp8_cast<FMT_ID>((const typename hpdl__dev<T>::type *)x, n, scale, (uint8_t *)q, amax,     \
                                           stream);                                                                 \
    }

/* hpdl_cuda_fp8_cast_e4m3_f32 hpdl_cuda_fp8_cast_e4m3_f16 hpdl_cuda_fp8_cast_e4m3_bf16 */
HPDL_DEFINE_CUDA_FP8_CAST(e4m3, HPDL_FP8_E4M3, f32, float)
HPDL_DEFINE_CUDA_FP8_CAST(e4m3, HPDL_FP8_E4M3, f16, hpdl_f16)
HPDL_DEFINE_CUDA_FP8_CAST(e4m3, HPDL_FP8_E4M3, bf16, hpdl_bf16)
/* hpdl_cuda_fp8_cast_e5m2_f32 hpdl_cuda_fp8_cast_e5m2_f16 hpdl_cuda_fp8_cast_e5m2_bf16 */
HPDL_DEFINE_CUDA_FP8_CAST(e5m2, HPDL_FP8_E5M2, f32, float)
HPDL_DEFINE_CUDA_FP8_CAST(e5m2, HPDL_FP8_E5M2, f16, hpdl_f16)
HPDL_DEFINE_CUDA_FP8_CAST(e5m2, HPDL_FP8_E5M2, bf16, hpdl_bf16)

/* ---- GEMM: the wgmma kernel on FP8 operands ------------------------------------ */

/* The kernel's element type: one byte of A of format FA, or of B of format FB. */
template <int FA, int FB> struct hpdl__fp8_pair { unsigned char bits; };

template <int FA, int FB> struct hpdl__wg_type<hpdl__fp8_pair<FA, FB> > {
    enum { K_STEP = 32, TRANSPOSABLE = 0 };
    typedef float acc;
    static CUtensorMapDataType tma() { return CU_TENSOR_MAP_DATA_TYPE_UINT8; /* the bits are copied as they are */ }
};

#define HPDL__WGMMA_FP8(TYPES)                                                                                     \
    asm volatile("wgmma.mma_async.sync.aligned.m64n256k32.f32." TYPES " " HPDL__WG_D128 ", %128, %129, 1, 1, 1;"   \
                 : HPDL__WG_F128(d) : "l"(a), "l"(b))

/* d += A B as hpdl__wgmma_256 does for the other types; FP8 operands are
   K-major only (no transpose bits). */
template <int TA, int TB, int FA, int FB>
static __device__ __forceinline__ void hpdl__wgmma_256(float d[128], uint64_t a, uint64_t b, hpdl__fp8_pair<FA, FB>) {
    if (FA == HPDL_FP8_E4M3 && FB == HPDL_FP8_E4M3) HPDL__WGMMA_FP8("e4m3.e4m3");
    else if (FA == HPDL_FP8_E4M3) HPDL__WGMMA_FP8("e4m3.e5m2");
    else if (FB == HPDL_FP8_E4M3) HPDL__WGMMA_FP8("e5m2.e4m3");
    else HPDL__WGMMA_FP8("e5m2.e5m2");
}

/* The epilogue's arguments: C (as the f16/bf16 GEMM's arguments with alpha
   1, beta 0: hpdl__gemm_out4 stores it; the operands are unused) and the
   scales. */
template <typename TC> struct hpdl__wg_f8args {
    int M, N, K;
    hpdl__gemm_args<TC, float> c;
    hpdl_cuda_fp8_scales s;
};

/* s = a_scale_inv * b_scale_inv and alpha = s * out_scale (hpdl.h's order). */
struct hpdl__wg_f8scale {
    float s, alpha;
};

template <typename TC> static __device__ __forceinline__ hpdl__wg_f8scale hpdl__wg_f8_scale(const hpdl__wg_f8args<TC> &e) {
    hpdl__wg_f8scale c;
    c.s = (e.s.a_scale_inv ? *e.s.a_scale_inv : 1.0f) * (e.s.b_scale_inv ? *e.s.b_scale_inv : 1.0f);
    c.alpha = c.s * (e.s.out_scale ? *e.s.out_scale : 1.0f);
    return c;
}

/* A tile's scales, and its share of the amax: s max|acc| over this
   warpgroup's accumulators (NaNs not counted, as on the CPU). */
template <typename TC>
static __device__ __forceinline__ hpdl__wg_f8scale hpdl__wg_f8_tile(const hpdl__wg_f8args<TC> &e, const float d[128]) {
    const hpdl__wg_f8scale c = hpdl__wg_f8_scale(e);
    float top = 0.0f;
    int i;
    if (e.s.amax) {
#pragma unroll
        for (i = 0; i < 128; i++) top = fmaxf(top, fabsf(d[i]));
        hpdl__fp8_amax_warp(e.s.amax, __float_as_uint(c.s * top));
    }
    return c;
}

/* hpdl__wg_store's per-column data: here the scales, read once per chunk. */
template <typename TC>
static __device__ __forceinline__ hpdl__wg_f8scale hpdl__wg_cols(const hpdl__wg_f8args<TC> &e, int) {
    return hpdl__wg_f8_scale(e);
}

template <typename TC>
static __device__ __forceinline__ void hpdl__wg_put4(const hpdl__wg_f8args<TC> &e, const hpdl__wg_f8scale &c, int m, int n,
                                                     const float v[4]) {
    const float y[4] = {c.alpha * v[0], c.alpha * v[1], c.alpha * v[2], c.alpha * v[3]};
    hpdl__gemm_out4(e.c, m, n, y);
}

/* The tile's epilogue: 16-bit C by TMA where the launcher made its map. */
template <typename TC>
static __device__ __forceinline__ void hpdl__wg_epilogue(const hpdl__wg_f8args<TC> &e, const CUtensorMap *map_c, int tma_c,
                                                         float d[128], int m0, int n0, float *buf) {
    const hpdl__wg_f8scale c = hpdl__wg_f8_tile(e, d);
    if (tma_c)
        hpdl__wg_store_tma<TC>(map_c, c.alpha, d, m0, n0, (unsigned char *)buf);
    else
        hpdl__wg_store(e, d, m0, n0, buf);
}
static __device__ __forceinline__ void hpdl__wg_epilogue(const hpdl__wg_f8args<float> &e, const CUtensorMap *, int,
                                                         float d[128], int m0, int n0, float *buf) {
    hpdl__wg_f8_tile(e, d);
    hpdl__wg_store(e, d, m0, n0, buf); /* C is f32: no TMA store */
}

/* Tiles with 16-bit C are held as the f16/bf16 GEMM's are (hpdl__wg_hold). */
template <typename TC> struct hpdl__wg_holds<hpdl__wg_f8args<TC> > { enum { value = sizeof(TC) == 2 }; };

template <typename TC>
static __device__ __forceinline__ void hpdl__wg_f8_hold(const hpdl__wg_f8args<TC> &e, const CUtensorMap *map_c, int tma_c,
                                                        const float d[128], int m0, int n0, unsigned char *buf,
                                                        hpdl__wg_held *h) {
    h->chunks = 0;
    if (tma_c) /* else the epilogue runs, amax included */
        hpdl__wg_hold_16bit<TC>(hpdl__wg_f8_tile(e, d).alpha, map_c, tma_c, d, m0, n0, buf, h);
}
static __device__ __forceinline__ void hpdl__wg_hold(const hpdl__wg_f8args<__half> &e, const CUtensorMap *map_c, int tma_c,
                                                     const float d[128], int m0, int n0, unsigned char *buf,
                                                     hpdl__wg_held *h) {
    hpdl__wg_f8_hold(e, map_c, tma_c, d, m0, n0, buf, h);
}
static __device__ __forceinline__ void hpdl__wg_hold(const hpdl__wg_f8args<__nv_bfloat16> &e, const CUtensorMap *map_c,
                                                     int tma_c, const float d[128], int m0, int n0, unsigned char *buf,
                                                     hpdl__wg_held *h) {
    hpdl__wg_f8_hold(e, map_c, tma_c, d, m0, n0, buf, h);
}

/* Runs the persistent kernel for formats FA x FB. */
template <typename TC, int FA, int FB>
static inline hpdl_status hpdl__fp8_gemm_launch(const hpdl__wg_f8args<TC> &e, const void *A, int lda, const void *B, int ldb,
                                                cudaStream_t stream) {
    typedef hpdl__fp8_pair<FA, FB> T;
    const hpdl__wg_launch l = {(const void *)hpdl__gemm_wgmma_ws<T, hpdl__wg_f8args<TC>, false, false, true, 1, 1, true>,
                               384, 128, 1, 1, 1, 1, NULL, 0};
    hpdl__gemm_operand<T> a = {(const T *)A, lda, 1, 1}, b = {(const T *)B, ldb, 1, 1};
    CUtensorMap map_a, map_b, map_c;
    hpdl_status s;
    int tma_c;
    if ((s = hpdl__wg_map(&map_a, a, e.M, e.K)) != HPDL_OK || (s = hpdl__wg_map(&map_b, b, e.N, e.K)) != HPDL_OK) return s;
    tma_c = hpdl__wg_map_c(&map_c, e.c.C, e.M, e.N, e.c.ldc) == HPDL_OK;
    return hpdl__wg_run(l, map_a, map_b, tma_c ? &map_c : NULL, e, (e.K + 127) / 128, 0 /* not measured */, stream);
}

/* Validates (hpdl.h's rules but for the scales, which are on the device),
   then runs the kernel of the formats; K = 0 writes zeros. */
template <typename TC>
static inline hpdl_status hpdl__cuda_fp8_gemm(int M, int N, int K, const void *A, hpdl_fp8_format fa, int lda,
                                              const void *B, hpdl_fp8_format fb, int ldb, const hpdl_cuda_fp8_scales *s,
                                              TC *C, int ldc, cudaStream_t stream) {
    hpdl__wg_f8args<TC> e;
    if (!hpdl__fp8_format_valid(fa) || !hpdl__fp8_format_valid(fb) || hpdl__check_matrix(A, M, K, lda) != HPDL_OK ||
        hpdl__check_matrix(B, N, K, ldb) != HPDL_OK || hpdl__check_matrix(C, M, N, ldc) != HPDL_OK)
        return HPDL_ERR_INVALID;
    if (!hpdl__wg_available() || !hpdl__gemm_aligned(A, lda, 16, 1) || !hpdl__gemm_aligned(B, ldb, 16, 1))
        return HPDL_ERR_UNSUPPORTED;
    memset(&e, 0, sizeof e);
    if (s) e.s = *s;
    if (e.s.amax) HPDL_CUDA_TRY(cudaMemsetAsync(e.s.amax, 0, sizeof(float), stream));
    if (M == 0 || N == 0) return HPDL_OK;
    if (K == 0) { /* empty sums: zeros (all-zero bits in every C type) */
        HPDL_CUDA_TRY(cudaMemset2DAsync(C, (size_t)ldc * sizeof(TC), 0, (size_t)N * sizeof(TC), (size_t)M, stream));
        return HPDL_OK;
    }
    e.M = e.c.M = M; e.N = e.c.N = N; e.K = e.c.K = K;
    e.c.C = C; e.c.ldc = ldc; e.c.cvec = hpdl__gemm_aligned(C, ldc, 4, sizeof(TC));
    e.c.alpha = 1.0f; e.c.beta = 0.0f;
    if (fa == HPDL_FP8_E4M3)
        return fb == HPDL_FP8_E4M3 ? hpdl__fp8_gemm_launch<TC, HPDL_FP8_E4M3, HPDL_FP8_E4M3>(e, A, lda, B, ldb, stream)
                                   : hpdl__fp8_gemm_launch<TC, HPDL_FP8_E4M3, HPDL_FP8_E5M2>(e, A, lda, B, ldb, stream);
    return fb == HPDL_FP8_E4M3 ? hpdl__fp8_gemm_launch<TC, HPDL_FP8_E5M2, HPDL_FP8_E4M3>(e, A, lda, B, ldb, stream)
                               : hpdl__fp8_gemm_launch<TC, HPDL_FP8_E5M2, HPDL_FP8_E5M2>(e, A, lda, B, ldb, stream);
}

/* hpdl_cuda_fp8_gemm_<SUFFIX>: hpdl_fp8_gemm_<SUFFIX> on the GPU (device
   pointers; s holds device pointers to the scales and the amax, and may be
   NULL: scales of 1, no amax). */
#define HPDL_DEFINE_CUDA_FP8_GEMM(SUFFIX, T)                                                                         \
    HPDL_CUDA_API hpdl_status hpdl_cuda_fp8_gemm_##SUFFIX(int M, int N, int K, const void *A, hpdl_fp8_format fa,      \
                                                          int lda, const void *B, hpdl_fp8_format fb, int ldb,        \
                                                          const hpdl_cuda_fp8_scales *s, T *C, int ldc,               \
                                                          cudaStream_t stream) {                                      \
        return hpdl__cuda_fp8_gemm(M, N, K, A, fa, lda, B, fb, ldb, s, (typename hpdl__dev<T>::type *)C, ldc, stream); \
    }

/* hpdl_cuda_fp8_gemm_f32 hpdl_cuda_fp8_gemm_f16 hpdl_cuda_fp8_gemm_bf16 */
HPDL_DEFINE_CUDA_FP8_GEMM(f32, float)
HPDL_DEFINE_CUDA_FP8_GEMM(f16, hpdl_f16)
HPDL_DEFINE_CUDA_FP8_GEMM(bf16, hpdl_bf16)

/* ---- cast and transpose in one pass ------------------------------------------------ */

/* q (rows x ldq) = fp8(x * scale) and qt (cols x ldqt) = the same codes
   transposed, in one read of x, as Transformer Engine's cast_transpose
   does: a block reads a 32 x 32 tile of x, writes its codes row by row into
   q and, through shared memory, column by column into qt (both coalesced).
   Columns cols..ldq-1 of q and rows..ldqt-1 of qt get zero codes: padding
   that lets the FP8 GEMM read K up to a multiple of 16. amax (accumulated:
   the caller zeroes it) of x's elements. Blocks of 32 x 8 threads. */
template <int FMT>
__global__ void __launch_bounds__(256) hpdl__fp8_cast_transpose(int rows, int cols, const float *x, int ldx,
                                                                const float *scale, uint8_t *q, int ldq, uint8_t *qt,
                                                                int ldqt, float *amax) {
    __shared__ uint8_t tile[32][33];
    const float sc = scale ? *scale : 1.0f;
    const int r0 = blockIdx.y * 32, c0 = blockIdx.x * 32, tx = threadIdx.x;
    unsigned top = 0;
    int i;
    for (i = threadIdx.y; i < 32; i += 8) {
        const int r = r0 + i, c = c0 + tx;
        const float v = r < rows && c < cols ? x[(size_t)r * ldx + c] : 0.0f;
        const uint8_t code = (uint8_t)hpdl__fp8x2<FMT>(v * sc, 0.0f);
        top = max(top, hpdl__abs_bits(v));
        tile[i][tx] = code;
        if (q && r < rows && c < ldq) q[(size_t)r * ldq + c] = code;
    }
    __syncthreads();
    for (i = threadIdx.y; i < 32; i += 8) { /* qt[c][r] = tile[r - r0][c - c0] */
        const int c = c0 + i, r = r0 + tx;
        if (qt && c < cols && r < ldqt) qt[(size_t)c * ldqt + r] = tile[tx][i];
    }
    if (amax) hpdl__fp8_amax_warp(amax, top);
}

/* Checks, then launches hpdl__fp8_cast_transpose over the tiles of q's and
   qt's extents (amax accumulated, not zeroed). */
template <int FMT>
static inline hpdl_status hpdl__fp8_cast_transpose_launch(int rows, int cols, const float *x, int ldx, const float *scale,
                                                          uint8_t *q, int ldq, uint8_t *qt, int ldqt, float *amax,
                                                          cudaStream_t stream) {
    const int R = qt ? ldqt : rows, C = q ? ldq : cols;
    if (hpdl__check_matrix(x, rows, cols, ldx) != HPDL_OK || (!q && !qt) || (q && ldq < cols) || (qt && ldqt < rows))
        return HPDL_ERR_INVALID;
    if (R == 0 || C == 0) return HPDL_OK;
    if ((R + 31) / 32 > 65535) return HPDL_ERR_UNSUPPORTED; /* the grid's y limit: 2M rows */
    hpdl__fp8_cast_transpose<FMT><<<dim3((unsigned)((C + 31) / 32), (unsigned)((R + 31) / 32)), dim3(32, 8), 0, stream>>>(
        rows, cols, x, ldx, scale, q, ldq, qt, ldqt, amax);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* hpdl_cuda_fp8_cast_transpose_<FMT>_f32: q = fp8(x * scale) (rows x cols
   of x, row stride ldx, into rows x ldq codes) and qt its transpose (cols x
   ldqt), either may be NULL; zero codes in q's columns cols..ldq-1 and
   qt's rows..ldqt-1; amax (device, may be NULL) of x. The CPU twin is
   hpdl_fp8_cast_<FMT>_f32 followed by a transpose of the codes; scale and
   amax are device pointers as in hpdl_cuda_fp8_cast_<FMT>_<t>. */
#define HPDL_DEFINE_CUDA_FP8_CAST_TRANSPOSE(FMT, FMT_ID)                                                             \
    HPDL_CUDA_API hpdl_status hpdl_cuda_fp8_cast_transpose_##FMT##_f32(int rows, int cols, const float *x, int ldx,    \
                                                                       const float *scale, hpdl_##FMT *q, int ldq,     \
                                                                       hpdl_##FMT *qt, int ldqt, float *amax,          \
                                                                       cudaStream_t stream) {                          \
        if (hpdl__check_matrix(x, rows, cols, ldx) != HPDL_OK || (!q && !qt) || (q && ldq < cols) ||                \
            (qt && ldqt < rows))                                                                                     \
            return HPDL_ERR_INVALID;                                                                                 \
        if (amax) HPDL_CUDA_TRY(cudaMemsetAsync(amax, 0, sizeof *amax, stream));                                     \
        return hpdl__fp8_cast_transpose_launch<FMT_ID>(rows, cols, x, ldx, scale, (uint8_t *)q, ldq, (uint8_t *)qt,  \
                                                       ldqt, amax, stream);                                          \
    }

/* hpdl_cuda_fp8_cast_transpose_e4m3_f32 */
HPDL_DEFINE_CUDA_FP8_CAST_TRANSPOSE(e4m3, HPDL_FP8_E4M3)
/* hpdl_cuda_fp8_cast_transpose_e5m2_f32 */
HPDL_DEFINE_CUDA_FP8_CAST_TRANSPOSE(e5m2, HPDL_FP8_E5M2)

/* ---- FP8 training of the MLP: delayed scaling on the device ------------------------ */
/* hpdl_cuda_mlp_*_fp8: the GPU twin of hpdl_mlp_train_step_fp8_f32 (hpdl.h,
   "FP8 training"; notes/fp8.md) inside the GPU MLP (section MLP TRAINING):
   f32 master weights, biases, softmax and loss, the SGD kernel, CUDA
   graphs, data sets, and evaluation in f32 from the master weights, as the
   CPU twin's accuracy is measured. Per layer l a step runs
       forward   in_q, in_t = e4m3(A[l]);   w_q, w_t = e4m3(W[l])
                 A[l+1] = fp8_gemm(in_q, w_t), then + b and act in f32
       backward  g_q, g_t = e5m2(D[l])
                 dW[l] = fp8_gemm(in_t, g_t);   db from D[l] in f32
                 D[l-1] = fp8_gemm(g_q, w_q) * act'(A[l])
   where x_q are a tensor's codes and x_t their transpose, both made by one
   hpdl__fp8_cast_transpose: the FP8 GEMM reads only K-major operands.
   Every code array's rows are padded with zero codes to a multiple of 16,
   and the GEMMs read K that far (784 stays 784; 10 classes are read as 16,
   a batch of 100 as 112), so every width and batch runs; the GEMM itself
   needs sm_90a code and a Hopper GPU (else create says
   HPDL_ERR_UNSUPPORTED).

   Delayed scaling stays on the device: each role (a layer's input, its
   weight, the gradient of its output) is an hpdl_fp8_delayed in device
   memory, whose scale the casts read there and whose 1/scale the GEMMs
   read; after the SGD kernel one thread per role rolls the step's amax into
   the history by hpdl.h's own rule (hpdl__fp8_delayed_roll), unless the
   step was not applied (a gradient or an amax not finite: the CPU twin's
   HPDL_ERR_NUMERIC). Nothing passes through the host, so a step's graph
   replays the recipe as it is. The histories start empty (scale 1) with
   HPDL_CUDA_MLP_FP8_HISTORY amaxes and margin 0, as mlp_sweep --fp8 runs
   the CPU twin; hpdl_cuda_mlp_fp8_upload_scaling sets any other. */

#define HPDL_CUDA_MLP_FP8_HISTORY 16

/* The three roles of each layer: role r of layer l is entry 3l + r. */
enum { HPDL__FP8_ROLE_INPUT = 0, HPDL__FP8_ROLE_WEIGHT = 1, HPDL__FP8_ROLE_GRAD = 2, HPDL__FP8_ROLES = 3 };

/* The FP8 state of a GPU MLP (device pointers). */
typedef struct hpdl__cmlp_fp8 {
    hpdl_fp8_delayed *roles; /* 3 per layer: the delayed scaling of each role */
    float *scale_inv;        /* 3 per layer: 1 / roles[i].scale, the GEMMs' operand scales */
    float *amax;             /* 3 per layer: this step's amax of each role, from its cast */
    uint8_t *codes;          /* one allocation holding the arrays below */
    uint8_t *in_q[HPDL_MLP_MAX_LAYERS], *in_t[HPDL_MLP_MAX_LAYERS]; /* A[l]: batch x pad(in), in x pad(batch) */
    uint8_t *w_q[HPDL_MLP_MAX_LAYERS], *w_t[HPDL_MLP_MAX_LAYERS];   /* W[l]: in x pad(out), out x pad(in) */
    uint8_t *g_q[HPDL_MLP_MAX_LAYERS], *g_t[HPDL_MLP_MAX_LAYERS];   /* D[l]: batch x pad(out), out x pad(batch) */
} hpdl__cmlp_fp8;

/* The FP8 model: the f32 model's fields, and its FP8 state. */
typedef struct hpdl_cuda_mlp_fp8 {
    HPDL__CUDA_MLP_FIELDS(float, float);
    hpdl__cmlp_fp8 fp8;
} hpdl_cuda_mlp_fp8;

/* n rounded up to the FP8 GEMM's multiple of 16 codes (16 bytes: TMA). */
HPDL_CUDA_API int hpdl__fp8_pad(int n) { return (n + 15) / 16 * 16; }

/* The format each role's casts use. */
HPDL_CUDA_API hpdl_fp8_format hpdl__fp8_role_format(int role) {
    return role % HPDL__FP8_ROLES == HPDL__FP8_ROLE_GRAD ? HPDL_FP8_E5M2 : HPDL_FP8_E4M3;
}

/* Places the code arrays in one allocation at base (each 128-byte aligned;
   TMA wants 16); returns its bytes. base NULL: only the bytes. */
HPDL_CUDA_API size_t hpdl__cmlp_fp8_layout(hpdl_cuda_mlp_fp8 *g, uint8_t *base) {
    hpdl__cmlp_fp8 *f = &g->fp8;
    const size_t B = (size_t)g->max_batch, PB = (size_t)hpdl__fp8_pad(g->max_batch);
    size_t o = 0;
    int l, k;
    for (l = 0; l < g->n_layers; l++) {
        const size_t in = (size_t)g->widths[l], out = (size_t)g->widths[l + 1];
        const size_t pin = (size_t)hpdl__fp8_pad((int)in), pout = (size_t)hpdl__fp8_pad((int)out);
        uint8_t **array[6] = {&f->in_q[l], &f->in_t[l], &f->w_q[l], &f->w_t[l], &f->g_q[l], &f->g_t[l]};
        const size_t bytes[6] = {B * pin, in * PB, in * pout, out * pin, B * pout, out * PB};
        for (k = 0; k < 6; k++) {
            if (base) *array[k] = base + o;
            o += (bytes[k] + 127) / 128 * 128;
        }
    }
    return o;
}

/* Uploads delayed-scaling states (one per role) and their 1/scale. */
HPDL_CUDA_API hpdl_status hpdl__cmlp_fp8_put_roles(hpdl_cuda_mlp_fp8 *g, const hpdl_fp8_delayed *roles) {
    float inv[HPDL__FP8_ROLES * HPDL_MLP_MAX_LAYERS];
    const int n = HPDL__FP8_ROLES * g->n_layers;
    int i;
    for (i = 0; i < n; i++) inv[i] = 1.0f / roles[i].scale; /* as hpdl.h's step divides */
    HPDL_CUDA_TRY(cudaStreamSynchronize(g->stream));
    HPDL_CUDA_TRY(cudaMemcpy(g->fp8.roles, roles, (size_t)n * sizeof *roles, cudaMemcpyHostToDevice));
    HPDL_CUDA_TRY(cudaMemcpy(g->fp8.scale_inv, inv, (size_t)n * sizeof *inv, cudaMemcpyHostToDevice));
    return HPDL_OK;
}

/* Raises the step's found_inf when an amax is not finite (the SGD kernel
   then skips the step, as the CPU twin returns HPDL_ERR_NUMERIC). */
__global__ void hpdl__cmlp_fp8_check_kernel(int n, const float *amax, hpdl__mlp_state *st) {
    int i;
    for (i = threadIdx.x; i < n; i += blockDim.x)
        if (!(amax[i] <= FLT_MAX)) st->found_inf = 1;
}

/* After the SGD kernel: each role's amax joins its history, and the new
   scale's inverse goes where the GEMMs read it; nothing when the step was
   not applied. */
__global__ void hpdl__cmlp_fp8_record_kernel(int n, hpdl_fp8_delayed *roles, float *scale_inv, const float *amax,
                                             const hpdl__mlp_state *st) {
    int i;
    if (st->last_skipped) return;
    for (i = threadIdx.x; i < n; i += blockDim.x) {
        hpdl__fp8_delayed_roll(&roles[i], amax[i]);
        scale_inv[i] = 1.0f / roles[i].scale;
    }
}

/* One cast_transpose of role `role` (3l + r) from x (rows x cols). */
template <int FMT>
static inline hpdl_status hpdl__cmlp_fp8_cast(hpdl_cuda_mlp_fp8 *g, int role, int rows, int cols, const float *x,
                                              uint8_t *q, uint8_t *qt) {
    return hpdl__fp8_cast_transpose_launch<FMT>(rows, cols, x, cols, &g->fp8.roles[role].scale, q, hpdl__fp8_pad(cols),
                                                qt, hpdl__fp8_pad(rows), g->fp8.amax + role, g->stream);
}

/* Out (M x N, f32) = the FP8 GEMM of a (M x K codes) and b (N x K codes)
   cast by roles ra and rb; K and the rows' length: pad(k). */
HPDL_CUDA_API hpdl_status hpdl__cmlp_fp8_gemm(hpdl_cuda_mlp_fp8 *g, int M, int N, int k, const uint8_t *a, int ra,
                                              const uint8_t *b, int rb, float *out) {
    const int K = hpdl__fp8_pad(k);
    hpdl_cuda_fp8_scales s;
    s.a_scale_inv = g->fp8.scale_inv + ra;
    s.b_scale_inv = g->fp8.scale_inv + rb;
    s.out_scale = NULL;
    s.amax = NULL;
    return hpdl_cuda_fp8_gemm_f32(M, N, K, a, hpdl__fp8_role_format(ra), K, b, hpdl__fp8_role_format(rb), K, &s, out, N,
                                  g->stream);
}

/* The forward pass in FP8 (the loss kernel follows, in f32). */
HPDL_CUDA_API hpdl_status hpdl__cmlp_fp8_forward(hpdl_cuda_mlp_fp8 *g, int batch) {
    hpdl__cmlp_fp8 *f = &g->fp8;
    hpdl_status s = HPDL_OK;
    int l;
    for (l = 0; s == HPDL_OK && l < g->n_layers; l++) {
        const int in = g->widths[l], out = g->widths[l + 1], r = HPDL__FP8_ROLES * l;
        s = hpdl__cmlp_fp8_cast<HPDL_FP8_E4M3>(g, r + HPDL__FP8_ROLE_INPUT, batch, in, g->A[l], f->in_q[l], f->in_t[l]);
        if (s == HPDL_OK)
            s = hpdl__cmlp_fp8_cast<HPDL_FP8_E4M3>(g, r + HPDL__FP8_ROLE_WEIGHT, in, out, g->W[l], f->w_q[l], f->w_t[l]);
        if (s == HPDL_OK)
            s = hpdl__cmlp_fp8_gemm(g, batch, out, in, f->in_q[l], r + HPDL__FP8_ROLE_INPUT, f->w_t[l],
                                    r + HPDL__FP8_ROLE_WEIGHT, g->A[l + 1]);
        if (s == HPDL_OK && l < g->n_layers - 1) s = hpdl__cmlp_bias_act<float>(g, batch, l);
    }
    return s;
}

/* The backward pass in FP8, from D[L-1] (the loss kernel's). */
HPDL_CUDA_API hpdl_status hpdl__cmlp_fp8_backward(hpdl_cuda_mlp_fp8 *g, int batch) {
    hpdl__cmlp_fp8 *f = &g->fp8;
    hpdl_status s = hpdl__cmlp_output_db<float>(g, batch);
    int l;
    for (l = g->n_layers - 1; s == HPDL_OK && l >= 0; l--) {
        const int in = g->widths[l], out = g->widths[l + 1], r = HPDL__FP8_ROLES * l;
        s = hpdl__cmlp_fp8_cast<HPDL_FP8_E5M2>(g, r + HPDL__FP8_ROLE_GRAD, batch, out, g->D[l], f->g_q[l], f->g_t[l]);
        if (s == HPDL_OK)
            s = hpdl__cmlp_fp8_gemm(g, in, out, batch, f->in_t[l], r + HPDL__FP8_ROLE_INPUT, f->g_t[l],
                                    r + HPDL__FP8_ROLE_GRAD, g->dW[l]);
        if (s == HPDL_OK && l > 0)
            s = hpdl__cmlp_fp8_gemm(g, batch, in, out, f->g_q[l], r + HPDL__FP8_ROLE_GRAD, f->w_q[l],
                                    r + HPDL__FP8_ROLE_WEIGHT, g->D[l - 1]);
        if (s == HPDL_OK && l > 0) s = hpdl__cmlp_delta_mask<float>(g, batch, l);
    }
    return s;
}

/* The FP8 model's passes (hpdl__cmlp_plain's counterpart). */
struct hpdl__cmlp_fp8_passes {
    /* The FP8 state: empty histories (scale 1) for every role. */
    template <typename M> static hpdl_status create(M *g) {
        hpdl__cmlp_fp8 *f = &g->fp8;
        hpdl_fp8_delayed roles[HPDL__FP8_ROLES * HPDL_MLP_MAX_LAYERS];
        const int n = HPDL__FP8_ROLES * g->n_layers;
        const size_t bytes = hpdl__cmlp_fp8_layout(g, NULL);
        int i;
        if (!hpdl__wg_available()) return HPDL_ERR_UNSUPPORTED; /* no FP8 GEMM here */
        if (hpdl_cuda_alloc((void **)&f->roles, (size_t)n * sizeof(hpdl_fp8_delayed)) ||
            hpdl_cuda_alloc((void **)&f->scale_inv, (size_t)n * sizeof(float)) ||
            hpdl_cuda_alloc((void **)&f->amax, (size_t)n * sizeof(float)) || hpdl_cuda_alloc((void **)&f->codes, bytes))
            return HPDL_ERR_NOMEM;
        hpdl__cmlp_fp8_layout(g, f->codes);
        for (i = 0; i < n; i++) hpdl_fp8_delayed_init(&roles[i], hpdl__fp8_role_format(i), HPDL_CUDA_MLP_FP8_HISTORY, 0);
        return hpdl__cmlp_fp8_put_roles(g, roles);
    }
    template <typename M> static void destroy(M *g) {
        hpdl_cuda_free(g->fp8.roles);
        hpdl_cuda_free(g->fp8.scale_inv);
        hpdl_cuda_free(g->fp8.amax);
        hpdl_cuda_free(g->fp8.codes);
    }
    /* The step after the gather: FP8 passes, then the f32 loss and SGD
       kernels with the amax check before and the histories' roll after. */
    template <typename C, typename M> static hpdl_status train(M *g, int batch) {
        const int n = HPDL__FP8_ROLES * g->n_layers;
        hpdl_status s;
        HPDL_CUDA_TRY(cudaMemsetAsync(g->fp8.amax, 0, (size_t)n * sizeof(float), g->stream));
        HPDL_NVTX_PUSH("forward (fp8)");
        s = hpdl__cmlp_fp8_forward(g, batch);
        if (s == HPDL_OK) s = hpdl__cmlp_loss<C>(g, batch, 1);
        HPDL_NVTX_POP();
        HPDL_NVTX_PUSH("backward (fp8)");
        if (s == HPDL_OK) s = hpdl__cmlp_fp8_backward(g, batch);
        HPDL_NVTX_POP();
        if (s != HPDL_OK) return s;
        HPDL_NVTX_PUSH("update");
        hpdl__cmlp_fp8_check_kernel<<<1, 32, 0, g->stream>>>(n, g->fp8.amax, g->state);
        HPDL_CUDA_TRY_LAUNCH();
        s = hpdl__cmlp_update<C>(g, batch);
        if (s == HPDL_OK) {
            hpdl__cmlp_fp8_record_kernel<<<1, 32, 0, g->stream>>>(n, g->fp8.roles, g->fp8.scale_inv, g->fp8.amax,
                                                                  g->state);
            HPDL_CUDA_TRY_LAUNCH();
        }
        HPDL_NVTX_POP();
        return s;
    }
};

template <> struct hpdl__cmlp_types<hpdl_cuda_mlp_fp8> {
    typedef float master; typedef float dev; typedef float storage; typedef hpdl_mlp_f32 cpu;
    typedef hpdl__cmlp_fp8_passes passes;
};

/* hpdl_cuda_mlp_create_fp8 hpdl_cuda_mlp_destroy_fp8 hpdl_cuda_mlp_upload_fp8
   hpdl_cuda_mlp_download_fp8 hpdl_cuda_mlp_train_step_fp8 hpdl_cuda_mlp_train_epoch_fp8
   hpdl_cuda_mlp_evaluate_fp8 hpdl_cuda_mlp_accuracy_fp8 hpdl_cuda_mlp_scaler_fp8
   (the f32 model's functions; create also says HPDL_ERR_UNSUPPORTED where the
   FP8 GEMM cannot run; evaluate and accuracy run the f32 forward pass) */
HPDL__CUDA_MLP_TYPED(fp8, hpdl_cuda_mlp_fp8, float, hpdl_mlp_f32)

/* Whether s is an FP8 state for g's shape whose roles have the formats of
   the GPU's kernels (e4m3 inputs and weights, e5m2 gradients). */
HPDL_CUDA_API int hpdl__cmlp_fp8_state_fits(const hpdl_cuda_mlp_fp8 *g, const hpdl_mlp_fp8 *s) {
    int l;
    if (!g || !g->fp8.roles || !s || !hpdl__same_widths(s->n_layers, s->widths, g->n_layers, g->widths)) return 0;
    for (l = 0; l < s->n_layers; l++)
        if (!hpdl__fp8_delayed_ok(&s->input[l]) || !hpdl__fp8_delayed_ok(&s->weight[l]) ||
            !hpdl__fp8_delayed_ok(&s->grad[l]) || s->input[l].format != HPDL_FP8_E4M3 ||
            s->weight[l].format != HPDL_FP8_E4M3 || s->grad[l].format != HPDL_FP8_E5M2)
            return 0;
    return 1;
}

/* Sets the GPU model's delayed scaling (every role's history, scale,
   length and margin) to the CPU FP8 state s of the same widths: to go on
   from the CPU twin's scales, or to train with another recipe (an
   hpdl_mlp_fp8_create with its own history length and margin). */
HPDL_CUDA_API hpdl_status hpdl_cuda_mlp_fp8_upload_scaling(hpdl_cuda_mlp_fp8 *g, const hpdl_mlp_fp8 *s) {
    hpdl_fp8_delayed roles[HPDL__FP8_ROLES * HPDL_MLP_MAX_LAYERS];
    int l;
    if (!hpdl__cmlp_fp8_state_fits(g, s)) return HPDL_ERR_INVALID;
    for (l = 0; l < s->n_layers; l++) {
        roles[HPDL__FP8_ROLES * l + HPDL__FP8_ROLE_INPUT] = s->input[l];
        roles[HPDL__FP8_ROLES * l + HPDL__FP8_ROLE_WEIGHT] = s->weight[l];
        roles[HPDL__FP8_ROLES * l + HPDL__FP8_ROLE_GRAD] = s->grad[l];
    }
    return hpdl__cmlp_fp8_put_roles(g, roles);
}

/* Reads the GPU model's delayed scaling into s (made for the same widths
   by hpdl_mlp_fp8_create); waits for the model's stream. */
HPDL_CUDA_API hpdl_status hpdl_cuda_mlp_fp8_download_scaling(const hpdl_cuda_mlp_fp8 *g, hpdl_mlp_fp8 *s) {
    hpdl_fp8_delayed roles[HPDL__FP8_ROLES * HPDL_MLP_MAX_LAYERS];
    int l;
    if (!hpdl__cmlp_fp8_state_fits(g, s)) return HPDL_ERR_INVALID;
    HPDL_CUDA_TRY(cudaStreamSynchronize(g->stream));
    HPDL_CUDA_TRY(cudaMemcpy(roles, g->fp8.roles, (size_t)HPDL__FP8_ROLES * g->n_layers * sizeof *roles,
                             cudaMemcpyDeviceToHost));
    for (l = 0; l < s->n_layers; l++) {
        s->input[l] = roles[HPDL__FP8_ROLES * l + HPDL__FP8_ROLE_INPUT];
        s->weight[l] = roles[HPDL__FP8_ROLES * l + HPDL__FP8_ROLE_WEIGHT];
        s->grad[l] = roles[HPDL__FP8_ROLES * l + HPDL__FP8_ROLE_GRAD];
    }
    return HPDL_OK;
}

/* ======================================================================== */
/* CNN TRAINING: the GPU backend of hpdl_cnn, CUDA graphs                   */
/* ======================================================================== */
/* hpdl.h walks a network's layers (hpdl_cnn_forward/_backward/_update)
   through a table of kernels, hpdl_cnn_backend. This is the GPU's table:
   every entry queues hpdl_cuda_* kernels on one stream and never waits for
   the device, so a whole training step can be captured into a CUDA graph
   and replayed (hpdl_cuda_cnn_train_batch, _train_epoch).

   What changes from step to step lives in device memory, so a replayed
   graph sees it: the batch (copied or gathered into staging buffers before
   each replay), the learning rate (a table of the schedule, indexed by a
   step counter the graph itself advances), and whether the step is
   skipped (a flag the finite check raises; the optimiser then writes
   nothing, and batch norm's statistics are put back).

   Precisions: f32 and f64 (everything in that type), and f16 or bf16,
   mixed precision in the style of PyTorch AMP and of the MLP's:
     - activations, their gradients and the parameters' gradients in 16
       bits, and a 16-bit working copy of the parameters that convolutions
       (tensor cores: NHWC only) and linear layers read; the master
       parameters and the optimiser's moments in f32 (the backend's
       param_size), and batch norm's parameters and statistics too: its
       kernels compute in f32 and read gamma and beta from the master;
     - loss scaling: the loss gradient is multiplied by S (device memory,
       2^16 at first); the finite check of the 16-bit gradients skips the
       step; the optimiser unscales (x 1/S) into the master; then S halves
       after a skipped step and doubles after
       HPDL_CUDA_MLP_SCALE_GROWTH_INTERVAL clean ones (the MLP's scaler
       state and rule), and the working copy is cast from the master. All on
       the device, so graphs replay it.
   Test: tests/gpu_cnn.cu; bench: bench/cnn.cu; example: examples/cnn_train.cu. */

#define HPDL_CUDA_CNN_GRAPHS 2 /* graphs kept: the full batch and an epoch's last, shorter one */

/* The GPU backend of an hpdl_cnn (hpdl_cuda_cnn_create): its kernel table, its stream, the step's
   values in device memory and the cached graphs. */
typedef struct hpdl_cuda_cnn {
    hpdl_cnn_backend be;      /* the table; be.ctx points at this struct */
    cudaStream_t stream;
    int owns_stream;          /* made by hpdl_cuda_cnn_create: the default stream cannot be captured */
    hpdl_conv_algo conv_algo; /* for every convolution (HPDL_CONV_AUTO by default) */
    hpdl_optim_step *d_step;  /* this step's learning rate, bias corrections, skip */
    double *d_lr_table;       /* the schedule, one entry per step (the last repeats) */
    int64_t lr_table_len;
    unsigned long long *d_counts; /* [0] steps taken, [1] steps skipped, [2] argmax hits */
    double *d_loss_sum;       /* training loss summed over an epoch's steps */
    void *x_stage;            /* the batch a captured step reads */
    void *x_gather;           /* the batch before augmentation (when augment_pad or augment_flip) */
    int augment_pad;          /* epochs: random crops shifted up to this many pixels (0: none) */
    int augment_flip;         /* epochs: mirror half the images left-right */
    int32_t *labels_stage;
    int32_t *d_order;         /* an epoch's shuffled image order */
    int64_t order_len;
    int use_graphs;
    struct { cudaGraphExec_t exec; int batch; } graphs[HPDL_CUDA_CNN_GRAPHS];
    int next_graph;
    hpdl__mlp_state *d_scaler; /* mixed precision: the loss scale S and its clean steps (S = 1 otherwise) */
    float *bn_grads;           /* mixed precision: a batch norm's f32 dgamma, dbeta before their cast */
    int64_t bn_grads_len;
} hpdl_cuda_cnn;

/* ---- kernels of the table --------------------------------------------------- */

/* The element-wise layers, as hpdl__elementwise's operations. */
struct hpdl__cnn_relu_op {
    template <typename T> __device__ T operator()(int, T x, T) const { return x > T(0) ? x : T(0); }
};
/* dx = dy where the ReLU's output y was positive (a = y, b = dy). */
struct hpdl__cnn_relu_grad_op {
    template <typename T> __device__ T operator()(int, T y, T dy) const { return y > T(0) ? dy : T(0); }
};
struct hpdl__cnn_add_op {
    template <typename T> __device__ T operator()(int, T a, T b) const { return a + b; }
};

/* One thread per row: a hit when the largest logit (first on ties) is at the label. */
template <typename T>
__global__ void hpdl__cnn_hits_kernel(int rows, int cols, const T *logits, const int32_t *labels,
                                      unsigned long long *hits) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const T *x = logits + (size_t)r * cols;
    int best = 0;
    for (int c = 1; c < cols; c++) best = x[c] > x[best] ? c : best;
    if (best == labels[r]) atomicAdd(hits, 1ull);
}

/* After the gradients' finite check: a non-finite loss skips the step too;
   a skipped step puts batch norm's statistics back and is counted. */
template <typename T>
__global__ void hpdl__cnn_after_check_kernel(const double *loss, hpdl_optim_step *step, int64_t n_state, T *state,
                                             const T *state_before, unsigned long long *counts) {
    int skip = step->skip || !isfinite(*loss);
    if (!skip) return;
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        step->skip = 1;
        counts[1]++;
    }
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n_state; i += (int64_t)gridDim.x * blockDim.x)
        state[i] = state_before[i];
}

/* This step's learning rate and AdamW bias corrections, from the step
   counter: from the schedule's table when there is one, else from the
   values the host passed (a step run eagerly). */
template <int lazy = 0>
__global__ void hpdl__cnn_step_scalars_kernel(hpdl_optim_step *step, const double *lr_table, int64_t table_len,
                                                     double lr, double beta1, double beta2,
                                                     unsigned long long *counts) {
    if (step->skip) return;
    unsigned long long t = ++counts[0];
    int64_t at = (int64_t)t - 1 < table_len ? (int64_t)t - 1 : table_len - 1;
    step->lr = lr_table ? lr_table[at] : lr;
    step->bias_correction1 = 1.0 - pow(beta1, (double)t);
    step->bias_correction2 = 1.0 - pow(beta2, (double)t);
}

template <int lazy = 0> __global__ void hpdl__cnn_add_loss_kernel(double *sum, const double *loss) { *sum += *loss; }

/* Mixed precision: hpdl__sgd_momentum_kernel's update of the f32 master
   from 16-bit gradients G scaled by the loss scale S (unscaled here). */
template <typename G>
__global__ void hpdl__cnn_amp_sgd_kernel(int64_t n, float *HPDL_RESTRICT w, const G *HPDL_RESTRICT grad,
                                         float *HPDL_RESTRICT velocity, const hpdl_optim_step *step,
                                         const hpdl__mlp_state *scaler, float momentum, float weight_decay,
                                         int nesterov) {
    if (step->skip) return;
    const float lr = (float)step->lr, inv = 1.0f / scaler->loss_scale;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        float wi = w[i], g = hpdl__ld(grad[i]) * inv + weight_decay * wi;
        float v = momentum * velocity[i] + g;
        velocity[i] = v;
        w[i] = wi - lr * (nesterov ? g + momentum * v : v);
    }
}

/* Mixed precision: hpdl__adamw_kernel's update, likewise. */
template <typename G>
__global__ void hpdl__cnn_amp_adamw_kernel(int64_t n, float *HPDL_RESTRICT w, const G *HPDL_RESTRICT grad,
                                           float *HPDL_RESTRICT m, float *HPDL_RESTRICT v, const hpdl_optim_step *step,
                                           const hpdl__mlp_state *scaler, hpdl__adamw_args<float> a) {
    if (step->skip) return;
    const float decay = (float)(1 - step->lr * a.weight_decay);
    const float step_size = (float)(step->lr / step->bias_correction1);
    const float bc2_sqrt = (float)sqrt(step->bias_correction2), inv = 1.0f / scaler->loss_scale;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        float g = hpdl__ld(grad[i]) * inv;
        float mi = a.beta1 * m[i] + a.one_minus_beta1 * g;
        float vi = a.beta2 * v[i] + a.one_minus_beta2 * (g * g);
        m[i] = mi;
        v[i] = vi;
        w[i] = w[i] * decay - step_size * mi / (sqrtf(vi) / bc2_sqrt + a.eps);
    }
}

/* After the optimiser: the MLP's scaler rule (hpdl__mlp_scaler_update) on
   this step's skip flag. One thread. */
template <int lazy = 0> __global__ void hpdl__cnn_scaler_kernel(const hpdl_optim_step *step, hpdl__mlp_state *scaler) {
    scaler->found_inf = step->skip;
    hpdl__mlp_scaler_update(scaler);
}

/* A batch norm's f32 dgamma, dbeta (f[0..c), f[c..2c)) into the 16-bit
   gradients. */
template <typename G> __global__ void hpdl__cnn_bn_grads_kernel(int c, const float *f, G *dgamma, G *dbeta) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < 2 * c) hpdl__st_to(i < c ? dgamma + i : dbeta + i - c, f[i]);
}

/* ---- the table's entries ----------------------------------------------------- */

static inline hpdl_cuda_cnn *hpdl__gcnn(void *ctx) { return (hpdl_cuda_cnn *)ctx; }

template <int lazy = 0> void *hpdl__gcnn_alloc(void *ctx, size_t bytes) {
    void *p = NULL;
    if (hpdl_cuda_alloc(&p, bytes ? bytes : 16) != HPDL_OK) return NULL;
    if (cudaMemsetAsync(p, 0, bytes ? bytes : 16, hpdl__gcnn(ctx)->stream) != cudaSuccess ||
        cudaStreamSynchronize(hpdl__gcnn(ctx)->stream) != cudaSuccess) {
        cudaGetLastError();
        cudaFree(p);
        return NULL;
    }
    return p;
}
template <int lazy = 0> void hpdl__gcnn_release(void *ctx, void *p) { (void)ctx; if (p) cudaFree(p); }
template <int lazy = 0> hpdl_status hpdl__gcnn_zero(void *ctx, void *p, size_t bytes) {
    HPDL_CUDA_TRY(cudaMemsetAsync(p, 0, bytes, hpdl__gcnn(ctx)->stream));
    return HPDL_OK;
}
template <cudaMemcpyKind KIND> hpdl_status hpdl__gcnn_copy(void *ctx, void *dst, const void *src, size_t bytes) {
    if (bytes == 0 || dst == src) return HPDL_OK;
    HPDL_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, KIND, hpdl__gcnn(ctx)->stream));
    /* host memory must be readable or filled when the call returns */
    if (KIND != cudaMemcpyDeviceToDevice) HPDL_CUDA_TRY(cudaStreamSynchronize(hpdl__gcnn(ctx)->stream));
    return HPDL_OK;
}

template <typename T>
hpdl_status hpdl__gcnn_conv_fwd(void *ctx, const hpdl_conv2d_params *p, const hpdl_tensor4 *xd, const void *x,
                                const void *w, const hpdl_tensor4 *yd, void *y) {
    hpdl_cuda_cnn *g = hpdl__gcnn(ctx);
    return hpdl_cuda_conv2d_forward_algo<T>(g->conv_algo, p, xd, (const T *)x, (const T *)w, yd, (T *)y, g->stream);
}
template <typename T>
hpdl_status hpdl__gcnn_conv_bwd_data(void *ctx, const hpdl_conv2d_params *p, const hpdl_tensor4 *yd, const void *dy,
                                     const void *w, const hpdl_tensor4 *xd, void *dx) {
    hpdl_cuda_cnn *g = hpdl__gcnn(ctx);
    return hpdl_cuda_conv2d_backward_data_algo<T>(g->conv_algo, p, yd, (const T *)dy, (const T *)w, xd, (T *)dx,
                                                  g->stream);
}
template <typename T>
hpdl_status hpdl__gcnn_conv_bwd_filter(void *ctx, const hpdl_conv2d_params *p, const hpdl_tensor4 *xd, const void *x,
                                       const hpdl_tensor4 *yd, const void *dy, void *dw) {
    hpdl_cuda_cnn *g = hpdl__gcnn(ctx);
    return hpdl_cuda_conv2d_backward_filter_algo<T>(g->conv_algo, p, xd, (const T *)x, yd, (const T *)dy, (T *)dw,
                                                    g->stream);
}
template <typename T> hpdl_status hpdl__gcnn_bias_grad(void *ctx, const hpdl_tensor4 *yd, const void *dy, void *db) {
    return hpdl_cuda_conv2d_bias_grad<T>(yd, (const T *)dy, (T *)db, hpdl__gcnn(ctx)->stream);
}
/* The filter and bias gradients: in one pass where AUTO runs the
   few-channel kernels (the bias a column of ones among the input patches),
   else one after the other. */
template <typename T>
hpdl_status hpdl__gcnn_conv_bwd_filter_bias(void *ctx, const hpdl_conv2d_params *p, const hpdl_tensor4 *xd,
                                            const void *x, const hpdl_tensor4 *yd, const void *dy, void *dw,
                                            void *db) {
    typedef typename hpdl__acc<T>::type ACC;
    hpdl_cuda_cnn *g = hpdl__gcnn(ctx);
    hpdl__conv_geom geom = hpdl__conv_geom();
    hpdl_status s;
    if (g->conv_algo == HPDL_CONV_AUTO && db && hpdl__conv_geom_make(p, xd, yd, x, dy, dw, &geom) == HPDL_OK &&
        hpdl__conv_few_channels(geom, HPDL__CONV_FILTER_GRAD, sizeof(T) == 2)) {
        s = hpdl__conv_launch_few_channels<T, ACC>(geom, HPDL__CONV_FILTER_GRAD, (const T *)x, (const T *)dy, (T *)dw,
                                                   (T *)db, g->stream);
        if (s != HPDL_ERR_UNSUPPORTED) return s;
    }
    s = hpdl__gcnn_conv_bwd_filter<T>(ctx, p, xd, x, yd, dy, dw);
    return s == HPDL_OK ? hpdl__gcnn_bias_grad<T>(ctx, yd, dy, db) : s;
}
template <typename T> hpdl_status hpdl__gcnn_bias_add(void *ctx, const hpdl_tensor4 *yd, void *y, const void *b) {
    return hpdl_cuda_conv2d_bias_add<T>(yd, (T *)y, (const T *)b, hpdl__gcnn(ctx)->stream);
}
/* Batch norm's parameters and statistics are of type P (f32 for 16-bit T). */
template <typename T, typename P = typename hpdl__acc<T>::type>
hpdl_status hpdl__gcnn_bn_train(void *ctx, const hpdl_tensor4 *xd, const void *x, const void *gamma, const void *beta,
                                double momentum, double eps, void *rm, void *rv, void *y, void *sm, void *si) {
    return hpdl_cuda_batchnorm_forward_training<T>(xd, (const T *)x, (const P *)gamma, (const P *)beta, momentum, eps,
                                                   (P *)rm, (P *)rv, (T *)y, (P *)sm, (P *)si, hpdl__gcnn(ctx)->stream);
}
template <typename T, typename P = typename hpdl__acc<T>::type>
hpdl_status hpdl__gcnn_bn_infer(void *ctx, const hpdl_tensor4 *xd, const void *x, const void *gamma, const void *beta,
                                const void *rm, const void *rv, double eps, void *y) {
    return hpdl_cuda_batchnorm_forward_inference<T>(xd, (const T *)x, (const P *)gamma, (const P *)beta,
                                                    (const P *)rm, (const P *)rv, eps, (T *)y, hpdl__gcnn(ctx)->stream);
}
template <typename T>
hpdl_status hpdl__gcnn_bn_bwd(void *ctx, const hpdl_tensor4 *xd, const void *x, const void *dy, const void *gamma,
                              const void *sm, const void *si, void *dx, void *dgamma, void *dbeta) {
    return hpdl_cuda_batchnorm_backward<T>(xd, (const T *)x, (const T *)dy, (const T *)gamma, (const T *)sm,
                                           (const T *)si, (T *)dx, (T *)dgamma, (T *)dbeta, hpdl__gcnn(ctx)->stream);
}
/* Mixed precision: dgamma and dbeta in f32 (as the kernel computes them)
   into g->bn_grads, then cast to the 16-bit gradients. The buffer grows in
   the first, eager step; a capture finds it large enough. */
template <typename T>
hpdl_status hpdl__gcnn_amp_bn_bwd(void *ctx, const hpdl_tensor4 *xd, const void *x, const void *dy, const void *gamma,
                                  const void *sm, const void *si, void *dx, void *dgamma, void *dbeta) {
    hpdl_cuda_cnn *g = hpdl__gcnn(ctx);
    hpdl_status s;
    if (!hpdl__tensor4_valid(xd) || !dgamma || !dbeta) return HPDL_ERR_INVALID;
    if (2 * (int64_t)xd->c > g->bn_grads_len) {
        cudaFree(g->bn_grads);
        g->bn_grads = (float *)hpdl__gcnn_alloc(g, 2 * (size_t)xd->c * sizeof(float));
        g->bn_grads_len = g->bn_grads ? 2 * (int64_t)xd->c : 0;
        if (!g->bn_grads) return HPDL_ERR_NOMEM;
    }
    s = hpdl_cuda_batchnorm_backward<T>(xd, (const T *)x, (const T *)dy, (const float *)gamma, (const float *)sm,
                                        (const float *)si, (T *)dx, g->bn_grads, g->bn_grads + xd->c, g->stream);
    if (s != HPDL_OK) return s;
    hpdl__cnn_bn_grads_kernel<T><<<(2 * xd->c + 255) / 256, 256, 0, g->stream>>>(xd->c, g->bn_grads, (T *)dgamma,
                                                                                (T *)dbeta);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}
template <typename T>
hpdl_status hpdl__gcnn_pool_fwd(void *ctx, int max, const hpdl_pool2d_params *p, const hpdl_tensor4 *xd,
                                const void *x, const hpdl_tensor4 *yd, void *y) {
    cudaStream_t s = hpdl__gcnn(ctx)->stream;
    return max ? hpdl_cuda_maxpool2d_forward<T>(p, xd, (const T *)x, yd, (T *)y, s)
               : hpdl_cuda_avgpool2d_forward<T>(p, xd, (const T *)x, yd, (T *)y, s);
}
template <typename T>
hpdl_status hpdl__gcnn_pool_bwd(void *ctx, int max, const hpdl_pool2d_params *p, const hpdl_tensor4 *xd,
                                const void *x, const hpdl_tensor4 *yd, const void *dy, void *dx) {
    cudaStream_t s = hpdl__gcnn(ctx)->stream;
    return max ? hpdl_cuda_maxpool2d_backward<T>(p, xd, (const T *)x, yd, (const T *)dy, (T *)dx, s)
               : hpdl_cuda_avgpool2d_backward<T>(p, yd, (const T *)dy, xd, (T *)dx, s);
}
template <typename T> hpdl_status hpdl__gcnn_gap_fwd(void *ctx, const hpdl_tensor4 *xd, const void *x, void *y) {
    return hpdl_cuda_global_avgpool_forward<T>(xd, (const T *)x, (T *)y, hpdl__gcnn(ctx)->stream);
}
template <typename T> hpdl_status hpdl__gcnn_gap_bwd(void *ctx, const hpdl_tensor4 *xd, const void *dy, void *dx) {
    return hpdl_cuda_global_avgpool_backward<T>(xd, (const T *)dy, (T *)dx, hpdl__gcnn(ctx)->stream);
}
template <typename T> hpdl_status hpdl__gcnn_relu(void *ctx, int64_t n, const void *x, void *y) {
    return hpdl__elementwise(n, 1, (const T *)x, (const T *)NULL, (T *)y, hpdl__cnn_relu_op(), hpdl__gcnn(ctx)->stream);
}
template <typename T> hpdl_status hpdl__gcnn_relu_grad(void *ctx, int64_t n, const void *y, const void *dy, void *dx) {
    return hpdl__elementwise(n, 1, (const T *)y, (const T *)dy, (T *)dx, hpdl__cnn_relu_grad_op(), hpdl__gcnn(ctx)->stream);
}
template <typename T> hpdl_status hpdl__gcnn_add(void *ctx, int64_t n, const void *a, const void *b, void *c) {
    return hpdl__elementwise(n, 1, (const T *)a, (const T *)b, (T *)c, hpdl__cnn_add_op(), hpdl__gcnn(ctx)->stream);
}
template <typename T>
hpdl_status hpdl__gcnn_gemm(void *ctx, hpdl_transpose ta, hpdl_transpose tb, int M, int N, int K, const void *A,
                            int lda, const void *B, int ldb, void *C, int ldc) {
    typedef typename hpdl__acc<T>::type ACC;
    /* a linear layer's few hundred outputs would be one block of the
       warp-tiled rung: hpdl__gemm_small's 16 x 16 tiles, K split four ways */
    if ((int64_t)M * N <= 256 * 256)
        return hpdl__gemm_run_small<T, ACC>(ta, tb, M, N, K, 1, (const T *)A, lda, (const T *)B, ldb, 0, (T *)C, ldc,
                                            hpdl__gcnn(ctx)->stream);
    return hpdl_cuda_gemm_algo<T>(HPDL_GEMM_AUTO, ta, tb, M, N, K, 1, (const T *)A, lda, (const T *)B, ldb, 0, (T *)C,
                                  ldc, hpdl__gcnn(ctx)->stream);
}
/* The typed softmax launchers, picked by type. */
template <int lazy = 0>
hpdl_status hpdl__gcnn_xent_typed(int rows, int cols, const float *l, const int32_t *y, float *g, double *loss,
                                  cudaStream_t s) {
    return hpdl_cuda_softmax_xent_f32(rows, cols, l, cols, y, g, cols, loss, s);
}
template <int lazy = 0>
hpdl_status hpdl__gcnn_xent_typed(int rows, int cols, const double *l, const int32_t *y, double *g, double *loss,
                                  cudaStream_t s) {
    return hpdl_cuda_softmax_xent_f64(rows, cols, l, cols, y, g, cols, loss, s);
}
template <typename T>
hpdl_status hpdl__gcnn_xent(void *ctx, int rows, int cols, const void *logits, const int32_t *labels, void *grad,
                            double *loss) {
    return hpdl__gcnn_xent_typed(rows, cols, (const T *)logits, labels, (T *)grad, loss, hpdl__gcnn(ctx)->stream);
}
/* Mixed precision: the same from 16-bit logits (f32 sums), the gradient
   times the loss scale S (the MLP's loss kernel). */
template <typename T>
hpdl_status hpdl__gcnn_amp_xent(void *ctx, int rows, int cols, const void *logits, const int32_t *labels, void *grad,
                                double *loss) {
    hpdl_cuda_cnn *g = hpdl__gcnn(ctx);
    if (rows <= 0 || cols <= 0 || !logits || !labels || !grad || !loss) return HPDL_ERR_INVALID;
    HPDL_CUDA_TRY(cudaMemsetAsync(loss, 0, sizeof(double), g->stream));
    hpdl__mlp_xent_kernel<<<(rows + 7) / 8, 256, 0, g->stream>>>(rows, cols, (const T *)logits, cols, (const float *)NULL,
                                                                 labels, (T *)grad, cols, 1.0 / rows,
                                                                 &g->d_scaler->loss_scale, 1.0 / rows, loss,
                                                                 (unsigned long long *)NULL, (T *)NULL, NULL, (unsigned *)NULL);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}
template <typename T>
hpdl_status hpdl__gcnn_hits(void *ctx, int rows, int cols, const void *logits, const int32_t *labels, int64_t *hits) {
    hpdl_cuda_cnn *g = hpdl__gcnn(ctx);
    unsigned long long count = 0;
    HPDL_CUDA_TRY(cudaMemsetAsync(g->d_counts + 2, 0, sizeof count, g->stream));
    hpdl__cnn_hits_kernel<T><<<(rows + 255) / 256, 256, 0, g->stream>>>(rows, cols, (const T *)logits, labels,
                                                                         g->d_counts + 2);
    HPDL_CUDA_TRY_LAUNCH();
    HPDL_CUDA_TRY(cudaMemcpyAsync(&count, g->d_counts + 2, sizeof count, cudaMemcpyDeviceToHost, g->stream));
    HPDL_CUDA_TRY(cudaStreamSynchronize(g->stream));
    *hits = (int64_t)count;
    return HPDL_OK;
}
template <typename T>
hpdl_status hpdl__gcnn_check(void *ctx, int64_t n, const void *grads, const double *loss, int64_t n_state, void *state,
                             const void *state_before, int *bad) {
    hpdl_cuda_cnn *g = hpdl__gcnn(ctx);
    hpdl_status s;
    *bad = 0;
    HPDL_CUDA_TRY(cudaMemsetAsync(&g->d_step->skip, 0, sizeof(int), g->stream));
    if ((s = hpdl_cuda_flag_nonfinite<T>(n, (const T *)grads, &g->d_step->skip, g->stream)) != HPDL_OK) return s;
    typedef typename hpdl__acc<T>::type P; /* batch norm's statistics */
    hpdl__cnn_after_check_kernel<P><<<hpdl__elementwise_blocks((size_t)(n_state ? n_state : 1)), 256, 0, g->stream>>>(
        loss, g->d_step, n_state, (P *)state, (const P *)state_before, g->d_counts);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}
template <int lazy = 0>
hpdl_status hpdl__gcnn_scalars(hpdl_cuda_cnn *g, double lr, double beta1, double beta2) {
    hpdl__cnn_step_scalars_kernel<><<<1, 1, 0, g->stream>>>(g->d_step, g->d_lr_table, g->lr_table_len, lr, beta1, beta2,
                                                          g->d_counts);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}
template <typename T>
hpdl_status hpdl__gcnn_sgd(void *ctx, int64_t n, void *w, const void *grad, void *v, double lr, double momentum,
                           double wd, int nesterov) {
    hpdl_cuda_cnn *g = hpdl__gcnn(ctx);
    hpdl_status s = hpdl__gcnn_scalars(g, lr, 0.0, 0.0);
    return s == HPDL_OK ? hpdl_cuda_sgd_momentum<T>(n, (T *)w, (const T *)grad, (T *)v, g->d_step, momentum, wd,
                                                    nesterov, g->stream)
                        : s;
}
template <typename T>
hpdl_status hpdl__gcnn_adamw(void *ctx, int64_t n, void *w, const void *grad, void *m, void *v, int64_t step, double lr,
                             double b1, double b2, double eps, double wd) {
    hpdl_cuda_cnn *g = hpdl__gcnn(ctx);
    hpdl_status s = hpdl__gcnn_scalars(g, lr, b1, b2);
    (void)step; /* the device counts the steps it took */
    return s == HPDL_OK ? hpdl_cuda_adamw<T>(n, (T *)w, (const T *)grad, (T *)m, (T *)v, g->d_step, b1, b2, eps, wd,
                                             g->stream)
                        : s;
}
/* Mixed precision, after the update: the loss scale's rule. */
template <int lazy = 0> hpdl_status hpdl__gcnn_scale_update(hpdl_cuda_cnn *g) {
    hpdl__cnn_scaler_kernel<><<<1, 1, 0, g->stream>>>(g->d_step, g->d_scaler);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}
template <typename T>
hpdl_status hpdl__gcnn_amp_sgd(void *ctx, int64_t n, void *w, const void *grad, void *v, double lr, double momentum,
                               double wd, int nesterov) {
    hpdl_cuda_cnn *g = hpdl__gcnn(ctx);
    hpdl_status s;
    if (!hpdl__optim_args_ok(n, w, grad, v, v, g->d_step) || !hpdl__sgd_params_ok(0, momentum, wd, nesterov))
        return HPDL_ERR_INVALID;
    if ((s = hpdl__gcnn_scalars(g, lr, 0.0, 0.0)) != HPDL_OK) return s;
    if (n > 0)
        hpdl__cnn_amp_sgd_kernel<T><<<hpdl__elementwise_blocks((size_t)n), 256, 0, g->stream>>>(
            n, (float *)w, (const T *)grad, (float *)v, g->d_step, g->d_scaler, (float)momentum, (float)wd,
            nesterov ? 1 : 0);
    HPDL_CUDA_TRY_LAUNCH();
    return hpdl__gcnn_scale_update(g);
}
template <typename T>
hpdl_status hpdl__gcnn_amp_adamw(void *ctx, int64_t n, void *w, const void *grad, void *m, void *v, int64_t step,
                                 double lr, double b1, double b2, double eps, double wd) {
    hpdl_cuda_cnn *g = hpdl__gcnn(ctx);
    hpdl__adamw_args<float> a;
    hpdl_status s;
    (void)step; /* the device counts the steps it took */
    if (!hpdl__optim_args_ok(n, w, grad, m, v, g->d_step) || !hpdl__adamw_params_ok(1, 0, b1, b2, eps, wd))
        return HPDL_ERR_INVALID;
    if ((s = hpdl__gcnn_scalars(g, lr, b1, b2)) != HPDL_OK) return s;
    a.beta1 = (float)b1;
    a.one_minus_beta1 = (float)(1 - b1);
    a.beta2 = (float)b2;
    a.one_minus_beta2 = (float)(1 - b2);
    a.eps = (float)eps;
    a.weight_decay = wd;
    if (n > 0)
        hpdl__cnn_amp_adamw_kernel<T><<<hpdl__elementwise_blocks((size_t)n), 256, 0, g->stream>>>(
            n, (float *)w, (const T *)grad, (float *)m, (float *)v, g->d_step, g->d_scaler, a);
    HPDL_CUDA_TRY_LAUNCH();
    return hpdl__gcnn_scale_update(g);
}
/* Mixed precision: the working copy from the f32 master. */
template <typename T> hpdl_status hpdl__gcnn_cast(void *ctx, int64_t n, const void *params, void *work) {
    if (n < 0 || !params || !work) return HPDL_ERR_INVALID;
    if (n == 0) return HPDL_OK;
    hpdl__convert_kernel<T, float><<<hpdl__grid_for(n, 256), 256, 0, hpdl__gcnn(ctx)->stream>>>(
        n, (const float *)params, (T *)work);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* The entries of every precision: memory and the layers. */
template <typename T> void hpdl__gcnn_fill_layers(hpdl_cnn_backend *be) {
    be->alloc = hpdl__gcnn_alloc<>;
    be->release = hpdl__gcnn_release<>;
    be->zero = hpdl__gcnn_zero<>;
    be->copy = hpdl__gcnn_copy<cudaMemcpyDeviceToDevice>;
    be->upload = hpdl__gcnn_copy<cudaMemcpyHostToDevice>;
    be->download = hpdl__gcnn_copy<cudaMemcpyDeviceToHost>;
    be->conv_forward = hpdl__gcnn_conv_fwd<T>;
    be->conv_backward_data = hpdl__gcnn_conv_bwd_data<T>;
    be->conv_backward_filter = hpdl__gcnn_conv_bwd_filter<T>;
    be->bias_add = hpdl__gcnn_bias_add<T>;
    be->bias_grad = hpdl__gcnn_bias_grad<T>;
    be->conv_backward_filter_bias = hpdl__gcnn_conv_bwd_filter_bias<T>;
    be->bn_forward_training = hpdl__gcnn_bn_train<T>;
    be->bn_forward_inference = hpdl__gcnn_bn_infer<T>;
    be->pool_forward = hpdl__gcnn_pool_fwd<T>;
    be->pool_backward = hpdl__gcnn_pool_bwd<T>;
    be->global_avgpool_forward = hpdl__gcnn_gap_fwd<T>;
    be->global_avgpool_backward = hpdl__gcnn_gap_bwd<T>;
    be->relu = hpdl__gcnn_relu<T>;
    be->relu_grad = hpdl__gcnn_relu_grad<T>;
    be->add = hpdl__gcnn_add<T>;
    be->gemm = hpdl__gcnn_gemm<T>;
    be->argmax_hits = hpdl__gcnn_hits<T>;
    be->check_step = hpdl__gcnn_check<T>;
}

/* The whole table of T: float or double, everything in T ... */
template <typename T, bool MIXED = sizeof(T) == 2> struct hpdl__gcnn_table {
    static void fill(hpdl_cnn_backend *be) {
        hpdl__gcnn_fill_layers<T>(be);
        be->bn_backward = hpdl__gcnn_bn_bwd<T>;
        be->softmax_xent = hpdl__gcnn_xent<T>;
        be->sgd = hpdl__gcnn_sgd<T>;
        be->adamw = hpdl__gcnn_adamw<T>;
    }
};

/* ... or 16-bit T, mixed precision, with f32 parameters. */
template <typename T> struct hpdl__gcnn_table<T, true> {
    static void fill(hpdl_cnn_backend *be) {
        hpdl__gcnn_fill_layers<T>(be);
        be->param_size = sizeof(float);
        be->bn_backward = hpdl__gcnn_amp_bn_bwd<T>;
        be->softmax_xent = hpdl__gcnn_amp_xent<T>;
        be->sgd = hpdl__gcnn_amp_sgd<T>;
        be->adamw = hpdl__gcnn_amp_adamw<T>;
        be->cast = hpdl__gcnn_cast<T>;
    }
};

/* ---- public: the backend, and training driven by graphs ------------------------ */

/* Frees the backend's graphs, buffers and own stream; g is zeroed. Destroy
   the runs made on it first. */
HPDL_CUDA_API void hpdl_cuda_cnn_destroy(hpdl_cuda_cnn *g) {
    int k;
    if (!g) return;
    for (k = 0; k < HPDL_CUDA_CNN_GRAPHS; k++)
        if (g->graphs[k].exec) cudaGraphExecDestroy(g->graphs[k].exec);
    cudaFree(g->d_step);
    cudaFree(g->d_lr_table);
    cudaFree(g->d_counts);
    cudaFree(g->d_loss_sum);
    cudaFree(g->x_stage);
    cudaFree(g->x_gather);
    cudaFree(g->labels_stage);
    cudaFree(g->d_order);
    cudaFree(g->d_scaler);
    cudaFree(g->bn_grads);
    if (g->owns_stream) hpdl__stream_destroy(g->stream);
    memset(g, 0, sizeof *g);
}

/* Sets the loss scale S (mixed precision; a positive finite float) and
   restarts the count of clean steps to its next doubling. On the stream. */
HPDL_CUDA_API hpdl_status hpdl_cuda_cnn_set_loss_scale(hpdl_cuda_cnn *g, double scale) {
    if (!g || !g->be.param_size || !(scale > 0 && scale <= 3.4e38)) return HPDL_ERR_INVALID;
    hpdl__mlp_scaler_init_kernel<<<1, 1, 0, g->stream>>>(g->d_scaler, (float)scale);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* Waits for the device; *scale: the loss scale S now (1 in f32 and f64). */
HPDL_CUDA_API hpdl_status hpdl_cuda_cnn_loss_scale(hpdl_cuda_cnn *g, double *scale) {
    float s = 0;
    if (!g || !scale) return HPDL_ERR_INVALID;
    HPDL_CUDA_TRY(cudaMemcpyAsync(&s, &g->d_scaler->loss_scale, sizeof s, cudaMemcpyDeviceToHost, g->stream));
    HPDL_CUDA_TRY(cudaStreamSynchronize(g->stream));
    *scale = s;
    return HPDL_OK;
}

/* A GPU backend of element type T on `stream`; every convolution with
   `conv_algo`. Pass &g->be to hpdl_cnn_run_create. T: float or double
   (everything in T), or mixed precision: __half / hpdl_f16 or
   __nv_bfloat16 / hpdl_bf16 activations and gradients with f32 parameters
   and loss scaling (networks in NHWC). For stream 0 it makes a stream of
   its own (blocking, so it still waits for work on the default stream),
   because the legacy default stream cannot be captured into a graph. */
template <typename T>
static inline hpdl_status hpdl_cuda_cnn_create(hpdl_cuda_cnn *g, hpdl_conv_algo conv_algo, cudaStream_t stream = 0) {
    typedef typename hpdl__dev<T>::type D;
    static_assert(hpdl__is_float_type<D>::value, "hpdl: the CNN backend takes float, double, f16 or bf16");
    if (!g) return HPDL_ERR_INVALID;
    memset(g, 0, sizeof *g);
    if (!stream) {
        HPDL_CUDA_TRY(cudaStreamCreate(&stream));
        g->owns_stream = 1;
    }
    g->stream = stream;
    g->conv_algo = conv_algo;
    g->use_graphs = 1;
    g->be.name = sizeof(D) == 8   ? "cuda f64"
                 : sizeof(D) == 4 ? "cuda f32"
                 : hpdl__is_half<D>::value ? "cuda f16 (f32 parameters)" : "cuda bf16 (f32 parameters)";
    g->be.elem_size = sizeof(D);
    g->be.ctx = g;
    hpdl__gcnn_table<D>::fill(&g->be);
    g->d_step = (hpdl_optim_step *)hpdl__gcnn_alloc(g, sizeof(hpdl_optim_step));
    g->d_counts = (unsigned long long *)hpdl__gcnn_alloc(g, 3 * sizeof(unsigned long long));
    g->d_loss_sum = (double *)hpdl__gcnn_alloc(g, sizeof(double));
    g->d_scaler = (hpdl__mlp_state *)hpdl__gcnn_alloc(g, sizeof(hpdl__mlp_state));
    if (!g->d_step || !g->d_counts || !g->d_loss_sum || !g->d_scaler) { hpdl_cuda_cnn_destroy(g); return HPDL_ERR_NOMEM; }
    hpdl__mlp_scaler_init_kernel<<<1, 1, 0, g->stream>>>(g->d_scaler, g->be.param_size ? HPDL_CUDA_MLP_SCALE_INIT : 1.0f);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* hpdl_cuda_cnn_create for float parameters and activations. */
HPDL_CUDA_API hpdl_status hpdl_cuda_cnn_create_f32(hpdl_cuda_cnn *g, hpdl_conv_algo conv_algo, cudaStream_t stream) {
    return hpdl_cuda_cnn_create<float>(g, conv_algo, stream);
}
/* The same in double precision (the twin check at 1e-12). */
HPDL_CUDA_API hpdl_status hpdl_cuda_cnn_create_f64(hpdl_cuda_cnn *g, hpdl_conv_algo conv_algo, cudaStream_t stream) {
    return hpdl_cuda_cnn_create<double>(g, conv_algo, stream);
}
/* Mixed precision: f16 activations and gradients, f32 parameters. */
HPDL_CUDA_API hpdl_status hpdl_cuda_cnn_create_f16(hpdl_cuda_cnn *g, hpdl_conv_algo conv_algo, cudaStream_t stream) {
    return hpdl_cuda_cnn_create<__half>(g, conv_algo, stream);
}
/* Mixed precision: bf16 activations and gradients, f32 parameters. */
HPDL_CUDA_API hpdl_status hpdl_cuda_cnn_create_bf16(hpdl_cuda_cnn *g, hpdl_conv_algo conv_algo, cudaStream_t stream) {
    return hpdl_cuda_cnn_create<__nv_bfloat16>(g, conv_algo, stream);
}

/* The schedule as a table on the device, one entry per step up to its
   total_steps (the last entry repeats after). A step schedule without
   total_steps would stop decaying: refused. */
HPDL_CUDA_API hpdl_status hpdl__gcnn_upload_schedule(hpdl_cuda_cnn *g, const hpdl_lr_schedule *s) {
    int64_t len = s->kind == HPDL_LR_CONSTANT && s->warmup_steps == 0 ? 1 : s->total_steps, t;
    double *table;
    hpdl_status st;
    if (len < 1) {
        fprintf(stderr, "hpdl_cuda_cnn: a warm-up or step schedule needs total_steps on the GPU\n");
        return HPDL_ERR_INVALID;
    }
    if (!(table = (double *)hpdl_alloc((size_t)len, sizeof *table))) return HPDL_ERR_NOMEM;
    for (t = 0; t < len; t++) table[t] = hpdl_lr_at(s, t);
    cudaFree(g->d_lr_table);
    g->d_lr_table = (double *)hpdl__gcnn_alloc(g, (size_t)len * sizeof *table);
    st = g->d_lr_table ? hpdl__gcnn_copy<cudaMemcpyHostToDevice>(g, g->d_lr_table, table, (size_t)len * sizeof *table)
                       : HPDL_ERR_NOMEM;
    g->lr_table_len = st == HPDL_OK ? len : 0;
    HPDL_FREE(table);
    return st;
}

/* Staging buffers for batches of up to r->max_batch, and the schedule's
   table, made on the first training call. */
HPDL_CUDA_API hpdl_status hpdl__gcnn_prepare(hpdl_cuda_cnn *g, hpdl_cnn_run *r) {
    size_t features = (size_t)r->net->input.c * r->net->input.h * r->net->input.w;
    if (r->be != &g->be) return HPDL_ERR_INVALID;
    if (g->be.param_size && r->net->layout != HPDL_NHWC) {
        fprintf(stderr, "hpdl_cuda_cnn: mixed precision needs an NHWC network (the tensor-core convolutions)\n");
        return HPDL_ERR_UNSUPPORTED;
    }
    if (g->x_stage) return HPDL_OK;
    g->x_stage = hpdl__gcnn_alloc(g, (size_t)r->max_batch * features * g->be.elem_size);
    g->x_gather = hpdl__gcnn_alloc(g, (size_t)r->max_batch * features * g->be.elem_size);
    g->labels_stage = (int32_t *)hpdl__gcnn_alloc(g, (size_t)r->max_batch * sizeof(int32_t));
    if (!g->x_stage || !g->x_gather || !g->labels_stage) return HPDL_ERR_NOMEM;
    return hpdl__gcnn_upload_schedule(g, &r->opt.schedule);
}

/* One step on the staged batch, and its loss added to the epoch's sum. */
HPDL_CUDA_API hpdl_status hpdl__gcnn_step(hpdl_cuda_cnn *g, hpdl_cnn_run *r, int batch) {
    hpdl_status s = hpdl_cnn_train_step(r, batch, g->x_stage, g->labels_stage);
    if (s != HPDL_OK) return s;
    hpdl__cnn_add_loss_kernel<><<<1, 1, 0, g->stream>>>(g->d_loss_sum, r->loss);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* Records the step for this batch size into a graph; a capture that fails
   turns graphs off (steps then run eagerly: slower, still correct). */
HPDL_CUDA_API void hpdl__gcnn_capture(hpdl_cuda_cnn *g, hpdl_cnn_run *r, int batch) {
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    int64_t steps = r->steps; /* capturing issues a step's host bookkeeping without running it */
    hpdl_status s;
    if (cudaStreamBeginCapture(g->stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
        cudaGetLastError();
        g->use_graphs = 0;
        return;
    }
    s = hpdl__gcnn_step(g, r, batch);
    r->steps = steps;
    if (cudaStreamEndCapture(g->stream, &graph) != cudaSuccess || s != HPDL_OK ||
        cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess) {
        cudaGetLastError();
        g->use_graphs = 0;
    } else {
        int k = g->next_graph;
        if (g->graphs[k].exec) cudaGraphExecDestroy(g->graphs[k].exec);
        g->graphs[k].exec = exec;
        g->graphs[k].batch = batch;
        g->next_graph = (k + 1) % HPDL_CUDA_CNN_GRAPHS;
    }
    if (graph) cudaGraphDestroy(graph);
}

/* Replays this batch size's graph; the first time, runs the step eagerly
   (which also sizes the convolutions' workspaces, which a capture cannot
   allocate) and captures it for the next. */
HPDL_CUDA_API hpdl_status hpdl__gcnn_run_step(hpdl_cuda_cnn *g, hpdl_cnn_run *r, int batch) {
    int k;
    hpdl_status s;
    if (g->use_graphs)
        for (k = 0; k < HPDL_CUDA_CNN_GRAPHS; k++)
            if (g->graphs[k].exec && g->graphs[k].batch == batch) {
                HPDL_CUDA_TRY(cudaGraphLaunch(g->graphs[k].exec, g->stream));
                r->steps++;
                return HPDL_OK;
            }
    s = hpdl__gcnn_step(g, r, batch);
    if (s == HPDL_OK && g->use_graphs) hpdl__gcnn_capture(g, r, batch);
    return s;
}

/* One training step on `batch` images X and labels (device memory, any
   address: they are copied into the staging buffers the graph reads).
   Asynchronous: the loss and the skip count come from
   hpdl_cuda_cnn_results. */
template <typename T>
static inline hpdl_status hpdl_cuda_cnn_train_batch(hpdl_cuda_cnn *g, hpdl_cnn_run *r, int batch, const T *X,
                                                    const int32_t *labels) {
    size_t features;
    hpdl_status s;
    if (!g || !r || !X || !labels || batch < 1 || batch > r->max_batch || sizeof(T) != g->be.elem_size)
        return HPDL_ERR_INVALID;
    if ((s = hpdl__gcnn_prepare(g, r)) != HPDL_OK) return s;
    features = (size_t)r->net->input.c * r->net->input.h * r->net->input.w;
    HPDL_CUDA_TRY(cudaMemcpyAsync(g->x_stage, X, (size_t)batch * features * sizeof(T), cudaMemcpyDeviceToDevice,
                                  g->stream));
    HPDL_CUDA_TRY(cudaMemcpyAsync(g->labels_stage, labels, (size_t)batch * sizeof(int32_t), cudaMemcpyDeviceToDevice,
                                  g->stream));
    return hpdl__gcnn_run_step(g, r, batch);
}

/* One thread per output element: hpdl_augment_crop_flip's draw and source. */
template <typename U>
__global__ void hpdl__augment_kernel(hpdl_tensor4 d, size_t total, const U *x, int pad, int flip, uint64_t seed,
                                     int64_t first, U *y) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x) {
        int n, c, h, w, dy, dx, mirror, sh, sw;
        hpdl__tensor4_coords(d, i, &n, &c, &h, &w);
        hpdl__augment_draw(seed, first + n, pad, flip, &dy, &dx, &mirror);
        y[i] = hpdl__augment_source(&d, h, w, dy, dx, mirror, &sh, &sw) ? x[hpdl_tensor4_offset(&d, n, c, sh, sw)] : U(0);
    }
}

/* The GPU twin of hpdl_augment_crop_flip (device buffers, on `stream`):
   the same draws, so the same images, bit for bit. 16-bit elements are
   moved as their bits. */
HPDL_CUDA_API hpdl_status hpdl_cuda_augment_crop_flip(const hpdl_tensor4 *xd, size_t elem_size, const void *x, int pad,
                                                      int flip, uint64_t seed, int64_t first_image, void *y,
                                                      cudaStream_t stream) {
    if (!hpdl__tensor4_valid(xd) || !x || !y || pad < 0 || pad > 4096 ||
        (elem_size != 2 && elem_size != 4 && elem_size != 8) || first_image < 0)
        return HPDL_ERR_INVALID;
    size_t total = hpdl_tensor4_count(xd);
    unsigned blocks = hpdl__elementwise_blocks(total);
    if (elem_size == 2)
        hpdl__augment_kernel<uint16_t><<<blocks, 256, 0, stream>>>(*xd, total, (const uint16_t *)x, pad, flip, seed,
                                                                   first_image, (uint16_t *)y);
    else if (elem_size == 4)
        hpdl__augment_kernel<float><<<blocks, 256, 0, stream>>>(*xd, total, (const float *)x, pad, flip, seed,
                                                                first_image, (float *)y);
    else
        hpdl__augment_kernel<double><<<blocks, 256, 0, stream>>>(*xd, total, (const double *)x, pad, flip, seed,
                                                                 first_image, (double *)y);
    HPDL_CUDA_TRY_LAUNCH();
    return HPDL_OK;
}

/* Copies images order[i0 .. i0+rows) of X (and their labels) into the stage. */
template <typename T>
__global__ void hpdl__cnn_gather_kernel(int rows, int64_t features, const int32_t *order, const T *X,
                                        const int32_t *labels, T *x_stage, int32_t *labels_stage) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < rows * features;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t row = i / features, src = order[row];
        x_stage[i] = X[src * features + i % features];
        if (i % features == 0) labels_stage[row] = labels[src];
    }
}

/* An epoch's order: 0..n-1 shuffled with `seed` (hpdl_rng_shuffle_index). */
HPDL_CUDA_API hpdl_status hpdl__gcnn_upload_order(hpdl_cuda_cnn *g, int64_t n, uint64_t seed) {
    hpdl_rng rng;
    int32_t *order;
    int64_t i;
    hpdl_status s;
    if (n > INT32_MAX) return HPDL_ERR_UNSUPPORTED;
    if (!(order = (int32_t *)hpdl_alloc((size_t)n, sizeof *order))) return HPDL_ERR_NOMEM;
    for (i = 0; i < n; i++) order[i] = (int32_t)i;
    hpdl_rng_seed(&rng, seed);
    hpdl_rng_shuffle_index(&rng, order, n);
    if (g->order_len < n) {
        cudaFree(g->d_order);
        g->d_order = (int32_t *)hpdl__gcnn_alloc(g, (size_t)n * sizeof *order);
        g->order_len = g->d_order ? n : 0;
    }
    s = g->d_order ? hpdl__gcnn_copy<cudaMemcpyHostToDevice>(g, g->d_order, order, (size_t)n * sizeof *order)
                   : HPDL_ERR_NOMEM;
    HPDL_FREE(order);
    return s;
}

/* One epoch over n images X and labels (device memory, resident) in a
   fresh order from `seed`, batches of r->max_batch (the last one shorter),
   augmented when g->augment_pad or g->augment_flip is set (the draws from
   seed and each image's place in the epoch).
   Asynchronous; hpdl_cuda_cnn_results gives the mean loss. */
template <typename T>
static inline hpdl_status hpdl_cuda_cnn_train_epoch(hpdl_cuda_cnn *g, hpdl_cnn_run *r, int64_t n, const T *X,
                                                    const int32_t *labels, uint64_t seed) {
    int64_t i0, features;
    hpdl_status s;
    if (!g || !r || !X || !labels || n < 1 || sizeof(T) != g->be.elem_size) return HPDL_ERR_INVALID;
    if ((s = hpdl__gcnn_prepare(g, r)) != HPDL_OK || (s = hpdl__gcnn_upload_order(g, n, seed)) != HPDL_OK) return s;
    HPDL_CUDA_TRY(cudaMemsetAsync(g->d_loss_sum, 0, sizeof(double), g->stream));
    features = (int64_t)r->net->input.c * r->net->input.h * r->net->input.w;
    for (i0 = 0; s == HPDL_OK && i0 < n; i0 += r->max_batch) {
        int rows = (int)(n - i0 < r->max_batch ? n - i0 : r->max_batch);
        int augment = g->augment_pad > 0 || g->augment_flip;
        if (rows < 2 && r->net->state_count) break; /* batch norm needs two values per channel */
        hpdl__cnn_gather_kernel<T><<<hpdl__elementwise_blocks((size_t)(rows * features)), 256, 0, g->stream>>>(
            rows, features, g->d_order + i0, X, labels, (T *)(augment ? g->x_gather : g->x_stage), g->labels_stage);
        HPDL_CUDA_TRY_LAUNCH();
        if (augment) {
            hpdl_tensor4 d = hpdl__cnn_tensor(r->net, rows, r->net->input);
            s = hpdl_cuda_augment_crop_flip(&d, sizeof(T), g->x_gather, g->augment_pad, g->augment_flip, seed, i0,
                                            g->x_stage, g->stream);
        }
        if (s == HPDL_OK) s = hpdl__gcnn_run_step(g, r, rows);
    }
    return s;
}

/* The twin check: `steps` training steps of net from the same parameters
   and state (hpdl_cnn_init's arrays) on the CPU backend of T and on a fresh
   GPU backend, on `batch` images X and labels in host memory; *difference:
   the largest relative Frobenius difference of a parameter tensor after
   (hpdl_cnn_param_difference), *layer (may be NULL) where it is. */
template <typename T>
static inline hpdl_status hpdl_cuda_cnn_twin_difference(const hpdl_cnn *net, const hpdl_cnn_optimizer *opt,
                                                        const double *params, const double *state, int batch,
                                                        const T *X, const int32_t *labels, int steps,
                                                        double *difference, int *layer) {
    static_assert(hpdl__is_master_type<T>::value, "hpdl: the CPU twin runs float or double");
    const hpdl_cnn_backend *cpu = sizeof(T) == sizeof(double) ? hpdl_cnn_backend_cpu_f64() : hpdl_cnn_backend_cpu_f32();
    if (!net || net->n_layers < 1 || !opt || !params || !X || !labels || batch < 1 || steps < 1 || !difference)
        return HPDL_ERR_INVALID;
    size_t x_bytes = (size_t)batch * (size_t)hpdl__shape_count(net->input) * sizeof(T);
    double *got = (double *)hpdl_alloc((size_t)net->param_count, sizeof(double));
    double *want = (double *)hpdl_alloc((size_t)net->param_count, sizeof(double));
    T *dX = NULL;
    int32_t *dlabels = NULL;
    hpdl_cnn_run on_cpu, on_gpu;
    hpdl_cuda_cnn g;
    hpdl_status s = got && want ? HPDL_OK : HPDL_ERR_NOMEM;
    memset(&on_cpu, 0, sizeof on_cpu);
    memset(&on_gpu, 0, sizeof on_gpu);
    memset(&g, 0, sizeof g);
    if (s == HPDL_OK) s = hpdl_cuda_alloc((void **)&dX, x_bytes);
    if (s == HPDL_OK) s = hpdl_cuda_alloc((void **)&dlabels, (size_t)batch * sizeof(int32_t));
    if (s == HPDL_OK) s = hpdl_cuda_to_device(dX, X, x_bytes, 0);
    if (s == HPDL_OK) s = hpdl_cuda_to_device(dlabels, labels, (size_t)batch * sizeof(int32_t), 0);
    if (s == HPDL_OK) s = hpdl_cuda_cnn_create<T>(&g, HPDL_CONV_AUTO);
    if (s == HPDL_OK) s = hpdl_cnn_run_create(&on_cpu, net, cpu, batch, opt);
    if (s == HPDL_OK) s = hpdl_cnn_run_create(&on_gpu, net, &g.be, batch, opt);
    if (s == HPDL_OK) s = hpdl_cnn_set_params(&on_cpu, params, state);
    if (s == HPDL_OK) s = hpdl_cnn_set_params(&on_gpu, params, state);
    for (int k = 0; s == HPDL_OK && k < steps; k++) {
        s = hpdl_cnn_train_step(&on_cpu, batch, X, labels);
        if (s == HPDL_OK) s = hpdl_cuda_cnn_train_batch<T>(&g, &on_gpu, batch, dX, dlabels);
    }
    if (s == HPDL_OK) s = hpdl_cnn_get_params(&on_cpu, want, NULL);
    if (s == HPDL_OK) s = hpdl_cnn_get_params(&on_gpu, got, NULL);
    if (s == HPDL_OK) *difference = hpdl_cnn_param_difference(net, got, want, layer);
    hpdl_cnn_run_destroy(&on_cpu);
    hpdl_cnn_run_destroy(&on_gpu);
    hpdl_cuda_cnn_destroy(&g);
    hpdl_cuda_free(dX);
    hpdl_cuda_free(dlabels);
    HPDL_FREE(got);
    HPDL_FREE(want);
    return s;
}

/* The course's question about layer timings: each layer's forward pass
   (inference) timed alone, `reps` times after one warm-up, median into
   layer_ms[i] (r->net->n_layers values), and the whole forward pass timed
   the same way into *whole_ms. The sum of the layers is not the whole:
   every timed piece pays its own launch and its own cold start, which a
   pass of back-to-back kernels shares (notes/cnn.md). X: batch images in
   device memory. Not inside a graph capture. */
HPDL_CUDA_API hpdl_status hpdl_cuda_cnn_layer_times(hpdl_cuda_cnn *g, hpdl_cnn_run *r, int batch, const void *X,
                                                    int reps, double *layer_ms, double *whole_ms) {
    cudaEvent_t start, stop;
    double *times;
    hpdl_status s = HPDL_OK;
    int i, k;
    if (!g || !r || r->be != &g->be || !X || batch < 1 || batch > r->max_batch || reps < 1 || !layer_ms || !whole_ms)
        return HPDL_ERR_INVALID;
    if (!(times = (double *)hpdl_alloc((size_t)reps, sizeof *times))) return HPDL_ERR_NOMEM;
    HPDL_CUDA_TRY(cudaEventCreate(&start));
    HPDL_CUDA_TRY(cudaEventCreate(&stop));
    if ((s = hpdl_cnn_forward(r, batch, X, 0)) == HPDL_OK) /* warm-up: every layer's input exists */
        for (i = -1; s == HPDL_OK && i < r->net->n_layers; i++) {
            hpdl_stats st;
            for (k = 0; s == HPDL_OK && k < reps; k++) {
                float ms = 0;
                cudaEventRecord(start, g->stream);
                s = i < 0 ? hpdl_cnn_forward(r, batch, X, 0) : hpdl__cnn_forward_layer(r, i, batch, X, 0);
                cudaEventRecord(stop, g->stream);
                if (cudaEventSynchronize(stop) != cudaSuccess || cudaEventElapsedTime(&ms, start, stop) != cudaSuccess)
                    s = HPDL_ERR_CUDA;
                times[k] = ms;
            }
            if (s == HPDL_OK) s = hpdl_stats_compute(times, reps, &st);
            if (s == HPDL_OK) *(i < 0 ? whole_ms : layer_ms + i) = st.median;
        }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    HPDL_FREE(times);
    return s;
}

/* Waits for the device; *loss_sum: the training losses summed since the
   last epoch started (divide by its steps), *skipped: steps skipped so far
   because the loss or a gradient was not finite. Either may be NULL. */
HPDL_CUDA_API hpdl_status hpdl_cuda_cnn_results(hpdl_cuda_cnn *g, double *loss_sum, int64_t *skipped) {
    unsigned long long counts[3];
    double sum = 0;
    if (!g) return HPDL_ERR_INVALID;
    HPDL_CUDA_TRY(cudaMemcpyAsync(counts, g->d_counts, sizeof counts, cudaMemcpyDeviceToHost, g->stream));
    HPDL_CUDA_TRY(cudaMemcpyAsync(&sum, g->d_loss_sum, sizeof sum, cudaMemcpyDeviceToHost, g->stream));
    HPDL_CUDA_TRY(cudaStreamSynchronize(g->stream));
    if (loss_sum) *loss_sum = sum;
    if (skipped) *skipped = (int64_t)counts[1];
    return HPDL_OK;
}

/* A fresh GPU backend of T and a run of net on it for batches of up to
   `batch`, from these parameters and state. */
template <typename T>
static inline hpdl_status hpdl__gcnn_start(hpdl_cuda_cnn *g, hpdl_cnn_run *r, const hpdl_cnn *net,
                                           const hpdl_cnn_optimizer *opt, int batch, const double *params,
                                           const double *state) {
    hpdl_status s = hpdl_cuda_cnn_create<T>(g, HPDL_CONV_AUTO);
    if (s == HPDL_OK) s = hpdl_cnn_run_create(r, net, &g->be, batch, opt);
    return s == HPDL_OK ? hpdl_cnn_set_params(r, params, state) : s;
}

/* The mixed-precision check: `steps` training steps of net from the same
   parameters and state (hpdl_cnn_init's arrays) on two fresh GPU
   backends, f32 and mixed precision with T (f16 or bf16), on `batch`
   images X (f32) and labels in host memory. *loss_difference: the largest
   relative difference of a step's loss; *param_difference (may be NULL):
   the largest relative Frobenius difference of a parameter tensor after.
   The mixed run's loss scale starts at 2^10, not 2^16: the scaler's first
   overflows would skip steps and put the two runs steps apart, and this
   check is about the arithmetic. A step skipped all the same:
   HPDL_ERR_NUMERIC. */
template <typename T>
static inline hpdl_status hpdl_cuda_cnn_mixed_difference(const hpdl_cnn *net, const hpdl_cnn_optimizer *opt,
                                                         const double *params, const double *state, int batch,
                                                         const float *X, const int32_t *labels, int steps,
                                                         double *loss_difference, double *param_difference) {
    typedef typename hpdl__dev<T>::type D;
    static_assert(sizeof(D) == 2 && hpdl__is_float_type<D>::value, "hpdl: the mixed-precision check runs f16 or bf16");
    if (!net || net->n_layers < 1 || !opt || !params || !X || !labels || batch < 1 || steps < 1 || !loss_difference)
        return HPDL_ERR_INVALID;
    int64_t count = (int64_t)batch * hpdl__shape_count(net->input), skipped = 0;
    double *got = (double *)hpdl_alloc((size_t)net->param_count, sizeof(double));
    double *want = (double *)hpdl_alloc((size_t)net->param_count, sizeof(double));
    float *dX = NULL;
    D *dX16 = NULL;
    int32_t *dlabels = NULL;
    hpdl_cnn_run r32, r16;
    hpdl_cuda_cnn g32, g16;
    hpdl_status s = got && want ? HPDL_OK : HPDL_ERR_NOMEM;
    memset(&r32, 0, sizeof r32); memset(&r16, 0, sizeof r16);
    memset(&g32, 0, sizeof g32); memset(&g16, 0, sizeof g16);
    if (s == HPDL_OK) s = hpdl_cuda_alloc((void **)&dX, (size_t)count * sizeof(float));
    if (s == HPDL_OK) s = hpdl_cuda_alloc((void **)&dX16, (size_t)count * sizeof(D));
    if (s == HPDL_OK) s = hpdl_cuda_alloc((void **)&dlabels, (size_t)batch * sizeof(int32_t));
    if (s == HPDL_OK) s = hpdl_cuda_to_device(dX, X, (size_t)count * sizeof(float), 0);
    if (s == HPDL_OK) s = hpdl_cuda_to_device(dlabels, labels, (size_t)batch * sizeof(int32_t), 0);
    if (s == HPDL_OK) {
        hpdl__convert_kernel<D, float><<<hpdl__grid_for(count, 256), 256>>>(count, dX, dX16);
        s = cudaGetLastError() == cudaSuccess ? HPDL_OK : HPDL_ERR_CUDA;
    }
    if (s == HPDL_OK) s = hpdl__gcnn_start<float>(&g32, &r32, net, opt, batch, params, state);
    if (s == HPDL_OK) s = hpdl__gcnn_start<D>(&g16, &r16, net, opt, batch, params, state);
    if (s == HPDL_OK) s = hpdl_cuda_cnn_set_loss_scale(&g16, 1024.0);
    *loss_difference = 0;
    for (int k = 0; s == HPDL_OK && k < steps; k++) {
        double l32 = 0, l16 = 0, d;
        s = hpdl_cuda_cnn_train_batch<float>(&g32, &r32, batch, dX, dlabels);
        if (s == HPDL_OK) s = hpdl_cuda_cnn_train_batch<D>(&g16, &r16, batch, dX16, dlabels);
        if (s == HPDL_OK) s = hpdl_cnn_loss(&r32, &l32);
        if (s == HPDL_OK) s = hpdl_cnn_loss(&r16, &l16);
        d = fabs(l16 - l32) / fabs(l32);
        if (s == HPDL_OK && !(d <= *loss_difference)) *loss_difference = d; /* NaN stays */
    }
    if (s == HPDL_OK) s = hpdl_cuda_cnn_results(&g16, NULL, &skipped);
    if (s == HPDL_OK && skipped) s = HPDL_ERR_NUMERIC;
    if (s == HPDL_OK && param_difference) s = hpdl_cnn_get_params(&r32, want, NULL);
    if (s == HPDL_OK && param_difference) s = hpdl_cnn_get_params(&r16, got, NULL);
    if (s == HPDL_OK && param_difference) *param_difference = hpdl_cnn_param_difference(net, got, want, NULL);
    hpdl_cnn_run_destroy(&r32); hpdl_cnn_run_destroy(&r16);
    hpdl_cuda_cnn_destroy(&g32); hpdl_cuda_cnn_destroy(&g16);
    hpdl_cuda_free(dX); hpdl_cuda_free(dX16); hpdl_cuda_free(dlabels);
    HPDL_FREE(got);
    HPDL_FREE(want);
    return s;
}

/* hpdl_cuda_cnn_train_batch_f32 hpdl_cuda_cnn_train_epoch_f32 hpdl_cuda_cnn_train_batch_f64
   hpdl_cuda_cnn_train_epoch_f64 */
#define HPDL_DEFINE_CUDA_CNN(SUFFIX, T)                                                                            \
    HPDL_CUDA_API hpdl_status hpdl_cuda_cnn_train_batch_##SUFFIX(hpdl_cuda_cnn *g, hpdl_cnn_run *r, int batch,     \
                                                                 const T *X, const int32_t *labels) {             \
        return hpdl_cuda_cnn_train_batch<T>(g, r, batch, X, labels);                                              \
    }                                                                                                             \
    HPDL_CUDA_API hpdl_status hpdl_cuda_cnn_train_epoch_##SUFFIX(hpdl_cuda_cnn *g, hpdl_cnn_run *r, int64_t n,     \
                                                                 const T *X, const int32_t *labels,               \
                                                                 uint64_t seed) {                                 \
        return hpdl_cuda_cnn_train_epoch<T>(g, r, n, X, labels, seed);                                            \
    }
HPDL_DEFINE_CUDA_CNN(f32, float)
HPDL_DEFINE_CUDA_CNN(f64, double)
/* hpdl_cuda_cnn_train_batch_f16 hpdl_cuda_cnn_train_epoch_f16 hpdl_cuda_cnn_train_batch_bf16
   hpdl_cuda_cnn_train_epoch_bf16 */
HPDL_DEFINE_CUDA_CNN(f16, hpdl_f16)
HPDL_DEFINE_CUDA_CNN(bf16, hpdl_bf16)

#endif /* HPDL_CUDA_CUH */
