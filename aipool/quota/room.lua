-- Whether one more call of a given size fits a provider's limits. Reads only.
--
-- KEYS[1]  request window: sorted set, call -> time it was counted (the last 60 s)
-- KEYS[2]  the current day's counters (hash: requests, tokens)
-- KEYS[3]  the current month's counters (hash: tokens)
-- ARGV[1]  now (epoch seconds)             ARGV[2]  tokens the call may use
-- ARGV[3]  rpm        ARGV[4]  daily_requests   ARGV[5]  daily_tokens   ARGV[6]  monthly_tokens
--          (-1 = unlimited)
-- ARGV[7]  end of the current day    ARGV[8]  end of the current month    (epoch seconds)
--
-- Returns {'room', at} when it fits, where ``at`` is when the call would enter the window (never
-- before the newest call in it, so the window stays ordered when hosts' clocks disagree), or
-- {'exceeded', limit, retry_at, used, limit_value} naming the first limit without room.
local now = tonumber(ARGV[1])
local tokens = tonumber(ARGV[2])
local rpm = tonumber(ARGV[3])
local daily_requests = tonumber(ARGV[4])
local daily_tokens = tonumber(ARGV[5])
local monthly_tokens = tonumber(ARGV[6])

local at = now
local newest = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
if newest[2] and tonumber(newest[2]) > at then
  at = tonumber(newest[2])
end
if rpm >= 0 then
  -- A call counted at s is inside every window [t, t + 60) with t <= s; it leaves at s + 60.
  local since = '(' .. string.format('%.6f', at - 60)
  local in_window = redis.call('ZCOUNT', KEYS[1], since, '+inf')
  if in_window >= rpm then
    local oldest = redis.call('ZRANGEBYSCORE', KEYS[1], since, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
    local retry_at = at
    if oldest[2] then
      retry_at = tonumber(oldest[2]) + 60
    end
    return {'exceeded', 'rpm', string.format('%.6f', retry_at), in_window, rpm}
  end
end
local day = redis.call('HMGET', KEYS[2], 'requests', 'tokens')
local day_requests = tonumber(day[1]) or 0
local day_tokens = tonumber(day[2]) or 0
if daily_requests >= 0 and day_requests + 1 > daily_requests then
  return {'exceeded', 'daily_requests', ARGV[7], day_requests, daily_requests}
end
if daily_tokens >= 0 and day_tokens + tokens > daily_tokens then
  return {'exceeded', 'daily_tokens', ARGV[7], day_tokens, daily_tokens}
end
local month_tokens = tonumber(redis.call('HGET', KEYS[3], 'tokens')) or 0
if monthly_tokens >= 0 and month_tokens + tokens > monthly_tokens then
  return {'exceeded', 'monthly_tokens', ARGV[8], month_tokens, monthly_tokens}
end
return {'room', string.format('%.6f', at)}
