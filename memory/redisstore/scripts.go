package redisstore

import "github.com/redis/go-redis/v9"

// A log entry is "<tokens>|<seq>|<json>": the token count and sequence
// number lead, so that the scripts can sum a window's tokens and find a
// record's position with one string.match instead of decoding JSON.

// luaLoad defines load(log, sys, maxT, maxM), which returns the system
// entry (or "") followed by the newest log entries that fit the window,
// oldest first: with a token bound (maxT > 0) by walking the log from its
// tail, else with one LRANGE (maxM 0: no bound).
const luaLoad = `
local function load(logk, sysk, maxT, maxM)
	local sys = redis.call('GET', sysk) or ''
	if maxT <= 0 then
		local from = 0
		if maxM > 0 then from = -maxM end
		local out = {sys}
		for _, e in ipairs(redis.call('LRANGE', logk, from, -1)) do out[#out + 1] = e end
		return out
	end
	local n = redis.call('LLEN', logk)
	if maxM > 0 and maxM < n then n = maxM end
	if n == 0 then return {sys} end
	-- Walk back from the newest entry in growing chunks; stop at the first
	-- entry that does not fit.
	local kept = {}
	local sum, got, chunk = 0, 0, 64
	while got < n do
		local k = math.min(chunk, n - got)
		local part = redis.call('LRANGE', logk, -(got + k), -(got + 1))
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
end
`

// luaAppend defines append(log, ids, sys, meta, sum, ttl, now, from), which
// appends the records in ARGV from index from on, assigning sequence
// numbers, and returns for each record either its new sequence number (an
// integer) or, for a record already stored (a repeated id, an identical
// system record), the stored entry. It refreshes the TTL of the
// conversation's keys (its summary's too). A record is five arguments: kind ("s" system, "l"
// log), id, tokens, payload, hash of the system text ("" for log records).
const luaAppend = `
local function append(logk, idsk, sysk, metak, sumk, ttl, now, from)
	local last = tonumber(redis.call('HGET', metak, 'last') or '0')
	local added, changed = 0, false
	local out = {}
	for i = from, #ARGV, 5 do
		local kind, id, tok, js, th = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4]
		if kind == 's' then
			if redis.call('HGET', metak, 'systext') ~= th then
				redis.call('SET', sysk, tok .. '|0|' .. js)
				redis.call('HSET', metak, 'systext', th)
				changed = true
				out[#out + 1] = 0
			else
				out[#out + 1] = redis.call('GET', sysk)
			end
		else
			local seq = redis.call('HGET', idsk, id)
			if seq then
				out[#out + 1] = redis.call('LINDEX', logk, tonumber(seq) - last - 1)
			else
				last = last + 1
				redis.call('RPUSH', logk, tok .. '|' .. last .. '|' .. js)
				redis.call('HSET', idsk, id, last)
				added = added + 1
				out[#out + 1] = last
			end
		end
	end
	if added > 0 or changed then
		redis.call('HSET', metak, 'last', last, 'updated', now)
		redis.call('HSETNX', metak, 'created', now)
		redis.call('HINCRBY', metak, 'count', added)
	end
	for _, k in ipairs({logk, idsk, sysk, metak, sumk}) do redis.call('PEXPIRE', k, ttl) end
	return out
end
`

// loadScript returns the system entry (or "") followed by the newest log
// entries that fit a token window, oldest first.
//
//	KEYS: log, sys
//	ARGV: max tokens (> 0), max messages (0: no bound)
var loadScript = redis.NewScript(luaLoad + `return load(KEYS[1], KEYS[2], tonumber(ARGV[1]), tonumber(ARGV[2]))`)

// appendScript appends records (see luaAppend).
//
//	KEYS: log, ids, sys, meta, sum
//	ARGV: ttl ms, now (Unix ns), then five per record
var appendScript = redis.NewScript(luaAppend + `return append(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], ARGV[1], ARGV[2], 3)`)

// beginScript takes a turn's lease (SET NX PX), loads the window as
// loadScript does (any window) and the summary, and appends the turn's
// first records, or returns 0 when another holder has the lease. It
// returns the system entry (or ""), the summary (or ""), then the log
// entries.
//
//	KEYS: log, ids, sys, meta, lock, sum
//	ARGV: token, lease ms, max tokens (0: no bound), max messages (0: no
//	      bound), ttl ms, now (Unix ns), then five per record
var beginScript = redis.NewScript(luaLoad + luaAppend + `
if not redis.call('SET', KEYS[5], ARGV[1], 'NX', 'PX', ARGV[2]) then return 0 end
local out = load(KEYS[1], KEYS[3], tonumber(ARGV[3]), tonumber(ARGV[4]))
table.insert(out, 2, redis.call('GET', KEYS[6]) or '')
if #ARGV >= 7 then append(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[6], ARGV[5], ARGV[6], 7) end
return out
`)

// endScript appends a turn's last records (see luaAppend) and releases its
// lease if it still holds the holder's token. It returns the append's
// result.
//
//	KEYS: log, ids, sys, meta, lock, sum
//	ARGV: token, ttl ms, now (Unix ns), then five per record
var endScript = redis.NewScript(luaAppend + `
local out = append(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[6], ARGV[2], ARGV[3], 4)
if redis.call('GET', KEYS[5]) == ARGV[1] then redis.call('DEL', KEYS[5]) end
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

// summaryScript stores a conversation's summary if the stored one's
// through is prev (none: 0), the conversation exists and its last seq is at
// least the new through; it returns 1 when it did, else 0. The summary is
// "<through>|<tokens>|<updated (Unix ns)>|<text>", with the TTL of the
// conversation's other keys.
//
//	KEYS: meta, sum
//	ARGV: prev, through, tokens, updated, text
var summaryScript = redis.NewScript(`
local last = redis.call('HGET', KEYS[1], 'last')
if not last or tonumber(last) < tonumber(ARGV[2]) then return 0 end
local cur = redis.call('GET', KEYS[2])
local through = 0
if cur then through = tonumber(string.match(cur, '^(%d+)|')) end
if through ~= tonumber(ARGV[1]) then return 0 end
local ttl = redis.call('PTTL', KEYS[1])
redis.call('SET', KEYS[2], ARGV[2] .. '|' .. ARGV[3] .. '|' .. ARGV[4] .. '|' .. ARGV[5])
if ttl > 0 then redis.call('PEXPIRE', KEYS[2], ttl) end
return 1
`)

// rangeScript returns the log entries with after < seq < before, oldest
// first; with max tokens > 0 it stops before the first entry that would
// bring their tokens above it, but returns at least one entry when there
// is one. The log holds seqs last-len+1 … last, in order.
//
//	KEYS: log, meta
//	ARGV: after, before, max tokens (0: no bound)
var rangeScript = redis.NewScript(`
local last = tonumber(redis.call('HGET', KEYS[2], 'last') or '0')
local len = redis.call('LLEN', KEYS[1])
local base = last - len + 1
local from = math.max(tonumber(ARGV[1]) + 1 - base, 0)
local to = math.min(tonumber(ARGV[2]) - 1 - base, len - 1)
local maxT = tonumber(ARGV[3])
if to < from then return {} end
if maxT <= 0 then return redis.call('LRANGE', KEYS[1], from, to) end
local out, sum, chunk = {}, 0, 64
while from <= to do
	local upto = math.min(from + chunk - 1, to)
	for _, e in ipairs(redis.call('LRANGE', KEYS[1], from, upto)) do
		sum = sum + tonumber(string.match(e, '^(-?%d+)|'))
		if sum > maxT and #out > 0 then return out end
		out[#out + 1] = e
	end
	from = upto + 1
	chunk = chunk * 2
end
return out
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
