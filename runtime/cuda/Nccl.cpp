//===- runtime/cuda/Nccl.cpp - the nccl communicator and its bootstraps ---===//
//
// NCCL over device buffers, one communicator per rank (process). The NCCL
// unique id travels from rank 0 to the others either by MPI_Bcast (under
// mpirun) or by a small TCP rendezvous at MASTER_ADDR:MASTER_PORT (torchrun
// style). Both bootstraps are plain host code, tested without a GPU.
//
// Rendezvous wire format: the client sends "LOOMNCL1" + its rank (int32,
// little endian); rank 0 answers "LOOMNCL1" + the 128-byte id. A peer that
// says something else is an error naming it, not a hang.
//
//===----------------------------------------------------------------------===//

#include "loom/runtime/abi.h"
#include "loom/runtime/cuda.h"

#include "Device.h"
#include "Driver.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#ifdef LOOM_RT_HAVE_MPI
#include <mpi.h>
#endif

using namespace loom::cuda;

namespace {

struct NcclId {
  char bytes[LOOM_CUDA_NCCL_ID_BYTES];
};
using ncclComm_t = struct ncclComm *;

struct Nccl {
  int (*getUniqueId)(NcclId *);
  int (*commInitRank)(ncclComm_t *, int, NcclId, int);
  int (*commDestroy)(ncclComm_t);
  int (*commAbort)(ncclComm_t);
  int (*allReduce)(const void *, void *, size_t, int, int, ncclComm_t,
                   CUstream);
  int (*allGather)(const void *, void *, size_t, int, ncclComm_t, CUstream);
  int (*reduceScatter)(const void *, void *, size_t, int, int, ncclComm_t,
                       CUstream);
  int (*broadcast)(const void *, void *, size_t, int, int, ncclComm_t,
                   CUstream);
  int (*send)(const void *, size_t, int, int, ncclComm_t, CUstream);
  int (*recv)(void *, size_t, int, int, ncclComm_t, CUstream);
  int (*groupStart)();
  int (*groupEnd)();
  const char *(*errorString)(int);
};

std::mutex mu;
Nccl lib;
bool loaded = false;

const Nccl *nccl(std::string *err) {
  std::lock_guard<std::mutex> lock(mu);
  if (loaded)
    return &lib;
  void *h = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!h)
    h = dlopen("libnccl.so", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    *err = "NCCL is not available (libnccl.so.2 not found); install NCCL or "
           "add its directory to LD_LIBRARY_PATH";
    return nullptr;
  }
  Nccl n{};
  auto get = [&](auto &fn, const char *name) {
    fn =
        reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, name));
    return fn != nullptr;
  };
  bool all = get(n.getUniqueId, "ncclGetUniqueId") &&
             get(n.commInitRank, "ncclCommInitRank") &&
             get(n.commDestroy, "ncclCommDestroy") &&
             get(n.commAbort, "ncclCommAbort") &&
             get(n.allReduce, "ncclAllReduce") &&
             get(n.allGather, "ncclAllGather") &&
             get(n.reduceScatter, "ncclReduceScatter") &&
             get(n.broadcast, "ncclBroadcast") && get(n.send, "ncclSend") &&
             get(n.recv, "ncclRecv") && get(n.groupStart, "ncclGroupStart") &&
             get(n.groupEnd, "ncclGroupEnd") &&
             get(n.errorString, "ncclGetErrorString");
  if (!all) {
    dlclose(h);
    *err = "NCCL is too old (ncclSend/ncclRecv need NCCL 2.7 or newer)";
    return nullptr;
  }
  lib = n;
  loaded = true;
  return &lib;
}

// abi.h dtype -> ncclDataType_t (checked against nccl.h in DriverCheck.cpp).
int ncclType(int32_t dtype) {
  switch (dtype) {
  case LOOM_RT_F32:
    return 7;
  case LOOM_RT_F16:
    return 6;
  case LOOM_RT_BF16:
    return 9;
  case LOOM_RT_F64:
    return 8;
  case LOOM_RT_I8:
    return 0;
  case LOOM_RT_I32:
    return 2;
  case LOOM_RT_I64:
    return 4;
  case LOOM_RT_U8:
    return 1;
  default:
    return -1;
  }
}

//===----------------------------------------------------------------------===//
// TCP rendezvous
//===----------------------------------------------------------------------===//

constexpr char kMagic[8] = {'L', 'O', 'O', 'M', 'N', 'C', 'L', '1'};

using Clock = std::chrono::steady_clock;

/// Reads or writes exactly n bytes before the deadline.
bool ioAll(int fd, void *buf, size_t n, bool write, Clock::time_point end) {
  char *p = static_cast<char *>(buf);
  while (n) {
    int ms = int(std::chrono::duration_cast<std::chrono::milliseconds>(
                     end - Clock::now())
                     .count());
    if (ms <= 0)
      return false;
    pollfd pfd{fd, short(write ? POLLOUT : POLLIN), 0};
    if (poll(&pfd, 1, ms) <= 0)
      return false;
    ssize_t r = write ? ::send(fd, p, n, MSG_NOSIGNAL) : ::recv(fd, p, n, 0);
    if (r <= 0)
      return false;
    p += r;
    n -= size_t(r);
  }
  return true;
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0)
      close(fd);
  }
};

int32_t serveId(int32_t world, int32_t port, double timeout,
                const uint8_t *id) {
  Fd s;
  s.fd = socket(AF_INET6, SOCK_STREAM, 0);
  bool v6 = s.fd >= 0;
  if (!v6)
    s.fd = socket(AF_INET, SOCK_STREAM, 0);
  if (s.fd < 0)
    return setError(std::string("nccl rendezvous: socket: ") +
                    std::strerror(errno));
  int one = 1, zero = 0;
  setsockopt(s.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  int rc;
  if (v6) {
    setsockopt(s.fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_addr = in6addr_any;
    a.sin6_port = htons(uint16_t(port));
    rc = bind(s.fd, reinterpret_cast<sockaddr *>(&a), sizeof a);
  } else {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons(uint16_t(port));
    rc = bind(s.fd, reinterpret_cast<sockaddr *>(&a), sizeof a);
  }
  if (rc != 0 || listen(s.fd, 128) != 0)
    return setError("nccl rendezvous: rank 0 cannot listen on port " +
                    std::to_string(port) + ": " + std::strerror(errno) +
                    " (is MASTER_PORT in use?)");
  auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                std::chrono::duration<double>(timeout));
  for (int served = 1; served < world;) {
    int ms = int(std::chrono::duration_cast<std::chrono::milliseconds>(
                     end - Clock::now())
                     .count());
    pollfd pfd{s.fd, POLLIN, 0};
    if (ms <= 0 || poll(&pfd, 1, ms) <= 0)
      return setError("nccl rendezvous: rank 0 timed out after " +
                      std::to_string(int(timeout)) + " s with " +
                      std::to_string(served - 1) + " of " +
                      std::to_string(world - 1) +
                      " ranks connected (check WORLD_SIZE and that every "
                      "rank uses the same MASTER_ADDR:MASTER_PORT)");
    Fd c;
    c.fd = accept(s.fd, nullptr, nullptr);
    if (c.fd < 0)
      continue;
    char hello[12];
    if (!ioAll(c.fd, hello, sizeof hello, false, end) ||
        std::memcmp(hello, kMagic, 8) != 0)
      continue; // not one of ours (a port scanner, a stale client): ignore
    char reply[8 + LOOM_CUDA_NCCL_ID_BYTES];
    std::memcpy(reply, kMagic, 8);
    std::memcpy(reply + 8, id, LOOM_CUDA_NCCL_ID_BYTES);
    if (ioAll(c.fd, reply, sizeof reply, true, end))
      ++served;
  }
  return ok();
}

int32_t fetchId(int32_t rank, const char *addr, int32_t port, double timeout,
                uint8_t *id) {
  auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                std::chrono::duration<double>(timeout));
  std::string lastWhy = "no answer";
  std::string portStr = std::to_string(port);
  while (Clock::now() < end) {
    addrinfo hints{}, *res = nullptr;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int g = getaddrinfo(addr, portStr.c_str(), &hints, &res);
    if (g != 0)
      return setError(std::string("nccl rendezvous: cannot resolve "
                                  "MASTER_ADDR '") +
                      addr + "': " + gai_strerror(g));
    for (addrinfo *ai = res; ai; ai = ai->ai_next) {
      Fd c;
      c.fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
      if (c.fd < 0)
        continue;
      if (connect(c.fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        lastWhy = std::strerror(errno);
        continue;
      }
      char hello[12];
      std::memcpy(hello, kMagic, 8);
      uint32_t r = uint32_t(rank);
      for (int i = 0; i < 4; ++i)
        hello[8 + i] = char((r >> (8 * i)) & 0xff);
      char reply[8 + LOOM_CUDA_NCCL_ID_BYTES];
      if (!ioAll(c.fd, hello, sizeof hello, true, end) ||
          !ioAll(c.fd, reply, sizeof reply, false, end)) {
        lastWhy = "connection closed";
        continue;
      }
      freeaddrinfo(res);
      if (std::memcmp(reply, kMagic, 8) != 0)
        return setError(std::string("nccl rendezvous: ") + addr + ":" +
                        portStr + " is not a Loom rank 0 (wrong MASTER_PORT?)");
      std::memcpy(id, reply + 8, LOOM_CUDA_NCCL_ID_BYTES);
      return ok();
    }
    freeaddrinfo(res);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return setError("nccl rendezvous: rank " + std::to_string(rank) +
                  " could not reach rank 0 at " + addr + ":" + portStr +
                  " within " + std::to_string(int(timeout)) + " s (" + lastWhy +
                  "); is rank 0 running with the same "
                  "MASTER_ADDR/MASTER_PORT?");
}

bool envInt(const char *name, int64_t &out, std::string *err) {
  const char *v = std::getenv(name);
  if (!v || !*v) {
    *err = std::string("$") + name +
           " is not set: set RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT "
           "(as torchrun does), or start under mpirun and use the MPI "
           "bootstrap";
    return false;
  }
  char *e = nullptr;
  long long x = std::strtoll(v, &e, 10);
  if (*e || x < 0) {
    *err =
        std::string("$") + name + "='" + v + "' is not a non-negative integer";
    return false;
  }
  out = x;
  return true;
}

} // namespace

struct loom_cuda_nccl {
  loom_cuda_device *dev;
  const Nccl *lib;
  ncclComm_t comm;
  int32_t rank, world;
};

namespace {

int32_t ncclFail(const Nccl *n, const char *call, int r) {
  return setError(std::string(call) + " failed: ncclResult " +
                  std::to_string(r) + " (" + n->errorString(r) + ")");
}

/// Common checks of a collective; makes the device current.
int32_t prologue(loom_cuda_nccl *c, const char *call, int32_t dtype,
                 int64_t count, int &type) {
  if (!c)
    return setError(std::string(call) + ": null communicator");
  type = ncclType(dtype);
  if (type < 0)
    return setError(std::string(call) + ": invalid dtype " +
                    std::to_string(dtype));
  if (count < 0)
    return setError(std::string(call) + ": negative count");
  CUresult r = c->dev->drv->cuCtxSetCurrent(c->dev->ctx);
  if (r != kCudaSuccess)
    return cuFail(call, r);
  return 0;
}

CUstream cs(loom_cuda_stream s) { return static_cast<CUstream>(s); }
void *vp(loom_cuda_ptr p) { return reinterpret_cast<void *>(p); }

} // namespace

extern "C" {

int32_t loom_cuda_tcp_exchange_id(int32_t rank, int32_t world, const char *addr,
                                  int32_t port, double timeout,
                                  uint8_t id[LOOM_CUDA_NCCL_ID_BYTES]) {
  if (!id || !addr || world < 1 || rank < 0 || rank >= world || port <= 0 ||
      port > 65535)
    return setError("nccl rendezvous: bad arguments (rank " +
                    std::to_string(rank) + " of " + std::to_string(world) +
                    ", port " + std::to_string(port) + ")");
  if (timeout <= 0)
    timeout = 60;
  if (world == 1)
    return ok();
  return rank == 0 ? serveId(world, port, timeout, id)
                   : fetchId(rank, addr, port, timeout, id);
}

int32_t loom_cuda_nccl_unique_id(uint8_t id[LOOM_CUDA_NCCL_ID_BYTES]) {
  std::string err;
  const Nccl *n = nccl(&err);
  if (!n)
    return setError("loom_cuda_nccl_unique_id: " + err);
  NcclId x;
  int r = n->getUniqueId(&x);
  if (r != 0)
    return ncclFail(n, "ncclGetUniqueId", r);
  std::memcpy(id, x.bytes, sizeof x.bytes);
  return ok();
}

int32_t loom_cuda_nccl_init_id(loom_cuda_device *dev, int32_t rank,
                               int32_t world,
                               const uint8_t id[LOOM_CUDA_NCCL_ID_BYTES],
                               loom_cuda_nccl **out) {
  if (!out || !id || world < 1 || rank < 0 || rank >= world)
    return setError("loom_cuda_nccl_init_id: bad arguments (rank " +
                    std::to_string(rank) + " of " + std::to_string(world) +
                    ")");
  *out = nullptr;
  if (!dev)
    return setError("loom_cuda_nccl_init_id: no CUDA device: open one with "
                    "loom_cuda_open first");
  std::string err;
  const Nccl *n = nccl(&err);
  if (!n)
    return setError("loom_cuda_nccl_init_id: " + err);
  CUresult cr = dev->drv->cuCtxSetCurrent(dev->ctx);
  if (cr != kCudaSuccess)
    return cuFail("loom_cuda_nccl_init_id", cr);
  NcclId x;
  std::memcpy(x.bytes, id, sizeof x.bytes);
  ncclComm_t comm = nullptr;
  int r = n->commInitRank(&comm, world, x, rank);
  if (r != 0)
    return ncclFail(n, "ncclCommInitRank", r);
  *out = new loom_cuda_nccl{dev, n, comm, rank, world};
  return ok();
}

int32_t loom_cuda_nccl_init_env(loom_cuda_device *dev, double timeout,
                                loom_cuda_nccl **out) {
  if (!out)
    return setError("loom_cuda_nccl_init_env: null out");
  *out = nullptr;
  std::string err;
  int64_t rank = 0, world = 0, port = 0;
  if (!envInt("RANK", rank, &err) || !envInt("WORLD_SIZE", world, &err) ||
      !envInt("MASTER_PORT", port, &err))
    return setError("loom_cuda_nccl_init_env: " + err);
  const char *addr = std::getenv("MASTER_ADDR");
  if (!addr || !*addr)
    return setError("loom_cuda_nccl_init_env: $MASTER_ADDR is not set: set "
                    "RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT");
  if (world < 1 || rank >= world || world > INT32_MAX)
    return setError("loom_cuda_nccl_init_env: RANK=" + std::to_string(rank) +
                    " is not below WORLD_SIZE=" + std::to_string(world));
  if (!dev)
    return setError("loom_cuda_nccl_init_env: no CUDA device: open one with "
                    "loom_cuda_open first");
  uint8_t id[LOOM_CUDA_NCCL_ID_BYTES] = {0};
  if (rank == 0 && loom_cuda_nccl_unique_id(id))
    return -1;
  if (loom_cuda_tcp_exchange_id(int32_t(rank), int32_t(world), addr,
                                int32_t(port), timeout, id))
    return -1;
  return loom_cuda_nccl_init_id(dev, int32_t(rank), int32_t(world), id, out);
}

int32_t loom_cuda_nccl_init_mpi(loom_cuda_device *dev, loom_cuda_nccl **out) {
  if (!out)
    return setError("loom_cuda_nccl_init_mpi: null out");
  *out = nullptr;
#ifdef LOOM_RT_HAVE_MPI
  int inited = 0;
  MPI_Initialized(&inited);
  if (!inited) {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
  }
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  // Rank 0 broadcasts a status byte with the id, so that its failure fails
  // every rank at once instead of leaving them in MPI_Bcast.
  uint8_t buf[1 + LOOM_CUDA_NCCL_ID_BYTES] = {0};
  std::string rootErr;
  if (rank == 0) {
    if (!dev)
      rootErr = "no CUDA device: open one with loom_cuda_open first";
    else if (loom_cuda_nccl_unique_id(buf + 1))
      rootErr = lastErrorMessage();
    buf[0] = rootErr.empty() ? 1 : 0;
  }
  MPI_Bcast(buf, sizeof buf, MPI_BYTE, 0, MPI_COMM_WORLD);
  if (!buf[0])
    return setError("loom_cuda_nccl_init_mpi: rank 0 could not create the "
                    "NCCL id" +
                    (rootErr.empty() ? std::string() : ": " + rootErr));
  if (!dev)
    return setError("loom_cuda_nccl_init_mpi: no CUDA device: open one with "
                    "loom_cuda_open first");
  return loom_cuda_nccl_init_id(dev, rank, world, buf + 1, out);
#else
  (void)dev;
  return setError("loom_cuda_nccl_init_mpi: the runtime was built without "
                  "MPI; use loom_cuda_nccl_init_env (RANK, WORLD_SIZE, "
                  "MASTER_ADDR, MASTER_PORT)");
#endif
}

void loom_cuda_nccl_destroy(loom_cuda_nccl *c) {
  if (!c)
    return;
  c->dev->drv->cuCtxSetCurrent(c->dev->ctx);
  c->lib->commDestroy(c->comm);
  delete c;
}

int32_t loom_cuda_nccl_rank(loom_cuda_nccl *c) { return c ? c->rank : -1; }
int32_t loom_cuda_nccl_world(loom_cuda_nccl *c) { return c ? c->world : -1; }

int32_t loom_cuda_nccl_all_reduce(loom_cuda_nccl *c, int32_t dtype, int32_t op,
                                  loom_cuda_ptr in, loom_cuda_ptr out,
                                  int64_t count, loom_cuda_stream stream) {
  int type;
  if (prologue(c, "loom_cuda_nccl_all_reduce", dtype, count, type))
    return -1;
  if (op < 0 || op >= LOOM_RT_NUM_REDUCE_OPS)
    return setError("loom_cuda_nccl_all_reduce: invalid op " +
                    std::to_string(op));
  int r = c->lib->allReduce(vp(in), vp(out), size_t(count), type, op, c->comm,
                            cs(stream));
  return r ? ncclFail(c->lib, "ncclAllReduce", r) : ok();
}

int32_t loom_cuda_nccl_all_gather(loom_cuda_nccl *c, int32_t dtype,
                                  loom_cuda_ptr in, loom_cuda_ptr out,
                                  int64_t count, loom_cuda_stream stream) {
  int type;
  if (prologue(c, "loom_cuda_nccl_all_gather", dtype, count, type))
    return -1;
  int r = c->lib->allGather(vp(in), vp(out), size_t(count), type, c->comm,
                            cs(stream));
  return r ? ncclFail(c->lib, "ncclAllGather", r) : ok();
}

int32_t loom_cuda_nccl_reduce_scatter(loom_cuda_nccl *c, int32_t dtype,
                                      int32_t op, loom_cuda_ptr in,
                                      loom_cuda_ptr out, int64_t count,
                                      loom_cuda_stream stream) {
  int type;
  if (prologue(c, "loom_cuda_nccl_reduce_scatter", dtype, count, type))
    return -1;
  if (op < 0 || op >= LOOM_RT_NUM_REDUCE_OPS)
    return setError("loom_cuda_nccl_reduce_scatter: invalid op " +
                    std::to_string(op));
  int r = c->lib->reduceScatter(vp(in), vp(out), size_t(count), type, op,
                                c->comm, cs(stream));
  return r ? ncclFail(c->lib, "ncclReduceScatter", r) : ok();
}

int32_t loom_cuda_nccl_broadcast(loom_cuda_nccl *c, int32_t dtype,
                                 loom_cuda_ptr in, loom_cuda_ptr out,
                                 int64_t count, int32_t root,
                                 loom_cuda_stream stream) {
  int type;
  if (prologue(c, "loom_cuda_nccl_broadcast", dtype, count, type))
    return -1;
  if (root < 0 || root >= c->world)
    return setError("loom_cuda_nccl_broadcast: root " + std::to_string(root) +
                    " outside the world of " + std::to_string(c->world));
  int r = c->lib->broadcast(vp(in), vp(out), size_t(count), type, root, c->comm,
                            cs(stream));
  return r ? ncclFail(c->lib, "ncclBroadcast", r) : ok();
}

int32_t loom_cuda_nccl_send(loom_cuda_nccl *c, int32_t dtype, loom_cuda_ptr buf,
                            int64_t count, int32_t peer,
                            loom_cuda_stream stream) {
  int type;
  if (prologue(c, "loom_cuda_nccl_send", dtype, count, type))
    return -1;
  if (peer < 0 || peer >= c->world)
    return setError("loom_cuda_nccl_send: peer " + std::to_string(peer) +
                    " outside the world of " + std::to_string(c->world));
  int r = c->lib->send(vp(buf), size_t(count), type, peer, c->comm, cs(stream));
  return r ? ncclFail(c->lib, "ncclSend", r) : ok();
}

int32_t loom_cuda_nccl_recv(loom_cuda_nccl *c, int32_t dtype, loom_cuda_ptr buf,
                            int64_t count, int32_t peer,
                            loom_cuda_stream stream) {
  int type;
  if (prologue(c, "loom_cuda_nccl_recv", dtype, count, type))
    return -1;
  if (peer < 0 || peer >= c->world)
    return setError("loom_cuda_nccl_recv: peer " + std::to_string(peer) +
                    " outside the world of " + std::to_string(c->world));
  int r = c->lib->recv(vp(buf), size_t(count), type, peer, c->comm, cs(stream));
  return r ? ncclFail(c->lib, "ncclRecv", r) : ok();
}

int32_t loom_cuda_nccl_group(loom_cuda_nccl *c, int32_t begin) {
  if (!c)
    return setError("loom_cuda_nccl_group: null communicator");
  int r = begin ? c->lib->groupStart() : c->lib->groupEnd();
  return r ? ncclFail(c->lib, begin ? "ncclGroupStart" : "ncclGroupEnd", r)
           : ok();
}

} // extern "C"
