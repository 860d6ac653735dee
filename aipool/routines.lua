-- Whether a run of one of beat's routines goes ahead, decided on Redis's clock.
-- KEYS[1]: the routine's hash (sent: the stamp of the latest run that began; ran: when a run
--          last began, Redis time); KEYS[2]: the set of routines seen (for the metrics).
-- ARGV[1]: the routine's name; ARGV[2]: the run's stamp, Redis time when beat sent it ('' for a
--          run sent by hand: it always goes ahead); ARGV[3]: seconds after which a stamped run is
--          stale ('' for never).
-- Returns {1, 'run'}, {0, 'superseded'} (a run sent later already began) or {0, 'stale'}.
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
if ARGV[2] ~= '' then
  local sent = tonumber(ARGV[2])
  local begun = tonumber(redis.call('HGET', KEYS[1], 'sent') or '')
  if begun and sent <= begun then
    return {0, 'superseded'}
  end
  if ARGV[3] ~= '' and now - sent > tonumber(ARGV[3]) then
    return {0, 'stale'}
  end
  redis.call('HSET', KEYS[1], 'sent', ARGV[2])
end
redis.call('HSET', KEYS[1], 'ran', string.format('%.6f', now))
redis.call('SADD', KEYS[2], ARGV[1])
return {1, 'run'}
