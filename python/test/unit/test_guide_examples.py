"""The user guide's examples run: every ```python block of docs/guide/*.md,
on the CPU backend, so that the guide cannot drift from the code.

Each page runs in a fresh interpreter (this file, run as a script), with
``KILN_BACKEND=cpu``, a private kernel cache and a scratch working directory:
an example may set environment variables or install ``kiln.compat``'s alias
without touching the test process. A page's blocks run in order in one
namespace, as a reader runs them top to bottom, so a later block may use what
an earlier one defined.

Kernels must live in a source file (``kiln.jit`` reads their source), so each
block is written to a file of its own before it runs, preceded by blank lines
so that its line numbers are the page's: a traceback or a
``CompilationError`` in a failing example names the line of the ``.md`` file.

A block whose first line is ``# not run`` (optionally followed by a reason)
is skipped; the guide uses that only for code that needs a GPU.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
import pytest

REPO = Path(__file__).resolve().parents[3]
GUIDE = REPO / "docs" / "guide"

#: The first line of a block that is shown but not run.
NOT_RUN = "# not run"

#: Settings that would change what the examples print or check; each page
#: starts without them and sets what it needs itself.
CLEARED_ENVIRONMENT = ("KILN_CHECKED", "KILN_CPU_CHECKED", "KILN_DEBUG", "KILN_DUMP_DIR", "KILN_PRINT_AUTOTUNING",
                       "KILN_CACHE_AUTOTUNING", "KILN_DISABLE_CACHE", "KILN_CPU_THREADS")

_FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>```+|~~~+)\s*(?P<info>[^`\s]*)[^`]*$")


@dataclass(frozen=True)
class Block:
    """One fenced code block of a page."""

    language: str
    #: 1-based line of the page on which the block's first code line is.
    line: int
    code: str

    @property
    def runs(self) -> bool:
        """Whether the block is Python that the test runs."""
        return self.language == "python" and not self.code.lstrip("\n").startswith(NOT_RUN)


def extract_blocks(text: str) -> list[Block]:
    """The fenced code blocks of a Markdown text, in order, each dedented by
    the indentation of its opening fence (blocks inside list items).

    Raises:
        ValueError: for a fence that is never closed.
    """
    blocks: list[Block] = []
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        match = _FENCE.match(lines[index])
        if match is None:
            index += 1
            continue
        indent, fence, language = len(match["indent"]), match["fence"], match["info"].lower()
        start = index + 1
        end = start
        while end < len(lines) and not (lines[end].strip().startswith(fence)
                                        and lines[end].strip().strip(fence[0]) == ""):
            end += 1
        if end == len(lines):
            raise ValueError(f"the code block opened on line {index + 1} is never closed")
        body = [line[indent:] if not line[:indent].strip() else line.lstrip() for line in lines[start:end]]
        blocks.append(Block(language, start + 1, "\n".join(body) + "\n"))
        index = end + 1
    return blocks


def guide_pages() -> list[Path]:
    """Every page of the guide, the index included."""
    return sorted(GUIDE.glob("*.md"))


def _run_page(page: Path, workdir: Path) -> int:
    """Runs the page's Python blocks in order in one namespace (in this
    process, which the test started for the page); returns the exit status."""
    namespace: dict = {"__name__": "__main__", "__builtins__": __builtins__}
    python = [block for block in extract_blocks(page.read_text()) if block.language == "python"]
    runnable = [block for block in python if block.runs]
    for block in runnable:
        # Padded so that line N of the file is line N of the page.
        path = workdir / f"{page.stem.replace('-', '_')}_line{block.line}.py"
        path.write_text("\n" * (block.line - 1) + block.code)
        namespace["__file__"] = str(path)
        print(f"--- {page.name}:{block.line}", flush=True)
        try:
            exec(compile(path.read_text(), str(path), "exec"), namespace)
        except BaseException:  # noqa: BLE001 - every failure is reported with its page line
            sys.stdout.flush()
            traceback.print_exc()
            print(f"\n{page.name}:{block.line}: this example failed (line numbers in the traceback above are the "
                  f"page's)", file=sys.stderr)
            return 1
        sys.stdout.flush()
    print(f"--- {page.name}: {len(runnable)} examples ran, {len(python) - len(runnable)} marked {NOT_RUN!r}",
          flush=True)
    return 0


def _page_environment(tmp_path: Path) -> dict[str, str]:
    """The environment of a page's interpreter: the CPU backend, a kernel
    cache of its own, and the kiln this test imports (the checkout's, or an
    installed one) first on the path."""
    import kiln

    env = {name: value for name, value in os.environ.items() if name not in CLEARED_ENVIRONMENT}
    env["KILN_BACKEND"] = "cpu"
    env["KILN_CACHE_DIR"] = str(tmp_path / "cache")
    kiln_parent = str(Path(kiln.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [kiln_parent, env.get("PYTHONPATH")]))
    return env


# -- the tests -------------------------------------------------------------------------------


def _pages_with_examples() -> list[Path]:
    return [page for page in guide_pages() if any(block.runs for block in extract_blocks(page.read_text()))]


@pytest.mark.parametrize("page", _pages_with_examples(), ids=lambda page: page.name)
def test_page_examples_run_on_the_cpu_backend(page: Path, tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    result = subprocess.run([sys.executable, __file__, str(page), str(workdir)], cwd=workdir,
                            env=_page_environment(tmp_path), capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, f"{result.stdout[-6000:]}\n{result.stderr[-6000:]}"
    assert f"--- {page.name}: " in result.stdout


def test_the_guide_has_its_pages_and_the_index_links_each() -> None:
    names = {page.name for page in guide_pages()}
    assert {"README.md", "install.md", "first-kernel.md", "language.md", "launching.md", "autotuning.md",
            "debugging.md", "porting-from-triton.md", "cpu-backend.md", "performance.md"} <= names
    index = (GUIDE / "README.md").read_text()
    unlinked = sorted(name for name in names - {"README.md"} if f"({name})" not in index)
    assert not unlinked, f"docs/guide/README.md does not link {unlinked}"


_LINK = re.compile(r"\]\((?P<target>[^)\s]+)\)")
_INLINE_CODE = re.compile(r"`[^`]*`")


def _prose_lines(path: Path) -> list[tuple[int, str]]:
    """The numbered lines of a Markdown file outside its code blocks."""
    lines = []
    in_code = False
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if _FENCE.match(line):
            in_code = not in_code
        elif not in_code:
            lines.append((number, line))
    return lines


def heading_anchors(path: Path) -> set[str]:
    """The anchors GitHub gives the headings of a Markdown file: lower case,
    punctuation other than hyphens and underscores dropped, spaces made
    hyphens."""
    anchors = set()
    for _, line in _prose_lines(path):
        heading = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if heading:
            text = re.sub(r"[^\w\- ]", "", heading[1].lower())
            anchors.add(text.replace(" ", "-"))
    return anchors


def _broken_links(page: Path) -> list[str]:
    broken = []
    for number, line in _prose_lines(page):
        for match in _LINK.finditer(_INLINE_CODE.sub("", line)):
            target, _, anchor = match["target"].partition("#")
            if "://" in target or target.startswith("mailto:"):
                continue
            path = (page.parent / target) if target else page
            if not path.exists():
                broken.append(f"{page.name}:{number}: {match['target']} (no such file)")
            elif anchor and path.suffix == ".md" and anchor not in heading_anchors(path):
                broken.append(f"{page.name}:{number}: {match['target']} (no such heading)")
    return broken


def test_relative_links_of_the_guide_resolve() -> None:
    broken = [link for page in guide_pages() for link in _broken_links(page)]
    assert not broken, "links to files or headings that do not exist:\n" + "\n".join(broken)


def test_broken_links_and_headings_are_found(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other\n\n## The `kiln.jit` decorator\n")
    page = tmp_path / "page.md"
    page.write_text("# Page\n\n## Good heading\n\n[a](other.md#the-kilnjit-decorator) [b](#good-heading) "
                    "[c](other.md#missing) [d](missing.md) `[e](not-a-link.md)`\n\n```python\n[f](g)\n```\n")
    assert _broken_links(page) == ["page.md:5: other.md#missing (no such heading)",
                                   "page.md:5: missing.md (no such file)"]


def test_examples_are_skipped_only_when_marked() -> None:
    text = "\n".join([
        "# Page", "", "```python", "x = 1", "```", "", "- item:", "", "  ```python", "  # not run: needs a GPU",
        "  y = 2", "  ```", "", "```sh", "echo hi", "```", "",
    ])
    blocks = extract_blocks(text)
    assert [(block.language, block.line, block.runs) for block in blocks] == [
        ("python", 4, True), ("python", 10, False), ("sh", 15, False)]
    assert blocks[1].code == "# not run: needs a GPU\ny = 2\n"
    with pytest.raises(ValueError, match="line 3 is never closed"):
        extract_blocks("text\n\n```python\nx = 1\n")


def test_a_failing_example_is_reported_at_its_page_line(tmp_path: Path) -> None:
    page = tmp_path / "broken.md"
    page.write_text("# Broken\n\n```python\nvalue = 1\n```\n\nText.\n\n```python\nassert value == 2\n```\n")
    workdir = tmp_path / "work"
    workdir.mkdir()
    result = subprocess.run([sys.executable, __file__, str(page), str(workdir)], cwd=workdir,
                            env=_page_environment(tmp_path), capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert "broken.md:10: this example failed" in result.stderr
    assert re.search(r'broken_line10\.py", line 10\b', result.stderr), result.stderr


def _main(argv: list[str]) -> int:
    page, workdir = Path(argv[0]), Path(argv[1])
    return _run_page(page, workdir)


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
