"""PTX lines map back to kernel source lines through .loc directives."""

from kiln.compiler.ptx_lines import first_error_location, source_location

PTX = """\
.version 8.0
.target sm_90a
\t.file\t1 "/src/kernels.py"
.visible .entry k(
)
{
\t.loc\t1 12 5
\tmov.u32 %r1, %tid.x;
\t.loc\t1 14 0
\tbogus.instruction %r2;
\tret;
}
"""


def test_nearest_loc_above_the_line() -> None:
    assert source_location(PTX, 8) == ("/src/kernels.py", 12, 5)
    # Column 0 means unknown: reported as column 1.
    assert source_location(PTX, 10) == ("/src/kernels.py", 14, 1)


def test_lines_before_any_loc_have_no_source() -> None:
    assert source_location(PTX, 4) is None


def test_ptxas_error_line() -> None:
    stderr = "ptxas /tmp/kiln-ptxas-x/kernel.ptx, line 10; error   : Unknown instruction 'bogus.instruction'\n"
    assert first_error_location(PTX, stderr) == ("/src/kernels.py", 14, 1)
    assert first_error_location(PTX, "ptxas fatal   : Unresolved extern function 'f'") is None
