/*
 * caps.h - what this node's Python can run: the PyTorch version, whether
 * FSDP imports, whether DeepSpeed is installed, whether PyTorch was built
 * with CUDA and NCCL. Register sends it as "capabilities"
 * (docs/agent-protocol.md) and the strategy advisor never picks what a node
 * cannot run (Debian 12's PyTorch 1.13 fails to import FSDP; DeepSpeed is
 * not packaged).
 *
 * The probe runs `PYTHON -c <script>` once at worker start (posix_spawn,
 * its own process group, stdin /dev/null, stderr discarded, the environment
 * the ranks get: PATH, HOME, LANG, PYTHONPATH and the offline flags), reads
 * one marked JSON line from its stdout and kills the group when it outlives
 * the timeout. A probe that cannot run, fails or times out reports
 * "unknown" for everything: never an error, never a guess.
 *
 * Thread-safety: wrk_caps_probe() spawns and waits for its own child only;
 * call it before the launcher starts (main thread). wrk_caps_parse() is pure.
 */
#ifndef TY_WORKER_CAPS_H
#define TY_WORKER_CAPS_H

#include <jansson.h>

#include "err.h"

#define WRK_CAPS_TIMEOUT_MS 30000 /* importing torch takes seconds on a busy node */

/* The line the probe prints: WRK_CAPS_MARKER then a JSON object. */
#define WRK_CAPS_MARKER "TRAINYARD_CAPS "

/*
 * Run the probe with python (borrowed; a path or a name looked up in PATH)
 * for at most timeout_ms and return the capabilities object in *out (new
 * reference): {"probe":"ok","python":"3.11.2","torch":"1.13.0","torch_cuda":
 * "11.7"|null,"nccl":bool,"fsdp":bool,"deepspeed":bool}; torch null when it
 * is not installed. On failure {"probe":"failed"|"timeout", every other key
 * "unknown"}; python NULL or "" runs nothing ("probe":"skipped"). RC_OK or
 * RC_ENOMEM.
 */
enum rc wrk_caps_probe(const char *python, int timeout_ms, json_t **out) TY_WUR;

/*
 * The capabilities object from the probe's stdout (borrowed, NUL-terminated;
 * NULL when the probe did not run to its end) and how it ended (probe: "ok",
 * "failed", "timeout"). Output without a valid marked line, or with a field
 * of the wrong type or size, counts as "failed". New reference, or NULL on
 * ENOMEM.
 */
json_t *wrk_caps_parse(const char *stdout_text, const char *probe);

/* The Python source the probe runs (static). */
const char *wrk_caps_script(void);

#endif
