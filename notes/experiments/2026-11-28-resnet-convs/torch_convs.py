"""Per-call time of ResNet-18's (CIFAR form) f32 convolutions in PyTorch at batch 128, TF32 off,
cudnn.benchmark on, as bench/pytorch/cnn_ddp.py runs them: forward, and backward (input and weight
gradients together), in NCHW (contiguous, as the bench) and channels_last. CUDA events around 50
calls after 10 warm-up calls; microseconds a call."""
import torch

torch.backends.cudnn.benchmark = True
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
shapes = [(64, 32, 64, 3, 1), (128, 16, 128, 3, 1), (256, 8, 256, 3, 1), (512, 4, 512, 3, 1)]
n = 128
print(f"{'C':>4} {'HW':>4} {'K':>4} R  {'fwd NCHW':>9} {'bwd NCHW':>9} {'fwd NHWC':>9} {'bwd NHWC':>9}")
for c, hw, k, r, stride in shapes:
    row = []
    for fmt in (torch.contiguous_format, torch.channels_last):
        conv = torch.nn.Conv2d(c, k, r, stride, r // 2, bias=False).cuda().to(memory_format=fmt)
        x = torch.randn(n, c, hw, hw, device="cuda").contiguous(memory_format=fmt).requires_grad_()
        y = conv(x)
        g = torch.randn_like(y)
        for what in ("fwd", "bwd"):
            def call():
                if what == "fwd":
                    with torch.no_grad():
                        conv(x)
                else:
                    torch.autograd.grad(y, (x, conv.weight), g, retain_graph=True)
            for _ in range(10):
                call()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(50):
                call()
            end.record()
            torch.cuda.synchronize()
            row.append(start.elapsed_time(end) / 50 * 1000)
    print(f"{c:4d} {hw:4d} {k:4d} {r}  " + " ".join(f"{v:9.1f}" for v in row), flush=True)
