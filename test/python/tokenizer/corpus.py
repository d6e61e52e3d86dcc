"""The tokenizer test corpus: tricky strings, as bytes (some are not UTF-8).

Shared by test/python/generate/make_llamacpp_reference.py (which records
llama.cpp's ids for them) and the tokenizer tests (which compare Loom's).
"""

CORPUS: list[tuple[str, bytes]] = [
    ("empty", b""),
    ("space", b" "),
    ("two_spaces", b"  "),
    ("hello", "Hello world".encode()),
    ("leading_space", " Hello world".encode()),
    ("whitespace_runs", "a  b   c    d\t\te \t f".encode()),
    ("trailing_ws", "end with spaces   ".encode()),
    ("tabs_newlines", "line1\nline2\r\n\tindented\n\n\nthree blank".encode()),
    ("only_newlines", b"\n\n\n"),
    ("digits", "1 12 123 1234 12345 123456789".encode()),
    ("long_number", "3.14159265358979323846264338327950288419716939937510".encode()),
    ("money_dates", "$1,234.56 on 2024-01-31 at 23:59:59 (+0.5%)".encode()),
    ("code_python", b"def f(x):\n    return x**2 + 1  # square\n\nprint(f(3))\n"),
    ("code_c", b"int main(void) { for (int i = 0; i < 10; ++i) printf(\"%d\\n\", i); }"),
    ("json", b'{"key": [1, 2.5, null, true], "s": "a\\"b"}'),
    ("url", b"https://example.com/path?q=a+b&x=1#frag"),
    ("contractions", "It's, I'm, you're, we've, they'll, he'd, don't".encode()),
    ("contractions_upper", "IT'S I'M YOU'RE WE'VE THEY'LL HE'D DON'T".encode()),
    ("apostrophes_alone", "' '' 's 't rock'n'roll".encode()),
    ("punctuation", "Hello!!! What?? Yes... (no) [maybe] {ok} <tag>".encode()),
    ("accents", "café naïve résumé façade Ærøskøbing".encode()),
    ("combining", "e\u0301 a\u0300 n\u0303 o\u0308 (decomposed)".encode()),
    ("greek_cyrillic", "Αλφα βήτα — Привет, мир!".encode()),
    ("cjk", "你好，世界！日本語のテキスト。한국어 텍스트".encode()),
    ("cjk_mixed", "GPT模型在2024年发布了3个版本".encode()),
    ("arabic_hebrew", "مرحبا بالعالم שלום עולם".encode()),
    ("devanagari_thai", "नमस्ते दुनिया สวัสดีชาวโลก".encode()),
    ("emoji", "I love 🍕 and 🎉!".encode()),
    ("emoji_zwj", "family: 👨\u200d👩\u200d👧\u200d👦, flag: 🏳️\u200d🌈".encode()),
    ("emoji_skin_flags", "👍🏽 🇫🇷🇯🇵 ❤️".encode()),
    ("math_symbols", "∑ x² ≤ ∞ → α·β ± √2 ≠ π".encode()),
    ("nbsp_unicode_spaces", "a\u00a0b\u2009c\u3000d\u2028e".encode()),
    ("zero_width", "zero\u200bwidth\ufeffjoiner".encode()),
    ("control_chars", b"bell\x07 esc\x1b[0m nul\x00 del\x7f"),
    ("special_im_start", b"<|im_start|>user\nHi<|im_end|>\n"),
    ("special_endoftext", b"text<|endoftext|>more"),
    ("special_adjacent", b"<|im_start|><|im_end|><|im_start|>"),
    ("special_partial", b"<|im_start and <|im_end| and |im_end|>"),
    ("special_in_words", b"pre<|im_start|>post and <repo_name>x"),
    ("chat_rendered", b"<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n"),
    ("invalid_continuation", b"bad \x80 byte"),
    ("invalid_lead", b"trunc \xe2\x82 end"),
    ("invalid_ff", b"\xff\xfe\xfd"),
    ("invalid_overlong", b"over\xc0\xaflong"),
    ("invalid_surrogate", b"sur\xed\xa0\x80rogate"),
    ("invalid_truncated_end", b"emoji cut \xf0\x9f\x98"),
    ("mixed_everything", "Ünïcödé 123,456 🚀\t<|im_end|> x'S\n\n".encode()),
    ("long_word", ("supercalifragilisticexpialidocious" * 3).encode()),
    ("repeated_chars", ("a" * 50 + " " + "!" * 20 + "=" * 30).encode()),
    ("spaces_before_punct", "Hello , world . Is it ? Yes !".encode()),
]


def valid_utf8(b: bytes) -> bool:
    try:
        b.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False
