"""What `cpu_kernels: portable` costs, and what it buys, on this machine, in one run.

Trains a model of the default zoo's small size (Llama-style, 4 layers, width 96, vocabulary
2048, batch 32 x 64 tokens, AdamW, 1 thread) for N steps on seeded random tokens, in a fresh
process per setting, and reports the time per step and the sha256 of the final weights:

- native, under each ATen capability the machine supports (what different machines would pick);
- portable (what the workflow sets for every job), started from the same capability settings.

Native weights differ between capabilities; portable weights are the same whatever the process
started with. The ratio of the medians is the cost of portable on this machine.

    python benchmarks/cpu_kernels.py [--steps 150] [--repeats 2]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = r"""
import hashlib, json, sys, time
import torch
from safetensors.torch import save
from transformers import LlamaConfig, LlamaForCausalLM

steps = int(sys.argv[1])
torch.manual_seed(0)
torch.set_num_threads(1)
torch.use_deterministic_algorithms(True)
config = LlamaConfig(vocab_size=2048, hidden_size=96, intermediate_size=256, num_hidden_layers=4,
                     num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=512)
model = LlamaForCausalLM(config)
optimizer = torch.optim.AdamW(model.parameters(), lr=0.008)
generator = torch.Generator().manual_seed(1)
start = time.perf_counter()
for _ in range(steps):
    batch = torch.randint(0, 2048, (32, 64), generator=generator)
    loss = model(input_ids=batch, labels=batch).loss
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
elapsed = time.perf_counter() - start
state = {k: v.contiguous() for k, v in model.state_dict().items()}
print(json.dumps({"seconds": elapsed, "sha256": hashlib.sha256(save(state)).hexdigest(),
                  "capability": torch.backends.cpu.get_cpu_capability()}))
"""

CAPABILITIES = {"DEFAULT": ["default"], "AVX2": ["default", "avx2"], "AVX512": ["default", "avx2", "avx512"]}


def run(steps: int, env: dict[str, str]) -> dict:
    result = subprocess.run(
        [sys.executable, "-c", CHILD, str(steps)], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "workflow"))
    import torch

    from softeval.cpu_kernels import PORTABLE

    supported = CAPABILITIES.get(torch.backends.cpu.get_cpu_capability(), ["default"])
    base = {k: v for k, v in os.environ.items() if k not in PORTABLE}
    rows = []
    for mode in ("native", "portable"):
        for capability in supported:
            env = {**base, "ATEN_CPU_CAPABILITY": capability}
            if mode == "portable":
                env.update(PORTABLE)  # what the workflow does before any job starts
            results = [run(args.steps, env) for _ in range(args.repeats)]
            rows.append((mode, capability, results))
    print(f"{args.steps} steps, small zoo model, 1 thread; {args.repeats} run(s) per setting\n")
    print("| kernels | started with ATEN_CPU_CAPABILITY | ran as | ms/step (median) | sha256 of the weights |")
    print("|---|---|---|---|---|")
    medians = {}
    for mode, capability, results in rows:
        ms = statistics.median(r["seconds"] for r in results) / args.steps * 1000
        medians.setdefault(mode, []).append(ms)
        digests = {r["sha256"][:16] for r in results}
        print(f"| {mode} | {capability} | {results[0]['capability']} | {ms:.1f} | {', '.join(sorted(digests))} |")
    native = {r["sha256"] for m, _, rs in rows if m == "native" for r in rs}
    portable = {r["sha256"] for m, _, rs in rows if m == "portable" for r in rs}
    print(f"\nnative: {len(native)} distinct weight file(s); portable: {len(portable)}")
    fastest_native = min(medians["native"])
    print(f"portable costs {statistics.median(medians['portable']) / fastest_native:.2f}x the fastest native setting")


if __name__ == "__main__":
    main()
