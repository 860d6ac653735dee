-- Raise the current day's and month's counters to at least the ledger's totals.
-- Never lowers a counter: reservations made since the ledger was read are already in it.
--
-- KEYS[1] day's counters   KEYS[2] month's counters
-- ARGV[1] day requests   ARGV[2] day tokens   ARGV[3] month tokens
-- ARGV[4] day key ttl   ARGV[5] month key ttl   (seconds)
--
-- Returns {day_requests, day_tokens, month_tokens} after the update.
local function raise(key, field, floor)
  local value = tonumber(redis.call('HGET', key, field)) or 0
  floor = tonumber(floor)
  if floor > value then
    redis.call('HSET', key, field, floor)
    return floor
  end
  return value
end
local r = raise(KEYS[1], 'requests', ARGV[1])
local t = raise(KEYS[1], 'tokens', ARGV[2])
local m = raise(KEYS[2], 'tokens', ARGV[3])
redis.call('EXPIRE', KEYS[1], ARGV[4])
redis.call('EXPIRE', KEYS[2], ARGV[5])
return {r, t, m}
