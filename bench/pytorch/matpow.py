"""A^n + B^n in PyTorch, the anchor of bench/matpow (same work, same GPUs).

usage: python3 bench/pytorch/matpow.py [N=10000] [n=10]

torch.linalg.matrix_power (repeated squaring, 4 products for n = 10) on
each matrix, matrix j on GPU j % G, then the powers summed on GPU 0. Inputs
are made on the GPUs first; the time covers the powers and the sum
(synchronised), median of several runs after a warm-up. Modes: f32 with
TF32 off, tf32 (TF32 on), f16. Prints one line per result:
    pytorch <mode> <gpus> <seconds>
"""
import statistics
import sys
import time

import torch


def make_inputs(n, gpus, dtype):
    mats = []
    for j in range(2):
        dev = torch.device("cuda", j % gpus)
        gen = torch.Generator(device=dev).manual_seed(1000 + j)
        a = (torch.rand(n, n, device=dev, generator=gen) * 2 - 1) * (3.0 / n) ** 0.5
        mats.append(a.to(dtype))
    return mats


def sum_of_powers(mats, power):
    powers = [torch.linalg.matrix_power(m, power) for m in mats]  # launches overlap across GPUs
    total = powers[0]
    for p in powers[1:]:
        total = total + p.to(total.device, non_blocking=True)
    return total


def sync(gpus):
    for d in range(gpus):
        torch.cuda.synchronize(d)


def median_seconds(mats, power, gpus, reps):
    sum_of_powers(mats, power)  # warm-up: cuBLAS handles, kernels chosen
    sync(gpus)
    times = []
    for _ in range(reps):
        sync(gpus)
        t0 = time.perf_counter()
        sum_of_powers(mats, power)
        sync(gpus)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
    power = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    if not torch.cuda.is_available():
        print("pytorch: no GPU")
        return
    all_gpus = min(torch.cuda.device_count(), 2)
    modes = [("f32", torch.float32, False, 5), ("tf32", torch.float32, True, 10), ("f16", torch.float16, False, 10)]
    for name, dtype, tf32, reps in modes:
        torch.backends.cuda.matmul.allow_tf32 = tf32
        for gpus in sorted({1, all_gpus}):
            mats = make_inputs(n, gpus, dtype)
            sec = median_seconds(mats, power, gpus, reps)
            print(f"pytorch {name} {gpus} {sec:.6f}", flush=True)
            del mats
            torch.cuda.empty_cache()
    torch.backends.cuda.matmul.allow_tf32 = False


if __name__ == "__main__":
    main()
