-- The backlog of each lane: messages waiting, and the age of the oldest on Redis's clock.
-- aipool/backlog.py says what it promises and why.
--   KEYS: for each lane, its list then its stamps (hash: task id -> when first seen waiting)
--   ARGV[1] how many messages to look at at each end of a list
--   ARGV[2] how long stamps are kept (s)    ARGV[3] the most stamps a lane keeps
--   ARGV[4] how long stamps outlive their lane's last waiting message (s)
-- Reply: for each lane {length, age of the oldest in seconds ('%.6f'; 0 when none waits)}.
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local NOW = string.format('%.6f', now)
local ends = tonumber(ARGV[1])

-- The task id of a message as kombu keeps it (a JSON envelope with headers.id), or nil.
local function task_id(raw)
  if not raw then
    return nil
  end
  local ok, envelope = pcall(cjson.decode, raw)
  if not ok or type(envelope) ~= 'table' or type(envelope.headers) ~= 'table' then
    return nil
  end
  local id = envelope.headers.id
  if type(id) ~= 'string' then
    return nil
  end
  return id
end

local out = {}
for i = 1, #KEYS, 2 do
  local list, stamps = KEYS[i], KEYS[i + 1]
  local n = redis.call('LLEN', list)
  local age = 0
  if n == 0 then
    -- Nothing waits, but the message a worker has just popped is still to be asked for: its
    -- stamps go once the lane has stayed empty for ARGV[4] seconds (a new sighting with
    -- messages waiting keeps them for ARGV[2] again).
    if redis.call('TTL', stamps) > tonumber(ARGV[4]) then
      redis.call('EXPIRE', stamps, ARGV[4])
    end
  else
    if redis.call('HLEN', stamps) > tonumber(ARGV[3]) then
      -- A lane that never empties: forget what passed (the waiting are stamped again now).
      redis.call('DEL', stamps)
    end
    -- kombu pushes on the left and workers pop on the right: the newest are at the head, the
    -- oldest at the tail.
    local items = redis.call('LRANGE', list, 0, ends - 1)
    if n > ends then
      for _, raw in ipairs(redis.call('LRANGE', list, -ends, -1)) do
        items[#items + 1] = raw
      end
    end
    for _, raw in ipairs(items) do
      local id = task_id(raw)
      if id then
        redis.call('HSETNX', stamps, id, NOW)
      end
    end
    redis.call('EXPIRE', stamps, ARGV[2])
    local oldest = task_id(redis.call('LINDEX', list, -1))
    local at = oldest and tonumber(redis.call('HGET', stamps, oldest) or '')
    if at then
      age = math.max(0, now - at)
    end
  end
  out[#out + 1] = {n, string.format('%.6f', age)}
end
return out
