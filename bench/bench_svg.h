/* The SVG helpers of bench_plot.c, shared with the other charts (bench_compare.c): a plot
 * area with linear or log axes in data units, text, ticks and the frame. */
#ifndef VKF_BENCH_SVG_H
#define VKF_BENCH_SVG_H

#include <stdio.h>

typedef struct vkf_svg {
    FILE *f;
    double x0, y0, w, h; /* plot area in pixels */
    double xmin, xmax, ymin, ymax;
    int xlog, ylog;
    int no_xticks; /* 1: the caller labels the x axis itself (categories) */
} vkf_svg;

/* data -> pixel coordinates */
double vkf_svg_tx(const vkf_svg *s, double x);
double vkf_svg_ty(const vkf_svg *s, double y);
/* text at (x, y) pixels, anchor "start" | "middle" | "end", escaped for XML */
void vkf_svg_text(const vkf_svg *s, double x, double y, const char *anchor, int size,
                  const char *txt);
/* the frame, grid lines, tick labels, title and axis labels of s's plot area */
void vkf_svg_axes(const vkf_svg *s, const char *title, const char *xlabel, const char *ylabel);
/* opens dir/name (dir NULL: name is the path) and writes the <svg> header; NULL on failure */
FILE *vkf_svg_open(const char *dir, const char *name, vkf_svg *s, double width, double height);
/* writes </svg> and closes; fclose's result */
int vkf_svg_close(vkf_svg *s);

#endif
