#!/usr/bin/env python3
"""Writes the tokenizer test corpus: tests/data/tokenizers/corpus.json (a JSON array of strings,
every one of them valid Unicode, the inputs the reference libraries encode) and seed.txt (the
lines from which the 1 MiB text is generated, see big_text()).

The corpus covers: ASCII prose, contractions, digits and long numbers, runs of spaces, tabs and
newlines, leading/trailing whitespace, punctuation clusters, code, accented Latin in composed
(NFC) and decomposed (NFD) forms, CJK, emoji with ZWJ sequences and skin tones, right-to-left
text, the special-token spellings of the test tokenizers, over-long words and the empty string.
Invalid UTF-8 is not here: the references take strings, so tests/test_tokenizer_ref.c checks
the documented behaviour for it separately.

Usage: python3 tools/tokenizers/make_corpus.py [repository root]"""
import json
import os
import sys
import unicodedata

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kjv import kjv_verses  # noqa: E402

NFD = lambda s: unicodedata.normalize("NFD", s)  # noqa: E731

CORPUS = [
    "",
    "In the beginning God created the heaven and the earth.",
    "And God said, Let there be light: and there was light.",
    "The quick brown fox jumps over the lazy dog. THE QUICK BROWN FOX! the Quick bRoWn fox?",
    "It's John's book; they're here, we've seen it, I'm sure you'll see what he'd do. Don't!",
    "'s 't 're 've 'm 'll 'd 'S 'T 'RE 'VE 'M 'LL 'D ''s '''' 'x",
    "Numbers: 0 7 42 1234 56789 3.14159 -273.15 1,000,000 1e-9 0xDEADBEEF 2024-01-31 12:30:45",
    "12345678901234567890123456789012345678901234567890 and 99999999999999999999",
    "one  two   three    four     five      six",
    "\ttab\tseparated\t\tvalues\t",
    "line one\nline two\n\nline four\n\n\n\nline eight",
    "   leading spaces",
    "trailing spaces   ",
    "  \t\n mixed whitespace \n\t  ",
    " ",
    "    ",
    "\n",
    "\r\n windows\r\nline endings\r\n",
    "Hello!!! What?!? Wait... (yes) [no] {maybe} <tag> \"quoted\" 'single' --- *** ### @@@ $$$ %%% ^^^ &&& ~~~ ``` ||| \\\\",
    "a.b,c;d:e!f?g-h_i+j=k/l\\m|n~o`p@q#r$s%t^u&v*w(x)y[z]",
    "def f(x):\n    return x ** 2 + 1  # square plus one\n",
    "for (int i = 0; i < n; i++) { sum += a[i] * b[i]; }\nprintf(\"%d\\n\", sum);",
    "    if (x != NULL && x->next == NULL) return -1;",
    "<html><body class=\"main\"><p>Hi &amp; bye</p></body></html>",
    "{\"key\": [1, 2.5, true, null], \"nested\": {\"a\": \"b\"}}",
    "café naïve résumé façade Ångström Zoë coöperate Straße œuvre Æsir",
    NFD("café naïve résumé façade Ångström Zoë coöperate Straße œuvre Æsir"),
    "ÀÁÂÃÄÅ àáâãäå ÈÉÊË èéêë ÌÍÎÏ ìíîï ÒÓÔÕÖ òóôõö ÙÚÛÜ ùúûü Ññ Çç Ÿÿ",
    NFD("ÀÁÂÃÄÅ àáâãäå ÈÉÊË èéêë ÌÍÎÏ ìíîï ÒÓÔÕÖ òóôõö ÙÚÛÜ ùúûü Ññ Çç Ÿÿ"),
    "Ελληνικά: Γειά σου Κόσμε. ΟΔΥΣΣΕΥΣ. Русский: Привет, мир! Ёлка.",
    "Tiếng Việt: Xin chào thế giới. Đây là một câu.",
    "中文：你好，世界！这是一个测试。汉字和漢字。",
    "日本語：こんにちは、世界。カタカナとひらがな。東京タワー",
    "한국어: 안녕하세요 세계. 한글 테스트입니다.",
    "Mixed 中文 and English 混合 text 123 数字",
    "Emoji: 😀 😃 😄 🎉 🚀 ❤️ ✨ 🔥 👍",
    "Skin tones: 👍🏻 👍🏼 👍🏽 👍🏾 👍🏿 👋🏽",
    "ZWJ: 👨‍👩‍👧‍👦 👩‍💻 🏳️‍🌈 🧑🏽‍🚀 👁️‍🗨️",
    "Flags: 🇺🇸 🇬🇧 🇯🇵 🇫🇷 and keycaps 1️⃣ #️⃣",
    "עברית: שלום עולם. זהו מבחן.",
    "العربية: مرحبا بالعالم. هذا اختبار.",
    "Mixed direction: English עברית English العربية 123",
    "Fullwidth: ＡＢＣ ａｂｃ １２３ ！？ and ligatures: ﬁ ﬂ ﬀ ﬃ, ½ ² ³ ™ ℃ № Ⅻ ㎏",
    "Compatibility: ｶﾀｶﾅ ⑴ ⒜ ㈱ ﹏ ︵ ＿",
    "Zero width: a\u200bb\u200cc\u200dd\ufeffe and soft\u00adhyphen, nbsp\u00a0here, thin\u2009space, ideographic\u3000space",
    "Control chars: \u0001\u0002\u0007\u001b[0m \u007f end",
    "Combining: e\u0301 a\u0308 o\u0302\u0323 n\u0303 \u0301 leading mark, q\u0307\u0323",
    "Math: ∀x∈ℝ, ∃y: x² + y² = z²; ∑ᵢ aᵢ ≤ ∞ → λ ⊕ ⊗ √2 ≈ 1.414",
    "Symbols: © ® ° ± µ ¶ § † ‡ • … ‰ € £ ¥ ₹ ₿",
    "Hangul jamo: \u1100\u1161\u11a8 and precomposed 각",
    "Thai: สวัสดีครับ Devanagari: नमस्ते दुनिया Tamil: வணக்கம்",
    "Supercalifragilisticexpialidocious antidisestablishmentarianism pneumonoultramicroscopicsilicovolcanoconiosis",
    "a" * 120,
    "xyzzy" * 30 + " end",
    "Special spellings: <s> </s> <unk> <pad> <mask> [CLS] [SEP] [UNK] [PAD] [MASK] <|endoftext|>",
    "<s>Hello</s> [CLS] world [SEP] and <mask> here<mask>there",
    "Repeated: the the the the the the the the the the the the the the the the",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa bbbbbbbbbbbbbbbbbbbbbbbb",
    "UPPER lower Title MiXeD CamelCase snake_case kebab-case SCREAMING_SNAKE",
    "URLs: https://example.com/path?query=1&b=2#frag mailto:user@example.org",
    "Quotes: “curly” ‘single’ «guillemets» „low“ – en dash — em dash",
    "Tricky ▁ already-escaped ▁▁ meta ▁space and Ġ Ċ bytes",
    "\u0130stanbul \u0131 \u03a3\u039f\u03a3 \u1e9e ǅ ǆ Ǆ",
    "And the LORD God formed man of the dust of the ground, and breathed into his nostrils the breath of life; and man became a living soul.",
    "Thou shalt not kill.\nThou shalt not commit adultery.\nThou shalt not steal.",
    "  And it came to pass, when men began to multiply on the face of the earth, and daughters were born unto them,  ",
]

CORPUS += [
    " ".join(["word%d" % i for i in range(60)]),
    "end of corpus.",
]


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    out = os.path.join(root, "tests", "data", "tokenizers")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "corpus.json"), "w", encoding="utf-8") as f:
        json.dump(CORPUS, f, ensure_ascii=True, indent=0)
        f.write("\n")
    # seed.txt: the single-line corpus entries and the first 300 verses; the 1 MiB text is drawn
    # from its lines (see big_text.py)
    lines = [s for s in CORPUS if s and "\n" not in s and "\r" not in s]
    lines += kjv_verses()[:300]
    with open(os.path.join(out, "seed.txt"), "w", encoding="utf-8", newline="\n") as f:
        f.write("\n".join(lines) + "\n")
    print("corpus: %d strings; seed: %d lines" % (len(CORPUS), len(lines)))


if __name__ == "__main__":
    main()
