/*
 * gpu_sample.c - per-rank GPU memory peaks (see gpu_sample.h).
 */
#include "gpu_sample.h"

#include <sys/types.h>

#include "state.h"

void wrk_gpu_sample_mem(struct wrk_gpus *g, struct wrk_launcher *l)
{
    struct wrk_proc_mem pm[256];
    struct wrk_group_mem gm[256];
    int n = wrk_gpus_proc_mem(g, pm, sizeof(pm) / sizeof(pm[0]));
    size_t k = 0;

    for (int i = 0; i < n; i++) {
        pid_t pg;
        if (wrk_proc_pgid(pm[i].pid, &pg) != RC_OK)
            continue; /* gone, or a pid of another PID namespace */
        gm[k].pgid = pg;
        gm[k].bytes = pm[i].bytes;
        k++;
    }
    if (k > 0)
        wrk_launcher_note_gpu_mem(l, gm, k);
}
