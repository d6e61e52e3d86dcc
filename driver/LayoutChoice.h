//===- LayoutChoice.h - --devices N: the planner picks dp x pp x tp -*- C++
//-*-===//
//
// `loomc <config.json | hf_dir/ | model.gguf> --devices N` (no --mesh): the
// shape of the LLM is read from its config or GGUF header (no weights), the
// cost model's layout search (cost::chooseLayout, docs/COST-MODEL.md) picks
// tp, pp and dp for a forward pass of --plan-batch sequences of the context
// (--context-limit, else the model's) on N --device devices under
// --memory-limit, and the choice becomes the compile's mesh.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_LIB_DRIVER_LAYOUTCHOICE_H
#define LOOM_LIB_DRIVER_LAYOUTCHOICE_H

#include "driver/Driver.h"

#include <string>

namespace loom::driver {

/// The mesh the search picks for `o.devices` devices ("dp=2,pp=2,tp=4";
/// axes of size 1 left out, "dp=1" for one device), with the choice and its
/// per-stage breakdown written to `report`, and in `microbatches` the
/// search's microbatch count m (o.microbatches when given: the search holds
/// it). On failure "" and one line naming the cause written to `diag`
/// (prefixed with o.toolName).
std::string chooseMeshForDevices(const CompileOptions &o,
                                 llvm::raw_ostream &diag,
                                 llvm::raw_ostream &report,
                                 int64_t &microbatches);

} // namespace loom::driver

#endif // LOOM_LIB_DRIVER_LAYOUTCHOICE_H
