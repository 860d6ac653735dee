-- Admit one call through a provider's breaker, atomically for the whole pool.
--
-- KEYS[1]  state hash: state, gen, failures, opened_at, changed_at, tripped_at (record.lua)
-- KEYS[2]  trial slots: sorted set, slot token -> time the slot was taken
-- ARGV[1]  now (epoch seconds, the caller's clock)
-- ARGV[2]  recovery_timeout (seconds)
-- ARGV[3]  half_open_max_calls
-- ARGV[4]  trial_timeout: a slot older than this belongs to a dead holder and is reclaimed
-- ARGV[5]  token naming the trial slot this call would take
--
-- Returns {admitted (0|1), state, generation, retry_at ('' when admitted), transitioned_from,
--          consecutive failures}.
-- transitioned_from is '' unless this very call moved OPEN -> HALF_OPEN; only one caller in the
-- pool can see it non-empty, so the event is emitted exactly once.
local now = tonumber(ARGV[1])
local recovery = tonumber(ARGV[2])
local max_trials = tonumber(ARGV[3])
local trial_timeout = tonumber(ARGV[4])

local fields = redis.call('HMGET', KEYS[1], 'state', 'gen', 'opened_at', 'failures')
local state = fields[1] or 'closed'
local gen = tonumber(fields[2]) or 0

local failures = tonumber(fields[4]) or 0

if state == 'closed' then
  return {1, state, gen, '', '', failures}
end

local from = ''
if state == 'open' then
  local retry_at = (tonumber(fields[3]) or 0) + recovery
  if now < retry_at then
    return {0, state, gen, string.format('%.6f', retry_at), '', failures}
  end
  gen = gen + 1
  state = 'half_open'
  redis.call('HSET', KEYS[1], 'state', state, 'gen', gen, 'changed_at', ARGV[1])
  redis.call('DEL', KEYS[2])
  from = 'open'
end

-- A holder that died never reports back; its slot must not wedge the breaker half-open forever.
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - trial_timeout)
if redis.call('ZCARD', KEYS[2]) >= max_trials then
  local oldest = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
  return {0, state, gen, string.format('%.6f', tonumber(oldest[2]) + trial_timeout), from, failures}
end
redis.call('ZADD', KEYS[2], now, ARGV[5])
return {1, state, gen, '', from, failures}
