-- PauseTask and ResumeTask in turn on working tasks (bench/load.py, op pause-resume).
-- A wrk request is one HTTP request and request() does not know its connection, so each
-- thread keeps its pool of tasks (params.pools[i], at least twice its connections) in a
-- queue: request() takes the task at the head, pauses it if it is working or resumes it
-- if paused, and the task is out of the queue until its answer comes back. The answer
-- names the task in its JSON-RPC id ("p|<task id>" or "r|<task id>"), which response()
-- reads to put the task back at the tail. So a task has one call in flight at a time and
-- alternates pause, resume, pause... A failed call flips the task's state all the same:
-- had the call taken effect, the next one is right; had it not, the next fails once more
-- and the state is right again. (wrk calls request() once before the run to check it,
-- which takes one task out of thread 1's queue for good: hence the spare tasks.)

local queue, paused = {}, {}
local PAUSED = '"state"%s*:%s*"TASK_STATE_PAUSED_BY_CLIENT"'
local WORKING = '"state"%s*:%s*"TASK_STATE_WORKING"'

function op_init()
  for _, id in ipairs(pool) do
    queue[#queue + 1] = id
    paused[id] = false
  end
end

local function call(method, rpc_id, task_id)
  return wrk.format(nil, nil, nil, string.format(
    '{"jsonrpc":"2.0","id":"%s","method":"%s","params":{"taskId":"%s"%s}}',
    rpc_id, method, task_id, method == "PauseTask" and ',"reason":"bench"' or ""))
end

function request()
  local id = table.remove(queue, 1)
  if id == nil then  -- every task in flight or lost: a call that counts as an error
    return call("ResumeTask", "none", "none")
  end
  if paused[id] then
    return call("ResumeTask", "r|" .. id, id)
  end
  return call("PauseTask", "p|" .. id, id)
end

function response(status, headers, body)
  local kind, id = body:match('"id"%s*:%s*"([pr])|([^"]+)"')
  if id == nil or paused[id] == nil then
    judge(status, body, false)  -- not one of ours: bad
    return
  end
  judge(status, body, kind == "p" and PAUSED or WORKING)
  paused[id] = kind == "p"
  queue[#queue + 1] = id
end
