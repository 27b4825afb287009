/* The pre-tokenizer regex engine (src/tokenizer/regex.c).
 *
 * 1. Splits worked out by hand from the regex semantics every engine in use shares (Perl,
 *    Oniguruma, ECMAScript: leftmost-first alternation, greedy and lazy quantifiers): each case
 *    lists the pieces a split gives, matches and the text between them.
 * 2. The hand-written Llama-3 / Qwen2 matcher against the engine running the same pattern, on
 *    5,000 random strings over an alphabet of letters (ASCII, accented, CJK, upper case
 *    contraction letters), digits, spaces, \r \n \t, punctuation, apostrophes, emoji and
 *    invalid bytes: the spans must be identical.
 * 3. Errors: unsupported constructs and malformed patterns fail with a status and a message
 *    naming the pattern.
 * 4. Long runs on the engine itself (no hand-written path): 1 MiB of spaces and of digits
 *    split as the pattern says; the Pike VM has no backtracking, so these take milliseconds
 *    (the ctest timeout catches a regression to super-linear time).
 * 5. llama.cpp's hand-written pre-tokenizers (kimi-k2, afmoe) and SuperBPE's digit grouping,
 *    through vkf_pretok_from_name: splits worked out by hand from llama.cpp's code
 *    (src/unicode.cpp), Han, digits and mixed scripts; 1 MiB digit runs through the dedicated
 *    SuperBPE and AFMoE digit matchers (each run is read once). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "testutil.h"
#include "tokenizer/pretok.h"
#include "tokenizer/regex.h"

/* Splits text with pattern on the engine; writes the pieces joined by '|' (matches in []). */
static int split_str(const char *pattern, const char *text, int no_fast, char *out, size_t cap) {
    vkf_regex *re = NULL;
    if (vkf_regex_compile_ex(pattern, strlen(pattern), "test", no_fast, &re) != VKF_OK) return 0;
    vkf_cptext t = {0};
    vkf_rx_spans sp = {0};
    size_t n = 0;
    out[0] = 0;
    int ok = vkf_cptext_set(&t, text, strlen(text)) && vkf_regex_spans(re, t.cp, t.gc, 0, t.n, &sp);
    for (size_t i = 0; ok && i < sp.n; i++) {
        size_t a = t.off[sp.v[i].s], b = t.off[sp.v[i].e];
        n +=
            (size_t)snprintf(out + n, cap - n, "%s%s%.*s%s", i ? "|" : "", sp.v[i].match ? "[" : "",
                             (int)(b - a), text + a, sp.v[i].match ? "]" : "");
        if (n >= cap) return 0;
    }
    free(sp.v);
    vkf_cptext_free(&t);
    vkf_regex_free(re);
    return ok;
}

typedef struct rx_case {
    const char *pattern, *text, *want;
} rx_case;

static const rx_case k_cases[] = {
    {"ab|a", "aab", "[a]|[ab]"},
    {"a|ab", "aab", "[a]|[a]|b"}, /* leftmost-first: the first alternative wins */
    {"a{2}b", "aaaaaab", "aaaa|[aab]"},
    {"\\p{N}{1,3}", "1314151", "[131]|[415]|[1]"},
    {"x{2,}", "xxxyxx", "[xxx]|y|[xx]"},
    {"a+?", "aaa", "[a]|[a]|[a]"},                                  /* lazy */
    {"<.+?>", "<a><bc>", "[<a>]|[<bc>]"},                           /* lazy with a tail */
    {"[^a-c]+", "xxabyy", "[xx]|ab|[yy]"},                          /* negated class */
    {"(?i:ab)", "AbaBxab", "[Ab]|[aB]|x|[ab]"},                     /* case folding */
    {"(?i:\\u00e9)+", "\xc3\xa9\xc3\x89!", "[\xc3\xa9\xc3\x89]|!"}, /* é É */
    {"'(?i:s|ll)", "'S'LL's", "['S]|['LL]|['s]"},
    {"\\s+(?!\\S)|\\s+", "a   b  ", "a|[  ]|[ ]|b|[  ]"}, /* GPT-2's whitespace rule */
    {"\\p{L}+", "caf\xc3\xa9 \xe4\xb8\xad\xe6\x96\x87!",
     "[caf\xc3\xa9]| |[\xe4\xb8\xad\xe6\x96\x87]|!"},
    {"\\p{Lu}\\p{Ll}*", "HelloWORLD", "[Hello]|[W]|[O]|[R]|[L]|[D]"},
    {"[\\p{P}\\p{S}]+", "a+b,c!?", "a|[+]|b|[,]|c|[!?]"},
    {"\\P{L}+", "ab12 cd", "ab|[12 ]|cd"},
    {"[\\u4E00-\\u9FA5]+", "x\xe4\xb8\xad\xe6\x96\x87y", "x|[\xe4\xb8\xad\xe6\x96\x87]|y"},
    {"^a|b$", "aabb", "[a]|ab|[b]"},                  /* anchors at the text's ends */
    {"\\d+(?=px)", "12px 34em", "[12]|px 34em"},      /* positive lookahead */
    {"(?=(\\d{3})+(?!\\d))", "1234567", "1|234|567"}, /* empty matches split */
    {"[\\r\\n]", "a\r\nb", "a|[\r]|[\n]|b"},
    {"(IMGIMG)((A|B|C){1,4})Z", "xIMGIMGABZy", "x|[IMGIMGABZ]|y"},
    {"x{,3}", "x{,3}", "[x{,3}]"}, /* not a quantifier: literal braces */
};

static void test_cases(void) {
    for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++) {
        char got[512];
        int ok = split_str(k_cases[i].pattern, k_cases[i].text, 1, got, sizeof got);
        VKT_CHECK(ok && strcmp(got, k_cases[i].want) == 0,
                  "/%s/ on \"%s\": got \"%s\", want \"%s\" (%s)", k_cases[i].pattern,
                  k_cases[i].text, ok ? got : "", k_cases[i].want, ok ? "" : vkf_last_error());
    }
}

/* ------------------------------------------------------------------ hand-written vs engine */

static uint64_t g_rng = 0x243F6A8885A308D3ull;
static uint32_t rnd(uint32_t n) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (uint32_t)(g_rng % n);
}

static void test_fast_vs_engine(void) {
    static const char *const pieces[] = {
        "a",
        "Z",
        "s",
        "S",
        "t",
        "re",
        "VE",
        "ll",
        "d",
        "m",
        "'",
        "'",
        " ",
        " ",
        "  ",
        "\t",
        "\r",
        "\n",
        "\r\n",
        "1",
        "23",
        "456",
        "\xd9\xa3" /* Arabic-Indic 3 */,
        "\xc3\xa9",
        "\xc3\x89",
        "\xe4\xb8\xad" /* CJK */,
        "!",
        "?",
        ".",
        "...",
        ",",
        "-",
        "+",
        "$",
        "\xf0\x9f\x98\x81",
        "\xe2\x80\x94" /* em dash */,
        "\xc2\xa0" /* nbsp */,
        "\xe3\x80\x80" /* ideographic sp */,
        "\xff" /* invalid */,
        "\xcc\x81" /* combining acute */,
        "\xe2\x85\xa7" /* Roman 8 */,
    };
    static const char *const patterns[] = {
        "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
        "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
        "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
        "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
        "(?=(\\d{3})+(?!\\d))", /* SuperBPE: the dedicated digit matcher */
    };
    size_t n_pieces = sizeof pieces / sizeof pieces[0], bad = 0, runs = 0;
    for (size_t p = 0; p < sizeof patterns / sizeof patterns[0]; p++)
        for (int r = 0; r < 2500; r++) {
            char text[512];
            size_t n = 0;
            int len = 1 + (int)rnd(30);
            for (int k = 0; k < len; k++) {
                const char *s = pieces[rnd((uint32_t)n_pieces)];
                size_t l = strlen(s);
                memcpy(text + n, s, l);
                n += l;
            }
            text[n] = 0;
            char a[4096], b[4096];
            int oa = split_str(patterns[p], text, 0, a, sizeof a);
            int ob = split_str(patterns[p], text, 1, b, sizeof b);
            runs++;
            if (!oa || !ob || strcmp(a, b) != 0) {
                if (bad++ < 5)
                    VKT_CHECK(0, "pattern %zu on \"%s\": hand-written \"%s\", engine \"%s\"", p,
                              text, a, b);
            }
        }
    VKT_CHECK(bad == 0, "%zu of %zu random strings split differently", bad, runs);
}

/* ------------------------------------------------------------------ errors */

static void test_errors(void) {
    static const struct {
        const char *pattern;
        vkf_status want;
        const char *needle;
    } k[] = {
        {"(?<=a)b", VKF_ERROR_UNSUPPORTED, "unsupported group"},
        {"\\p{Han}+", VKF_ERROR_UNSUPPORTED, "unknown Unicode property"},
        {"[[:alpha:]]", VKF_ERROR_UNSUPPORTED, "nested classes"},
        {"[a&&b]", VKF_ERROR_UNSUPPORTED, "intersection"},
        {"(ab", VKF_ERROR_FORMAT, "missing )"},
        {"ab)", VKF_ERROR_FORMAT, "unbalanced )"},
        {"[ab", VKF_ERROR_FORMAT, "unterminated character class"},
        {"a{3,2}", VKF_ERROR_FORMAT, "m < n"},
        {"*a", VKF_ERROR_FORMAT, "quantifier without an operand"},
        {"[z-a]", VKF_ERROR_FORMAT, "range out of order"},
        {"(a{1000}){1000}", VKF_ERROR_UNSUPPORTED, "too large"},
        {"\\", VKF_ERROR_FORMAT, "ends with a backslash"},
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        vkf_regex *re = NULL;
        vkf_status s = vkf_regex_compile(k[i].pattern, strlen(k[i].pattern), "where", &re);
        VKT_CHECK(s == k[i].want && !re, "/%s/: expected %s, found %s", k[i].pattern,
                  vkf_status_name(k[i].want), vkf_status_name(s));
        VKT_CHECK(strstr(vkf_last_error(), k[i].needle) && strstr(vkf_last_error(), "where: "),
                  "/%s/: message \"%s\" lacks \"%s\"", k[i].pattern, vkf_last_error(), k[i].needle);
        vkf_regex_free(re);
    }
}

/* ------------------------------------------------------------------ long runs */

static void test_long_runs(void) {
    const size_t n = 1 << 20;
    char *buf = malloc(n + 2);
    if (!buf) return;
    static const struct {
        const char *pattern;
        char fill;
        size_t want_spans; /* worked out from the pattern */
    } k[] = {
        {"\\s+(?!\\S)|\\s+", ' ', 1},               /* one run to the end */
        {"\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+", ' ', 1}, /* \s*[\r\n]+ scans the run and fails */
        {"\\p{N}{1,3}", '7', (1 << 20) / 3 + 1},    /* 3-digit pieces, one of 1 */
        {"(?i:'s|'t)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}", '7', (1 << 20) / 3 + 1},
        {" ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*", '.', 1},
    };
    for (size_t c = 0; c < sizeof k / sizeof k[0]; c++) {
        memset(buf, k[c].fill, n);
        vkf_regex *re = NULL;
        VKT_OK(vkf_regex_compile_ex(k[c].pattern, strlen(k[c].pattern), "test", 1, &re));
        vkf_cptext t = {0};
        vkf_rx_spans sp = {0};
        int ok = re && vkf_cptext_set(&t, buf, n) && vkf_regex_spans(re, t.cp, t.gc, 0, t.n, &sp);
        VKT_CHECK(ok && sp.n == k[c].want_spans, "/%s/ on 1 MiB of '%c': %zu spans, want %zu",
                  k[c].pattern, k[c].fill, sp.n, k[c].want_spans);
        free(sp.v);
        vkf_cptext_free(&t);
        vkf_regex_free(re);
    }
    free(buf);
}

/* ------------------------------------------------------------------ named hand-written sets */

/* Splits text with the named pre-tokenizer; writes the words joined by '|'. */
static int split_named(const char *name, const char *text, size_t len, char *out, size_t cap,
                       size_t *n_words) {
    vkf_pretok *p = NULL;
    vkf_pretok_info info;
    if (vkf_pretok_from_name(name, "test", &p, &info) != VKF_OK || !p) return 0;
    const uint32_t *w;
    size_t nw = 0, n = 0;
    int ok = vkf_pretok_split(p, text, len, &w, &nw);
    if (out) out[0] = 0;
    for (size_t i = 0; ok && out && i < nw; i++) {
        n += (size_t)snprintf(out + n, cap - n, "%s%.*s", i ? "|" : "",
                              (int)(w[2 * i + 1] - w[2 * i]), text + w[2 * i]);
        if (n >= cap) ok = 0;
    }
    if (n_words) *n_words = nw;
    vkf_pretok_free(p);
    return ok;
}

static void test_named_custom(void) {
    static const struct {
        const char *name, *text, *want;
    } k[] = {
        /* kimi-k2 (unicode_regex_split_custom_kimi_k2). A letter run stops at Han (U+4E16, U+754C
         * are in CJK Unified Ideographs), the Han run is one word. */
        {"kimi-k2",
         "Hello\xe4\xb8\x96\xe7\x95\x8c"
         "abc",
         "Hello|\xe4\xb8\x96\xe7\x95\x8c|abc"},
        /* " " before Han is no lead (the letter after a lead must not be Han) and no punctuation
         * lead (Han is \p{L}): a lone space; "," then " " (whitespace): ","; " world": lead +
         * letters */
        {"kimi-k2", " \xe4\xbd\xa0\xe5\xa5\xbd, world", " |\xe4\xbd\xa0\xe5\xa5\xbd|,| world"},
        /* digits in threes from the left; Han cuts the run */
        {"kimi-k2",
         "12345\xe4\xb8\xad"
         "6",
         "123|45|\xe4\xb8\xad|6"},
        /* no case split (Moonshot's own pattern gives get|User|Name's); the contraction is taken
         * in either case after the letters */
        {"kimi-k2", "getUserName's I'M", "getUserName's| I'M"},
        /* a combining mark (U+0301, Mn) is not a letter there: it ends "e" and leads "x" */
        {"kimi-k2", "e\xcc\x81x", "e|\xcc\x81x"},
        /* U+20000 (Extension B) is Han; U+3007 (Nl) is Han to Scripts.txt but outside llama.cpp's
         * ideograph blocks: a number; U+4E00 Han */
        {"kimi-k2", "\xf0\xa0\x80\x80\xe3\x80\x87\xe4\xb8\x80",
         "\xf0\xa0\x80\x80|\xe3\x80\x87|\xe4\xb8\x80"},
        /* 3 spaces before a letter: two, then " b" (\s+(?!\S)); "\n\n " up to the last newline,
         * then " c"; "!!" takes the newlines after it */
        {"kimi-k2", "a   b\n\n c!!\n\nx", "a|  | b|\n\n| c|!!\n\n|x"},
        /* afmoe: digits split as 1|234|567 (7 = 1 + 3 + 3); the later patterns match nothing in
         * a digit piece, which stays whole */
        {"afmoe", "1234567", "1|234|567"},
        /* llama.cpp cuts only where a digit group ends: "ab1" is one piece after the digit step,
         * then the main pattern takes "ab" ([\p{L}\p{M}]+) and leaves "1" */
        {"afmoe", "ab1234cd", "ab|1|234|cd"},
        /* the same join changes the spaces: "a  12" is one piece, so "\s+(?!\S)" sees the "1"
         * and leaves one space, then "\s+" takes the other (without the join, "a  " would end
         * the piece and give "a|  |12") */
        {"afmoe", "a  12", "a| | |12"},
        /* the Asian-script step: Hangul (U+D55C, U+AD6D) is cut from "x" before the main
         * pattern, which alone would keep "x" + letters together */
        {"afmoe", "x\xed\x95\x9c\xea\xb5\xad", "x|\xed\x95\x9c\xea\xb5\xad"},
        /* Kanji + Katakana (U+30FC is in the Katakana block) are one run; 333 is one group
         * joined to that run by the digit step, then cut off by the Asian-script step */
        {"afmoe",
         "\xe6\x9d\xb1\xe4\xba\xac\xe3\x82\xbf\xe3\x83\xaf\xe3\x83\xbc"
         "333m",
         "\xe6\x9d\xb1\xe4\xba\xac\xe3\x82\xbf\xe3\x83\xaf\xe3\x83\xbc|333|m"},
        /* superbpe: \p{N}+ isolates the run, then empty matches before each 3-group ending it */
        {"superbpe", "a1234567b", "a|1|234|567|b"},
        {"superbpe", "123456 78", "123|456| |78"},
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        char got[512];
        int ok = split_named(k[i].name, k[i].text, strlen(k[i].text), got, sizeof got, NULL);
        VKT_CHECK(ok && strcmp(got, k[i].want) == 0, "%s on \"%s\": got \"%s\", want \"%s\"",
                  k[i].name, k[i].text, ok ? got : vkf_last_error(), k[i].want);
    }
    /* 1 MiB of digits: 2^20 = 3 * 349525 + 1, so one lone digit then 349525 threes (SuperBPE
     * and AFMoE both put the short group first) */
    const size_t n = 1 << 20;
    char *buf = malloc(n);
    if (!buf) return;
    memset(buf, '7', n);
    static const char *const names[] = {"superbpe", "afmoe"};
    for (size_t i = 0; i < 2; i++) {
        size_t nw = 0;
        int ok = split_named(names[i], buf, n, NULL, 0, &nw);
        VKT_CHECK(ok && nw == 349526, "%s on 1 MiB of digits: %zu words, want 349526", names[i],
                  nw);
    }
    free(buf);
}

int main(void) {
    test_cases();
    test_fast_vs_engine();
    test_errors();
    test_long_runs();
    test_named_custom();
    return vkt_finish();
}
