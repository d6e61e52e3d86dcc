//===- PlanHtml.h - the plan as a self-contained HTML page ------*- C++ -*-===//
//
// `loomc --emit=plan-html` (docs/PLAN-HTML.md): one HTML file with inline
// CSS and SVG (no script, no network, no other file) drawn from the plan
// JSON that `--emit=plan` writes, so the picture shows exactly the plan:
// the mesh and its links, the stages' layer ranges, memory per device
// against capacity, the predicted pipeline schedule (GPipe) with its
// bubble, the collectives; and, given the Chrome trace of a run
// (`loom-run --trace`), the measured schedule beside the prediction.
//
// Every string that comes from the plan or the trace (names of functions,
// devices, ops, events) is escaped: both files may come from elsewhere.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_LIB_DRIVER_PLANHTML_H
#define LOOM_LIB_DRIVER_PLANHTML_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/JSON.h"

#include <optional>
#include <string>

namespace loom::driver {

/// The page for `plan` (the JSON of --emit=plan; a `pipeline` section,
/// docs/SHARDING.md, gives the stages; without one the plan is drawn as
/// one stage). `trace`: the events of a run, an object with a
/// "traceEvents" array or an array (readTraceFiles makes one); its
/// complete events with "cat": "pipeline" become the measured rows, those
/// with "cat": "p2p" and the collectives thin marks. A trace without
/// pipeline events, or a plan with missing fields, gives a note in the
/// page, never a failure.
std::string renderPlanHtml(const llvm::json::Value &plan,
                           const std::optional<llvm::json::Value> &trace);

/// Whether `v` is a plan (an object with a "functions" array), as opposed
/// to a model's config.json.
bool isPlanJson(const llvm::json::Value &v);

/// Reads the Chrome trace at `path`, or, when there is no such file, the
/// per-rank files `path.0`, `path.1`, ... that loom-run --trace writes
/// under MPI, into one {"traceEvents": [...]} value. False with a one-line
/// `error` (naming the file and what is wrong) when a file cannot be read,
/// is not JSON or is not a trace.
bool readTraceFiles(llvm::StringRef path, llvm::json::Value &out,
                    std::string &error);

} // namespace loom::driver

#endif // LOOM_LIB_DRIVER_PLANHTML_H
