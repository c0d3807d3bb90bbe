"""bench/launch.py runs on the CPU backend (briefly), so that the
benchmark of launch costs does not rot between GPU runs: its tables have
every column, positive numbers, and its first-call kernel computes right."""

import os
import re
import subprocess
import sys

BENCH = os.path.join(os.path.dirname(__file__), "..", "..", "..", "bench", "launch.py")


def test_launch_bench_on_the_cpu(tmp_path):
    environment = {**os.environ, "KILN_CACHE_DIR": str(tmp_path)}
    result = subprocess.run([sys.executable, BENCH, "--device", "cpu", "--launches", "200", "--rounds", "1",
                             "--first-call"], capture_output=True, text=True, timeout=300, env=environment)
    assert result.returncode == 0, result.stderr
    header = re.search(r"^\| compiler \|(.*)\|$", result.stdout, re.M)
    assert header is not None, result.stdout
    columns = [name.strip() for name in header.group(1).split("|")]
    assert columns == ["0 args", "2 args", "8 args", "20 args", "2 args, autotuned", "2 args, heuristics",
                       "torch.neg"], columns
    row = re.search(r"^\| kiln \|((?: [\d.]+ \|){7})$", result.stdout, re.M)
    assert row is not None, result.stdout
    assert all(float(value) > 0 for value in row.group(1).strip(" |").split(" | "))
    first = re.search(r"^\| kiln \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \|$", result.stdout, re.M)
    assert first is not None and all(float(value) > 0 for value in first.groups()), result.stdout
