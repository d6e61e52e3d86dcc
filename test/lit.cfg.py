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
