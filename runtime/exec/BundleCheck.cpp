//===- BundleCheck.cpp - checks of a bundle before dlopen
//-------------------===//

#include "loom/runtime/BundleCheck.h"

#include "loom/runtime/CpuFeatures.h"
#include "loom/runtime/Fnv.h"

#include <cerrno>
#include <cstring>

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace loom::run {

namespace {

bool readAt(int fd, void *buf, size_t n, off_t at) {
  char *p = static_cast<char *>(buf);
  while (n > 0) {
    ssize_t r = ::pread(fd, p, n, at);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return false;
    p += r;
    n -= size_t(r);
    at += r;
  }
  return true;
}

/// [off, off + size) inside a file of `fileSize` bytes, without overflow.
bool inside(uint64_t off, uint64_t size, uint64_t fileSize) {
  return off <= fileSize && size <= fileSize - off;
}

} // namespace

bool checkElfLibrary(const std::string &path, std::string *error) {
  auto fail = [&](const std::string &msg) {
    *error = "library " + path + ": " + msg;
    return false;
  };
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return fail(std::string("cannot open: ") + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st;
  if (fstat(fd, &st) != 0)
    return fail(std::string("cannot stat: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    return fail("not a regular file");
  uint64_t size = uint64_t(st.st_size);
  const std::string redo = "; recompile with loomc (or copy the bundle "
                           "again: the file may be truncated)";
  Elf64_Ehdr eh;
  if (size < sizeof(eh) || !readAt(fd, &eh, sizeof(eh), 0) ||
      std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0)
    return fail("not an ELF shared library" + redo);
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB)
    return fail("not a 64-bit little-endian ELF file" + redo);
  if (eh.e_type != ET_DYN)
    return fail("not a shared library (ELF type " + std::to_string(eh.e_type) +
                ")" + redo);
  if (eh.e_phentsize != sizeof(Elf64_Phdr) ||
      !inside(eh.e_phoff, uint64_t(eh.e_phnum) * sizeof(Elf64_Phdr), size))
    return fail("program headers lie outside the file of " +
                std::to_string(size) + " bytes" + redo);
  for (unsigned i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    if (!readAt(fd, &ph, sizeof(ph), off_t(eh.e_phoff + i * sizeof(ph))))
      return fail("cannot read program header " + std::to_string(i));
    if (ph.p_type == PT_LOAD && !inside(ph.p_offset, ph.p_filesz, size))
      return fail("loadable segment " + std::to_string(i) + " ends at byte " +
                  std::to_string(ph.p_offset + ph.p_filesz) +
                  " but the file has " + std::to_string(size) + redo);
  }
  if (eh.e_shnum &&
      (eh.e_shentsize != sizeof(Elf64_Shdr) ||
       !inside(eh.e_shoff, uint64_t(eh.e_shnum) * sizeof(Elf64_Shdr), size)))
    return fail("section headers lie outside the file of " +
                std::to_string(size) + " bytes" + redo);
  for (unsigned i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr sh;
    if (!readAt(fd, &sh, sizeof(sh), off_t(eh.e_shoff + i * sizeof(sh))))
      return fail("cannot read section header " + std::to_string(i));
    if (sh.sh_type != SHT_NOBITS && sh.sh_type != SHT_NULL &&
        !inside(sh.sh_offset, sh.sh_size, size))
      return fail("section " + std::to_string(i) + " ends at byte " +
                  std::to_string(sh.sh_offset + sh.sh_size) +
                  " but the file has " + std::to_string(size) + redo);
  }
  return true;
}

bool checkBundleIntegrity(const Manifest &m, const std::string &libPath,
                          std::string *error) {
  if (!m.integrity.present) {
    *error = "manifest.json: integrity: missing (the hashes that tie the "
             "manifest to its library); recompile with loomc";
    return false;
  }
  uint64_t h = 0;
  if (!fnv1a64File(libPath, h)) {
    *error = "library " + libPath + ": cannot read: " + std::strerror(errno);
    return false;
  }
  std::string got = fnvString(h);
  if (got != m.integrity.library) {
    *error = "manifest.json: integrity.library: the library " + libPath +
             " hashes to " + got + ", the manifest expects " +
             m.integrity.library +
             ": the manifest does not belong to this library (rebuilt, "
             "replaced or truncated); recompile with loomc";
    return false;
  }
  if (m.entriesHash != m.integrity.entries) {
    *error = "manifest.json: integrity.entries: the entries hash to " +
             m.entriesHash + ", the manifest expects " + m.integrity.entries +
             ": the entry signatures were edited and no longer match the "
             "library; recompile with loomc";
    return false;
  }
  // The pipeline section is covered like the entries: a pipelined manifest
  // without its hash, or with another, is refused.
  if (m.pipelineHash != m.integrity.pipeline) {
    *error = "manifest.json: integrity.pipeline: the pipeline section hashes "
             "to " +
             (m.pipelineHash.empty() ? std::string("nothing (no section)")
                                     : m.pipelineHash) +
             ", the manifest expects " +
             (m.integrity.pipeline.empty() ? std::string("none (no hash)")
                                           : m.integrity.pipeline) +
             ": the pipeline section was added, removed or edited; "
             "recompile with loomc";
    return false;
  }
  return true;
}

bool hostHasCpuFeature(const std::string &name) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
#define LOOM_FEATURE(llvmName, gccName)                                        \
  if (name == llvmName)                                                        \
    return __builtin_cpu_supports(gccName);
  LOOM_FEATURE("sse", "sse")
  LOOM_FEATURE("sse2", "sse2")
  LOOM_X86_CPU_FEATURES(LOOM_FEATURE)
#undef LOOM_FEATURE
#endif
  return false;
}

std::vector<std::string> missingCpuFeatures(const TargetInfo &target) {
  std::vector<std::string> missing;
  for (const std::string &f : target.features)
    if (!hostHasCpuFeature(f))
      missing.push_back(f);
  return missing;
}

} // namespace loom::run
