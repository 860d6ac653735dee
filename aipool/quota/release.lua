-- Hand back a reservation that will never be settled. Idempotent.
--
-- KEYS[1] reservation hash   KEYS[2] its day's counters   KEYS[3] its month's counters
-- KEYS[4] open reservations  KEYS[5] request window
-- ARGV[1] 'released': the call was made and failed, so only its tokens come back (the provider
--         still saw a request); 'cancelled': the call never happened, so everything comes back
-- ARGV[2] reservation name
--
-- Returns {state_before}: 'reserved' when it was handed back now; anything else changed nothing.
local f = redis.call('HMGET', KEYS[1], 'state', 'tokens')
if not f[1] then
  return {'missing'}
end
if f[1] ~= 'reserved' then
  return {f[1]}
end

local function adjust(key, field, by)
  if by ~= 0 and redis.call('EXISTS', key) == 1 then
    local value = (tonumber(redis.call('HGET', key, field)) or 0) + by
    if value < 0 then
      value = 0
    end
    redis.call('HSET', key, field, value)
  end
end
local tokens = tonumber(f[2])
adjust(KEYS[2], 'tokens', -tokens)
adjust(KEYS[3], 'tokens', -tokens)
if ARGV[1] == 'cancelled' then
  adjust(KEYS[2], 'requests', -1)
  redis.call('ZREM', KEYS[5], ARGV[2])
end
redis.call('HSET', KEYS[1], 'state', ARGV[1], 'tokens', 0)
redis.call('ZREM', KEYS[4], ARGV[2])
return {'reserved'}
