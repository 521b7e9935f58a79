"""The Lua scripts of the Redis store backend (``redis_backend``): each store call is one script,
so one round trip, and atomic for every process and machine on the same Redis.

The keys of one namespace and kind, under ``BASE`` (``ormock:{ns:NAME}:``; the braces are a
hash tag, so a namespace's keys share one cluster slot):

- ``BASE v:KIND:KEY``: the value (a string; with a ttl it also carries a Redis expiry, so that
  Redis frees it even if nobody touches the namespace again);
- ``BASE o:KIND``: a sorted set, each key scored by its write number (the write order);
- ``BASE x:KIND``: a sorted set, each key with a ttl scored by when it expires (seconds, on the
  backend's clock: a key is gone from the moment they have passed, whatever Redis's clock);
- ``BASE s:KIND``: a hash, each key's value size;
- ``BASE n:KIND``: a hash, ``seq`` (the last write number) and ``bytes`` (the sizes' sum);
- ``BASE kinds``: the set of kinds written (what ``clear`` drops).

Every script's ARGV starts with BASE, KIND and the time now; reads never write.
"""

from __future__ import annotations

__all__ = ["CLEAR", "COMPARE_AND_SET", "DELETE", "GET", "INCR", "LIST", "PUT"]

SWEEP = 100  # expired keys a write forgets at most (``expire``)

_COMMON = """
local base, kind, now = ARGV[1], ARGV[2], tonumber(ARGV[3])
local o, x, s, n = base .. 'o:' .. kind, base .. 'x:' .. kind, base .. 's:' .. kind,
    base .. 'n:' .. kind
local function vkey(key) return base .. 'v:' .. kind .. ':' .. key end
local function live(key)
  local at = redis.call('ZSCORE', x, key)
  if at and tonumber(at) <= now then return false end
  return redis.call('GET', vkey(key))
end
"""

_WRITES = _COMMON + """
local max_keys, max_bytes = tonumber(ARGV[7]), tonumber(ARGV[8])
-- forget a key whose write order is already gone (ZPOPMIN, ZREM): the value, its expiry and
-- its size; the sizes' sum after it
local function drop(key)
  redis.call('DEL', vkey(key))
  redis.call('ZREM', x, key)
  local size = redis.call('HGET', s, key)
  if not size then return tonumber(redis.call('HGET', n, 'bytes') or 0) end
  redis.call('HDEL', s, key)
  return redis.call('HINCRBY', n, 'bytes', 0 - tonumber(size))
end
-- every key is in the write order (o), so a key not there has nothing else to forget
local function remove(key)
  if redis.call('ZREM', o, key) == 1 then drop(key) end
end
-- at most SWEEP keys whose time has passed, per write: the work of a call stays bounded
-- whatever expired at once; the rest go with the next writes (reads never see them)
local function expire()
  for _, key in ipairs(redis.call('ZRANGEBYSCORE', x, '-inf', now, 'LIMIT', 0, SWEEP)) do
    remove(key)
  end
end
-- the next write number; the first one of a kind (since a clear) makes it known to CLEAR
local function order(key)
  local seq = redis.call('HINCRBY', n, 'seq', 1)
  if seq == 1 then redis.call('SADD', base .. 'kinds', kind) end
  redis.call('ZADD', o, seq, key)
end
-- past a cap, the oldest go (the newest always stays): each key is dropped once, so the
-- work of many writes is one eviction each
local function trim(total)
  local count = redis.call('ZCARD', o)
  while count > 1 and (count > max_keys or total > max_bytes) do
    total = drop(redis.call('ZPOPMIN', o)[1])
    count = count - 1
  end
end
-- write: ARGV[4] = key, ARGV[5] = value, ARGV[6] = the ttl in milliseconds ('' for none),
-- ARGV[7..8] = the caps (keys, bytes), ARGV[9] = when it expires (on the backend's clock)
local function write(value)
  local key, ttl = ARGV[4], ARGV[6]
  value = value or ARGV[5]
  remove(key)
  order(key)
  redis.call('HSET', s, key, #value)
  local total = redis.call('HINCRBY', n, 'bytes', #value)
  if ttl ~= '' then
    redis.call('SET', vkey(key), value, 'PX', ttl)
    redis.call('ZADD', x, ARGV[9], key)
  else
    redis.call('SET', vkey(key), value)
  end
  trim(total)
end
""".replace("SWEEP", str(SWEEP))

# ARGV[4] = key
GET = _COMMON + "return live(ARGV[4])\n"

# ARGV[4..9] as for write()
PUT = _WRITES + """
expire()
write()
return 1
"""

# ARGV[4..9] as for write(); ARGV[10] = '1' with an expected value in ARGV[11], '0' for none
COMPARE_AND_SET = _WRITES + """
expire()
local current = live(ARGV[4])
if ARGV[10] == '1' then
  if current ~= ARGV[11] then return 0 end
elseif current then
  return 0
end
write()
return 1
"""

# ARGV[4..9] as for write() (the value unused), ARGV[10] = the amount; the answer: the new
# value (a whole number, kept as its decimal text)
INCR = _WRITES + """
expire()
local current = live(ARGV[4])
local before = 0
if current then
  before = tonumber(current)
  if not before or string.find(current, '^-?%d+$') == nil then
    return redis.error_reply('no counter')
  end
end
local value = before + tonumber(ARGV[10])
write(string.format('%d', value))
return value
"""

# ARGV[4] = key
DELETE = _WRITES + """
expire()
local there = redis.call('EXISTS', vkey(ARGV[4]))
remove(ARGV[4])
return there
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
  local at = redis.call(rank, o, after)
  if not at or not live(after) then return page end
  start = at + 1
end
local batch = math.max(limit, 64)
while true do
  local keys = redis.call(range, o, start, start + batch - 1)
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
local base = ARGV[1]
for _, kind in ipairs(redis.call('SMEMBERS', base .. 'kinds')) do
  local o = base .. 'o:' .. kind
  local keys = redis.call('ZRANGE', o, 0, -1)
  for first = 1, #keys, 500 do
    local doomed = {}
    for i = first, math.min(first + 499, #keys) do
      doomed[#doomed + 1] = base .. 'v:' .. kind .. ':' .. keys[i]
    end
    redis.call('DEL', unpack(doomed))
  end
  redis.call('DEL', o, base .. 'x:' .. kind, base .. 's:' .. kind, base .. 'n:' .. kind)
end
redis.call('DEL', base .. 'kinds')
return 1
"""

# -- event logs ---------------------------------------------------------------------------------
# A log is a Redis Stream at ``BASE v:log:LOG``, each entry's id ``NUMBER-1`` (a closed log's
# last one ``LOG_END-1``), its value in the field ``v``; the log is a key of the kind ``log`` for
# the write order, the sizes, the expiry and ``clear`` (as every kind's keys are), so the caps
# drop the logs appended to least recently, whole. Reads are ``XRANGE`` and ``XREAD BLOCK``.
#
# ARGV[4] = log, ARGV[5] = value, ARGV[6] = the ttl in milliseconds ('' for none),
# ARGV[7..8] = the caps, ARGV[9] = when it expires, ARGV[10] = the entry's number, ARGV[11] =
# the number of a closed log's last entry; the answer: 1 appended, 0 closed already, -1 a
# number not above the last one's
LOG_APPEND = _WRITES + """
expire()
local key, value, ttl, number, closed = ARGV[4], ARGV[5], ARGV[6], ARGV[10], ARGV[11]
local v = vkey(key)
local last = redis.call('XREVRANGE', v, '+', '-', 'COUNT', 1)[1]
if last then
  local top = string.match(last[1], '^(%d+)')
  if top == closed then return 0 end
  if number ~= closed and tonumber(top) >= tonumber(number) then return -1 end
end
redis.call('XADD', v, number .. '-1', 'v', value)
order(key)
redis.call('HINCRBY', s, key, #value)
local total = redis.call('HINCRBY', n, 'bytes', #value)
if ttl ~= '' then
  redis.call('PEXPIRE', v, ttl)
  redis.call('ZADD', x, ARGV[9], key)
else
  redis.call('PERSIST', v)
  redis.call('ZREM', x, key)
end
trim(total)
return 1
"""
__all__ += ["LOG_APPEND"]

# ARGV[4] = log, ARGV[5] = the first entry's id, ARGV[6] = limit: the entries (id, fields),
# none once the log has expired on the backend's clock
LOG_READ = _COMMON + """
local at = redis.call('ZSCORE', x, ARGV[4])
if at and tonumber(at) <= now then return {} end
return redis.call('XRANGE', vkey(ARGV[4]), ARGV[5], '+', 'COUNT', ARGV[6])
"""
__all__ += ["LOG_READ"]
