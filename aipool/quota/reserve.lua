-- Check all of a provider's limits and reserve one call's tokens, in one atomic step for the pool.
--
-- KEYS[1]  reservation hash (state, tokens, at), one per (request id, attempt)
-- KEYS[2]  request window: sorted set, reservation -> time it was reserved
-- KEYS[3]  current day's counters (hash: requests, tokens)
-- KEYS[4]  current month's counters (hash: tokens)
-- KEYS[5]  open reservations: sorted set, reservation -> time reserved (for sweeping)
-- KEYS[6]  the answer of a settled reservation, kept while its message can still be redelivered
-- ARGV[1]  now (epoch seconds)             ARGV[2]  tokens to reserve
-- ARGV[3]  rpm        ARGV[4]  daily_requests   ARGV[5]  daily_tokens   ARGV[6]  monthly_tokens
--          (-1 = unlimited)
-- ARGV[7]  reservation name (request id:attempt)
-- ARGV[8]  day key ttl    ARGV[9]  month key ttl    (seconds, counted from now)
-- ARGV[10] reservation record ttl (seconds)
-- ARGV[11] end of the current day    ARGV[12] end of the current month    (epoch seconds)
-- ARGV[13] current day's label          ARGV[14] current month's label
--
-- Returns {'existing', state, tokens, at, day, month, answer} when this reservation was already made
--         and still counts (answer is '' unless it was settled and its answer is still kept), {'reserved', 'reserved', tokens, at, day, month} when reserved now,
--         {'exceeded', limit, retry_at, used, limit_value} when a limit has no room.
local existing = redis.call('HMGET', KEYS[1], 'state', 'tokens', 'at', 'day', 'month')
-- A reservation handed back in full ('cancelled') counts for nothing, so it may be made again.
if existing[1] and existing[1] ~= 'cancelled' then
  local answer = ''
  if existing[1] == 'settled' then
    answer = redis.call('GET', KEYS[6]) or ''
  end
  return {'existing', existing[1], existing[2], existing[3], existing[4], existing[5], answer}
end

local now = tonumber(ARGV[1])
local tokens = tonumber(ARGV[2])
local rpm = tonumber(ARGV[3])
local daily_requests = tonumber(ARGV[4])
local daily_tokens = tonumber(ARGV[5])
local monthly_tokens = tonumber(ARGV[6])

-- The window must stay ordered even when hosts' clocks disagree: a reservation never goes in
-- before the newest one, so "the last 60 seconds" is always the tail of the set.
local at = now
local newest = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
if newest[2] and tonumber(newest[2]) > at then
  at = tonumber(newest[2])
end
-- A reservation made at s is inside every window [t, t + 60) with t <= s; it leaves at s + 60.
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', at - 60)

if rpm >= 0 then
  local in_window = redis.call('ZCARD', KEYS[2])
  if in_window >= rpm then
    local oldest = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
    local retry_at = at
    if oldest[2] then
      retry_at = tonumber(oldest[2]) + 60
    end
    return {'exceeded', 'rpm', string.format('%.6f', retry_at), in_window, rpm}
  end
end

local day = redis.call('HMGET', KEYS[3], 'requests', 'tokens')
local day_requests = tonumber(day[1]) or 0
local day_tokens = tonumber(day[2]) or 0
if daily_requests >= 0 and day_requests + 1 > daily_requests then
  return {'exceeded', 'daily_requests', ARGV[11], day_requests, daily_requests}
end
if daily_tokens >= 0 and day_tokens + tokens > daily_tokens then
  return {'exceeded', 'daily_tokens', ARGV[11], day_tokens, daily_tokens}
end
local month_tokens = tonumber(redis.call('HGET', KEYS[4], 'tokens')) or 0
if monthly_tokens >= 0 and month_tokens + tokens > monthly_tokens then
  return {'exceeded', 'monthly_tokens', ARGV[12], month_tokens, monthly_tokens}
end

local stamp = string.format('%.6f', at)
redis.call('ZADD', KEYS[2], at, ARGV[7])
redis.call('EXPIRE', KEYS[2], 120)
redis.call('HINCRBY', KEYS[3], 'requests', 1)
redis.call('HINCRBY', KEYS[3], 'tokens', tokens)
redis.call('EXPIRE', KEYS[3], ARGV[8])
redis.call('HINCRBY', KEYS[4], 'tokens', tokens)
redis.call('EXPIRE', KEYS[4], ARGV[9])
redis.call('HSET', KEYS[1], 'state', 'reserved', 'tokens', tokens, 'at', stamp,
  'day', ARGV[13], 'month', ARGV[14])
redis.call('EXPIRE', KEYS[1], ARGV[10])
redis.call('ZADD', KEYS[5], at, ARGV[7])
return {'reserved', 'reserved', tokens, stamp, ARGV[13], ARGV[14]}
