"""PyTorch DDP anchor for bench/dp_scaling: weak scaling of the same MLP,
784-H-10 with ReLU, under DistributedDataParallel, one GPU per process, the
same work as hpdl's side.

Work: an epoch of 60000 random samples (784 features, torch.rand, labels
0..9, resident on every GPU); each epoch a fresh permutation, the same on
every rank (a generator seeded with the epoch); global batch s = rows
[s*P*B, (s+1)*P*B) of it, rank r taking its contiguous share (as
hpdl_mpi_shard_range: the first rows % P ranks one row more), so the last,
short batch is kept; cross-entropy loss (mean over the rank's rows), plain
SGD (lr 0.05, no momentum, no weight decay), float32 with TF32 off. DDP
averages the gradients in its default buckets (bucket_cap_mb --bucket-mb,
25; the first one 1 MB): for 784-2048-10 W2, b2 and b1 (90 kB) while
the first layer's dW is computed, then the first layer's 6.4 MB.

Per hidden width H and batch per GPU B (epoch times are wall clock,
CUDA-synchronised, the slowest rank's; median of --reps epochs after one
warm-up epoch, as bench/dp_scaling):
  epoch1_ms  rank 0 alone, the bare model (no DDP), all 60000 samples at
             batch B: ceil(60000/B) steps (the other ranks wait)
  epochp_ms  all P ranks under DDP, 60000 samples split: ceil(60000/(P B)) steps
so the weak-scaling efficiency is E = epoch1 / (P epochP), as hpdl's. Rank 0
prints one line per pair:
  pytorch_mlp_ddp hidden 2048 batch 512 ranks 2 epoch1_ms 25.1 epochp_ms 14.2
then 'pytorch_mlp_ddp done'; versions go to stderr. Without torch, CUDA, NCCL
or enough GPUs it prints 'pytorch_mlp_ddp skipped: <why>' and exits 0.

    python3 bench/pytorch/mlp_ddp.py --spawn 2 --hidden 2048 --batch 512,3000
--spawn N starts N processes itself (python3 -m torch.distributed.run
--standalone), after the checks above; under torch.distributed.run or
mpirun, leave it out."""
import argparse
import os
import statistics
import sys

try:
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP
except ImportError as e:
    print(f"pytorch_mlp_ddp skipped: torch is not installed ({e})")
    sys.exit(0)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cnn import cpu_model  # noqa: E402
from cnn_ddp import ranks_from_env, timed  # noqa: E402  (the same launch and timing as the CNN's anchor)

N, FEATURES, CLASSES, LR = 60000, 784, 10, 0.05


def share(rows, rank, world):
    """[begin, end) of rank's contiguous share of rows (hpdl_mpi_shard_range)."""
    base, extra = divmod(rows, world)
    begin = rank * base + min(rank, extra)
    return begin, begin + base + (1 if rank < extra else 0)


def epoch(model, opt, X, y, batch, e, rank, world):
    gen = torch.Generator(device="cuda")
    gen.manual_seed(e)
    perm = torch.randperm(N, device="cuda", generator=gen)
    for g0 in range(0, N, world * batch):
        b0, b1 = share(min(world * batch, N - g0), rank, world)
        idx = perm[g0 + b0:g0 + b1]
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(X[idx]), y[idx]).backward()
        opt.step()


def median_epoch_ms(model, X, y, batch, reps, rank, world, active):
    """Median epoch over reps after a warm-up; ranks that are not active
    join the timing's collectives with an empty step."""
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    run = (lambda e: epoch(model, opt, X, y, batch, e, rank, world)) if active else (lambda e: None)
    timed(1, run)  # warm-up: kernels chosen, NCCL buckets built
    return statistics.median(timed(1, lambda s, e=e: run(e)) for e in range(1, reps + 1))


def mlp(hidden):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(FEATURES, hidden), torch.nn.ReLU(),
                               torch.nn.Linear(hidden, CLASSES)).cuda()


def spawn(n):
    """Re-runs this script with the same arguments under torch.distributed.run."""
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={n}"] + sys.argv
    sys.stdout.flush()
    os.execv(sys.executable, cmd)


def main():
    p = argparse.ArgumentParser(description="PyTorch DDP weak scaling of the MLP (anchor for bench/dp_scaling)")
    p.add_argument("--hidden", default="2048")
    p.add_argument("--batch", default="512,3000")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--bucket-mb", type=int, default=25)
    p.add_argument("--spawn", type=int, default=0, help="start this many processes (one per GPU)")
    a = p.parse_args()
    hiddens, batches = [int(v) for v in a.hidden.split(",")], [int(v) for v in a.batch.split(",")]
    if min(hiddens) < 1 or min(batches) < 1 or a.reps < 1 or a.spawn < 0:
        p.error("widths, batches and --reps are positive, --spawn >= 0")
    if not torch.cuda.is_available() or not dist.is_nccl_available():
        print("pytorch_mlp_ddp skipped: no CUDA GPU or no NCCL")
        return
    if a.spawn > torch.cuda.device_count():
        print(f"pytorch_mlp_ddp skipped: {a.spawn} processes asked for, {torch.cuda.device_count()} GPU(s) seen")
        return
    if a.spawn and "RANK" not in os.environ:
        spawn(a.spawn)
    rank, world, local = ranks_from_env()
    torch.cuda.set_device(local)
    dist.init_process_group("nccl")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    if rank == 0:
        print(f"pytorch_mlp_ddp: torch {torch.__version__}, NCCL {'.'.join(map(str, torch.cuda.nccl.version()))}, "
              f"{world} x {torch.cuda.get_device_name()}, {cpu_model()}", file=sys.stderr, flush=True)
    torch.manual_seed(2026)
    X = torch.rand(N, FEATURES, device="cuda")
    y = torch.randint(0, CLASSES, (N,), device="cuda")
    for h in hiddens:
        for b in batches:
            one = median_epoch_ms(mlp(h), X, y, b, a.reps, 0, 1, rank == 0)
            ddp = DDP(mlp(h), device_ids=[local], bucket_cap_mb=a.bucket_mb)
            many = median_epoch_ms(ddp, X, y, b, a.reps, rank, world, True)
            if rank == 0:
                print(f"pytorch_mlp_ddp hidden {h} batch {b} ranks {world} epoch1_ms {one:.4f} epochp_ms {many:.4f}",
                      flush=True)
    if rank == 0:
        print("pytorch_mlp_ddp done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
