-- wrk script: plain GET (nginx static file).
dofile(os.getenv("TY_BENCH_DIR") .. "/report.lua")
