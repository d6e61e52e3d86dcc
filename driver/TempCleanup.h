//===- TempCleanup.h - remove loomc's temporaries on signals ----*- C++ -*-===//
//
// loomc stages a bundle in `out.stage-PID/` and `out.tmp-PID/` and writes
// single files through `path.tmp`. A compile that is interrupted (SIGINT,
// SIGTERM, SIGHUP) or crashes removes them from its signal handler; one that
// was killed outright (SIGKILL) leaves them for the next run, which removes
// those whose PID is no longer alive.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_LIB_DRIVER_TEMPCLEANUP_H
#define LOOM_LIB_DRIVER_TEMPCLEANUP_H

#include <string>

namespace loom::tempcleanup {

/// Installs the handlers (once).
void install();
/// Registers a file or directory to remove on a signal (at most 16).
void add(const std::string &path);
/// Removes `<out>.stage-PID` and `<out>.tmp-PID` beside `out` whose PID is
/// not a running process; returns how many were removed.
int removeStale(const std::string &out);

} // namespace loom::tempcleanup

#endif // LOOM_LIB_DRIVER_TEMPCLEANUP_H
