//===- HfLoader.cpp - Hugging Face tokenizer.json -------------------------===//
#include "TokenizerImpl.h"
namespace loom::tok {
fmt::Result<std::unique_ptr<Tokenizer>>
Tokenizer::fromHfJson(const std::string &path) {
  return fmt::makeError(path, ": tokenizer.json is not supported yet");
}
} // namespace loom::tok
