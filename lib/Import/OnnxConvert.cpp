//===- OnnxConvert.cpp - Old ONNX opsets through ONNX's converter --------===//
//
// Models below opset 13 are upgraded with the C++ version converter that
// libonnx ships (onnx/version_converter/convert.h). It reports failures by
// throwing; this file is the only place of the importer that catches.
//
//===----------------------------------------------------------------------===//

#include "lib/Import/OnnxConvert.h"

#include <onnx/shape_inference/implementation.h>
#include <onnx/version_converter/convert.h>

#include <cerrno>
#include <exception>

#include <csignal>
#include <sys/wait.h>
#include <unistd.h>

namespace loom {

namespace {
/// Bytes of one element of an ONNX TensorProto data type with a fixed
/// size; 0 for strings and types whose raw data is not checked here.
int64_t elementBytes(int32_t dt) {
  switch (dt) {
  case 2:  // UINT8
  case 3:  // INT8
  case 9:  // BOOL
  case 17: // FLOAT8E4M3FN
  case 18: // FLOAT8E4M3FNUZ
  case 19: // FLOAT8E5M2
  case 20: // FLOAT8E5M2FNUZ
    return 1;
  case 4:  // UINT16
  case 5:  // INT16
  case 10: // FLOAT16
  case 16: // BFLOAT16
    return 2;
  case 1:  // FLOAT
  case 6:  // INT32
  case 12: // UINT32
    return 4;
  case 7:  // INT64
  case 11: // DOUBLE
  case 13: // UINT64
  case 14: // COMPLEX64
    return 8;
  case 15: // COMPLEX128
    return 16;
  default:
    return 0;
  }
}

/// A tensor whose raw bytes are not its dims' worth: libonnx's shape
/// inference copies raw_data into a vector sized by the dims (a
/// heap-buffer-overflow the structure-aware fuzzer found), so the model is
/// refused before the converter sees it.
bool checkTensor(const onnx::TensorProto &t, const std::string &where,
                 std::string &error) {
  int64_t n = 1;
  for (int64_t d : t.dims()) {
    if (d < 0 || (d > 0 && n > (int64_t(1) << 50) / d)) {
      error = where + " has dimension " + std::to_string(d) +
              ", which is negative or overflows; the file is corrupt";
      return false;
    }
    n *= d;
  }
  int64_t es = elementBytes(t.data_type());
  if (!t.has_raw_data() || es == 0)
    return true;
  if (int64_t(t.raw_data().size()) != n * es) {
    error = where + " holds " + std::to_string(t.raw_data().size()) +
            " bytes of raw data for " + std::to_string(n) + " elements of " +
            std::to_string(es) + " bytes; the file is corrupt";
    return false;
  }
  return true;
}

/// checkTensor on every tensor of `g` (initializers, node attributes,
/// subgraphs).
bool checkTensors(const onnx::GraphProto &g, std::string &error,
                  int depth = 0) {
  if (depth > 64) {
    error = "subgraphs nested over 64 deep; the file is corrupt";
    return false;
  }
  for (const auto &t : g.initializer())
    if (!checkTensor(t, "initializer '" + t.name() + "'", error))
      return false;
  for (const auto &node : g.node())
    for (const auto &a : node.attribute()) {
      std::string where = "attribute '" + a.name() + "' of node '" +
                          node.name() + "' (" + node.op_type() + ")";
      if (a.has_t() && !checkTensor(a.t(), where, error))
        return false;
      for (const auto &t : a.tensors())
        if (!checkTensor(t, where, error))
          return false;
      if (a.has_g() && !checkTensors(a.g(), error, depth + 1))
        return false;
      for (const auto &sub : a.graphs())
        if (!checkTensors(sub, error, depth + 1))
          return false;
    }
  return true;
}

/// Reads all of `fd` into `out`.
void readAll(int fd, std::string &out) {
  char buf[1 << 16];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0)
      out.append(buf, size_t(n));
    else if (n == 0 || errno != EINTR)
      return;
  }
}
} // namespace

bool upgradeOnnxOpset(onnx::ModelProto &model, int target, std::string &error) {
  if (!checkTensors(model.graph(), error))
    return false;
  // libonnx's converter dereferences what a malformed model lacks (a fuzzer
  // found a SIGSEGV in graphProtoToGraph), so it runs in a child process:
  // the child writes 'M' + the converted model or 'E' + the message on a
  // pipe; a child that dies is an error, never a crash of the importer.
  int fds[2];
  if (pipe(fds) != 0) {
    error = "cannot create a pipe for ONNX's version converter";
    return false;
  }
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    error = "cannot start ONNX's version converter (fork failed)";
    return false;
  }
  if (pid == 0) {
    close(fds[0]);
    // A crash of the converter ends the child quietly (no stack dump of the
    // host's handlers: LLVM's, a sanitizer's); the parent reports it.
    for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT})
      signal(sig, SIG_DFL);
    std::string reply;
    try {
      // The adapters of broadcasting ops (Add's `broadcast` before opset 7,
      // Gemm 6 -> 7, Softmax 12 -> 13) need the shapes of their inputs:
      // infer them first, on a copy.
      onnx::ModelProto in = model;
      onnx::shape_inference::InferShapes(in);
      onnx::ModelProto out =
          onnx::version_conversion::ConvertVersion(in, target);
      reply = "M" + out.SerializeAsString();
    } catch (const std::exception &e) {
      reply = std::string("E") + e.what();
    } catch (...) {
      reply = "Eunknown error";
    }
    const char *p = reply.data();
    size_t left = reply.size();
    while (left > 0) {
      ssize_t n = write(fds[1], p, left);
      if (n <= 0 && errno != EINTR)
        _exit(1);
      if (n > 0) {
        p += n;
        left -= size_t(n);
      }
    }
    _exit(0);
  }
  close(fds[1]);
  std::string reply;
  readAll(fds[0], reply);
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || reply.empty()) {
    error = WIFSIGNALED(status)
                ? "ONNX's version converter crashed on this model (signal " +
                      std::to_string(WTERMSIG(status)) +
                      "): the model is malformed"
                : "ONNX's version converter failed without a message";
    return false;
  }
  if (reply[0] == 'M') {
    onnx::ModelProto out;
    if (!out.ParseFromString(reply.substr(1))) {
      error = "cannot read the model ONNX's version converter produced";
      return false;
    }
    model.Swap(&out);
    return true;
  }
  error = reply.substr(1);
  // ONNX's messages end with "\n\n==> Context: ..." lines; keep one line,
  // without the "file:line: function: Assertion `...` failed: " prefix.
  size_t failed = error.find("` failed: ");
  if (failed != std::string::npos)
    error = error.substr(failed + 10);
  size_t nl = error.find('\n');
  if (nl != std::string::npos)
    error.resize(nl);
  while (!error.empty() && (error.back() == ' ' || error.back() == '.'))
    error.pop_back();
  return false;
}

} // namespace loom
