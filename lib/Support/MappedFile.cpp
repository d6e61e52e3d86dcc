//===- MappedFile.cpp - a whole file, memory-mapped -----------------------===//

#include "loom/Support/MappedFile.h"

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace loom;

Result<MappedFile> MappedFile::open(const std::string &path,
                                    std::string_view label) {
  std::string name = label.empty() ? path : std::string(label);
  // O_NONBLOCK: a FIFO or device must not block the open (only regular
  // files are mapped; the flag does not matter for mmap).
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return makeError(name, ": cannot open: ", std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    return makeError(name, ": cannot stat: ", std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return makeError(name,
                     ": not a regular file (a FIFO, device or directory)");
  }
  MappedFile file;
  file.filePath = path;
  file.fileLabel = name;
  file.length = static_cast<size_t>(st.st_size);
  if (file.length != 0) {
    void *p = ::mmap(nullptr, file.length, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int e = errno;
      ::close(fd);
      return makeError(name, ": cannot map ", file.length,
                       " bytes: ", std::strerror(e));
    }
    file.bytesPtr = static_cast<const std::byte *>(p);
  }
  // The mapping stays valid after the descriptor is closed.
  ::close(fd);
  return file;
}

Result<std::shared_ptr<const MappedFile>>
MappedFile::share(const std::string &path, std::string_view label) {
  static std::mutex mu;
  static std::map<std::string, std::weak_ptr<const MappedFile>> cache;
  std::lock_guard<std::mutex> lock(mu);
  if (auto existing = cache[path].lock())
    return existing;
  auto file = open(path, label);
  if (!file)
    return file.takeError();
  std::shared_ptr<const MappedFile> shared =
      std::make_shared<MappedFile>(file.take());
  cache[path] = shared;
  return shared;
}

MappedFile::MappedFile(MappedFile &&other) noexcept
    : filePath(std::move(other.filePath)),
      fileLabel(std::move(other.fileLabel)), bytesPtr(other.bytesPtr),
      length(other.length) {
  other.bytesPtr = nullptr;
  other.length = 0;
}

MappedFile &MappedFile::operator=(MappedFile &&other) noexcept {
  if (this != &other) {
    if (bytesPtr)
      ::munmap(const_cast<std::byte *>(bytesPtr), length);
    filePath = std::move(other.filePath);
    fileLabel = std::move(other.fileLabel);
    bytesPtr = other.bytesPtr;
    length = other.length;
    other.bytesPtr = nullptr;
    other.length = 0;
  }
  return *this;
}

MappedFile::~MappedFile() {
  if (bytesPtr)
    ::munmap(const_cast<std::byte *>(bytesPtr), length);
}

Result<const void *> MappedFile::slice(int64_t offset, int64_t size) const {
  int64_t n = this->size();
  if (offset < 0 || size < 0 || offset > n || size > n - offset)
    return makeError(fileLabel, ": slice at offset ", offset, " of size ", size,
                     " does not fit in the file of ", n, " bytes");
  static const char empty = 0;
  if (size == 0 && !bytesPtr)
    return static_cast<const void *>(&empty);
  return static_cast<const void *>(bytesPtr + offset);
}
