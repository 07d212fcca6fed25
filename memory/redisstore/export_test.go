package redisstore

// LoadScript lets the benchmarks time the load script without decoding.
var LoadScript = loadScript
