/* The switches (vkf_switches in vkformer.h) and the one place that reads the process
 * environment: vkf_switches_from_env and the default cache directory. Every other file takes
 * the switches a context was created with (docs/DESIGN.md, 'Switches read once'). */
#ifndef VKF_CORE_SWITCHES_H
#define VKF_CORE_SWITCHES_H

#include <stddef.h>

#include "vkformer.h"

/* The cache directory of sw: sw->cache_dir, else $XDG_CACHE_HOME/vkformer, else
 * $HOME/.cache/vkformer; "" when none can be named. */
void vkf_switches_cache_dir(const vkf_switches *sw, char *out, size_t n);

/* The directory for temporary files: $TMPDIR, else /tmp. */
const char *vkf_switches_tmpdir(void);

#endif
