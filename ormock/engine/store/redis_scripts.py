"""The Lua scripts of the Redis store backend (``redis_backend``): each store call is one script,
so one round trip, and atomic for every process and machine on the same Redis.

The keys of one namespace and kind, under ``BASE`` (``ormock:{ns:NAME}:``; the braces are a
hash tag, so a namespace's keys share one cluster slot):

- ``BASE v:KIND:KEY``: the value (a string; with a ttl it also carries a Redis expiry, so that
  Redis frees it even if nobody touches the namespace again; a log is a stream, below);
- ``BASE o:KIND``: a sorted set, each key scored by its write number (the write order);
- ``BASE x:KIND``: a sorted set, each key with a ttl scored by when it expires (seconds, on the
  backend's clock: a key is gone from the moment they have passed, whatever Redis's clock);

and of the namespace:

- ``BASE sums``: a hash; for each kind (the field ``KIND``) its sums as one text, ``SEQ COUNT
  BYTES SOON``: the last write number, the keys in the write order, the sum of their sizes and
  (at the latest) when the first key of the expiry index expires (empty while the index is
  empty: a write sweeps expired keys only once ``now`` has passed it, and a key's expiry is
  read only while it is set); and for each key the size of its value (the field is the
  value's key, ``BASE v:KIND:KEY``: Redis may free a value with a ttl before a write forgets
  its key);
- ``BASE kinds``: the set of kinds written (what ``clear`` drops).

Every script's ARGV starts with BASE, KIND and the time now; reads never write. A write reads
the sums of the kinds it writes once (``state``; ``PUT_MANY``: of all of them and the guard's
kind in one ``HMGET``), works on them in Lua, and writes back what changed, the sizes of the
values it wrote with them, once (``save``; ``PUT_MANY``: one ``HSET`` for all its kinds).
Most of Redis's work for a script is not its commands but what it does around them (its
arguments copied into Lua, where every byte of each string is hashed; its helpers made anew
each call; each ``redis.call``'s arguments and answer converted, a number formatted with
%.17g): so commands, strings and numbers are all kept few (``bench/redis_scripts.py``).
The helpers of the writes (``_WRITES``) each take the kind they work on, so that one script
(``PUT_MANY``) writes to several.

The layout before the namespace's ``sums`` (a hash ``n:KIND`` of each kind's sums, one
``s:KIND`` of the sizes of its keys with a ttl) is not read: a change of layout migrates
nothing (``clear`` a namespace written by an older ormock, which drops those keys too).
"""

from __future__ import annotations

__all__ = ["CLEAR", "COMPARE_AND_SET", "DELETE", "GET", "INCR", "LIST", "PUT", "PUT_MANY"]

SWEEP = 100  # expired keys a write forgets at most (``expire``)
BATCH = 256  # keys past the caps a write drops at most in one go (``trim``)

_COMMON = """
local base, now = ARGV[1], ARGV[3] + 0
local call, int = redis.call, string.format
local sums = base .. 'sums'
-- a kind a read names: its values' prefix (v), write order (o), expiry index (x: made only
-- where used, a kind without a ttl never needs it: making a string is a large part of a
-- script's cost, Redis's Lua hashing every byte of each); a write's kinds are made by
-- ``state``, with their sums (``fresh`` set: its sums read, ``soon`` then false only if its
-- expiry index is empty)
local function kind_of(name)
  return {name = name, v = base .. 'v:' .. name .. ':', o = base .. 'o:' .. name, x = false,
          fresh = false, soon = false}
end
local function xk(k)
  local made = k.x
  if not made then made = base .. 'x:' .. k.name; k.x = made end
  return made
end
local K  -- the kind the call names: ``kind_of`` (a read), ``state`` (a write)
-- the value of the kind k's key, or false when absent or expired (on the backend's clock); a
-- kind whose sums are read (``state``) and say its expiry index is empty has no expiry to read
local function live_in(k, key)
  local value = call('GET', k.v .. key)
  if not value or (k.fresh and not k.soon) then return value end
  local at = call('ZSCORE', xk(k), key)
  if at and at + 0 <= now then return false end
  return value
end
-- whether the kind k's ``key`` is as a compare-and-set expects: holding ``expected``
-- (``must_hold``), or else absent or expired
local function holds_in(k, key, must_hold, expected)
  local current = live_in(k, key)
  if must_hold then return current == expected end
  return not current
end
"""

# the helpers of every write, each on the kind ``k`` it is given (``kind_of``, then ``state``)
_WRITES = _COMMON + """
local max_keys, max_bytes = (ARGV[7] or 0) + 0, (ARGV[8] or 0) + 0  -- (none for DELETE)
local match = string.match
-- the kind ``name`` with its sums, from their text in ``sums`` (``got``: false for a kind never
-- written; nil: read here, one HGET), made in one go (a table grown field by field is made
-- again as it grows); ``fresh``: the sizes of the values this call writes, saved with the
-- sums (``changes``), ``was``: the sums' text as read
local function state(name, got)
  if got == nil then got = call('HGET', sums, name) end
  local seq, count, bytes, soon, text = 0, 0, 0, false, false
  if got then
    seq, count, bytes, text = match(got, '^(%d+) (%d+) (%-?%d+) (.*)$')
    seq, count, bytes = seq + 0, count + 0, bytes + 0
    if text == '' then text = false else soon = text + 0 end
  end
  return {name = name, v = base .. 'v:' .. name .. ':', o = base .. 'o:' .. name, x = false,
          seq = seq, count = count, bytes = bytes, soon = soon, soon_text = text,
          seq_text = false, was = got, fresh = {}}
end
-- what changed in k onto ``put`` (the fields and values of one HSET of ``sums``): the sizes of
-- the values written, the sums (nothing at all for a kind never written: a delete there makes
-- no sums)
local function changes(k, put)
  local n = #put
  for vk, size in pairs(k.fresh) do
    put[n + 1], put[n + 2], n = vk, int('%d', size), n + 2
  end
  if k.seq == 0 then return end
  local text = int('%d %d %d %s', k.seq, k.count, k.bytes, k.soon and k.soon_text or '')
  if text ~= k.was then put[n + 1], put[n + 2] = k.name, text end
end
-- forget keys whose write order is already gone (ZPOPMIN, ZREMRANGEBYRANK, ZREM), in one
-- command per structure: their expiries, their sizes (or the fresh ones this call wrote),
-- their values
local function forget(k, keys)
  local n = #keys
  if n == 0 then return end
  local vkeys, v, fresh = {}, k.v, k.fresh
  for i = 1, n do vkeys[i] = v .. keys[i] end
  if k.soon then call('ZREM', xk(k), unpack(keys)) end
  local sizes, freed = call('HMGET', sums, unpack(vkeys)), 0
  for i = 1, n do
    local vk = vkeys[i]
    local size = fresh[vk]
    if size then fresh[vk] = nil else size = (sizes[i] or 0) + 0 end
    freed = freed + size
  end
  call('HDEL', sums, unpack(vkeys))
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
  local keep_keys = k.count > max_keys and max_keys - math.min(math.floor(max_keys / 16), BATCH)
      or k.count
  local keep_bytes = k.bytes > max_bytes and max_bytes - math.floor(max_bytes / 16) or k.bytes
  while k.count > 1 and (k.count > keep_keys or k.bytes > keep_bytes) do
    drop_oldest(k, math.max(1, math.min(k.count - keep_keys, k.count - 1)))
  end
end
-- write key = value in the kind k (``state``): ttl in milliseconds ('' for none), at = when it
-- expires (on the backend's clock). A key written before gives back its size and, written now
-- without a ttl, its expiry (ZADD moves one it keeps); its new size is saved with the sums
local function write_in(k, key, value, ttl, at)
  local vk = k.v .. key
  if not order(k, key) then
    local size = k.fresh[vk]
    if not size then size = (call('HGET', sums, vk) or 0) + 0 end
    k.bytes = k.bytes - size
    if ttl == '' and k.soon then call('ZREM', xk(k), key) end
  end
  local size = #value
  k.bytes = k.bytes + size
  k.fresh[vk] = size
  if ttl ~= '' then
    call('SET', vk, value, 'PX', ttl)
    expires(k, key, at)
  else
    call('SET', vk, value)
  end
  trim(k)
end
""".replace("SWEEP", str(SWEEP)).replace("BATCH", str(BATCH))

# the helpers of a call on the one kind it names (K): PUT_MANY, on several, makes none of them
# (Redis's Lua makes each helper anew on every call)
_ONE = """
local function vkey(key) return K.v .. key end
local function live(key) return live_in(K, key) end
local function holds(key, must_hold, expected) return holds_in(K, key, must_hold, expected) end
"""
_ONE_WRITE = _ONE + """
local function save(k)
  local put = {}
  changes(k, put)
  if #put > 0 then call('HSET', sums, unpack(put)) end
end
-- the call's own write: ARGV[4] = key, ARGV[5] = value (or the one given), ARGV[6] = the ttl
-- in milliseconds ('' for none), ARGV[7..8] = the caps (keys, bytes), ARGV[9] = when it
-- expires
local function write(value)
  write_in(K, ARGV[4], value or ARGV[5], ARGV[6], ARGV[9])
end
"""

# ARGV[4] = key
GET = _COMMON + _ONE + "K = kind_of(ARGV[2])\nreturn live(ARGV[4])\n"

# ARGV[4..9] as for write()
PUT = _WRITES + _ONE_WRITE + """
K = state(ARGV[2])
expire(K)
write()
save(K)
return 1
"""

# ARGV[4..9] as for write(); ARGV[10] = '1' with an expected value in ARGV[11], '0' for none
COMPARE_AND_SET = _WRITES + _ONE_WRITE + """
K = state(ARGV[2])  -- first: its expiry is read only if the kind has one
if not holds(ARGV[4], ARGV[10] == '1', ARGV[11]) then return 0 end
expire(K)
write()
save(K)
return 1
"""

# ARGV[4..9] as for write() (the value unused), ARGV[10] = the amount; the answer: the new
# value (a whole number, kept as its decimal text)
INCR = _WRITES + _ONE_WRITE + """
K = state(ARGV[2])
local current = live(ARGV[4])
local before = 0
if current then
  before = tonumber(current)
  if not before or string.find(current, '^-?%d+$') == nil then
    return redis.error_reply('no counter')
  end
end
local value = before + tonumber(ARGV[10])
expire(K)
write(string.format('%d', value))
save(K)
return value
"""

# ARGV[4] = key
DELETE = _WRITES + _ONE_WRITE + """
K = state(ARGV[2])
local there = call('EXISTS', vkey(ARGV[4]))
if there == 1 and K.soon then
  local at = call('ZSCORE', xk(K), ARGV[4])
  if at and at + 0 <= now then there = 0 end  -- expired: not there any more
end
expire(K)
remove(K, ARGV[4])
save(K)
return there
"""

# several writes at once, each as PUT makes it, only if a guard holds: ARGV[2] = the guard's
# kind, ARGV[4] = '0' no guard, '1' its key must hold ARGV[9], '2' it must be absent (or
# expired); ARGV[5] = the guard's key; ARGV[7..8] = the caps; from ARGV[10], five a write:
# kind, key, value, the ttl in milliseconds ('' for none), when it expires. The sums of the
# guard's kind and of every kind written are read in one HMGET, and what changed written back
# in one HSET. The answer: 1 written, 0 the guard failed (nothing written)
PUT_MANY = _WRITES + """
local guarded = ARGV[4] ~= '0'
local kinds, names = {}, {}  -- a name: 'guard' (only read), 'write', then its kind
if guarded then kinds[ARGV[2]], names[1] = 'guard', ARGV[2] end
for i = 10, #ARGV, 5 do
  local name = ARGV[i]
  local mark = kinds[name]
  if mark ~= 'write' then
    if not mark then names[#names + 1] = name end
    kinds[name] = 'write'
  end
end
if #names == 0 then return 1 end  -- nothing to write, no guard
local got, written = call('HMGET', sums, unpack(names)), {}
for i = 1, #names do
  local name, k = names[i]
  if kinds[name] == 'write' then
    k = state(name, got[i])
    written[#written + 1] = k
  else  -- the guard's kind, only read: only whether its expiry index may hold a key (its
    -- sums' text ends in ' ' without)
    local text = got[i]
    k = kind_of(name)
    k.fresh, k.soon = true, text and string.byte(text, -1) ~= 32
  end
  kinds[name] = k
end
if guarded then
  K = kinds[ARGV[2]]
  if not holds_in(K, ARGV[5], ARGV[4] == '1', ARGV[9]) then return 0 end
end
for i = 1, #written do expire(written[i]) end
for i = 10, #ARGV, 5 do
  write_in(kinds[ARGV[i]], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4])
end
local put = {}
for i = 1, #written do changes(written[i], put) end
if #put > 0 then call('HSET', sums, unpack(put)) end
return 1
"""

# ARGV[4] = prefix, ARGV[5] = '1' with a cursor key in ARGV[6], ARGV[7] = limit,
# ARGV[8] = '1' newest first; the answer: key, value, key, value, ...
LIST = _COMMON + _ONE + """
K = kind_of(ARGV[2])
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
  -- (s: and n:, the sizes and sums of a layout before ``sums``: see the top)
  call('DEL', o, base .. 'x:' .. kind, base .. 's:' .. kind, base .. 'n:' .. kind)
end
call('DEL', base .. 'kinds', base .. 'sums')
return 1
"""

# -- event logs ---------------------------------------------------------------------------------
# A log is a Redis Stream at ``BASE v:log:LOG``, each entry's id ``NUMBER-1`` (a closed log's
# last one ``LOG_END-1``), its value in the field ``v``; the log is a key of the kind ``log`` for
# the write order, the sizes, the expiry and ``clear`` (as every kind's keys are), so the caps
# drop the logs appended to least recently, whole (a log's size, the sum of its entries' values,
# is in ``sums`` as every key's). Reads are ``XRANGE`` and ``XREAD BLOCK``.
#
# ARGV[4] = log, ARGV[5] = value, ARGV[6] = the ttl in milliseconds ('' for none),
# ARGV[7..8] = the caps, ARGV[9] = when it expires, ARGV[10] = the entry's number, ARGV[11] =
# the number of a closed log's last entry; the answer: 1 appended, 0 closed already, -1 a
# number not above the last one's
LOG_APPEND = _WRITES + _ONE_WRITE + """
K = state(ARGV[2])
expire(K)
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
call('HINCRBY', sums, v, int('%d', #value))  -- its size, under its value's key
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
LOG_READ = _COMMON + _ONE + """
K = kind_of(ARGV[2])
local at = call('ZSCORE', xk(K), ARGV[4])
if at and at + 0 <= now then return {} end
return call('XRANGE', vkey(ARGV[4]), ARGV[5], '+', 'COUNT', ARGV[6])
"""
__all__ += ["LOG_READ"]
