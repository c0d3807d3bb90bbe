"""Triton's tutorial 06 forward, unmodified, fp16 and fp8: Kiln vs Triton vs torch.

Loads the tutorial script (its own ``attention()``, autotuned by its own
configs) once with the real Triton and once with Kiln standing in for it
(``python -m kiln.compat``), each in a child process, and times its forward
on the inputs its benchmark builds (fp8: e5m2 Q and K, V transposed in
memory), B 4, H 32, sm_scale 1.3, non-causal unless asked, with the
tutorial's `warp_specialize` argument False unless asked (its benchmark
runs both); torch's SDPA (fp16) is timed in the Triton child. FLOPs: 4 B H
S^2 D, half that when causal. Prints a table of TFLOP/s.

    python bench/tutorial06_forward.py <tutorials folder> [--seq 4096] [--head-dims 64 128]
        [--causal no|yes|both] [--warp-specialize no|yes|both] [--dtypes fp16 fp8]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys

B, H, SM_SCALE = 4, 32, 1.3


def measure(path: str, seq: int, head_dims: list[int], causals: list[bool], warp_specializations: list[bool],
            dtypes: list[str]) -> dict[str, dict[str, float]]:
    """In this process: TFLOP/s of the tutorial's forward for each case, by
    provider: "kiln" or "triton" (whatever ``import triton`` resolves to),
    and "torch" (SDPA, fp16, in the Triton process only)."""
    os.environ.pop("PYTEST_VERSION", None)  # the tutorial's single test config otherwise
    import torch
    import triton
    spec = importlib.util.spec_from_file_location("tutorial06", path)
    tutorial = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tutorial)
    torch.manual_seed(0)
    provider = "kiln" if triton.__name__ == "kiln" else "triton"
    results: dict[str, dict[str, float]] = {}
    for head_dim in head_dims:
        for causal in causals:
            flops = 4.0 * B * H * seq * seq * head_dim / (2 if causal else 1)
            for dtype in dtypes:
                fp8 = dtype == "fp8"
                q, k, v = (torch.randn((B, H, seq, head_dim), dtype=torch.float16, device="cuda") for _ in range(3))
                if fp8:
                    q, k = q.to(torch.float8_e5m2), k.to(torch.float8_e5m2)
                    v = v.permute(0, 1, 3, 2).contiguous().permute(0, 1, 3, 2).to(torch.float8_e5m2)
                for warp_specialize in warp_specializations:
                    case = (f"D {head_dim}, {dtype}, {'causal' if causal else 'non-causal'}, "
                            f"warp_specialize={warp_specialize}")
                    row = results.setdefault(case, {})
                    ms = triton.testing.do_bench(
                        lambda: tutorial.attention(q, k, v, causal, SM_SCALE, warp_specialize))
                    row[provider] = flops / ms * 1e-9
                    if not fp8 and provider == "triton":
                        sdpa = lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal,
                                                                                        scale=SM_SCALE)
                        row["torch"] = flops / triton.testing.do_bench(sdpa) * 1e-9
    return results


CHOICES = {"no": [False], "yes": [True], "both": [False, True]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", help="the folder holding Triton's tutorial scripts")
    parser.add_argument("--seq", type=int, default=4096)
    parser.add_argument("--head-dims", type=int, nargs="+", default=[64, 128])
    parser.add_argument("--causal", choices=list(CHOICES), default="no")
    parser.add_argument("--warp-specialize", choices=list(CHOICES), default="no")
    parser.add_argument("--dtypes", nargs="+", choices=["fp16", "fp8"], default=["fp16", "fp8"])
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    path = os.path.join(args.folder, "06-fused-attention.py")
    if args.child:
        print(json.dumps(measure(path, args.seq, args.head_dims, CHOICES[args.causal],
                                 CHOICES[args.warp_specialize], args.dtypes)))
        return
    rows: dict[str, dict[str, float]] = {}
    for who, prefix in (("kiln", ["-m", "kiln.compat"]), ("triton", [])):
        command = [sys.executable, *prefix, __file__, args.folder, "--seq", str(args.seq), "--child",
                   "--causal", args.causal, "--warp-specialize", args.warp_specialize,
                   "--dtypes", *args.dtypes, "--head-dims", *map(str, args.head_dims)]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            print(f"{who}: exit {done.returncode}\n{done.stderr[-2000:]}", file=sys.stderr)
            continue
        for case, values in json.loads(done.stdout.strip().splitlines()[-1]).items():
            rows.setdefault(case, {}).update(values)
    print(f"tutorial 06 forward, B {B}, H {H}, S {args.seq}, TFLOP/s")
    print("| case | Kiln | Triton | torch SDPA | Kiln / Triton |")
    print("|---|---:|---:|---:|---:|")
    for case, row in rows.items():
        kiln_, triton_, torch_ = row.get("kiln"), row.get("triton"), row.get("torch")
        cell = lambda v: f"{v:.1f}" if v is not None else "-"
        ratio = f"{kiln_ / triton_:.2f}" if kiln_ and triton_ else "-"
        print(f"| {case} | {cell(kiln_)} | {cell(triton_)} | {cell(torch_)} | {ratio} |")


if __name__ == "__main__":
    main()
