-- Shared by the wrk scripts. Prints one line:
-- "RESULT req_per_s p50_ms p99_ms requests http_errors socket_errors bytes_per_req"
-- http_errors is wrk's count of answers with status >= 400. No response()
-- hook on purpose: it would make wrk parse every body in Lua and slow it.
function done(summary, latency, requests)
  local e = summary.errors
  local n = summary.requests
  io.write(string.format("RESULT %.1f %.3f %.3f %d %d %d %.0f\n",
    n / (summary.duration / 1e6), latency:percentile(50) / 1000,
    latency:percentile(99) / 1000, n, e.status, e.connect + e.read + e.write + e.timeout,
    n > 0 and summary.bytes / n or 0))
end
