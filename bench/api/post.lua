-- wrk script: POST /api/v1/jobs with 1024 GPUs (never placed; no workers run).
wrk.method = "POST"
wrk.path = "/api/v1/jobs"
wrk.headers["Authorization"] = "Bearer " .. (os.getenv("TY_TOKEN") or "")
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"name":"b","team":"bench","command":["/bin/true"],"resources":{"gpus":1024}}'
dofile(os.getenv("TY_BENCH_DIR") .. "/report.lua")
