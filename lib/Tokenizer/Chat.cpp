//===- Chat.cpp - Chat template families ----------------------------------===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//
//
// Loom does not run Jinja. It recognises the family of a model's template
// and renders the family's format in C++; test/Tokenizer checks the result
// byte for byte against jinja2's rendering of the real templates
// (test/Tokenizer/data/chat_expected.json, made by
// test/python/tokenizer/make_chat_expected.py). A template of another family
// is refused by name.
//
//===----------------------------------------------------------------------===//

#include "TokenizerImpl.h"

namespace loom::tok {

std::string_view chatFormatName(ChatFormat f) {
  switch (f) {
  case ChatFormat::ChatML:
    return "chatml";
  case ChatFormat::Llama3:
    return "llama3";
  case ChatFormat::Mistral:
    return "mistral";
  }
  return "?";
}

fmt::Result<ChatFormat> detectChatFormat(const std::string &tmpl) {
  if (tmpl.empty())
    return fmt::makeError("the model has no chat template "
                          "(tokenizer.chat_template); use a plain prompt");
  if (tmpl.find("<|im_start|>") != std::string::npos)
    return ChatFormat::ChatML;
  if (tmpl.find("<|start_header_id|>") != std::string::npos)
    return ChatFormat::Llama3;
  if (tmpl.find("[INST]") != std::string::npos)
    return ChatFormat::Mistral;
  std::string head = tmpl.substr(0, 80);
  for (char &c : head)
    if (c == '\n')
      c = ' ';
  return fmt::makeError("unknown chat template '", head,
                        tmpl.size() > 80 ? "...'" : "'",
                        " (Loom knows ChatML, Llama 3 and Mistral [INST]); "
                        "use a plain prompt");
}

namespace {
/// ChatML templates (SmolLM2, Qwen2) that insert a default system turn when
/// the conversation has none carry it as a literal; returns it ("" if none).
std::string defaultSystemMessage(const std::string &tmpl) {
  const std::string marker = "<|im_start|>system";
  size_t p = tmpl.find(marker);
  if (p == std::string::npos)
    return {};
  size_t start = p + marker.size();
  // The literal continues with a newline (real or the two characters \n).
  if (tmpl.compare(start, 1, "\n") == 0)
    start += 1;
  else if (tmpl.compare(start, 2, "\\n") == 0)
    start += 2;
  else
    return {};
  size_t end = tmpl.find("<|im_end|>", start);
  if (end == std::string::npos)
    return {};
  std::string s = tmpl.substr(start, end - start);
  // Jinja escapes inside the literal.
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size() && s[i + 1] == 'n') {
      out += '\n';
      ++i;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::string trim(const std::string &s) {
  const char *ws = " \t\n\r\f\v";
  size_t b = s.find_first_not_of(ws);
  if (b == std::string::npos)
    return {};
  size_t e = s.find_last_not_of(ws);
  return s.substr(b, e - b + 1);
}
} // namespace

std::string applyChatTemplate(ChatFormat f,
                              const std::vector<ChatMessage> &msgs,
                              bool addGenerationPrompt, const Tokenizer &tok) {
  std::string out;
  switch (f) {
  case ChatFormat::ChatML: {
    // SmolLM2 / Qwen2:
    //   <|im_start|>{role}\n{content}<|im_end|>\n ... <|im_start|>assistant\n
    std::string sys = defaultSystemMessage(tok.chatTemplate());
    if (!sys.empty() && (msgs.empty() || msgs.front().role != "system"))
      out += "<|im_start|>system\n" + sys + "<|im_end|>\n";
    for (const ChatMessage &m : msgs)
      out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
    if (addGenerationPrompt)
      out += "<|im_start|>assistant\n";
    break;
  }
  case ChatFormat::Llama3: {
    // Llama 3 (3.0 template): bos, then per message
    //   <|start_header_id|>{role}<|end_header_id|>\n\n{content|trim}<|eot_id|>
    out += tok.tokenText(tok.bos());
    for (const ChatMessage &m : msgs)
      out += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n" +
             trim(m.content) + "<|eot_id|>";
    if (addGenerationPrompt)
      out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
    break;
  }
  case ChatFormat::Mistral: {
    // Mistral Instruct: <s>[INST] {user} [/INST]{assistant}</s>...; a system
    // message is put before the first user message, separated by "\n\n".
    out += tok.tokenText(tok.bos());
    std::string system;
    for (const ChatMessage &m : msgs) {
      if (m.role == "system") {
        system = m.content;
      } else if (m.role == "user") {
        std::string content =
            system.empty() ? m.content : system + "\n\n" + m.content;
        system.clear();
        out += "[INST] " + content + " [/INST]";
      } else {
        out += m.content + tok.tokenText(tok.eos());
      }
    }
    break;
  }
  }
  return out;
}

} // namespace loom::tok
