/* A Jinja2 interpreter for chat templates (template/jinja_*.c).
 *
 * It renders the subset of Jinja2 that Hugging Face chat templates use, with the settings of
 * transformers' apply_chat_template: trim_blocks, lstrip_blocks, keep_trailing_newline off,
 * no autoescape, undefined variables as jinja2.Undefined (not strict), the loopcontrols
 * extension, tojson as json.dumps(ensure_ascii=False), and the globals raise_exception(msg)
 * and strftime_now(fmt) (the date is fixed: 26 July 2024, see vkf_jinja_render).
 *
 * Layout: jinja_lex.c/.h (template text to tokens, whitespace control), jinja_parse.c (tokens to
 * a syntax tree), jinja_value.c (values, printing, JSON), jinja_builtin.c (filters, tests,
 * methods, globals), jinja_eval.c (statements and expressions). Everything a render allocates
 * lives in one arena freed at the end; errors unwind with longjmp to vkf_jinja_render. */
#ifndef VKF_MODEL_JINJA_H
#define VKF_MODEL_JINJA_H

#include <stddef.h>

#include "vkformer.h"

/* A variable of the render: its name and its value as JSON text. name NULL: json is an object
 * whose members are all variables. */
typedef struct vkf_jinja_var {
    const char *name;
    const char *json;
} vkf_jinja_var;

/* Renders tmpl (len bytes, UTF-8) with the variables vars[0..n) (a later one replaces an earlier
 * one of the same name). JSON is read as Python's json.loads reads it: integers and floats stay
 * apart and object members keep their order (tojson prints keys in that order). *out is
 * malloc'ed and NUL-terminated.
 * Errors: VKF_ERROR_FORMAT with "template line L, column C: ..." for syntax and evaluation
 * errors, or exactly the message given to raise_exception(); VKF_ERROR_OUT_OF_MEMORY when the
 * render exceeds its memory limit. */
vkf_status vkf_jinja_render(const char *tmpl, size_t len, const vkf_jinja_var *vars, int n_vars,
                            char **out);

#endif
