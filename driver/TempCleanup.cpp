//===- TempCleanup.cpp - remove the driver's temporaries on signals ------===//
//
// The signal-time removal uses only system calls (openat, getdents64,
// unlinkat, close) on paths kept in a static array: async-signal-safe, no
// allocation, no nftw, no fork/exec.
//
//===----------------------------------------------------------------------===//

#include "TempCleanup.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Signals.h"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace loom::tempcleanup {
namespace {

constexpr int kMaxPaths = 16;
constexpr size_t kMaxPath = 4096;
char gPaths[kMaxPaths][kMaxPath];
std::atomic<int> gCount{0};
std::atomic<bool> gRemoving{false};

struct Dirent64 {
  uint64_t ino;
  int64_t off;
  unsigned short reclen;
  unsigned char type;
  char name[];
};

/// Removes `name` (relative to `parent`), recursing into directories.
void removeAt(int parent, const char *name, int depth) {
  if (::unlinkat(parent, name, 0) == 0 || errno == ENOENT)
    return;
  if ((errno != EISDIR && errno != EPERM) || depth > 8)
    return;
  int fd =
      ::openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return;
  // Entries are removed while the directory is read: read it again from
  // the start until a pass finds nothing to remove.
  for (int pass = 0; pass < 64; ++pass) {
    bool removed = false;
    ::lseek(fd, 0, SEEK_SET);
    alignas(8) char buf[1024];
    long n;
    while ((n = ::syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0) {
      for (long off = 0; off < n;) {
        auto *d = reinterpret_cast<Dirent64 *>(buf + off);
        off += d->reclen;
        if (!std::strcmp(d->name, ".") || !std::strcmp(d->name, ".."))
          continue;
        removeAt(fd, d->name, depth + 1);
        removed = true;
      }
    }
    if (!removed)
      break;
  }
  ::close(fd);
  ::unlinkat(parent, name, AT_REMOVEDIR);
}

void removeAll() {
  if (gRemoving.exchange(true))
    return;
  int n = gCount.load();
  for (int i = 0; i < n && i < kMaxPaths; ++i)
    if (gPaths[i][0])
      removeAt(AT_FDCWD, gPaths[i], 0);
}

/// Crash signals (SIGSEGV, SIGABRT, SIGBUS, ...): LLVM's handler calls this.
void onCrash(void *) { removeAll(); }

/// SIGINT, SIGTERM, SIGHUP: clean up, then die of the signal as before.
void onInterrupt(int sig) {
  removeAll();
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

} // namespace

void install() {
  static bool done = false;
  if (done)
    return;
  done = true;
  // LLVM installs its handlers (for every signal) on the first request;
  // ours for the interrupt signals replace them afterwards.
  llvm::sys::AddSignalHandler(onCrash, nullptr);
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = onInterrupt;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP})
    ::sigaction(sig, &sa, nullptr);
  // A file-size limit (RLIMIT_FSIZE) is an error like a full disk: the
  // write fails with EFBIG and the file is named (loom/Support/OutputFile.h),
  // instead of LLVM's handler dumping a stack for SIGXFSZ.
  ::signal(SIGXFSZ, SIG_IGN);
}

void add(const std::string &path) {
  int i = gCount.load();
  if (i >= kMaxPaths || path.size() + 1 > kMaxPath)
    return;
  llvm::SmallString<256> abs(path);
  llvm::sys::fs::make_absolute(abs);
  if (abs.size() + 1 > kMaxPath)
    return;
  std::memcpy(gPaths[i], abs.c_str(), abs.size() + 1);
  gCount.store(i + 1);
}

int removeStale(const std::string &out) {
  llvm::SmallString<256> dir(out);
  llvm::sys::path::remove_filename(dir);
  if (dir.empty())
    dir = ".";
  std::string base = llvm::sys::path::filename(out).str();
  int removed = 0;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    llvm::StringRef name = llvm::sys::path::filename(it->path());
    if (!name.consume_front(base))
      continue;
    if (!name.consume_front(".stage-") && !name.consume_front(".tmp-"))
      continue;
    unsigned long long pid;
    if (name.getAsInteger(10, pid) || pid == 0 || pid > (1ull << 31))
      continue;
    if (pid_t(pid) == ::getpid())
      continue;
    if (::kill(pid_t(pid), 0) == 0 || errno != ESRCH)
      continue; // alive (or not ours to judge)
    if (!llvm::sys::fs::remove_directories(it->path()))
      ++removed;
  }
  return removed;
}

} // namespace loom::tempcleanup
