-- Admit one call: the provider's breaker, then its quota, in one atomic step and one round trip.
-- (Composed with breaker/acquire.lua and quota/reserve.lua, which are prepended as functions.)
--
-- KEYS[1..2]  the breaker's keys (acquire.lua)      KEYS[3..8]  the quota's keys (reserve.lua)
-- ARGV[1..5]  acquire.lua's arguments
-- ARGV[6]     '1' when the provider has a quota to reserve, '0' when it has none
-- ARGV[7..]   reserve.lua's arguments
--
-- Returns acquire.lua's reply (6 items), followed by reserve.lua's when the breaker admitted the
-- call and there is a quota. When the quota refuses, or the attempt was already made by an
-- earlier delivery, the call will not happen: the trial slot the breaker gave is freed here.
local b = acquire({KEYS[1], KEYS[2]}, {ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]})
if b[1] == 0 or ARGV[6] ~= '1' then
  return b
end

local qargs = {}
for i = 7, #ARGV do
  qargs[#qargs + 1] = ARGV[i]
end
local q = reserve({KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8]}, qargs)
local ended = q[1] == 'existing' and (q[2] == 'settled' or q[2] == 'released')
if (q[1] == 'exceeded' or ended) and b[2] == 'half_open' then
  redis.call('ZREM', KEYS[2], ARGV[5])
end
for i = 1, #q do
  b[#b + 1] = q[i]
end
return b
