"""Kiln's PEP 517 build backend: builds the wheel with nothing from PyPI.

``python3 -m pip wheel . -w dist/ --no-deps`` runs it (pyproject.toml names
it through ``backend-path``); ``python3 scripts/wheel/kiln_wheel.py -w dist``
runs it without pip. For the interpreter that runs it, it

1. configures a static build of the extension kiln._C (LLVM, MLIR, libstdc++,
   zlib and zstd linked in) in its own build tree, ``build-wheel-cpXY`` (or
   ``$KILN_WHEEL_BUILD_DIR``), which writes the extension into that tree and
   never over the development build's ``python/kiln/_C*.so``;
2. builds it with ninja (``$KILN_BUILD_JOBS`` jobs, under ``flock
   $KILN_BUILD_LOCK`` when set, as scripts/setup.sh does);
3. strips a copy and checks it: it may need glibc's libraries and libgcc_s
   (GCC's unwinder, which glibc loads itself) only, and the
   highest GLIBC_x.y symbol version it needs names the wheel's platform tag
   (``manylinux_x_y_<arch>``), so the tag is the oldest glibc it really runs
   on; the copy must import, beside the package, in an interpreter without
   site-packages (no torch, no numpy);
4. packs the package's .py files, the extension, NVIDIA's libdevice.10.bc
   (as ``kiln/lib/libdevice.10.bc``, where the compiler looks before the
   CUDA toolkit) and the metadata of pyproject.toml's ``[project]`` table.

libdevice comes from ``$KILN_WHEEL_LIBDEVICE`` (a path, or ``none`` for a
wheel without it, whose math functions then need a CUDA toolkit where it is
installed), else from where the compiler finds it: ``$KILN_LIBDEVICE_PATH``,
``nvvm/libdevice`` under ``$CUDA_HOME``, ``$CUDA_PATH`` or
``/usr/local/cuda``.
"""

from __future__ import annotations

import argparse
import base64
import csv
import hashlib
import io
import os
import re
import shutil
import struct
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional

__all__ = ["build_sdist", "build_wheel", "get_requires_for_build_sdist", "get_requires_for_build_wheel"]

#: The repository root (this file is scripts/wheel/kiln_wheel.py).
ROOT = Path(__file__).resolve().parents[2]

#: The package's sources, and the file whose ``__version__`` is the version.
PACKAGE_DIR = ROOT / "python" / "kiln"
VERSION_FILE = PACKAGE_DIR / "__init__.py"

#: The toolchain of scripts/setup.sh (Debian's LLVM/MLIR 22).
LLVM_VERSION = "22"
MLIR_DIR = f"/usr/lib/llvm-{LLVM_VERSION}/lib/cmake/mlir"

#: Where the wheel puts libdevice, relative to the package; the compiler
#: looks there (lib/Target/NVIDIA/Libdevice.cpp, findLibdevice).
LIBDEVICE_NAME = "libdevice.10.bc"
LIBDEVICE_IN_PACKAGE = f"lib/{LIBDEVICE_NAME}"

#: The libraries the extension may need: glibc's own, and GCC's unwinder
#: (libgcc_s.so.1), which glibc itself loads to end a thread and every
#: manylinux system has.
GLIBC_LIBRARIES = re.compile(r"^(libc|libm|libpthread|libdl|librt)\.so\.\d+$|^ld-linux(-x86-64|-aarch64)?\.so\.\d+$"
                             r"|^libgcc_s\.so\.1$")

#: Architectures by ELF e_machine, as wheel platform tags name them.
ELF_MACHINES = {62: "x86_64", 183: "aarch64"}

#: The [project] keys this backend writes into the metadata.
PROJECT_KEYS = {"name", "version", "dynamic", "description", "readme", "requires-python", "license", "keywords",
                "classifiers", "urls", "dependencies", "optional-dependencies", "scripts"}


class WheelBuildError(RuntimeError):
    """The wheel cannot be built; the message says why and what to do."""


def _step(message: str) -> None:
    print(f"==> {message}", file=sys.stderr, flush=True)


# -- pyproject.toml ---------------------------------------------------------------------------------------


def read_project() -> dict[str, Any]:
    """pyproject.toml's ``[project]`` table, with ``version`` filled in from
    kiln.__version__. Raises WheelBuildError on keys this backend would not
    carry into the metadata."""
    try:
        import tomllib
    except ImportError as error:  # Python < 3.11
        raise WheelBuildError("building Kiln's wheel needs Python 3.11 or newer (for tomllib)") from error
    with open(ROOT / "pyproject.toml", "rb") as f:
        project = dict(tomllib.load(f)["project"])
    unknown = set(project) - PROJECT_KEYS
    if unknown:
        raise WheelBuildError(f"pyproject.toml: [project] keys {sorted(unknown)} are not supported by "
                              "scripts/wheel/kiln_wheel.py")
    if "version" not in project:
        if "version" not in project.get("dynamic", []):
            raise WheelBuildError("pyproject.toml: [project] needs a version, or 'version' in dynamic")
        project["version"] = read_version()
    return project


def read_version() -> str:
    """``__version__`` of python/kiln/__init__.py, read without importing
    kiln (which needs the extension this backend is about to build)."""
    match = re.search(r'^__version__\s*=\s*["\']([^"\']+)["\']', VERSION_FILE.read_text(), re.MULTILINE)
    if not match:
        raise WheelBuildError(f"{VERSION_FILE.relative_to(ROOT)} defines no __version__ = \"...\"")
    return match.group(1)


def distribution_name(name: str) -> str:
    """The name as wheel file names spell it (PEP 427, PEP 503)."""
    return re.sub(r"[-_.]+", "_", name).lower()


def metadata_text(project: Mapping[str, Any]) -> str:
    """The core metadata (METADATA, PKG-INFO) of ``project``."""
    lines = ["Metadata-Version: 2.1", f"Name: {project['name']}", f"Version: {project['version']}"]
    if "description" in project:
        lines.append(f"Summary: {project['description']}")
    if "keywords" in project:
        lines.append(f"Keywords: {','.join(project['keywords'])}")
    license_ = project.get("license")
    if isinstance(license_, Mapping) and "text" in license_:
        lines.append(f"License: {license_['text']}")
    elif isinstance(license_, Mapping) and "file" in license_:
        first = (ROOT / license_["file"]).read_text().strip().splitlines()[0]
        lines.append(f"License: {first}")
    for label, url in project.get("urls", {}).items():
        lines.append(f"Project-URL: {label}, {url}")
    for classifier in project.get("classifiers", []):
        lines.append(f"Classifier: {classifier}")
    if "requires-python" in project:
        lines.append(f"Requires-Python: {project['requires-python']}")
    for requirement in project.get("dependencies", []):
        lines.append(f"Requires-Dist: {requirement}")
    for extra, requirements in project.get("optional-dependencies", {}).items():
        lines.append(f"Provides-Extra: {extra}")
        for requirement in requirements:
            marker = f'extra == "{extra}"'
            lines.append(f"Requires-Dist: {requirement}; {marker}" if ";" not in requirement
                         else f"Requires-Dist: {requirement} and {marker}")
    readme = project.get("readme")
    body = ""
    if readme is not None:
        if not isinstance(readme, str):
            raise WheelBuildError("pyproject.toml: [project] readme must be a file name")
        content_type = "text/markdown" if readme.endswith(".md") else "text/x-rst" if readme.endswith(".rst") \
            else "text/plain"
        lines.append(f"Description-Content-Type: {content_type}")
        body = "\n" + (ROOT / readme).read_text()
    return "\n".join(lines) + "\n" + body


def entry_points_text(project: Mapping[str, Any]) -> Optional[str]:
    """entry_points.txt for ``[project.scripts]``, or None without scripts."""
    scripts = project.get("scripts", {})
    if not scripts:
        return None
    return "[console_scripts]\n" + "".join(f"{name} = {target}\n" for name, target in scripts.items())


# -- the static build -------------------------------------------------------------------------------------


def python_tag() -> str:
    """``cpXY`` of the running interpreter (the wheel's Python and ABI tags)."""
    if sys.implementation.name != "cpython":
        raise WheelBuildError(f"the extension is built for CPython; this is {sys.implementation.name}")
    return f"cp{sys.version_info.major}{sys.version_info.minor}"


def build_directory() -> Path:
    """``$KILN_WHEEL_BUILD_DIR`` (relative to the repository root), or
    ``build-wheel-cpXY``: one tree per Python version."""
    return ROOT / os.environ.get("KILN_WHEEL_BUILD_DIR", f"build-wheel-{python_tag()}")


def _cache_value(cache: Path, name: str) -> Optional[str]:
    match = re.search(rf"^{re.escape(name)}:[A-Z]+=(.*)$", cache.read_text(), re.MULTILINE)
    return match.group(1) if match else None


def configure(build_dir: Path, python: str) -> None:
    """Configures ``build_dir`` for the static build of the extension for
    ``python``, unless it already is; a tree configured otherwise is an
    error (reconfiguring another interpreter into it would mix the two)."""
    cache = build_dir / "CMakeCache.txt"
    output_dir = build_dir / "python" / "kiln"
    if (build_dir / "build.ninja").is_file() and cache.is_file():
        configured = {name: _cache_value(cache, name) for name in
                      ("Python3_EXECUTABLE", "KILN_STATIC_LLVM", "KILN_PYTHON_OUTPUT_DIR")}
        expected = {"Python3_EXECUTABLE": python, "KILN_STATIC_LLVM": "ON", "KILN_PYTHON_OUTPUT_DIR": str(output_dir)}
        differences = [f"{name}={configured[name]} (here: {value})" for name, value in expected.items()
                       if configured[name] != value]
        if differences:
            raise WheelBuildError(f"{build_dir} is configured with {', '.join(differences)}; remove it, or set "
                                  "KILN_WHEEL_BUILD_DIR to another directory")
        return
    _step(f"configuring {build_dir} (LLVM/MLIR linked statically, for {python})")
    command = [
        "cmake", "-G", "Ninja", "-S", str(ROOT), "-B", str(build_dir),
        "-DCMAKE_BUILD_TYPE=Release",
        f"-DCMAKE_C_COMPILER=clang-{LLVM_VERSION}", f"-DCMAKE_CXX_COMPILER=clang++-{LLVM_VERSION}",
        "-DLLVM_USE_LINKER=lld", f"-DMLIR_DIR={MLIR_DIR}",
        "-DKILN_STATIC_LLVM=ON", "-DKILN_BUILD_TESTS=OFF",
        f"-DPython3_EXECUTABLE={python}", f"-DKILN_PYTHON_OUTPUT_DIR={output_dir}",
    ]
    _run(command)


def build_extension() -> Path:
    """Configures and builds the extension for the running interpreter;
    returns its path in the build tree."""
    # The interpreter itself, not a virtual environment's link to it: the
    # same Python configures the same tree from inside or outside a venv.
    python = os.path.realpath(sys.executable)
    build_dir = build_directory()
    configure(build_dir, python)
    jobs = os.environ.get("KILN_BUILD_JOBS") or str(os.cpu_count() or 1)
    command = ["ninja", "-C", str(build_dir), "-j", jobs, "kiln_python_extension"]
    if os.environ.get("KILN_BUILD_LOCK"):
        command = ["flock", os.environ["KILN_BUILD_LOCK"], *command]
    _step(f"building kiln_python_extension in {build_dir} (ninja -j {jobs}; a cold static build takes long)")
    start = time.monotonic()
    _run(command)
    _step(f"built in {time.monotonic() - start:.0f} s")
    extension = build_dir / "python" / "kiln" / f"_C{sysconfig.get_config_var('EXT_SUFFIX')}"
    if not extension.is_file():
        raise WheelBuildError(f"the build did not produce {extension}")
    return extension


def _run(command: list[str], **kwargs: Any) -> None:
    try:
        subprocess.run(command, check=True, **kwargs)
    except FileNotFoundError as error:
        raise WheelBuildError(f"{command[0]} is not installed (scripts/setup.sh installs the build tools)") from error
    except subprocess.CalledProcessError as error:
        raise WheelBuildError(f"{' '.join(command)} failed with exit status {error.returncode}") from error


def strip(extension: Path, destination: Path) -> None:
    """Writes a stripped copy of ``extension`` (the build tree's stays as
    ninja wrote it: stripping it in place would make it newer than its
    inputs and hide a needed relink)."""
    tool = (shutil.which(f"llvm-strip-{LLVM_VERSION}")
            or shutil.which("llvm-strip", path=f"/usr/lib/llvm-{LLVM_VERSION}/bin"))
    if tool is None:
        raise WheelBuildError(f"llvm-strip-{LLVM_VERSION} is not installed")
    _run([tool, "--strip-unneeded", "-o", str(destination), str(extension)])


# -- ELF: what the extension needs ------------------------------------------------------------------------


def elf_needs(path: Path) -> tuple[str, list[str], dict[str, set[str]]]:
    """The architecture of the ELF shared object at ``path``, the libraries
    it needs (DT_NEEDED) and, by library, the symbol versions it needs from
    it (the GNU version-needs section)."""
    data = path.read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise WheelBuildError(f"{path} is not a 64-bit little-endian ELF file")
    (machine,) = struct.unpack_from("<H", data, 0x12)
    if machine not in ELF_MACHINES:
        raise WheelBuildError(f"{path}: unknown ELF machine {machine}")
    (section_offset,) = struct.unpack_from("<Q", data, 0x28)
    entry_size, count = struct.unpack_from("<HH", data, 0x3A)
    # (name, type, flags, addr, offset, size, link, info, addralign, entsize)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, section_offset + i * entry_size) for i in range(count)]

    def string(table: int, offset: int) -> str:
        start = sections[table][4] + offset
        return data[start:data.index(b"\0", start)].decode()

    needed: list[str] = []
    versions: dict[str, set[str]] = {}
    for _, kind, _, _, offset, size, link, info, _, _ in sections:
        if kind == 6:  # SHT_DYNAMIC
            for entry in range(offset, offset + size, 16):
                tag, value = struct.unpack_from("<qQ", data, entry)
                if tag == 0:  # DT_NULL
                    break
                if tag == 1:  # DT_NEEDED
                    needed.append(string(link, value))
        elif kind == 0x6FFFFFFE:  # SHT_GNU_verneed: `info` entries
            entry = offset
            for _ in range(info):
                _, aux_count, file, aux, next_entry = struct.unpack_from("<HHIII", data, entry)
                names = versions.setdefault(string(link, file), set())
                at = entry + aux
                for _ in range(aux_count):
                    _, _, _, name, next_aux = struct.unpack_from("<IHHII", data, at)
                    names.add(string(link, name))
                    at += next_aux
                entry += next_entry
    return ELF_MACHINES[machine], needed, versions


def platform_tag(extension: Path) -> str:
    """``manylinux_X_Y_<arch>`` for the extension: Y is the highest
    GLIBC_X.Y symbol version it needs. Raises WheelBuildError if it needs a
    library other than glibc's and libgcc_s, or a symbol version other than
    GLIBC_* (GCC_* of libgcc_s)."""
    arch, needed, versions = elf_needs(extension)
    foreign = [library for library in needed if not GLIBC_LIBRARIES.match(library)]
    if foreign:
        raise WheelBuildError(f"the extension needs {', '.join(foreign)} besides glibc, which a machine without "
                              "LLVM/MLIR may lack; link them statically (cmake/StaticLLVM.cmake)")
    glibc: list[tuple[int, int]] = []
    for library, names in sorted(versions.items()):
        for name in sorted(names):
            if library == "libgcc_s.so.1" and re.fullmatch(r"GCC_\d+(\.\d+)*", name):
                continue  # the unwinder's versions, which every libgcc_s since GCC 4 has
            match = re.fullmatch(r"GLIBC_(\d+)\.(\d+)(\.\d+)?", name)
            if not match:
                raise WheelBuildError(f"the extension needs symbol version {name} of {library}, not a "
                                      "GLIBC_x.y one: it would not load on every glibc it claims")
            glibc.append((int(match.group(1)), int(match.group(2))))
    major, minor = max(glibc, default=(2, 17))
    _step(f"the extension needs {', '.join(needed)}; the newest symbol version: GLIBC_{major}.{minor}")
    return f"manylinux_{major}_{minor}_{arch}"


def check_import(package: Path) -> None:
    """Imports kiln from ``package``'s directory in a fresh interpreter
    without site-packages: unresolved symbols, a missing module and an
    unconditional import of torch or numpy all fail here, not at a user's."""
    code = ("import kiln, sys\n"
            "assert kiln.__file__.startswith(sys.argv[1]), kiln.__file__\n"
            "assert 'torch' not in sys.modules and 'numpy' not in sys.modules, 'kiln imported torch or numpy'\n")
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    result = subprocess.run([sys.executable, "-S", "-c", code, str(package)], cwd=package.parent, env=env,
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise WheelBuildError(f"the packed kiln does not import:\n{result.stderr.strip()}")


# -- libdevice --------------------------------------------------------------------------------------------


def find_libdevice() -> Optional[Path]:
    """The libdevice to bundle (see the module's docstring); None when
    ``$KILN_WHEEL_LIBDEVICE`` is ``none``."""
    chosen = os.environ.get("KILN_WHEEL_LIBDEVICE")
    if chosen == "none":
        return None
    candidates = [chosen] if chosen else [os.environ.get("KILN_LIBDEVICE_PATH")] + [
        os.path.join(home, "nvvm", "libdevice", LIBDEVICE_NAME)
        for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda") if home]
    for candidate in candidates:
        if candidate and os.path.isfile(candidate):
            path = Path(candidate)
            if path.read_bytes()[:4] not in (b"BC\xc0\xde", b"\xde\xc0\x17\x0b"):
                raise WheelBuildError(f"{path} is not LLVM bitcode")
            return path
    looked = ", ".join(candidate for candidate in candidates if candidate)
    raise WheelBuildError(f"cannot find {LIBDEVICE_NAME} to bundle (looked at {looked}); "
                          "set KILN_WHEEL_LIBDEVICE to its path, or to 'none' for a wheel whose math functions "
                          "need the CUDA toolkit's")


# -- packing ----------------------------------------------------------------------------------------------


def package_sources() -> list[Path]:
    """The package's Python files (and py.typed), sorted."""
    return sorted(path for path in PACKAGE_DIR.rglob("*")
                  if path.is_file() and (path.suffix == ".py" or path.name == "py.typed")
                  and "__pycache__" not in path.parts)


def _zip_time() -> tuple[int, int, int, int, int, int]:
    # A fixed time (SOURCE_DATE_EPOCH's where set) makes a wheel depend
    # only on its contents.
    epoch = int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))  # 1980-01-01, zip's first
    return time.gmtime(max(epoch, 315532800))[:6]


def write_wheel(path: Path, files: Iterable[tuple[str, bytes, bool]], dist_info: str) -> None:
    """Writes the wheel at ``path`` from (archive name, content, executable)
    triples, then RECORD with every file's hash and size."""
    record = io.StringIO()
    writer = csv.writer(record, lineterminator="\n")
    date_time = _zip_time()
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as wheel:
        def add(name: str, content: bytes, executable: bool = False) -> None:
            info = zipfile.ZipInfo(name, date_time)
            info.external_attr = (0o100755 if executable else 0o100644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            wheel.writestr(info, content)
            digest = base64.urlsafe_b64encode(hashlib.sha256(content).digest()).rstrip(b"=").decode()
            writer.writerow([name, f"sha256={digest}", len(content)])

        for name, content, executable in files:
            add(name, content, executable)
        writer.writerow([f"{dist_info}/RECORD", "", ""])
        info = zipfile.ZipInfo(f"{dist_info}/RECORD", date_time)
        info.external_attr = 0o100644 << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        wheel.writestr(info, record.getvalue())


def build_wheel(wheel_directory: str, config_settings: Optional[dict] = None,
                metadata_directory: Optional[str] = None) -> str:
    """PEP 517: builds the wheel into ``wheel_directory``; returns its name."""
    del config_settings, metadata_directory  # the environment configures the build
    start = time.monotonic()
    project = read_project()
    name, version = distribution_name(project["name"]), project["version"]
    libdevice = find_libdevice()
    extension = build_extension()
    pack_start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kiln-wheel-") as stage:
        package = Path(stage) / "kiln"
        sources = package_sources()
        for source in sources:
            target = package / source.relative_to(PACKAGE_DIR)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
        stripped = package / extension.name
        strip(extension, stripped)
        tag = f"{python_tag()}-{python_tag()}-{platform_tag(stripped)}"
        if libdevice is not None:
            (package / "lib").mkdir()
            shutil.copyfile(libdevice, package / LIBDEVICE_IN_PACKAGE)
        check_import(package)

        dist_info = f"{name}-{version}.dist-info"
        files: list[tuple[str, bytes, bool]] = []
        for path in sorted(p for p in package.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
            relative = path.relative_to(package).as_posix()
            files.append((f"kiln/{relative}", path.read_bytes(), path == stripped))
        files.append((f"{dist_info}/METADATA", metadata_text(project).encode(), False))
        files.append((f"{dist_info}/WHEEL", (
            "Wheel-Version: 1.0\nGenerator: kiln_wheel (scripts/wheel/kiln_wheel.py)\n"
            f"Root-Is-Purelib: false\nTag: {tag}\n").encode(), False))
        entry_points = entry_points_text(project)
        if entry_points:
            files.append((f"{dist_info}/entry_points.txt", entry_points.encode(), False))
        license_file = project.get("license", {}).get("file")
        if license_file:
            files.append((f"{dist_info}/{Path(license_file).name}", (ROOT / license_file).read_bytes(), False))
        files.append((f"{dist_info}/top_level.txt", b"kiln\n", False))

        wheel_name = f"{name}-{version}-{tag}.whl"
        os.makedirs(wheel_directory, exist_ok=True)
        partial = Path(wheel_directory) / f".{wheel_name}.partial"
        write_wheel(partial, files, dist_info)
        partial.replace(Path(wheel_directory) / wheel_name)
    size = (Path(wheel_directory) / wheel_name).stat().st_size
    _step(f"wrote {wheel_name}: {size / 2**20:.1f} MiB, {len(sources)} Python files, "
          f"libdevice {'bundled' if libdevice else 'not bundled'}; packed in {time.monotonic() - pack_start:.0f} s, "
          f"{time.monotonic() - start:.0f} s in all")
    return wheel_name


def build_sdist(sdist_directory: str, config_settings: Optional[dict] = None) -> str:
    """PEP 517: packs the repository's files (tracked, and untracked but not
    ignored, by git) with PKG-INFO into ``sdist_directory``; returns the
    archive's name. The sdist builds the wheel like a checkout does."""
    del config_settings
    project = read_project()
    base = f"{distribution_name(project['name'])}-{project['version']}"
    try:
        listing = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others",
                                  "--exclude-standard"], check=True, capture_output=True).stdout
    except (OSError, subprocess.CalledProcessError) as error:
        raise WheelBuildError("an sdist is made from a git checkout (git ls-files lists its files)") from error
    names = sorted({name for name in listing.decode().split("\0") if name and (ROOT / name).is_file()})
    os.makedirs(sdist_directory, exist_ok=True)
    archive = f"{base}.tar.gz"
    mtime = int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))

    def normalized(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        info.mtime = mtime
        return info

    with tarfile.open(Path(sdist_directory) / archive, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for name in names:
            tar.add(ROOT / name, arcname=f"{base}/{name}", recursive=False, filter=normalized)
        pkg_info = metadata_text(project).encode()
        info = normalized(tarfile.TarInfo(f"{base}/PKG-INFO"))
        info.size = len(pkg_info)
        tar.addfile(info, io.BytesIO(pkg_info))
    return archive


def get_requires_for_build_wheel(config_settings: Optional[dict] = None) -> list[str]:
    """PEP 517: nothing from PyPI (the build tools come from the system)."""
    return []


def get_requires_for_build_sdist(config_settings: Optional[dict] = None) -> list[str]:
    """PEP 517: nothing from PyPI."""
    return []


def main(argv: Optional[list[str]] = None) -> int:
    """Builds the wheel (or the sdist) without pip."""
    parser = argparse.ArgumentParser(description="Build Kiln's wheel for this Python without pip.")
    parser.add_argument("-w", "--wheel-dir", default="dist", help="where to write it (default: dist)")
    parser.add_argument("--sdist", action="store_true", help="build the source archive instead")
    args = parser.parse_args(argv)
    try:
        name = (build_sdist if args.sdist else build_wheel)(args.wheel_dir)
    except WheelBuildError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(Path(args.wheel_dir) / name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
