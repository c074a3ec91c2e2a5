"""PyTorch DDP anchor for bench/cnn_dp: weak scaling of the same two CNNs
(bench/pytorch/cnn.py's small CNN and CIFAR ResNet-18) under
DistributedDataParallel, one GPU per process, the same work as hpdl's side.

Work: N random images 3x32x32 (torch.randn, resident on every GPU) with
random labels 0..9; at step s, rank r trains on images
[(s*P + r)*B, +B) (wrapping round), cross-entropy loss, SGD(lr 0.01, momentum
0.9, weight decay 5e-4), float32 with TF32 off, cudnn.benchmark on.
DDP: bucket_cap_mb (--bucket-mb, 25), broadcast_buffers (--bn broadcast, the
default; local: False).

Per network and batch, after --warmup steps each (all times are wall clock
of whole steps, CUDA-synchronised, the slowest rank's):
  compute_ms  a step of the bare model (no DDP: no reduction, no broadcast)
  step_ms     a step under DDP
  alone_ms    one all_reduce of a buffer the size of all gradients
The small CNN times one epoch's steps, ceil(N/(P*B)); ResNet-18 --steps (30;
0: the epoch). Rank 0 prints one line per combination:
  pytorch_ddp net resnet18 batch 32 ranks 2 step_ms 9.876 compute_ms 9.1 alone_ms 0.51
then 'pytorch_ddp done'; versions go to stderr. Without torch, CUDA or NCCL
it prints 'pytorch_ddp skipped: <why>' and exits 0.

    python3 -m torch.distributed.run --standalone --nproc_per_node 2 \\
        bench/pytorch/cnn_ddp.py --net small,resnet18 --batch 32,128
Under mpirun it takes its rank from Open MPI's environment instead."""
import argparse
import os
import sys
import time

try:
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP
except ImportError as e:
    print(f"pytorch_ddp skipped: torch is not installed ({e})")
    sys.exit(0)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cnn import cpu_model, resnet18, small  # noqa: E402  (the same networks as bench/cnn)

SHAPE = (3, 32, 32)
ALONE_REPS = 20


def ranks_from_env():
    """RANK/WORLD_SIZE/LOCAL_RANK from torch.distributed.run, else from mpirun, else one process."""
    env = os.environ
    if "RANK" not in env and "OMPI_COMM_WORLD_RANK" in env:
        env["RANK"] = env["OMPI_COMM_WORLD_RANK"]
        env["WORLD_SIZE"] = env["OMPI_COMM_WORLD_SIZE"]
        env["LOCAL_RANK"] = env.get("OMPI_COMM_WORLD_LOCAL_RANK", env["RANK"])
    env.setdefault("RANK", "0")
    env.setdefault("WORLD_SIZE", "1")
    env.setdefault("LOCAL_RANK", "0")
    env.setdefault("MASTER_ADDR", "127.0.0.1")
    env.setdefault("MASTER_PORT", "29517")
    return int(env["RANK"]), int(env["WORLD_SIZE"]), int(env["LOCAL_RANK"])


def timed(count, step):
    """ms per step(s) for s in 0..count-1, the slowest rank's."""
    torch.cuda.synchronize()
    dist.barrier()
    t0 = time.perf_counter()
    for s in range(count):
        step(s)
    torch.cuda.synchronize()
    t = torch.tensor([1e3 * (time.perf_counter() - t0) / count], device="cuda")
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.item()


def measure(net, batch, steps, warmup, a, X, y, rank, world):
    torch.manual_seed(0)
    model = (small(*SHAPE) if net == "small" else resnet18(SHAPE[0])).cuda()
    n = X.shape[0]

    def trainer(m, opt):
        def step(s):
            i = ((s * world + rank) * batch) % (n - batch + 1)
            opt.zero_grad(set_to_none=True)
            nn.functional.cross_entropy(m(X[i:i + batch]), y[i:i + batch]).backward()
            opt.step()
        return step

    bare = trainer(model, torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4))
    timed(warmup, bare)
    compute = timed(steps, bare)
    ddp = DDP(model, device_ids=[torch.cuda.current_device()], bucket_cap_mb=a.bucket_mb,
              broadcast_buffers=a.bn == "broadcast")
    parallel = trainer(ddp, torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4))
    timed(warmup, parallel)
    step = timed(steps, parallel)
    flat = torch.zeros(sum(p.numel() for p in model.parameters()), device="cuda")
    timed(2, lambda s: dist.all_reduce(flat))
    alone = timed(ALONE_REPS, lambda s: dist.all_reduce(flat))
    return step, compute, alone


def main():
    p = argparse.ArgumentParser(description="PyTorch DDP weak scaling (anchor for bench/cnn_dp)")
    p.add_argument("--net", default="small,resnet18")
    p.add_argument("--batch", default="32,128")
    p.add_argument("--steps", type=int, default=30, help="ResNet-18's timed steps (0: the epoch)")
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--bn", default="broadcast", choices=("broadcast", "local"))
    p.add_argument("--bucket-mb", type=int, default=25)
    p.add_argument("--images", type=int, default=50000)
    a = p.parse_args()
    nets, batches = a.net.split(","), [int(v) for v in a.batch.split(",")]
    if any(net not in ("small", "resnet18") for net in nets) or min(batches) < 2 or a.steps < 0 or a.warmup < 1:
        p.error("--net takes small and/or resnet18, batches are at least 2, --steps >= 0, --warmup >= 1")
    if not torch.cuda.is_available() or not dist.is_nccl_available():
        print("pytorch_ddp skipped: no CUDA GPU or no NCCL")
        return
    rank, world, local = ranks_from_env()
    torch.cuda.set_device(local)
    dist.init_process_group("nccl")
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    if rank == 0:
        print(f"pytorch_ddp: torch {torch.__version__}, NCCL {'.'.join(map(str, torch.cuda.nccl.version()))}, "
              f"{world} x {torch.cuda.get_device_name()}, {cpu_model()}", file=sys.stderr, flush=True)
    torch.manual_seed(2026)
    X = torch.randn(a.images, *SHAPE, device="cuda")
    y = torch.randint(0, 10, (a.images,), device="cuda")
    for net in nets:
        for b in batches:
            epoch = -(-a.images // (world * b))
            steps = epoch if net == "small" or a.steps == 0 else a.steps
            step, compute, alone = measure(net, b, steps, a.warmup, a, X, y, rank, world)
            if rank == 0:
                print(f"pytorch_ddp net {net} batch {b} ranks {world} step_ms {step:.4f} compute_ms {compute:.4f} "
                      f"alone_ms {alone:.4f}", flush=True)
    if rank == 0:
        print("pytorch_ddp done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
