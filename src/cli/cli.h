/* The vkformer CLI: one function per subcommand, each returning the process exit code. The CLI
 * is the only layer that prints for users and exits. */
#ifndef VKF_CLI_H
#define VKF_CLI_H

#include "vkformer.h"

typedef struct vkf_cli_cmd {
    const char *name;
    int (*run)(int argc, char **argv); /* argv[0] is the subcommand name */
    const char *help;                  /* one line */
} vkf_cli_cmd;

int vkf_cmd_devices(int argc, char **argv);
int vkf_cmd_selftest(int argc, char **argv);
int vkf_cmd_generate(int argc, char **argv);
int vkf_cmd_translate(int argc, char **argv);
int vkf_cmd_info(int argc, char **argv);
int vkf_cmd_verify(int argc, char **argv);
int vkf_cmd_bench(int argc, char **argv);
int vkf_cmd_tune(int argc, char **argv);
int vkf_cmd_tokenize(int argc, char **argv);
int vkf_cmd_detokenize(int argc, char **argv);
int vkf_cmd_serve(int argc, char **argv); /* the HTTP server itself is src/serve */
int vkf_cmd_chat(int argc, char **argv);  /* cli/cmd_chat.c */
int vkf_cmd_template(int argc, char **argv);
int vkf_cmd_quantize(int argc, char **argv);
int vkf_cmd_embed(int argc, char **argv);      /* cli/cmd_embed.c */
int vkf_cmd_rerank(int argc, char **argv);     /* cli/cmd_rerank.c */
int vkf_cmd_pull(int argc, char **argv);       /* cli/cmd_pull.c */
int vkf_cmd_perplexity(int argc, char **argv); /* cli/cmd_perplexity.c */

/* Options are parsed by frontend/args.h (one table per command). */
/* vkf_context_create, plus a one-line notice on stderr when AUTO fell back to the CPU. */
vkf_status vkf_cli_context(const vkf_context_params *cp, vkf_context **out);
/* A layer split's placement on stderr, one line per device (nothing without a split). */
void vkf_cli_print_split(const char *cmd, const vkf_model *m);
/* Prints "vkformer: <what>: <vkf_last_error()>" to stderr and returns 1 (a runtime error; usage
 * errors exit 2 through vkf_args_parse / vkf_usage_error). what is "CMD" or "CMD: doing X". */
int vkf_cli_fail(const char *what);

/* The whole text of FILE ('-': stdin), NUL-terminated, malloc'ed; NULL after printing
 * "vkformer: CMD: FLAG FILE: reason" (missing, a directory, unreadable, NUL bytes). */
char *vkf_cli_read_text(const char *cmd, const char *flag, const char *path);
/* For a character-level vocabulary (the tokenizer of tok_path): a warning on stderr naming the
 * characters of text that are not in it (they become <unk>). Nothing for other tokenizers. */
void vkf_cli_warn_unknown_chars(const char *cmd, const char *tok_path, const char *text);
/* vkf_model_params.progress for the commands: a bar on stderr when it is a terminal (user: the
 * label, e.g. "loading"), nothing otherwise; the line is cleared when done == total. */
void vkf_cli_progress(void *user, double done, double total);
/* vkf_set_shader_compile_callback for the commands: a counter line on stderr when it is a
 * terminal; vkf_cli_progress_clear() removes it before other output. */
void vkf_cli_compile_progress(void *user, int n_compiled, const char *shader);
void vkf_cli_progress_clear(void);
/* stdout, checked in one place. main() calls vkf_cli_stdout_begin before the command (stdout
 * fully buffered in 64 KiB when it is not a terminal, so a write error surfaces with its reason
 * at a flush) and vkf_cli_stdout_end after it: a failed fflush / ferror / fclose of stdout
 * turns a success into exit 1 with "vkformer: CMD: writing to stdout: REASON" (a full disk,
 * /dev/full), unless the command already said so through vkf_cli_stdout_failed. */
void vkf_cli_stdout_begin(void);
int vkf_cli_stdout_end(const char *cmd, int rc);
/* Prints "vkformer: CMD: writing to stdout: strerror(err)" once and returns 1. */
int vkf_cli_stdout_failed(const char *cmd, int err);
/* fflush(stdout); on failure vkf_cli_stdout_failed. 0 or 1. */
int vkf_cli_stdout_flush(const char *cmd);
/* vkf_model_tokenize into a malloc'ed array grown to what the tokenizer needs (byte fallback can
 * give several tokens per byte), with one spare slot; *out is NULL after an error. */
vkf_status vkf_cli_tokenize(vkf_model *m, const char *text, int flags, int32_t **out, int32_t *n);
/* Splits text into lines (one input each; "\r\n" ends a line too; a final newline ends the last
 * line rather than starting an empty one): *out, malloc'ed, points into text, which is modified.
 * 0, or -1 out of memory. */
int vkf_cli_split_lines(char *text, char ***out, int32_t *n);
/* s as a JSON string on stdout (quotes, backslashes and control characters escaped). */
void vkf_cli_json_str(const char *s);

#endif
