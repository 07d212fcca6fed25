package redisstore

import "github.com/redis/go-redis/v9"

// A log entry is "<tokens>|<seq>|<json>": the token count and sequence
// number lead, so that the scripts can sum a window's tokens and find a
// record's position with one string.match instead of decoding JSON.

// loadScript returns the system entry (or "") followed by the newest log
// entries that fit the window, oldest first.
//
//	KEYS: log, sys
//	ARGV: max tokens (> 0), max messages (0: no bound)
var loadScript = redis.NewScript(`
local maxT = tonumber(ARGV[1])
local maxM = tonumber(ARGV[2])
local sys = redis.call('GET', KEYS[2]) or ''
local n = redis.call('LLEN', KEYS[1])
if maxM > 0 and maxM < n then n = maxM end
if n == 0 then return {sys} end
-- Walk back from the newest entry in growing chunks; stop at the first
-- entry that does not fit.
local kept = {}
local sum, got, chunk = 0, 0, 64
while got < n do
	local k = math.min(chunk, n - got)
	local part = redis.call('LRANGE', KEYS[1], -(got + k), -(got + 1))
	local stop = false
	for i = #part, 1, -1 do
		local t = tonumber(string.match(part[i], '^(-?%d+)|'))
		if sum + t > maxT then stop = true break end
		sum = sum + t
		kept[#kept + 1] = part[i]
	end
	if stop then break end
	got = got + k
	chunk = chunk * 2
end
local out = {sys}
for i = #kept, 1, -1 do out[#out + 1] = kept[i] end
return out
`)

// appendScript appends records, assigning sequence numbers, and returns for
// each record either its new sequence number (an integer) or, for a record
// already stored (a repeated id, an identical system record), the stored
// entry. It refreshes the TTL of the conversation's keys.
//
//	KEYS: log, ids, sys, meta
//	ARGV: ttl ms, now (Unix ns), then per record: kind ("s" system, "l" log),
//	      id, tokens, json, hash of the system text ("" for log records)
var appendScript = redis.NewScript(`
local last = tonumber(redis.call('HGET', KEYS[4], 'last') or '0')
local added, changed = 0, false
local out = {}
for i = 3, #ARGV, 5 do
	local kind, id, tok, js, th = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4]
	if kind == 's' then
		if redis.call('HGET', KEYS[4], 'systext') ~= th then
			redis.call('SET', KEYS[3], tok .. '|0|' .. js)
			redis.call('HSET', KEYS[4], 'systext', th)
			changed = true
			out[#out + 1] = 0
		else
			out[#out + 1] = redis.call('GET', KEYS[3])
		end
	else
		local seq = redis.call('HGET', KEYS[2], id)
		if seq then
			out[#out + 1] = redis.call('LINDEX', KEYS[1], tonumber(seq) - last - 1)
		else
			last = last + 1
			redis.call('RPUSH', KEYS[1], tok .. '|' .. last .. '|' .. js)
			redis.call('HSET', KEYS[2], id, last)
			added = added + 1
			out[#out + 1] = last
		end
	end
end
if added > 0 or changed then
	redis.call('HSET', KEYS[4], 'last', last, 'updated', ARGV[2])
	redis.call('HSETNX', KEYS[4], 'created', ARGV[2])
	redis.call('HINCRBY', KEYS[4], 'count', added)
end
for _, k in ipairs(KEYS) do redis.call('PEXPIRE', k, ARGV[1]) end
return out
`)

// trimScript drops the log entries with seq < before and forgets their ids.
//
//	KEYS: log, ids, meta
//	ARGV: before
var trimScript = redis.NewScript(`
local last = tonumber(redis.call('HGET', KEYS[3], 'last') or '0')
local len = redis.call('LLEN', KEYS[1])
local n = math.min(tonumber(ARGV[1]) - (last - len + 1), len)
if n <= 0 then return 0 end
for _, e in ipairs(redis.call('LRANGE', KEYS[1], 0, n - 1)) do
	local payload = string.match(e, '^-?%d+|%d+|(.*)$')
	local id
	if string.sub(payload, 1, 1) == '~' then
		local head, len = string.match(payload, '^(~[^|]*|%-?%d+|[01]|(%d+):)')
		id = string.sub(payload, #head + 1, #head + tonumber(len))
	else
		id = cjson.decode(payload).i
	end
	redis.call('HDEL', KEYS[2], id)
end
redis.call('LTRIM', KEYS[1], n, -1)
redis.call('HINCRBY', KEYS[3], 'count', -n)
return n
`)

// unlockScript deletes a lock only if it still holds the holder's token.
//
//	KEYS: lock
//	ARGV: token
var unlockScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)

// renewScript extends a lock's lease only if it still holds the holder's
// token.
//
//	KEYS: lock
//	ARGV: token, ttl (ms)
var renewScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
`)

// dropScript deletes a lock only if its token has the owner's prefix.
//
//	KEYS: lock
//	ARGV: owner prefix ("<owner>/")
var dropScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v and string.sub(v, 1, #ARGV[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)
