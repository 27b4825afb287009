#!/usr/bin/env python3
"""Generates src/tables/unicode_tables.{h,c}: the Unicode data the tokenizers need, from the
Unicode Character Database files of Debian's unicode-data package (/usr/share/unicode:
UnicodeData.txt, PropList.txt, DerivedNormalizationProps.txt; the output records the version),
or python3's unicodedata where those files are missing:

- \\p{L}, \\p{N} and White_Space as code point ranges (the GPT-2 pre-tokenizer);
- the general category of every code point, as runs (start, category): \\p{..} in the regex
  engine, Mn for accent stripping, P* for BERT punctuation, C* for BERT's control characters;
- canonical combining classes, as runs (start, class);
- one level of canonical and compatibility decomposition (applied recursively at run time;
  Hangul syllables are algorithmic and not listed);
- the canonical composition pairs (first, second) -> primary composite, composition exclusions
  already removed (NFC/NFKC);
- simple lowercase mappings (Rust's char::to_lowercase; U+0130's two-character mapping is in
  unicode.c).

Usage: python3 tools/gen_unicode_tables.py [repository root] [UCD directory]
"""
import os
import sys
import unicodedata

WHITE_SPACE = [(0x0009, 0x000D), (0x0020, 0x0020), (0x0085, 0x0085), (0x00A0, 0x00A0),
               (0x1680, 0x1680), (0x2000, 0x200A), (0x2028, 0x2029), (0x202F, 0x202F),
               (0x205F, 0x205F), (0x3000, 0x3000)]

UCD_DIR = "/usr/share/unicode"


class Ucd:
    """category / combining / decomposition / lower / white space / composition exclusions,
    from the UCD text files."""

    def __init__(self, d):
        self.cat, self.ccc, self.dec, self.low = {}, {}, {}, {}
        first = None
        for line in open(os.path.join(d, "UnicodeData.txt"), encoding="utf-8"):
            f = line.rstrip("\n").split(";")
            cp = int(f[0], 16)
            if f[1].endswith(", First>"):
                first = cp
                continue
            cps = range(first, cp + 1) if f[1].endswith(", Last>") else (cp,)
            for c in cps:
                self.cat[c] = f[2]
                if int(f[3]):
                    self.ccc[c] = int(f[3])
            if f[5]:
                self.dec[cp] = f[5]
            if f[13]:
                self.low[cp] = int(f[13], 16)
        self.space = self.prop(os.path.join(d, "PropList.txt"), "White_Space")
        self.excl = set()
        for a, b in self.prop(os.path.join(d, "DerivedNormalizationProps.txt"),
                              "Full_Composition_Exclusion"):
            self.excl.update(range(a, b + 1))
        self.version = "?"
        import subprocess
        try:
            self.version = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "unicode-data"],
                                          capture_output=True, text=True).stdout.split("-")[0]
        except OSError:
            pass

    @staticmethod
    def prop(path, name):
        out = []
        for line in open(path, encoding="utf-8"):
            line = line.split("#")[0].strip()
            if not line:
                continue
            r, p = [x.strip() for x in line.split(";")[:2]]
            if p != name:
                continue
            a, _, b = r.partition("..")
            out.append((int(a, 16), int(b or a, 16)))
        out.sort()
        merged = []
        for a, b in out:
            if merged and a == merged[-1][1] + 1:
                merged[-1] = (merged[-1][0], b)
            else:
                merged.append((a, b))
        return merged

    def category(self, cp):
        return self.cat.get(cp, "Cn")

    def combining(self, cp):
        return self.ccc.get(cp, 0)

    def decomposition(self, cp):
        return self.dec.get(cp, "")

    def lower(self, cp):
        return self.low.get(cp)


class Py:
    """The same from python3's unicodedata (older Unicode)."""

    def __init__(self):
        self.space = WHITE_SPACE
        self.version = unicodedata.unidata_version

    def category(self, cp):
        return unicodedata.category(chr(cp))

    def combining(self, cp):
        return unicodedata.combining(chr(cp))

    def decomposition(self, cp):
        return unicodedata.decomposition(chr(cp))

    def lower(self, cp):
        lo = chr(cp).lower()
        return ord(lo) if lo != chr(cp) and len(lo) == 1 else None

    def composes(self, a, b, cp):
        return unicodedata.normalize("NFC", chr(a) + chr(b)) == chr(cp)


CATS = ["Cn", "Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc", "Pd", "Ps",
        "Pe", "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co"]


def ranges(pred):
    out, start = [], None
    for cp in range(0x110000):
        if pred(cp):
            if start is None:
                start = cp
        elif start is not None:
            out.append((start, cp - 1))
            start = None
    if start is not None:
        out.append((start, 0x10FFFF))
    return out


def runs(value):
    """[(start, value)] where value changes."""
    out, prev = [], None
    for cp in range(0x110000):
        v = value(cp)
        if v != prev:
            out.append((cp, v))
            prev = v
    return out


U = None


def cat_in(cats):
    return lambda cp: U.category(cp) in cats


def rows(items, per, fmt):
    lines, row = [], []
    for it in items:
        row.append(fmt(it))
        if len(row) == per:
            lines.append("    " + " ".join(row))
            row = []
    if row:
        lines.append("    " + " ".join(row))
    return "\n".join(lines)


def table(ctype, name, items, per, fmt):
    return "const %s %s[%d] = {\n%s\n};" % (ctype, name, len(items), rows(items, per, fmt))


def main():
    global U
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    ucd_dir = sys.argv[2] if len(sys.argv) > 2 else UCD_DIR
    U = Ucd(ucd_dir) if os.path.exists(os.path.join(ucd_dir, "UnicodeData.txt")) else Py()
    letters = ranges(cat_in({"Lu", "Ll", "Lt", "Lm", "Lo"}))
    numbers = ranges(cat_in({"Nd", "Nl", "No"}))
    cat_runs = runs(lambda cp: CATS.index(U.category(cp)))
    ccc_runs = runs(lambda cp: U.combining(cp))

    # decompositions (one level), Hangul syllables excluded (algorithmic)
    decomp, pool = [], []
    for cp in range(0x110000):
        if 0xAC00 <= cp <= 0xD7A3:
            continue
        d = U.decomposition(cp)
        if not d:
            continue
        compat = d.startswith("<")
        if compat:
            d = d.split(" ", 1)[1]
        cps = [int(x, 16) for x in d.split()]
        decomp.append((cp, compat, len(pool), len(cps)))
        pool.extend(cps)
    assert len(pool) < 1 << 16 and max(n for _, _, _, n in decomp) < 32
    # primary composites: canonical pairs that NFC composes back
    comp = []
    for cp, compat, off, n in decomp:
        if compat or n != 2:
            continue
        a, b = pool[off], pool[off + 1]
        ok = U.composes(a, b, cp) if isinstance(U, Py) else cp not in U.excl
        if ok:
            comp.append(((a << 21) | b, cp))
    comp.sort()
    lower = []
    for cp in range(0x110000):
        lo = U.lower(cp)
        if lo is not None and cp != 0x130:  # U+0130: two characters, in unicode.c
            lower.append((cp, lo))
    spaces = U.space

    source = ("Debian unicode-data, %s" % ucd_dir if isinstance(U, Ucd)
              else "Python %s unicodedata" % sys.version.split()[0])
    banner = ("/* Generated by tools/gen_unicode_tables.py from %s (Unicode %s).\n"
              " * Do not edit by hand: run the script again. */\n" % (source, U.version))
    h = banner + """#ifndef VKF_TABLES_UNICODE_TABLES_H
#define VKF_TABLES_UNICODE_TABLES_H

#include <stdint.h>

typedef struct vkf_unicode_range {
    uint32_t first, last; /* inclusive code point range */
} vkf_unicode_range;

#define VKF_UNICODE_N_LETTER %d
#define VKF_UNICODE_N_NUMBER %d
#define VKF_UNICODE_N_SPACE %d
#define VKF_UNICODE_N_CAT_RUNS %d
#define VKF_UNICODE_N_CCC_RUNS %d
#define VKF_UNICODE_N_DECOMP %d
#define VKF_UNICODE_N_DECOMP_POOL %d
#define VKF_UNICODE_N_COMPOSE %d
#define VKF_UNICODE_N_LOWER %d

/* Sorted, disjoint, non-adjacent ranges. */
extern const vkf_unicode_range vkf_unicode_letter[VKF_UNICODE_N_LETTER]; /* \\p{L} */
extern const vkf_unicode_range vkf_unicode_number[VKF_UNICODE_N_NUMBER]; /* \\p{N} */
extern const vkf_unicode_range vkf_unicode_space[VKF_UNICODE_N_SPACE];   /* White_Space */

/* start << 8 | value, sorted: the value holds from start up to the next run's start. The
 * category is an index into VKF_GC_* (unicode.h). */
extern const uint32_t vkf_unicode_cat_runs[VKF_UNICODE_N_CAT_RUNS];
extern const uint32_t vkf_unicode_ccc_runs[VKF_UNICODE_N_CCC_RUNS];

/* One decomposition level per code point that has one, sorted by cp. */
typedef struct vkf_unicode_decomp {
    uint32_t cp;
    uint32_t info; /* offset into vkf_unicode_decomp_pool << 6 | compat << 5 | length */
} vkf_unicode_decomp;
extern const vkf_unicode_decomp vkf_unicode_decomps[VKF_UNICODE_N_DECOMP];
extern const uint32_t vkf_unicode_decomp_pool[VKF_UNICODE_N_DECOMP_POOL];

/* Canonical composition: key = first << 21 | second (sorted), value = the composite. */
extern const uint64_t vkf_unicode_compose_keys[VKF_UNICODE_N_COMPOSE];
extern const uint32_t vkf_unicode_compose_vals[VKF_UNICODE_N_COMPOSE];

/* Single-character lowercase mappings, sorted by the first code point. */
extern const uint32_t vkf_unicode_lower_map[VKF_UNICODE_N_LOWER][2];

#endif
""" % (len(letters), len(numbers), len(spaces), len(cat_runs), len(ccc_runs), len(decomp),
       len(pool), len(comp), len(lower))
    parts = [
        table("vkf_unicode_range", "vkf_unicode_letter", letters, 4,
              lambda r: "{0x%05X, 0x%05X}," % r),
        table("vkf_unicode_range", "vkf_unicode_number", numbers, 4,
              lambda r: "{0x%05X, 0x%05X}," % r),
        table("vkf_unicode_range", "vkf_unicode_space", spaces, 4,
              lambda r: "{0x%05X, 0x%05X}," % r),
        table("uint32_t", "vkf_unicode_cat_runs", cat_runs, 8, lambda r: "0x%X," % (r[0] << 8 | r[1])),
        table("uint32_t", "vkf_unicode_ccc_runs", ccc_runs, 8, lambda r: "0x%X," % (r[0] << 8 | r[1])),
        table("vkf_unicode_decomp", "vkf_unicode_decomps", decomp, 4,
              lambda d: "{0x%X, 0x%X}," % (d[0], d[2] << 6 | int(d[1]) << 5 | d[3])),
        table("uint32_t", "vkf_unicode_decomp_pool", pool, 10, lambda x: "0x%X," % x),
        table("uint64_t", "vkf_unicode_compose_keys", [k for k, _ in comp], 6, lambda x: "0x%XULL," % x),
        table("uint32_t", "vkf_unicode_compose_vals", [v for _, v in comp], 10, lambda x: "0x%X," % x),
        table("uint32_t", "vkf_unicode_lower_map", lower, 6, lambda p: "{0x%X, 0x%X}," % p).replace(
            "const uint32_t vkf_unicode_lower_map[%d]" % len(lower),
            "const uint32_t vkf_unicode_lower_map[%d][2]" % len(lower)),
    ]
    c = banner + '#include "tables/unicode_tables.h"\n\n' + "\n\n".join(parts) + "\n"
    with open(os.path.join(root, "src/tables/unicode_tables.h"), "w") as f:
        f.write(h)
    with open(os.path.join(root, "src/tables/unicode_tables.c"), "w") as f:
        f.write(c)
    print("letters %d, numbers %d, spaces %d ranges; categories %d runs, ccc %d runs; "
          "decompositions %d (%d code points); compositions %d; lowercase %d"
          % (len(letters), len(numbers), len(spaces), len(cat_runs), len(ccc_runs),
             len(decomp), len(pool), len(comp), len(lower)))


if __name__ == "__main__":
    main()
