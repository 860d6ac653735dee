-- Keep an answer in the response cache, release the lead if this request held it, and evict the
-- least recently used entries while the cache holds more than its cap.
--   KEYS[1] the entry   KEYS[2] the lead   KEYS[3] the LRU index   KEYS[4] the sizes   KEYS[5] the total
--   KEYS[6] the use counter (the index's order: each keep or read takes the next number)
--   ARGV[1] the entry's name   ARGV[2] the entry   ARGV[3] its TTL (ms)   ARGV[4] the cap (bytes)
--   ARGV[5] the answering request's journey id   ARGV[6] the prefix of entries' keys
--   ARGV[7] the bytes an entry costs beyond its own (the index, the sizes)
-- Returns how many entries were evicted.
local lead = redis.call('GET', KEYS[2])
if lead and string.sub(lead, 1, #ARGV[5] + 1) == ARGV[5] .. '|' then
  redis.call('DEL', KEYS[2])
end
local size = #ARGV[2] + tonumber(ARGV[7])
local before = tonumber(redis.call('HGET', KEYS[4], ARGV[1]) or '0')
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
redis.call('ZADD', KEYS[3], redis.call('INCR', KEYS[6]), ARGV[1])
redis.call('HSET', KEYS[4], ARGV[1], size)
local total = redis.call('INCRBY', KEYS[5], size - before)
local cap = tonumber(ARGV[4])
local evicted = 0
while total > cap do
  local oldest = redis.call('ZRANGE', KEYS[3], 0, 0)
  if #oldest == 0 then
    -- Nothing indexed (a partial flush): the count restarts from what is known.
    redis.call('SET', KEYS[5], 0)
    break
  end
  local name = oldest[1]
  local freed = tonumber(redis.call('HGET', KEYS[4], name) or '0')
  redis.call('ZREM', KEYS[3], name)
  redis.call('HDEL', KEYS[4], name)
  redis.call('DEL', ARGV[6] .. name)
  total = redis.call('DECRBY', KEYS[5], freed)
  evicted = evicted + 1
end
return evicted
