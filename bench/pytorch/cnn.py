"""PyTorch eager anchor for bench/cnn: the epoch time of the same two CNNs that
hpdl trains, on the same synthetic work, so hpdl's numbers have a reference.

Work per epoch: N random images (torch.randn, resident on the GPU) with random
labels 0..9, a fresh randperm, mini-batches X[idx[i:i+B]] (the last, partial
batch is kept), cross-entropy loss, SGD(lr 0.01, momentum 0.9, weight decay
5e-4), cudnn.benchmark on. Models:
  small     conv5(6)-relu-pool2-conv5(16)-relu-pool2-fc120-relu-fc84-relu-fc10
  resnet18  CIFAR ResNet-18: conv3x3(64)+BN+ReLU stem, no max-pool, 4 stages of
            2 BasicBlocks (64,128,256,512), global average pool, fc10
Modes (TF32 off in both): amp 0 = float32; amp 1 = autocast(float16) + GradScaler,
model and images in channels_last.

    python3 bench/pytorch/cnn.py --net small,resnet18 --batch 32,128 --amp 0,1

With --infer (the anchor of bench/quantize's CNN rows) it times inference
instead: model.eval() in float16, channels_last, torch.inference_mode(), one
forward of a batch of random images, 10 warm-up passes, then the median of 50
CUDA-event-timed passes, one line per net and batch:
  pytorch_cnn_infer net resnet18 batch 256 ms 12.345 images_per_s 20736.8

Flags: --net, --batch and --amp take comma lists (every combination is run);
--shape CxHxW (3x32x32 or 1x28x28), --epochs timed epochs (default 1),
--images images per epoch (default 50000). After a warm-up of 50 steps (and
one partial batch, so cudnn has seen every shape) the timed epochs are
CUDA-synchronised and their mean is reported, one line per combination:
  pytorch_cnn net small batch 32 amp 0 epoch_ms 2850.123 images_per_s 17543.2
then 'pytorch_cnn done'. Torch version, GPU and CPU go to stderr. Without
torch or a CUDA GPU it prints 'pytorch_cnn skipped: <why>' and exits 0."""
import argparse
import sys
import time

try:
    import torch
    import torch.nn as nn
except ImportError as e:
    print(f"pytorch_cnn skipped: torch is not installed ({e})")
    sys.exit(0)

WARMUP_STEPS = 50


def small(c, h, w):
    fh, fw = ((h - 4) // 2 - 4) // 2, ((w - 4) // 2 - 4) // 2
    return nn.Sequential(nn.Conv2d(c, 6, 5), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(16 * fh * fw, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
                         nn.Linear(84, 10))


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.short = nn.Identity() if stride == 1 and cin == cout else nn.Sequential(
            nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        out = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(out)) + self.short(x))


def resnet18(c):
    layers = [nn.Conv2d(c, 64, 3, 1, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU()]
    cin = 64
    for i, cout in enumerate((64, 128, 256, 512)):
        layers += [BasicBlock(cin, cout, 1 if i == 0 else 2), BasicBlock(cout, cout, 1)]
        cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 10)]
    return nn.Sequential(*layers)


def run_steps(model, opt, scaler, X, y, idx, starts, batch, amp):
    fmt = torch.channels_last if amp else torch.contiguous_format
    for i in starts:
        b = idx[i:i + batch]
        xb, yb = X[b].contiguous(memory_format=fmt), y[b]
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.float16, enabled=amp):
            loss = nn.functional.cross_entropy(model(xb), yb)
        scaler.scale(loss).backward()  # a disabled scaler passes through
        scaler.step(opt)
        scaler.update()


def time_epochs(net, batch, amp, shape, n, epochs):
    torch.manual_seed(0)
    X = torch.randn(n, *shape, device="cuda")
    y = torch.randint(0, 10, (n,), device="cuda")
    model = (small(*shape) if net == "small" else resnet18(shape[0])).cuda()
    if net == "resnet18" and shape[0] == 3:
        assert sum(p.numel() for p in model.parameters()) == 11173962
    if amp:
        X = X.contiguous(memory_format=torch.channels_last)
        model = model.to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
    scaler = torch.amp.GradScaler("cuda", enabled=amp)
    starts = list(range(0, n, batch))
    warm = starts[:WARMUP_STEPS] + ([starts[-1]] if n % batch else [])
    run_steps(model, opt, scaler, X, y, torch.randperm(n, device="cuda"), warm, batch, amp)
    torch.cuda.synchronize()
    total = 0.0
    for _ in range(epochs):
        t0 = time.perf_counter()
        run_steps(model, opt, scaler, X, y, torch.randperm(n, device="cuda"), starts, batch, amp)
        torch.cuda.synchronize()
        total += time.perf_counter() - t0
    return 1e3 * total / epochs


def time_inference(net, batch, shape):
    torch.manual_seed(0)
    model = (small(*shape) if net == "small" else resnet18(shape[0])).cuda().eval().half()
    model = model.to(memory_format=torch.channels_last)
    X = torch.randn(batch, *shape, device="cuda").half().contiguous(memory_format=torch.channels_last)
    times = []
    with torch.inference_mode():
        for _ in range(10):
            model(X)
        for _ in range(50):
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            model(X)
            stop.record()
            stop.synchronize()
            times.append(start.elapsed_time(stop))
    return sorted(times)[len(times) // 2]


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            return next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
    except (OSError, StopIteration):
        return "unknown CPU"


def main():
    p = argparse.ArgumentParser(description="PyTorch eager CNN epoch time (anchor for bench/cnn)")
    p.add_argument("--net", default="small,resnet18")
    p.add_argument("--batch", default="32,128")
    p.add_argument("--shape", default="3x32x32")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--images", type=int, default=50000)
    p.add_argument("--amp", default="0,1")
    p.add_argument("--infer", action="store_true", help="time f16 inference instead of training epochs")
    a = p.parse_args()
    nets, shape = a.net.split(","), tuple(int(v) for v in a.shape.lower().split("x"))
    if any(net not in ("small", "resnet18") for net in nets) or len(shape) != 3:
        p.error("--net takes small and/or resnet18, --shape is CxHxW")
    if not torch.cuda.is_available():
        print("pytorch_cnn skipped: no CUDA GPU")
        return
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    print(f"pytorch_cnn: torch {torch.__version__}, {torch.cuda.get_device_name()}, {cpu_model()}",
          file=sys.stderr, flush=True)
    for net in nets:
        for b in (int(v) for v in a.batch.split(",")):
            if a.infer:
                ms = time_inference(net, b, shape)
                print(f"pytorch_cnn_infer net {net} batch {b} ms {ms:.3f} images_per_s {b / (ms * 1e-3):.1f}", flush=True)
                continue
            for amp in (v.strip() == "1" for v in a.amp.split(",")):
                ms = time_epochs(net, b, amp, shape, a.images, max(1, a.epochs))
                print(f"pytorch_cnn net {net} batch {b} amp {int(amp)} epoch_ms {ms:.3f} "
                      f"images_per_s {a.images / (ms * 1e-3):.1f}", flush=True)
    print("pytorch_cnn done", flush=True)


if __name__ == "__main__":
    main()
