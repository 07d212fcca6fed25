//go:build race

package ai_test

// raceSlack is the allocations the race detector adds now and then to a
// measured call.
const raceSlack = 2
