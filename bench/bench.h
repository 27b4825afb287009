/* Benchmarks compiled into the CLI (`vkformer bench`, `vkformer tune`): end-to-end prompt /
 * generation speed through the public API (bench_e2e.c), kernel sweeps with measured peaks
 * (bench_kernels.c), start-up time (bench_startup.c), SVG charts (bench_plot.c), and helpers
 * shared by them (bench_util.c). Each entry point takes the arguments after `bench` and returns
 * the process exit code; they print for users (the CLI layer). */
#ifndef VKF_BENCH_H
#define VKF_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---------------------------------------------------------------- entry points */

/* vkformer bench -m MODEL [-p 64,512] [-n 16,128] [-r 5] [-o md|json|csv] [--depth D,...]
 *                [--backends cpu,vulkan] [--device N] [--profile] */
int vkf_bench_e2e(int argc, char **argv);
/* vkformer bench --kernels [--quick] [--device N] [-o md|json|csv] [--json-out FILE] */
int vkf_bench_kernels(int argc, char **argv);
/* The kernel sweep (peaks + kernels) as its JSON report, without printing; malloc'ed, NULL
 * on failure. only: NULL or "matmul", "attention", ... */
char *vkf_bench_kernels_json(const char *device, int quick, const char *only);
/* vkformer bench --startup -m MODEL [-r N] [-o md|json|csv] */
int vkf_bench_startup(int argc, char **argv);
/* vkformer bench --plot DIR [-m MODEL] [--device N] [--depths 16,64,...] [--from-json FILE] */
int vkf_bench_plot(int argc, char **argv);
/* Hidden helper of --startup: loads the model, evaluates one prompt token and prints the time
 * since the process started; `vkformer bench --first-token -m MODEL`. */
int vkf_bench_first_token(int argc, char **argv);
/* vkformer bench --embedding -m MODEL [-b 1,32,256] [--tokens 30] [-r 5] (bench_embed.c) */
int vkf_bench_embed(int argc, char **argv);
/* vkformer bench --compare [DIR] [--svg FILE]: the side-by-side result files (bench_compare.c) */
int vkf_bench_compare(int argc, char **argv);
/* vkformer bench --tokenizer ...: provided by bench/bench_tokenizer.c (the tokenizer's owner). */
int vkf_bench_tokenizer(int argc, char **argv);
/* vkformer bench --grammar [--vocab P1,P2] [-m MODEL] [-r N]: constrained sampling's cost per
 * token (bench/bench_grammar.c). */
int vkf_bench_grammar(int argc, char **argv);
/* vkformer bench --speculative -m MODEL [-f PROMPT] [-n N] [-r N] [--draft-max N] [-md DRAFT]:
 * decode with speculative decoding against without, same tokens (bench/bench_spec.c). */
int vkf_bench_spec(int argc, char **argv);

/* ---------------------------------------------------------------- helpers (bench_util.c) */

typedef enum vkf_bench_fmt { VKF_BENCH_MD = 0, VKF_BENCH_JSON, VKF_BENCH_CSV } vkf_bench_fmt;

/* "md", "json", "csv" -> format; -1 if unknown. */
int vkf_bench_parse_fmt(const char *s);
/* Parses "64,512" into out[0..cap); returns the count, -1 on a malformed list. */
int vkf_bench_parse_ints(const char *s, int *out, int cap);
/* Monotonic wall clock, milliseconds. */
double vkf_bench_now_ms(void);
/* CPU time of the process (user + system, all threads), milliseconds. On a CPU device
 * (lavapipe) this is the work done, which a loaded machine does not inflate. */
double vkf_bench_cpu_ms(void);
/* Mean and sample standard deviation of x[0..n) (sd 0 when n < 2). */
void vkf_bench_stats(const double *x, int n, double *mean, double *sd);
/* Median of x[0..n) (x is reordered). */
double vkf_bench_median(double *x, int n);
/* 1-minute load average and online CPU count, for the header of every report. */
void vkf_bench_load(double *load1, int *ncpu);
/* "2026-11-22T12:00:00Z" (UTC now). */
void vkf_bench_iso_time(char *out, size_t n);
/* Device driver info ("Mesa 22.3.6 (LLVM 15.0.6)") of the Vulkan device named `name`, from
 * vkf_devices_report; "" when not found. */
void vkf_bench_driver_of(const char *name, char *out, size_t n);
/* Human-readable sizes: "13.07 MiB", "3.41 M". */
void vkf_bench_fmt_bytes(double b, char *out, size_t n);
void vkf_bench_fmt_count(double c, char *out, size_t n);

#endif
