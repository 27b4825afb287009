"""The 1 MiB test text, generated deterministically from tests/data/tokenizers/seed.txt.

Lines of seed.txt (split on '\\n', the empty last one dropped) are drawn with xorshift64
(state 0x9E3779B97F4A7C15; x ^= x << 13; x ^= x >> 7; x ^= x << 17; index = x % n_lines), each
followed by '\\n', until the text holds at least 1 MiB (1048576 bytes) of UTF-8.
tests/test_tokenizer_ref.c generates the same text the same way.

Usage: python3 tools/tokenizers/big_text.py SEED_TXT OUT_TXT"""
import sys

M64 = (1 << 64) - 1


def big_text(seed_path):
    with open(seed_path, "rb") as f:
        lines = f.read().split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    x = 0x9E3779B97F4A7C15
    parts, n = [], 0
    while n < (1 << 20):
        x ^= (x << 13) & M64
        x ^= x >> 7
        x ^= (x << 17) & M64
        line = lines[x % len(lines)]
        parts.append(line + b"\n")
        n += len(line) + 1
    return b"".join(parts)


if __name__ == "__main__":
    data = big_text(sys.argv[1])
    with open(sys.argv[2], "wb") as f:
        f.write(data)
    print("%d bytes" % len(data))
