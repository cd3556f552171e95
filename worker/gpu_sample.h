/*
 * gpu_sample.h - each running rank's GPU memory peak, sampled from NVML's
 * per-process figures (gpu.h) while ranks run and reported with the
 * attempt's exit. Each process counts for its process group, which its rank
 * leads, so memory held by a rank's helpers is the rank's.
 *
 * Threads: main thread only (the launcher takes the figures under its lock).
 */
#ifndef TY_WORKER_GPU_SAMPLE_H
#define TY_WORKER_GPU_SAMPLE_H

#include "gpu.h"
#include "launcher.h"

/*
 * Raise the peaks l (borrowed) keeps from one NVML sample of g (borrowed).
 * Nothing happens without NVML (fake GPUs): no figure is made up.
 */
void wrk_gpu_sample_mem(struct wrk_gpus *g, struct wrk_launcher *l);

#endif
