"""kiln.compat: `import triton` resolving to Kiln, in code, for a script or
module run through `python -m kiln.compat`, and in child processes."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kiln_test_support import kiln_search_path

PYTHON_DIR = kiln_search_path()


def run_python(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess:
    """Runs a fresh interpreter with kiln importable (and nothing else changed)."""
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
    return subprocess.run([sys.executable, *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)


def test_install_aliases_triton_and_its_submodules(tmp_path):
    code = textwrap.dedent("""
        import kiln, kiln.compat
        kiln.compat.install()
        kiln.compat.install()  # idempotent
        import triton, triton.language as tl
        from triton.language.extra import libdevice
        from triton.runtime import driver
        import triton.testing
        assert triton is kiln and tl is kiln.language, (triton, tl)
        assert libdevice is kiln.language.extra.libdevice
        assert driver is kiln.runtime.driver and triton.testing is kiln.testing
        assert kiln.__name__ == "kiln" and kiln.__spec__.name == "kiln"
        try:
            import triton.no_such_module
        except ModuleNotFoundError as error:
            print("missing:", error.name)
    """)
    result = run_python(["-c", code], tmp_path)
    assert result.returncode == 0, result.stderr
    assert "missing: triton.no_such_module" in result.stdout


def test_script_and_child_processes_see_the_alias(tmp_path):
    script = tmp_path / "program.py"
    script.write_text(textwrap.dedent("""
        import subprocess, sys
        import triton
        print("parent", triton.__name__, sys.argv[1:])
        child = subprocess.run([sys.executable, "-c", "import triton.language as tl; print(tl.__name__)"],
                               capture_output=True, text=True)
        print("child", child.stdout.strip(), child.stderr.strip())
    """))
    result = run_python(["-m", "kiln.compat", str(script), "a", "--b"], tmp_path)
    assert result.returncode == 0, result.stderr
    assert "parent kiln ['a', '--b']" in result.stdout
    assert "child kiln.language" in result.stdout


def test_module_form_runs_a_module(tmp_path):
    (tmp_path / "mymod.py").write_text("import triton\nimport sys\nprint(triton.__name__, sys.argv)\n")
    env_args = ["-m", "kiln.compat", "-m", "mymod", "x"]
    result = subprocess.run([sys.executable, *env_args], cwd=tmp_path, capture_output=True, text=True,
                            env=dict(os.environ, PYTHONPATH=PYTHON_DIR + os.pathsep + str(tmp_path)), timeout=120)
    assert result.returncode == 0, result.stderr
    assert "kiln ['" in result.stdout and "'x']" in result.stdout


def test_real_triton_already_imported_is_refused(tmp_path):
    code = textwrap.dedent("""
        import sys, types
        sys.modules["triton"] = types.ModuleType("triton")  # stands for the real package
        import kiln.compat
        try:
            kiln.compat.install()
        except kiln.compat.CompatError as error:
            print("refused:", error)
    """)
    result = run_python(["-c", code], tmp_path)
    assert result.returncode == 0, result.stderr
    assert "refused: kiln.compat cannot alias 'triton' to Kiln: the real Triton is already imported" in result.stdout


@pytest.mark.parametrize("args, message", [
    ([], "usage: python -m kiln.compat"),
    (["-m"], "-m needs a module name"),
    (["no_such_script.py"], "no such file: no_such_script.py"),
])
def test_usage_errors(tmp_path, args, message):
    result = run_python(["-m", "kiln.compat", *args], tmp_path)
    assert result.returncode == 2
    assert message in result.stderr


def test_pytest_plugin_wins_over_an_earlier_meta_path_finder(tmp_path):
    """An editable install of the real Triton registers a meta-path finder at
    startup, ahead of the PYTHONPATH shim; pytest processes (xdist workers
    too) get the alias from the plugin that kiln.compat names in
    PYTEST_PLUGINS."""
    site = tmp_path / "site"
    (site / "realtriton").mkdir(parents=True)
    (site / "realtriton" / "__init__.py").write_text("REAL = True\n")
    (site / "sitecustomize.py").write_text(textwrap.dedent("""
        import importlib.abc, importlib.util, os, sys
        class RealTriton(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name == "triton":
                    return importlib.util.spec_from_file_location(
                        "triton", os.path.join(os.path.dirname(__file__), "realtriton", "__init__.py"))
        sys.meta_path.insert(0, RealTriton())
    """))
    (tmp_path / "test_which.py").write_text("import triton\n\ndef test_it():\n    assert triton.__name__ == 'kiln'\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), PYTHON_DIR]))
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_which.py"]
    without = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert without.returncode != 0  # the stand-in for the real Triton is found
    env["PYTEST_PLUGINS"] = "kiln.compat.pytest_plugin"
    result = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
