-- The life of one attempt (one call at one hop of one request), atomically for the whole pool.
--
-- Composed with breaker/acquire.lua, breaker/record.lua, breaker/refusing.lua, quota/room.lua,
-- quota/reserve.lua, quota/adjust.lua and store_result.lua, each prepended as a local function of
-- (KEYS, ARGV).
-- aipool/attempt/lifecycle.py draws the table of states and events this script implements and
-- names every argument and reply layout (aipool/attempt/layout.py builds and reads them).
--
-- 'advance', 'begin' and 'finish' share one header (#44: what no request changes is not sent; it
-- is read from the stored hop configuration, aipool/attempt/hop_config.py):
--   KEYS[1] the stored hop configuration (hash, aipool:hopcfg:<digest>): 'pool' {keep:
--   [record_keep, answer_keep, lease grace, days' and months' counters kept past their end (s)],
--   keys (the attempts' key prefix, the live leases, the ledger's pending records, the spend's
--   prefix), terminals, money {cap (the pool's cap on paid spend a month), budget (the pool's
--   monthly budget), save (the fraction of a daily limit or the budget from which low-priority
--   requests stay off paid hops), saving (the priorities it applies to)}}; 'svc:<service>'
--   {budget (the service's monthly budget), s ({provider: [tokens, requests] the service may use
--   of the day's, -1 for no share})}; and 'p:<provider>' {b: [recovery_timeout,
--   half_open_max_calls, trial_timeout, failure_threshold], lim (1 when the quota counts), q:
--   [rpm, daily_requests, daily_tokens, monthly_tokens] (-1 = unlimited), k: [breaker state,
--   breaker trials, quota window, and the prefixes of the quota day's and month's keys]};
--   amounts in micro-dollars, -1 for none. When it is missing, the op changes nothing and
--   answers 'config': the caller writes it and asks again.
--   Every other key is built here from it: the attempt's record (<attempt prefix><journey>:
--   <provider>), its kept answer (<record>:answer), the request's route record (<attempt
--   prefix><journey>:route: when the pool first saw the request, and where routing sent it),
--   the live leases (sorted set: record -> lease end), the ledger's pending records, the month's
--   spend (<spend prefix><month>, a hash: all, svc:<service>; micro-dollars; the month the call
--   began in, for 'finish') and each hop's five guard keys. (Redis Cluster is not used: a
--   script replicates as its effects, so keys it was not given are safe on replicas.)
--   ARGV[1] op: 'begin' | 'finish' | 'advance' | 'sweep'
--   ARGV[2] '' (the time is Redis's own TIME) or epoch seconds (a test's clock)
--   ARGV[3] the journey id    ARGV[4] the request id the record belongs to
--   ARGV[5] the chain: its providers in order, space-separated, the terminal hop last
--   ARGV[6] this hop's position on the chain, from 0 (-1 for 'advance'); the candidate hops are
--           the positions after it that are not terminal
--   ARGV[7] the request's deadline_s ('' for none), counted from when the pool first saw the
--           request: the route record's time, never a producer's clock
--   ARGV[8] the tokens a call may use (the estimate)
--   ARGV[9] when the message says the pool first saw the request, used only when the route
--           record is gone (a Redis restarted empty), and never later than now; for 'advance',
--           when a lane's stamp says the pool first saw it waiting (aipool/backlog.py)
--   ARGV[10] the service the request is counted as    ARGV[11] its priority
--   ARGV[12] what a call at each position may cost (micro-dollars, space-separated; '' for none)
--   ARGV[13] hops ruled out before the script: 'position:code', space-separated
--   ARGV[14] the periods of the caller's estimate of the time: 'day-label day-start day-end
--           month-label month-end'; when Redis's time falls outside them, the op changes nothing
--           and answers 'clock'
--   ARGV[15 ..] the op's own arguments (below)
-- Every reply starts {kind, now, events}: events is JSON, the breaker transitions this op caused
-- ([[from, to, consecutive failures]], and when the outage began for record.lua's: its
-- tripped_at), each seen by exactly one caller in the pool.

local op = ARGV[1]
local now
if ARGV[2] ~= '' then
  now = tonumber(ARGV[2])
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) + tonumber(t[2]) / 1000000
end
local function fmt(x)
  return string.format('%.6f', x)
end
local NOW = fmt(now)
local events = {}

local function enc(t)
  if #t == 0 then
    return '[]'
  end
  return cjson.encode(t)
end

-- CALLING whose lease ended -> ABANDONED: the call may have reached the provider, so the
-- estimate stays charged and its ledger row (made when the call began) is booked.
local function abandon(key, leases, ledger)
  local f = redis.call('HMGET', key, 'state', 'abandon', 'lease')
  if f[1] ~= 'calling' or tonumber(f[3]) > now then
    return false
  end
  if f[2] and f[2] ~= '' then
    redis.call('LPUSH', ledger, f[2])
  end
  redis.call('HSET', key, 'state', 'abandoned', 'code', 'abandoned', 'detail', '[]')
  redis.call('ZREM', leases, key)
  return true
end

if op == 'sweep' then
  -- KEYS[1] live leases, KEYS[2] the ledger's pending records; ARGV[3] at most this many
  -- (the header does not apply).
  -- (The records are named by the leases set itself: this op reaches keys it was not given.)
  local expired = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', NOW, 'LIMIT', 0, tonumber(ARGV[3]))
  local count = 0
  for _, key in ipairs(expired) do
    if abandon(key, KEYS[1], KEYS[2]) then
      count = count + 1
    else
      redis.call('ZREM', KEYS[1], key)
    end
  end
  return {'swept', NOW, '[]', count}
end

local chain = {}
for name in string.gmatch(ARGV[5], '%S+') do
  chain[#chain + 1] = name
end
local pos = tonumber(ARGV[6]) + 1
local from = math.max(pos, 1)
local wanted = {'pool', 'svc:' .. ARGV[10]}
for i = from, #chain do
  wanted[#wanted + 1] = 'p:' .. chain[i]
end
local stored = redis.call('HMGET', KEYS[1], unpack(wanted))
if not stored[1] then
  return {'config', NOW, '[]'}
end
-- Each field is decoded only when used (cjson.decode is most of what the script spends on
-- its configuration): the hops after this one only when the request moves on.
local POOL = cjson.decode(stored[1])
local KEEP, NAMES, money = POOL.keep, POOL.keys, POOL.money
local terminal = {}
for _, name in ipairs(POOL.terminals) do
  terminal[name] = true
end
local service = {}
if stored[2] then
  service = cjson.decode(stored[2])
end
local SVC = ARGV[10]
local saving = false
for _, priority in ipairs(money.saving) do
  if priority == ARGV[11] then
    saving = true
  end
end
local costs = {}
for cost in string.gmatch(ARGV[12], '%S+') do
  costs[#costs + 1] = tonumber(cost)
end
local skips = {}
for at, code in string.gmatch(ARGV[13], '(%d+):(%S+)') do
  skips[tonumber(at) + 1] = code
end

-- The day and month an argument names: {label, start, end, counters' expiry} and {label, end,
-- counters' expiry}.
local function periods(arg)
  local p = {}
  for v in string.gmatch(arg, '%S+') do
    p[#p + 1] = v
  end
  local day_end, month_end = tonumber(p[3]), tonumber(p[5])
  return {p[1], tonumber(p[2]), day_end, day_end + KEEP[4]}, {p[4], month_end, month_end + KEEP[5]}
end
local DAY, MONTH = periods(ARGV[14])

-- The config of the hop at chain position i for the given periods: the stored provider's, with
-- the request's part (skip: a code decided before the script; c: what a call there may cost;
-- s: the service's share of its day; sv: 1 when the money rules' save applies), the periods
-- (d, m) and its five guard keys (k): breaker state, breaker trials, quota window, quota day,
-- quota month.
local function hop(i, day, month)
  local raw = stored[2 + i - from + 1]
  if not raw then
    error('attempt.lua: no stored config for provider ' .. tostring(chain[i]))
  end
  local cfg = cjson.decode(raw)
  cfg.p = chain[i]
  cfg.skip = skips[i] or ''
  cfg.d, cfg.m = day, month
  cfg.c = costs[i] or 0
  if service.s then
    cfg.s = service.s[chain[i]]
  end
  cfg.sv = (cfg.c > 0 and saving) and 1 or 0
  cfg.k = {cfg.k[1], cfg.k[2], cfg.k[3], cfg.k[4] .. day[1], cfg.k[5] .. month[1]}
  return cfg
end

-- The candidate hops' chain positions, and their configs (for the current periods) on demand.
local after = {}
for i = pos + 1, #chain do
  if not terminal[chain[i]] then
    after[#after + 1] = i
  end
end
local n = #after
local decoded = {}
local function candidate(j)
  if not decoded[j] then
    decoded[j] = hop(after[j], DAY, MONTH)
  end
  return decoded[j]
end
local TERMINAL = chain[#chain]
local JOURNEY, RID = ARGV[3], ARGV[4]
local DEADLINE_S, TOKENS, RECEIVED = ARGV[7], ARGV[8], ARGV[9]
local RECORD_KEEP, ANSWER_KEEP, GRACE = KEEP[1], KEEP[2], KEEP[3]
local ROUTE = NAMES.attempt .. JOURNEY .. ':route'
local LEASES, PENDING = NAMES.leases, NAMES.pending
local REC, ANSWER = nil, nil
if pos >= 1 then
  REC = NAMES.attempt .. JOURNEY .. ':' .. chain[pos]
  ANSWER = REC .. ':answer'
end
-- The month's spend (for 'finish', of the month its call began in: set there).
local SPEND = NAMES.spend .. MONTH[1]

-- Whether Redis's time is inside the periods a config was built for.
local function current(cfg)
  return now >= cfg.d[2] and now < cfg.d[3] and now < cfg.m[2]
end
-- (Every candidate is built for the same periods, DAY and MONTH.)
local function all_current()
  return n == 0 or current({d = DAY, m = MONTH})
end

local function ttl(until_at)
  return math.max(1, math.ceil(until_at - now))
end

local function spent(field)
  return tonumber(redis.call('HGET', SPEND, field) or '0') or 0
end

-- Why the money rules keep the request off a hop (a list: code, detail), or nil. Reads only.
local function unaffordable(cfg, k)
  local cost = cfg.c or 0
  if cost > 0 then
    if (money.cap or -1) >= 0 and spent('all') + cost > money.cap then
      return {'budget_exhausted', 'cap'}
    end
    local svc_budget = service.budget or -1
    if svc_budget >= 0 and spent('svc:' .. SVC) + cost > svc_budget then
      return {'service_budget_exhausted', 'monthly_budget'}
    end
  end
  local share = cfg.s
  if share then
    local used = redis.call('HMGET', k[4], 'svc:' .. SVC .. ':tokens', 'svc:' .. SVC .. ':requests')
    if share[1] >= 0 and (tonumber(used[1]) or 0) + tonumber(TOKENS) > share[1] then
      return {'service_budget_exhausted', 'daily_tokens'}
    end
    if share[2] >= 0 and (tonumber(used[2]) or 0) + 1 > share[2] then
      return {'service_budget_exhausted', 'daily_requests'}
    end
  end
  if cfg.sv == 1 and (money.save or -1) > 0 then
    if cfg.q[3] >= 0 then
      local tokens = tonumber(redis.call('HGET', k[4], 'tokens') or '0') or 0
      if tokens >= money.save * cfg.q[3] then
        return {'budget_saving', 'daily_tokens'}
      end
    end
    if (money.budget or -1) > 0 and spent('all') >= money.save * money.budget then
      return {'budget_saving', 'monthly_budget'}
    end
  end
  return nil
end

-- Charge an admitted call to the month's spend and to its service's share of the day.
local function charge(cfg, k, spend_until)
  local cost = cfg.c or 0
  if cost > 0 then
    redis.call('HINCRBY', SPEND, 'all', cost)
    redis.call('HINCRBY', SPEND, 'svc:' .. SVC, cost)
    redis.call('EXPIRE', SPEND, ttl(spend_until))
  end
  if cfg.s then
    redis.call('HINCRBY', k[4], 'svc:' .. SVC .. ':tokens', tonumber(TOKENS))
    redis.call('HINCRBY', k[4], 'svc:' .. SVC .. ':requests', 1)
  end
end

-- Why a hop cannot take the call now (a list: code, details...), or nil. Reads only.
local function blocked(cfg, k, deadline_at)
  if cfg.skip ~= '' then
    return {cfg.skip}
  end
  if deadline_at and now >= deadline_at then
    return {'deadline', fmt(deadline_at)}
  end
  local open = refusing({k[1]}, {NOW, cfg.b[1]})
  if open[1] == 'paused' then
    return {'rate_limited', open[2]}
  end
  if open[1] == 'open' then
    return {'circuit_open', open[2]}
  end
  if cfg.lim == 1 then
    local r = room({k[3], k[4], k[5]},
      {NOW, TOKENS, cfg.q[1], cfg.q[2], cfg.q[3], cfg.q[4], cfg.d[3], cfg.m[2]})
    if r[1] == 'exceeded' then
      return {'quota_exceeded', r[2], r[3], r[4], r[5]}
    end
  end
  return unaffordable(cfg, k)
end

-- The first candidate that can take the call now (its provider, or the terminal's name), and the
-- trail of those passed over: [[provider, code, details...]]. Hops are named by provider (a chain
-- holds each once), so workers whose route tables order a chain differently still agree.
local function decide(deadline_at)
  local trail = {}
  for i = 1, n do
    local cfg = candidate(i)
    local why = blocked(cfg, cfg.k, deadline_at)
    if not why then
      return cfg.p, trail
    end
    local entry = {cfg.p}
    for _, v in ipairs(why) do
      entry[#entry + 1] = v
    end
    trail[#trail + 1] = entry
  end
  return TERMINAL, trail
end

-- When the request's latency budget ends, on Redis's clock, or nil for none.
local function deadline_at_abs()
  if DEADLINE_S == '' then
    return nil
  end
  local received = tonumber(redis.call('HGET', ROUTE, 'received') or '')
  if not received then
    received = math.min(tonumber(RECEIVED) or now, now)
  end
  return received + tonumber(DEADLINE_S)
end

-- An ended attempt whose next hop is not chosen yet: choose it now, and keep the choice, so every
-- later delivery of this hop forwards the request to the same place.
local function ended(state, code, detail, nxt, trail)
  if nxt then
    return {'ended', NOW, enc(events), state, code, detail, nxt, trail}
  end
  local nxt_hop, passed = decide(deadline_at_abs())
  local t = enc(passed)
  redis.call('HSET', REC, 'next', nxt_hop, 'trail', t)
  return {'ended', NOW, enc(events), state, code, detail, nxt_hop, t}
end

if op == 'begin' then
  -- ARGV[15] the delivery's owner name    ARGV[16] the call's bound (s)    ARGV[17] the ledger
  -- row booked if the call is abandoned (its estimate)
  local owner, bound, abandon_json = ARGV[15], tonumber(ARGV[16]), ARGV[17]
  local member, grace = JOURNEY .. ':' .. chain[pos], GRACE
  local rec = redis.call('HMGET', REC, 'state', 'rid', 'lease', 'code', 'detail', 'next',
    'trail', 'owner', 'start', 'limit', 'gen', 'trial')
  local state = rec[1]
  if state then
    -- An earlier delivery got here first: its outcome decides, before any deadline or breaker.
    if rec[2] ~= RID then
      return {'foreign', NOW, '[]'}
    end
    if state == 'answered' then
      return {'answered', NOW, '[]', redis.call('GET', ANSWER) or ''}
    end
    if state == 'calling' then
      if rec[8] == owner and tonumber(rec[3]) > now then
        -- This delivery's own begin, asked again (its reply was lost after the script ran): the
        -- same call, charged once, with what is left of its bound. Its time is when it began:
        -- the day and month it is charged to.
        local left = math.max(0, tonumber(rec[9]) + tonumber(rec[10] or '0') - now)
        return {'call', rec[9], '[]', rec[11], rec[12] or '', fmt(left), rec[3]}
      end
      if tonumber(rec[3]) > now then
        return {'busy', NOW, '[]', rec[3]}
      end
      if not rec[6] and not all_current() then
        return {'clock', NOW, '[]'}
      end
      abandon(REC, LEASES, PENDING)
      return ended('abandoned', 'abandoned', '[]', rec[6], rec[7])
    end
    if not rec[6] and not all_current() then
      return {'clock', NOW, '[]'}
    end
    return ended(state, rec[4] or '', rec[5] or '[]', rec[6], rec[7])
  end

  local own = hop(pos, DAY, MONTH)
  -- A copy at a hop the pool's routing passed over (a message sent straight to its first hop
  -- while a copy the pool routed went further down the chain): the request went on without this
  -- hop, so this copy follows it to where routing sent it and finds its outcome there, never a
  -- call here. Nothing is written: every such copy reads the same route record.
  local route = redis.call('HMGET', ROUTE, 'rid', 'next', 'trail')
  if route[1] == RID and route[2] and route[2] ~= own.p then
    local ok, passed = pcall(cjson.decode, route[3] or '[]')
    if ok and type(passed) == 'table' then
      for _, entry in ipairs(passed) do
        if entry[1] == own.p then
          local why = {}
          for i = 3, #entry do
            why[#why + 1] = entry[i]
          end
          return {'ended', NOW, '[]', 'skipped', entry[2], enc(why), route[2], route[3]}
        end
      end
    end
  end
  if not current(own) or not all_current() then
    return {'clock', NOW, '[]'}
  end
  local k = own.k
  local deadline_at = deadline_at_abs()
  local code, detail = nil, {}
  local gen, trial = 0, ''
  -- A provider paused by its own rate limit is not called, and its breaker is not asked.
  local held = refusing({k[1]}, {NOW, own.b[1]})
  if own.skip ~= '' then
    code = own.skip
  elseif deadline_at and now >= deadline_at then
    code, detail = 'deadline', {fmt(deadline_at)}
  elseif held[1] == 'paused' then
    code, detail = 'rate_limited', {held[2]}
  else
    local a = acquire({k[1], k[2]}, {NOW, own.b[1], own.b[2], own.b[3], owner})
    if a[5] ~= '' then
      events[#events + 1] = {a[5], a[2], a[6]}
    end
    if a[1] == 0 then
      code, detail = 'circuit_open', {a[4], a[2]}
    else
      gen = a[3]
      if a[2] == 'half_open' then
        trial = owner
      end
      local why = unaffordable(own, k)
      if why then
        code, detail = why[1], {why[2]}
      elseif own.lim == 1 then
        local r = reserve({k[3], k[4], k[5]},
          {NOW, TOKENS, own.q[1], own.q[2], own.q[3], own.q[4], own.d[3], own.m[2], member,
           ttl(own.d[4]), ttl(own.m[3])})
        if r[1] ~= 'reserved' then
          code, detail = 'quota_exceeded', {r[2], r[3], r[4], r[5]}
        end
      end
      -- No call will happen: the trial slot goes back untouched.
      if code and trial ~= '' then
        redis.call('ZREM', k[2], trial)
      end
    end
  end
  if code then
    local d = enc(detail)
    redis.call('HSET', REC, 'state', 'skipped', 'rid', RID, 'code', code, 'detail', d)
    redis.call('EXPIRE', REC, RECORD_KEEP)
    return ended('skipped', code, d, nil, nil)
  end
  charge(own, k, own.m[3])
  local limit = bound
  if deadline_at then
    limit = math.min(bound, deadline_at - now)
  end
  local lease = now + limit + grace
  redis.call('HSET', REC, 'state', 'calling', 'rid', RID, 'owner', owner,
    'lease', fmt(lease), 'start', NOW, 'limit', fmt(limit), 'gen', gen, 'trial', trial,
    'tokens', TOKENS,
    'lim', own.lim, 'member', member, 'provider', own.p, 'abandon', abandon_json,
    'cost', own.c or 0, 'svc', SVC, 'shared', own.s and 1 or 0)
  redis.call('EXPIRE', REC, RECORD_KEEP)
  redis.call('ZADD', LEASES, lease, REC)
  return {'call', NOW, enc(events), gen, trial, fmt(limit), fmt(lease)}
end

if op == 'finish' then
  -- ARGV[15] the owner    ARGV[16] 'answered' | 'failed'    ARGV[17] the breaker's verdict
  -- ARGV[18] the tokens booked    ARGV[19] the answer to keep ('' for none)    ARGV[20] the
  -- call's ledger row    ARGV[21] its code    ARGV[22] its detail (JSON)    ARGV[23] what it
  -- cost (micro-dollars)    ARGV[24] how long the provider asked to be left alone (s)
  -- ARGV[25] '1' when the failure ends the chain    ARGV[26] the periods the call began in
  -- ('' for ARGV[14]'s): the day and month it is charged to
  -- ARGV[27 ..], when the result backend is this Redis: the producer's result (its key, Celery's
  -- encoded meta, seconds to keep it, and the hop's held usage records).
  -- An answer recorded here is the producer's result in the same step (store_result.lua's rules:
  -- never over a SUCCESS; the records pushed in any case), so no second round trip writes it.
  local function write_result()
    local value = ARGV[28]
    if value and value ~= '' then
      store_result({ARGV[27], PENDING}, {value, unpack(ARGV, 29)})
    end
  end
  local owner, result, verdict = ARGV[15], ARGV[16], ARGV[17]
  local booked, answer, keep = tonumber(ARGV[18]), ARGV[19], ANSWER_KEEP
  local ledger_json, code = ARGV[20], ARGV[21]
  local detail = ARGV[22] or '[]'
  local cost = tonumber(ARGV[23] or '0')
  local pause, stop = ARGV[24] or '0', ARGV[25] == '1'
  local own_day, own_month = DAY, MONTH
  if ARGV[26] and ARGV[26] ~= '' then
    own_day, own_month = periods(ARGV[26])
    SPEND = NAMES.spend .. own_month[1]
  end
  local own = hop(pos, own_day, own_month)
  local f = redis.call('HMGET', REC, 'state', 'owner', 'tokens', 'lim', 'member', 'gen',
    'trial', 'next', 'trail', 'code', 'detail', 'cost', 'svc', 'shared')
  local state = f[1]
  if not state or f[2] ~= owner then
    -- Redis lost this call's record (a restart without persistence), and another delivery may
    -- have begun a call of its own since: this call still happened, so it is booked whoever owns
    -- the record now (its own row: the ledger keeps one per call), and charged again where the
    -- restart lost its reservation. The other delivery's record is left alone but for a mark
    -- that this call is booked, so a finish retried after its reply was lost books nothing twice.
    -- Whatever that record's state: the other call may have ended already, or the new delivery
    -- skipped (a record of this attempt is only ever owned by one delivery: a later owner
    -- means the record was lost; #42's model test found the late call unbooked when the other
    -- call had answered first).
    if redis.call('HSETNX', REC, 'booked:' .. owner, 1) == 0 then
      return {'missing', NOW, '[]'}
    end
    if not state then
      redis.call('EXPIRE', REC, RECORD_KEEP)
    end
    redis.call('LPUSH', PENDING, ledger_json)
    local k = own.k
    if own.lim == 1 then
      redis.call('HINCRBY', k[4], 'requests', 1)
      redis.call('HINCRBY', k[4], 'tokens', booked)
      redis.call('EXPIRE', k[4], ttl(own.d[4]))
      redis.call('HINCRBY', k[5], 'tokens', booked)
      redis.call('EXPIRE', k[5], ttl(own.m[3]))
    end
    if cost > 0 then
      redis.call('HINCRBY', SPEND, 'all', cost)
      redis.call('HINCRBY', SPEND, 'svc:' .. SVC, cost)
      redis.call('EXPIRE', SPEND, ttl(own.m[3]))
    end
    -- The answer is still this delivery's to give (a failed call carries no result).
    write_result()
    return {'missing', NOW, '[]'}
  end
  if state ~= 'calling' and state ~= 'abandoned' then
    -- A finish retried after its first try was applied: nothing changes twice.
    return {'done', NOW, '[]', state, f[10] or '', f[11] or '[]', f[8] or '', f[9] or '[]'}
  end
  if result ~= 'answered' and not f[8] and not all_current() then
    return {'clock', NOW, '[]'}
  end
  local k = own.k
  local b = record({k[1], k[2]}, {verdict, NOW, f[6] or '0', f[7] or '', own.b[4], pause})
  if b[3] ~= '' then
    events[#events + 1] = {b[3], b[2], b[4], b[5]}
  end
  redis.call('ZREM', LEASES, REC)
  local late = state == 'abandoned'
  -- The month's spend and the service's share of the day follow what the call is charged.
  local function settle_money()
    local by = cost - (tonumber(f[12]) or 0)
    if by ~= 0 and redis.call('EXISTS', SPEND) == 1 then
      redis.call('HINCRBY', SPEND, 'all', by)
      redis.call('HINCRBY', SPEND, 'svc:' .. (f[13] or 'other'), by)
    end
    if f[14] == '1' and redis.call('EXISTS', k[4]) == 1 then
      local field = 'svc:' .. (f[13] or 'other') .. ':tokens'
      redis.call('HINCRBY', k[4], field, booked - tonumber(f[3]))
    end
  end
  if result == 'answered' then
    settle_money()
    -- Late or not, the answer is kept and charged at its real usage (an abandoned call was
    -- charged its estimate): the ledger's row of the answer replaces the estimated one.
    if f[4] == '1' then
      adjust({k[4], k[5], k[3]}, {booked - tonumber(f[3]), '0', f[5]})
    end
    redis.call('HSET', REC, 'state', 'answered', 'tokens', booked, 'code', '', 'detail', '[]')
    redis.call('EXPIRE', REC, RECORD_KEEP)
    if answer ~= '' then
      redis.call('SET', ANSWER, answer, 'EX', keep)
    end
    redis.call('LPUSH', PENDING, ledger_json)
    write_result()
    return {'answered', NOW, enc(events)}
  end
  if late then
    -- The abandonment booked the estimate and its ledger row already.
    return ended('abandoned', 'abandoned', '[]', f[8], f[9])
  end
  if f[4] == '1' then
    adjust({k[4], k[5], k[3]}, {booked - tonumber(f[3]), '0', f[5]})
  end
  settle_money()
  redis.call('HSET', REC, 'state', 'failed', 'tokens', booked, 'code', code, 'detail', detail)
  redis.call('LPUSH', PENDING, ledger_json)
  if stop and not f[8] then
    -- The route ends the chain on this failure (a refusal it will not shop around): the next hop
    -- is the terminal one, kept as any choice is.
    redis.call('HSET', REC, 'next', TERMINAL, 'trail', '[]')
    return ended('failed', code, detail, TERMINAL, '[]')
  end
  return ended('failed', code, detail, f[8], f[9])
end

if op == 'advance' then
  -- A request sent straight to its first hop has that hop's attempt record.
  local STRAIGHT = NAMES.attempt .. JOURNEY .. ':' .. chain[1]
  local f = redis.call('HMGET', ROUTE, 'rid', 'next', 'trail', 'received')
  if f[1] and f[1] ~= RID then
    return {'foreign', NOW, '[]'}
  end
  if f[2] then
    return {'next', NOW, '[]', f[2], f[3], f[4]}
  end
  -- A request sent straight to its first hop (HopRunner.dispatch) has no route record, but may
  -- have that hop's attempt (STRAIGHT): a later copy goes where the first went, whatever the
  -- breakers say now, and finds its outcome there (the answer, the call in hand, or the choice
  -- made after it), never a second call further down the chain.
  if n > 0 then
    local straight = redis.call('HMGET', STRAIGHT, 'state', 'rid', 'start')
    if straight[1] and straight[2] == RID then
      local received = math.min(tonumber(straight[3]) or now, tonumber(RECEIVED) or now, now)
      redis.call('HSET', ROUTE, 'rid', RID, 'next', chain[after[1]], 'trail', '[]',
        'received', fmt(received))
      redis.call('EXPIRE', ROUTE, RECORD_KEEP)
      return {'next', NOW, '[]', chain[after[1]], '[]', fmt(received)}
    end
  end
  if not all_current() then
    return {'clock', NOW, '[]'}
  end
  -- The pool routes the request for the first time: its latency budget started when the pool
  -- first saw it waiting (RECEIVED, a lane's stamp on this same clock), or starts now.
  local received = math.min(tonumber(RECEIVED) or now, now)
  local deadline_at = nil
  if DEADLINE_S ~= '' then
    deadline_at = received + tonumber(DEADLINE_S)
  end
  local first, passed = decide(deadline_at)
  local t = enc(passed)
  redis.call('HSET', ROUTE, 'rid', RID, 'next', first, 'trail', t, 'received', fmt(received))
  redis.call('EXPIRE', ROUTE, RECORD_KEEP)
  return {'next', NOW, '[]', first, t, fmt(received)}
end

return redis.error_reply('unknown attempt op ' .. tostring(op))
