# lit configuration for Kiln's FileCheck tests.
#
# The paths come from the generated lit.site.cfg.py in the build tree; this
# file only says which files are tests and where the tools they name live.
# It sets PATH itself instead of using lit.llvm, so that it needs nothing from
# lit beyond the core (Debian's lit ships lit.llvm, others may not).
import os

import lit.formats

config.name = "Kiln"
# External shell: RUN lines are plain `kiln-opt %s | FileCheck %s` pipelines.
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".mlir"]
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "lib"]

config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.kiln_obj_root, "test")

# kiln-opt from this build comes first, so an installed one never shadows it;
# FileCheck, not and split-file come from the LLVM these tests were built
# against.
path = [config.kiln_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", "")]
config.environment["PATH"] = os.pathsep.join(p for p in path if p)

for tool in ("FileCheck", "not", "split-file"):
    if not os.path.exists(os.path.join(config.llvm_tools_dir, tool)):
        lit_config.fatal(f"{tool} not found in {config.llvm_tools_dir}")
