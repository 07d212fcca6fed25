//go:build race

package tokens

// raceEnabled reports a -race build, in which sync.Pool drops a random share
// of what is put into it.
const raceEnabled = true
