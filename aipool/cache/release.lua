-- Release the lead KEYS[1] if the request ARGV[1] holds it (it ended without an answer to keep):
-- the requests waiting on it look again, and the next leads.
local lead = redis.call('GET', KEYS[1])
if lead and string.sub(lead, 1, #ARGV[1] + 1) == ARGV[1] .. '|' then
  return redis.call('DEL', KEYS[1])
end
return 0
