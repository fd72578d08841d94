#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench/gpu/comm_torch.py - xdev's collectives against PyTorch's, one harness.

Two groups, on the GPUs of one machine (2 or more):
  local  torch.cuda.comm's functions over the devices of one process:
         broadcast (to every other device), reduce_add (f32, onto device 0),
         scatter and gather (device 0 <-> every device, equal chunks);
         xdev_comm_broadcast / _reduce_add / _scatter / _gather against
         torch.cuda.comm.broadcast(out=) / reduce_add / scatter(out=) /
         gather(out=).
  dist   one rank per process, one GPU each: all_reduce (f32 sum, in place)
         and broadcast from rank 0; xdev_communicator_init_rank + xdev_all_reduce /
         xdev_broadcast against torch.distributed (NCCL backend)
         init_process_group + all_reduce / broadcast.

Why it is fair: both sides run through the same Python loop below (xdev
through ctypes, torch through its own bindings), with the same sizes,
warm-up, iteration counts and timer (time.perf_counter around `iters` calls,
then a synchronize of every device involved), and each side runs in a fresh
process (fresh processes per rank for dist) so no allocator, peer-access or
NCCL state leaks from one to the other; the sides alternate, twice each, and
the table keeps each side's best time. torch and xdev use the same
libnccl.so.2 (PyTorch's nvidia-nccl wheel: the driver points XDEV_NCCL_PATH
at it when unset, and stops when the xdev side has no NCCL - its broadcast
would then be peer copies). Both sides zero their buffers before timing
(torch.zeros; xdev_memset_async). Peer access between the devices is
enabled on both sides (torch does it on its first cross-device copy; the
xdev side calls
xdev_device_enable_peer_access, as an xdev user would). Each op's result is
checked once per side (4 KiB) before timing.

  python3 comm_torch.py --lib build-gpu/lib/libxdev.so [--max-mb 1024] [--group local,dist]

Prints one table per op: bytes, time per call (us) and algorithm bandwidth
(bytes / time, GB/s; all_reduce also bus bandwidth x 2(n-1)/n), torch and
xdev, and xdev/torch bandwidth.
"""
import argparse
import ctypes
import json
import os
import subprocess
import sys
import tempfile
import time

WARM = 5


def sizes(max_bytes):
    out, s = [], 8
    while s <= max_bytes:
        out.append(s)
        s *= 4 if s < (64 << 20) else 2
    if out and out[-1] != max_bytes and max_bytes >= (64 << 20):
        out.append(max_bytes)
    return out


def iters_for(nbytes):
    if nbytes <= (1 << 20):
        return 200
    if nbytes <= (64 << 20):
        return 50
    return 20


def time_op(call, sync):
    """The one timed loop both sides use: seconds per call."""
    for _ in range(WARM):
        call()
    sync()
    n = iters_for(call.nbytes)
    t0 = time.perf_counter()
    for _ in range(n):
        call()
    sync()
    return (time.perf_counter() - t0) / n


class Call:
    """A zero-argument op with the size it moves (for iters_for)."""

    def __init__(self, fn, nbytes):
        self.fn, self.nbytes = fn, nbytes

    def __call__(self):
        self.fn()


# ------------------------------------------------------------------ xdev side
class Dev(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("index", ctypes.c_int)]


CUDA, F32, SUM = 1, 0, 0
TYPE = CUDA  # --type cpu: the xdev side on XDEV_CPU_DEVICES devices (a smoke test)


class Xdev:
    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        self.lib.xdev_last_error.restype = ctypes.c_char_p

    def __getattr__(self, name):
        fn = getattr(self.lib, "xdev_" + name)

        def call(*args):
            st = fn(*args)
            if st != 0:
                raise RuntimeError(
                    "xdev_%s: %s" % (name, self.lib.xdev_last_error().decode())
                )

        self.__dict__[name] = call  # looked up once: the timed loop calls it directly
        return call

    def malloc(self, dev, nbytes):
        p = ctypes.c_void_p()
        self.malloc_device(Dev(TYPE, dev), ctypes.byref(p), ctypes.c_size_t(nbytes))
        return p.value

    def put(self, ptr, values):
        arr = (ctypes.c_float * len(values))(*values)
        self.memcpy(ctypes.c_void_p(ptr), arr, ctypes.c_size_t(4 * len(values)))

    def get(self, ptr, count):
        arr = (ctypes.c_float * count)()
        self.memcpy(arr, ctypes.c_void_p(ptr), ctypes.c_size_t(4 * count))
        return list(arr)


def ptrs(values):
    return (ctypes.c_void_p * len(values))(*values)


def sizes_arr(values):
    return (ctypes.c_size_t * len(values))(*values)


def need_nccl(x):
    """The xdev side's broadcast and reduce_add take NCCL's path only where
    xdev found NCCL (else peer copies): without it the comparison is not the
    one this harness states, so it stops. Asked by the driver, which times
    nothing (an NCCL id starts NCCL's bootstrap thread in its process)."""
    if TYPE != CUDA:
        return
    ident = ctypes.create_string_buffer(160)  # XDEV_COMMUNICATOR_ID_BYTES
    if x.lib.xdev_communicator_unique_id(TYPE, ident) != 0:
        raise SystemExit("comm_torch: the xdev side cannot make NCCL communicators (%s); where "
                         "NCCL is what is missing, set XDEV_NCCL_PATH to the libnccl.so.2 torch "
                         "uses" % x.lib.xdev_last_error().decode())


def local_xdev(args, ndev):
    x = Xdev(args.lib)
    maxb = args.max_mb << 20
    for a in range(ndev):
        for b in range(ndev):
            if a != b:
                x.device_enable_peer_access(Dev(TYPE, a), Dev(TYPE, b))
    src = x.malloc(0, maxb)
    dst0 = x.malloc(0, maxb)
    peers = [x.malloc(d, maxb) for d in range(ndev)]  # per-device buffers
    chunks = [x.malloc(d, maxb // ndev) for d in range(ndev)]
    # Zeroed as the torch side's torch.zeros are: the same setup work a side
    for p, n in [(src, maxb), (dst0, maxb)] + [(q, maxb) for q in peers] + \
            [(q, maxb // ndev) for q in chunks]:
        x.memset_async(ctypes.c_void_p(p), 0, ctypes.c_size_t(n), None)

    def sync():
        for d in range(ndev):
            x.device_synchronize(Dev(TYPE, d))

    def ops(s):
        n = s // 4
        part = s // ndev
        others = ptrs(peers[1:])
        srcs = ptrs(peers)
        cdst = ptrs(chunks)
        cs = sizes_arr([part] * ndev)
        # The arguments are made once per size, outside the timed calls, as the
        # torch side's tensor views are.
        a_src, a_dst0 = ctypes.c_void_p(src), ctypes.c_void_p(dst0)
        a_s, a_n = ctypes.c_size_t(s), ctypes.c_size_t(n)
        return {
            "broadcast": Call(lambda: x.comm_broadcast(a_src, a_s, others, ndev - 1), s),
            "reduce_add": Call(lambda: x.comm_reduce_add(srcs, ndev, a_dst0, a_n, F32), s),
            "scatter": Call(lambda: x.comm_scatter(a_src, a_s, cdst, cs, ndev, None), s),
            "gather": Call(lambda: x.comm_gather(cdst, cs, ndev, a_dst0), s),
        }

    # Check each op once (1024 floats) before timing.
    cnt = 1024
    vals = [float(i % 251) for i in range(cnt)]
    x.put(src, vals)
    for d in range(ndev):
        x.put(peers[d], [v + d for v in vals])
    o = ops(4 * cnt)
    o["broadcast"]()
    sync()
    assert x.get(peers[ndev - 1], cnt) == vals, "xdev broadcast wrong"
    for d in range(ndev):
        x.put(peers[d], [v + d for v in vals])
    o["reduce_add"]()
    sync()
    want = [sum(v + d for d in range(ndev)) for v in vals]
    assert x.get(dst0, cnt) == want, "xdev reduce_add wrong"
    o["scatter"]()
    o["gather"]()
    sync()
    assert x.get(dst0, cnt) == vals, "xdev scatter+gather wrong"
    return ops, sync


# ------------------------------------------------------------------ torch side
def local_torch(args, ndev):
    import torch
    import torch.cuda.comm as tcomm

    maxb = args.max_mb << 20
    f = torch.float32
    src = torch.zeros(maxb // 4, dtype=f, device="cuda:0")
    peers = [torch.zeros(maxb // 4, dtype=f, device="cuda:%d" % d) for d in range(ndev)]
    chunks = [torch.zeros(maxb // 4 // ndev, dtype=f, device="cuda:%d" % d) for d in range(ndev)]
    dst0 = torch.zeros(maxb // 4, dtype=f, device="cuda:0")

    def sync():
        for d in range(ndev):
            torch.cuda.synchronize(d)

    def ops(s):
        n = s // 4
        part = n // ndev
        sv = src[:n]
        outs = [p[:n] for p in peers[1:]]
        ins = [p[:n] for p in peers]
        cv = [c[:part] for c in chunks]
        dv = dst0[:n]
        return {
            "broadcast": Call(lambda: tcomm.broadcast(sv, out=outs), s),
            "reduce_add": Call(lambda: tcomm.reduce_add(ins, destination=0), s),
            "scatter": Call(lambda: tcomm.scatter(sv, out=cv), s),
            "gather": Call(lambda: tcomm.gather(cv, out=dv), s),
        }

    cnt = 1024
    vals = torch.tensor([float(i % 251) for i in range(cnt)], dtype=f)
    src[:cnt].copy_(vals)
    o = ops(4 * cnt)
    o["broadcast"]()
    sync()
    assert torch.equal(peers[ndev - 1][:cnt].cpu(), vals), "torch broadcast wrong"
    for d in range(ndev):
        peers[d][:cnt].copy_(vals + d)
    r = tcomm.reduce_add([p[:cnt] for p in peers], destination=0)
    assert torch.equal(r.cpu(), sum(vals + d for d in range(ndev))), "torch reduce_add wrong"
    o["scatter"]()
    o["gather"]()
    sync()
    assert torch.equal(dst0[:cnt].cpu(), vals), "torch scatter+gather wrong"
    return ops, sync


def run_local(args):
    ndev = args.ndev
    make = local_torch if args.side == "torch" else local_xdev
    ops, sync = make(args, ndev)
    for s in sizes(args.max_mb << 20):
        if s % (4 * ndev):
            continue
        for name, call in ops(s).items():
            if args.only and name not in args.only:
                continue
            t = time_op(call, sync)
            print(json.dumps({"op": name, "bytes": s, "s": t, "side": args.side}), flush=True)


# ------------------------------------------------------------------ dist side
def run_dist(args):
    rank, world = args.rank, args.world
    maxb = args.max_mb << 20
    if args.side == "torch":
        import torch
        import torch.distributed as dist

        torch.cuda.set_device(rank)
        dist.init_process_group(
            "nccl",
            init_method="file://" + os.path.join(args.tmp, "torch-store"),
            rank=rank,
            world_size=world,
            device_id=torch.device("cuda", rank),
        )
        buf = torch.ones(maxb // 4, dtype=torch.float32, device="cuda")

        def sync():
            torch.cuda.synchronize()

        def ops(s):
            v = buf[: s // 4]
            return {
                "all_reduce": Call(lambda: dist.all_reduce(v), s),
                "broadcast": Call(lambda: dist.broadcast(v, 0), s),
            }

        def check():
            v = buf[:1024]
            v.fill_(rank + 1)
            dist.all_reduce(v)
            sync()
            assert v.eq(world * (world + 1) / 2).all().item(), "torch all_reduce wrong"

        def done():
            dist.destroy_process_group()

    else:
        x = Xdev(args.lib)
        dev = Dev(TYPE, rank)
        x.set_device(dev)
        idp = os.path.join(args.tmp, "xdev-id")
        ident = ctypes.create_string_buffer(160)  # XDEV_COMMUNICATOR_ID_BYTES
        if rank == 0:
            x.communicator_unique_id(TYPE, ident)
            with open(idp + ".tmp", "wb") as fh:
                fh.write(ident.raw)
            os.rename(idp + ".tmp", idp)
        else:
            while not os.path.exists(idp):
                time.sleep(0.01)
            with open(idp, "rb") as fh:
                ctypes.memmove(ident, fh.read(), 160)
        comm = ctypes.c_void_p()
        x.communicator_init_rank(ctypes.byref(comm), world, ident, rank, dev)
        buf = x.malloc(rank, maxb)
        x.memset_async(ctypes.c_void_p(buf), 0, ctypes.c_size_t(maxb), None)  # as torch.ones fills
        x.put(buf, [1.0] * 1024)

        def sync():
            x.device_synchronize(dev)

        def ops(s):
            n, p = ctypes.c_size_t(s // 4), ctypes.c_void_p(buf)
            return {
                "all_reduce": Call(lambda: x.all_reduce(comm, p, p, n, F32, SUM, None), s),
                "broadcast": Call(lambda: x.broadcast(comm, p, p, n, F32, 0, None), s),
            }

        def check():
            x.put(buf, [float(rank + 1)] * 1024)
            x.all_reduce(comm, ctypes.c_void_p(buf), ctypes.c_void_p(buf), ctypes.c_size_t(1024), F32, SUM, None)
            sync()
            assert x.get(buf, 1024) == [world * (world + 1) / 2] * 1024, "xdev all_reduce wrong"

        def done():
            x.communicator_destroy(comm)

    check()
    for s in sizes(maxb):
        for name, call in ops(s).items():
            if args.only and name not in args.only:
                continue
            ops(8)["all_reduce"]()  # line the ranks up before each timing
            sync()
            t = time_op(call, sync)
            if rank == 0:
                print(json.dumps({"op": "dist_" + name, "bytes": s, "s": t, "side": args.side}), flush=True)
    done()


# ------------------------------------------------------------------ driver
def spawn(args, side, group, tmp):
    base = [sys.executable, os.path.abspath(__file__), "--lib", args.lib, "--max-mb", str(args.max_mb),
            "--side", side, "--ndev", str(args.ndev), "--tmp", tmp, "--type", args.type]
    if args.only:
        base += ["--only", ",".join(args.only)]
    if group == "local":
        procs = [subprocess.Popen(base + ["--role", "local"], stdout=subprocess.PIPE, text=True)]
    else:
        procs = [subprocess.Popen(base + ["--role", "dist", "--rank", str(r), "--world", str(args.ndev)],
                                  stdout=subprocess.PIPE, text=True) for r in range(args.ndev)]
    rows = []
    for p in procs:
        out, _ = p.communicate(timeout=900)
        if p.returncode != 0:
            raise SystemExit("comm_torch: %s %s side failed (rc %d)" % (group, side, p.returncode))
        rows += [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return rows


def report(rows, ndev):
    best = {}
    for r in rows:
        k = (r["op"], r["bytes"], r["side"])
        best[k] = min(best.get(k, 1e30), r["s"])
    ops = []
    for r in rows:
        if r["op"] not in ops:
            ops.append(r["op"])
    for op in ops:
        bus = 2 * (ndev - 1) / ndev if op == "dist_all_reduce" else 1.0
        print("\n%s (%d GPUs)%s" % (op, ndev, ", bus bandwidth = alg x 2(n-1)/n" if bus != 1 else ""))
        print("| bytes | torch us | xdev us | torch GB/s | xdev GB/s | xdev/torch |")
        print("|---:|---:|---:|---:|---:|---:|")
        for s in sorted({k[1] for k in best if k[0] == op}):
            t, x = best.get((op, s, "torch")), best.get((op, s, "xdev"))
            if t is None or x is None:
                continue
            bt, bx = s / t / 1e9 * bus, s / x / 1e9 * bus
            print("| %d | %.1f | %.1f | %.2f | %.2f | %.3f |" % (s, t * 1e6, x * 1e6, bt, bx, t / x))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--max-mb", type=int, default=1024)
    ap.add_argument("--group", default="local,dist")
    ap.add_argument("--only", default="")
    ap.add_argument("--ndev", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--role", default="driver")
    ap.add_argument("--side")
    ap.add_argument("--rank", type=int, default=0)
    ap.add_argument("--world", type=int, default=1)
    ap.add_argument("--tmp")
    ap.add_argument("--type", default="cuda")
    args = ap.parse_args()
    global TYPE
    TYPE = {"cuda": 1, "cpu": 0}[args.type]
    args.only = [o for o in args.only.split(",") if o]
    args.lib = os.path.abspath(args.lib)
    if args.role == "local":
        return run_local(args)
    if args.role == "dist":
        return run_dist(args)
    if args.ndev == 0:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout
        args.ndev = len([line for line in out.splitlines() if line.startswith("GPU ")])
    if args.ndev < 2:
        print("comm_torch: needs 2 GPUs, %d present: not run" % args.ndev)
        return 2
    if args.type == "cuda" and not os.environ.get("XDEV_NCCL_PATH"):
        # the NCCL torch loads (its nvidia-nccl wheel), for the xdev side too
        try:
            import nvidia.nccl

            lib = os.path.join(list(nvidia.nccl.__path__)[0], "lib", "libnccl.so.2")
            if os.path.exists(lib):
                os.environ["XDEV_NCCL_PATH"] = lib
        except ImportError:
            pass
    print("comm_torch: xdev's NCCL: %s" %
          os.environ.get("XDEV_NCCL_PATH", "libnccl.so.2 (search path)"))
    need_nccl(Xdev(args.lib))
    print("comm_torch: %d GPUs, sizes 8 B - %d MiB, best of %d fresh processes per side" %
          (args.ndev, args.max_mb, args.rounds))
    rows = []
    for group in args.group.split(","):
        for _ in range(args.rounds):
            for side in ("torch", "xdev"):
                with tempfile.TemporaryDirectory() as tmp:
                    rows += spawn(args, side, group, tmp)
    report(rows, args.ndev)
    return 0


if __name__ == "__main__":
    sys.exit(main())
