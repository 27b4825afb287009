"""The training text and the seed text of the tokenizer tests: the King James Bible from the
Debian package bible-kjv (program `bible`, data from bible-kjv-text; public domain).

kjv_verses() returns the 31102 verses as strings (reference prefixes removed)."""
import subprocess


def kjv_verses():
    raw = subprocess.run(["bible", "-m", "8192", "-l", "100000", "gen1:1-rev22:21"],
                         check=True, stdout=subprocess.PIPE).stdout.decode("utf-8")
    verses = []
    for line in raw.split("\n"):
        # verse lines are "  <n> text"; chapter headers ("Genesis 1") have no indent
        s = line.lstrip(" ")
        if s is line or not s:
            continue
        num, _, text = s.partition(" ")
        if not num.isdigit():
            raise ValueError("unexpected line in KJV text: %r" % line)
        verses.append(text.strip())
    if len(verses) != 31102:
        raise ValueError("expected 31102 verses, found %d" % len(verses))
    return verses


def write_training_text(path):
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(kjv_verses()) + "\n")
