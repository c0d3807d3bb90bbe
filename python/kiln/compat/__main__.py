"""``python -m kiln.compat script.py args...`` or ``python -m kiln.compat -m
module args...``: run a Triton program or tool (such as pytest) with
``import triton`` resolving to Kiln, in this process and its children."""

from __future__ import annotations

import os
import runpy
import sys

import kiln.compat

PYTEST_PLUGIN = "kiln.compat.pytest_plugin"

USAGE = ("usage: python -m kiln.compat script.py [args...]\n"
         "       python -m kiln.compat -m module [args...]\n"
         "Runs a Triton program with `import triton` resolving to Kiln.")


def main(argv: list[str]) -> int:
    """Runs the program that ``argv`` (the arguments after ``-m kiln.compat``)
    names; returns the exit status for usage errors, else whatever the
    program's own exit gives."""
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE, file=sys.stderr if not argv else sys.stdout)
        return 2 if not argv else 0
    run_module = argv[0] == "-m"
    if run_module and len(argv) < 2:
        print("kiln.compat: -m needs a module name\n" + USAGE, file=sys.stderr)
        return 2
    target = argv[1] if run_module else argv[0]
    rest = argv[2:] if run_module else argv[1:]

    shim = kiln.compat.shim_directory()
    previous = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = shim if not previous else shim + os.pathsep + previous
    # pytest, if that is what runs, loads the plugin that maps Triton's
    # --device option onto Kiln's backend (other programs ignore the variable).
    plugins = [name for name in os.environ.get("PYTEST_PLUGINS", "").split(",") if name]
    if PYTEST_PLUGIN not in plugins:
        os.environ["PYTEST_PLUGINS"] = ",".join(plugins + [PYTEST_PLUGIN])
    kiln.compat.install()

    if run_module:
        sys.argv = [target] + rest
        runpy.run_module(target, run_name="__main__", alter_sys=True)
    else:
        if not os.path.exists(target):
            print(f"kiln.compat: no such file: {target}", file=sys.stderr)
            return 2
        sys.argv = [target] + rest
        sys.path.insert(0, os.path.dirname(os.path.abspath(target)))
        runpy.run_path(target, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
