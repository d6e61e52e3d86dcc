//===- loom/Support/OutputFile.h - checked writes of the compiler -*- C++ -*-//
//
// Every file the compiler writes goes through these, so that a full disk or
// a file-size limit is an error that names the file (the caller exits 1 and
// removes what it staged) instead of raw_fd_ostream's "IO failure on output
// stream" abort, which a stream with a pending error raises when it is
// destroyed. For LLVM-linked code only (the runtime never includes llvm/).
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_SUPPORT_OUTPUTFILE_H
#define LOOM_SUPPORT_OUTPUTFILE_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace loom {

/// Closes `os` and returns "" or its error as "error writing '<path>':
/// <reason>", clearing the error so that the stream's destructor does not
/// abort. Call it on every raw_fd_ostream the compiler writes a file with.
inline std::string closeChecked(llvm::raw_fd_ostream &os,
                                const llvm::Twine &path) {
  os.close();
  if (!os.has_error())
    return "";
  std::string msg =
      "error writing '" + path.str() + "': " + os.error().message();
  os.clear_error();
  return msg;
}

/// Writes `path` with `write`; "" or the error (the half-written file is
/// removed).
inline std::string
writeFileChecked(llvm::StringRef path,
                 llvm::function_ref<void(llvm::raw_ostream &)> write) {
  std::error_code ec;
  std::string msg;
  {
    llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
    if (ec)
      return "cannot write '" + path.str() + "': " + ec.message();
    write(os);
    msg = closeChecked(os, path);
  }
  if (!msg.empty())
    llvm::sys::fs::remove(path);
  return msg;
}

/// Writes `path` through `path.tmp`, renamed to `path` once complete, so that
/// a reader never sees a half-written file; "" or the error (nothing left).
inline std::string
writeFileAtomically(llvm::StringRef path,
                    llvm::function_ref<void(llvm::raw_ostream &)> write) {
  std::string tmp = (path + ".tmp").str();
  if (std::string msg = writeFileChecked(tmp, write); !msg.empty())
    return msg;
  if (std::error_code ec = llvm::sys::fs::rename(tmp, path)) {
    llvm::sys::fs::remove(tmp);
    return "cannot rename '" + tmp + "' to '" + path.str() +
           "': " + ec.message();
  }
  return "";
}

} // namespace loom

#endif // LOOM_SUPPORT_OUTPUTFILE_H
