-- Shared part of bench/load.py's wrk scripts. The script wrk runs is a header that
-- bench/load.py writes (it defines the table `params`), then this file, then the
-- operation's file (call.lua or pause_resume.lua), all in every Lua state wrk makes: one
-- for setup() and done(), one per thread for init(), request() and response().
--
-- params = {
--   host, ports = {p1, p2, ...},    -- thread i connects to ports[(i - 1) % #ports + 1]
--   path, headers = {name = value},  -- the JSON-RPC endpoint, auth and A2A-Version
--   nonce,                           -- fresh for each wrk run: message ids never repeat
--   want,                            -- Lua pattern an answer must contain to count as ok
--   ...                              -- the operation's own fields
-- }
--
-- Errors: a JSON-RPC error comes back with HTTP 200, so every answer is judged by its
-- body. An answer is ok if its status is 200, its body matches params.want (or the
-- operation's own pattern) and holds no JSON-RPC error object; anything else is bad. Each
-- thread counts its own; done() sums them over the threads and prints one line for
-- bench/load.py to read, with the first bad answer of the run as a sample.

local threads = {}

function setup(thread)
  local i = #threads + 1
  threads[i] = thread
  local port = tostring(params.ports[(i - 1) % #params.ports + 1])
  thread.addr = wrk.lookup(params.host, port)[1]
  thread:set("thread_index", i)
  thread:set("host_header", params.host .. ":" .. port)
  if params.pools then
    thread:set("pool", params.pools[i])
  end
end

-- per thread (each thread's Lua state has its own)
ok, bad, sample = 0, 0, ""
thread_index, host_header, pool = 0, "", nil
local counter = 0

function init(args)
  wrk.method = "POST"
  wrk.path = params.path
  for name, value in pairs(params.headers) do
    wrk.headers[name] = value
  end
  wrk.headers["Host"] = host_header
  wrk.headers["Content-Type"] = "application/json"
  if op_init then
    op_init()
  end
end

-- A message id no request of this or any other run has used (the nonce is per run).
function fresh_id(prefix)
  counter = counter + 1
  return string.format("%s%s-%d-%d", prefix, params.nonce, thread_index, counter)
end

-- Count one answer; true if it is ok (want false: bad whatever it says).
function judge(status, body, want)
  if want and status == 200 and body:find(want) and not body:find('"error"%s*:%s*{') then
    ok = ok + 1
    return true
  end
  bad = bad + 1
  if sample == "" then
    sample = status .. " " .. body:sub(1, 400)
  end
  return false
end

function done(summary, latency, requests)
  local n_ok, n_bad, first = 0, 0, ""
  for _, thread in ipairs(threads) do
    n_ok = n_ok + thread:get("ok")
    n_bad = n_bad + thread:get("bad")
    if first == "" then
      first = thread:get("sample")
    end
  end
  local e = summary.errors
  io.write(string.format(
    "BENCH ok=%d bad=%d requests=%d duration_us=%d p50_us=%d p99_us=%d "
      .. "connect=%d read=%d write=%d status=%d timeout=%d\n",
    n_ok, n_bad, summary.requests, summary.duration,
    latency:percentile(50.0), latency:percentile(99.0),
    e.connect, e.read, e.write, e.status, e.timeout))
  io.write("BENCH-SAMPLE " .. first:gsub("[\r\n]+", " ") .. "\n")
end
