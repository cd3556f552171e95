-- wrk script: GET with the bench API token (env TY_TOKEN); prints one
-- machine-readable RESULT line (see report.lua).
wrk.headers["Authorization"] = "Bearer " .. (os.getenv("TY_TOKEN") or "")
dofile(os.getenv("TY_BENCH_DIR") .. "/report.lua")
