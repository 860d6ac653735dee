-- A task's result, written as Celery's Redis backend writes it, in one round trip.
--
-- Run on its own by the result backend (workers/result_backend.py), and as a function of
-- attempt.lua, whose 'finish' writes an answer's result in the step that records the answer.
--
-- Celery first GETs the stored result and writes nothing over a SUCCESS (so a lost worker's late
-- answer never replaces the answer its producer may have read), then SETs the result with its
-- expiry and PUBLISHes it to the producer waiting on the key's channel: two round trips. Here the
-- same rule, atomically, and the hop's held usage records pushed onto the ledger's spool with it.
--
-- KEYS[1]  the result's key             ARGV[1]  the encoded result (JSON)
-- KEYS[2]  the ledger's spool (a list)  ARGV[2]  seconds to keep it (0: for ever)
--                                       ARGV[3..] usage records (JSON), pushed in any case
-- Returns 1 when the result was written, 0 when a SUCCESS was kept.
--
-- One result replaces a SUCCESS: the refusal of a request sent under a task id another request
-- holds (error code task_id_reused, aipool/attempt/task_ids.py). The id's answer may not be the
-- producer's who reads it now, so nobody holding the id may read it any more.
if #ARGV > 2 then
  redis.call('LPUSH', KEYS[2], unpack(ARGV, 3))
end
local function reused(value)
  local ok, meta = pcall(cjson.decode, value)
  if not ok or type(meta) ~= 'table' or type(meta['result']) ~= 'table' then
    return false
  end
  local err = meta['result']['error']
  return type(err) == 'table' and err['code'] == 'task_id_reused'
end
local current = redis.call('GET', KEYS[1])
if current and not reused(ARGV[1]) then
  local ok, meta = pcall(cjson.decode, current)
  if ok and type(meta) == 'table' and meta['status'] == 'SUCCESS' then
    return 0
  end
end
local keep = tonumber(ARGV[2])
if keep > 0 then
  redis.call('SET', KEYS[1], ARGV[1], 'EX', keep)
else
  redis.call('SET', KEYS[1], ARGV[1])
end
redis.call('PUBLISH', KEYS[1], ARGV[1])
return 1
