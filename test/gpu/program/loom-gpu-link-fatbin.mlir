// loom-gpu-link-fatbin alone, with a recording fake `fatbinary`
// (Inputs/fake-toolkit: the fatbin it makes is its command line): the
// cubins of every chip of a gpu.binary go to one fatbinary call, whose
// output replaces them as one fatbin object. The real tool on real cubins
// is fatbin.test's (it needs ptxas).
// RUN: loom-opt %s --split-input-file --verify-diagnostics --loom-gpu-link-fatbin=toolkit=%S/Inputs/fake-toolkit | FileCheck %s
// RUN: not env PATH=%t.nowhere loom-opt %s --split-input-file --loom-gpu-link-fatbin=toolkit=%t.nowhere 2>&1 | FileCheck %s --check-prefix=MISSING

// Two chips, one fatbin: 64-bit, one ELF image per chip.
// CHECK-LABEL: module
// CHECK: gpu.binary @kernels [#gpu.object<#nvvm.target<chip = "sm_80">, "-64 --image3=kind=elf,sm=80,file=F --image3=kind=elf,sm=90,file=F --create=F\0A">]
// MISSING: error: loom-gpu-link-fatbin: 'fatbinary' not found (install the CUDA toolkit, set CUDA_HOME, or pass toolkit=<dir>; or compile for one chip with format=bin)
module {
  gpu.binary @kernels [#gpu.object<#nvvm.target<chip = "sm_80">, bin = "cubin80">,
                       #gpu.object<#nvvm.target<chip = "sm_90">, bin = "cubin90">]
}

// -----

// A module without binaries: nothing to link.
// CHECK-LABEL: module
// CHECK: func.func @f()
module {
  func.func @f() {
    return
  }
}

// -----

// PTX is not linked: compile with gpu-module-to-binary{format=bin} first.
module {
  // expected-error @below {{loom-gpu-link-fatbin: expected cubins of #nvvm.target (gpu-module-to-binary{format=bin}), got}}
  gpu.binary @kernels [#gpu.object<#nvvm.target<chip = "sm_90">, assembly = "// ptx">]
}

// -----

// fatbinary's own failure, with its message.
module {
  // expected-error @below {{fatbinary failed (exit 2): fatbinary fake: sm_75 refused}}
  gpu.binary @kernels [#gpu.object<#nvvm.target<chip = "sm_75">, bin = "cubin75">]
}
