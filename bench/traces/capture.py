#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""capture.py - multi-stream allocation traces from PyTorch workloads, in the format of
../shared/traces (action,addr,size,stream CSV, gzip) with the caching allocator's own figures
in NAME.meta. Run on a GPU machine with PyTorch (tests/gpu/run.sh step capture):

  python3 bench/traces/capture.py OUT_DIR [NAME...]

Each workload runs in its own process (a fresh caching allocator), recording the allocator's
history (torch.cuda.memory._record_memory_history) from its first allocation:

  train_side_stream  a 4-layer transformer encoder trained 8 steps with AdamW; each batch is
                     copied host->device on a side stream (pinned, non_blocking), the compute
                     stream waits for it and record_stream marks the batch as used there
  infer_4_streams    an MLP + conv model answering 48 requests of random batch size on 4
                     streams round-robin, each request's tensors born on its stream
  compute_comm       a DDP-like step: gradients flattened into 25 MiB buckets on a
                     communication stream as each bucket is ready (event waits), reduced there
                     (scaled, as an all-reduce would average) and copied back, record_stream on
                     every tensor crossing streams; 6 steps
  gpt2_train         a GPT-2-size decoder (12 layers, d 768, 12 heads, vocab 50257, tied
                     embeddings, causal attention) trained 6 steps with AdamW under bf16
                     autocast, batch 8 x 1024 tokens; one stream

`free` is the moment the program released the block (torch's free_requested); the stream
column is torch's stream value (0 = the default stream)."""
import gzip
import os
import subprocess
import sys
import time

import torch

WORKLOADS = ("train_side_stream", "infer_4_streams", "compute_comm", "gpt2_train")


def train_side_stream():
    torch.manual_seed(0)
    dev = torch.device("cuda")
    layer = torch.nn.TransformerEncoderLayer(512, 8, 2048, batch_first=True)
    model = torch.nn.TransformerEncoder(layer, 4).to(dev)
    head = torch.nn.Linear(512, 1000).to(dev)
    opt = torch.optim.AdamW(list(model.parameters()) + list(head.parameters()), lr=1e-4)
    side = torch.cuda.Stream()
    main = torch.cuda.current_stream()
    for step in range(8):
        seq = 64 + 32 * (step % 4)
        x_host = torch.randn(32, seq, 512).pin_memory()
        y_host = torch.randint(0, 1000, (32,)).pin_memory()
        with torch.cuda.stream(side):
            x = x_host.to(dev, non_blocking=True)
            y = y_host.to(dev, non_blocking=True)
        main.wait_stream(side)
        x.record_stream(main)
        y.record_stream(main)
        out = head(model(x).mean(dim=1))
        loss = torch.nn.functional.cross_entropy(out, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        del x, y, out, loss
    torch.cuda.synchronize()


def infer_4_streams():
    torch.manual_seed(1)
    dev = torch.device("cuda")
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 64, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(64, 128, 3, padding=1, stride=2), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(8), torch.nn.Flatten(),
        torch.nn.Linear(128 * 64, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 1000)).to(dev)
    model.eval()
    streams = [torch.cuda.Stream() for _ in range(4)]
    sizes = torch.randint(1, 33, (48,)).tolist()
    with torch.no_grad():
        for i, b in enumerate(sizes):
            s = streams[i % 4]
            with torch.cuda.stream(s):
                x = torch.randn(b, 3, 96, 96, device=dev)
                out = model(x).softmax(dim=1)
                top = out.topk(5, dim=1).indices.cpu()
                del x, out, top
    torch.cuda.synchronize()


def compute_comm():
    torch.manual_seed(2)
    dev = torch.device("cuda")
    model = torch.nn.Sequential(*[torch.nn.Linear(2048, 2048) for _ in range(12)]).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    comm = torch.cuda.Stream()
    main = torch.cuda.current_stream()
    params = list(model.parameters())
    bucket_cap = 25 << 20
    for step in range(6):
        x = torch.randn(256, 2048, device=dev)
        loss = model(x).square().mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        # buckets in reverse order, as gradients become ready in backward
        bucket, size = [], 0
        buckets = []
        for p in reversed(params):
            bucket.append(p)
            size += p.grad.numel() * 4
            if size >= bucket_cap:
                buckets.append(bucket)
                bucket, size = [], 0
        if bucket:
            buckets.append(bucket)
        for bk in buckets:
            ready = torch.cuda.Event()
            ready.record(main)
            comm.wait_event(ready)
            with torch.cuda.stream(comm):
                grads = [p.grad for p in bk]
                for g in grads:
                    g.record_stream(comm)
                flat = torch.cat([g.reshape(-1) for g in grads])
                flat.mul_(0.5)  # what an all-reduce average does to one rank's values
                off = 0
                for g in grads:
                    n = g.numel()
                    g.copy_(flat[off:off + n].view_as(g))
                    off += n
                del flat
        main.wait_stream(comm)
        opt.step()
        del x, loss
    torch.cuda.synchronize()


def gpt2_train():
    torch.manual_seed(0)
    dev = torch.device("cuda")
    vocab, d, heads, layers, seq, batch = 50257, 768, 12, 12, 1024, 8

    class Decoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = torch.nn.Embedding(vocab, d)
            self.pos = torch.nn.Embedding(seq, d)
            block = torch.nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.0,
                                                     activation="gelu", batch_first=True,
                                                     norm_first=True)
            self.blocks = torch.nn.TransformerEncoder(block, layers, enable_nested_tensor=False)
            self.norm = torch.nn.LayerNorm(d)

        def forward(self, idx):
            pos = torch.arange(idx.shape[1], device=idx.device)
            x = self.tok(idx) + self.pos(pos)
            mask = torch.nn.Transformer.generate_square_subsequent_mask(idx.shape[1],
                                                                        device=idx.device)
            x = self.norm(self.blocks(x, mask=mask, is_causal=True))
            return x @ self.tok.weight.t()  # tied embeddings

    model = Decoder().to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
    for step in range(6):
        idx = torch.randint(0, vocab, (batch, seq + 1), device=dev)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(idx[:, :-1])
            loss = torch.nn.functional.cross_entropy(logits.float().view(-1, vocab),
                                                     idx[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        del logits, loss, idx
    torch.cuda.synchronize()


def capture(name, out_dir):
    torch.cuda.init()
    torch.cuda.memory._record_memory_history(max_entries=2_000_000)
    t0 = time.time()
    globals()[name]()
    seconds = time.time() - t0
    snap = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    stats = torch.cuda.memory_stats()
    rows = []
    for e in snap["device_traces"][0]:
        if e["action"] == "alloc":
            rows.append(f"alloc,{e['addr']},{e['size']},{e['stream']}")
        elif e["action"] == "free_requested":
            rows.append(f"free,{e['addr']},{e['size']},{e['stream']}")
    path = os.path.join(out_dir, name + ".csv.gz")
    with gzip.open(path, "wt") as f:
        f.write("action,addr,size,stream\n")
        f.write("\n".join(rows) + "\n")
    streams = len({r.rsplit(",", 1)[1] for r in rows})
    with open(os.path.join(out_dir, name + ".meta"), "w") as f:
        f.write(f"events {len(rows)}\nseconds {seconds:.2f}\n"
                f"peak_allocated {stats['allocated_bytes.all.peak']}\n"
                f"peak_reserved {stats['reserved_bytes.all.peak']}\n"
                f"num_alloc_retries {stats['num_alloc_retries']}\n"
                f"segments_allocated {stats['segment.all.allocated']}\n"
                f"streams {streams}\n"
                f"torch {torch.__version__}\n")
    print(f"capture: {name}: {len(rows)} events on {streams} streams, peak allocated "
          f"{stats['allocated_bytes.all.peak'] / 2**20:.0f} MiB, reserved "
          f"{stats['reserved_bytes.all.peak'] / 2**20:.0f} MiB, {seconds:.1f} s")


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    names = sys.argv[2:]
    if len(names) == 1:
        capture(names[0], out_dir)
        return 0
    rc = 0
    for name in names or WORKLOADS:  # each in a fresh process: a fresh allocator
        rc |= subprocess.call([sys.executable, __file__, out_dir, name])
    return rc


if __name__ == "__main__":
    sys.exit(main())
