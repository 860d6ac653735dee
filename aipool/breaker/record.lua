-- Record the outcome of a call admitted by acquire.lua, atomically for the whole pool.
--
-- KEYS[1]  state hash (see acquire.lua)
-- KEYS[2]  trial slots
-- ARGV[1]  outcome: 'success' | 'failure' | 'release' (the call proved nothing about the provider)
-- ARGV[2]  now (epoch seconds)
-- ARGV[3]  generation the permit was issued in
-- ARGV[4]  trial slot token, '' for a permit issued while CLOSED
-- ARGV[5]  failure_threshold
-- ARGV[6]  seconds the provider asked to be left alone (a rate limit's declared retry delay,
--          already bounded by the pool's setting); absent or 0 for none. It pauses the provider
--          for the whole pool (``paused_until``, read by refusing.lua), whatever the outcome: a
--          pause is the provider's word, never a failure counted against it.
--
-- Returns {counted (0|1), state_after, transitioned_from, consecutive_failures, tripped_at}.
-- tripped_at is '' unless this call moved the state: then it names the outage the transition
-- belongs to, the time of the CLOSED -> OPEN that began it (kept through half-open trials and
-- reopenings, so an opening, its reopenings and its closing all carry the same one; '' when the
-- state was written before the field existed). Alerts key their episodes by it (aipool.budget).
-- Every transition bumps the generation, so a failure from an earlier episode (a call admitted
-- before the breaker opened, a trial whose round already ended) never moves the state again; a
-- success while CLOSED always resets the count of consecutive failures.
local outcome = ARGV[1]
local fields = redis.call('HMGET', KEYS[1], 'state', 'gen', 'failures')
local state = fields[1] or 'closed'
local gen = tonumber(fields[2]) or 0
local failures = tonumber(fields[3]) or 0

local pause = tonumber(ARGV[6] or '0') or 0
if pause > 0 then
  -- A later, shorter delay never cuts short a pause another call was asked for.
  local until_at = tonumber(ARGV[2]) + pause
  local paused = tonumber(redis.call('HGET', KEYS[1], 'paused_until') or '') or 0
  if until_at > paused then
    redis.call('HSET', KEYS[1], 'paused_until', string.format('%.6f', until_at))
  end
end

if ARGV[4] ~= '' then
  redis.call('ZREM', KEYS[2], ARGV[4])
end
-- ADR-006 counts consecutive failures: any success while CLOSED, whenever it was admitted, shows
-- the provider answering and ends the run of failures.
if state == 'closed' and outcome == 'success' then
  if failures > 0 then
    redis.call('HSET', KEYS[1], 'failures', 0)
  end
  return {1, state, '', 0}
end
if outcome == 'release' or tonumber(ARGV[3]) ~= gen then
  return {0, state, '', failures}
end

if state == 'closed' then
  failures = failures + 1
  if failures >= tonumber(ARGV[5]) then
    redis.call('HSET', KEYS[1], 'state', 'open', 'gen', gen + 1, 'failures', failures,
      'opened_at', ARGV[2], 'changed_at', ARGV[2], 'tripped_at', ARGV[2])
    return {1, 'open', 'closed', failures, ARGV[2]}
  end
  redis.call('HSET', KEYS[1], 'failures', failures)
  return {1, state, '', failures}
end

if state == 'half_open' then
  redis.call('DEL', KEYS[2])
  local tripped = redis.call('HGET', KEYS[1], 'tripped_at') or ''
  if outcome == 'success' then
    redis.call('HSET', KEYS[1], 'state', 'closed', 'gen', gen + 1, 'failures', 0,
      'changed_at', ARGV[2])
    return {1, 'closed', 'half_open', 0, tripped}
  end
  failures = failures + 1
  redis.call('HSET', KEYS[1], 'state', 'open', 'gen', gen + 1, 'failures', failures,
    'opened_at', ARGV[2], 'changed_at', ARGV[2])
  return {1, 'open', 'half_open', failures, tripped}
end

-- OPEN: no permit of the current generation exists, so nothing to count.
return {0, state, '', failures}
