/*
 * fuzz_sched_trace.c - arbitrary bytes into the simulator's trace parsers
 * (both formats); what parses is replayed on a small cluster with
 * sched_check() on every pass. Nothing may crash, leak or fail a check.
 */
#include <stdint.h>
#include <stdlib.h>

#include "sim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *pols[4] = {"fifo", "sjf-oracle", "trainyard", "tiresias-las"};

    for (int f = 0; f < 2; f++) {
        struct sim_trace t;
        struct sim_result r;
        struct err e;
        enum sim_format fmt = f ? SIM_FORMAT_CSV : SIM_FORMAT_PHILLY;
        if (sim_trace_parse((const char *)data, size, fmt, &t, &e) != RC_OK)
            continue;
        if (t.njobs <= 40) {
            if (size > 0 && data[0] & 1 &&
                sim_trace_sample(&t, 1 + t.njobs / 2, size, &e) != RC_OK) {
                sim_trace_free(&t);
                continue;
            }
            struct sim_config cfg = {4, 4, 2, sched_policy_find(pols[size % 4]), 1.0, true};
            enum rc rc = sim_run(&cfg, &t, &r, &e);
            if (rc != RC_OK && rc != RC_EINVAL)
                abort();
        }
        sim_trace_free(&t);
    }
    return 0;
}
