-- The life of one attempt (one call at one hop of one request), atomically for the whole pool.
--
-- Composed with breaker/acquire.lua, breaker/record.lua, breaker/refusing.lua, quota/room.lua,
-- quota/reserve.lua, quota/adjust.lua and store_result.lua, each prepended as a local function of
-- (KEYS, ARGV).
-- aipool/attempt/lifecycle.py draws the table of states and events this script implements and
-- names every argument and reply layout (aipool/attempt/layout.py builds and reads them).
--
-- Every op shares one header:
--   KEYS[1] the attempt's record (hash; the route record for 'advance')
--   KEYS[2] the attempt's kept answer (for 'advance': the first hop's attempt record, which a
--   request sent straight there has without a route record)
--   KEYS[3] live leases (sorted set: record -> lease end)
--   KEYS[4] the ledger's pending records    KEYS[5] the request's route record (when the pool
--   first saw the request, and where routing sent it)    KEYS[6] the month's spend (hash: all,
--   svc:<service>; micro-dollars; the month the call began in, for 'finish')    KEYS[7..11] the
--   hop's own guard keys ('begin', 'finish'), then five guard keys per candidate hop: breaker
--   state, breaker trials, quota window, quota day, quota month; for 'finish', then the
--   producer's result key (Celery's), when the answer's result is written with it
--   ARGV[1] op: 'begin' | 'finish' | 'advance' | 'sweep'
--   ARGV[2] '' (the time is Redis's own TIME) or epoch seconds (a test's clock)
--   ARGV[3] the request id the record belongs to    ARGV[4] how long records are kept (s)
--   ARGV[5] the request's deadline_s ('' for none), counted from when the pool first saw the
--           request: the route record's time, never a producer's clock
--   ARGV[6] the tokens a call may use (the estimate)    ARGV[7] the terminal hop's name
--   ARGV[8] when the message says the pool first saw the request, used only when the route
--           record is gone (a Redis restarted empty), and never later than now; for 'advance',
--           when a lane's stamp says the pool first saw it waiting (aipool/backlog.py)
--   ARGV[9] the money rules, JSON: {svc (the service counted), cap (the pool's cap on paid
--           spend a month), svc_budget (the service's), budget (the pool's monthly budget), save
--           (the fraction of a daily limit or the budget from which this request stays off paid
--           hops)}: amounts in micro-dollars, -1 for none
--   ARGV[10] n, the number of candidate hops after this one    ARGV[11 .. 10 + n] their configs
--   ARGV[11 + n ..] the op's own arguments (below)
-- A hop's config is JSON: {p (provider), skip ('' or a code decided before the script),
--   b: [recovery_timeout, half_open_max_calls, trial_timeout, failure_threshold],
--   lim (1 when the quota counts), q: [rpm, daily_requests, daily_tokens, monthly_tokens] (-1 =
--   unlimited), d: [day label, day start, day end, day counters' expiry], m: [month label,
--   month end, month counters' expiry], c (what a call there may cost, micro-dollars), s
--   ([tokens, requests] the service may use of the day's, -1 for no share; absent: none), sv (1
--   when the money rules' save applies to this hop)}: the periods are those of the caller's
--   estimate of the time; when Redis's time falls outside them, the op changes nothing and
--   answers 'clock'.
-- Every reply starts {kind, now, events}: events is JSON, the breaker transitions this op caused
-- ([[from, to, consecutive failures]]), each seen by exactly one caller in the pool.

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

local n = tonumber(ARGV[10] or '0')
local own_base = 7
local cand_base = 7
if op == 'begin' or op == 'finish' then
  cand_base = 12
end
local args = 11 + n
local money = {}
if op ~= 'sweep' and ARGV[9] and ARGV[9] ~= '' then
  money = cjson.decode(ARGV[9])
end
local SVC = money.svc or 'other'

local function guard_keys(base)
  return {KEYS[base], KEYS[base + 1], KEYS[base + 2], KEYS[base + 3], KEYS[base + 4]}
end

local candidates = {}
for i = 1, n do
  candidates[i] = cjson.decode(ARGV[10 + i])
end

-- Whether Redis's time is inside the periods a config was built for.
local function current(cfg)
  return now >= cfg.d[2] and now < cfg.d[3] and now < cfg.m[2]
end
local function all_current()
  for i = 1, n do
    if not current(candidates[i]) then
      return false
    end
  end
  return true
end

local function ttl(until_at)
  return math.max(1, math.ceil(until_at - now))
end

local function spent(field)
  return tonumber(redis.call('HGET', KEYS[6], field) or '0') or 0
end

-- Why the money rules keep the request off a hop (a list: code, detail), or nil. Reads only.
local function unaffordable(cfg, k)
  local cost = cfg.c or 0
  if cost > 0 then
    if (money.cap or -1) >= 0 and spent('all') + cost > money.cap then
      return {'budget_exhausted', 'cap'}
    end
    if (money.svc_budget or -1) >= 0 and spent('svc:' .. SVC) + cost > money.svc_budget then
      return {'service_budget_exhausted', 'monthly_budget'}
    end
  end
  local share = cfg.s
  if share then
    local used = redis.call('HMGET', k[4], 'svc:' .. SVC .. ':tokens', 'svc:' .. SVC .. ':requests')
    if share[1] >= 0 and (tonumber(used[1]) or 0) + tonumber(ARGV[6]) > share[1] then
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
    redis.call('HINCRBY', KEYS[6], 'all', cost)
    redis.call('HINCRBY', KEYS[6], 'svc:' .. SVC, cost)
    redis.call('EXPIRE', KEYS[6], ttl(spend_until))
  end
  if cfg.s then
    redis.call('HINCRBY', k[4], 'svc:' .. SVC .. ':tokens', tonumber(ARGV[6]))
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
      {NOW, ARGV[6], cfg.q[1], cfg.q[2], cfg.q[3], cfg.q[4], cfg.d[3], cfg.m[2]})
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
    local cfg = candidates[i]
    local why = blocked(cfg, guard_keys(cand_base + 5 * (i - 1)), deadline_at)
    if not why then
      return cfg.p, trail
    end
    local entry = {cfg.p}
    for _, v in ipairs(why) do
      entry[#entry + 1] = v
    end
    trail[#trail + 1] = entry
  end
  return ARGV[7], trail
end

-- When the request's latency budget ends, on Redis's clock, or nil for none.
local function deadline_at_abs()
  if ARGV[5] == '' then
    return nil
  end
  local received = tonumber(redis.call('HGET', KEYS[5], 'received') or '')
  if not received then
    received = math.min(tonumber(ARGV[8]) or now, now)
  end
  return received + tonumber(ARGV[5])
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

-- An ended attempt whose next hop is not chosen yet: choose it now, and keep the choice, so every
-- later delivery of this hop forwards the request to the same place.
local function ended(state, code, detail, nxt, trail)
  if nxt then
    return {'ended', NOW, enc(events), state, code, detail, nxt, trail}
  end
  local nxt_hop, passed = decide(deadline_at_abs())
  local t = enc(passed)
  redis.call('HSET', KEYS[1], 'next', nxt_hop, 'trail', t)
  return {'ended', NOW, enc(events), state, code, detail, nxt_hop, t}
end

if op == 'begin' then
  local owner, member, own_json = ARGV[args], ARGV[args + 1], ARGV[args + 2]
  local bound, grace, abandon_json = tonumber(ARGV[args + 3]), tonumber(ARGV[args + 4]),
    ARGV[args + 5]
  local rec = redis.call('HMGET', KEYS[1], 'state', 'rid', 'lease', 'code', 'detail', 'next',
    'trail', 'owner', 'start', 'limit', 'gen', 'trial')
  local state = rec[1]
  if state then
    -- An earlier delivery got here first: its outcome decides, before any deadline or breaker.
    if rec[2] ~= ARGV[3] then
      return {'foreign', NOW, '[]'}
    end
    if state == 'answered' then
      return {'answered', NOW, '[]', redis.call('GET', KEYS[2]) or ''}
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
      abandon(KEYS[1], KEYS[3], KEYS[4])
      return ended('abandoned', 'abandoned', '[]', rec[6], rec[7])
    end
    if not rec[6] and not all_current() then
      return {'clock', NOW, '[]'}
    end
    return ended(state, rec[4] or '', rec[5] or '[]', rec[6], rec[7])
  end

  local own = cjson.decode(own_json)
  -- A copy at a hop the pool's routing passed over (a message sent straight to its first hop
  -- while a copy the pool routed went further down the chain): the request went on without this
  -- hop, so this copy follows it to where routing sent it and finds its outcome there, never a
  -- call here. Nothing is written: every such copy reads the same route record.
  local route = redis.call('HMGET', KEYS[5], 'rid', 'next', 'trail')
  if route[1] == ARGV[3] and route[2] and route[2] ~= own.p then
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
  local k = guard_keys(own_base)
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
          {NOW, ARGV[6], own.q[1], own.q[2], own.q[3], own.q[4], own.d[3], own.m[2], member,
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
    redis.call('HSET', KEYS[1], 'state', 'skipped', 'rid', ARGV[3], 'code', code, 'detail', d)
    redis.call('EXPIRE', KEYS[1], ARGV[4])
    return ended('skipped', code, d, nil, nil)
  end
  charge(own, k, own.m[3])
  local limit = bound
  if deadline_at then
    limit = math.min(bound, deadline_at - now)
  end
  local lease = now + limit + grace
  redis.call('HSET', KEYS[1], 'state', 'calling', 'rid', ARGV[3], 'owner', owner,
    'lease', fmt(lease), 'start', NOW, 'limit', fmt(limit), 'gen', gen, 'trial', trial,
    'tokens', ARGV[6],
    'lim', own.lim, 'member', member, 'provider', own.p, 'abandon', abandon_json,
    'cost', own.c or 0, 'svc', SVC, 'shared', own.s and 1 or 0)
  redis.call('EXPIRE', KEYS[1], ARGV[4])
  redis.call('ZADD', KEYS[3], lease, KEYS[1])
  return {'call', NOW, enc(events), gen, trial, fmt(limit), fmt(lease)}
end

if op == 'finish' then
  -- ARGV[args + 13 ..], when the result backend is this Redis: the producer's result (Celery's
  -- encoded meta), seconds to keep it, and the hop's held usage records; its key is the last key.
  -- An answer recorded here is the producer's result in the same step (store_result.lua's rules:
  -- never over a SUCCESS; the records pushed in any case), so no second round trip writes it.
  local function write_result()
    local value = ARGV[args + 13]
    if value and value ~= '' then
      store_result({KEYS[cand_base + 5 * n], KEYS[4]}, {value, unpack(ARGV, args + 14)})
    end
  end
  local owner, result, verdict = ARGV[args], ARGV[args + 1], ARGV[args + 2]
  local booked, answer, keep = tonumber(ARGV[args + 3]), ARGV[args + 4], ARGV[args + 5]
  local ledger_json, code, own = ARGV[args + 6], ARGV[args + 7], cjson.decode(ARGV[args + 8])
  local detail = ARGV[args + 9] or '[]'
  local cost = tonumber(ARGV[args + 10] or '0')
  local pause, stop = ARGV[args + 11] or '0', ARGV[args + 12] == '1'
  local f = redis.call('HMGET', KEYS[1], 'state', 'owner', 'tokens', 'lim', 'member', 'gen',
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
    if redis.call('HSETNX', KEYS[1], 'booked:' .. owner, 1) == 0 then
      return {'missing', NOW, '[]'}
    end
    if not state then
      redis.call('EXPIRE', KEYS[1], ARGV[4])
    end
    redis.call('LPUSH', KEYS[4], ledger_json)
    local k = guard_keys(own_base)
    if own.lim == 1 then
      redis.call('HINCRBY', k[4], 'requests', 1)
      redis.call('HINCRBY', k[4], 'tokens', booked)
      redis.call('EXPIRE', k[4], ttl(own.d[4]))
      redis.call('HINCRBY', k[5], 'tokens', booked)
      redis.call('EXPIRE', k[5], ttl(own.m[3]))
    end
    if cost > 0 then
      redis.call('HINCRBY', KEYS[6], 'all', cost)
      redis.call('HINCRBY', KEYS[6], 'svc:' .. SVC, cost)
      redis.call('EXPIRE', KEYS[6], ttl(own.m[3]))
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
  local k = guard_keys(own_base)
  local b = record({k[1], k[2]}, {verdict, NOW, f[6] or '0', f[7] or '', own.b[4], pause})
  if b[3] ~= '' then
    events[#events + 1] = {b[3], b[2], b[4]}
  end
  redis.call('ZREM', KEYS[3], KEYS[1])
  local late = state == 'abandoned'
  -- The month's spend and the service's share of the day follow what the call is charged.
  local function settle_money()
    local by = cost - (tonumber(f[12]) or 0)
    if by ~= 0 and redis.call('EXISTS', KEYS[6]) == 1 then
      redis.call('HINCRBY', KEYS[6], 'all', by)
      redis.call('HINCRBY', KEYS[6], 'svc:' .. (f[13] or 'other'), by)
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
    redis.call('HSET', KEYS[1], 'state', 'answered', 'tokens', booked, 'code', '', 'detail', '[]')
    redis.call('EXPIRE', KEYS[1], ARGV[4])
    if answer ~= '' then
      redis.call('SET', KEYS[2], answer, 'EX', keep)
    end
    redis.call('LPUSH', KEYS[4], ledger_json)
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
  redis.call('HSET', KEYS[1], 'state', 'failed', 'tokens', booked, 'code', code, 'detail', detail)
  redis.call('LPUSH', KEYS[4], ledger_json)
  if stop and not f[8] then
    -- The route ends the chain on this failure (a refusal it will not shop around): the next hop
    -- is the terminal one, kept as any choice is.
    redis.call('HSET', KEYS[1], 'next', ARGV[7], 'trail', '[]')
    return ended('failed', code, detail, ARGV[7], '[]')
  end
  return ended('failed', code, detail, f[8], f[9])
end

if op == 'advance' then
  local f = redis.call('HMGET', KEYS[1], 'rid', 'next', 'trail', 'received')
  if f[1] and f[1] ~= ARGV[3] then
    return {'foreign', NOW, '[]'}
  end
  if f[2] then
    return {'next', NOW, '[]', f[2], f[3], f[4]}
  end
  -- A request sent straight to its first hop (HopRunner.dispatch) has no route record, but may
  -- have that hop's attempt (KEYS[2]): a later copy goes where the first went, whatever the
  -- breakers say now, and finds its outcome there (the answer, the call in hand, or the choice
  -- made after it), never a second call further down the chain.
  if n > 0 then
    local straight = redis.call('HMGET', KEYS[2], 'state', 'rid', 'start')
    if straight[1] and straight[2] == ARGV[3] then
      local received = math.min(tonumber(straight[3]) or now, tonumber(ARGV[8]) or now, now)
      redis.call('HSET', KEYS[1], 'rid', ARGV[3], 'next', candidates[1].p, 'trail', '[]',
        'received', fmt(received))
      redis.call('EXPIRE', KEYS[1], ARGV[4])
      return {'next', NOW, '[]', candidates[1].p, '[]', fmt(received)}
    end
  end
  if not all_current() then
    return {'clock', NOW, '[]'}
  end
  -- The pool routes the request for the first time: its latency budget started when the pool
  -- first saw it waiting (ARGV[8], a lane's stamp on this same clock), or starts now.
  local received = math.min(tonumber(ARGV[8]) or now, now)
  local deadline_at = nil
  if ARGV[5] ~= '' then
    deadline_at = received + tonumber(ARGV[5])
  end
  local first, passed = decide(deadline_at)
  local t = enc(passed)
  redis.call('HSET', KEYS[1], 'rid', ARGV[3], 'next', first, 'trail', t, 'received', fmt(received))
  redis.call('EXPIRE', KEYS[1], ARGV[4])
  return {'next', NOW, '[]', first, t, fmt(received)}
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

return redis.error_reply('unknown attempt op ' .. tostring(op))
