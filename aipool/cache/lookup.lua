-- The response cache's look-up: the entry, else whether another request is fetching the same
-- answer (it leads; this one waits), else this request leads. One step, so two identical requests
-- never both lead while the entry is missing.
--   KEYS[1] the entry            KEYS[2] the lead              KEYS[3] the LRU index
--   KEYS[4] the use counter (the index's order: each keep or read takes the next number)
--   ARGV[1] the entry's name in the index   ARGV[2] this request's journey id
--   ARGV[3] how long a lead holds (ms)
-- Returns {'hit', entry} | {'wait', ms the lead has held, ms it holds yet} | {'lead'}
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local entry = redis.call('GET', KEYS[1])
if entry then
  -- Recently used: the last to be evicted.
  redis.call('ZADD', KEYS[3], redis.call('INCR', KEYS[4]), ARGV[1])
  return {'hit', entry}
end
local lead = redis.call('GET', KEYS[2])
if lead then
  local since = tonumber(string.match(lead, '|(%d+)$') or now_ms)
  local left = redis.call('PTTL', KEYS[2])
  if string.sub(lead, 1, #ARGV[2] + 1) == ARGV[2] .. '|' then
    -- This request's own lead (a redelivered message): it leads still.
    return {'lead'}
  end
  return {'wait', now_ms - since, left}
end
redis.call('SET', KEYS[2], ARGV[2] .. '|' .. now_ms, 'PX', ARGV[3])
return {'lead'}
