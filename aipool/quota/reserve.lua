-- Count one call against all of a provider's limits, if it fits: atomic for the whole pool.
-- (Composed with room.lua, which is prepended as a function.)
--
-- KEYS[1..3]  room.lua's keys: request window, current day's counters, current month's counters
-- ARGV[1..8]  room.lua's arguments
-- ARGV[9]     the call's member name in the window (unique per call)
-- ARGV[10]    day counters' ttl    ARGV[11] month counters' ttl    (seconds, counted from now)
--
-- Returns room.lua's refusal, or {'reserved', tokens, at} once the call is counted: one request
-- in the window and the day, its tokens in the day and the month.
local fits = room(KEYS, ARGV)
if fits[1] ~= 'room' then
  return fits
end
local at = tonumber(fits[2])
local tokens = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', at - 60)
redis.call('ZADD', KEYS[1], at, ARGV[9])
redis.call('EXPIRE', KEYS[1], 120)
redis.call('HINCRBY', KEYS[2], 'requests', 1)
redis.call('HINCRBY', KEYS[2], 'tokens', tokens)
redis.call('EXPIRE', KEYS[2], ARGV[10])
redis.call('HINCRBY', KEYS[3], 'tokens', tokens)
redis.call('EXPIRE', KEYS[3], ARGV[11])
return {'reserved', tokens, fits[2]}
