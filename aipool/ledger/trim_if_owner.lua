-- Remove the oldest ARGV[2] records from the pending list KEYS[1] and extend the drain lock
-- KEYS[2] by ARGV[3] ms, but only while that lock still holds this drainer's token ARGV[1].
-- A drainer whose lock expired mid-batch must not trim: the new owner may be reading the same
-- records, and trimming twice would drop records nobody wrote. Returns 1 if trimmed, 0 if the
-- lock was lost (the records stay; the next drain re-inserts them, which the database ignores).
if redis.call('GET', KEYS[2]) ~= ARGV[1] then
  return 0
end
local n = tonumber(ARGV[2])
if n > 0 then
  redis.call('LTRIM', KEYS[1], 0, -(n + 1))
end
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return 1
