# -*- Python -*-
# lit configuration for Loom's IR and tool tests.
import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "LOOM"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "Inputs",
                   "python", "unit", "runtime"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.loom_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%loom_src", config.loom_src_root))
config.substitutions.append(("%loom_lib_dir", config.loom_lib_dir))
config.substitutions.append(("%python", config.loom_python))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()

# FileCheck variables are local to a CHECK-LABEL block unless named with `$`.
config.environment["FILECHECK_OPTS"] = "--enable-var-scope"

tool_dirs = [config.loom_tools_dir, config.llvm_tools_dir]
tools = ["loom-opt", "loomc", "loom-run"]
llvm_config.add_tool_substitutions(tools, tool_dirs)
llvm_config.with_environment("PATH", config.loom_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

if config.loom_enable_mpi:
    config.available_features.add("mpi")
if config.loom_build_runtime:
    config.available_features.add("loom-runtime")
if config.loom_enable_cuda:
    config.available_features.add("cuda")

# A sanitizer build (scripts/sanitize.sh compiler): the sanitizers' options
# reach the tools, and feature `asan` marks what ASan cannot run (an
# address-space cap: ASan reserves terabytes of shadow memory at start).
# Ranks under mpirun run without LeakSanitizer: OpenMPI leaks from
# components it unloads at MPI_Finalize, which no suppression can name
# (the runtime's MPI jobs under ASan do the same, scripts/sanitize.sh).
llvm_config.with_system_environment(["ASAN_OPTIONS", "UBSAN_OPTIONS",
                                     "LSAN_OPTIONS"])
mpi_sanitizer_env = ""
if "address" in config.loom_sanitize:
    config.available_features.add("asan")
    mpi_sanitizer_env = "-x ASAN_OPTIONS=%s:detect_leaks=0" % os.environ.get(
        "ASAN_OPTIONS", "")
config.substitutions.append(("%mpi_sanitizer_env", mpi_sanitizer_env))
