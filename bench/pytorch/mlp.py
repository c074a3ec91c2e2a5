"""PyTorch eager anchor for bench/mlp: one epoch of 60000 random samples
(on the GPU, f32, 784 features, 10 classes) through 784-H-10 with ReLU, plain
SGD (lr 0.05, no momentum, no weight decay), mini-batches drawn by a fresh
randperm each epoch, cross-entropy loss: the same work as hpdl's epoch.

    python3 bench/pytorch/mlp.py --hidden 512 --batch 32 [--amp]

--hidden and --batch take comma lists (every pair is run). --amp runs the
products under torch.autocast(float16) with a GradScaler. Prints one line per
pair: 'pytorch_mlp hidden H batch B amp 0|1 epoch_ms X' (median of the timed
epochs after one warm-up epoch, CUDA-synchronised). Exits 3 without torch."""
import argparse
import statistics
import sys
import time

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print("pytorch_mlp: torch is not installed")
    sys.exit(3)

N, FEATURES, CLASSES = 60000, 784, 10


def epoch(model, opt, scaler, X, y, batch, amp):
    perm = torch.randperm(N, device=X.device)
    for i in range(0, N, batch):
        idx = perm[i:i + batch]
        xb, yb = X[idx], y[idx]
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.float16, enabled=amp):
            loss = F.cross_entropy(model(xb), yb)
        if amp:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()


def time_epochs(hidden, batch, amp, reps):
    torch.manual_seed(0)
    X = torch.rand(N, FEATURES, device="cuda")
    y = torch.randint(0, CLASSES, (N,), device="cuda")
    model = torch.nn.Sequential(torch.nn.Linear(FEATURES, hidden), torch.nn.ReLU(),
                                torch.nn.Linear(hidden, CLASSES)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    scaler = torch.amp.GradScaler("cuda", enabled=amp)
    epoch(model, opt, scaler, X, y, batch, amp)  # warm-up: kernels chosen, caches filled
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        epoch(model, opt, scaler, X, y, batch, amp)
        torch.cuda.synchronize()
        times.append(1e3 * (time.perf_counter() - t0))
    return statistics.median(times)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--hidden", default="512")
    p.add_argument("--batch", default="32")
    p.add_argument("--amp", action="store_true")
    p.add_argument("--reps", type=int, default=3)
    a = p.parse_args()
    if not torch.cuda.is_available():
        print("pytorch_mlp: no CUDA GPU")
        sys.exit(3)
    print(f"pytorch_mlp: torch {torch.__version__}, {torch.cuda.get_device_name()}, "
          f"tf32 matmul {torch.backends.cuda.matmul.allow_tf32}", flush=True)
    for h in (int(v) for v in a.hidden.split(",")):
        for b in (int(v) for v in a.batch.split(",")):
            ms = time_epochs(h, b, a.amp, a.reps)
            print(f"pytorch_mlp hidden {h} batch {b} amp {int(a.amp)} epoch_ms {ms:.3f}", flush=True)


if __name__ == "__main__":
    main()
