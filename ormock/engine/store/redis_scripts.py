"""The Lua scripts of the Redis store backend (``redis_backend``): each store call is one script,
so one round trip, and atomic for every process and machine on the same Redis.

The keys of one namespace and kind, under ``BASE`` (``ormock:{ns:NAME}:``; the braces are a
hash tag, so a namespace's keys share one cluster slot):

- ``BASE v:KIND:KEY``: the value (a string; with a ttl it also carries a Redis expiry, so that
  Redis frees it even if nobody touches the namespace again; a log is a stream, below);
- ``BASE o:KIND``: a sorted set, each key scored by its write number (the write order);
- ``BASE x:KIND``: a sorted set, each key with a ttl scored by when it expires (seconds, on the
  backend's clock: a key is gone from the moment they have passed, whatever Redis's clock);
- ``BASE s:KIND``: a hash, the value size of each key with a ttl (Redis may free its value
  before a write forgets it) and of each log (a stream); any other key's is its ``STRLEN``;
- ``BASE n:KIND``: a hash, ``seq`` (the last write number), ``count`` (the keys in the write
  order), ``bytes`` (the sizes' sum) and ``soon`` (at the latest, when the first key of the
  expiry index expires; absent while it is empty): a write sweeps expired keys only once
  ``now`` has passed ``soon``;
- ``BASE kinds``: the set of kinds written (what ``clear`` drops).

Every script's ARGV starts with BASE, KIND and the time now; reads never write. A write reads
its kind's ``n:`` hash once (``state``), works on it in Lua, and writes back what changed once
(``save``). What a script costs Redis is mostly not its commands but what it does around them
(its arguments copied into Lua, where every byte of each string is hashed; its helpers made
anew each call; each ``redis.call``'s arguments and answer converted, a number formatted with
%.17g): so commands, strings and numbers are all kept few (``bench/redis_scripts.py``).
The helpers of the writes (``_WRITES``) each take the kind they work on, so that one script
(``PUT_MANY``) writes to several.
"""

from __future__ import annotations

__all__ = ["CLEAR", "COMPARE_AND_SET", "DELETE", "GET", "INCR", "LIST", "PUT", "PUT_MANY"]

SWEEP = 100  # expired keys a write forgets at most (``expire``)
BATCH = 256  # keys past the caps a write drops at most in one go (``trim``)

_COMMON = """
local base, now = ARGV[1], ARGV[3] + 0
local call, int = redis.call, string.format
-- the keys of one kind: its values' prefix (v), write order (o), sums (n); its expiry (x) and
-- sizes (s) made only where they are used (``xk``, ``sk``: a guard's kind, a kind without a
-- ttl never needs them): making a string is a large part of a script's cost, Redis's Lua
-- hashing every byte of each
local function kind_of(name)
  return {name = name, v = base .. 'v:' .. name .. ':', o = base .. 'o:' .. name,
          n = base .. 'n:' .. name, log = name == 'log'}
end
local function xk(k)
  local made = k.x
  if not made then made = base .. 'x:' .. k.name; k.x = made end
  return made
end
local function sk(k)
  local made = k.s
  if not made then made = base .. 's:' .. k.name; k.s = made end
  return made
end
local K = kind_of(ARGV[2])  -- the kind the call names
local function vkey(key) return K.v .. key end
-- the value of the kind k's key, or false when absent or expired (on the backend's clock)
local function live_in(k, key)
  local value = call('GET', k.v .. key)
  if not value then return false end
  local at = call('ZSCORE', xk(k), key)
  if at and at + 0 <= now then return false end
  return value
end
local function live(key) return live_in(K, key) end
-- whether the kind k's ``key`` is as a compare-and-set expects: holding ``expected``
-- (``must_hold``), or else absent or expired
local function holds_in(k, key, must_hold, expected)
  local current = live_in(k, key)
  if must_hold then return current == expected end
  return not current
end
local function holds(key, must_hold, expected) return holds_in(K, key, must_hold, expected) end
"""

# the helpers of every write, each on the kind ``k`` it is given (``kind_of``, then ``state``)
_WRITES = _COMMON + """
local max_keys, max_bytes = (ARGV[7] or 0) + 0, (ARGV[8] or 0) + 0  -- (none for DELETE)
local slack = math.min(math.floor(max_keys / 16), BATCH)
-- the kind's sums (its n: hash) into k: one HMGET; ``save`` writes back what changed (a number
-- Redis is given is formatted with %.17g, a cost of its own: at the caps only the write
-- number and the bytes change)
local function state(k)
  local got = call('HMGET', k.n, 'seq', 'count', 'bytes', 'soon')
  k.seq, k.count, k.bytes = (got[1] or 0) + 0, (got[2] or 0) + 0, (got[3] or 0) + 0
  local soon = got[4]  -- false: the expiry index is empty
  k.soon = soon and soon + 0
  k.had, k.counted, k.sized, k.numbered = k.soon, k.count, k.bytes, k.seq
  return k
end
local function save(k)
  if k.seq == k.numbered and k.count == k.counted and k.bytes == k.sized
      and k.soon == k.had then
    return  -- nothing changed (a delete of nothing: no sums made for a kind never written)
  end
  local put = {'seq', k.seq_text or int('%d', k.seq)}
  if k.count ~= k.counted then put[#put + 1] = 'count'; put[#put + 1] = int('%d', k.count) end
  if k.bytes ~= k.sized then put[#put + 1] = 'bytes'; put[#put + 1] = int('%d', k.bytes) end
  if k.soon and k.soon ~= k.had then
    put[#put + 1] = 'soon'
    put[#put + 1] = k.soon_text or k.soon
  end
  call('HSET', k.n, unpack(put))
  if k.had and not k.soon then call('HDEL', k.n, 'soon') end
end
-- the size a key held (its value's key: vk), its expiry and its size entry forgotten (the
-- value itself stays)
local function unsized(k, key, vk)
  local timed = k.soon and call('ZREM', xk(k), key) == 1
  if timed or k.log then
    local size = call('HGET', sk(k), key)
    if size then call('HDEL', sk(k), key) end
    return size and size + 0 or 0
  end
  return call('STRLEN', vk)
end
-- forget keys whose write order is already gone (ZPOPMIN, ZREMRANGEBYRANK, ZREM), in one
-- command per structure: their expiries, their sizes, their values (a key without a size
-- entry has its value's STRLEN)
local function forget(k, keys)
  local n = #keys
  if n == 0 then return end
  local vkeys, v = {}, k.v
  for i = 1, n do vkeys[i] = v .. keys[i] end
  local freed = 0
  if k.soon or k.log then  -- no expiry index: no key with a ttl, so sizes of the logs only
    if k.soon then call('ZREM', xk(k), unpack(keys)) end
    local sizes, sized = call('HMGET', sk(k), unpack(keys)), false
    for i = 1, n do
      local size = sizes[i]
      if size then freed, sized = freed + size, true
      else freed = freed + call('STRLEN', vkeys[i]) end
    end
    if sized then call('HDEL', sk(k), unpack(keys)) end
  else
    for i = 1, n do freed = freed + call('STRLEN', vkeys[i]) end
  end
  k.count, k.bytes = k.count - n, k.bytes - freed
  call('DEL', unpack(vkeys))
end
-- every key is in the write order (o), so a key not there has nothing else to forget
local function remove(k, key)
  if call('ZREM', k.o, key) == 1 then forget(k, {key}) end
end
-- once ``now`` has passed ``soon``: at most SWEEP keys whose time has passed, per write (the
-- work of a call stays bounded whatever expired at once; the rest go with the next writes,
-- reads never see them), then ``soon`` from what is left
local function expire(k)
  if not k.soon or k.soon > now then return end
  for _, key in ipairs(call('ZRANGEBYSCORE', xk(k), '-inf', ARGV[3], 'LIMIT', 0, SWEEP)) do
    remove(k, key)
  end
  local first = call('ZRANGE', xk(k), 0, 0, 'WITHSCORES')[2]
  k.soon, k.soon_text = first and first + 0, first
end
-- the next write number for key, made the newest of the write order: whether it is new (ZADD
-- answers 0 for a key there already); the first write of a kind (since a clear) makes it
-- known to CLEAR
local function order(k, key)
  k.seq = k.seq + 1
  k.seq_text = int('%d', k.seq)
  if k.seq == 1 then call('SADD', base .. 'kinds', k.name) end
  if call('ZADD', k.o, k.seq_text, key) == 1 then
    k.count = k.count + 1
    return true
  end
  return false
end
-- a key's expiry (``at``) in the index, and ``soon`` moved to it if it is the first
local function expires(k, key, at)
  call('ZADD', xk(k), at, key)
  local when = at + 0
  if not k.soon or when < k.soon then k.soon, k.soon_text = when, at end
end
-- forget the n oldest keys of the write order: one ZPOPMIN for one key, ZRANGE and
-- ZREMRANGEBYRANK for more (ZPOPMIN's answer has each score made text)
local function drop_oldest(k, n)
  local keys
  if n == 1 then
    keys = call('ZPOPMIN', k.o)
    keys[2] = nil
  else
    keys = call('ZRANGE', k.o, 0, n - 1)
    call('ZREMRANGEBYRANK', k.o, 0, n - 1)
  end
  forget(k, keys)
end
-- past a cap, the oldest go (the newest always stays), in a batch: past the keys' cap down to
-- max_keys / 16 fewer (at most BATCH: one batch's commands serve that many writes), past the
-- bytes' until max_bytes / 16 is free again
local function trim(k)
  if k.count <= max_keys and k.bytes <= max_bytes then return end
  local keep_keys = k.count > max_keys and max_keys - slack or k.count
  local keep_bytes = k.bytes > max_bytes and max_bytes - math.floor(max_bytes / 16) or k.bytes
  while k.count > 1 and (k.count > keep_keys or k.bytes > keep_bytes) do
    drop_oldest(k, math.max(1, math.min(k.count - keep_keys, k.count - 1)))
  end
end
-- write key = value in the kind k (``state``): ttl in milliseconds ('' for none), at = when it
-- expires (on the backend's clock)
local function write_in(k, key, value, ttl, at)
  local vk = k.v .. key
  if not order(k, key) then k.bytes = k.bytes - unsized(k, key, vk) end
  k.bytes = k.bytes + #value
  if ttl ~= '' then
    call('SET', vk, value, 'PX', ttl)
    expires(k, key, at)
    call('HSET', sk(k), key, int('%d', #value))
  else
    call('SET', vk, value)
    if k.log then call('HSET', sk(k), key, int('%d', #value)) end
  end
  trim(k)
end
-- the call's own write: ARGV[4] = key, ARGV[5] = value (or the one given), ARGV[6] = the ttl
-- in milliseconds ('' for none), ARGV[7..8] = the caps (keys, bytes), ARGV[9] = when it
-- expires
local function write(value)
  write_in(K, ARGV[4], value or ARGV[5], ARGV[6], ARGV[9])
end
""".replace("SWEEP", str(SWEEP)).replace("BATCH", str(BATCH))

# ARGV[4] = key
GET = _COMMON + "return live(ARGV[4])\n"

# ARGV[4..9] as for write()
PUT = _WRITES + """
expire(state(K))
write()
save(K)
return 1
"""

# ARGV[4..9] as for write(); ARGV[10] = '1' with an expected value in ARGV[11], '0' for none
COMPARE_AND_SET = _WRITES + """
if not holds(ARGV[4], ARGV[10] == '1', ARGV[11]) then return 0 end
expire(state(K))
write()
save(K)
return 1
"""

# ARGV[4..9] as for write() (the value unused), ARGV[10] = the amount; the answer: the new
# value (a whole number, kept as its decimal text)
INCR = _WRITES + """
local current = live(ARGV[4])
local before = 0
if current then
  before = tonumber(current)
  if not before or string.find(current, '^-?%d+$') == nil then
    return redis.error_reply('no counter')
  end
end
local value = before + tonumber(ARGV[10])
expire(state(K))
write(string.format('%d', value))
save(K)
return value
"""

# ARGV[4] = key
DELETE = _WRITES + """
local there = call('EXISTS', vkey(ARGV[4]))
if there == 1 then
  local at = call('ZSCORE', xk(K), ARGV[4])
  if at and at + 0 <= now then there = 0 end  -- expired: not there any more
end
expire(state(K))
remove(K, ARGV[4])
save(K)
return there
"""

# several writes at once, each as PUT makes it, only if a guard holds: ARGV[2] = the guard's
# kind, ARGV[4] = '0' no guard, '1' its key must hold ARGV[9], '2' it must be absent (or
# expired); ARGV[5] = the guard's key; ARGV[7..8] = the caps; from ARGV[10], five a write:
# kind, key, value, the ttl in milliseconds ('' for none), when it expires. The answer: 1
# written, 0 the guard failed (nothing written)
PUT_MANY = _WRITES + """
if ARGV[4] ~= '0' and not holds(ARGV[5], ARGV[4] == '1', ARGV[9]) then return 0 end
local kinds, made = {}, {}
for i = 10, #ARGV, 5 do
  local k = kinds[ARGV[i]]
  if not k then
    k = state(kind_of(ARGV[i]))
    kinds[ARGV[i]] = k
    made[#made + 1] = k
    expire(k)
  end
  write_in(k, ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4])
end
for _, k in ipairs(made) do save(k) end
return 1
"""

# ARGV[4] = prefix, ARGV[5] = '1' with a cursor key in ARGV[6], ARGV[7] = limit,
# ARGV[8] = '1' newest first; the answer: key, value, key, value, ...
LIST = _COMMON + """
local prefix, limit, reverse = ARGV[4], tonumber(ARGV[7]), ARGV[8] == '1'
local page = {}
if limit == 0 then return page end
local range, rank = 'ZRANGE', 'ZRANK'
if reverse then range, rank = 'ZREVRANGE', 'ZREVRANK' end
local start = 0
if ARGV[5] == '1' then
  local after = ARGV[6]
  local at = call(rank, K.o, after)
  if not at or not live(after) then return page end
  start = at + 1
end
local batch = math.max(limit, 64)
while true do
  local keys = call(range, K.o, start, start + batch - 1)
  for _, key in ipairs(keys) do
    if string.sub(key, 1, #prefix) == prefix then
      local value = live(key)
      if value then
        page[#page + 1] = key
        page[#page + 1] = value
        if #page >= 2 * limit then return page end
      end
    end
  end
  if #keys < batch then return page end
  start = start + batch
end
"""

# ARGV[1] = BASE only: every kind's keys of the namespace go
CLEAR = """
local base, call = ARGV[1], redis.call
for _, kind in ipairs(call('SMEMBERS', base .. 'kinds')) do
  local o = base .. 'o:' .. kind
  local keys = call('ZRANGE', o, 0, -1)
  for first = 1, #keys, 500 do
    local doomed = {}
    for i = first, math.min(first + 499, #keys) do
      doomed[#doomed + 1] = base .. 'v:' .. kind .. ':' .. keys[i]
    end
    call('DEL', unpack(doomed))
  end
  call('DEL', o, base .. 'x:' .. kind, base .. 's:' .. kind, base .. 'n:' .. kind)
end
call('DEL', base .. 'kinds')
return 1
"""

# -- event logs ---------------------------------------------------------------------------------
# A log is a Redis Stream at ``BASE v:log:LOG``, each entry's id ``NUMBER-1`` (a closed log's
# last one ``LOG_END-1``), its value in the field ``v``; the log is a key of the kind ``log`` for
# the write order, the sizes, the expiry and ``clear`` (as every kind's keys are), so the caps
# drop the logs appended to least recently, whole (a log's size, the sum of its entries' values,
# is always in ``s:``). Reads are ``XRANGE`` and ``XREAD BLOCK``.
#
# ARGV[4] = log, ARGV[5] = value, ARGV[6] = the ttl in milliseconds ('' for none),
# ARGV[7..8] = the caps, ARGV[9] = when it expires, ARGV[10] = the entry's number, ARGV[11] =
# the number of a closed log's last entry; the answer: 1 appended, 0 closed already, -1 a
# number not above the last one's
LOG_APPEND = _WRITES + """
expire(state(K))
local key, value, ttl, number, closed = ARGV[4], ARGV[5], ARGV[6], ARGV[10], ARGV[11]
local v = vkey(key)
local last = call('XREVRANGE', v, '+', '-', 'COUNT', 1)[1]
if last then
  local top = string.match(last[1], '^(%d+)')
  if top == closed then save(K) return 0 end
  if number ~= closed and tonumber(top) >= tonumber(number) then save(K) return -1 end
end
call('XADD', v, number .. '-1', 'v', value)
order(K, key)
call('HINCRBY', sk(K), key, int('%d', #value))
K.bytes = K.bytes + #value
if ttl ~= '' then
  call('PEXPIRE', v, ttl)
  expires(K, key, ARGV[9])
else
  call('PERSIST', v)
  if K.soon then call('ZREM', xk(K), key) end
end
trim(K)
save(K)
return 1
"""
__all__ += ["LOG_APPEND"]

# ARGV[4] = log, ARGV[5] = the first entry's id, ARGV[6] = limit: the entries (id, fields),
# none once the log has expired on the backend's clock
LOG_READ = _COMMON + """
local at = call('ZSCORE', xk(K), ARGV[4])
if at and at + 0 <= now then return {} end
return call('XRANGE', vkey(ARGV[4]), ARGV[5], '+', 'COUNT', ARGV[6])
"""
__all__ += ["LOG_READ"]
