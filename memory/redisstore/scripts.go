package redisstore

import "github.com/redis/go-redis/v9"

// A log entry is "<tokens>|<seq>|<json>": the token count and sequence
// number lead, so that the scripts can sum a window's tokens and find a
// record's position with one string.match instead of decoding JSON.

// loadScript returns the system entry (or "") followed by the newest log
// entries that fit the window, oldest first. It finds the cut from the
// token counts of the tok list alone, then returns the kept entries with a
// single LRANGE: no entry is looked into in Lua. A tok list that does not
// match the log (a conversation written before the list existed) is rebuilt
// from the log first.
//
//	KEYS: log, sys, tok
//	ARGV: max tokens (> 0), max messages (0: no bound)
var loadScript = redis.NewScript(`
local maxT = tonumber(ARGV[1])
local maxM = tonumber(ARGV[2])
local sys = redis.call('GET', KEYS[2]) or ''
local len = redis.call('LLEN', KEYS[1])
if redis.call('LLEN', KEYS[3]) ~= len then
	redis.call('DEL', KEYS[3])
	for from = 0, len - 1, 512 do
		local toks = {}
		for i, e in ipairs(redis.call('LRANGE', KEYS[1], from, from + 511)) do
			toks[i] = string.match(e, '^(-?%d+)|')
		end
		redis.call('RPUSH', KEYS[3], unpack(toks))
	end
	local ttl = redis.call('PTTL', KEYS[1])
	if ttl > 0 then redis.call('PEXPIRE', KEYS[3], ttl) end
end
local n = len
if maxM > 0 and maxM < n then n = maxM end
-- Walk back from the newest count in growing chunks; stop at the first
-- entry that does not fit.
local sum, got, chunk, stop = 0, 0, 64, false
while got < n and not stop do
	local k = math.min(chunk, n - got)
	local part = redis.call('LRANGE', KEYS[3], -(got + k), -(got + 1))
	for i = #part, 1, -1 do
		local t = tonumber(part[i])
		if sum + t > maxT then stop = true break end
		sum = sum + t
		got = got + 1
	end
	chunk = chunk * 2
end
if got == 0 then return {sys} end
local out = redis.call('LRANGE', KEYS[1], -got, -1)
table.insert(out, 1, sys)
return out
`)

// appendScript appends records, assigning sequence numbers, and returns for
// each record either its new sequence number (an integer) or, for a record
// already stored (a repeated id, an identical system record), the stored
// entry. It refreshes the TTL of the conversation's keys. The token count
// of a log entry goes to the tok list too, so that the two stay aligned.
//
//	KEYS: log, ids, sys, meta, tok
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
			redis.call('RPUSH', KEYS[5], tok)
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

// trimScript drops the log entries with seq < before (and their token
// counts) and forgets their ids.
//
//	KEYS: log, ids, meta, tok
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
redis.call('LTRIM', KEYS[4], n, -1)
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
