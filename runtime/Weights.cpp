//===- runtime/Weights.cpp - Memory-mapped weight slices --------*- C++ -*-===//

#include "Comm.h"

namespace loom::rt {

std::shared_ptr<const MappedFile> mapFile(const std::string &path,
                                          std::string *error) {
  auto f = MappedFile::share(path, "weight file '" + path + "'");
  if (!f) {
    *error = f.error().message;
    return nullptr;
  }
  return f.take();
}

bool mapWeight(loom_rt_ctx *ctx, int64_t index, const std::string &path,
               int64_t offset, int64_t size, std::string *error) {
  if (index < 0) {
    *error = "weight index " + std::to_string(index) + " is negative";
    return false;
  }
  std::shared_ptr<const MappedFile> f = mapFile(path, error);
  if (!f)
    return false;
  auto p = f->slice(offset, size);
  if (!p) {
    *error = p.error().message;
    return false;
  }
  ctx->mappings.push_back(std::move(f));
  loom_rt_ctx_set_weight(ctx, index, *p);
  return true;
}

} // namespace loom::rt
