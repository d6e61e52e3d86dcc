//===- runtime/Weights.cpp - Memory-mapped weight slices --------*- C++ -*-===//

#include "Comm.h"

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace loom::rt {
namespace {
std::mutex CacheMu;
std::map<std::string, std::weak_ptr<MappedFile>> &cache() {
  static std::map<std::string, std::weak_ptr<MappedFile>> c;
  return c;
}
} // namespace

MappedFile::~MappedFile() {
  if (Data && Size > 0)
    munmap(Data, size_t(Size));
}

std::shared_ptr<MappedFile> MappedFile::open(const std::string &path,
                                             std::string *error) {
  std::lock_guard<std::mutex> lock(CacheMu);
  if (auto existing = cache()[path].lock())
    return existing;
  // O_NONBLOCK: a FIFO or device must not block the open (only regular
  // files are mapped; the flag does not matter for mmap).
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    *error = "weight file '" + path + "': cannot open: " + std::strerror(errno);
    return nullptr;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    *error = "weight file '" + path + "': cannot stat: " + std::strerror(errno);
    ::close(fd);
    return nullptr;
  }
  if (!S_ISREG(st.st_mode)) {
    *error = "weight file '" + path + "': not a regular file (a FIFO, device "
             "or directory)";
    ::close(fd);
    return nullptr;
  }
  std::shared_ptr<MappedFile> f(new MappedFile());
  f->Path = path;
  f->Size = int64_t(st.st_size);
  if (f->Size > 0) {
    void *p = mmap(nullptr, size_t(f->Size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      *error = "weight file '" + path + "': mmap of " +
               std::to_string(f->Size) + " bytes failed: " +
               std::strerror(errno);
      ::close(fd);
      return nullptr;
    }
    f->Data = p;
  }
  ::close(fd);
  cache()[path] = f;
  return f;
}

const void *MappedFile::slice(int64_t offset, int64_t size,
                              std::string *error) const {
  if (offset < 0 || size < 0 || offset > Size || size > Size - offset) {
    *error = "weight file '" + Path + "': slice at offset " +
             std::to_string(offset) + " of size " + std::to_string(size) +
             " does not fit in the file of " + std::to_string(Size) +
             " bytes";
    return nullptr;
  }
  static const char empty = 0;
  if (size == 0 && !Data)
    return &empty;
  return static_cast<const char *>(Data) + offset;
}

bool mapWeight(loom_rt_ctx *ctx, int64_t index, const std::string &path,
               int64_t offset, int64_t size, std::string *error) {
  if (index < 0) {
    *error = "weight index " + std::to_string(index) + " is negative";
    return false;
  }
  std::shared_ptr<MappedFile> f = MappedFile::open(path, error);
  if (!f)
    return false;
  const void *p = f->slice(offset, size, error);
  if (!p)
    return false;
  ctx->mappings.push_back(std::move(f));
  loom_rt_ctx_set_weight(ctx, index, p);
  return true;
}

} // namespace loom::rt
