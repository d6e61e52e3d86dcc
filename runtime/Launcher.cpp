//===- runtime/Launcher.cpp - runThreads --------------------------*- C++
//-*-===//

#include "Comm.h"
#include "ThreadPool.h"
#include "ThreadsComm.h"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <system_error>
#include <thread>

namespace loom::rt {

bool launchedByMpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE") ||
         std::getenv("PMIX_RANK");
}

int runThreads(int nranks, std::vector<int64_t> mesh, const RankBody &body,
               const LaunchOptions &options, LaunchResult *result) {
  LaunchResult local;
  LaunchResult &res = result ? *result : local;
  res = LaunchResult();
  if (mesh.empty())
    mesh.push_back(nranks);
  int64_t prod = 1;
  for (int64_t d : mesh)
    prod *= d;
  auto failEarly = [&](const std::string &msg) {
    res.status = 1;
    res.messages.push_back("loom-rt: " + msg);
    if (!options.quiet)
      std::fprintf(stderr, "%s\n", res.messages.back().c_str());
    return 1;
  };
  if (nranks <= 0)
    return failEarly("runThreads: need at least one rank");
  if (prod != nranks)
    return failEarly("runThreads: mesh shape has " + std::to_string(prod) +
                     " ranks, but " + std::to_string(nranks) +
                     " were requested");

  // OpenBLAS starts here, on the unpinned launching thread (startGemm).
  startGemm();

  ThreadWorld world(nranks, options.onFailure, options.quiet);
  double timeout = options.timeoutSeconds > 0 ? options.timeoutSeconds
                                              : defaultTimeoutSeconds();
  std::string tracePath = options.tracePath;
  if (tracePath.empty())
    if (const char *env = std::getenv("LOOM_TRACE"))
      tracePath = env;

  std::vector<std::unique_ptr<Comm>> comms;
  std::vector<std::unique_ptr<loom_rt_ctx>> ctxs;
  for (int r = 0; r < nranks; ++r) {
    std::unique_ptr<Comm> comm = std::make_unique<ThreadsComm>(world);
    if (options.wrapComm) {
      std::string err;
      comm = options.wrapComm(r, std::move(comm), &err);
      if (!comm)
        return failEarly(err);
    }
    comms.push_back(std::move(comm));
    auto ctx = std::make_unique<loom_rt_ctx>();
    std::string err;
    if (!initContext(*ctx, mesh, r, &err))
      return failEarly("runThreads: " + err);
    ctx->comm = comms.back().get();
    ctx->timeoutSeconds = timeout;
    ctx->tracing = !tracePath.empty();
    ctxs.push_back(std::move(ctx));
  }

  res.rankStatus.assign(nranks, -1);
  auto runRank = [&](int r) {
    loom_rt_ctx &ctx = *ctxs[r];
    ThreadContextScope current(&ctx);
    try {
      // The rank's pool lives as long as its body runs (thread ranks share
      // the process: each gets its share of the cores).
      startRankThreads(ctx, options.threadsPerRank, r, nranks);
      int rc = body(&ctx);
      res.rankStatus[r] = rc;
      if (rc != 0) {
        ctx.current = OpDesc();
        ctx.comm->fail(ctx, formatFailure(ctx, "rank body returned status " +
                                                   std::to_string(rc)));
      }
    } catch (const RankAborted &) {
      // Already recorded.
    } catch (const std::exception &e) {
      ctx.current = OpDesc();
      world.recordFailure(
          formatFailure(ctx, std::string("uncaught exception: ") + e.what()));
    } catch (...) {
      ctx.current = OpDesc();
      world.recordFailure(formatFailure(ctx, "uncaught unknown exception"));
    }
    ctx.pool.reset();
  };
  {
    // Thread creation can fail (too many threads, no memory for a stack):
    // std::thread throws std::system_error. The ranks already started are
    // stopped through the abort flag (they fail at their next runtime call
    // or barrier) and joined; the job fails with the reason, never
    // std::terminate.
    std::vector<std::thread> threads;
    threads.reserve(nranks);
    for (int r = 0; r < nranks; ++r) {
      try {
        threads.emplace_back(runRank, r);
      } catch (const std::system_error &e) {
        world.recordFailure(
            "loom-rt: cannot start the thread of rank " + std::to_string(r) +
            " of " + std::to_string(nranks) + ": " + e.what() +
            " (too many threads or too little memory; run fewer ranks per "
            "process, e.g. with --backend mpi)");
        break;
      }
    }
    for (auto &t : threads)
      t.join();
  }

  if (!tracePath.empty()) {
    std::vector<const loom_rt_ctx *> cs;
    for (auto &c : ctxs)
      cs.push_back(c.get());
    writeTrace(tracePath, cs);
  }
  res.messages = world.failures();
  res.status = res.messages.empty() ? 0 : 1;
  if (res.status && !options.quiet) {
    for (const std::string &m : res.messages)
      std::fprintf(stderr, "%s\n", m.c_str());
    std::fprintf(stderr, "loom-rt: job failed (%zu message(s))\n",
                 res.messages.size());
  }
  return res.status;
}

} // namespace loom::rt

extern "C" int32_t loom_rt_run_threads(int32_t nranks, const int64_t *dims,
                                       int32_t ndims, loom_rt_entry_fn entry,
                                       void *user, double timeout_s) {
  std::vector<int64_t> mesh;
  if (dims && ndims > 0)
    mesh.assign(dims, dims + ndims);
  loom::rt::LaunchOptions opts;
  opts.timeoutSeconds = timeout_s;
  return loom::rt::runThreads(
      nranks, mesh, [&](loom_rt_ctx *ctx) { return int(entry(ctx, user)); },
      opts);
}

namespace loom::rt {

#ifndef LOOM_RT_HAVE_MPI
bool mpiAvailable() { return false; }
int runMpi(std::vector<int64_t>, const RankBody &, const LaunchOptions &) {
  std::fprintf(stderr, "loom-rt: this runtime was built without MPI "
                       "(LOOM_ENABLE_MPI=OFF)\n");
  return 1;
}
#endif

} // namespace loom::rt
