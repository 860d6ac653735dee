-- Replace a reservation's estimate with the tokens the call really used. Idempotent.
--
-- KEYS[1] reservation hash   KEYS[2] its day's counters   KEYS[3] its month's counters
-- KEYS[4] open reservations        KEYS[5] the answer kept for a redelivery
-- ARGV[1] actual tokens      ARGV[2] reservation name
-- ARGV[3] the answer (JSON), '' to keep none   ARGV[4] how long to keep it (seconds)
--
-- Returns {state_before}: 'reserved' when it settled now; anything else changed nothing.
local f = redis.call('HMGET', KEYS[1], 'state', 'tokens')
if not f[1] then
  return {'missing'}
end
if f[1] ~= 'reserved' then
  return {f[1]}
end

local delta = tonumber(ARGV[1]) - tonumber(f[2])
-- A counter lost with Redis is rebuilt from the ledger (restore), not half-recreated here.
local function adjust(key, field, by)
  if by ~= 0 and redis.call('EXISTS', key) == 1 then
    local value = (tonumber(redis.call('HGET', key, field)) or 0) + by
    if value < 0 then
      value = 0
    end
    redis.call('HSET', key, field, value)
  end
end
adjust(KEYS[2], 'tokens', delta)
adjust(KEYS[3], 'tokens', delta)
redis.call('HSET', KEYS[1], 'state', 'settled', 'tokens', ARGV[1])
redis.call('ZREM', KEYS[4], ARGV[2])
if ARGV[3] ~= '' then
  redis.call('SET', KEYS[5], ARGV[3], 'EX', ARGV[4])
end
return {'reserved'}
