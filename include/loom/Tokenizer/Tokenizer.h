//===- Tokenizer.h - Text tokenizers read from the model file ---*- C++ -*-===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//
//
// The tokenizer of an LLM, read from the model itself: the tokenizer.ggml.*
// metadata of a GGUF file (model "gpt2" = byte-level BPE as in SmolLM2, Qwen2
// and Llama 3; model "llama" = SentencePiece BPE as in Llama 2 and Mistral),
// or a Hugging Face tokenizer.json (+ tokenizer_config.json beside it).
//
// Plain C++20 with no LLVM or MLIR, built without exceptions (loom-run links
// it). Every failure on a malformed file is an Error naming the file, the key
// and what to do; nothing here aborts on bad input. docs/TOKENIZER.md says
// what is supported, what is refused and how it is checked against llama.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_TOKENIZER_TOKENIZER_H
#define LOOM_TOKENIZER_TOKENIZER_H

#include "loom/Formats/Error.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace loom::tok {

/// One turn of a conversation; role is "system", "user" or "assistant".
struct ChatMessage {
  std::string role;
  std::string content;
};

/// A tokenizer loaded from a model file. Immutable after loading, so one
/// instance may be shared by threads.
class Tokenizer {
public:
  /// GGUF: the tokenizer.ggml.* metadata of the file.
  static fmt::Result<std::unique_ptr<Tokenizer>>
  fromGguf(const std::string &path);
  /// HF: tokenizer.json (+ tokenizer_config.json in the same folder when
  /// present; it gives bos/eos, add_bos_token and chat_template).
  static fmt::Result<std::unique_ptr<Tokenizer>>
  fromHfJson(const std::string &path);

  ~Tokenizer();
  Tokenizer(const Tokenizer &) = delete;
  Tokenizer &operator=(const Tokenizer &) = delete;

  /// Text to token ids. addSpecial: BOS (and EOS) as the model's metadata
  /// says (add_bos_token / add_eos_token). parseSpecial: special and control
  /// tokens written in the text (e.g. "<|im_start|>") become their ids;
  /// otherwise they are tokenized as plain text.
  fmt::Result<std::vector<int32_t>>
  encode(std::string_view text, bool addSpecial, bool parseSpecial) const;
  /// The raw bytes token `id` decodes to ("" for control tokens and for ids
  /// out of range).
  std::string tokenBytes(int32_t id) const;
  /// Concatenated tokenBytes (SentencePiece: the leading space of the first
  /// text token is dropped when the model adds a space prefix; the gpt2 and
  /// llama-bpe pre-tokenizers also get llama.cpp's clean-up of " ." " ,"
  /// " 's" ..., SmolLM2 and Qwen2 do not). For streaming, print tokenBytes
  /// of each new token through a Utf8Stream instead. The result may contain
  /// invalid UTF-8.
  std::string decode(const std::vector<int32_t> &ids) const;

  int32_t bos() const; ///< -1 when absent
  int32_t eos() const; ///< -1 when absent
  /// eos, eot, eom and the end-of-turn tokens (<|im_end|>, <|eot_id|>, ...).
  bool isEndOfGeneration(int32_t id) const;
  size_t vocabSize() const;
  /// The Jinja chat template of the model; "" when it has none.
  const std::string &chatTemplate() const;

  // --- Beyond contract A: small queries the tools and tests use. -------------
  /// The vocabulary entry of `id` as stored in the file ("" out of range).
  const std::string &tokenText(int32_t id) const;
  /// The id whose vocabulary entry is exactly `text`, if any.
  std::optional<int32_t> findToken(std::string_view text) const;
  /// True for control/special tokens (decode to "").
  bool isControl(int32_t id) const;
  /// Whether encode(..., addSpecial=true, ...) prepends BOS / appends EOS.
  bool addsBos() const;
  bool addsEos() const;
  /// "gpt2" (byte-level BPE) or "llama" (SentencePiece).
  const std::string &modelKind() const;
  /// The pre-tokenizer in use ("smollm", "llama-bpe", "qwen2", "gpt2", ...;
  /// "" for SentencePiece).
  const std::string &preTokenizer() const;

  struct Impl;

private:
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

/// Streams bytes out only on whole UTF-8 characters: push() returns the
/// complete characters seen so far, keeping an incomplete tail; invalid
/// sequences become U+FFFD as soon as they can no longer complete, and an
/// incomplete tail becomes U+FFFD at flush().
class Utf8Stream {
public:
  std::string push(std::string_view bytes);
  std::string flush();

private:
  std::string pending;
};

/// Chat template families Loom can apply.
enum class ChatFormat { ChatML, Llama3, Mistral };

/// "chatml", "llama3", "mistral".
std::string_view chatFormatName(ChatFormat f);

/// Recognises the family of a Jinja chat template; an unknown (or empty)
/// template is an Error quoting the start of what was seen.
fmt::Result<ChatFormat> detectChatFormat(const std::string &chatTemplate);

/// The prompt text for `msgs` (with the assistant header appended when
/// addGenerationPrompt), byte-identical to what the model's Jinja template
/// renders (transformers' apply_chat_template). ChatML inserts SmolLM2's /
/// Qwen2's default system message only when the template does.
std::string applyChatTemplate(ChatFormat f,
                              const std::vector<ChatMessage> &msgs,
                              bool addGenerationPrompt, const Tokenizer &tok);

} // namespace loom::tok

#endif // LOOM_TOKENIZER_TOKENIZER_H
