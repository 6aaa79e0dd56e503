-- One JSON-RPC call per request (bench/load.py: every operation but pause-resume).
--   params.body = {before, after}: the request body is before .. X .. after, where X is
--     a fresh message id (params.id_prefix .. nonce-thread-counter) when params.id_prefix
--     is set (SendMessage: Taskdeck answers a repeated messageId with the first task), the
--     next of params.ids (GetTask, cycling), or nothing (ListTasks: always the same body).

local next_index = 0

function request()
  local middle = ""
  if params.id_prefix then
    middle = fresh_id(params.id_prefix)
  elseif params.ids then
    next_index = next_index % #params.ids + 1
    middle = params.ids[next_index]
  end
  return wrk.format(nil, nil, nil, params.body[1] .. middle .. params.body[2])
end

function response(status, headers, body)
  judge(status, body, params.want)
end
