/* Tool calls: hand-written answers of each model family parsed into OpenAI's message
 * (content, tool_calls with name and arguments), malformed ones returned as text; streaming
 * (the same answers pushed byte by byte and in random pieces) adds up to the same message;
 * the tool_choice grammars accept the family's own call syntax and reject other text; and the
 * round trip: OpenAI-style messages (arguments as JSON strings) rendered by the real templates
 * of the chat-templates set (tools/refs/make_chat_templates.py) equal transformers' renders
 * (arguments as objects), and a parsed call rendered back writes the text the model wrote. */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "generate/chat.h"
#include "structured/gbnf.h"
#include "structured/tool_calls.h"
#include "testutil.h"
#include "tool_deltas.h"

/* the table below leaves stream_differs and unused calls to zero */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#define H VKF_TOOL_FORMAT_HERMES
#define L VKF_TOOL_FORMAT_LLAMA3
#define M VKF_TOOL_FORMAT_MISTRAL
#define D VKF_TOOL_FORMAT_DEEPSEEK
#define F VKF_TOOL_FORMAT_FUNCTIONARY
#define G VKF_TOOL_FORMAT_GENERIC

#define DS_CALLS "<｜tool▁calls▁begin｜>"
#define DS_CALL "<｜tool▁call▁begin｜>"
#define DS_SEP "<｜tool▁sep｜>"
#define DS_END "<｜tool▁call▁end｜>"
#define DS_CALLS_END "<｜tool▁calls▁end｜>"

typedef struct tcase {
    vkf_tool_format f;
    const char *text;
    const char *content;  /* expected content; NULL: null */
    const char *calls[3]; /* "name|arguments" */
    int stream_differs;   /* malformed after the name: streaming announced the call */
} tcase;

static const tcase k_cases[] = {
    /* hermes / Qwen2.5 / Qwen3 */
    {H,
     "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": "
     "\"Paris\"}}\n</tool_call>",
     NULL,
     {"get_weather|{\"location\": \"Paris\"}"}},
    {H,
     "I'll check both.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n"
     "<tool_call>\n{\"name\": \"b\", \"arguments\": {\"x\": [1, 2], \"s\": \"é "
     "\\\"q\\\"\"}}\n</tool_call>",
     "I'll check both.",
     {"a|{}", "b|{\"x\": [1, 2], \"s\": \"é \\\"q\\\"\"}"}},
    {H,
     "<think>\nThe user wants the weather.\n</think>\n\n<tool_call>\n{\"name\": \"w\", "
     "\"arguments\": {\"c\": 1}}\n</tool_call>",
     "<think>\nThe user wants the weather.\n</think>",
     {"w|{\"c\": 1}"}},
    {H, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}", NULL, {"f|{\"a\": 1}"}},
    {H,
     "<tool_call>{\"arguments\": \"{\\\"a\\\": 1}\", \"name\": \"f\"}</tool_call>",
     NULL,
     {"f|{\"a\": 1}"}},
    {H,
     "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}\n</tool_call>",
     "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}\n</tool_call>",
     {NULL},
     1},
    {H, "<tool_call>not json</tool_call>", "<tool_call>not json</tool_call>", {NULL}},
    {H,
     "<tool_call>{\"arguments\": {}}</tool_call>",
     "<tool_call>{\"arguments\": {}}</tool_call>",
     {NULL}},
    {H, "Write <tool_call> tags around calls.", "Write <tool_call> tags around calls.", {NULL}},
    {H, "Plain answer, no calls.\n", "Plain answer, no calls.\n", {NULL}},
    /* llama 3.x */
    {L,
     "{\"name\": \"get_weather\", \"parameters\": {\"location\": \"Paris\"}}",
     NULL,
     {"get_weather|{\"location\": \"Paris\"}"}},
    {L, "<|python_tag|>{\"name\": \"f\", \"parameters\": {}}", NULL, {"f|{}"}},
    {L,
     "<|python_tag|>brave_search.call(query=\"weather in Paris\", n=3)",
     NULL,
     {"brave_search|{\"query\": \"weather in Paris\", \"n\": 3}"}},
    {L,
     "{\"name\": \"a\", \"parameters\": {}}; {\"name\": \"b\", \"parameters\": {\"k\": 1}}",
     NULL,
     {"a|{}", "b|{\"k\": 1}"}},
    {L, "The weather is nice.", "The weather is nice.", {NULL}},
    {L, "{\"answer\": 42}", "{\"answer\": 42}", {NULL}},
    {L, "{\"name\": \"f\", \"parameters\": {", "{\"name\": \"f\", \"parameters\": {", {NULL}, 1},
    /* mistral */
    {M,
     "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\"}, "
     "\"id\": \"abcdefghi\"}]",
     NULL,
     {"get_weather|{\"location\": \"Paris\"}"}},
    {M,
     "[TOOL_CALLS] [{\"name\": \"a\", \"arguments\": {}}, {\"name\": \"b\", \"arguments\": "
     "{\"x\": true}}]",
     NULL,
     {"a|{}", "b|{\"x\": true}"}},
    {M,
     "[TOOL_CALLS]get_weather[ARGS]{\"location\": \"Paris\"}",
     NULL,
     {"get_weather|{\"location\": \"Paris\"}"}},
    {M,
     "Sure.[TOOL_CALLS]a[ARGS]{}[TOOL_CALLS]b[ARGS]{\"x\": 1}",
     "Sure.",
     {"a|{}", "b|{\"x\": 1}"}},
    {M,
     "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": }]",
     "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": }]",
     {NULL},
     1},
    /* deepseek */
    {D,
     DS_CALLS DS_CALL "function" DS_SEP
                      "get_weather\n```json\n{\"location\": \"Paris\"}\n```" DS_END DS_CALLS_END,
     NULL,
     {"get_weather|{\"location\": \"Paris\"}"}},
    {D,
     "<think>hmm</think>\n\n" DS_CALLS DS_CALL "function" DS_SEP "a\n```json\n{}\n```" DS_END
     "\n" DS_CALL "function" DS_SEP "b\n```json\n{\"y\": 2}\n```" DS_END DS_CALLS_END,
     "<think>hmm</think>",
     {"a|{}", "b|{\"y\": 2}"}},
    {D,
     DS_CALLS DS_CALL "get_weather" DS_SEP "{\"location\": \"Paris\"}" DS_END DS_CALLS_END,
     NULL,
     {"get_weather|{\"location\": \"Paris\"}"}},
    {D,
     DS_CALLS DS_CALL "function" DS_SEP "f\n```json\n{\"a\": }\n```" DS_END DS_CALLS_END,
     DS_CALLS DS_CALL "function" DS_SEP "f\n```json\n{\"a\": }\n```" DS_END DS_CALLS_END,
     {NULL},
     1},
    /* functionary */
    {F, "get_weather\n{\"location\": \"Paris\"}", NULL, {"get_weather|{\"location\": \"Paris\"}"}},
    {F, "all\nHello there!", "Hello there!", {NULL}},
    {F,
     "all\nLet me check.>>>get_weather\n{\"location\": \"Paris\"}",
     "Let me check.",
     {"get_weather|{\"location\": \"Paris\"}"}},
    {F,
     "<function=get_weather>{\"location\": \"Paris\"}</function>",
     NULL,
     {"get_weather|{\"location\": \"Paris\"}"}},
    {F, "Hello, how can I help?", "Hello, how can I help?", {NULL}},
    /* generic */
    {G,
     "{\"tool_calls\": [{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\"}}]}",
     NULL,
     {"get_weather|{\"location\": \"Paris\"}"}},
    {G, "{\"tool_call\": {\"name\": \"f\", \"arguments\": {}}}", NULL, {"f|{}"}},
    {G, " {\"name\": \"f\", \"arguments\": {\"a\": 1}}\n", NULL, {"f|{\"a\": 1}"}},
    {G,
     "[{\"name\": \"a\", \"arguments\": {}}, {\"name\": \"b\", \"arguments\": {}}]",
     NULL,
     {"a|{}", "b|{}"}},
    {G, "{\"response\": \"Hello!\"}", "Hello!", {NULL}},
    {G, "Just text.", "Just text.", {NULL}},
    {G, "{\"tool_calls\": [{\"name\": \"f\"", "{\"tool_calls\": [{\"name\": \"f\"", {NULL}, 1},
};

/* checks message JSON msg against c; returns 1 when it matches */
static int check_message(const tcase *c, const char *msg, const char *how) {
    cJSON *m = cJSON_Parse(msg);
    int ok = m != NULL;
    const cJSON *content = cJSON_GetObjectItem(m, "content"),
                *tc = cJSON_GetObjectItem(m, "tool_calls");
    if (c->content)
        ok = ok && cJSON_IsString(content) && !strcmp(content->valuestring, c->content);
    else
        ok = ok && cJSON_IsNull(content);
    int n = 0;
    while (n < 3 && c->calls[n])
        n++;
    ok = ok && (n ? cJSON_GetArraySize(tc) == n : tc == NULL);
    for (int i = 0; ok && i < n; i++) {
        const cJSON *call = cJSON_GetArrayItem(tc, i), *fn = cJSON_GetObjectItem(call, "function");
        const char *want = c->calls[i], *bar = strchr(want, '|');
        const cJSON *id = cJSON_GetObjectItem(call, "id"), *nm = cJSON_GetObjectItem(fn, "name"),
                    *ar = cJSON_GetObjectItem(fn, "arguments");
        ok = cJSON_IsString(id) && id->valuestring[0] &&
             !strcmp(cJSON_GetObjectItem(call, "type")->valuestring, "function") &&
             cJSON_IsString(nm) && strlen(nm->valuestring) == (size_t)(bar - want) &&
             !strncmp(nm->valuestring, want, (size_t)(bar - want)) && cJSON_IsString(ar) &&
             !strcmp(ar->valuestring, bar + 1);
        /* Mistral: the model's id, or 9 letters and digits as its templates require */
        if (ok && c->f == VKF_TOOL_FORMAT_MISTRAL) ok = strlen(id->valuestring) == 9;
    }
    VKT_CHECK(ok, "%s %s: '%s' -> %s", vkf_tool_format_name(c->f), how, c->text, msg);
    cJSON_Delete(m);
    return ok;
}

static uint64_t g_rng = 7;
static uint32_t rnd(void) {
    g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(g_rng >> 33);
}

static size_t piece_size(void *user) {
    int step = *(const int *)user;
    return step ? (size_t)step : 1 + rnd() % 7;
}

/* pushes text in pieces (step 0: random sizes), adds the deltas up into a message (the
 * protocol checked on the way: tests/harness/tool_deltas.c) */
static char *stream(const tcase *c, int step, int *n_deltas) {
    char *own = NULL;
    const char *why = NULL;
    char *sum =
        vkt_tool_stream(c->f, c->text, strlen(c->text), piece_size, &step, &own, n_deltas, &why);
    VKT_CHECK(sum != NULL, "streaming %s: %s", c->text, why ? why : "");
    /* the parser's own message is the same sum */
    cJSON *om = own ? cJSON_Parse(own) : NULL, *sm = sum ? cJSON_Parse(sum) : NULL;
    VKT_CHECK(!sum || (om && sm && cJSON_Compare(om, sm, 1)), "parser message = sum of deltas: %s",
              own ? own : "");
    cJSON_Delete(om);
    cJSON_Delete(sm);
    free(own);
    return sum;
}

static void test_parse(void) {
    int n = 0, streamed = 0;
    for (size_t i = 0; i < sizeof k_cases / sizeof *k_cases; i++) {
        const tcase *c = &k_cases[i];
        char *msg = NULL;
        VKT_OK(vkf_tool_calls_parse(c->f, c->text, strlen(c->text), &msg));
        if (msg) n += check_message(c, msg, "whole");
        free(msg);
        if (c->stream_differs) continue;
        for (int step = 0; step < 4; step++) { /* 1 byte, 2, 3 and random pieces */
            int nd;
            char *sm = stream(c, step == 0 ? 1 : step == 3 ? 0 : step + 1, &nd);
            if (sm)
                streamed += check_message(c, sm, step == 0 ? "streamed byte by byte" : "streamed");
            free(sm);
        }
    }
    /* every prefix of every answer, and random bytes: no crash, valid JSON out */
    for (size_t i = 0; i < sizeof k_cases / sizeof *k_cases; i++)
        for (size_t k = 0; k <= strlen(k_cases[i].text); k++) {
            char *msg = NULL;
            vkf_status st = vkf_tool_calls_parse(k_cases[i].f, k_cases[i].text, k, &msg);
            cJSON *m = msg ? cJSON_Parse(msg) : NULL;
            if (st != VKF_OK || !m) VKT_CHECK(0, "prefix %zu of case %zu", k, i);
            cJSON_Delete(m);
            free(msg);
        }
    for (int t = 0; t < 300; t++) {
        char junk[64];
        size_t len = 1 + rnd() % 63;
        for (size_t k = 0; k < len; k++)
            junk[k] = "{}[]\",:<>|_ atoolcallTOOLS\\nx1"[rnd() % 31];
        char *msg = NULL;
        VKT_OK(vkf_tool_calls_parse((vkf_tool_format)(t % 6), junk, len, &msg));
        free(msg);
    }
    /* NUL bytes (a byte-fallback token) are dropped, whole and streamed alike: JSON read as C
     * strings would cut the content at one (fuzz_tool_calls found the streamed and whole
     * messages differing there) */
    static const char nul_text[] = "a\0b<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": "
                                   "\"1\0\"}}\n</tool_call>";
    char *nm = NULL;
    VKT_OK(vkf_tool_calls_parse(H, nul_text, sizeof nul_text - 1, &nm));
    VKT_CHECK(nm && strstr(nm, "\"content\":\"ab\"") && strstr(nm, "{\\\"x\\\": \\\"1\\\"}"),
              "NUL bytes dropped: %s", nm ? nm : "");
    for (int step = 1; step <= 3; step++) {
        char *own = NULL;
        const char *why = NULL;
        int nd;
        char *sum =
            vkt_tool_stream(H, nul_text, sizeof nul_text - 1, piece_size, &step, &own, &nd, &why);
        cJSON *a = sum ? cJSON_Parse(sum) : NULL, *b = nm ? cJSON_Parse(nm) : NULL;
        const cJSON *ca = cJSON_GetArrayItem(cJSON_GetObjectItem(a, "tool_calls"), 0),
                    *cb = cJSON_GetArrayItem(cJSON_GetObjectItem(b, "tool_calls"), 0);
        VKT_CHECK(a && b &&
                      cJSON_Compare(cJSON_GetObjectItem(a, "content"),
                                    cJSON_GetObjectItem(b, "content"), 1) &&
                      cJSON_Compare(cJSON_GetObjectItem(ca, "function"),
                                    cJSON_GetObjectItem(cb, "function"), 1),
                  "NUL bytes streamed in pieces of %d: %s vs %s", step, sum ? sum : why, nm);
        cJSON_Delete(a);
        cJSON_Delete(b);
        free(sum);
        free(own);
    }
    free(nm);
    /* a call cut off after its name was streamed stays as sent: its text is not sent again as
     * content (the server once did, when max_tokens cut a generic call) */
    static const tcase cut = {
        G, "{\"tool_calls\": [{\"name\": \"f\", \"arguments\": {\"a\": ", NULL, {"f|{\"a\":"}};
    int nd;
    char *sm = stream(&cut, 0, &nd);
    VKT_CHECK(sm && strstr(sm, "\"content\":null") && strstr(sm, "\"name\":\"f\""),
              "a cut-off call streams as sent, no content: %s", sm ? sm : "");
    free(sm);
    printf("parse: %d answers as expected whole, %d streamed (4 ways each)\n", n, streamed);
}

/* ------------------------------------------------------------------ grammars */

static const char *k_tools =
    "[{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"The "
    "weather\", \"parameters\": {\"type\": \"object\", \"properties\": {\"location\": {\"type\": "
    "\"string\"}, \"unit\": {\"enum\": [\"c\", \"f\"]}}, \"required\": [\"location\"], "
    "\"additionalProperties\": false}}}, {\"type\": \"function\", \"function\": {\"name\": "
    "\"get_time\", \"parameters\": {\"type\": \"object\", \"properties\": {}}}}]";

static int grammar_accepts(const char *gbnf, const char *text) {
    vkf_gbnf *g;
    vkf_gmatch *m;
    if (vkf_gbnf_parse(gbnf, strlen(gbnf), "root", NULL, NULL, &g) != VKF_OK) return -1;
    if (vkf_gmatch_create(g, 0, &m) != VKF_OK) return -1;
    vkf_gstate st = vkf_gmatch_start(m);
    int ok =
        vkf_gmatch_accept_bytes(m, &st, text, strlen(text)) == 0 && vkf_gmatch_complete(m, &st);
    vkf_gmatch_free(m);
    return ok;
}

static void test_grammars(void) {
    static const struct {
        vkf_tool_format f;
        const char *ok, *ok2, *bad;
    } g[] = {
        {H,
         "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": "
         "\"Paris\"}}\n</tool_call>",
         "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>",
         "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"unit\": "
         "\"c\"}}\n</tool_call>"},
        {L,
         "{\"name\": \"get_weather\", \"parameters\": {\"location\": \"Paris\", \"unit\": \"f\"}}",
         "{\"name\": \"get_time\", \"parameters\": {}}",
         "{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\"}}"},
        {M, "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\"}}]",
         "[TOOL_CALLS][{\"name\": \"get_time\", \"arguments\": {}}]",
         "[TOOL_CALLS][{\"name\": \"get_date\", \"arguments\": {}}]"},
        {D,
         DS_CALLS DS_CALL
         "function" DS_SEP
         "get_weather\n```json\n{\"location\": \"Paris\"}\n```" DS_END DS_CALLS_END,
         DS_CALLS DS_CALL "function" DS_SEP "get_time\n```json\n{}\n```" DS_END DS_CALLS_END,
         DS_CALLS DS_CALL "function" DS_SEP
                          "get_weather\n```json\n{\"location\": 3}\n```" DS_END DS_CALLS_END},
        {F, "get_weather\n{\"location\": \"Paris\"}", "get_time\n{}", "all\nhello"},
        {G,
         "{\"tool_calls\": [{\"name\": \"get_weather\", \"arguments\": {\"location\": "
         "\"Paris\"}}]}",
         "{\"tool_calls\": [{\"name\": \"get_time\", \"arguments\": {}}]}",
         "{\"response\": \"hi\"}"},
    };
    for (size_t i = 0; i < sizeof g / sizeof *g; i++) {
        char *gr = NULL;
        VKT_OK(vkf_tool_calls_grammar(g[i].f, k_tools, "\"required\"", 0, &gr));
        if (!gr) continue;
        VKT_CHECK(grammar_accepts(gr, g[i].ok) == 1, "%s required: must accept %s\n%s",
                  vkf_tool_format_name(g[i].f), g[i].ok, gr);
        VKT_CHECK(grammar_accepts(gr, g[i].ok2) == 1, "%s required: must accept %s",
                  vkf_tool_format_name(g[i].f), g[i].ok2);
        VKT_CHECK(grammar_accepts(gr, g[i].bad) == 0, "%s required: must reject %s",
                  vkf_tool_format_name(g[i].f), g[i].bad);
        VKT_CHECK(grammar_accepts(gr, "Hello!") == 0, "%s required: text is not a call",
                  vkf_tool_format_name(g[i].f));
        /* what the grammar accepts parses back to the call */
        char *msg = NULL;
        VKT_OK(vkf_tool_calls_parse(g[i].f, g[i].ok, strlen(g[i].ok), &msg));
        VKT_CHECK(msg && strstr(msg, "\"name\":\"get_weather\""), "%s: %s",
                  vkf_tool_format_name(g[i].f), msg);
        free(msg);
        free(gr);
        /* a named function: only that one */
        gr = NULL;
        VKT_OK(vkf_tool_calls_grammar(
            g[i].f, k_tools, "{\"type\": \"function\", \"function\": {\"name\": \"get_time\"}}", 0,
            &gr));
        VKT_CHECK(gr && grammar_accepts(gr, g[i].ok2) == 1 && grammar_accepts(gr, g[i].ok) == 0,
                  "%s named get_time", vkf_tool_format_name(g[i].f));
        free(gr);
    }
    /* parallel: two calls */
    char *gr = NULL;
    VKT_OK(vkf_tool_calls_grammar(H, k_tools, "\"required\"", 1, &gr));
    const char *two = "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>\n"
                      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": "
                      "\"x\"}}\n</tool_call>";
    VKT_CHECK(gr && grammar_accepts(gr, two) == 1, "parallel: two calls");
    free(gr);
    gr = NULL;
    VKT_OK(vkf_tool_calls_grammar(H, k_tools, "\"required\"", 0, &gr));
    VKT_CHECK(gr && grammar_accepts(gr, two) == 0, "not parallel: one call");
    free(gr);
    /* none / auto: no grammar; bad choices named */
    gr = (char *)1;
    VKT_OK(vkf_tool_calls_grammar(H, k_tools, "\"auto\"", 1, &gr));
    VKT_CHECK(gr == NULL, "auto: no grammar");
    VKT_CHECK(vkf_tool_calls_grammar(H, k_tools,
                                     "{\"type\": \"function\", \"function\": {\"name\": \"nope\"}}",
                                     0, &gr) == VKF_ERROR_FORMAT &&
                  strstr(vkf_last_error(), "nope"),
              "an unknown function is named: %s", vkf_last_error());
    VKT_CHECK(
        vkf_tool_calls_grammar(H,
                               "[{\"type\": \"function\", \"function\": {\"name\": \"f\", "
                               "\"parameters\": {\"type\": \"object\", \"properties\": {\"a\": "
                               "{\"type\": \"string\", \"format\": \"email\"}}}}}]",
                               "\"required\"", 0, &gr) == VKF_ERROR_UNSUPPORTED &&
            strstr(vkf_last_error(), "email") && strstr(vkf_last_error(), "'f'"),
        "an unsupported parameter schema is named: %s", vkf_last_error());
    /* a tool name that is not UTF-8 cannot be a grammar literal: refused by place */
    gr = NULL;
    VKT_CHECK(vkf_tool_calls_grammar(H,
                                     "[{\"type\": \"function\", \"function\": {\"name\": "
                                     "\"get\xff\"}}]",
                                     "\"required\"", 0, &gr) == VKF_ERROR_FORMAT &&
                  strstr(vkf_last_error(), "tools: a string or key at #/0/function/name") &&
                  gr == NULL,
              "a tool name that is not UTF-8: %s", vkf_last_error());
}

/* ------------------------------------------------------------------ round trip through templates
 */

static char *read_template(const char *file) {
    char path[1024];
    snprintf(path, sizeof path, "%s", vkt_fixture("chat-templates"));
    size_t l = strlen(path);
    snprintf(path + l, sizeof path - l, "/%s", file);
    size_t n;
    return vkt_read_file(path, &n);
}

static char *render(const char *tmpl, const char *bos, const char *eos, const char *msgs,
                    const char *tools, int gen) {
    char *prepared = NULL, *out = NULL;
    if (vkf_tool_messages_prepare(tmpl, bos, eos, msgs, tools, &prepared) != VKF_OK) return NULL;
    if (vkf_chat_template_render(tmpl, prepared ? prepared : msgs, tools, NULL, bos, eos, gen,
                                 &out) != VKF_OK)
        out = NULL;
    free(prepared);
    return out;
}

static void test_round_trip(void) {
    if (!vkt_need_fixtures("chat-templates")) return;
    size_t n;
    char path[1024];
    snprintf(path, sizeof path, "%s", vkt_fixture("chat-templates/cases.json"));
    char *txt = vkt_read_file(path, &n);
    cJSON *cases = txt ? cJSON_Parse(txt) : NULL;
    free(txt);
    const cJSON *c;
    int n_cases = 0;
    cJSON_ArrayForEach(c, cases) {
        cJSON *msgs = cJSON_Duplicate(cJSON_GetObjectItem(c, "messages"), 1), *m;
        int has = 0;
        cJSON_ArrayForEach(m, msgs) {
            cJSON *tc = cJSON_GetObjectItem(m, "tool_calls"), *call;
            cJSON_ArrayForEach(call, tc) { /* arguments as OpenAI sends them: a JSON string */
                cJSON *fn = cJSON_GetObjectItem(call, "function");
                cJSON *a = cJSON_GetObjectItem(fn, "arguments");
                if (!cJSON_IsString(a)) {
                    char *s = cJSON_PrintUnformatted(a);
                    cJSON_ReplaceItemInObject(fn, "arguments", cJSON_CreateString(s));
                    free(s);
                }
                has = 1;
            }
        }
        /* Granite 3.0's template drops tool_calls (it has its own assistant_tool_call role):
         * they go into content as llama.cpp's polyfill writes them, unlike transformers */
        if (!has || cJSON_IsTrue(cJSON_GetObjectItem(c, "error")) ||
            strstr(cJSON_GetObjectItem(c, "name")->valuestring, "granite")) {
            cJSON_Delete(msgs);
            continue;
        }
        char *tmpl = read_template(cJSON_GetObjectItem(c, "template_file")->valuestring);
        const cJSON *tools = cJSON_GetObjectItem(c, "tools");
        char *mj = cJSON_PrintUnformatted(msgs),
             *tj = cJSON_IsArray(tools) ? cJSON_PrintUnformatted(tools) : NULL;
        char *out = tmpl ? render(tmpl, cJSON_GetObjectItem(c, "bos_token")->valuestring,
                                  cJSON_GetObjectItem(c, "eos_token")->valuestring, mj, tj,
                                  cJSON_IsTrue(cJSON_GetObjectItem(c, "add_generation_prompt")))
                         : NULL;
        const char *want = cJSON_GetObjectItem(c, "expected")->valuestring;
        VKT_CHECK(out && !strcmp(out, want),
                  "%s: arguments as JSON strings render as transformers renders objects:\n%s",
                  cJSON_GetObjectItem(c, "name")->valuestring, out ? out : vkf_last_error());
        n_cases++;
        free(out);
        free(mj);
        free(tj);
        free(tmpl);
        cJSON_Delete(msgs);
    }
    cJSON_Delete(cases);
    /* a call parsed from the model's text, rendered back by its template, is that text */
    static const struct {
        const char *tmpl, *bos, *eos;
        vkf_tool_format f;
        const char *said;
    } back[] = {
        {"templates/Qwen-Qwen2.5-7B-Instruct.jinja", "", "<|im_end|>", H,
         "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": "
         "\"Paris\"}}\n</tool_call>"},
        {"templates/NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja", "<|begin_of_text|>",
         "<|im_end|>", H,
         "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": "
         "\"Paris\"}}\n</tool_call>"},
        {"templates/meta-llama-Llama-3.1-8B-Instruct.jinja", "<|begin_of_text|>", "<|eot_id|>", L,
         "{\"name\": \"get_weather\", \"parameters\": {\"location\": \"Paris\"}}"},
        {"templates/mistralai-Mistral-Nemo-Instruct-2407.jinja", "<s>", "</s>", M,
         "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\"}, "
         "\"id\": \"abcdefghi\"}]"},
        {"templates/deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja", "", "", D,
         DS_CALLS DS_CALL "function" DS_SEP
                          "get_weather\n```json\n{\"location\": \"Paris\"}\n```" DS_END},
        {"templates/meetkai-functionary-medium-v3.2.jinja", "", "", F,
         "get_weather\n{\"location\": \"Paris\"}"},
    };
    const char *tools = "[{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", "
                        "\"description\": \"The weather.\", \"parameters\": {\"type\": "
                        "\"object\", \"properties\": {\"location\": {\"type\": \"string\", "
                        "\"description\": \"A city.\"}}, \"required\": [\"location\"]}}}]";
    int n_back = 0;
    for (size_t i = 0; i < sizeof back / sizeof *back; i++) {
        char *tmpl = read_template(back[i].tmpl);
        if (!tmpl) {
            VKT_CHECK(0, "no template %s", back[i].tmpl);
            continue;
        }
        VKT_CHECK(vkf_tool_format_detect(tmpl) == back[i].f, "%s: detected as %s", back[i].tmpl,
                  vkf_tool_format_name(vkf_tool_format_detect(tmpl)));
        char *msg = NULL;
        VKT_OK(vkf_tool_calls_parse(back[i].f, back[i].said, strlen(back[i].said), &msg));
        /* user, the parsed assistant message, the tool's answer */
        char conv[4096];
        snprintf(conv, sizeof conv,
                 "[{\"role\": \"user\", \"content\": \"Weather in Paris?\"}, %s, {\"role\": "
                 "\"tool\", \"tool_call_id\": \"abcdefghi\", \"name\": \"get_weather\", "
                 "\"content\": \"18 C\"}]",
                 msg ? msg : "{}");
        char *out = render(tmpl, back[i].bos, back[i].eos, conv, tools, 1);
        /* functionary writes ">>>" before the recipient; the rest is the model's text */
        VKT_CHECK(out && strstr(out, back[i].said) && strstr(out, "18 C"),
                  "%s: the rendered conversation holds the call as the model wrote it (%s):\n%s",
                  back[i].tmpl, back[i].said, out ? out : vkf_last_error());
        n_back++;
        free(out);
        free(msg);
        free(tmpl);
    }
    printf("round trip: %d fixture conversations with string arguments equal transformers' "
           "renders; %d families' calls render back as written\n",
           n_cases, n_back);
}

int main(void) {
    test_parse();
    test_grammars();
    test_round_trip();
    return vkt_finish();
}
