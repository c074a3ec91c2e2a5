"""torch.add on n float32 elements (default 100M): CUDA events, median of 30
runs after 5 warm-ups, L2 flushed before each run (as bench/vecadd does).
Prints 'torch_add_gbs <GB/s>' counting bytes read and written (12 per element).
bench/vecadd runs this and adds a row with anchor "pytorch"."""
import statistics
import sys

import torch


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000_000
    if not torch.cuda.is_available():
        print("torch.add: no CUDA GPU")
        return
    a = torch.rand(n, device="cuda")
    b = torch.rand(n, device="cuda")
    c = torch.empty_like(a)
    torch.add(a, b, out=c)
    assert torch.equal(c, a + b)
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    flush = torch.empty(2 * l2, dtype=torch.uint8, device="cuda")
    for _ in range(5):
        torch.add(a, b, out=c)
    times = []
    for _ in range(30):
        flush.zero_()
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        torch.add(a, b, out=c)
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    ms = statistics.median(times)
    print(f"torch.add f32 n={n}: {ms:.4f} ms")
    print(f"torch_add_gbs {3 * 4 * n / (ms * 1e6):.2f}")


if __name__ == "__main__":
    main()
