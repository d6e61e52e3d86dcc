//===- loom-run.cpp - the Loom launcher -----------------------------------===//
//
// Runs a bundle written by `loomc -o out/` on N ranks: in-process threads
// (the default) or MPI processes (under mpirun the rank comes from MPI).
// Links the runtime only; never LLVM or MLIR.
//
//===----------------------------------------------------------------------===//

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace {

constexpr const char *kUsage = R"(loom-run: run a Loom bundle on N ranks

USAGE: loom-run <bundle-dir> [options]

OPTIONS:
  --ranks N               number of ranks (default: the bundle's mesh size)
  --backend threads|mpi   communicator (default threads; under mpirun: mpi)
  --input NAME=FILE.npy   an input of the entry point (repeatable)
  --output DIR            where outputs are written as .npy (default .)
  --bench                 print per-phase times (load, run, collectives)
  --trace FILE.json       write a Chrome trace of every rank's ops
  --timeout SECONDS       collective timeout before the job is stopped (60)
  --help                  this text
)";

struct Options {
  std::string bundle;
  int ranks = 0;
  std::string backend = "threads";
  std::vector<std::string> inputs;
  std::string outputDir = ".";
  bool bench = false;
  std::string trace;
  double timeout = 60.0;
};

int fail(const std::string &msg) {
  std::fprintf(stderr, "loom-run: %s\n", msg.c_str());
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  Options opts;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](const char *name) -> const char * {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "loom-run: %s needs a value\n", name);
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (arg == "--ranks") {
      opts.ranks = std::atoi(value("--ranks"));
      if (opts.ranks < 1)
        return fail("--ranks must be at least 1");
    } else if (arg == "--backend") {
      opts.backend = value("--backend");
      if (opts.backend != "threads" && opts.backend != "mpi")
        return fail("unknown --backend '" + opts.backend +
                    "'; expected threads or mpi");
    } else if (arg == "--input") {
      opts.inputs.push_back(value("--input"));
    } else if (arg == "--output") {
      opts.outputDir = value("--output");
    } else if (arg == "--bench") {
      opts.bench = true;
    } else if (arg == "--trace") {
      opts.trace = value("--trace");
    } else if (arg == "--timeout") {
      opts.timeout = std::atof(value("--timeout"));
    } else if (!arg.empty() && arg[0] == '-') {
      std::fprintf(stderr, "loom-run: unknown option '%s'\n%s", arg.c_str(),
                   kUsage);
      return 2;
    } else if (opts.bundle.empty()) {
      opts.bundle = arg;
    } else {
      return fail("more than one bundle given ('" + opts.bundle + "' and '" +
                  arg + "')");
    }
  }
  if (opts.bundle.empty()) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  std::filesystem::path manifest =
      std::filesystem::path(opts.bundle) / "manifest.json";
  if (!std::filesystem::exists(manifest))
    return fail(opts.bundle + ": no manifest.json; is this a bundle written "
                              "by `loomc -o " + opts.bundle + "`?");
  return fail("running bundles is not built yet in this version of Loom "
              "(the lower and bundle phases come first)");
}
