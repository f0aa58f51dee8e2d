"""One bench configuration, in its own process: ``python -m torchdoctor.bench._child``.

Standard library and torch only (it runs in the environment being measured). Protocol, one
JSON object per line:

- stdin, first line: ``{"env_code", "code", "workload": {family, mode, device, sizes...},
  "compile", "warmup": {min_steps, max_steps, max_s, tolerance}}``;
- stdout: ``{"ready": true, "warmup_steps", "warmup_s", "first_step_s", "settings_read"}`` once
  the step time is stable (or ``{"error": "..."}``);
- then, for each ``{"run": N}`` on stdin, ``{"times": [seconds, ...]}`` (N timed steps);
  ``{"quit": true}`` or end of stdin ends it.

Timing: ``time.perf_counter`` around each step on the CPU; CUDA events recorded around the
step and ``torch.cuda.synchronize()`` before reading them on a GPU.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time


def _send(obj) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def _conv_net(torch, s):
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self, c_in, c_out, stride):
            super().__init__()
            self.c1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
            self.b1 = nn.BatchNorm2d(c_out)
            self.c2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
            self.b2 = nn.BatchNorm2d(c_out)
            self.skip = (nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out))
                         if stride != 1 or c_in != c_out else nn.Identity())

        def forward(self, x):
            y = torch.relu(self.b1(self.c1(x)))
            return torch.relu(self.b2(self.c2(y)) + self.skip(x))

    w = s["width"]
    layers = [nn.Conv2d(3, w, 3, 1, 1, bias=False), nn.BatchNorm2d(w), nn.ReLU()]
    c = w
    for i in range(s["stages"]):
        out = w * (2 ** i)
        layers += [Block(c, out, 1 if i == 0 else 2)]
        c = out
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c, s["classes"])]
    model = nn.Sequential(*layers)
    x = torch.randn(s["batch"], 3, s["image"], s["image"])
    y = torch.randint(0, s["classes"], (s["batch"],))
    return model, (x,), y, "ce"


def _gpt(torch, s):
    nn, F = torch.nn, torch.nn.functional

    class Block(nn.Module):
        def __init__(self, d, h):
            super().__init__()
            self.h = h
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
            q, k, v = (z.view(b, t, self.h, d // self.h).transpose(1, 2) for z in (q, k, v))
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
            return x + self.mlp(self.ln2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            d = s["d_model"]
            self.emb = nn.Embedding(s["vocab"], d)
            self.pos = nn.Parameter(torch.zeros(1, s["seq"], d))
            self.blocks = nn.Sequential(*[Block(d, s["heads"]) for _ in range(s["layers"])])
            self.ln = nn.LayerNorm(d)
            self.head = nn.Linear(d, s["vocab"], bias=False)

        def forward(self, idx):
            x = self.emb(idx) + self.pos[:, : idx.shape[1]]
            return self.head(self.ln(self.blocks(x))).flatten(0, 1)

    idx = torch.randint(0, s["vocab"], (s["batch"], s["seq"]))
    y = torch.randint(0, s["vocab"], (s["batch"] * s["seq"],))
    return GPT(), (idx,), y, "ce"


def _mlp_embeddings(torch, s):
    nn = torch.nn

    class Rec(nn.Module):
        def __init__(self):
            super().__init__()
            self.tables = nn.ModuleList(nn.EmbeddingBag(s["rows"], s["dim"], mode="sum")
                                        for _ in range(s["sparse"]))
            self.bottom = nn.Sequential(nn.Linear(s["dense"], s["dim"]), nn.ReLU())
            width = s["dim"] * (s["sparse"] + 1)
            self.top = nn.Sequential(nn.Linear(width, s["hidden"]), nn.ReLU(),
                                     nn.Linear(s["hidden"], s["hidden"] // 2), nn.ReLU(),
                                     nn.Linear(s["hidden"] // 2, 1))

        def forward(self, dense, sparse):
            parts = [self.bottom(dense)] + [t(sparse[:, i]) for i, t in enumerate(self.tables)]
            return self.top(torch.cat(parts, dim=1)).squeeze(1)

    dense = torch.randn(s["batch"], s["dense"])
    sparse = torch.randint(0, s["rows"], (s["batch"], s["sparse"], s["bag"]))
    y = torch.rand(s["batch"])
    return Rec(), (dense, sparse), y, "bce"


def _speech(torch, s):
    nn = torch.nn
    d = s["d_model"]

    class Speech(nn.Module):
        def __init__(self):
            super().__init__()
            self.sub = nn.Sequential(nn.Conv1d(s["mels"], d, 3, 2, 1), nn.GELU(), nn.Conv1d(d, d, 3, 2, 1), nn.GELU())
            layer = nn.TransformerEncoderLayer(d, s["heads"], 4 * d, dropout=0.0, batch_first=True, norm_first=True)
            self.enc = nn.TransformerEncoder(layer, s["layers"], enable_nested_tensor=False)
            self.out = nn.Linear(d, s["vocab"])

        def forward(self, x):
            return self.out(self.enc(self.sub(x).transpose(1, 2))).flatten(0, 1)

    x = torch.randn(s["batch"], s["mels"], s["frames"])
    t = -(-(-(-s["frames"] // 2)) // 2)
    y = torch.randint(0, s["vocab"], (s["batch"] * t,))
    return Speech(), (x,), y, "ce"


BUILDERS = {"conv": _conv_net, "transformer": _gpt, "mlp": _mlp_embeddings, "speech": _speech}


def _read_settings(torch):
    """What the configuration left in torch's global state (for the record)."""
    out = {"threads": torch.get_num_threads()}
    try:
        out["float32_matmul_precision"] = torch.get_float32_matmul_precision()
    except Exception:  # noqa: BLE001 - old torch
        pass
    return out


def main() -> int:
    spec = json.loads(sys.stdin.readline())
    ns = {"os": os, "random": random}
    exec(spec.get("env_code") or "", ns)  # environment variables: before torch is imported
    import torch

    ns["torch"] = torch
    exec(spec.get("code") or "", ns)
    wl = spec["workload"]
    device = torch.device("cuda" if wl["device"] == "cuda" else "cpu")
    torch.manual_seed(0)
    model, inputs, target, loss_kind = BUILDERS[wl["family"]](torch, wl["sizes"])
    fmt = ns.get("MEMORY_FORMAT")
    model = model.to(device)
    if fmt is not None:
        model = model.to(memory_format=fmt)
    inputs = tuple(x.to(device) for x in inputs)
    if fmt is not None and inputs[0].dim() == 4:
        inputs = (inputs[0].contiguous(memory_format=fmt),) + inputs[1:]
    target = target.to(device)
    training = wl["mode"] == "training"
    weights_dtype = ns.get("MODEL_DTYPE") if not training else None
    if weights_dtype is not None:
        model = model.to(weights_dtype)
        inputs = tuple(x.to(weights_dtype) if x.is_floating_point() else x for x in inputs)
    amp_dtype = ns.get("AUTOCAST_DTYPE")
    scaler = ns.get("SCALER")
    run_model = torch.compile(model) if spec.get("compile") else model
    if training:
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4) if wl["family"] == "transformer" \
            else torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        model.train()
    else:
        model.eval()

    def loss_of(out):
        if loss_kind == "bce":
            return torch.nn.functional.binary_cross_entropy_with_logits(out.float(), target)
        return torch.nn.functional.cross_entropy(out.float(), target)

    def step():
        if amp_dtype is None:
            ctx = _null()
        elif hasattr(torch, "autocast"):
            ctx = torch.autocast(device.type, dtype=amp_dtype)
        else:  # torch < 1.10: CUDA float16 autocast only
            ctx = torch.cuda.amp.autocast()
        if not training:
            with torch.inference_mode(), ctx:
                return run_model(*inputs)
        opt.zero_grad(set_to_none=True)
        with ctx:
            loss = loss_of(run_model(*inputs))
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()
        return loss

    cuda = device.type == "cuda"

    def timed() -> float:
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            step()
            end.record()
            torch.cuda.synchronize()
            return start.elapsed_time(end) / 1000.0
        t0 = time.perf_counter()
        step()
        return time.perf_counter() - t0

    w = spec.get("warmup") or {}
    t_start = time.perf_counter()
    first = timed()
    times = [first]
    while len(times) < w.get("max_steps", 50) and time.perf_counter() - t_start < w.get("max_s", 20.0):
        times.append(timed())
        last = sorted(times[-3:])
        if len(times) >= w.get("min_steps", 3) and len(times) >= 4 and last[-1] <= last[0] * (1 + w.get("tolerance", 0.1)):
            break
    tail = sorted(times[-3:])
    if cuda:
        torch.cuda.empty_cache()
    _send({"ready": True, "warmup_steps": len(times), "warmup_s": time.perf_counter() - t_start,
           "first_step_s": first, "step_s": tail[len(tail) // 2], "settings_read": _read_settings(torch)})
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd.get("quit"):
            break
        times = [timed() for _ in range(int(cmd.get("run", 1)))]
        if cuda:  # an idle child keeps its weights, not the activations' cache, on the GPU
            torch.cuda.empty_cache()
        _send({"times": times})
    return 0


class _null:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as exc:  # noqa: BLE001 - the parent reports it with the configuration
        _send({"error": f"{type(exc).__name__}: {exc}"[:2000]})
        sys.exit(3)
