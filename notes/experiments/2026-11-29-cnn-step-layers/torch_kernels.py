"""Where PyTorch's AMP training step of ResNet-18 (bench/pytorch/cnn.py's model, channels-last)
goes on the GPU: torch.profiler's CUDA kernel times over REPS steps, summed by kind from the
kernel names, per step.

run (repository root): python3 notes/experiments/2026-11-29-cnn-step-layers/torch_kernels.py 2048
"""
import re
import sys

import torch
import torch.nn as nn
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, "bench/pytorch")
from cnn import resnet18  # noqa: E402  (the bench's own model)

REPS = 5
KINDS = [  # first match wins
    ("conv", r"conv|xmma|implicit|wgrad|dgrad|fprop|sm90_|cutlass|gemm|winograd|nhwc.*kernel.*Conv"),
    ("batch norm", r"batch_?norm|bn_|welford|cudnn.*bn"),
    ("relu", r"relu|threshold|clamp"),
    ("residual add", r"add|AddFunctor|CUDAFunctor_add"),
    ("update (SGD, scaler)", r"foreach|multi_tensor|_amp_|unscale|sgd|non_finite"),
    ("loss", r"softmax|nll|cross_entropy|log_softmax"),
    ("pools", r"pool|reduce|mean|sum"),
    ("copies and casts", r"copy|cast|convert|elementwise|fill|vectorized"),
]


def kind(name):
    for k, pattern in KINDS:
        if re.search(pattern, name, re.IGNORECASE):
            return k
    return "other"


def step(model, opt, scaler, x, y):
    opt.zero_grad(set_to_none=True)
    with torch.autocast("cuda", dtype=torch.float16):
        loss = nn.functional.cross_entropy(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()


def main():
    batch = int(sys.argv[1]) if len(sys.argv) > 1 else 2048
    torch.manual_seed(0)
    model = resnet18(3).cuda().to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
    scaler = torch.amp.GradScaler("cuda")
    x = torch.randn(batch, 3, 32, 32, device="cuda").contiguous(memory_format=torch.channels_last)
    y = torch.randint(0, 10, (batch,), device="cuda")
    for _ in range(10):
        step(model, opt, scaler, x, y)
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(REPS):
        step(model, opt, scaler, x, y)
    stop.record()
    torch.cuda.synchronize()
    whole = start.elapsed_time(stop) / REPS
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(REPS):
            step(model, opt, scaler, x, y)
        torch.cuda.synchronize()
    sums, names = {}, {}
    for e in prof.events():
        if e.device_type != torch.autograd.DeviceType.CUDA:
            continue
        k = kind(e.name)
        us = getattr(e, "device_time_total", None)
        us = e.cuda_time_total if us is None else us
        sums[k] = sums.get(k, 0.0) + us / 1e3 / REPS
        names.setdefault(k, {})
        names[k][e.name] = names[k].get(e.name, 0.0) + us / 1e3 / REPS
    total = sum(sums.values())
    print(f"PyTorch {torch.__version__} AMP ResNet-18 3x32x32 channels-last, batch {batch}: "
          f"GPU kernel ms per step (mean of {REPS})")
    for k, v in sorted(sums.items(), key=lambda kv: -kv[1]):
        print(f"{k:22s} {v:9.3f} {100 * v / total:6.1f}%")
    print(f"{'sum of kernels':22s} {total:9.3f}\n{'whole step (events)':22s} {whole:9.3f}")
    print("\nlargest kernels of each kind:")
    for k in sorted(names):
        for n, v in sorted(names[k].items(), key=lambda kv: -kv[1])[:4]:
            print(f"  {k:20s} {v:8.3f}  {n[:110]}")


if __name__ == "__main__":
    main()
