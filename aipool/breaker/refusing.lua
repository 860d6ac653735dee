-- Whether a provider refuses every call now, without taking a trial slot. Reads only.
--
-- KEYS[1]  state hash (see acquire.lua)
-- ARGV[1]  now (epoch seconds)    ARGV[2]  recovery_timeout (seconds)
--
-- Returns {'paused', paused_until} while the pause a rate-limited provider asked for lasts (set by
-- record.lua), else {'open', retry_at} while OPEN and its recovery window has not passed, else
-- {}: a half-open breaker, or an open one whose window has passed, may still admit a call.
local fields = redis.call('HMGET', KEYS[1], 'state', 'opened_at', 'paused_until')
local now = tonumber(ARGV[1])
local paused_until = tonumber(fields[3] or '')
if paused_until and now < paused_until then
  return {'paused', string.format('%.6f', paused_until)}
end
if fields[1] ~= 'open' then
  return {}
end
local retry_at = (tonumber(fields[2]) or 0) + tonumber(ARGV[2])
if now < retry_at then
  return {'open', string.format('%.6f', retry_at)}
end
return {}
