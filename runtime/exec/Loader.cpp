//===- Loader.cpp - loading a bundle for the ranks of loom-run ------------===//

#include "Loader.h"
#include "../Comm.h"
#include "loom/runtime/BundleCheck.h"

#include "loom/runtime/Strided.h"
#include "loom/runtime/cuda.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <atomic>
#include <dlfcn.h>
#include <map>
#include <mutex>
#include <set>
#include <sys/stat.h>
#include <tuple>
#include <unistd.h>

namespace fs = std::filesystem;

namespace loom::run {

namespace {
/// A function of the CUDA runtime (runtime/cuda) if this process has it:
/// loom-run exports it when built with CUDA; the Python package does not.
template <typename Fn> Fn cudaFn(Fn, const char *name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name));
}
#define LOOM_CUDA_FN(name) cudaFn(&name, #name)
} // namespace

bool checkTarget(const std::string &bundle, const Manifest &m,
                 const OpenOptions &options, std::string *error,
                 int64_t *deviceMemory) {
  auto failWith = [&](const std::string &what) {
    *error = bundle + ": " + what;
    return false;
  };
  if (!m.target.isCuda()) {
    if (options.deviceComm)
      return failWith("--backend cuda runs a CUDA bundle's ranks on GPUs; "
                      "this bundle is for the CPU, and ranks are not mixed "
                      "between CPU and GPU (compile it with loomc "
                      "--target=cuda, or use --backend threads or mpi)");
    if (options.cudaDevice >= 0)
      return failWith("--device selects the CUDA device of a CUDA bundle; "
                      "this bundle is for the CPU (compile it with loomc "
                      "--target=cuda, or drop --device)");
    return true;
  }
  std::string chips;
  for (const std::string &c : m.target.chips)
    chips += (chips.empty() ? "" : ", ") + c;
  if (chips.empty())
    chips =
        m.target.isEmulated() ? "none: kernels for the CUDA emulator" : "none";
  if (options.backend == Backend::Mpi && !options.deviceComm)
    return failWith("a CUDA bundle runs on one device in one process; "
                    "--backend mpi (and mpirun) apply to CPU bundles (a "
                    "CUDA bundle's ranks under mpirun: --backend cuda)");
  if (options.threadsPerRank > 0)
    return failWith("--threads sets the CPU threads of a CPU bundle; this "
                    "bundle runs on a CUDA device (drop --threads)");
  // The device copies of the weights are keyed by their host address, so
  // every weight is the mapped file itself or (a partitioned weight's
  // strided slice) one contiguous copy made at load (mapWeights): never a
  // per-run copy such as the interleaved layout, which loomc --target=cuda
  // does not make.
  for (const Entry &e : m.entries)
    for (size_t k = 0; k < e.interleave.size(); ++k)
      if (e.interleave[k].rows)
        return failWith("weight '" + e.weights[k].name +
                        "' has the interleaved layout, which a CUDA bundle "
                        "does not take (recompile with loomc --target=cuda)");
  auto count = LOOM_CUDA_FN(loom_cuda_device_count);
  auto open = LOOM_CUDA_FN(loom_cuda_open);
  auto info = LOOM_CUDA_FN(loom_cuda_info);
  auto lastError = LOOM_CUDA_FN(loom_cuda_last_error);
  auto setDefault = LOOM_CUDA_FN(mgpuSetDefaultDevice);
  if (!count || !open || !info || !lastError || !setDefault)
    return failWith("a CUDA bundle (chips " + chips +
                    "), and this process has no CUDA runtime: run it with a "
                    "loom-run built with CUDA (nvcc on PATH or "
                    "-DLOOM_ENABLE_CUDA=ON)");
  // The host code's calls into the CUDA runtime are additive across
  // versions: a bundle generated against a newer runtime ABI would fail
  // to load on a missing symbol.
  auto abi = LOOM_CUDA_FN(loom_cuda_abi_version);
  if (m.target.cudaAbiVersion > 0 && (!abi || m.target.cudaAbiVersion > abi()))
    return failWith("the bundle's host code was generated against CUDA "
                    "runtime ABI version " +
                    std::to_string(m.target.cudaAbiVersion) +
                    ", but this Loom CUDA runtime has ABI version " +
                    std::to_string(abi ? abi() : 0) +
                    "; recompile the model with a matching loomc");
  int32_t devices = 0;
  if (count(&devices) != 0)
    return failWith("a CUDA bundle needs a CUDA device: " +
                    std::string(lastError()));
  int32_t ordinal = options.cudaDevice < 0 ? 0 : options.cudaDevice;
  if (ordinal >= devices)
    return failWith("--device " + std::to_string(ordinal) + ": this host has " +
                    std::to_string(devices) + " CUDA device(s)");
  loom_cuda_device *dev = nullptr;
  loom_cuda_device_info di{};
  if (open(ordinal, &dev) != 0 || info(dev, &di) != 0)
    return failWith("a CUDA bundle needs a CUDA device: " +
                    std::string(lastError()));
  // Kernels compiled for the host (loomc --gpu-emulate) run only under the
  // emulating driver, and it runs nothing else (docs/GPU.md "Emulation").
  const bool emulator = std::string(di.name) == LOOM_CUDA_EMULATOR_NAME;
  if (m.target.isEmulated() != emulator)
    return failWith(
        emulator ? "device " + std::to_string(ordinal) +
                       " is the CUDA emulator (LOOM_CUDA_DRIVER), which runs "
                       "only bundles compiled with loomc --gpu-emulate; this "
                       "one has " +
                       chips + " kernels"
                 : std::string("the bundle's kernels are compiled for the "
                               "host (loomc --gpu-emulate) and run only under "
                               "the emulating CUDA driver "
                               "(LOOM_CUDA_DRIVER=libloom_cuda_emu.so); "
                               "recompile without --gpu-emulate for device ") +
                       std::to_string(ordinal) + " (" + di.name + ")");
  // A cubin runs on its own major architecture, at its minor or above.
  bool fits = emulator;
  for (const std::string &c : m.target.chips) {
    int sm = c.rfind("sm_", 0) == 0 ? std::atoi(c.c_str() + 3) : -1;
    if (sm / 10 == di.sm / 10 && sm % 10 <= di.sm % 10)
      fits = true;
  }
  if (!fits)
    return failWith("compiled for " + chips + ", and device " +
                    std::to_string(ordinal) + " (" + di.name + ") is sm_" +
                    std::to_string(di.sm) + "; recompile for it");
  // The plans against the device's free memory (other processes' included):
  // checkCudaMemory, once the ranks that share it are known.
  if (deviceMemory) {
    *deviceMemory = di.total_memory;
    int64_t free = 0;
    auto freeMemory = LOOM_CUDA_FN(loom_cuda_free_memory);
    if (freeMemory && freeMemory(dev, &free) == 0 && free >= 0)
      *deviceMemory = free;
  }
  setDefault(ordinal);
  return true;
}

int64_t cudaDeviceBytes(const Manifest &m, const std::string &entry,
                        const std::vector<int64_t> &ranks) {
  auto peak = m.target.peakBytes.find(entry);
  if (peak == m.target.peakBytes.end())
    return 0;
  int64_t bytes = 0, shared = 0;
  std::set<std::tuple<std::string, int64_t, int64_t>> seen;
  for (int64_t r : ranks) {
    bytes += peak->second;
    if (r < 0 || size_t(r) >= m.ranks.size())
      continue;
    auto it = m.ranks[size_t(r)].weights.find(entry);
    if (it == m.ranks[size_t(r)].weights.end())
      continue;
    for (const WeightSlice &w : it->second) {
      std::vector<int64_t> rowMajor(w.shape.size());
      rowMajorStrides(int64_t(w.shape.size()), w.shape.data(), rowMajor.data());
      bool contiguous = w.strides.empty() || w.strides == rowMajor;
      if (contiguous && !seen.insert({w.file, w.offset, w.nbytes}).second)
        shared += w.nbytes; // another local rank's copy is this one
    }
  }
  return std::max<int64_t>(bytes - shared, 0);
}

bool checkCudaMemory(const std::string &bundle, const Manifest &m,
                     const std::vector<int64_t> &ranks, int64_t deviceMemory,
                     std::string *error) {
  if (!m.target.isCuda() || deviceMemory <= 0)
    return true;
  for (const auto &[entry, peak] : m.target.peakBytes) {
    int64_t need = cudaDeviceBytes(m, entry, ranks);
    if (need <= deviceMemory)
      continue;
    std::string who =
        ranks.size() > 1
            ? " for its " + std::to_string(ranks.size()) +
                  " ranks on the device (" + std::to_string(peak) +
                  " each by its memory plan, less the weights they share)"
            : " (its memory plan)";
    *error = bundle + ": entry '" + entry + "' needs " + std::to_string(need) +
             " device bytes" + who + " and the device has " +
             std::to_string(deviceMemory) + " free" +
             (ranks.size() > 1
                  ? "; run the ranks on one GPU each (mpirun ... --backend "
                    "cuda --devices ...) or compile for fewer ranks"
                  : "; lower --gpu-max-tokens or use a device with more "
                    "memory");
    return false;
  }
  return true;
}

bool uploadCudaWeights(const MappedWeights &weights, std::string *error) {
  auto resident = LOOM_CUDA_FN(loom_cuda_mgpu_resident);
  if (!resident) {
    *error = "this process has no CUDA runtime";
    return false;
  }
  for (const auto &[rank, slices] : weights.perRank)
    for (const PlannedWeight &w : slices) {
      if (w.contiguous) {
        // A split weight: its contiguous copy is what the program reads.
        resident(w.contiguous.get(), w.contiguousBytes);
        continue;
      }
      std::shared_ptr<const MappedFile> f = loom::rt::mapFile(w.path, error);
      if (!f)
        return false;
      auto p = f->slice(w.offset, w.nbytes);
      if (!p) {
        *error = p.error().message;
        return false;
      }
      // Fatal (with its message) when the device refuses.
      resident(const_cast<void *>(static_cast<const void *>(*p)), w.nbytes);
    }
  return true;
}

void cudaGraphBegin(const void *entry, const void *rank) {
  if (auto begin = LOOM_CUDA_FN(loom_cuda_mgpu_graph_begin))
    begin(entry, rank);
}

void cudaGraphEnd() {
  if (auto end = LOOM_CUDA_FN(loom_cuda_mgpu_graph_end))
    end();
}

void cudaGraphStats(int64_t &launches, int64_t &instantiations,
                    int64_t &updates) {
  launches = instantiations = updates = 0;
  if (auto stats = LOOM_CUDA_FN(loom_cuda_mgpu_graph_stats))
    stats(&launches, &instantiations, &updates);
}

void releaseCudaResident() {
  if (auto release = LOOM_CUDA_FN(loom_cuda_mgpu_release_graphs))
    release();
  if (auto release = LOOM_CUDA_FN(loom_cuda_mgpu_release_resident))
    release();
  if (auto release = LOOM_CUDA_FN(loom_cuda_mgpu_release_workspace))
    release();
  cudaStateRelease(nullptr);
}

static bool noCudaRuntime(std::string *error) {
  *error = "the KV cache of a CUDA bundle needs the CUDA runtime in this "
           "process (a loom-run built with CUDA)";
  return false;
}

bool cudaStateRegister(void *host, int64_t bytes, std::string *error) {
  auto state = LOOM_CUDA_FN(loom_cuda_mgpu_state);
  if (!state)
    return noCudaRuntime(error);
  state(host, bytes); // fatal, with the runtime's message, on failure
  return true;
}

bool cudaStateWrite(const void *host, int64_t bytes, std::string *error) {
  auto write = LOOM_CUDA_FN(loom_cuda_mgpu_state_write);
  if (!write)
    return noCudaRuntime(error);
  write(host, bytes);
  return true;
}

bool cudaStateRead(void *host, int64_t bytes, std::string *error) {
  auto read = LOOM_CUDA_FN(loom_cuda_mgpu_state_read);
  if (!read)
    return noCudaRuntime(error);
  read(host, bytes);
  return true;
}

void cudaStateRelease(const void *host) {
  if (auto release = LOOM_CUDA_FN(loom_cuda_mgpu_release_state))
    release(host);
}

double nowMs() { return double(loom_rt_now_ns()) / 1e6; }

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") +
         (shape[i] < 0 ? std::string("?") : std::to_string(shape[i]));
  return s + "]";
}

std::string humanBytes(double b) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), u ? "%.1f %s" : "%.0f %s", b, units[u]);
  return buf;
}

int32_t rtDtype(DType t) {
  switch (t) {
  case DType::F32:
    return LOOM_RT_F32;
  case DType::F16:
    return LOOM_RT_F16;
  case DType::BF16:
    return LOOM_RT_BF16;
  case DType::F64:
    return LOOM_RT_F64;
  case DType::I8:
    return LOOM_RT_I8;
  case DType::I32:
    return LOOM_RT_I32;
  case DType::I64:
    return LOOM_RT_I64;
  case DType::U8:
  case DType::I1:
    return LOOM_RT_U8;
  }
  return LOOM_RT_U8;
}

bool loadManifest(const std::string &bundle, Manifest &m, std::string *error) {
  fs::path manifestPath = fs::path(bundle) / "manifest.json";
  std::string text;
  {
    std::ifstream in(manifestPath, std::ios::binary);
    if (!in) {
      *error = manifestPath.string() + ": cannot read: " + std::strerror(errno);
      return false;
    }
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  std::string err;
  if (!parseManifest(text, loom_rt_abi_version(), m, &err)) {
    *error = bundle + "/" + err;
    return false;
  }
  return true;
}

/// The checks between manifest.json and dlopen (docs/LOOM-RUN.md): a
/// complete ELF library (a truncated one dies of SIGBUS inside dlopen), the
/// library and entries the manifest was written for, and a host CPU with
/// every feature the code was generated for (else SIGILL, no message).
/// Returns the reason to refuse, or "".
static std::string checkBeforeDlopen(const Manifest &m,
                                     const std::string &lib) {
  std::string err;
  if (!checkElfLibrary(lib, &err) || !checkBundleIntegrity(m, lib, &err))
    return err;
  std::vector<std::string> missing = missingCpuFeatures(m.target);
  if (missing.empty())
    return "";
  std::string list;
  for (const std::string &f : missing)
    list += (list.empty() ? "" : " ") + f;
  return "manifest.json: target: the library was generated for CPU '" +
         m.target.cpu + "', and this CPU lacks " + list +
         "; recompile on this machine, or with `loomc --portable` (any "
         "x86-64-v2 CPU) or `loomc --cpu=NAME` for the oldest CPU it must "
         "run on";
}

namespace {
/// dlopen matches an already loaded object by the name it was opened with
/// before it looks at the file, so opening a bundle's library by its path
/// after the bundle was rebuilt at the same place (loomc writes a new file
/// and renames it over the old one) would return the old code. A path is
/// opened by its name the first time (so debuggers and sanitizers name the
/// library by its file); when the file under an already opened path is
/// another one (device and inode), it is opened through a symlink of a name
/// never used before, which glibc identifies by its file: the same file
/// shares one handle, a rebuilt one is loaded anew.
void *dlopenViaFreshName(const fs::path &lib) {
  static std::atomic<unsigned long> counter{0};
  std::error_code ec;
  fs::path tmp = fs::temp_directory_path(ec);
  fs::path abs = fs::absolute(lib, ec);
  if (tmp.empty() || abs.empty())
    return nullptr;
  std::string tmpl = (tmp / "loom-dl-XXXXXX").string();
  char *dir = mkdtemp(tmpl.data());
  if (!dir)
    return nullptr;
  fs::path link = fs::path(dir) / (std::to_string(getpid()) + "-" +
                                   std::to_string(counter.fetch_add(1)) + "-" +
                                   lib.filename().string());
  void *handle = nullptr;
  if (symlink(abs.c_str(), link.c_str()) == 0) {
    handle = dlopen(link.c_str(), RTLD_NOW | RTLD_LOCAL);
    unlink(link.c_str());
  }
  rmdir(dir);
  return handle;
}

void *dlopenFresh(const fs::path &lib) {
  static std::mutex mu;
  // The file each path name was first opened as.
  static std::map<std::string, std::pair<dev_t, ino_t>> opened;
  struct stat st;
  if (stat(lib.c_str(), &st) != 0)
    return dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL); // its error
  std::lock_guard<std::mutex> lock(mu);
  auto [it, first] = opened.try_emplace(lib.string(), st.st_dev, st.st_ino);
  if (!first && it->second != std::make_pair(st.st_dev, st.st_ino))
    if (void *handle = dlopenViaFreshName(lib))
      return handle;
  return dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
}
} // namespace

bool loadLibrary(const std::string &bundle, const Manifest &m,
                 std::map<std::string, EntryFn> &fns, std::string *error) {
  fs::path lib = resolveBundlePath(bundle, m.library);
  std::error_code ec;
  if (!fs::exists(lib, ec)) {
    *error = "library '" + m.library +
             "' named by manifest.json not found "
             "(looked for " +
             lib.string() + ")";
    return false;
  }
  if (std::string why = checkBeforeDlopen(m, lib.string()); !why.empty()) {
    *error = bundle + ": " + why;
    return false;
  }
  // The library resolves loom_rt_* and memrefCopy from the global scope.
  // An executable exports them with -rdynamic; a shared object that holds
  // the runtime (a Python extension, loaded RTLD_LOCAL) is promoted to the
  // global scope here so that its definitions are found.
  Dl_info self;
  if (dladdr(reinterpret_cast<void *>(&loom_rt_abi_version), &self) &&
      self.dli_fname)
    dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL);
  void *handle = dlopenFresh(lib);
  if (!handle) {
    const char *why = dlerror();
    *error = "cannot load library " + lib.string() + ": " +
             (why ? why : "unknown error");
    return false;
  }
  for (const Entry &e : m.entries) {
    dlerror();
    void *sym = dlsym(handle, e.symbol.c_str());
    if (!sym) {
      const char *why = dlerror();
      *error = "entry '" + e.name + "': symbol '" + e.symbol +
               "' not found in " + lib.string() + ": " +
               (why ? why : "null symbol");
      return false;
    }
    fns[e.name] = reinterpret_cast<EntryFn>(sym);
  }
  // A CUDA bundle's constant globals go to the device now, once, through
  // the function loom-gpu-host-program generated for them (absent when the
  // program has none); the entries' resident lookups then find them, so no
  // call uploads a constant.
  if (m.target.isCuda())
    if (void *upload = dlsym(handle, "loom_gpu_upload_constants"))
      reinterpret_cast<void (*)()>(upload)(); // fatal on a device error
  return true;
}

void mpiEnvRank(int64_t &rank, int64_t &size) {
  rank = 0;
  size = 1;
  for (const char *v : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"})
    if (const char *s = std::getenv(v)) {
      rank = std::atoll(s);
      break;
    }
  for (const char *v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
    if (const char *s = std::getenv(v)) {
      size = std::atoll(s);
      break;
    }
}

bool selectRanks(const std::string &bundle, const Manifest &m,
                 const std::string &backend, bool backendGiven, int ranks,
                 bool &useMpi, int64_t &mpiRank,
                 std::vector<int64_t> &localRanks, std::string *error) {
  useMpi = backend == "mpi" || (!backendGiven && loom::rt::launchedByMpirun());
  if (ranks && ranks != m.numRanks) {
    *error = "--ranks " + std::to_string(ranks) +
             " disagrees with the bundle, which was compiled for " +
             std::to_string(m.numRanks) + " ranks (mesh " + m.meshString() +
             "); pass --ranks " + std::to_string(m.numRanks) +
             " (or omit --ranks), or recompile for " + std::to_string(ranks) +
             " ranks";
    return false;
  }
  int64_t mpiSize = 1;
  mpiRank = 0;
  localRanks.clear();
  if (useMpi) {
    if (!loom::rt::mpiAvailable()) {
      *error = "--backend mpi: this loom-run was built without MPI "
               "(LOOM_ENABLE_MPI=OFF); use --backend threads";
      return false;
    }
    mpiEnvRank(mpiRank, mpiSize);
    if (mpiSize != m.numRanks) {
      *error =
          (loom::rt::launchedByMpirun()
               ? "mpirun started " + std::to_string(mpiSize) + " processes"
               : std::string("--backend mpi without mpirun runs 1 process")) +
          ", but the bundle has " + std::to_string(m.numRanks) +
          " ranks (mesh " + m.meshString() + "); start it with `mpirun -np " +
          std::to_string(m.numRanks) + " loom-run " + bundle + " ...`";
      return false;
    }
    localRanks.push_back(mpiRank);
  } else {
    for (int64_t r = 0; r < m.numRanks; ++r)
      localRanks.push_back(r);
  }
  return true;
}

namespace {
/// A progress bar on stderr (weights).
class Progress {
public:
  Progress(bool enabled, int64_t totalBytes, size_t totalSlices)
      : Enabled(enabled), Total(totalBytes), Slices(totalSlices) {}
  void update(int64_t doneBytes, size_t doneSlices) {
    if (!Enabled)
      return;
    double now = nowMs();
    if (doneSlices != Slices && now - Last < 50)
      return;
    Last = now;
    constexpr int width = 30;
    double frac = Total > 0 ? double(doneBytes) / double(Total)
                            : (Slices ? double(doneSlices) / Slices : 1.0);
    int fill = int(frac * width + 0.5);
    std::string bar(size_t(fill), '#');
    bar.append(size_t(width - fill), ' ');
    std::fprintf(stderr,
                 "\rloom-run: mapping weights [%s] %3d%% %zu/%zu "
                 "slices, %s / %s",
                 bar.c_str(), int(frac * 100 + 0.5), doneSlices, Slices,
                 humanBytes(double(doneBytes)).c_str(),
                 humanBytes(double(Total)).c_str());
    if (doneSlices == Slices)
      std::fputc('\n', stderr);
    std::fflush(stderr);
  }

private:
  bool Enabled;
  int64_t Total;
  size_t Slices;
  double Last = -1e9;
};
} // namespace

namespace {

/// Packs a 2-D f32 weight that the manifest marks as a GEMM right operand
/// (`transB`: stored [N, K]) from its slice at `data` (strided: through a
/// contiguous copy), for every run of the rank (bindWeights registers it).
/// Nothing when the process does not pack weights ($LOOM_GEMM=openblas, a
/// CPU without a packed kernel) or is out of memory: the GEMM then takes
/// its other paths.
void packGemmWeight(const void *data, bool transB, PlannedWeight &w) {
  if (w.shape.size() != 2 || w.strides.size() != 2)
    return;
  std::vector<int64_t> contiguous(2);
  rowMajorStrides(2, w.shape.data(), contiguous.data());
  const auto *src = static_cast<const float *>(data);
  std::vector<float> copy;
  if (w.strides != contiguous) {
    copy.resize(size_t(w.shape[0] * w.shape[1]));
    copyStrided(int64_t(sizeof(float)), 2, w.shape.data(),
                static_cast<const char *>(data), w.strides.data(),
                reinterpret_cast<char *>(copy.data()), contiguous.data());
    src = copy.data();
  }
  int64_t k = transB ? w.shape[1] : w.shape[0];
  int64_t n = transB ? w.shape[0] : w.shape[1];
  w.gemm.transB = transB;
  w.gemm.packed =
      loom::rt::packWeightAtLoad(transB, k, n, src, /*mapped=*/copy.empty());
}

} // namespace

/// A copy of the weight slice `w` at `data`, contiguous (or in the
/// interleaved layout `il` when it has rows); null when out of memory.
static Buffer copyWeight(const void *data, const PlannedWeight &w, DType dtype,
                         const Interleave *il) {
  int64_t es = dtypeSize(dtype), n = 1;
  for (int64_t d : w.shape)
    n *= d;
  Buffer b = allocBuffer(n * es);
  if (!b)
    return b;
  if (il && il->rows) {
    interleaveRows(static_cast<const char *>(data), w.shape, w.strides, *il,
                   b.get());
  } else {
    std::vector<int64_t> contiguous(w.shape.size());
    rowMajorStrides(int64_t(w.shape.size()), w.shape.data(), contiguous.data());
    copyStrided(es, int64_t(w.shape.size()), w.shape.data(),
                static_cast<const char *>(data), w.strides.data(), b.get(),
                contiguous.data());
  }
  return b;
}

bool mapWeights(const std::string &bundle, const Manifest &m,
                const Entry &entry, const std::vector<int64_t> &localRanks,
                bool progressBar, MappedWeights &out, std::string *error) {
  for (int64_t r : localRanks) {
    out.perRank[r];
    auto it = m.ranks[size_t(r)].weights.find(entry.name);
    if (it == m.ranks[size_t(r)].weights.end())
      continue;
    for (const WeightSlice &s : it->second) {
      out.bytes += s.nbytes;
      ++out.slices;
    }
  }
  Progress progress(progressBar, out.bytes, out.slices);
  int64_t doneBytes = 0;
  size_t doneSlices = 0;
  long page = sysconf(_SC_PAGESIZE);
  volatile char sink = 0;
  std::string err;
  for (int64_t r : localRanks) {
    const RankInfo &ri = m.ranks[size_t(r)];
    auto it = ri.weights.find(entry.name);
    if (it == ri.weights.end())
      continue;
    std::vector<PlannedWeight> &plan = out.perRank[r];
    for (const WeightSlice &s : it->second) {
      fs::path p = resolveBundlePath(bundle, s.file);
      std::string where = "rank " + std::to_string(r) + " weight '" + s.name +
                          "' (offset " + std::to_string(s.offset) + ", size " +
                          std::to_string(s.nbytes) + ")";
      auto f = loom::rt::mapFile(p.string(), &err);
      if (!f) {
        *error = where + ": " + err;
        return false;
      }
      auto slice = f->slice(s.offset, s.nbytes);
      if (!slice) {
        *error = where + ": " + slice.error().message;
        return false;
      }
      const void *data = *slice;
      // Touch every page so that the run does not pay the page faults.
      const char *c = static_cast<const char *>(data);
      for (int64_t o = 0; o < s.nbytes; o += page) {
        sink = sink + c[o];
        if ((o & ((int64_t(1) << 26) - 1)) == 0)
          progress.update(doneBytes + o, doneSlices);
      }
      out.keep.push_back(std::move(f));
      PlannedWeight w;
      w.path = p.string();
      w.offset = s.offset;
      w.nbytes = s.nbytes;
      w.shape = s.shape;
      w.strides = s.strides;
      size_t k = plan.size(); // the weight's index in the entry
      if (k < entry.gemmB.size() && entry.gemmB[k] != GemmB::None &&
          !m.target.isCuda())
        packGemmWeight(data, entry.gemmB[k] == GemmB::NK, w);
      std::vector<int64_t> contiguous(w.shape.size());
      rowMajorStrides(int64_t(w.shape.size()), w.shape.data(),
                      contiguous.data());
      if (m.target.isCuda() && w.strides != contiguous &&
          k < entry.weights.size()) {
        Buffer b = copyWeight(data, w, entry.weights[k].dtype, nullptr);
        if (!b) {
          *error = where + ": out of memory for its contiguous copy";
          return false;
        }
        int64_t n = dtypeSize(entry.weights[k].dtype);
        for (int64_t d : w.shape)
          n *= d;
        w.contiguousBytes = n;
        w.contiguous = std::shared_ptr<char>(b.release(), FreeDeleter());
      }
      plan.push_back(std::move(w));
      doneBytes += s.nbytes;
      progress.update(doneBytes, ++doneSlices);
    }
  }
  (void)sink;
  return true;
}

std::vector<int64_t> makeDescriptor(const void *data,
                                    const std::vector<int64_t> &shape,
                                    const std::vector<int64_t> &strides) {
  std::vector<int64_t> d(3 + 2 * shape.size());
  std::memcpy(&d[0], &data, sizeof(void *));
  std::memcpy(&d[1], &data, sizeof(void *));
  d[2] = 0;
  for (size_t i = 0; i < shape.size(); ++i) {
    d[3 + i] = shape[i];
    d[3 + shape.size() + i] = strides[i];
  }
  return d;
}

bool bindWeights(loom_rt_ctx *ctx, const Entry &e,
                 const std::vector<PlannedWeight> &weights, BoundWeights &out,
                 std::string *error) {
  for (size_t k = 0; k < weights.size(); ++k) {
    const PlannedWeight &w = weights[k];
    std::string err;
    if (!loom::rt::mapWeight(ctx, int64_t(k), w.path, w.offset, w.nbytes,
                             &err)) {
      *error = "weight '" + e.weights[k].name + "': " + err;
      return false;
    }
    const void *p = loom_rt_weight(ctx, int64_t(k));
    std::vector<int64_t> contiguous(w.shape.size());
    rowMajorStrides(int64_t(w.shape.size()), w.shape.data(), contiguous.data());
    const Interleave &il = e.interleave[k];
    if (w.contiguous) {
      // (A CUDA bundle's slice, copied once at load.)
      out.descs.push_back(
          makeDescriptor(w.contiguous.get(), w.shape, contiguous));
      out.notOwned.insert(w.contiguous.get());
      continue;
    }
    if (w.strides != contiguous || il.rows) {
      // This rank's copy, made once at load: a partitioned weight whose
      // block is not contiguous in its file (e.g. split by columns), and/or
      // a quantized weight in the interleaved layout.
      Buffer b = copyWeight(p, w, e.weights[k].dtype, &il);
      if (!b) {
        *error = "out of memory for weight '" + e.weights[k].name + "'";
        return false;
      }
      out.descs.push_back(makeDescriptor(b.get(), w.shape, contiguous));
      out.notOwned.insert(b.get());
      loom::rt::registerLoadPackedWeight(
          ctx, reinterpret_cast<const float *>(b.get()), w.gemm);
      out.owned.push_back(std::move(b));
      continue;
    }
    out.descs.push_back(makeDescriptor(p, w.shape, w.strides));
    out.notOwned.insert(p);
    loom::rt::registerLoadPackedWeight(ctx, static_cast<const float *>(p),
                                       w.gemm);
  }
  return true;
}

int64_t packOutput(loom_rt_ctx *ctx, const OutputSpec &o, const OutputView &v,
                   Buffer &buf, int64_t &capacity,
                   std::vector<int64_t> &shape) {
  int64_t es = dtypeSize(o.dtype), n = 1;
  shape.assign(v.sizes, v.sizes + o.rank);
  for (int64_t d : shape)
    n *= d;
  if (!buf || n * es > capacity) {
    buf = allocBuffer(std::max<int64_t>(n * es, 1));
    if (!buf)
      loom::rt::failRank(ctx, "out of memory for the boundary result '" +
                                  o.name + "'");
    capacity = n * es;
  }
  std::vector<int64_t> rowMajor(size_t(o.rank));
  rowMajorStrides(o.rank, shape.data(), rowMajor.data());
  if (n > 0)
    copyStrided(es, o.rank, shape.data(), v.aligned + v.offset * es, v.strides,
                buf.get(), rowMajor.data());
  return n;
}

Buffer recvBoundary(loom_rt_ctx *ctx, const TensorSpec &t, int64_t src,
                    int64_t tag, std::vector<int64_t> &shape) {
  shape.assign(t.shape.size(), 0);
  loom_rt_recv(ctx, LOOM_RT_I64, shape.data(), int64_t(shape.size()), src,
               tag + 1);
  int64_t n = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] < 0 || (t.shape[d] >= 0 && shape[d] != t.shape[d]))
      loom::rt::failRank(ctx, "boundary input '" + t.name +
                                  "' received the shape " + shapeString(shape) +
                                  ", expected " + shapeString(t.shape));
    n *= shape[d];
  }
  Buffer b = allocBuffer(std::max<int64_t>(n * dtypeSize(t.dtype), 1));
  if (!b)
    loom::rt::failRank(ctx,
                       "out of memory for the boundary input '" + t.name + "'");
  loom_rt_recv(ctx, rtDtype(t.dtype), b.get(), n, src, tag);
  return b;
}

std::vector<OutputView> outputViews(const Entry &e,
                                    const std::vector<int64_t> &words) {
  std::vector<OutputView> v;
  size_t base = 0;
  for (const OutputSpec &o : e.outputs) {
    OutputView ov;
    std::memcpy(&ov.allocated, &words[base], sizeof(void *));
    std::memcpy(&ov.aligned, &words[base + 1], sizeof(void *));
    ov.offset = words[base + 2];
    ov.sizes = &words[base + 3];
    ov.strides = &words[base + 3 + size_t(o.rank)];
    v.push_back(ov);
    base += 3 + 2 * size_t(o.rank);
  }
  return v;
}

void freeOutputs(const Entry &e, const std::vector<int64_t> &words,
                 const std::set<const void *> &notOwned) {
  std::set<void *> freed;
  for (const OutputView &o : outputViews(e, words)) {
    void *p = o.allocated;
    if (!p || p == reinterpret_cast<void *>(uintptr_t(0xdeadbeef)) ||
        notOwned.count(p) || !freed.insert(p).second)
      continue;
    std::free(p);
  }
}

} // namespace loom::run
