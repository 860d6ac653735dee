-- Change what one counted call is charged: its tokens, and whether it counts as a request at all.
--
-- KEYS[1] the call's day counters   KEYS[2] its month counters   KEYS[3] request window
-- ARGV[1] tokens to add (negative: handed back)
-- ARGV[2] '1' when the call never happened: its request leaves the day and the window too
-- ARGV[3] the call's member name in the window
--
-- A counter lost with Redis is rebuilt from the ledger (restore.lua), not half-recreated here;
-- no counter goes below zero. Returns {}.
local function shift(key, field, by)
  if by ~= 0 and redis.call('EXISTS', key) == 1 then
    local value = (tonumber(redis.call('HGET', key, field)) or 0) + by
    if value < 0 then
      value = 0
    end
    redis.call('HSET', key, field, value)
  end
end
local tokens = tonumber(ARGV[1])
shift(KEYS[1], 'tokens', tokens)
shift(KEYS[2], 'tokens', tokens)
if ARGV[2] == '1' then
  shift(KEYS[1], 'requests', -1)
  redis.call('ZREM', KEYS[3], ARGV[3])
end
return {}
